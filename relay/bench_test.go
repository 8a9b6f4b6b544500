package relay_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/relay"
)

// The relay's POST against a plain net/http client's POST of the same
// message to the same endpoint (its body and the headers the relay
// writes for it, set by hand), both keeping their connection: what the
// relay's mapping, bounds and answer reading cost. Compare ns/op and
// allocs/op of the two in one run:
//
//	go test -run '^$' -bench 'Post' -benchmem ./relay/
func benchEndpoint(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

func BenchmarkPostRelay(b *testing.B) {
	srv := benchEndpoint(b)
	ep, err := relay.NewEndpoint(relay.EndpointConfig{Worker: "payout", Topic: "escrow.commands", URL: srv.URL, Concurrency: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ep.Close)
	d := &broker.Delivery{Message: broker.Message{ID: "0123456789abcdef0123456789abcdef", Value: make([]byte, 1024),
		Headers: map[string]string{"bench-seq": "42"}}, Topic: "escrow.commands", Group: "payout", Partition: 1, Offset: 42, Attempt: 1}
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Handle(b.Context(), d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPostPlain(b *testing.B) {
	srv := benchEndpoint(b)
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	body := make([]byte, 1024)
	seq := strconv.Itoa(42)
	b.ReportAllocs()
	for b.Loop() {
		req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, srv.URL, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		h := make(http.Header, 12)
		h["Content-Type"] = []string{"application/octet-stream"}
		h["ce-specversion"] = []string{"1.0"}
		h["ce-id"] = []string{"0123456789abcdef0123456789abcdef"}
		h["ce-source"] = []string{"/redrive/escrow.commands"}
		h["ce-type"] = []string{"redrive.message"}
		h["redrive-worker"] = []string{"payout"}
		h["redrive-attempt"] = []string{"1"}
		h["redrive-header-bench-seq"] = []string{seq}
		req.Header = h
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}
