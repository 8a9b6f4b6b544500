package admin_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// openServer is an InsecureNoAuth server (as `redrive dev` without a token
// runs) with a UI, serving on a real loopback listener.
func openServer(t *testing.T, allowed ...string) (*fixture, string) {
	t.Helper()
	s := memstore.New(memstore.Config{Logger: quiet})
	t.Cleanup(func() { _ = s.Close() })
	pub := &publisher{}
	ops, err := operate.New(operate.Config{Store: s, Republisher: pub, Logger: quiet, Routes: testRoutes()})
	if err != nil {
		t.Fatal(err)
	}
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "console") })
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", InsecureNoAuth: true, Logger: quiet, UI: ui, AllowedHosts: allowed})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &fixture{t: t, store: s, pub: pub, srv: srv}, ln.Addr().String()
}

// send sends a request to the server at addr with the Host host and the
// headers (name, value pairs) and returns the status and body.
func send(t *testing.T, addr, host, method, path, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostHeader: a DNS-rebinding page reaches the server's address with
// its own name in Host; every such request is refused, API and UI alike,
// with or without a token.
func TestHostHeader(t *testing.T) {
	f, addr := openServer(t, "redrive.example.com")
	f.insert("orders.billing.dlq", 1, nil)
	_, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{addr, true},
		{"localhost:" + port, true},
		{"[::1]:" + port, true},
		{"redrive.example.com", true},
		{"REDRIVE.example.com:443", true},
		{"evil.example:" + port, false},
		{"evil.example", false},
		{"127.0.0.1.evil.example:" + port, false},
		{"10.0.0.1:" + port, false},
	} {
		for _, path := range []string{"/internal/v1/dlq/orders.billing.dlq", "/"} {
			code, body := send(t, addr, tc.host, http.MethodGet, path, "")
			switch {
			case tc.ok && code != http.StatusOK:
				t.Errorf("Host %s, GET %s = %d %s, want 200", tc.host, path, code, body)
			case !tc.ok && (code != http.StatusMisdirectedRequest || !strings.Contains(body, `"code":"host_not_allowed"`) || strings.Contains(body, "bank rejected")):
				t.Errorf("Host %s, GET %s = %d %s, want 421 host_not_allowed", tc.host, path, code, body)
			}
		}
	}
	// A write for another host changes nothing.
	code, _ := send(t, addr, "evil.example:"+port, http.MethodPost, "/internal/v1/dlq/replay-all?topic=orders.billing.dlq&rate=0", "{}", "Content-Type", "application/json")
	if code != http.StatusMisdirectedRequest || f.pub.count() != 0 || len(f.srv.Jobs().List()) != 0 {
		t.Errorf("replay-all for another host = %d, %d republished, jobs %v", code, f.pub.count(), f.srv.Jobs().List())
	}
}

// TestCrossSiteWrites: without a token (--insecure-no-auth), a page of
// another site can send a form post (no preflight) but cannot start a
// replay-all, replay or discard.
func TestCrossSiteWrites(t *testing.T) {
	f, addr := openServer(t)
	rec := f.insert("orders.billing.dlq", 1, nil)[0]
	form := "topic=orders.billing.dlq"
	for _, tc := range []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		code                     string
	}{
		{"form post from another site", "POST", "/internal/v1/dlq/replay-all?topic=orders.billing.dlq", form,
			[]string{"Content-Type", "application/x-www-form-urlencoded", "Origin", "http://evil.example"}, http.StatusForbidden, "cross_origin"},
		{"form post, no Origin", "POST", "/internal/v1/dlq/replay-all?topic=orders.billing.dlq", form,
			[]string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"text/plain post", "POST", "/internal/v1/dlq/replay", `{"topic":"orders.billing.dlq","id":"` + rec.ID + `"}`,
			[]string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"multipart post", "POST", "/internal/v1/dlq/replay-all?topic=orders.billing.dlq", "",
			[]string{"Content-Type", "multipart/form-data; boundary=x"}, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"no content type", "POST", "/internal/v1/dlq/replay-all?topic=orders.billing.dlq", "", nil, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"discard without JSON", "DELETE", "/internal/v1/dlq/orders.billing.dlq/" + rec.ID + "?reason=x", "", nil, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"JSON from another site", "POST", "/internal/v1/dlq/replay", `{"topic":"orders.billing.dlq","id":"` + rec.ID + `"}`,
			[]string{"Content-Type", "application/json", "Origin", "http://evil.example"}, http.StatusForbidden, "cross_origin"},
		{"null origin", "POST", "/internal/v1/dlq/replay-all?topic=orders.billing.dlq", "",
			[]string{"Content-Type", "application/json", "Origin", "null"}, http.StatusForbidden, "cross_origin"},
		{"read from another site", "GET", "/internal/v1/dlq/orders.billing.dlq/" + rec.ID, "",
			[]string{"Origin", "http://evil.example"}, http.StatusForbidden, "cross_origin"},
	} {
		code, body := send(t, addr, addr, tc.method, tc.path, tc.body, tc.headers...)
		if code != tc.status || !strings.Contains(body, `"code":"`+tc.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, body, tc.status, tc.code)
		}
	}
	if got, _ := f.store.Get(context.Background(), "orders.billing.dlq", rec.ID); got.Status != dlq.StatusPending || f.pub.count() != 0 || len(f.srv.Jobs().List()) != 0 {
		t.Fatalf("after refused writes: entry %s, %d republished, jobs %v", got.Status, f.pub.count(), f.srv.Jobs().List())
	}
	// The same-origin JSON write (what the CLI sends) works.
	code, body := send(t, addr, addr, "POST", "/internal/v1/dlq/replay", `{"topic":"orders.billing.dlq","id":"`+rec.ID+`"}`,
		"Content-Type", "application/json; charset=utf-8", "Origin", "http://"+addr)
	if code != http.StatusOK {
		t.Errorf("same-origin replay = %d %s", code, body)
	}
}

// TestErrorBodies: every error has a documented code and a fixed message;
// the store's and the broker's words stay in the log.
func TestErrorBodies(t *testing.T) {
	documented := documentedCodes(t)
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			f := newFixture(t, st.Open(t))
			recs := f.insert("eb.dlq", 2, nil)
			replay := `{"topic":"eb.dlq","id":"` + recs[0].ID + `"}`
			expect(t, f.do("POST", "/internal/v1/dlq/replay", replay), http.StatusOK, "")
			f.pub.set(func(p *publisher) { p.fail = errors.New("amqp 10.2.3.4:5672: NO_ROUTE internal-detail") })
			for _, tc := range []struct {
				name, method, target, body string
				status                     int
				code                       string
			}{
				{"replay again", "POST", "/internal/v1/dlq/replay", replay, http.StatusConflict, "not_pending"},
				{"discard a replayed entry", "DELETE", "/internal/v1/dlq/eb.dlq/" + recs[0].ID + "?reason=x", "", http.StatusConflict, "not_pending"},
				{"broker refuses", "POST", "/internal/v1/dlq/replay", `{"topic":"eb.dlq","id":"` + recs[1].ID + `"}`, http.StatusBadGateway, "replay_failed"},
				{"array body", "POST", "/internal/v1/dlq/replay", `[1,2]`, http.StatusBadRequest, "invalid_request"},
				{"string body", "POST", "/internal/v1/dlq/replay", `"x"`, http.StatusBadRequest, "invalid_request"},
				{"nested wrong type", "POST", "/internal/v1/dlq/replay", `{"topic":{"a":1},"id":"x"}`, http.StatusBadRequest, "invalid_request"},
				{"syntax error", "POST", "/internal/v1/dlq/replay", `{"topic":`, http.StatusBadRequest, "invalid_request"},
				{"unknown entry", "GET", "/internal/v1/dlq/eb.dlq/nope", "", http.StatusNotFound, "not_found"},
				{"unknown route", "GET", "/internal/v2", "", http.StatusNotFound, "not_found"},
				{"wrong method", "PUT", "/internal/v1/dlq", "", http.StatusMethodNotAllowed, "method_not_allowed"},
				{"no token", "GET", "/internal/v1/dlq", "", http.StatusUnauthorized, "unauthorized"},
				{"too large", "POST", "/internal/v1/dlq/replay", `{"id":"` + strings.Repeat("a", 70<<10) + `"}`, http.StatusRequestEntityTooLarge, "body_too_large"},
			} {
				var hdr []string
				if tc.name == "no token" {
					hdr = []string{"Authorization", ""}
				}
				w := f.do(tc.method, tc.target, tc.body, hdr...)
				m := decode(t, w)
				msg, _ := m["error"].(string)
				if w.Code != tc.status || m["code"] != tc.code || msg == "" {
					t.Errorf("%s: %d %s, want %d with code %s", tc.name, w.Code, w.Body, tc.status, tc.code)
				}
				if !documented[tc.code] {
					t.Errorf("%s: code %q is not documented in configs/openapi.yaml", tc.name, tc.code)
				}
				for _, leak := range []string{"pgstore", "memstore", "transition", "struct", "admin.", "json:", "Go value", "10.2.3.4", "internal-detail", "dlq:"} {
					if strings.Contains(w.Body.String(), leak) {
						t.Errorf("%s: body %s shows %q", tc.name, w.Body, leak)
					}
				}
			}
		})
	}
}

// documentedCodes reads the error codes configs/openapi.yaml lists.
func documentedCodes(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("../../configs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, c := range []string{admin.CodeInvalidRequest, admin.CodeUnauthorized, admin.CodeCrossOrigin, admin.CodeNotFound,
		admin.CodeMethodNotAllowed, admin.CodeNotPending, admin.CodeOriginMismatch, admin.CodeNoRoute, admin.CodeJobRunning, admin.CodeJobNotRunning, admin.CodeTooLarge,
		admin.CodeUnsupportedMediaType, admin.CodeHostNotAllowed, admin.CodeInternal, admin.CodeReplayFailed, admin.CodeUnavailable} {
		if strings.Contains(string(data), "- "+c+"\n") {
			out[c] = true
		} else {
			t.Errorf("configs/openapi.yaml does not list the error code %s", c)
		}
	}
	return out
}

// TestReplayAllRate: the rate is 0 or within the documented bounds; a
// rate of 1e-300 (the timer overflowed: no limit) or 0.0001 (one entry
// every three hours) is refused.
func TestReplayAllRate(t *testing.T) {
	f := newFixture(t, stores[0].Open(t))
	f.insert("rate.dlq", 1, nil)
	for _, rate := range []string{"1e-300", "0.0001", "0.05", "100001", "1e6", "1e308", "0x1p-1074", "+Inf"} {
		w := f.do("POST", "/internal/v1/dlq/replay-all?topic=rate.dlq&rate="+rate, "")
		expect(t, w, http.StatusBadRequest, "rate")
	}
	if jobs := f.srv.Jobs().List(); len(jobs) != 0 {
		t.Fatalf("refused rates started jobs: %v", jobs)
	}
	for _, rate := range []float64{1e-300, 0.0001, 1e9} {
		if _, err := f.srv.Jobs().StartReplayAll(context.Background(), dlq.Query{DLQ: "rate.dlq"}, "x", rate); !errors.Is(err, dlq.ErrInvalidQuery) {
			t.Errorf("StartReplayAll(rate %v) = %v, want ErrInvalidQuery", rate, err)
		}
	}
	ops, err := operate.New(operate.Config{Store: f.store, Republisher: f.pub, Logger: quiet, Routes: testRoutes()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ops.ReplayAll(context.Background(), dlq.Query{DLQ: "rate.dlq"}, operate.ReplayAllOptions{Rate: 1e-300}); !errors.Is(err, dlq.ErrInvalidQuery) {
		t.Errorf("ReplayAll(rate 1e-300) = %v, want ErrInvalidQuery", err)
	}
	w := f.do("POST", "/internal/v1/dlq/replay-all?topic=rate.dlq&rate=0.1", "")
	expect(t, w, http.StatusAccepted, "")
	if j := waitJob(t, f, w.Header().Get("Location")); j["state"] != "done" || j["rate"] != 0.1 {
		t.Errorf("job at the lowest rate = %v", j)
	}
}

// TestCancelJob: a slow replay-all can be listed and cancelled; the
// cancel is recorded (who, when), the entry being replayed is finished and
// the rest stay pending: replayed + pending = total.
func TestCancelJob(t *testing.T) {
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			f := newFixture(t, st.Open(t))
			const n = 5
			f.insert("cj.dlq", n, nil)
			w := f.do("POST", "/internal/v1/dlq/replay-all?topic=cj.dlq&rate=0.1", "", "Authorization", bearerOf("alice"))
			expect(t, w, http.StatusAccepted, "")
			id := strings.TrimPrefix(w.Header().Get("Location"), "/internal/v1/dlq/jobs/")

			m := expect(t, f.do("GET", "/internal/v1/dlq/jobs", ""), http.StatusOK, "")
			list, _ := m["jobs"].([]any)
			if len(list) != 1 || list[0].(map[string]any)["id"] != id || list[0].(map[string]any)["state"] != "running" {
				t.Fatalf("jobs = %v, want the running %s", m["jobs"], id)
			}
			expect(t, f.do("GET", "/internal/v1/dlq/jobs?x=1", ""), http.StatusBadRequest, "x")

			before := time.Now()
			m = expect(t, f.do("POST", "/internal/v1/dlq/jobs/"+id+"/cancel", "", "Authorization", bearerOf("bob")), http.StatusOK, "")
			j := m["job"].(map[string]any)
			at, _ := time.Parse(time.RFC3339Nano, j["cancelled_at"].(string))
			if j["state"] != "cancelled" || j["cancelled_by"] != "bob" || at.Before(before.Add(-time.Second)) || j["error"] != "cancelled by bob" {
				t.Errorf("cancelled job = %v", j)
			}
			p := j["progress"].(map[string]any)
			pending, err := f.store.Count(context.Background(), dlq.Query{DLQ: "cj.dlq", Status: dlq.StatusPending})
			if err != nil {
				t.Fatal(err)
			}
			if int(p["replayed"].(float64)) != f.pub.count() || f.pub.count()+int(pending) != n || pending == 0 {
				t.Errorf("after cancel: %v replayed (job), %d republished, %d pending; want replayed + pending = %d", p, f.pub.count(), pending, n)
			}
			if got, _ := f.store.Count(context.Background(), dlq.Query{DLQ: "cj.dlq", Status: dlq.StatusReplaying}); got != 0 {
				t.Errorf("%d entries left replaying", got)
			}

			m = expect(t, f.do("POST", "/internal/v1/dlq/jobs/"+id+"/cancel", "", "Authorization", bearerOf("carol")), http.StatusConflict, "")
			if m["code"] != admin.CodeJobNotRunning || m["job"].(map[string]any)["cancelled_by"] != "bob" {
				t.Errorf("second cancel = %v", m)
			}
			expect(t, f.do("POST", "/internal/v1/dlq/jobs/01aaaaaaaaaaaaaaaaaaaaaaaa/cancel", ""), http.StatusNotFound, "")
			expect(t, f.do("POST", "/internal/v1/dlq/jobs/"+id+"/cancel", "", "Content-Type", "text/plain"), http.StatusUnsupportedMediaType, "Content-Type")
			// A new job can start at once.
			expect(t, f.do("POST", "/internal/v1/dlq/replay-all?topic=cj.dlq&rate=0", ""), http.StatusAccepted, "")
		})
	}
}
