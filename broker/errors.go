package broker

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// Sentinel errors callers branch on.
var (
	// ErrPermanent matches (errors.Is) every error wrapped by Permanent.
	ErrPermanent = errors.New("permanent failure")
	// ErrClosed is returned by a Broker used after Close.
	ErrClosed = errors.New("broker closed")
	// ErrUnroutable is returned by Publish when the broker accepted a message
	// but no queue was bound to receive it.
	ErrUnroutable = errors.New("message unroutable")
	// ErrTooLarge is returned by Publish for a message over the broker's size
	// limit; nothing of it was sent.
	ErrTooLarge = errors.New("message too large")
	// ErrRequeue matches (errors.Is) every error wrapped by Requeue.
	ErrRequeue = errors.New("requeue")
)

// Requeue hands the message back instead of failing it: it returns to its
// group at once with the same attempt number, spends no retry and is never
// dead-lettered for it, on both brokers and in both retry modes (RabbitMQ:
// a copy with the same story goes back to the group queue; Kafka: the
// record is handled again in place, its offset uncommitted meanwhile). For
// a failure that says nothing about the message: the handler's process is
// shutting down, or the worker's kill switch is tripping. Requeue(nil) is
// nil.
func Requeue(err error) error {
	if err == nil {
		return nil
	}
	return &RequeueError{Err: err}
}

// RequeueError is the error Requeue returns.
type RequeueError struct{ Err error }

// Error says "requeue: " and the handler's error.
func (e *RequeueError) Error() string { return "requeue: " + e.Err.Error() }

// Unwrap returns the handler's error.
func (e *RequeueError) Unwrap() error { return e.Err }

// Is matches ErrRequeue.
func (e *RequeueError) Is(target error) bool { return target == ErrRequeue }

// IsRequeue reports whether err was marked with Requeue.
func IsRequeue(err error) bool { return errors.Is(err, ErrRequeue) }

// Permanent marks err as not worth retrying: the message goes straight to the
// dead-letter queue with reason "permanent". Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// PermanentError is the error Permanent returns.
type PermanentError struct{ Err error }

// Error returns "permanent: " and the wrapped error's message.
func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Is reports whether target is ErrPermanent.
func (e *PermanentError) Is(target error) bool { return target == ErrPermanent }

// RetryAfter asks for the next retry after d instead of the policy's delay.
// It does not add retries: when the policy's retries are exhausted the
// message is dead-lettered. RetryAfter(nil, d) is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &RetryAfterError{Err: err, Delay: d}
}

// RetryAfterError is the error RetryAfter returns.
type RetryAfterError struct {
	Err   error
	Delay time.Duration
}

// Error returns the delay and the wrapped error's message.
func (e *RetryAfterError) Error() string { return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err) }

// Unwrap returns the wrapped error.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool { return errors.Is(err, ErrPermanent) }

// RetryDelay returns the delay asked for with RetryAfter, if any.
func RetryDelay(err error) (time.Duration, bool) {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return ra.Delay, true
	}
	return 0, false
}

// ErrorClass returns err's class: the value of an ErrorClass() string method
// anywhere in its chain (ClassPanic for a recovered panic: the pipeline's
// driver.PanicError says so), otherwise the type
// name of the innermost error that is not a redrive wrapper or a plain
// fmt/errors wrapper ("pkg.Type"). Plain errors (errors.New, fmt.Errorf) and
// errors that wrap several others (errors.Join, fmt.Errorf with several %w)
// are of class "error".
func ErrorClass(err error) string {
	if err == nil {
		return ""
	}
	var c interface{ ErrorClass() string }
	if errors.As(err, &c) {
		return c.ErrorClass()
	}
	for {
		err = unwrapOwn(err)
		next := errors.Unwrap(err)
		if next == nil || !isPlainWrapper(err) {
			break
		}
		err = next
	}
	return typeName(err)
}

// ErrorMessage is err's text without redrive's own Permanent and
// RetryAfter wrappers: what the handler said.
func ErrorMessage(err error) string { return unwrapOwn(err).Error() }

// unwrapOwn removes redrive's own wrappers (Permanent, RetryAfter) from
// the outside of err.
func unwrapOwn(err error) error {
	for {
		switch e := err.(type) {
		case *PermanentError:
			err = e.Err
		case *RetryAfterError:
			err = e.Err
		case *RequeueError:
			err = e.Err
		default:
			return err
		}
	}
}

func isPlainWrapper(err error) bool {
	switch reflect.TypeOf(err).String() {
	case "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
		return true
	}
	return false
}

func typeName(err error) string {
	t := reflect.TypeOf(err)
	switch t.String() {
	case "*errors.errorString", "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
		return "error"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == "" {
		return t.Name()
	}
	return t.PkgPath()[lastSlash(t.PkgPath())+1:] + "." + t.Name()
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}
