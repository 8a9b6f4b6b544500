package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/storekinds"
)

const (
	opToken     = "operator-token-for-tests"
	viewerToken = "viewer-token-for-tests"
	topic       = "orders"
	group       = "billing"
)

var quiet = slog.New(slog.DiscardHandler)

// stores are the stores the tests run on.
var stores = storekinds.Kinds()

// fixture is a console on a real store, replaying to a real (in-process
// kfake) Kafka cluster, mounted on the admin server as redrive serve
// mounts it.
type fixture struct {
	t     *testing.T
	store dlq.Store
	ops   *operate.Ops
	srv   *admin.Server
	web   *httptest.Server
	con   *console.Console
	dlq   string
	seq   int
}

// kafkaBroker is one kfake cluster and broker per test binary run.
func kafkaBroker(t *testing.T) *kafka.Broker {
	t.Helper()
	b := kafkatest.New(t, kafkatest.Cluster(t), nil)
	if err := b.Declare(context.Background(), broker.Subscription{Topic: topic, Group: group}); err != nil {
		t.Fatalf("declare topics: %v", err)
	}
	return b
}

func newFixture(t *testing.T, s dlq.Store, edit func(*console.Config)) *fixture {
	t.Helper()
	return newFixtureRoutesPreview(t, s, []dlq.Route{kafka.Route(topic, group)}, 1024, edit)
}

// newFixtureRoutes is newFixture with the replay routes given.
func newFixtureRoutes(t *testing.T, s dlq.Store, routes []dlq.Route, edit func(*console.Config)) *fixture {
	t.Helper()
	return newFixtureRoutesPreview(t, s, routes, 1024, edit)
}

// newFixturePreview is newFixture showing preview bytes of a payload.
func newFixturePreview(t *testing.T, s dlq.Store, preview int, edit func(*console.Config)) *fixture {
	t.Helper()
	return newFixtureRoutesPreview(t, s, []dlq.Route{kafka.Route(topic, group)}, preview, edit)
}

// newFixtureRoutesPreview is newFixture with the replay routes and the
// preview size given.
func newFixtureRoutesPreview(t *testing.T, s dlq.Store, routes []dlq.Route, preview int, edit func(*console.Config)) *fixture {
	t.Helper()
	ops, err := operate.New(operate.Config{Store: s, Republisher: kafkaBroker(t), Logger: quiet,
		Routes: routes, MaxPayloadPreview: preview,
		Policies: map[string]dlq.Policy{kafka.DLQTopic(topic): {Severity: broker.SeverityCritical}, "empty.dlq": {}}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, store: s, ops: ops, dlq: kafka.DLQTopic(topic)}
	var ui http.Handler
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ui.ServeHTTP(w, r) })
	f.srv, err = admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", Logger: quiet, UI: mux,
		Tokens: []admin.Token{{Name: "api", Secret: "api-secret-token"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.srv.Close)
	cfg := console.Config{
		Ops: ops, Jobs: f.srv.Jobs(), Broker: kafka.Name, Logger: quiet,
		Users: []console.User{{Name: "alice", Token: opToken}, {Name: "victor", Token: viewerToken, ReadOnly: true}},
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ui, f.con = c.Handler(), c
	f.web = httptest.NewServer(f.srv.Handler())
	t.Cleanup(f.web.Close)
	return f
}

// insert stores n entries in the fixture's DLQ.
func (f *fixture) insert(n int, mod func(i int, r *dlq.Record)) []dlq.Record {
	f.t.Helper()
	out := make([]dlq.Record, 0, n)
	for i := range n {
		r := dlq.Record{
			Broker: kafka.Name, DLQ: f.dlq, ID: "0-" + strconv.Itoa(100+f.seq),
			ReceivedAt: time.Now().Add(-time.Duration(n-i) * time.Minute),
			Entry: dlq.Entry{
				MessageID: "m" + strconv.Itoa(i), OriginalTopic: topic, OriginalPartition: 1, OriginalOffset: int64(100 + i),
				OriginalKey: []byte("deal-" + strconv.Itoa(i)), OriginalValue: []byte(`{"deal":"d` + strconv.Itoa(i) + `","amount":12.5}`),
				OriginalHeaders: map[string]string{"content-type": "application/json", "trace-id": "t-" + strconv.Itoa(i)},
				ErrorClass:      "payout.BankError", ErrorMessage: "bank rejected transfer " + strconv.Itoa(i),
				StackTrace: "goroutine 1 [running]:\nmain.pay()", Reason: string(driver.ReasonMaxRetries), RetryCount: 5,
				Worker: group, WorkerInstance: "billing-1", Source: topic,
				FirstFailureAt: time.Now().Add(-time.Hour), LastFailureAt: time.Now().Add(-time.Minute),
			},
		}
		f.seq++
		r.Identity = r.ID
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

// client is a browser without JavaScript: a cookie jar, no redirects
// followed.
type client struct {
	t    *testing.T
	f    *fixture
	http *http.Client
	csrf string
}

func (f *fixture) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: f.t, f: f, http: &http.Client{
		Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// response is what a request gave.
type response struct {
	status   int
	body     string
	location string
	header   http.Header
}

func (c *client) do(req *http.Request) response {
	c.t.Helper()
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := response{status: res.StatusCode, body: string(b), location: res.Header.Get("Location"), header: res.Header}
	if out.status >= 500 && out.status != http.StatusBadGateway {
		c.t.Errorf("%s %s = %d: %s", req.Method, req.URL, out.status, b)
	}
	if m := csrfRE.FindStringSubmatch(out.body); m != nil {
		c.csrf = m[1]
	}
	return out
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (c *client) get(path string) response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.f.web.URL+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.do(req)
}

// post sends form (with the client's CSRF token unless form sets csrf)
// and headers (name, value pairs).
func (c *client) post(path string, form url.Values, headers ...string) response {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok && c.csrf != "" {
		form.Set("csrf", c.csrf)
	}
	req, err := http.NewRequest(http.MethodPost, c.f.web.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.f.web.URL)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return c.do(req)
}

// login logs c in with token and loads the DLQ list (for the CSRF token).
func (c *client) login(token string) *client {
	c.t.Helper()
	r := c.post("/login", url.Values{"token": {token}, "next": {"/"}})
	if r.status != http.StatusSeeOther || r.location != "/" {
		c.t.Fatalf("login = %d %q: %s", r.status, r.location, r.body)
	}
	if r := c.get("/"); r.status != http.StatusOK {
		c.t.Fatalf("GET / after login = %d", r.status)
	}
	return c
}

// expect checks a response's status and that its body contains every
// want.
func expect(t *testing.T, what string, r response, status int, want ...string) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d, want %d; body:\n%s", what, r.status, status, clip(r.body))
	}
	for _, w := range want {
		if !strings.Contains(r.body, w) {
			t.Errorf("%s: body lacks %q:\n%s", what, w, clip(r.body))
		}
	}
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}
