package relay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/relay"
)

// server is a Go endpoint: it records what it received and answers as
// answer says.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	got  []*relay.Message
	auth []string
}

func newServer(t *testing.T, answer http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(s.handler(t, answer))
	t.Cleanup(s.Close)
	return s
}

func (s *server) handler(t *testing.T, answer http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m, err := relay.ReadRequest(r, 1<<20)
		if err != nil {
			t.Errorf("endpoint: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, m)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		answer(w, r)
	}
}

func (s *server) received() []*relay.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*relay.Message(nil), s.got...)
}

func endpoint(t *testing.T, cfg relay.EndpointConfig) *relay.Endpoint {
	t.Helper()
	if cfg.Worker == "" {
		cfg.Worker = "payout"
	}
	if cfg.Topic == "" {
		cfg.Topic = "escrow.commands"
	}
	ep, err := relay.NewEndpoint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ep.Close)
	return ep
}

func delivery(id string, value []byte) *broker.Delivery {
	return &broker.Delivery{Message: broker.Message{ID: id, Value: value}, Topic: "escrow.commands", Group: "payout",
		Partition: -1, Offset: -1, Attempt: 1}
}

func status(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

func jsonBody(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// The answer decides, as the package documentation's table says.
func TestAnswers(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name      string
		answer    http.HandlerFunc
		cfg       relay.EndpointConfig
		permanent bool
		retryIn   time.Duration // > 0: RetryAfter about this long
		ok        bool
		class     string
		text      string
	}{
		{name: "200", answer: status(200), ok: true},
		{name: "204", answer: status(204), ok: true},
		{name: "400 permanent", answer: status(400), permanent: true, class: "http.400", text: "HTTP 400 Bad Request"},
		{name: "404 permanent", answer: status(404), permanent: true, class: "http.404"},
		{name: "410 permanent", answer: status(410), permanent: true, class: "http.410"},
		{name: "422 permanent", answer: status(422), permanent: true, class: "http.422"},
		{name: "409 retried", answer: status(409), class: "http.409"},
		{name: "401 retried", answer: status(401), class: "http.401"},
		{name: "500 retried", answer: status(500), class: "http.500", text: "HTTP 500 Internal Server Error"},
		{name: "configured permanent", answer: status(409), cfg: relay.EndpointConfig{PermanentStatuses: []int{409}}, permanent: true, class: "http.409"},
		{name: "400 not in the configured list", answer: status(400), cfg: relay.EndpointConfig{PermanentStatuses: []int{409}}, class: "http.400"},
		{name: "429 Retry-After seconds", answer: status(429, "Retry-After", "2"), retryIn: 2 * time.Second, class: "http.429"},
		{name: "503 Retry-After date", answer: status(503, "Retry-After", date), retryIn: 5 * time.Second, class: "http.503"},
		{name: "429 Retry-After capped", answer: status(429, "Retry-After", "86400"), cfg: relay.EndpointConfig{MaxRetryAfter: time.Minute},
			retryIn: time.Minute, class: "http.429"},
		{name: "429 without Retry-After", answer: status(429), class: "http.429"},
		{name: "503 with a bad Retry-After", answer: status(503, "Retry-After", "soon"), class: "http.503"},
		{name: "500 Retry-After ignored", answer: status(500, "Retry-After", "2"), class: "http.500"},
		{name: "DROP body on 500", answer: jsonBody(500, `{"status": "DROP"}`), permanent: true, class: "http.500", text: `the body says "DROP"`},
		{name: "drop body on 200", answer: jsonBody(200, `{"status":"drop","why":"duplicate"}`), permanent: true, class: "http.200"},
		{name: "RETRY body on 200", answer: jsonBody(200, `{"status": "RETRY"}`), class: "http.200", text: `the body says "RETRY"`},
		{name: "SUCCESS body on 200", answer: jsonBody(200, `{"status": "SUCCESS"}`), ok: true},
		{name: "SUCCESS body on 500", answer: jsonBody(500, `{"status": "SUCCESS"}`), class: "http.500"},
		{name: "status not a string", answer: jsonBody(200, `{"status": ["DROP"]}`), ok: true},
		{name: "DROP as text is not JSON", answer: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, `{"status": "DROP"}`)
		}, ok: true},
		{name: "302 not followed", answer: status(302, "Location", "/elsewhere"), class: "http.302", text: "redirect not followed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.answer)
			tc.cfg.URL = srv.URL + "/events"
			ep := endpoint(t, tc.cfg)
			err := ep.Handle(t.Context(), delivery("m-1", []byte(`{"n":1}`)))
			if tc.ok {
				if err != nil {
					t.Fatalf("Handle = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Handle = nil, want a failure")
			}
			if got := broker.IsPermanent(err); got != tc.permanent {
				t.Errorf("IsPermanent(%v) = %v, want %v", err, got, tc.permanent)
			}
			d, ok := broker.RetryDelay(err)
			if tc.retryIn > 0 {
				if !ok || d > tc.retryIn || d < tc.retryIn-2*time.Second {
					t.Errorf("RetryDelay(%v) = %s %v, want about %s", err, d, ok, tc.retryIn)
				}
			} else if ok {
				t.Errorf("RetryDelay(%v) = %s, want none", err, d)
			}
			if got := broker.ErrorClass(err); got != tc.class {
				t.Errorf("ErrorClass(%v) = %q, want %q", err, got, tc.class)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not say %q", err, tc.text)
			}
			if len(srv.received()) != 1 {
				t.Errorf("endpoint received %d POSTs, want 1", len(srv.received()))
			}
		})
	}
}

// A POST past the timeout, to nothing, or cut short by the relay
// stopping.
func TestNoAnswer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hang := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })

	t.Run("timeout", func(t *testing.T) {
		ep := endpoint(t, relay.EndpointConfig{URL: hang.URL, Timeout: 200 * time.Millisecond})
		start := time.Now()
		err := ep.Handle(t.Context(), delivery("m", nil))
		var te *relay.TransportError
		if !errors.As(err, &te) || !te.Timeout || broker.ErrorClass(err) != "http.timeout" || broker.IsPermanent(err) || broker.IsRequeue(err) {
			t.Fatalf("Handle = %v (%T), want a transient http.timeout", err, err)
		}
		if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
			t.Errorf("a timed-out POST took %s, want about 200ms", d)
		}
		if !strings.Contains(err.Error(), "no answer within 200ms") {
			t.Errorf("error %q", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		ep := endpoint(t, relay.EndpointConfig{URL: "http://" + testenv.ClosedAddr(t) + "/e?code=s3cret"})
		err := ep.Handle(t.Context(), delivery("m", nil))
		if broker.ErrorClass(err) != "http.unreachable" || broker.IsPermanent(err) || broker.IsRequeue(err) {
			t.Fatalf("Handle = %v, want a transient http.unreachable", err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error %q shows the URL's query", err)
		}
	})
	t.Run("relay stopping", func(t *testing.T) {
		ep := endpoint(t, relay.EndpointConfig{URL: hang.URL})
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		err := ep.Handle(ctx, delivery("m", nil))
		if !broker.IsRequeue(err) {
			t.Fatalf("Handle after ctx ended = %v, want a Requeue", err)
		}
		if n := ep.Stats().Outcomes["canceled"]; n != 1 {
			t.Errorf("canceled = %d, want 1", n)
		}
	})
}

// A response body becomes the failure's text: bounded and escaped, so
// that no terminal or page is at its mercy.
func TestErrorText(t *testing.T) {
	t.Parallel()
	hostile := "line1\nline2\x1b[31mred\x1b[0m\u202eevil\u202c \xff\xfe tab\there \\ back"
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(500)
		_, _ = io.WriteString(w, hostile)
		_, _ = io.WriteString(w, strings.Repeat("x", 10<<20)) // 10 MiB more, never read whole
	})
	ep := endpoint(t, relay.EndpointConfig{URL: srv.URL})
	err := ep.Handle(t.Context(), delivery("m", nil))
	text := err.Error()
	for _, bad := range []string{"\n", "\x1b", "\u202e", "\xff", "\t"} {
		if strings.Contains(text, bad) {
			t.Errorf("error text holds %q: %q", bad, text)
		}
	}
	for _, want := range []string{`line1\nline2\x1b[31mred`, `\u{202e}evil`, `\xff\xfe`, `tab\there`, `\\ back`, "…"} {
		if !strings.Contains(text, want) {
			t.Errorf("error text %q does not hold %q", text, want)
		}
	}
	if len(text) > 100+4*relay.MaxErrorBody {
		t.Errorf("error text is %d bytes long", len(text))
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"plain text", 100, "plain text"},
		{"  padded \n", 100, "padded"},
		{"é中文😀", 100, "é中文😀"},
		{"abc", 2, "ab…"},
		{"é", 1, "…"}, // a rune cut in two is dropped
		{"\x00\x7f\u0085.", 100, `\x00\x7f\u{0085}.`},
		{"a\u200fb", 100, `a\u{200f}b`},
	} {
		if got := relay.Escape([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("Escape(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// Every POST is counted by outcome, in the metrics and in Stats.
func TestMetricsAndStats(t *testing.T) {
	t.Parallel()
	var n int
	var mu sync.Mutex
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		switch i % 3 {
		case 0:
			w.WriteHeader(500)
		case 1:
			w.WriteHeader(200)
		case 2:
			w.WriteHeader(404)
		}
	})
	reg := prometheus.NewPedanticRegistry()
	ep := endpoint(t, relay.EndpointConfig{URL: srv.URL + "/e?token=s3cret", Registerer: reg})
	other := endpoint(t, relay.EndpointConfig{Worker: "refund", URL: srv.URL + "/r", Registerer: reg}) // shares the collectors
	for i := range 9 {
		_ = ep.Handle(t.Context(), delivery(fmt.Sprint(i), nil))
	}
	_ = other.Handle(t.Context(), delivery("x", nil))
	fams := testenv.Scrape(t, reg)
	labels := func(outcome string) map[string]string {
		return map[string]string{"worker": "payout", "endpoint": srv.URL + "/e", "outcome": outcome}
	}
	for outcome, want := range map[string]float64{"success": 3, "retry": 3, "permanent": 3, "timeout": 0, "unreachable": 0} {
		if got, ok := testenv.Value(fams, relay.MetricRequests, labels(outcome)); !ok || got != want {
			t.Errorf("%s{outcome=%s} = %v (found %v), want %v", relay.MetricRequests, outcome, got, ok, want)
		}
	}
	var observed uint64
	for _, m := range fams[relay.MetricRequestDuration].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "worker" && l.GetValue() == "payout" {
				observed = m.GetHistogram().GetSampleCount()
			}
		}
	}
	if observed != 9 {
		t.Errorf("%s{worker=payout} count = %d, want 9", relay.MetricRequestDuration, observed)
	}
	s := ep.Stats()
	if s.URL != srv.URL+"/e" || s.Outcomes["success"] != 3 || s.Outcomes["retry"] != 3 || s.Outcomes["permanent"] != 3 || len(s.Outcomes) != 3 {
		t.Errorf("Stats = %+v", s)
	}
	if s.P50 <= 0 || s.P99 < s.P50 || s.P99 > 5*time.Second {
		t.Errorf("Stats quantiles p50 %s p99 %s", s.P50, s.P99)
	}
}

func TestEndpointConfigValidate(t *testing.T) {
	t.Parallel()
	ok := relay.EndpointConfig{Worker: "w", Topic: "t", URL: "http://h/"}
	with := func(f func(*relay.EndpointConfig)) relay.EndpointConfig { c := ok; f(&c); return c }
	testenv.RunValidate(t, []testenv.ValidateCase[relay.EndpointConfig]{
		{Name: "minimal", Config: ok},
		{Name: "no worker", Config: with(func(c *relay.EndpointConfig) { c.Worker = "" }), Want: "EndpointConfig.Worker"},
		{Name: "no topic", Config: with(func(c *relay.EndpointConfig) { c.Topic = "" }), Want: "EndpointConfig.Topic"},
		{Name: "no url", Config: with(func(c *relay.EndpointConfig) { c.URL = "" }), Want: "EndpointConfig.URL"},
		{Name: "ftp", Config: with(func(c *relay.EndpointConfig) { c.URL = "ftp://h/" }), Want: "EndpointConfig.URL"},
		{Name: "user", Config: with(func(c *relay.EndpointConfig) { c.URL = "http://u:p@h/" }), Want: "EndpointConfig.URL"},
		{Name: "timeout", Config: with(func(c *relay.EndpointConfig) { c.Timeout = -1 }), Want: "EndpointConfig.Timeout"},
		{Name: "redirects", Config: with(func(c *relay.EndpointConfig) { c.MaxRedirects = 11 }), Want: "EndpointConfig.MaxRedirects"},
		{Name: "429", Config: with(func(c *relay.EndpointConfig) { c.PermanentStatuses = []int{429} }), Want: "EndpointConfig.PermanentStatuses[0]"},
		{Name: "token", Config: with(func(c *relay.EndpointConfig) { c.BearerToken = "a b" }), Want: "EndpointConfig.BearerToken"},
	}, relay.EndpointConfig.Validate, func(c relay.EndpointConfig) error { _, err := relay.NewEndpoint(c); return err })
}

func errorsAs[T error](err error, target *T) bool { return errors.As(err, target) }
