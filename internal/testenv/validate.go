package testenv

import (
	"strings"
	"testing"
)

// ValidateCase is a row of a table-driven test of a Config's Validate
// method (docs/architecture.md, "Configuration style").
type ValidateCase struct {
	// Name names the subtest.
	Name string
	// Validate is the call under test, e.g. cfg.Validate.
	Validate func() error
	// New builds the thing from the same config and returns the
	// constructor's error; nil skips that check.
	New func() error
	// Want is "" when the config is valid, else the field its error must
	// name (e.g. "Config.TTL").
	Want string
}

// RunValidate runs the cases: a valid config's Validate returns nil; an
// invalid one's returns a one-line error naming Want, and the constructor
// refuses it too.
func RunValidate(t *testing.T, cases []ValidateCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := c.Validate()
			if c.Want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.Want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate = %v, want one line naming %s", err, c.Want)
			}
			if c.New != nil {
				if err := c.New(); err == nil || !strings.Contains(err.Error(), c.Want) {
					t.Errorf("constructor = %v, want the Validate error naming %s", err, c.Want)
				}
			}
		})
	}
}
