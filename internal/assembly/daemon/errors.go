package daemon

import (
	"errors"
	"fmt"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

// ErrInvalid matches the errors of bad options or configuration (the
// CLI's exit status 2); any other error is a runtime failure.
var ErrInvalid = errors.New("invalid daemon options or configuration")

// invalidError marks err as bad input without changing its message.
type invalidError struct{ err error }

func (e *invalidError) Error() string        { return e.err.Error() }
func (e *invalidError) Unwrap() error        { return e.err }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// invalid marks err as bad input; nil stays nil.
func invalid(err error) error {
	if err == nil {
		return nil
	}
	return &invalidError{err: err}
}

// invalidf is invalid(fmt.Errorf(format, args...)).
func invalidf(format string, args ...any) error {
	return invalid(fmt.Errorf(format, args...))
}

// badInput reports whether err is the configuration's fault: its backend
// is not linked, or the backend or the configuration refuses it.
func badInput(err error) bool {
	return errors.Is(err, assembly.ErrNotLinked) || errors.Is(err, driver.ErrInvalidConfig) ||
		errors.Is(err, driver.ErrNoCapability) || errors.Is(err, config.ErrInvalid)
}
