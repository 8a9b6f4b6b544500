package console

import "testing"

// FuzzTraceID: whatever a message's traceparent holds, traceID returns
// nothing or 32 lowercase hex digits taken from it, never all zero.
func FuzzTraceID(f *testing.F) {
	for _, s := range []string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-<script>alert(1)</script>0000000000-00f067aa0ba902b7-01", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tp string) {
		id := traceID(map[string]string{"traceparent": tp})
		if id == "" {
			return
		}
		if len(id) != 32 || !lowerHex(id) || id == "00000000000000000000000000000000" || tp[3:35] != id {
			t.Fatalf("traceID(%q) = %q", tp, id)
		}
	})
}

// TestTraceID: the W3C rules, case by case.
func TestTraceID(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	for tp, want := range map[string]string{
		"00-" + id + "-00f067aa0ba902b7-01":        id,
		"00-" + id + "-00f067aa0ba902b7-00":        id, // not sampled: still a trace
		"cc-" + id + "-00f067aa0ba902b7-01-future": id, // a later version may add fields
		"cc-" + id + "-00f067aa0ba902b7-01future":  "",
		"00-" + id + "-00f067aa0ba902b7-01-future": "", // version 00 has exactly four fields
		"ff-" + id + "-00f067aa0ba902b7-01":        "",
		"00-" + id + "-0000000000000000-01":        "",
		"00-" + id + "-00F067AA0BA902B7-01":        "",
		"00_" + id + "-00f067aa0ba902b7-01":        "",
		"00-" + id[:31] + "-00f067aa0ba902b7-01":   "",
	} {
		if got := traceID(map[string]string{"traceparent": tp}); got != want {
			t.Errorf("traceID(%q) = %q, want %q", tp, got, want)
		}
	}
	if got := traceID(map[string]string{"Traceparent": "00-" + id + "-00f067aa0ba902b7-01"}); got != "" {
		t.Errorf("a header named other than traceparent gave %q", got)
	}
}
