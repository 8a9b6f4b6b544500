package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

// usageError marks bad input (usage or configuration): exit status 2.
// Any other error is a runtime failure: exit status 1.
type usageError struct{ err error }

// Error returns the wrapped error's message.
func (e *usageError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *usageError) Unwrap() error { return e.err }

// badInput marks err as bad input; nil stays nil.
func badInput(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err: err}
}

// configFault marks err as bad input when it is the configuration's
// fault (its backend not linked, or refusing the configuration, or
// lacking what the command needs); other errors stay runtime failures.
func configFault(err error) error {
	if errors.Is(err, assembly.ErrNotLinked) || errors.Is(err, driver.ErrInvalidConfig) ||
		errors.Is(err, driver.ErrNoCapability) || errors.Is(err, config.ErrInvalid) {
		return badInput(err)
	}
	return err
}

// usageErrorf is badInput(fmt.Errorf(format, args...)).
func usageErrorf(format string, args ...any) error {
	return badInput(fmt.Errorf(format, args...))
}

// statusError ends a command that ran to completion with an exit status
// of its own (redrive workers: the worst severity) and a one-line
// message.
type statusError struct {
	code int
	msg  string
}

// Error returns the message.
func (e *statusError) Error() string { return e.msg }

// exitCode maps an action's error to the exit status.
func exitCode(err error) int {
	var u *usageError
	var s *statusError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &s):
		return s.code
	case errors.As(err, &u):
		return exitUsage
	}
	return exitFailure
}

// printError writes err to w as one line per problem, each prefixed with
// "redrive: " and the command name.
func printError(w io.Writer, name string, err error) {
	prefix := "redrive: "
	if name != "" {
		prefix += name + ": "
	}
	for _, line := range errorLines(err) {
		fmt.Fprintln(w, prefix+printable(line)) // errors may quote the server or a message
	}
}

// errorLines splits err into lines: one per joined error, and one per line
// of a multi-line message.
func errorLines(err error) []string {
	switch e := err.(type) {
	case *usageError:
		return errorLines(e.err)
	case interface{ Unwrap() []error }:
		var out []string
		for _, sub := range e.Unwrap() {
			out = append(out, errorLines(sub)...)
		}
		return out
	}
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}
