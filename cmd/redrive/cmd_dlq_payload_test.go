package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/storekinds"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// Issue 40's payload: 20 KB nested 9,999 levels deep, against a flat
// 20 KB JSON payload.
var (
	flatPayload = testenv.FlatJSON(20 << 10)
	deepPayload = testenv.NestedJSON(9999)
)

const payloadsDLQ, payloadToken = "payloads.dlq", "cli-payload-token-1"

var quiet = slog.New(slog.DiscardHandler)

// adminOn is the admin API on a real store, served over HTTP.
type adminOn struct {
	store dlq.Store
	url   string
}

// newAdminOn serves the admin API on s, showing preview bytes of a
// payload (0: the default, operate.DefaultPayloadPreview).
func newAdminOn(tb testing.TB, s dlq.Store, preview int) *adminOn {
	tb.Helper()
	ops, err := operate.New(operate.Config{Store: s, Logger: quiet, MaxPayloadPreview: preview})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", Logger: quiet, Tokens: []admin.Token{{Name: "cli", Secret: payloadToken}}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Close)
	web := httptest.NewServer(srv.Handler())
	tb.Cleanup(web.Close)
	return &adminOn{store: s, url: web.URL}
}

// insert stores a dead letter of payload v and returns its id.
func (a *adminOn) insert(tb testing.TB, v []byte) string {
	tb.Helper()
	r, _, err := a.store.Insert(context.Background(), dlq.Record{Broker: "rabbitmq", DLQ: payloadsDLQ, Identity: testenv.RandomHex(8),
		Entry: dlq.Entry{OriginalValue: v, OriginalPartition: -1, OriginalOffset: -1, ErrorClass: "x.Error", ErrorMessage: "boom"}})
	if err != nil {
		tb.Fatal(err)
	}
	return r.ID
}

// show runs `redrive dlq show` of entry id with args.
func (a *adminOn) show(id string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = a.showTo(&out, &errOut, id, args...)
	return code, out.String(), errOut.String()
}

// showTo runs `redrive dlq show` of entry id with args, writing to out
// and errOut.
func (a *adminOn) showTo(out, errOut io.Writer, id string, args ...string) int {
	return run(context.Background(), append([]string{"dlq", "show", payloadsDLQ, id, "--server", a.url, "--token", payloadToken}, args...), out, errOut)
}

// sink is a terminal of fixed size: its buffer is allocated before the
// command runs, so what the command allocates is measured alone.
type sink struct{ b []byte }

func newSink(n int) *sink { return &sink{b: make([]byte, 0, n)} }

func (s *sink) Write(p []byte) (int, error) {
	if len(s.b)+len(p) > cap(s.b) {
		return 0, errors.New("sink: full")
	}
	s.b = append(s.b, p...)
	return len(p), nil
}

// detailOf is the entry of payload v as the admin API answers it (on the
// embedded store).
func detailOf(tb testing.TB, v []byte) admin.Detail {
	tb.Helper()
	s := memstore.New(memstore.Config{Logger: quiet})
	tb.Cleanup(func() { _ = s.Close() })
	a := newAdminOn(tb, s, 0)
	code, out, errOut := a.show(a.insert(tb, v), "--output", "json")
	var d admin.Detail
	if code != exitOK || json.Unmarshal([]byte(out), &d) != nil {
		tb.Fatalf("dlq show --output json: %d %.200s %s", code, out, errOut)
	}
	return d
}

// TestRenderDetailCostFollowsSize: `redrive dlq show` renders the entry
// of the 9,999-deep payload (given by the API as text: deeper than
// admin.MaxPayloadDepth) with at most twice the allocations, objects and
// bytes, of the flat one; the time ratio is logged (BENCHMARKS.md).
func TestRenderDetailCostFollowsSize(t *testing.T) {
	clearEnv(t)
	flat, deep := detailOf(t, flatPayload), detailOf(t, deepPayload)
	if flat.PayloadEncoding != admin.EncodingJSON || deep.PayloadEncoding != admin.EncodingUTF8 {
		t.Fatalf("payload encodings: flat %s, deep %s", flat.PayloadEncoding, deep.PayloadEncoding)
	}
	var out bytes.Buffer
	if err := renderDetail(&out, deep); err != nil || !strings.Contains(out.String(), "[… 19934 bytes nested deeper than 32 levels …]") || out.Len() > 8<<10 {
		t.Fatalf("dlq show of the deep payload: %v, %d bytes:\n%s", err, out.Len(), out.String())
	}
	testenv.WithinRatio(t, "dlq show: 9,999-deep payload against flat",
		func() { _ = renderDetail(io.Discard, flat) }, func() { _ = renderDetail(io.Discard, deep) }, 2)
}

// BenchmarkRenderDetail: `redrive dlq show`'s rendering of the entry of
// the flat and of the deep payload.
func BenchmarkRenderDetail(b *testing.B) {
	for _, p := range []struct {
		name string
		v    []byte
	}{{"flat-20KB", flatPayload}, {"deep-9999", deepPayload}} {
		b.Run(p.name, func(b *testing.B) {
			d := detailOf(b, p.v)
			b.ReportAllocs()
			b.SetBytes(int64(len(p.v)))
			for b.Loop() {
				_ = renderDetail(io.Discard, d)
			}
		})
	}
}

// TestDLQShowBoundedPayloads: `redrive dlq show`, as text and as JSON,
// against the admin API on each store, of payloads nested 9,999, 10,000
// and 10,001 levels deep and of a 10 MB payload: the output and the
// memory allocated (client and server: one process) follow the stored
// bytes (the preview), never the payload's nesting. Issue 40: 200 MB
// written and 842 MB of memory for the 20 KB payload.
func TestDLQShowBoundedPayloads(t *testing.T) {
	clearEnv(t)
	big := testenv.FlatJSON(10 << 20)
	for _, st := range storekinds.Kinds() {
		t.Run(st.Name, func(t *testing.T) {
			whole := newAdminOn(t, st.Open(t), 16<<20) // the whole payload is stored bytes shown
			cut := newAdminOn(t, st.Open(t), 0)        // the default preview, 64 KiB
			for _, tc := range []struct {
				name   string
				a      *adminOn
				v      []byte
				marker string // in the text output
				alloc  uint64 // bytes, server and client
			}{
				{"9,999 deep", whole, deepPayload, "[… 19934 bytes nested deeper than 32 levels …]", 8 << 20},
				{"10,000 deep", whole, testenv.NestedJSON(10000), "[… 19936 bytes nested deeper than 32 levels …]", 8 << 20},
				{"10,001 deep (not JSON here)", whole, testenv.NestedJSON(10001), strings.Repeat("[", 10001), 8 << 20},
				{"10 MB, whole", whole, big, "more bytes not shown: the preview's text stops at 262144 bytes", 10 * uint64(len(big))},
				{"10 MB, preview", cut, big, "(the first bytes of " + strconv.Itoa(len(big)), 8 << 20},
			} {
				id := tc.a.insert(t, tc.v)
				var code int
				out, errOut := newSink(300<<10), newSink(4<<10)
				alloc := testenv.Allocated(func() { code = tc.a.showTo(out, errOut, id) })
				if code != exitOK || !bytes.Contains(out.b, []byte(tc.marker)) {
					t.Errorf("%s: dlq show = %d, %d bytes (want at most 300 KiB with %q): %.300s %s", tc.name, code, len(out.b), tc.marker, out.b, errOut.b)
				}
				t.Logf("%s: dlq show: %d bytes allocated (server and client), the payload %d bytes", tc.name, alloc, len(tc.v))
				if alloc > tc.alloc {
					t.Errorf("%s: dlq show allocated %d bytes, want at most %d", tc.name, alloc, tc.alloc)
				}
				out, errOut = newSink(2*len(tc.v)+(64<<10)), newSink(4<<10)
				alloc = testenv.Allocated(func() { code = tc.a.showTo(out, errOut, id, "--output", "json") })
				var d admin.Detail
				if code != exitOK || json.Unmarshal(out.b, &d) != nil {
					t.Errorf("%s: dlq show --output json = %d, %d bytes: %.300s %s", tc.name, code, len(out.b), out.b, errOut.b)
				}
				t.Logf("%s: dlq show --output json: %d bytes allocated (server and client), the payload %d bytes", tc.name, alloc, len(tc.v))
				if alloc > tc.alloc {
					t.Errorf("%s: dlq show --output json allocated %d bytes, want at most %d", tc.name, alloc, tc.alloc)
				}
			}
		})
	}
}
