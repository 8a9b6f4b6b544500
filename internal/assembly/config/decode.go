package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxDecodeSteps bounds the work of decoding one document, so that aliases
// that fan out (a "billion laughs" document) fail instead of running away.
const maxDecodeSteps = 200_000

// nodeDecoder is implemented by the configuration's own YAML types
// (Duration, Backoff, Retention): they decode a node and report problems
// to d under path.
type nodeDecoder interface {
	decodeNode(d *decoder, path string, n *yaml.Node)
}

// decoder decodes a yaml.Node tree into the configuration structs strictly:
// an unknown key is an error, and every error names its field path. It goes
// on after an error, so that one pass reports every problem. Scalars are
// expanded (${ENV}) as they are read, so a variable's value is never parsed
// as YAML.
//
// The decoding is done here rather than by yaml.Decoder with KnownFields(true)
// because that decoder reports an unknown key as "line 12: field x not found
// in type config.Retry", without the path, and stops at the first type error.
type decoder struct {
	lookup  lookupFunc // nil: no ${ENV} expansion
	errs    []error
	failed  []string // paths whose value could not be decoded
	steps   int
	merging map[*yaml.Node]bool
	lines   map[string]int // line of the value of each decoded path
}

// newDecoder returns a decoder expanding ${ENV} with lookup (nil: none).
func newDecoder(lookup lookupFunc) *decoder {
	return &decoder{lookup: lookup, merging: map[*yaml.Node]bool{}, lines: map[string]int{}}
}

// fail records a problem at path.
func (d *decoder) fail(path string, n *yaml.Node, err error, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.errs = append(d.errs, &FieldError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...), Err: err})
	d.failed = append(d.failed, path)
}

// err joins the recorded problems; nil when there are none.
func (d *decoder) err() error { return errors.Join(d.errs...) }

// hasFailed reports whether path, or a field above it, failed to decode.
func (d *decoder) hasFailed(path string) bool {
	for _, f := range d.failed {
		if underPath(path, f) || f == "" {
			return true
		}
	}
	return false
}

// decode decodes the node n into the value v points to.
func (d *decoder) decode(path string, n *yaml.Node, v any) {
	d.value(path, n, reflect.ValueOf(v).Elem())
}

// value decodes n into the settable v.
func (d *decoder) value(path string, n *yaml.Node, v reflect.Value) {
	n = d.resolve(path, n)
	if n == nil {
		return
	}
	if _, seen := d.lines[path]; !seen && n.Line > 0 {
		d.lines[path] = n.Line
	}
	if isNull(n) {
		v.SetZero()
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if nd, ok := v.Addr().Interface().(nodeDecoder); ok {
		nd.decodeNode(d, path, n)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.structure(path, n, v)
	case reflect.Slice:
		d.sequence(path, n, v)
	case reflect.Map:
		d.mapping(path, n, v)
	case reflect.String:
		if s, ok := d.scalar(path, n, "a string"); ok {
			v.SetString(s)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.integer(path, n, v)
	case reflect.Bool:
		var b bool
		if d.leaf(path, n, &b, "true or false") {
			v.SetBool(b)
		}
	case reflect.Float32, reflect.Float64:
		var f float64
		if d.leaf(path, n, &f, "a number") {
			v.SetFloat(f)
		}
	default:
		d.fail(path, n, nil, "cannot decode into %s", v.Type())
	}
}

// resolve follows aliases, counts the step against the budget and expands
// ${ENV} in a scalar. It returns nil when decoding must stop here.
func (d *decoder) resolve(path string, n *yaml.Node) *yaml.Node {
	d.steps++
	if d.steps > maxDecodeSteps {
		if d.steps == maxDecodeSteps+1 {
			d.fail(path, n, nil, "document too large (aliases expand to more than %d values)", maxDecodeSteps)
		}
		return nil
	}
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.fail(path, n, nil, "alias %q is not defined", n.Value)
			return nil
		}
		n = n.Alias
	}
	if n.Kind == 0 || n.Kind == yaml.DocumentNode && len(n.Content) == 0 {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"} // empty document
	}
	if n.Kind == yaml.DocumentNode {
		return d.resolve(path, n.Content[0])
	}
	if n.Kind != yaml.ScalarNode || d.lookup == nil {
		return n
	}
	s, changed, err := expandEnv(n.Value, d.lookup)
	if err != nil {
		d.fail(path, n, err, "%v", err)
		return nil
	}
	if !changed {
		return n
	}
	c := *n
	c.Value = s
	if c.Style&yaml.TaggedStyle == 0 {
		// The quotes protected the ${...} syntax, not the value: the value
		// is typed by what it expanded to ("${N:-5}" is the integer 5).
		c.Tag = ""
		c.Style &^= yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle
	}
	return &c
}

// isNull reports whether n is a YAML null or an empty scalar: both mean
// "not set", so that an unset ${ENV} leaves the field to its default.
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && (n.Value == "" || n.ShortTag() == "!!null")
}

// scalar returns the text of the scalar n; want describes what was expected
// in the error when n is not a scalar.
func (d *decoder) scalar(path string, n *yaml.Node, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.fail(path, n, nil, "expected %s, found %s", want, describe(n))
		return "", false
	}
	if n.ShortTag() == "!!binary" {
		b, err := base64.StdEncoding.DecodeString(n.Value)
		if err != nil {
			d.fail(path, n, err, "!!binary value is not base64")
			return "", false
		}
		return string(b), true
	}
	return n.Value, true
}

// integer decodes an integer scalar into v, rejecting fractions and values
// that do not fit.
func (d *decoder) integer(path string, n *yaml.Node, v reflect.Value) {
	s, ok := d.scalar(path, n, "an integer")
	if !ok {
		return
	}
	var x int64
	if n.ShortTag() != "!!int" || n.Decode(&x) != nil {
		if integerLiteral.MatchString(s) {
			d.fail(path, n, nil, "%s is out of range", abbreviate(s)) // as written, not as it wrapped
		} else {
			d.fail(path, n, nil, "%q is not an integer", abbreviate(s))
		}
		return
	}
	if v.OverflowInt(x) {
		d.fail(path, n, nil, "%s is out of range", abbreviate(s))
		return
	}
	v.SetInt(x)
}

// leaf decodes the scalar n into out with yaml's own rules.
func (d *decoder) leaf(path string, n *yaml.Node, out any, want string) bool {
	s, ok := d.scalar(path, n, want)
	if !ok {
		return false
	}
	if err := n.Decode(out); err != nil {
		d.fail(path, n, err, "%q is not %s", s, want)
		return false
	}
	return true
}

// structure decodes a mapping into the struct v, by yaml tags.
func (d *decoder) structure(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		if path == "" {
			d.fail(path, n, nil, "the document must be a mapping of keys, found %s (line %d)", describe(n), n.Line)
		} else {
			d.fail(path, n, nil, "expected a mapping, found %s", describe(n))
		}
		return
	}
	fields, names := structFields(v.Type())
	for _, p := range d.pairs(path, n) {
		sub := joinPath(path, p.key)
		i, ok := fields[p.key]
		if !ok {
			d.unknownKey(path, p, names)
			continue
		}
		d.value(sub, p.val, v.Field(i))
	}
}

// sequence decodes a list into the slice v. An empty list leaves v nil.
func (d *decoder) sequence(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.fail(path, n, nil, "expected a list, found %s", describe(n))
		return
	}
	if len(n.Content) == 0 {
		v.SetZero()
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, e := range n.Content {
		d.value(fmt.Sprintf("%s[%d]", path, i), e, s.Index(i))
	}
	v.Set(s)
}

// mapping decodes a mapping into the map v (string keys). An empty mapping
// leaves v nil.
func (d *decoder) mapping(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, n, nil, "expected a mapping, found %s", describe(n))
		return
	}
	pairs := d.pairs(path, n)
	if len(pairs) == 0 {
		v.SetZero()
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(pairs))
	for _, p := range pairs {
		e := reflect.New(v.Type().Elem()).Elem()
		d.value(fmt.Sprintf("%s[%s]", path, strconv.Quote(p.key)), p.val, e)
		m.SetMapIndex(reflect.ValueOf(p.key).Convert(v.Type().Key()), e)
	}
	v.Set(m)
}

// pair is one key and value of a mapping.
type pair struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

// pairs lists the entries of the mapping n with merge keys ("<<: *base")
// applied: the mapping's own keys override merged ones, and among merged
// mappings the earlier ones win. A key given twice is an error.
func (d *decoder) pairs(path string, n *yaml.Node) []pair {
	if d.merging[n] {
		d.fail(path, n, nil, "merge (<<) includes itself")
		return nil
	}
	d.merging[n] = true
	defer delete(d.merging, n)

	var own, merged []pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		for k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			d.fail(path, k, nil, "a key must be a string, found %s (line %d)", describe(k), k.Line)
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			merged = append(merged, d.mergeSources(path, val)...)
			continue
		}
		if line, dup := seen[k.Value]; dup {
			if keyLike.MatchString(k.Value) {
				d.fail(joinPath(path, k.Value), k, nil, "key given twice (lines %d and %d)", line, k.Line)
			} else {
				d.fail(path, k, nil, "a key given twice (lines %d and %d)", line, k.Line)
			}
			continue
		}
		seen[k.Value] = k.Line
		own = append(own, pair{key: k.Value, keyNode: k, val: val})
	}
	out := make([]pair, 0, len(merged)+len(own))
	for _, p := range merged {
		if _, ok := seen[p.key]; !ok {
			seen[p.key] = p.keyNode.Line
			out = append(out, p)
		}
	}
	return append(out, own...)
}

// mergeSources returns the pairs of the value of a merge key: a mapping or
// a list of mappings (usually aliases).
func (d *decoder) mergeSources(path string, val *yaml.Node) []pair {
	var out []pair
	src := d.resolve(path, val)
	if src == nil {
		return nil
	}
	switch src.Kind {
	case yaml.MappingNode:
		return d.pairs(path, src)
	case yaml.SequenceNode:
		for _, e := range src.Content {
			m := d.resolve(path, e)
			if m == nil {
				continue
			}
			if m.Kind != yaml.MappingNode {
				d.fail(path, m, nil, "<< merges mappings, found %s", describe(m))
				continue
			}
			out = append(out, d.pairs(path, m)...)
		}
		return out
	}
	d.fail(path, src, nil, "<< merges a mapping or a list of mappings, found %s", describe(src))
	return nil
}

// structFields maps the yaml names of t's exported fields to their index,
// and lists the names in order.
func structFields(t reflect.Type) (map[string]int, []string) {
	fields := make(map[string]int, t.NumField())
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = i
		names = append(names, name)
	}
	return fields, names
}
