package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// The tokens of the named operators of TestServeNamedOperators, and the
// address the authenticating proxy of the test connects from (a loopback
// address of its own: Linux routes all of 127.0.0.0/8 to lo).
const (
	aliceTok  = "alice-token-0123456789-abcdefghijkl"
	bobTok    = "bob-token-0123456789-abcdefghijklmn"
	victorTok = "victor-token-0123456789-abcdefghijk"
	ssoIP     = "127.0.0.3"
)

// opsEnv is a `redrive serve` with named operators and an authenticating
// proxy, on RabbitMQ, with the store given.
type opsEnv struct {
	path, worker, queue, dlqName string
	admin                        string // redrive's base URL
	keys                         heartbeat.Keys
	args                         []string // serve's
}

// newOpsEnv writes the configuration: alice and bob operators, victor a
// viewer (by their hashes), the proxy at ssoIP naming people in
// X-Forwarded-Email, members of payments-oncall operators, of staff
// viewers, nobody else; store "postgres" (a schema of its own) or
// "embedded" (serve --data FILE).
func newOpsEnv(t *testing.T, store string) *opsEnv {
	t.Helper()
	id := strings.ToLower(broker.NewMessageID()[:8])
	topic := "ops." + id
	e := &opsEnv{worker: "billing-" + id}
	e.queue = rabbit.Queue(topic, e.worker)
	e.dlqName = rabbit.DLQ(e.queue)
	e.keys = heartbeat.Keys{Prefix: testenv.RedisPrefix(t, testenv.RedisClient(t))}
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	e.admin = "http://" + adminAddr
	storeKey := ""
	switch store {
	case "postgres":
		storeKey = fmt.Sprintf("postgres: {url: %q}", newSchema(t, "ops_test_"+id))
	case "embedded":
		e.args = []string{"--data", filepath.Join(t.TempDir(), "dlq.journal")}
	}
	e.path = writeConfig(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: %q, prefix: ops-%s, delay: {resolution: 100ms, factor: 2, levels: 2}}
redis: {addr: %q, prefix: %q}
%s
workers:
  - {name: %s, topic: %s, retry: {max_retries: 0, backoff: 100ms}}
admin:
  listen: %q
  operators:
    - {name: alice, role: operator, token_hash: %q}
    - {name: bob, role: operator, token_hash: %q}
    - {name: victor, role: viewer, token_hash: %q}
  proxy_auth:
    proxies: [%s]
    user_header: X-Forwarded-Email
    groups_header: X-Forwarded-Groups
    role: none
    operator_groups: [payments-oncall]
    viewer_groups: [staff]
exporter: {listen: %q}
`, testenv.RabbitMQ.URL(), id, testenv.Redis.URL(), e.keys.Prefix, storeKey, e.worker, topic, adminAddr,
		access.HashToken(aliceTok), access.HashToken(bobTok), access.HashToken(victorTok), ssoIP, metricsAddr))
	teardownAfter(t, e.path)
	return e
}

// dlq runs a dlq command against the env's server with token.
func (e *opsEnv) dlq(t *testing.T, token string, args ...string) (int, string, string) {
	t.Helper()
	return cli(t, append(append([]string{"dlq"}, args...), "--config", e.path, "--token", token)...)
}

// api sends a request to redrive's API with the Authorization header
// auth (and header pairs), and returns the status and the decoded body.
func (e *opsEnv) api(t *testing.T, method, path, body, auth string, header ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, e.admin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// sso is an authenticating proxy of the test, as oauth2-proxy is in
// front of a console: it signs a browser in (here by the X-Test-Login
// header its people send, where oauth2-proxy uses its cookie and the
// identity provider), drops the identity headers the browser sent, and
// forwards to redrive from ssoIP naming the person in X-Forwarded-Email
// and their groups in X-Forwarded-Groups; the original Host is kept, as
// nginx's `proxy_set_header Host $host` does. Anyone it cannot sign in
// gets 401 from the proxy itself.
func sso(t *testing.T, target string, people map[string][2]string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ssoIP)}, Timeout: 10 * time.Second}
	rp := &httputil.ReverseProxy{
		Transport: &http.Transport{DialContext: d.DialContext},
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
			p := people[pr.In.Header.Get("X-Test-Login")]
			pr.Out.Header.Del("X-Test-Login")
			pr.Out.Header.Set("X-Forwarded-Email", p[0])
			pr.Out.Header.Set("X-Forwarded-Groups", p[1])
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := people[r.Header.Get("X-Test-Login")]; !ok {
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// browser is one person's browser at base (the proxy, or redrive
// directly), signed in to the proxy as login.
type browser struct {
	t           *testing.T
	base, login string
	extra       http.Header // sent as they are (a forged identity)
	csrf        string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// do sends one request and returns the status and body; it keeps the
// page's CSRF token.
func (b *browser) do(method, path string, form url.Values) (int, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		if form.Get("csrf") == "" {
			form.Set("csrf", b.csrf)
		}
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.base)
	}
	if b.login != "" {
		req.Header.Set("X-Test-Login", b.login)
	}
	for k, vs := range b.extra {
		req.Header[k] = vs
	}
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindSubmatch(data); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, string(data)
}

// deadLetterRaw publishes n messages straight to the DLQ with amqp091-go,
// as a worker that gave up would, and returns their bodies.
func (e *opsEnv) deadLetterRaw(t *testing.T, ch *amqp.Channel, n int) {
	t.Helper()
	now := wire.FormatTime(time.Now())
	for i := range n {
		err := ch.PublishWithContext(t.Context(), "", e.dlqName, false, false, amqp.Publishing{
			MessageId: broker.NewMessageID(), Body: []byte(fmt.Sprintf(`{"n":%d}`, i)), DeliveryMode: amqp.Persistent,
			Headers: amqp.Table{
				broker.HeaderReason: "max_retries", broker.HeaderError: "bank down", broker.HeaderErrorClass: "bank.Down",
				broker.HeaderWorker: e.worker, broker.HeaderSource: e.queue,
				broker.HeaderAttempt: "1", broker.HeaderFirstFailureAt: now, broker.HeaderLastFailureAt: now,
			},
		})
		if err != nil {
			t.Fatalf("publish to %s: %v", e.dlqName, err)
		}
	}
}

// pendingIDs waits until the API (with auth) lists n pending entries of
// the env's DLQ and returns their ids.
func (e *opsEnv) pendingIDs(t *testing.T, d *daemonRun, auth string, n int) []string {
	t.Helper()
	var ids []string
	eventually(t, fmt.Sprintf("%d pending dead letters", n), func() bool {
		code, m := e.api(t, "GET", "/internal/v1/dlq/"+e.dlqName+"?status=pending", "", auth)
		entries, _ := m["entries"].([]any)
		ids = ids[:0]
		for _, en := range entries {
			ids = append(ids, en.(map[string]any)["id"].(string))
		}
		return code == http.StatusOK && len(ids) == n
	}, d.stderr.String)
	return ids
}

// entryState is an entry's status and the actor of each of its audit
// rows.
type entryState struct{ status, actor string }

// audited checks that entry ids[i] is in want[i] (read through the API
// with auth) and returns how many audit rows they have.
func (e *opsEnv) audited(t *testing.T, auth string, ids []string, want []entryState) int {
	t.Helper()
	rows := 0
	for i, w := range want {
		code, m := e.api(t, "GET", "/internal/v1/dlq/"+e.dlqName+"/"+ids[i], "", auth)
		audit, _ := m["audit"].([]any)
		if code != http.StatusOK || m["status"] != w.status {
			t.Errorf("entry %d: %d status %v, want %s", i, code, m["status"], w.status)
		}
		for _, a := range audit {
			if a.(map[string]any)["actor"] != w.actor {
				t.Errorf("entry %d: audit row %v, want actor %q", i, a, w.actor)
			}
		}
		rows += len(audit)
	}
	return rows
}

// Two named operators (alice and bob, by token) and two people the
// authenticating proxy signs in (carol and dave, through the console)
// replay, discard, pause and resume, through the API, the CLI and the
// console; every audit row (the dead-letter store's, on PostgreSQL and on
// the embedded store, and the fleet's stream in Redis) names its
// operator; a claim (--actor) is recorded beside the name, never instead.
// A viewer changes nothing; the proxy's header sent to redrive directly,
// or holding what is not one name, is refused and changes nothing.
// Counted: 8 dead letters = 3 replayed (each on the group queue once) + 4
// discarded + 1 pending, with one audit row per change.
func TestServeNamedOperators(t *testing.T) {
	for _, store := range []string{"postgres", "embedded"} {
		t.Run(store, func(t *testing.T) {
			e := newOpsEnv(t, store)
			d := startDaemon(t, append([]string{"serve", "--config", e.path, "--sample-interval", "100ms"}, e.args...)...)
			eventually(t, "serve answers alice", func() bool {
				if _, done := d.exited(); done {
					t.Fatalf("serve exited early:\n%s", d.stderr)
				}
				code, _, _ := e.dlq(t, aliceTok, "ls")
				return code == exitOK
			}, d.stderr.String)

			ch := testenv.AMQP(t)
			e.deadLetterRaw(t, ch, 8)
			ids := e.pendingIDs(t, d, "Bearer "+victorTok, 8)

			// The API, with alice's and bob's own tokens.
			if code, m := e.api(t, "POST", "/internal/v1/dlq/replay", `{"topic":"`+e.dlqName+`","id":"`+ids[0]+`"}`, "Bearer "+aliceTok); code != http.StatusOK {
				t.Fatalf("alice's replay: %d %v", code, m)
			}
			if code, m := e.api(t, "DELETE", "/internal/v1/dlq/"+e.dlqName+"/"+ids[1]+"?reason=dup", "", "Bearer "+bobTok); code != http.StatusOK {
				t.Fatalf("bob's discard: %d %v", code, m)
			}
			// The CLI, with each one's token; a claim beside the name.
			for _, c := range [][]string{
				{bobTok, "replay", e.dlqName, ids[2]},
				{aliceTok, "discard", e.dlqName, ids[3], "--reason", "duplicate"},
				{aliceTok, "discard", e.dlqName, ids[4], "--reason", "duplicate", "--actor", "carol@example.com"},
			} {
				if code, out, errOut := e.dlq(t, c[0], c[1:]...); code != exitOK {
					t.Fatalf("dlq %q: %d %s%s", c[1:], code, out, errOut)
				}
			}
			if code, out, _ := cli(t, "admin", "whoami", "--config", e.path, "--token", aliceTok, "--actor", "carol@example.com"); code != exitOK ||
				out != "alice (operator, by token); audited as alice (as carol@example.com)\n" {
				t.Errorf("admin whoami: %d %q", code, out)
			}

			// The console through the proxy: carol and dave (operators by
			// their group), erin (a viewer by hers), frank (in no group).
			front := sso(t, e.admin, map[string][2]string{
				"carol": {"carol@example.com", "staff,payments-oncall"},
				"dave":  {"dave@example.com", "payments-oncall"},
				"erin":  {"erin@example.com", "staff"},
				"frank": {"frank@example.com", "interns"},
				"forge": {"carol (as alice)", "payments-oncall"},
				"bidi":  {"lorac\u202e@example.com", "payments-oncall"},
				"zwsp":  {"car\u200bol@example.com", "payments-oncall"},
				"long":  {strings.Repeat("c", 300) + "@example.com", "payments-oncall"},
				"sys":   {"redrive-reconciler", "payments-oncall"},
			})
			entry := func(i int) string { return "/dlq/" + e.dlqName + "/" + ids[i] }
			carol := &browser{t: t, base: front, login: "carol"}
			if code, body := carol.do("GET", entry(5), nil); code != http.StatusOK || !strings.Contains(body, "carol@example.com") {
				t.Fatalf("carol's entry page through the proxy: %d\n%s", code, body)
			}
			if code, body := carol.do("POST", entry(5)+"/replay", url.Values{}); code != http.StatusSeeOther {
				t.Fatalf("carol's replay: %d\n%s", code, body)
			}
			dave := &browser{t: t, base: front, login: "dave"}
			dave.do("GET", entry(6), nil)
			if code, body := dave.do("POST", entry(6)+"/discard", url.Values{"reason": {"duplicate"}}); code != http.StatusSeeOther {
				t.Fatalf("dave's discard: %d\n%s", code, body)
			}

			// Refused, changing nothing: a viewer; the proxy's people
			// without a role or with what is not one name; the header sent
			// to redrive directly (from 127.0.0.1), with a token or not.
			erin := &browser{t: t, base: front, login: "erin"}
			erin.do("GET", entry(7), nil)
			if code, body := erin.do("POST", entry(7)+"/replay", url.Values{}); code != http.StatusForbidden || !strings.Contains(body, "read-only") {
				t.Errorf("erin's replay: %d\n%s", code, body)
			}
			for _, login := range []string{"frank", "forge", "bidi", "zwsp", "long", "sys"} {
				b := &browser{t: t, base: front, login: login}
				if code, body := b.do("GET", entry(7), nil); code != http.StatusForbidden || !strings.Contains(body, "identity refused") {
					t.Errorf("%s through the proxy: %d\n%s", login, code, body)
				}
			}
			direct := &browser{t: t, base: e.admin, extra: http.Header{"X-Forwarded-Email": {"carol@example.com"}, "X-Forwarded-Groups": {"payments-oncall"}}}
			if code, body := direct.do("GET", entry(7), nil); code != http.StatusForbidden || !strings.Contains(body, "identity refused") {
				t.Errorf("the proxy's header sent directly, console: %d\n%s", code, body)
			}
			if code, body := direct.do("POST", entry(7)+"/replay", url.Values{"csrf": {carol.csrf}}); code != http.StatusForbidden {
				t.Errorf("the proxy's header sent directly, console replay: %d\n%s", code, body)
			}
			if code, m := e.api(t, "DELETE", "/internal/v1/dlq/"+e.dlqName+"/"+ids[7]+"?reason=x", "", "Bearer "+aliceTok,
				"X-Forwarded-Email", "carol@example.com", "X-Forwarded-Groups", "payments-oncall"); code != http.StatusForbidden || m["code"] != "identity_refused" {
				t.Errorf("the proxy's header sent directly, API: %d %v", code, m)
			}
			if code, m := e.api(t, "POST", "/internal/v1/dlq/replay", `{"topic":"`+e.dlqName+`","id":"`+ids[7]+`"}`, "Bearer "+victorTok); code != http.StatusForbidden || m["code"] != "read_only" {
				t.Errorf("victor's replay through the API: %d %v", code, m)
			}
			if code, _, errOut := e.dlq(t, victorTok, "discard", e.dlqName, ids[7], "--reason", "x"); code != exitUsage || !strings.Contains(errOut, "read-only") {
				t.Errorf("victor's discard through the CLI: %d %q", code, errOut)
			}

			// Pause and resume, audited in Redis by name: the CLI through
			// the API with alice's and bob's tokens, the console through
			// the proxy by carol and dave.
			rdb := testenv.RedisClient(t)
			rdb.SAdd(t.Context(), e.keys.Types(), e.worker)
			if code, out, errOut := cli(t, "workers", "pause", e.worker, "--config", e.path, "--token", aliceTok, "--reason", "bank maintenance"); code != exitOK || !strings.Contains(out, "by alice") {
				t.Errorf("workers pause --token alice: %d %q %q", code, out, errOut)
			}
			if code, out, errOut := cli(t, "workers", "resume", e.worker, "--config", e.path, "--token", bobTok); code != exitOK || !strings.Contains(out, "resumed "+e.worker+" by bob") {
				t.Errorf("workers resume --token bob: %d %q %q", code, out, errOut)
			}
			carol.do("GET", "/workers", nil)
			if code, body := carol.do("POST", "/workers/"+e.worker+"/pause", url.Values{"reason": {"deploy"}}); code != http.StatusSeeOther {
				t.Errorf("carol's pause: %d\n%s", code, body)
			}
			dave.do("GET", "/workers", nil)
			if code, body := dave.do("POST", "/workers/"+e.worker+"/resume", url.Values{}); code != http.StatusSeeOther {
				t.Errorf("dave's resume: %d\n%s", code, body)
			}
			stream, err := rdb.XRange(t.Context(), e.keys.Audit(), "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			var fleet []string
			for _, m := range stream {
				fleet = append(fleet, fmt.Sprint(m.Values["action"], " ", m.Values["actor"]))
			}
			if want := []string{"pause alice", "resume bob", "pause carol@example.com", "resume dave@example.com"}; fmt.Sprint(fleet) != fmt.Sprint(want) {
				t.Errorf("the fleet's audit stream: %q, want %q", fleet, want)
			}

			// Counted: each entry as its operator left it, one audit row
			// per change, by that operator; the replays on the group queue,
			// once each.
			rows := e.audited(t, "Bearer "+victorTok, ids, []entryState{
				{"replayed", "alice"}, {"discarded", "bob"}, {"replayed", "bob"}, {"discarded", "alice"},
				{"discarded", "alice (as carol@example.com)"}, {"replayed", "carol@example.com"}, {"discarded", "dave@example.com"}, {"pending", ""},
			})
			if rows != 7 {
				t.Errorf("%d audit rows, want 7 (3 replays, 4 discards)", rows)
			}
			replayed := map[string]int{}
			for {
				m, ok, err := ch.Get(e.queue, true)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				replayed[fmt.Sprint(m.Headers[broker.HeaderReplayedFrom])]++
			}
			if len(replayed) != 3 || replayed[e.dlqName+"/"+ids[0]] != 1 || replayed[e.dlqName+"/"+ids[2]] != 1 || replayed[e.dlqName+"/"+ids[5]] != 1 {
				t.Errorf("on %s: %v; want the 3 replays once each", e.queue, replayed)
			}
			if code := d.stop(t); code != exitOK {
				t.Errorf("serve exited %d:\n%s", code, d.stderr)
			}
		})
	}
}
