package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"testing"
	"time"
)

func TestPermanent(t *testing.T) {
	if err := Permanent(nil); err != nil {
		t.Fatalf("Permanent(nil) = %v, want nil", err)
	}
	if IsPermanent(nil) {
		t.Error("IsPermanent(nil) = true")
	}
	base := errors.New("bad payload")
	err := Permanent(base)
	if !errors.Is(err, ErrPermanent) || !IsPermanent(err) {
		t.Errorf("Permanent(err) is not ErrPermanent")
	}
	if !errors.Is(err, base) {
		t.Errorf("Permanent(err) does not unwrap to err")
	}
	if got, want := err.Error(), "permanent: bad payload"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var pe *PermanentError
	if !errors.As(err, &pe) || pe.Err != base {
		t.Errorf("errors.As(*PermanentError) = %v, %v", pe, pe != nil && pe.Err == base)
	}
	wrapped := fmt.Errorf("handle order 42: %w", err)
	if !IsPermanent(wrapped) || !errors.Is(wrapped, base) {
		t.Errorf("fmt.Errorf(%%w) hides the permanent mark")
	}
	if joined := errors.Join(io.EOF, err); !IsPermanent(joined) {
		t.Errorf("errors.Join hides the permanent mark")
	}
	for _, e := range []error{base, io.EOF, fmt.Errorf("x: %w", base), RetryAfter(base, time.Second)} {
		if IsPermanent(e) {
			t.Errorf("IsPermanent(%v) = true", e)
		}
	}
	if errors.Is(ErrPermanent, base) {
		t.Errorf("ErrPermanent matches an unrelated error")
	}
}

func TestRetryAfter(t *testing.T) {
	if err := RetryAfter(nil, time.Second); err != nil {
		t.Fatalf("RetryAfter(nil, 1s) = %v, want nil", err)
	}
	if d, ok := RetryDelay(nil); ok || d != 0 {
		t.Errorf("RetryDelay(nil) = %v, %v", d, ok)
	}
	base := errors.New("rate limited")
	err := RetryAfter(base, 90*time.Second)
	if got, want := err.Error(), "retry after 1m30s: rate limited"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, base) {
		t.Error("RetryAfter(err, d) does not unwrap to err")
	}
	if IsPermanent(err) {
		t.Error("RetryAfter(err, d) is permanent")
	}
	var ra *RetryAfterError
	if !errors.As(err, &ra) || ra.Delay != 90*time.Second || ra.Err != base {
		t.Errorf("errors.As(*RetryAfterError) = %+v", ra)
	}
	for _, e := range []error{err, fmt.Errorf("call api: %w", err), fmt.Errorf("a: %w", fmt.Errorf("b: %w", err))} {
		if d, ok := RetryDelay(e); !ok || d != 90*time.Second {
			t.Errorf("RetryDelay(%q) = %v, %v; want 1m30s, true", e, d, ok)
		}
	}
	if d, ok := RetryDelay(base); ok || d != 0 {
		t.Errorf("RetryDelay(plain) = %v, %v; want 0, false", d, ok)
	}
	// The outermost RetryAfter wins.
	if d, _ := RetryDelay(RetryAfter(RetryAfter(base, time.Second), time.Minute)); d != time.Minute {
		t.Errorf("nested RetryAfter: RetryDelay = %v, want 1m", d)
	}
}

type classErr struct{ class string }

func (e *classErr) Error() string      { return "classified" }
func (e *classErr) ErrorClass() string { return e.class }

type typedErr struct{ code int }

func (e *typedErr) Error() string { return fmt.Sprintf("code %d", e.code) }

type valueErr struct{}

func (valueErr) Error() string { return "value error" }

// customWrapper is a wrapper that is not fmt's or redrive's: its own type is
// the class.
type customWrapper struct{ err error }

func (e *customWrapper) Error() string { return "custom: " + e.err.Error() }
func (e *customWrapper) Unwrap() error { return e.err }

func TestErrorClass(t *testing.T) {
	_, statErr := os.Stat("/definitely/not/here")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"errors.New", errors.New("boom"), "error"},
		{"fmt.Errorf without %w", fmt.Errorf("boom %d", 1), "error"},
		{"fmt.Errorf of plain", fmt.Errorf("ctx: %w", errors.New("boom")), "error"},
		{"sentinel", io.EOF, "error"},
		{"context.Canceled", context.Canceled, "error"},
		{"context.DeadlineExceeded", context.DeadlineExceeded, "context.deadlineExceededError"},
		{"typed pointer", &typedErr{code: 1}, "broker.typedErr"},
		{"typed value", valueErr{}, "broker.valueErr"},
		{"stdlib typed", statErr, "fs.PathError"},
		{"stdlib typed literal", &fs.PathError{Op: "open", Err: io.EOF}, "fs.PathError"},
		{"wrapped typed", fmt.Errorf("a: %w", fmt.Errorf("b: %w", &typedErr{})), "broker.typedErr"},
		{"permanent typed", Permanent(&typedErr{}), "broker.typedErr"},
		{"permanent plain", Permanent(errors.New("x")), "error"},
		{"retry after typed", RetryAfter(fmt.Errorf("x: %w", &typedErr{}), time.Second), "broker.typedErr"},
		{"wrapped permanent", fmt.Errorf("x: %w", Permanent(valueErr{})), "broker.valueErr"},
		{"custom wrapper is its own class", &customWrapper{err: &typedErr{}}, "broker.customWrapper"},
		{"url.Error", &url.Error{Op: "Get", URL: "http://x", Err: io.EOF}, "url.Error"},
		{"ErrorClass method", &classErr{class: "validation"}, "validation"},
		{"ErrorClass method wrapped", fmt.Errorf("x: %w", Permanent(&classErr{class: "validation"})), "validation"},
		{"ErrorClass method under custom wrapper", &customWrapper{err: &classErr{class: "quota"}}, "quota"},
		{"errors.Join", errors.Join(errors.New("a"), &typedErr{}), "error"},
		{"multiple %w", fmt.Errorf("%w: %w", io.EOF, &typedErr{}), "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorClass(tt.err); got != tt.want {
				t.Errorf("ErrorClass(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
