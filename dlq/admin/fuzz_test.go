package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/memstore"
)

// FuzzListQuery sends arbitrary query strings (and topic path segments) to
// the listing handler: it never panics and never answers 5xx, and always
// answers JSON.
func FuzzListQuery(f *testing.F) {
	s := memstore.New(memstore.Options{Logger: quiet})
	f.Cleanup(func() { _ = s.Close() })
	ops, err := dlq.NewOps(dlq.OpsConfig{Store: s, Republisher: &publisher{}, Logger: quiet})
	if err != nil {
		f.Fatal(err)
	}
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", Logger: quiet, Tokens: []admin.Token{{Name: "t", Secret: secret}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(srv.Close)
	if _, _, err := s.Insert(context.Background(), dlq.Record{
		Broker: dlq.BrokerRabbitMQ, DLQ: "orders.billing.dlq", Identity: "i-1",
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
