package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// fuzzServer is a server with a token on an in-memory store, replaying
// to a publisher that takes everything.
func fuzzServer(f *testing.F) (*memstore.Store, *admin.Server) {
	s := memstore.New(memstore.Config{Logger: quiet})
	f.Cleanup(func() { _ = s.Close() })
	ops, err := operate.New(operate.Config{Store: s, Republisher: &publisher{}, Logger: quiet, Routes: testRoutes()})
	if err != nil {
		f.Fatal(err)
	}
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", Logger: quiet, Tokens: []admin.Token{{Name: "t", Secret: secret}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(srv.Close)
	return s, srv
}

// FuzzListQuery sends arbitrary query strings (and topic path segments) to
// the listing handler: it never panics and never answers 5xx, and always
// answers JSON.
func FuzzListQuery(f *testing.F) {
	s, srv := fuzzServer(f)
	if _, _, err := s.Insert(context.Background(), dlq.Record{
		Broker: "rabbitmq", DLQ: "orders.billing.dlq", Identity: "i-1",
		Entry: dlq.Entry{MessageID: "m1", OriginalTopic: "orders", ErrorClass: "x.Err", ErrorMessage: "boom"},
	}); err != nil {
		f.Fatal(err)
	}
	for _, seed := range []struct{ topic, query string }{
		{"orders.billing.dlq", ""},
		{"orders.billing.dlq", "status=pending&limit=10&order=oldest"},
		{"orders.billing.dlq", "since=2025-01-01T00:00:00Z&until=2024-01-01T00:00:00Z"},
		{"orders.billing.dlq", "cursor=eyJ4IjoxfQ&order=newest"},
		{"orders.billing.dlq", "cursor=%ZZ&limit=-1&limit=2"},
		{"orders.billing.dlq", "q=" + strings.Repeat("a", 2000)},
		{"orders.billing.dlq", "error_class=x.Err&q=boom&status=bogus"},
		{"orders.billing.dlq", ";;;&&&==%00%ff"},
		{"unknown.dlq", "limit=99999999999999999999"},
		{"%2e%2e", "order=\x00"},
	} {
		f.Add(seed.topic, seed.query)
	}
	f.Fuzz(func(t *testing.T, topic, query string) {
		req := httptest.NewRequest(http.MethodGet, "/internal/v1/dlq/x", nil)
		req.URL.Path = "/internal/v1/dlq/" + topic
		req.URL.RawPath = ""
		req.URL.RawQuery = query
		req.Host = "127.0.0.1"
		req.Header.Set("Authorization", "Bearer "+secret)
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("GET %q ? %q = %d %s", topic, query, w.Code, w.Body)
		}
		if w.Code == http.StatusOK || w.Code == http.StatusBadRequest || w.Code == http.StatusNotFound {
			if ct := w.Header().Get("Content-Type"); strings.HasPrefix(ct, "application/json") && !json.Valid(w.Body.Bytes()) {
				t.Fatalf("GET %q ? %q: invalid JSON body %q", topic, query, w.Body)
			}
		}
	})
}

// FuzzRequest sends arbitrary requests (method, path, query, body,
// Content-Type, Origin and Host) to the whole API: it never panics and
// never answers 5xx; every answer is JSON, and every error carries a code
// and a message; a refused request (4xx) changes no entry; no entry is
// ever lost.
func FuzzRequest(f *testing.F) {
	s, srv := fuzzServer(f)
	const total = 50
	var ids []string
	for i := range total {
		rec, _, err := s.Insert(context.Background(), dlq.Record{
			Broker: "rabbitmq", DLQ: "orders.billing.dlq", Identity: "i-" + strconv.Itoa(i),
			Entry: dlq.Entry{MessageID: "m", OriginalTopic: "orders", ErrorClass: "x.Err", ErrorMessage: "boom"},
		})
		if err != nil {
			f.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodHead, http.MethodOptions}
	for _, seed := range []struct {
		method              uint8
		path, query, body   string
		ctype, origin, host string
	}{
		{1, "/internal/v1/dlq/replay", "", `{"topic":"orders.billing.dlq","id":"` + ids[0] + `"}`, "application/json", "", "127.0.0.1:8080"},
		{1, "/internal/v1/dlq/replay", "", `[1,2]`, "application/json", "", "127.0.0.1"},
		{1, "/internal/v1/dlq/replay", "", `{"topic":{"x":[1]},"id":5}`, "application/json; charset=utf-8", "http://127.0.0.1", "127.0.0.1"},
		{1, "/internal/v1/dlq/replay-all", "topic=orders.billing.dlq&rate=1e-300", "", "application/json", "", "localhost"},
		{1, "/internal/v1/dlq/replay-all", "topic=orders.billing.dlq", "topic=x", "application/x-www-form-urlencoded", "http://evil.example", "localhost"},
		{2, "/internal/v1/dlq/orders.billing.dlq/" + ids[1], "reason=dup", "", "application/json", "", "[::1]:8080"},
		{1, "/internal/v1/dlq/jobs/01aaaaaaaaaaaaaaaaaaaaaaaa/cancel", "", "{}", "application/json", "", "127.0.0.1"},
		{0, "/internal/v1/dlq/jobs", "", "", "", "", "evil.example"},
		{0, "/internal/v1/dlq/orders.billing.dlq", "status=pending&limit=3", "", "", "null", "127.0.0.1"},
	} {
		f.Add(seed.method, seed.path, seed.query, seed.body, seed.ctype, seed.origin, seed.host)
	}
	f.Fuzz(func(t *testing.T, m uint8, path, query, body, ctype, origin, host string) {
		for _, j := range srv.Jobs().List() { // a job an earlier input started must not change counts now
			if j.State == dlq.JobRunning {
				_, _ = srv.Jobs().Cancel(context.Background(), j.ID, "fuzz")
			}
		}
		before, _ := s.Count(context.Background(), dlq.Query{DLQ: "orders.billing.dlq", Status: dlq.StatusPending})
		req := httptest.NewRequest(methods[int(m)%len(methods)], "/", strings.NewReader(body))
		req.URL.Path, req.URL.RawPath, req.URL.RawQuery, req.Host = path, "", query, host
		req.Header.Set("Authorization", "Bearer "+secret)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %q ? %q = %d %s", req.Method, path, query, w.Code, w.Body)
		}
		if req.Method != http.MethodHead {
			var answer struct {
				Error string `json:"error"`
				Code  string `json:"code"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
				t.Fatalf("%s %q: the answer %q is not JSON: %v", req.Method, path, w.Body, err)
			}
			if w.Code >= 400 && (answer.Error == "" || answer.Code == "") {
				t.Fatalf("%s %q = %d without a code or message: %s", req.Method, path, w.Code, w.Body)
			}
		}
		after, _ := s.Count(context.Background(), dlq.Query{DLQ: "orders.billing.dlq", Status: dlq.StatusPending})
		if w.Code >= 400 && after != before {
			t.Fatalf("%s %q refused with %d changed the pending entries from %d to %d", req.Method, path, w.Code, before, after)
		}
		if all, _ := s.Count(context.Background(), dlq.Query{DLQ: "orders.billing.dlq"}); all != total {
			t.Fatalf("%d entries, want %d", all, total)
		}
	})
}
