package console_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestEntryPageBoundedPayloads: the entry page of payloads nested 9,999,
// 10,000 and 10,001 levels deep and of a 10 MB payload, on each store:
// the page and the memory allocated follow the stored bytes (the
// preview), never the payload's nesting; nesting deeper than 32 levels is
// shown as a marker. Issue 40: 3–9 s and gigabytes per view of the 20 KB
// payload. Not parallel: it measures what the process allocates.
func TestEntryPageBoundedPayloads(t *testing.T) {
	big := testenv.FlatJSON(10 << 20)
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			whole := newFixturePreview(t, st.Open(t), 16<<20, nil) // the whole payload is the stored bytes shown
			cut := newFixturePreview(t, st.Open(t), operate.DefaultPayloadPreview, nil)
			for _, tc := range []struct {
				name   string
				f      *fixture
				v      []byte
				marker string // on the page
				alloc  uint64 // bytes, server and browser
			}{
				{"9,999 deep", whole, testenv.NestedJSON(9999), "[… 19934 bytes nested deeper than 32 levels …]", 8 << 20},
				{"10,000 deep", whole, testenv.NestedJSON(10000), "[… 19936 bytes nested deeper than 32 levels …]", 8 << 20},
				{"10,001 deep (text)", whole, testenv.NestedJSON(10001), strings.Repeat("[", 10001), 8 << 20},
				{"10 MB, whole", whole, big, "more bytes not shown: the preview&#39;s text stops at 262144 bytes", 6 * uint64(len(big))},
				{"10 MB, preview", cut, big, "Showing the first bytes of " + strconv.Itoa(len(big)), 8 << 20},
			} {
				rec := tc.f.insert(1, func(_ int, r *dlq.Record) { r.Entry.OriginalValue = tc.v })[0]
				c := tc.f.client().login(viewerToken)
				var r response
				alloc := testenv.Allocated(func() { r = c.get("/dlq/" + tc.f.dlq + "/" + rec.ID) })
				expect(t, tc.name, r, http.StatusOK, tc.marker, `id="download"`)
				// At most 256 KiB of text, escaped (&#34; for a quote).
				if len(r.body) > 6*256<<10 {
					t.Errorf("%s: the page is %d bytes", tc.name, len(r.body))
				}
				t.Logf("%s: %d bytes allocated (server and client), the payload %d bytes", tc.name, alloc, len(tc.v))
				if alloc > tc.alloc {
					t.Errorf("%s: the page allocated %d bytes, want at most %d", tc.name, alloc, tc.alloc)
				}
			}
		})
	}
}
