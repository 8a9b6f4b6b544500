package relay_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/relay"
)

// What other producers send survives the trip to the endpoint: binary
// and non-ASCII values, names HTTP would mangle (case, "_", ".", spaces,
// empty), a binary key, an empty value; the story is readable.
func TestHeadersRoundTrip(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(200))
	ep := endpoint(t, relay.EndpointConfig{URL: srv.URL})
	first := time.Date(2025, 1, 15, 10, 30, 0, 123e6, time.UTC)
	appHeaders := map[string]string{
		"trace-id":           "t-1",
		"X-Request-ID":       "Mixed Case",
		"__TypeId__":         "com.example.Payout",
		"spring.json.header": `{"a":"b"}`,
		"with space":         "v",
		"":                   "empty name",
		"hex-looking":        "a plain name that begins with hex-",
		"binary":             "\x00\x01\xff\xfe\r\n",
		"unicode":            "Euro € 😀",
		"percent":            "100% \"quoted\"",
		"empty":              "",
		"Content-Length":     "999999",
		"Host":               "evil.example",
		"redrive-attempt":    "99",
	}
	story := map[string]string{
		broker.HeaderErrorClass:   "http.503",
		broker.HeaderReplayedFrom: "escrow.commands.payout.dlq/01HZ",
		broker.HeaderWorker:       "someone-else",
		broker.HeaderAttempt:      "7",
		"x-remaining-delay":       "1000",
	}
	h := map[string]string{}
	for k, v := range appHeaders {
		h[k] = v
	}
	for k, v := range story {
		h[k] = v
	}
	body := []byte{0, 1, 2, 0xff, 0xfe, '\n', '{', '}'}
	d := &broker.Delivery{Message: broker.Message{ID: "id with space/é", Key: []byte{0xde, 0xad, 0, 0xbe}, Value: body, Headers: h,
		Timestamp: first.Add(-time.Hour)}, Topic: "escrow.commands", Group: "payout", Partition: -1, Offset: -1,
		Attempt: 3, FirstFailureAt: first, LastFailureAt: first.Add(time.Minute), LastError: "HTTP 503: down\nfor maintenance", Redelivered: true}
	if err := ep.Handle(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	got := srv.received()[0]
	if !bytes.Equal(got.Body, body) {
		t.Errorf("body = %q, want %q", got.Body, body)
	}
	if len(got.Headers) != len(appHeaders) {
		t.Errorf("the endpoint got %d message headers, want the %d of the application: %q", len(got.Headers), len(appHeaders), got.Headers)
	}
	for k, v := range appHeaders {
		if got.Headers[k] != v {
			t.Errorf("header %q = %q, want %q", k, got.Headers[k], v)
		}
	}
	for _, c := range []struct{ name, got, want string }{
		{"id", got.ID, d.ID},
		{"source", got.Source, "/redrive/escrow.commands"},
		{"type", got.Type, relay.EventType},
		{"worker", got.Worker, "payout"},
		{"key", string(got.Key), string(d.Key)},
		{"last error", got.LastError, d.LastError},
		{"last error class", got.LastErrorClass, "http.503"},
		{"replayed from", got.ReplayedFrom, "escrow.commands.payout.dlq/01HZ"},
		{"content type", got.ContentType, relay.DefaultContentType},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if got.Attempt != 3 || !got.FirstFailureAt.Equal(first) || !got.LastFailureAt.Equal(first.Add(time.Minute)) ||
		!got.Time.Equal(d.Timestamp) || !got.Redelivered {
		t.Errorf("story = attempt %d, first %s, last %s, time %s, redelivered %v", got.Attempt, got.FirstFailureAt, got.LastFailureAt, got.Time, got.Redelivered)
	}
}

// Every header the endpoint receives is a valid HTTP field whose value is
// printable ASCII, and no message header lands on a name HTTP or the
// relay owns.
func TestHeadersAreSafe(t *testing.T) {
	t.Parallel()
	var seen http.Header
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() })
	ep := endpoint(t, relay.EndpointConfig{URL: srv.URL})
	d := delivery("\r\nX-Injected: 1", []byte("x"))
	d.Headers = map[string]string{"Authorization": "Bearer stolen", "ce-id": "forged", "Transfer-Encoding": "chunked",
		"x\r\ny": "\r\nX-Injected: 2", "Content-Type": "text/evil"}
	d.Key = []byte("k\r\nX-Injected: 3")
	if err := ep.Handle(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if seen.Get("X-Injected") != "" || seen.Get("Authorization") != "" || seen.Get("Content-Type") != relay.DefaultContentType {
		t.Errorf("a message header escaped its namespace: %v", seen)
	}
	if seen.Get("Ce-Id") != "%0D%0AX-Injected:%201" {
		t.Errorf("ce-id = %q", seen.Get("Ce-Id"))
	}
	for name, vs := range seen {
		for _, v := range vs {
			for i := range len(v) {
				if v[i] < 0x20 || v[i] > 0x7e {
					t.Errorf("header %s = %q holds byte %#x", name, v, v[i])
				}
			}
		}
	}
}

// A message whose headers do not fit in MaxHeaderBytes is dead-lettered
// at once, without a POST; one that fits is sent.
func TestHeadersTooLarge(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(200))
	ep := endpoint(t, relay.EndpointConfig{URL: srv.URL, MaxHeaderBytes: 2048})
	d := delivery("big", nil)
	d.Headers = map[string]string{"huge": strings.Repeat("v", 4096)}
	err := ep.Handle(t.Context(), d)
	var he *relay.HeadersError
	if !broker.IsPermanent(err) || !errorsAs(err, &he) || broker.ErrorClass(err) != "http.headers_too_large" {
		t.Fatalf("Handle = %v, want a permanent http.headers_too_large", err)
	}
	if len(srv.received()) != 0 {
		t.Error("the endpoint got a message whose headers do not fit")
	}
	d.Headers = map[string]string{"fits": strings.Repeat("v", 1024)}
	if err := ep.Handle(t.Context(), d); err != nil {
		t.Fatal(err)
	}
}

// The message's W3C trace context is passed on when it is valid, and
// only then.
func TestTraceContext(t *testing.T) {
	t.Parallel()
	var got []string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { got = append(got, r.Header.Get("Traceparent")) })
	ep := endpoint(t, relay.EndpointConfig{URL: srv.URL})
	valid := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tp := range []string{valid, "00-zz-00f067aa0ba902b7-01", ""} {
		d := delivery("m", nil)
		d.Headers = map[string]string{"traceparent": tp}
		if err := ep.Handle(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 3 || got[0] != valid || got[1] != "" || got[2] != "" {
		t.Errorf("traceparent received = %q, want the valid one only", got)
	}
	// With tracing on, the handler attempt's span is the parent, not the
	// message's.
	span := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled})
	d := delivery("m", nil)
	d.Headers = map[string]string{"traceparent": valid}
	if err := ep.Handle(trace.ContextWithSpanContext(t.Context(), span), d); err != nil {
		t.Fatal(err)
	}
	if want := "00-" + span.TraceID().String() + "-" + span.SpanID().String() + "-01"; got[3] != want {
		t.Errorf("traceparent with a span = %q, want %q", got[3], want)
	}
}

// A Kafka record without a message id gets a ce-id of its position, the
// same on every delivery; a RabbitMQ message without one a new id.
func TestEventID(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(200))
	ep := endpoint(t, relay.EndpointConfig{URL: srv.URL})
	rec := &broker.Delivery{Source: "orders", Partition: 2, Offset: 41, Attempt: 1}
	amqp := &broker.Delivery{Source: "orders.payout", Partition: -1, Offset: -1, Attempt: 1}
	for _, d := range []*broker.Delivery{rec, rec, amqp} {
		if err := ep.Handle(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	got := srv.received()
	if got[0].ID != "orders-2-41" || got[1].ID != got[0].ID || got[2].ID == "" || got[2].ID == got[0].ID {
		t.Errorf("ce-ids = %q %q %q", got[0].ID, got[1].ID, got[2].ID)
	}
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "plain", "Euro € 😀", "\x00\xff", "%", "%%41", `"q"`, " "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := relay.Encode(s)
		for i := range len(e) {
			if c := e[i]; c < 0x21 || c > 0x7e || c == '"' {
				t.Fatalf("Encode(%q) = %q holds %#x", s, e, c)
			}
		}
		if d, err := relay.Decode(e); err != nil || d != s {
			t.Fatalf("Decode(Encode(%q)) = %q, %v", s, d, err)
		}
		// A receiver may lower-case the hex digits (and so the text).
		if d, err := relay.Decode(asciiLower(e)); err != nil || d != asciiLower(s) {
			t.Fatalf("Decode(lower(Encode(%q))) = %q, %v", s, d, err)
		}
	})
}

func FuzzHeaderName(f *testing.F) {
	for _, s := range []string{"", "trace-id", "X-Request-ID", "__TypeId__", "hex-abc", "a.b", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		h := relay.HeaderName(name)
		for i := range len(h) {
			if c := h[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				t.Fatalf("HeaderName(%q) = %q holds %q", name, h, c)
			}
		}
		for _, form := range []string{h, strings.ToUpper(h), http.CanonicalHeaderKey(h)} {
			if got, ok := relay.MessageHeaderName(form); !ok || got != name {
				t.Fatalf("MessageHeaderName(%q) = %q, %v, want %q", form, got, ok, name)
			}
		}
	})
}

func TestDecodeRefusesBadEscapes(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"%", "%4", "%zz", "a%g1"} {
		if _, err := relay.Decode(v); err == nil {
			t.Errorf("Decode(%q) succeeded", v)
		}
	}
}

// asciiLower lower-cases the ASCII letters of s, byte by byte.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
