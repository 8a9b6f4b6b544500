package kafka

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzFromForeignHeaders reads arbitrary headers as a foreign dead letter:
// no panic, the stack trace bounded, the foreign headers left out of the
// original headers.
func FuzzFromForeignHeaders(f *testing.F) {
	for _, s := range []string{
		"",
		springTopic + "=orders\n" + springPartition + "=\x00\x00\x00\x02\n" + springOffset + "=\x00\x00\x00\x00\x00\x00\x00\x07\n" + springFQCN + "=java.lang.X\n" + springTimestamp + "=1700000000000",
		springFQCN + "=x\n" + springPartition + "=\xff\xff\xff\xff\n" + springTimestamp + "=\x7f\xff\xff\xff\xff\xff\xff\xff",
		springTopic + "=t\n" + springStacktrace + "=" + strings.Repeat("é", 9000),
		connectTopic + "=t\n" + connectPartition + "=99999999999\n" + connectOffset + "=x\n" + connectClass + "=C",
		connectClass + "=C\n" + connectStacktrace + "=\xff\xfe" + strings.Repeat("a", 10),
		"kafka_dlt-original-topic=\napp=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := map[string]string{}
		for line := range strings.SplitSeq(s, "\n") {
			k, v, _ := strings.Cut(line, "=")
			h[k] = v
		}
		e, _, ok := fromForeignHeaders(h)
		if !ok {
			return
		}
		if len(e.StackTrace) > MaxStackTrace*utf8.UTFMax {
			t.Fatalf("stack trace of %d bytes", len(e.StackTrace))
		}
		for k := range e.OriginalHeaders {
			if strings.HasPrefix(k, springPrefix) || strings.HasPrefix(k, connectPrefix) {
				t.Fatalf("original headers keep the foreign header %q", k)
			}
		}
		if _, err := EncodeEnvelope(e); err != nil {
			t.Fatalf("the entry of %q does not encode: %v", s, err)
		}
	})
}
