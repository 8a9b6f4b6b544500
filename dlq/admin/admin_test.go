package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/storekinds"
)

const secret = "s3cret-token-for-tests"

// people are operators with tokens of their own (bearerOf), besides the
// shared "ops-team" token.
var people = []admin.Token{{Name: "alice", Secret: "token-of-alice"}, {Name: "bob", Secret: "token-of-bob"}, {Name: "carol", Secret: "token-of-carol"}}

// bearerOf is the Authorization header value of one of people.
func bearerOf(name string) string { return "Bearer token-of-" + name }

var quiet = slog.New(slog.DiscardHandler)

// stores are the stores the tests run on.
var stores = storekinds.Kinds()

// publisher records replays; it fails while fail is set and waits on gate
// when it is set.
type publisher struct {
	mu    sync.Mutex
	calls []string
	fail  error
	gate  chan struct{}
}

func (p *publisher) Republish(ctx context.Context, e dlq.Entry, to dlq.Route, from string) error {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.calls = append(p.calls, from)
	return nil
}

func (p *publisher) set(fn func(p *publisher)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p)
}

func (p *publisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// routedDLQs are the DLQs of the tests whose entries (worker "billing" of
// topic "orders") have a replay route; others have none.
var routedDLQs = []string{"auth.dlq", "bad.dlq", "ds.dlq", "h.dlq", "list.dlq", "open.dlq", "orders.billing.dlq",
	"orders.dlq", "ra.dlq", "ra2.dlq", "rp.dlq", "rt.dlq", "ru.dlq", "show.dlq", "sj.dlq", "pl.dlq", "eb.dlq", "cj.dlq", "rate.dlq", "dl.dlq", "grp.dlq"}

// testRoutes are the routes of routedDLQs.
func testRoutes() []dlq.Route {
	routes := make([]dlq.Route, 0, len(routedDLQs))
	for _, name := range routedDLQs {
		routes = append(routes, dlq.Route{DLQ: name, Topic: "orders", Worker: "billing", Target: "orders.billing", Sources: []string{"orders.billing"}})
	}
	return routes
}

type fixture struct {
	t     *testing.T
	store dlq.Store
	pub   *publisher
	srv   *admin.Server
}

func newFixture(t *testing.T, s dlq.Store) *fixture {
	t.Helper()
	return newFixtureWith(t, s, nil)
}

// newFixtureWith is newFixture with its admin.Config edited by edit.
func newFixtureWith(t *testing.T, s dlq.Store, edit func(*admin.Config)) *fixture {
	t.Helper()
	pub := &publisher{}
	ops, err := operate.New(operate.Config{
		Store: s, Republisher: pub, Logger: quiet, Routes: testRoutes(), MaxPayloadPreview: 1024,
		Policies: map[string]dlq.Policy{"empty.dlq": {Severity: broker.SeverityCritical, Retention: broker.Forever}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := admin.Config{
		Ops: ops, Listen: "127.0.0.1:0", Logger: quiet,
		Tokens: append([]admin.Token{{Name: "ops-team", Secret: secret}, {Name: "ci", Secret: "another-secret-token"}}, people...),
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := admin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return &fixture{t: t, store: s, pub: pub, srv: srv}
}

// insert stores n entries of dlqName and returns them.
func (f *fixture) insert(dlqName string, n int, mod func(i int, r *dlq.Record)) []dlq.Record {
	f.t.Helper()
	out := make([]dlq.Record, 0, n)
	for i := range n {
		r := dlq.Record{
			Broker: "rabbitmq", DLQ: dlqName, Identity: dlqName + "-" + string(rune('a'+i%26)) + "-" + strconv.Itoa(i),
			ReceivedAt: time.Date(2025, 1, 15, 10, 0, i, 0, time.UTC),
			Entry: dlq.Entry{
				MessageID: "m" + strconv.Itoa(i), OriginalTopic: "orders", OriginalPartition: -1, OriginalOffset: -1,
				OriginalKey: []byte("key-" + strconv.Itoa(i)), OriginalValue: []byte(`{"n":` + strconv.Itoa(i) + `}`),
				OriginalHeaders: map[string]string{"content-type": "application/json"},
				ErrorClass:      "payout.BankError", ErrorMessage: "bank rejected transfer " + strconv.Itoa(i),
				Reason: string(driver.ReasonMaxRetries), RetryCount: 5, Worker: "billing", Source: "orders.billing",
			},
		}
		if mod != nil {
			mod(i, &r)
		}
		got, _, err := f.store.Insert(context.Background(), r)
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, got)
	}
	return out
}

// do sends a request with the token (unless headers override
// Authorization) and returns the response.
func (f *fixture) do(method, target, body string, headers ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Authorization", "Bearer "+secret)
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		switch {
		case headers[i] == "Host":
			req.Host = headers[i+1]
		case headers[i] == "RemoteAddr": // the TCP peer, not a header
			req.RemoteAddr = headers[i+1]
		case headers[i+1] == "":
			req.Header.Del(headers[i])
		default:
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	w := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(w, req)
	if w.Code >= 500 && w.Code != http.StatusBadGateway && w.Code != http.StatusServiceUnavailable {
		f.t.Errorf("%s %s = %d %s", method, target, w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		f.t.Errorf("%s %s: Content-Type %q, body %s", method, target, ct, w.Body)
	}
	return w
}

// doReader sends body with no announced length (chunked).
func (f *fixture) doReader(method, target string, body io.Reader) *httptest.ResponseRecorder {
	f.t.Helper()
	req := httptest.NewRequest(method, target, io.MultiReader(body))
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(w, req)
	return w
}

// decode reads the JSON body of w into a map.
func decode(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", w.Body, err)
	}
	return m
}

// expect checks the status, and for errors the param.
func expect(t *testing.T, w *httptest.ResponseRecorder, status int, param string) map[string]any {
	t.Helper()
	m := decode(t, w)
	if w.Code != status {
		t.Errorf("status = %d, want %d; body %s", w.Code, status, w.Body)
	}
	if status >= 400 {
		if e, _ := m["error"].(string); e == "" {
			t.Errorf("error response without a message: %s", w.Body)
		}
		if got, _ := m["param"].(string); got != param {
			t.Errorf("param = %q, want %q; body %s", got, param, w.Body)
		}
	}
	return m
}

func TestNewChecksAuth(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	ops, err := operate.New(operate.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  admin.Config
		want string // "" = valid, else the field the error names
	}{
		{"no token", admin.Config{Listen: "127.0.0.1:8080"}, "Config.Tokens"},
		{"insecure on all interfaces", admin.Config{Listen: "0.0.0.0:8080", InsecureNoAuth: true}, "Config.Listen"},
		{"insecure without host", admin.Config{Listen: ":8080", InsecureNoAuth: true}, "Config.Listen"},
		{"insecure on a public address", admin.Config{Listen: "10.1.2.3:8080", InsecureNoAuth: true}, "Config.Listen"},
		{"insecure on 127.0.0.1", admin.Config{Listen: "127.0.0.1:8080", InsecureNoAuth: true}, ""},
		{"insecure on ::1", admin.Config{Listen: "[::1]:8080", InsecureNoAuth: true}, ""},
		{"insecure on localhost", admin.Config{Listen: "localhost:8080", InsecureNoAuth: true}, ""},
		{"no ops", admin.Config{Listen: "127.0.0.1:8080", InsecureNoAuth: true}, "Config.Ops"},
		{"token", admin.Config{Listen: "0.0.0.0:8080", Tokens: []admin.Token{{Secret: "x-token-1"}}}, ""},
		{"empty secret", admin.Config{Listen: "127.0.0.1:8080", Tokens: []admin.Token{{Name: "a"}}}, "Config.Tokens[0]: token \"a\" has an empty secret"},
		{"short secret", admin.Config{Listen: "127.0.0.1:8080", Tokens: []admin.Token{{Name: "a", Secret: "x"}}}, "Credentials[0].Token"},
		{"padded secret", admin.Config{Listen: "127.0.0.1:8080", Tokens: []admin.Token{{Name: "a", Secret: " x-token-1"}}}, "Credentials[0].Token"},
		{"name with an escape", admin.Config{Listen: "127.0.0.1:8080", Tokens: []admin.Token{{Name: "a\x1b[2J", Secret: "x-token-1"}}}, "Credentials[0].Name"},
		{"two tokens of one name", admin.Config{Listen: "127.0.0.1:8080", Tokens: []admin.Token{{Secret: "x-token-1"}, {Secret: "y-token-1"}}}, "Config.Tokens: access: Config.Credentials[1].Name"},
		{"one token for two", admin.Config{Listen: "127.0.0.1:8080", Tokens: []admin.Token{{Name: "a", Secret: "x-token-1"}, {Name: "b", Secret: "x-token-1"}}}, "same token"},
		{"tokens and access", admin.Config{Listen: "127.0.0.1:8080", Tokens: []admin.Token{{Secret: "x-token-1"}}, Access: &access.Authenticator{}}, "Config.Tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Logger = quiet
			if tt.want != "Config.Ops" {
				tt.cfg.Ops = ops
			}
			if err := tt.cfg.Validate(); (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error naming %q", err, tt.want)
			}
			srv, err := admin.New(tt.cfg)
			if (err == nil) != (tt.want == "") {
				t.Fatalf("New = %v, want an error naming %q", err, tt.want)
			}
			if err == nil {
				srv.Close()
			} else if len(tt.cfg.Tokens) == 0 && tt.cfg.Ops != nil && !errors.Is(err, admin.ErrNoToken) {
				t.Errorf("New = %v, want ErrNoToken", err)
			}
		})
	}
}

func TestServe(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	ops, err := operate.New(operate.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", InsecureNoAuth: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// Without a token, a listener on every interface is refused.
	if ln, err := net.Listen("tcp", "0.0.0.0:0"); err == nil {
		if err := srv.Serve(context.Background(), ln); !errors.Is(err, admin.ErrNoToken) {
			t.Errorf("Serve on 0.0.0.0 without a token = %v, want ErrNoToken", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/internal/v1/dlq")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"dlqs":[]`) {
		t.Errorf("GET /internal/v1/dlq = %d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v after its context ended", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestAuth(t *testing.T) {
	f := newFixture(t, stores[0].Open(t))
	recs := f.insert("auth.dlq", 5, nil)
	tests := []struct {
		name   string
		header string
		status int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"token prefix", "Bearer " + secret[:5], http.StatusUnauthorized},
		{"basic scheme", "Basic " + secret, http.StatusUnauthorized},
		{"no scheme", secret, http.StatusUnauthorized},
		{"right token", "Bearer " + secret, http.StatusOK},
		{"scheme in lower case", "bearer " + secret, http.StatusOK},
		{"second token", "Bearer another-secret-token", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.do("GET", "/internal/v1/dlq", "", "Authorization", tt.header)
			expect(t, w, tt.status, "")
			if tt.status == http.StatusUnauthorized && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without WWW-Authenticate: %v", w.Header())
			}
		})
	}
	// Unknown routes need the token too (no route discovery).
	expect(t, f.do("GET", "/nope", "", "Authorization", ""), http.StatusUnauthorized, "")
	expect(t, f.do("DELETE", "/internal/v1/dlq/auth.dlq/"+recs[0].ID+"?reason=x", "", "Authorization", "Bearer nope"), http.StatusUnauthorized, "")
	if got, _ := f.store.Get(context.Background(), "auth.dlq", recs[0].ID); got.Status != dlq.StatusPending {
		t.Errorf("an unauthenticated discard changed the entry to %s", got.Status)
	}

	// The actor: the token's name; a claim (X-Redrive-Actor) that
	// differs is recorded beside it, never instead: a named operator
	// cannot pass for another.
	for _, tc := range []struct {
		id, auth, header, want string
	}{
		{recs[0].ID, "Bearer " + secret, "", "ops-team"},
		{recs[1].ID, "Bearer another-secret-token", "", "ci"},
		{recs[2].ID, "Bearer " + secret, "alice@example.com", "ops-team (as alice@example.com)"},
		{recs[3].ID, bearerOf("alice"), "bob", "alice (as bob)"},
		{recs[4].ID, bearerOf("bob"), "bob", "bob"},
	} {
		w := f.do("DELETE", "/internal/v1/dlq/auth.dlq/"+tc.id+"?reason=dup", "", "Authorization", tc.auth, "X-Redrive-Actor", tc.header)
		expect(t, w, http.StatusOK, "")
		trail, err := f.store.Audit(context.Background(), "auth.dlq", tc.id)
		if err != nil || len(trail) != 1 || trail[0].Actor != tc.want {
			t.Errorf("audit actor = %+v, %v; want %q", trail, err, tc.want)
		}
		who := expect(t, f.do("GET", "/internal/v1/whoami", "", "Authorization", tc.auth, "X-Redrive-Actor", tc.header), http.StatusOK, "")
		if who["actor"] != tc.want || who["role"] != "operator" || who["via"] != "token" {
			t.Errorf("whoami = %v, want actor %q", who, tc.want)
		}
	}
	for _, h := range []string{"bad\x01actor", strings.Repeat("a", 129), "bob\u202e", "bo\u0085b", "\xff\xfe"} {
		expect(t, f.do("GET", "/internal/v1/dlq", "", "X-Redrive-Actor", h), http.StatusBadRequest, "X-Redrive-Actor")
	}
}

func TestInsecureNoAuthActor(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	ops, err := operate.New(operate.Config{Store: s, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", InsecureNoAuth: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f := &fixture{t: t, store: s, srv: srv}
	r := f.insert("open.dlq", 1, nil)[0]
	w := f.do("DELETE", "/internal/v1/dlq/open.dlq/"+r.ID+"?reason=x", "", "Authorization", "")
	expect(t, w, http.StatusOK, "")
	if trail, _ := s.Audit(context.Background(), "open.dlq", r.ID); len(trail) != 1 || trail[0].Actor != admin.DefaultActor {
		t.Errorf("audit = %+v, want actor %q", trail, admin.DefaultActor)
	}
	// Replay without a broker: 503, the entry stays pending.
	r2 := f.insert("open.dlq", 2, nil)[1]
	expect(t, f.do("POST", "/internal/v1/dlq/replay", `{"topic":"open.dlq","id":"`+r2.ID+`"}`), http.StatusServiceUnavailable, "")
	if got, _ := s.Get(context.Background(), "open.dlq", r2.ID); got.Status != dlq.StatusPending {
		t.Errorf("entry is %s", got.Status)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:1": true, "[::1]:8080": true, "localhost:80": true, "LOCALHOST": true, "::1": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "10.0.0.1:8080": false, "example.com:80": false, "": false,
	} {
		if got := admin.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
