package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestEntryBoundedPayloads: GET /internal/v1/dlq/{dlq}/{id} of payloads
// nested 512, 513, 9,999, 10,000 and 10,001 levels deep and of a 10 MB
// payload, over HTTP on each store: JSON nested at most
// admin.MaxPayloadDepth levels is embedded as JSON, deeper JSON is given
// as text, so that the answer reads in any client; the answer carries its
// Content-Length; the memory allocated follows the stored bytes (the
// preview), never the nesting. Not parallel: it measures what the process
// allocates.
func TestEntryBoundedPayloads(t *testing.T) {
	big := testenv.FlatJSON(10 << 20)
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			s := st.Open(t)
			whole, cut := serveOps(t, s, 16<<20), serveOps(t, s, 0)
			for _, tc := range []struct {
				name  string
				url   string
				v     []byte
				enc   string
				alloc uint64
			}{
				{"512 deep", whole, testenv.NestedJSON(admin.MaxPayloadDepth), admin.EncodingJSON, 4 << 20},
				{"513 deep", whole, testenv.NestedJSON(admin.MaxPayloadDepth + 1), admin.EncodingUTF8, 4 << 20},
				{"9,999 deep", whole, testenv.NestedJSON(9999), admin.EncodingUTF8, 4 << 20},
				{"10,000 deep", whole, testenv.NestedJSON(10000), admin.EncodingUTF8, 4 << 20},
				{"10,001 deep", whole, testenv.NestedJSON(10001), admin.EncodingUTF8, 4 << 20},
				{"10 MB, whole", whole, big, admin.EncodingJSON, 6 * uint64(len(big))},
				{"10 MB, preview", cut, big, admin.EncodingUTF8, 4 << 20},
			} {
				rec, _, err := s.Insert(context.Background(), dlq.Record{Broker: "rabbitmq", DLQ: "payloads.dlq", Identity: testenv.RandomHex(8),
					Entry: dlq.Entry{OriginalValue: tc.v, OriginalPartition: -1, OriginalOffset: -1}})
				if err != nil {
					t.Fatal(err)
				}
				var res *http.Response
				var body []byte
				alloc := testenv.Allocated(func() {
					req, _ := http.NewRequest(http.MethodGet, tc.url+"/internal/v1/dlq/payloads.dlq/"+rec.ID, nil)
					req.Header.Set("Authorization", "Bearer "+secret)
					if res, err = http.DefaultClient.Do(req); err == nil && res.ContentLength >= 0 {
						body = make([]byte, res.ContentLength) // the client's copy, read as a client that knows the length does
						_, err = io.ReadFull(res.Body, body)
						res.Body.Close()
					}
				})
				if err != nil || res.StatusCode != http.StatusOK || res.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
					t.Fatalf("%s: %v %v, Content-Length %q of %d bytes", tc.name, err, res.Status, res.Header.Get("Content-Length"), len(body))
				}
				var d admin.Detail
				if err := json.Unmarshal(body, &d); err != nil || d.PayloadEncoding != tc.enc {
					t.Errorf("%s: %v, payload_encoding %q, want %q", tc.name, err, d.PayloadEncoding, tc.enc)
				}
				if tc.enc == admin.EncodingJSON {
					var c bytes.Buffer
					if json.Compact(&c, tc.v) != nil || !bytes.Equal(d.Payload, c.Bytes()) {
						t.Errorf("%s: the embedded payload is not the payload", tc.name)
					}
				}
				t.Logf("%s: %d bytes allocated (server and client), the payload %d bytes", tc.name, alloc, len(tc.v))
				if alloc > tc.alloc {
					t.Errorf("%s: the answer allocated %d bytes, want at most %d", tc.name, alloc, tc.alloc)
				}
			}
		})
	}
}

// serveOps serves the admin API on s over HTTP, showing preview bytes of a
// payload (0: the default), and returns its URL.
func serveOps(t *testing.T, s dlq.Store, preview int) string {
	t.Helper()
	ops, err := operate.New(operate.Config{Store: s, Logger: quiet, MaxPayloadPreview: preview})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", Logger: quiet, Tokens: []admin.Token{{Name: "t", Secret: secret}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	web := httptest.NewServer(srv.Handler())
	t.Cleanup(web.Close)
	return web.URL
}
