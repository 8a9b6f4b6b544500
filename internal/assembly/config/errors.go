package config

import (
	"errors"
	"strings"
)

// ErrInvalid matches (errors.Is) every configuration problem Parse, Load,
// LoadWorkers and Validate report: syntax errors and every [FieldError].
var ErrInvalid = errors.New("invalid configuration")

// ErrUnknownKey is the Err of the FieldError of an unknown key.
var ErrUnknownKey = errors.New("unknown key")

// FieldError is one problem with one configuration field. Its message is a
// single line: the field path, a colon, what is wrong, e.g.
//
//	workers[2].retry.backoff: "5x" is not a duration
type FieldError struct {
	// Path names the field: "broker", "workers[2].retry.backoff",
	// `lag.thresholds["escrow.commands"].warning`. Empty for the document
	// itself.
	Path string
	// Line is the line of the offending YAML node; 0 when unknown (problems
	// found by Validate).
	Line int
	// Msg says what is wrong, without the path.
	Msg string
	// Err is the underlying error, if any.
	Err error
}

// Error renders the problem as "path: message".
func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }

// Is reports that every FieldError is an ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// FieldErrors returns the field problems carried by err (as returned by
// Parse, Load, LoadWorkers or Validate), in order; nil when there are none.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *FieldError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, sub := range e.Unwrap() {
				walk(sub)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// problems collects field errors.
type problems struct {
	errs []*FieldError
}

// add records a problem at path.
func (p *problems) add(path, msg string) {
	p.errs = append(p.errs, &FieldError{Path: path, Msg: msg})
}

// err joins the problems, nil when there are none.
func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	errs := make([]error, len(p.errs))
	for i, e := range p.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// joinPath appends a key to a field path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// underPath reports whether path is prefix or a field below it.
func underPath(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	rest := path[len(prefix):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}
