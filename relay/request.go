package relay

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/broker/wire"
)

// Message is a POST of the relay as an endpoint reads it back
// (ReadRequest): the inverse of the mapping in the package documentation.
type Message struct {
	// ID, Source, Type and Time are the CloudEvents attributes; Time is
	// zero when the message had no timestamp.
	ID, Source, Type string
	Time             time.Time
	// ContentType is the request's Content-Type.
	ContentType string
	// Worker is the worker the message was consumed for.
	Worker string
	// Attempt is 1 on the first delivery, 2 on the first retry, and so
	// on; 1 again after a replay.
	Attempt int
	// FirstFailureAt and LastFailureAt are zero before the first failure;
	// LastError and LastErrorClass describe the previous one.
	FirstFailureAt, LastFailureAt time.Time
	LastError, LastErrorClass     string
	// ReplayedFrom names the dead letter a replay came from.
	ReplayedFrom string
	// Redelivered is set when the broker delivers the message again (a
	// possible duplicate).
	Redelivered bool
	// Key is the message key, nil when it has none.
	Key []byte
	// Headers are the message's own headers, names and values as
	// published.
	Headers map[string]string
	// Body is the payload, byte for byte.
	Body []byte
}

// ErrBodyTooLarge is returned by ReadRequest for a body over its limit.
var ErrBodyTooLarge = errors.New("relay: request body over the limit")

// ReadRequest reads a POST of the relay: the headers decoded, and the
// body up to maxBody bytes (a larger one is ErrBodyTooLarge). A Go
// endpoint uses it; the relay's tests read what they receive with it.
func ReadRequest(r *http.Request, maxBody int64) (*Message, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("relay: read body: %w", err)
	}
	if int64(len(body)) > maxBody {
		return nil, ErrBodyTooLarge
	}
	m, err := ParseHeaders(r.Header)
	if err != nil {
		return nil, err
	}
	m.Body = body
	return m, nil
}

// ParseHeaders decodes the headers of a POST of the relay (names in any
// case).
func ParseHeaders(h http.Header) (*Message, error) {
	byName := make(map[string]string, len(h))
	for name, vs := range h {
		if len(vs) > 0 {
			byName[strings.ToLower(name)] = vs[0]
		}
	}
	m := &Message{Headers: map[string]string{}, ContentType: byName["content-type"]}
	var errs []error
	text := func(name string) string {
		v, err := Decode(byName[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return v
	}
	m.ID, m.Source, m.Type = text(HeaderID), byName[HeaderSource], byName[HeaderType]
	if v := byName[HeaderTime]; v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", HeaderTime, err))
		}
		m.Time = t
	}
	m.Worker = byName[HeaderWorker]
	m.Attempt, _ = strconv.Atoi(byName[HeaderAttempt])
	m.FirstFailureAt = wire.ParseTime(byName[HeaderFirstFailureAt])
	m.LastFailureAt = wire.ParseTime(byName[HeaderLastFailureAt])
	m.LastError, m.LastErrorClass = text(HeaderLastError), text(HeaderLastErrorClass)
	m.ReplayedFrom = text(HeaderReplayedFrom)
	m.Redelivered = byName[HeaderRedelivered] == "true"
	if _, ok := byName[HeaderKey]; ok {
		m.Key = []byte(text(HeaderKey))
	}
	for name, v := range byName {
		if k, ok := MessageHeaderName(name); ok {
			dv, err := Decode(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			m.Headers[k] = dv
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}
