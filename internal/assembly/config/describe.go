package config

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// What decoding errors say about the document: the kind of a node, never
// its value; an unknown key's name when it looks like one, with the
// closest known name.

// unknownKey records the unknown key of pair p under path. Only the key's
// name is shown, never its value, and only when it looks like a key: a
// file that is not redrive's (--config /etc/shadow) must not be echoed.
func (d *decoder) unknownKey(path string, p pair, names []string) {
	line := p.keyNode.Line
	if !keyLike.MatchString(p.key) {
		d.errs = append(d.errs, &FieldError{Path: path, Line: line, Err: ErrUnknownKey,
			Msg: fmt.Sprintf("unknown key on line %d (not shown: it is not a key name; is this a redrive configuration file?)", line)})
		return
	}
	msg := fmt.Sprintf("unknown key (line %d)", line)
	if s := Suggest(p.key, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	d.errs = append(d.errs, &FieldError{Path: joinPath(path, p.key), Line: line, Msg: msg, Err: ErrUnknownKey})
}

// keyLike matches the names of keys: what an unknown key must look like
// to be named in an error.
var keyLike = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// integerLiteral matches what YAML reads as an integer, whatever its size.
var integerLiteral = regexp.MustCompile(`^[-+]?(?:[0-9][0-9_]*|0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+)$`)

// describe names the kind of a node, for "expected X, found Y". It never
// shows the value: the node may be a secret put at the wrong place (a URL
// with its password given as a section), or not configuration at all (a
// file that is not redrive's).
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "true or false"
		case "!!null":
			return "nothing"
		}
		return "a string"
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// Suggest returns the name of names closest to key when key is a likely
// typo of it ("" otherwise): for "did you mean" hints.
func Suggest(key string, names []string) string {
	best, bestDist := "", 3
	for _, name := range names {
		if d := editDistance(strings.ToLower(key), name); d < bestDist {
			best, bestDist = name, d
		}
	}
	if bestDist > len(key)/2 {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two adjacent bytes.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
