package kafka

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzFromForeignHeaders reads arbitrary headers as a foreign dead letter:
// no panic, the stack trace bounded, the decoding tool's headers left out
// of the original headers (another tool's stay: they were on the record),
// and a spring or connect format decodes only its own tool's headers.
func FuzzFromForeignHeaders(f *testing.F) {
	for _, s := range []string{
		"",
		springTopic + "=orders\n" + springPartition + "=\x00\x00\x00\x02\n" + springOffset + "=\x00\x00\x00\x00\x00\x00\x00\x07\n" + springFQCN + "=java.lang.X\n" + springTimestamp + "=1700000000000",
		springFQCN + "=x\n" + springPartition + "=\xff\xff\xff\xff\n" + springTimestamp + "=\x7f\xff\xff\xff\xff\xff\xff\xff",
		springTopic + "=t\n" + springStacktrace + "=" + strings.Repeat("é", 9000),
		connectTopic + "=t\n" + connectPartition + "=99999999999\n" + connectOffset + "=x\n" + connectClass + "=C",
		connectClass + "=C\n" + connectStacktrace + "=\xff\xfe" + strings.Repeat("a", 10),
		"kafka_dlt-original-topic=\napp=1",
		springTopic + "=a\n" + connectTopic + "=b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := map[string]string{}
		for line := range strings.SplitSeq(s, "\n") {
			k, v, _ := strings.Cut(line, "=")
			h[k] = v
		}
		for _, f := range []ForeignFormat{FormatSpring, FormatConnect} {
			if _, prefix, ok := decodeForeign(f, h); ok && prefix != map[ForeignFormat]string{FormatSpring: springPrefix, FormatConnect: connectPrefix}[f] {
				t.Fatalf("format %s decoded the headers of %s", f, prefix)
			}
		}
		e, prefix, ok := fromForeignHeaders(h)
		if !ok {
			return
		}
		if len(e.StackTrace) > MaxStackTrace*utf8.UTFMax {
			t.Fatalf("stack trace of %d bytes", len(e.StackTrace))
		}
		for k := range e.OriginalHeaders {
			if strings.HasPrefix(k, prefix) {
				t.Fatalf("original headers keep the foreign header %q", k)
			}
		}
		if _, err := EncodeEnvelope(e); err != nil {
			t.Fatalf("the entry of %q does not encode: %v", s, err)
		}
	})
}
