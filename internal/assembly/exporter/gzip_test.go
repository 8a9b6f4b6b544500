package exporter

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/redrive/redrive/lag"
)

func TestCRC32Combine(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"", ""}, {"a", ""}, {"", "b"}, {"hello, ", "world"},
		{strings.Repeat("x", 1000), strings.Repeat("yz", 4097)},
	} {
		want := crc32.ChecksumIEEE([]byte(tc.a + tc.b))
		if got := crc32Combine(crc32.ChecksumIEEE([]byte(tc.a)), crc32.ChecksumIEEE([]byte(tc.b)), int64(len(tc.b))); got != want {
			t.Errorf("crc32Combine(%d + %d bytes) = %08x, want %08x", len(tc.a), len(tc.b), got, want)
		}
	}
}

// deflated is what lag.Sampler.Encoded makes of data.
func deflated(t *testing.T, name, data string) lag.EncodedFamily {
	var z bytes.Buffer
	zw, err := flate.NewWriter(&z, lag.DeflateLevel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Flush(); err != nil {
		t.Fatal(err)
	}
	return lag.EncodedFamily{Name: name, Data: []byte(data), Deflated: z.Bytes(), CRC: crc32.ChecksumIEEE([]byte(data))}
}

// TestSplicedGzip: per-scrape text and spliced families, in any order,
// make one valid gzip member (checksum and size checked by the reader)
// of the text in order, with nothing after it.
func TestSplicedGzip(t *testing.T) {
	rep := strings.Repeat("lag{group=\"g\",partition=\"1\"} 1\n", 500)
	for _, tc := range []struct {
		name  string
		parts []string // "=text" written, "+text" spliced
	}{
		{"empty", nil},
		{"written only", []string{"=a 1\n", "=b 2\n"}},
		{"spliced only", []string{"+" + rep, "+" + rep}},
		{"interleaved", []string{"=a 1\n" + rep, "+" + rep, "=b 2\n", "=c 3\n", "+x 1\n", "=" + rep}},
		{"spliced first and last", []string{"+" + rep, "=m 1\n", "+z 9\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			g := newSplicedGzip(&out)
			var want strings.Builder
			for _, p := range tc.parts {
				want.WriteString(p[1:])
				var err error
				if p[0] == '+' {
					err = g.splice(deflated(t, "f", p[1:]))
				} else {
					_, err = g.Write([]byte(p[1:]))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			br := bytes.NewReader(out.Bytes())
			zr, err := gzip.NewReader(br)
			if err != nil {
				t.Fatal(err)
			}
			zr.Multistream(false)
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("reading the gzip member: %v", err)
			}
			if string(got) != want.String() {
				t.Errorf("page = %d bytes, want %d bytes", len(got), want.Len())
			}
			if br.Len() != 0 {
				t.Errorf("%d bytes after the gzip member", br.Len())
			}
		})
	}
}
