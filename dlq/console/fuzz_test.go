package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// renderAll stores one dead letter whose every field is text (its payload
// a JSON string of text when asJSON) on a fresh console and returns its
// pages: the DLQ list, the entries (filtered by text too), the entry, a
// replay-all job filtering by text, the job list and an error page.
func renderAll(t *testing.T, text string, asJSON bool) string {
	t.Helper()
	s := memstore.New(memstore.Config{Logger: quiet})
	defer s.Close()
	ops, err := operate.New(operate.Config{Store: s, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var ui http.Handler
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", InsecureNoAuth: true, Logger: quiet,
		UI: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ui.ServeHTTP(w, r) })})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := console.New(console.Config{Ops: ops, Jobs: srv.Jobs(), Broker: "rabbitmq", InsecureNoAuth: true, Logger: quiet,
		TraceLink: "https://tempo.example/trace/{trace_id}"})
	if err != nil {
		t.Fatal(err)
	}
	ui = c.Handler()
	get := func(path, query string) string {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/", nil)
		req.URL.Path, req.URL.RawPath, req.URL.RawQuery = path, "", query
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("GET %q = %d", path, w.Code)
		}
		return w.Body.String()
	}
	value := []byte(text)
	if asJSON {
		value = []byte(strconv.Quote(text)) // a JSON string: the page pretty-prints it
	}
	const name = "fuzz.dlq"
	rec, _, err := s.Insert(context.Background(), dlq.Record{
		Broker: "rabbitmq", DLQ: name, Identity: "i1", ReceivedAt: time.Now(),
		Entry: dlq.Entry{
			MessageID: text, OriginalTopic: text, OriginalPartition: -1, OriginalOffset: -1,
			OriginalKey: []byte(text), OriginalValue: value,
			OriginalHeaders: map[string]string{text: text, "h": text, "traceparent": text},
			ErrorClass:      text, ErrorMessage: text, StackTrace: text, Reason: string(driver.ReasonMaxRetries),
			Worker: text, WorkerInstance: text, Source: text,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	out.WriteString(get("/", ""))
	out.WriteString(get("/dlq/"+name, ""))
	out.WriteString(get("/dlq/"+name, "q="+url.QueryEscape(text)+"&error_class="+url.QueryEscape(text)))
	out.WriteString(get("/dlq/"+name+"/"+rec.ID, ""))
	q := dlq.Query{DLQ: name}
	if len(text) <= 1024 {
		q.ErrorClass, q.Text = text, text
	}
	if j, err := srv.Jobs().StartReplayAll(context.Background(), q, "fuzz", 0); err == nil {
		for deadline := time.Now().Add(10 * time.Second); ; { // the job fails at once: no broker
			if j, _ = srv.Jobs().Job(j.ID); j.State != dlq.JobRunning || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		out.WriteString(get("/jobs/"+j.ID, ""))
	}
	out.WriteString(get("/jobs", ""))
	if dlq.ValidName(text) {
		out.WriteString(get("/dlq/"+text, "")) // an error page naming it
	}
	return out.String()
}

// FuzzPagesEscapeData renders the console's pages with a dead letter
// whose every field is the fuzzer's text, and again with every "<" of the
// text replaced by "x". The property: both hold the same number of "<",
// so no "<" of the data reached a page unescaped.
func FuzzPagesEscapeData(f *testing.F) {
	for _, seed := range []string{"<script>alert(1)</script>", `"><img src=x onerror=alert(1)>`, "{\"a\":\"</pre><b>\"}", "\x00<\xff", "plain", "a.dlq<", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, text string, asJSON bool) {
		if len(text) > 4096 {
			return
		}
		with := renderAll(t, text, asJSON)
		without := renderAll(t, strings.ReplaceAll(text, "<", "x"), asJSON)
		if a, b := strings.Count(with, "<"), strings.Count(without, "<"); a != b {
			t.Fatalf("the pages of %q hold %d \"<\", %d without the data's: a \"<\" of the data reached a page", text, a, b)
		}
		if !strings.Contains(with, "fuzz.dlq") {
			t.Fatal("the pages do not show the dead letter")
		}
	})
}
