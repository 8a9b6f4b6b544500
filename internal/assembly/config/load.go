package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxFileBytes bounds a configuration file: Load and LoadWorkers read at
// most this much (a path such as /dev/zero ends there).
const MaxFileBytes = 4 << 20

// readFile reads at most MaxFileBytes of the file at path; a longer file
// is an ErrInvalid error.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d MiB: not a redrive configuration file", ErrInvalid, path, MaxFileBytes>>20)
	}
	return data, nil
}

// Load reads the configuration file at path (at most MaxFileBytes): see
// Parse.
func Load(path string) (*Config, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, withFile(path, err)
	}
	return c, nil
}

// Parse decodes a configuration document, expanding ${ENV} and
// ${ENV:-default} from the process environment inside scalar values, fills
// in the defaults and validates the result.
//
// Decoding is strict: an unknown key is an error naming its path (with a
// suggestion when it looks like a typo). On error Parse returns every
// problem it found (decoding and validation), joined with errors.Join, each
// a *FieldError whose message is one line naming the field:
//
//	workers[0].retry.max_retrys: unknown key (line 12); did you mean "max_retries"?
//	workers[2].retry.backoff: "5x" is not a duration
//	broker: "rabit" is not kafka or rabbitmq
//
// A YAML syntax error is reported alone. Every error matches ErrInvalid.
func Parse(data []byte) (*Config, error) {
	return parse(data, os.LookupEnv)
}

// parse is Parse with the environment given by lookup (nil: no expansion).
func parse(data []byte, lookup lookupFunc) (*Config, error) {
	var c Config
	d, err := decodeDocument(data, lookup, &c)
	if err != nil {
		return nil, err
	}
	_, c.Redis.set = d.lines["redis"]
	c.ApplyDefaults()
	var p problems
	c.validate(&p)
	if err := d.join(p); err != nil {
		return nil, err
	}
	return &c, nil
}

// LoadWorkers reads a file holding only a workers list:
//
//	workers:
//	  - {name: payout-executor, topic: escrow.commands, ...}
//
// with the same schema, ${ENV} expansion, defaults and validation as the
// workers of a full configuration (the checks that need the broker section,
// such as the RabbitMQ delay tiers, are left to the configuration that
// uses them).
func LoadWorkers(path string) ([]Worker, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("load workers: %w", err)
	}
	ws, err := ParseWorkers(data)
	if err != nil {
		return nil, withFile(path, err)
	}
	return ws, nil
}

// ParseWorkers is LoadWorkers on a document in memory.
func ParseWorkers(data []byte) ([]Worker, error) {
	return parseWorkers(data, os.LookupEnv)
}

// parseWorkers is ParseWorkers with the environment given by lookup.
func parseWorkers(data []byte, lookup lookupFunc) ([]Worker, error) {
	var doc struct {
		Workers []Worker `yaml:"workers"`
	}
	d, err := decodeDocument(data, lookup, &doc)
	if err != nil {
		return nil, err
	}
	for i := range doc.Workers {
		doc.Workers[i] = doc.Workers[i].WithDefaults()
	}
	var p problems
	validateWorkers(&p, doc.Workers)
	if err := d.join(p); err != nil {
		return nil, err
	}
	return doc.Workers, nil
}

// decodeDocument decodes the single YAML document data into out with a
// strict decoder. It returns an error only for a syntax error; field
// problems stay in the decoder.
func decodeDocument(data []byte, lookup lookupFunc, out any) (*decoder, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return nil, fmt.Errorf("%w: more than one YAML document (line %d)", ErrInvalid, extra.Line)
	}
	d := newDecoder(lookup)
	d.decode("", &doc, out)
	return d, nil
}

// join returns the decoding and validation problems in document order,
// leaving out validation problems of fields that failed to decode (their
// value is a placeholder). A validation problem gets the line of its field,
// or of the nearest field above it that the document holds.
func (d *decoder) join(p problems) error {
	errs := slices.Clone(d.errs)
	for _, e := range p.errs {
		if d.hasFailed(e.Path) {
			continue
		}
		for path := e.Path; path != "" && e.Line == 0; path = parentPath(path) {
			e.Line = d.lines[path]
		}
		errs = append(errs, e)
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		return cmp.Compare(sortLine(a), sortLine(b))
	})
	return errors.Join(errs...)
}

// sortLine is the line of a FieldError for sorting; problems without a
// line (a missing required field) come last.
func sortLine(err error) int {
	if fe, ok := err.(*FieldError); ok && fe.Line > 0 {
		return fe.Line
	}
	return math.MaxInt
}

// parentPath removes the last element of a field path:
// workers[2].retry.backoff → workers[2].retry → workers[2] → workers → "".
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	if path[i] == '[' || !strings.HasSuffix(path, "]") {
		return path[:i]
	}
	// A ["key"] element may hold dots: cut at its opening bracket.
	return path[:strings.LastIndex(path, "[")]
}

// withFile names the file in a syntax error; field problems name their
// field and are returned as they are.
func withFile(path string, err error) error {
	if len(FieldErrors(err)) > 0 {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}
