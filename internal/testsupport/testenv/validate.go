package testenv

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// ValidateCase is a row of a table-driven test of a Config's Validate
// method (docs/architecture.md, "Configuration style").
type ValidateCase[C any] struct {
	// Name names the subtest.
	Name string
	// Config is the configuration under test.
	Config C
	// Want is "" when Config is valid, else the field its error must name
	// (e.g. "Config.TTL").
	Want string
}

// RunValidate runs the cases through validate (usually the method
// expression, e.g. claims.Config.Validate): a valid config gives nil; an
// invalid one a one-line error naming Want, and build (the constructor's
// error for the same config; nil skips it) refuses it too.
func RunValidate[C any](t *testing.T, cases []ValidateCase[C], validate, build func(C) error) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := validate(c.Config)
			if c.Want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.Want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate = %v, want one line naming %s", err, c.Want)
			}
			if build != nil {
				if err := build(c.Config); err == nil || !strings.Contains(err.Error(), c.Want) {
					t.Errorf("constructor = %v, want the Validate error naming %s", err, c.Want)
				}
			}
		})
	}
}

// Wrapping returns validate, turning an error that does not wrap target
// into one that says so (for RunValidate).
func Wrapping[C any](validate func(C) error, target error) func(C) error {
	return func(c C) error {
		err := validate(c)
		if err != nil && !errors.Is(err, target) {
			return fmt.Errorf("%v (does not wrap %v)", err, target)
		}
		return err
	}
}
