package kafka

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/driver"
)

// TestDecodeDesignEnvelope reads the example of DESIGN.md, written by hand.
func TestDecodeDesignEnvelope(t *testing.T) {
	in := `{
  "original_topic": "escrow.commands",
  "original_partition": 3,
  "original_offset": 12345,
  "original_key": "deal_550e8400",
  "original_value": {"...": "..."},
  "original_value_encoding": "json",
  "original_headers": {"k": "v"},
  "error_details": {"exception_class": "...", "message": "...", "stack_trace": "first 500 chars"},
  "reason": "max_retries",
  "retry_count": 5,
  "worker_instance": "payout-executor-1",
  "first_failure_at": "2025-01-15T10:30:00Z",
  "last_failure_at": "2025-01-15T11:45:00Z",
  "some_future_field": [1, 2]
}`
	e, err := DecodeEnvelope([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := driver.Entry{
		OriginalTopic: "escrow.commands", OriginalPartition: 3, OriginalOffset: 12345,
		OriginalKey: []byte("deal_550e8400"), OriginalValue: []byte(`{"...": "..."}`),
		OriginalHeaders: map[string]string{"k": "v"},
		ErrorClass:      "...", ErrorMessage: "...", StackTrace: "first 500 chars",
		Reason: "max_retries", RetryCount: 5, WorkerInstance: "payout-executor-1",
		FirstFailureAt: time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC),
		LastFailureAt:  time.Date(2025, 1, 15, 11, 45, 0, 0, time.UTC),
	}
	checkEntry(t, e, want)

	// Without partition and offset (not a Kafka record).
	e, err = DecodeEnvelope([]byte(`{"original_topic":"q","original_value":"aGk=","original_value_encoding":"base64"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.OriginalPartition != -1 || e.OriginalOffset != -1 || string(e.OriginalValue) != "hi" || e.OriginalKey != nil {
		t.Errorf("minimal envelope = %+v", e)
	}
}

func TestDecodeEnvelopeErrors(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		notEnvelope bool
		contains    string
	}{
		{"empty", "", true, ""},
		{"spaces", "  \n", true, ""},
		{"binary", "\x00\x01\xff", true, ""},
		{"text", "hello", true, ""},
		{"JSON array", `[{"original_topic":"t"}]`, true, ""},
		{"JSON string", `"original_topic"`, true, ""},
		{"JSON null", `null`, true, ""},
		{"truncated", `{"original_topic":"t","original_value":`, true, ""},
		{"trailing garbage", `{"original_topic":"t"} x`, true, ""},
		{"other JSON object", `{"id":1,"payload":"x"}`, true, "no original_topic"},
		{"topic of wrong type", `{"original_topic":1}`, false, "original_topic"},
		{"partition of wrong type", `{"original_topic":"t","original_partition":"3"}`, false, "original_partition"},
		{"partition overflow", `{"original_topic":"t","original_partition":3000000000}`, false, "original_partition"},
		{"headers of wrong type", `{"original_topic":"t","original_headers":["a"]}`, false, "original_headers"},
		{"error details of wrong type", `{"original_topic":"t","error_details":"boom"}`, false, "error_details"},
		{"unknown value encoding", `{"original_topic":"t","original_value":"x","original_value_encoding":"hex"}`, false, `unknown original_value_encoding "hex"`},
		{"utf8 value not a string", `{"original_topic":"t","original_value":{"a":1},"original_value_encoding":"utf8"}`, false, "original_value"},
		{"utf8 value null", `{"original_topic":"t","original_value":null,"original_value_encoding":"utf8"}`, false, "original_value"},
		{"json encoding without value", `{"original_topic":"t","original_value_encoding":"json"}`, false, "original_value"},
		{"bad base64 value", `{"original_topic":"t","original_value":"!!!","original_value_encoding":"base64"}`, false, "invalid base64"},
		{"base64 value with bad padding", `{"original_topic":"t","original_value":"aGk","original_value_encoding":"base64"}`, false, "invalid base64"},
		{"unknown key encoding", `{"original_topic":"t","original_key":"x","original_key_encoding":"json"}`, false, "original_key: unknown encoding"},
		{"bad base64 key", `{"original_topic":"t","original_key":"@","original_key_encoding":"base64"}`, false, "original_key"},
		{"base64 key not a string", `{"original_topic":"t","original_key":5,"original_key_encoding":"base64"}`, false, "original_key: encoding base64 needs a JSON string"},
		{"header value not a string, base64", `{"original_topic":"t","original_headers":{"a":5},"original_headers_encoding":{"a":"base64"}}`, false, "invalid base64"},
		{"time of wrong type", `{"original_topic":"t","first_failure_at":true}`, false, "first_failure_at"},
		{"epoch milliseconds beyond year 9999", `{"original_topic":"t","first_failure_at":253402300800000}`, false, "first_failure_at"},
		{"epoch milliseconds with a fraction", `{"original_topic":"t","first_failure_at":1736937000000.5}`, false, "first_failure_at"},
		{"time beyond year 9999 in UTC", `{"original_topic":"t","first_failure_at":"9999-12-31T23:00:00-02:00"}`, false, "first_failure_at"},
		{"unknown header encoding", `{"original_topic":"t","original_headers":{"a":"b"},"original_headers_encoding":{"a":"rot13"}}`, false, "rot13"},
		{"header encoding for no header", `{"original_topic":"t","original_headers":{"a":"b"},"original_headers_encoding":{"z":"base64"}}`, false, `"z"`},
		{"bad base64 header", `{"original_topic":"t","original_headers":{"a":"%%"},"original_headers_encoding":{"a":"base64"}}`, false, "invalid base64"},
		{"bad binary header name", `{"original_topic":"t","original_binary_headers":{"%%":"YQ=="}}`, false, "original_binary_headers"},
		{"bad binary header value", `{"original_topic":"t","original_binary_headers":{"YQ==":"%%"}}`, false, "original_binary_headers"},
		{"duplicate binary header", `{"original_topic":"t","original_headers":{"a":"1"},"original_binary_headers":{"YQ==":"Mg=="}}`, false, "already"},
		{"bad time", `{"original_topic":"t","first_failure_at":"yesterday"}`, false, "first_failure_at"},
		{"time without zone", `{"original_topic":"t","last_failure_at":"2025-01-15T10:30:00"}`, false, "last_failure_at"},
		{"negative retry count", `{"original_topic":"t","retry_count":-1}`, false, "retry_count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := DecodeEnvelope([]byte(tt.in))
			if err == nil {
				t.Fatalf("DecodeEnvelope(%q) = %+v, want an error", tt.in, e)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "dlq: decode envelope: ") {
				t.Errorf("error %q lacks the operation prefix", msg)
			}
			if got := errors.Is(err, ErrNotEnvelope); got != tt.notEnvelope {
				t.Errorf("errors.Is(%q, ErrNotEnvelope) = %v, want %v", msg, got, tt.notEnvelope)
			}
			if !strings.Contains(msg, tt.contains) {
				t.Errorf("error %q does not contain %q", msg, tt.contains)
			}
		})
	}
}

func FuzzEnvelopeRoundTrip(f *testing.F) {
	f.Add([]byte("deal_1"), []byte(`{"a":1}`), "content-type", "application/json", "trace", false, false)
	f.Add([]byte{}, []byte{}, "", "", "", false, false)
	f.Add([]byte(nil), []byte(nil), "h", "v", "", true, true)
	f.Add([]byte{0xff, 0x00}, []byte{0x00, 0xff, 0xfe}, "\xff", "\xfe", "\xff", false, false)
	f.Add([]byte("k"), []byte("{\n  \"a\": 1\n}"), "k", "v\x00", strings.Repeat("é", 600), false, false)
	f.Add([]byte("k"), []byte(`{"e":"\u00e9","s":"\/"}`), "k", "v", "", false, false)
	f.Add([]byte("k"), []byte("\"a\u2028b\""), "k", "\u2029", "", false, false)
	f.Add([]byte("k"), []byte(`{"a":"\ud800"}`), "k", "", "", false, false)
	f.Add([]byte("k"), []byte("{\"a\":\"\xff\"}"), "k", "", "", false, false)
	f.Add([]byte("k"), []byte(strings.Repeat("[", 1001)+strings.Repeat("]", 1001)), "k", "", "", false, false)
	f.Add([]byte("k"), []byte(`null`), "k", "", "", false, false)
	f.Add([]byte("k"), []byte(` 1`), "k", "", "", false, false)
	f.Fuzz(func(t *testing.T, key, value []byte, hname, hvalue, stack string, nilKey, nilValue bool) {
		e := baseEntry()
		e.OriginalKey, e.OriginalValue = key, value
		if nilKey {
			e.OriginalKey = nil
		} else if e.OriginalKey == nil {
			e.OriginalKey = []byte{}
		}
		if nilValue {
			e.OriginalValue = nil
		} else if e.OriginalValue == nil {
			e.OriginalValue = []byte{}
		}
		e.OriginalHeaders = map[string]string{hname: hvalue, "fixed": "1"}
		e.StackTrace = ""
		roundTrip(t, e)

		e.StackTrace = stack
		data, err := EncodeEnvelope(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeEnvelope(data)
		if err != nil {
			t.Fatal(err)
		}
		if want := truncateRunes(strings.ToValidUTF8(stack, "\uFFFD"), MaxStackTrace); got.StackTrace != want {
			t.Errorf("stack trace = %q, want %q", got.StackTrace, want)
		}
	})
}

func FuzzDecodeEnvelope(f *testing.F) {
	good, err := EncodeEnvelope(baseEntry())
	if err != nil {
		f.Fatal(err)
	}
	bin := baseEntry()
	bin.OriginalKey, bin.OriginalValue = []byte{0xff}, []byte{0xfe, 0}
	bin.OriginalHeaders = map[string]string{"\xff": "\x00", "a": "\xfe"}
	binData, err := EncodeEnvelope(bin)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][]byte{
		good, binData, good[:len(good)/2],
		[]byte(""), []byte("{}"), []byte("[]"), []byte("null"), []byte(`{"original_topic":null}`),
		[]byte(`{"original_topic":"t","original_value":"x","original_value_encoding":"utf8"}`),
		[]byte(`{"original_topic":"t","original_value":null,"original_value_encoding":"json"}`),
		[]byte(`{"original_topic":"t","original_headers":{"a":null},"original_headers_encoding":{"a":"utf8"}}`),
		[]byte(`{"original_topic":"t","first_failure_at":"2025-01-15T10:30:00+01:00","error_details":{"stack_trace":"` + strings.Repeat("x", 600) + `"}}`),
		[]byte("\xef\xbb\xbf{}"),
		// The reference envelope of other languages.
		[]byte(`{"original_topic":"t","original_value":{"a": [1, 2.5e3, null]},"original_key":7,"first_failure_at":1736937000123}`),
		[]byte(`{"original_topic":"t","original_value":"text \u00e9","original_headers":{"a":1,"b":null,"c":{"d":[]}}}`),
		[]byte(`{"original_topic":"t","original_value":null,"last_failure_at":"2025-01-15T10:30:00.123456789+05:30"}`),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEnvelope(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "dlq: decode envelope: ") {
				t.Fatalf("error %q lacks the operation prefix", err)
			}
			return
		}
		// What decodes re-encodes, and decodes again to the same entry
		// (the stack trace cut to MaxStackTrace).
		again, err := EncodeEnvelope(e)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", e, err)
		}
		e2, err := DecodeEnvelope(again)
		if err != nil {
			t.Fatalf("decoding re-encoded %q: %v", again, err)
		}
		e.StackTrace = truncateRunes(e.StackTrace, MaxStackTrace)
		checkEntry(t, e2, e)
	})
}

func benchEntry() driver.Entry {
	e := baseEntry()
	var v bytes.Buffer
	v.WriteString(`{"items":[`)
	for i := 0; v.Len() < 1000; i++ {
		if i > 0 {
			v.WriteByte(',')
		}
		v.WriteString(`{"id":12345,"name":"widget","ok":true}`)
	}
	v.WriteString(`]}`)
	e.OriginalValue = v.Bytes()[:v.Len():v.Len()]
	return e
}

func BenchmarkEncodeEnvelope(b *testing.B) {
	e := benchEntry()
	b.SetBytes(int64(len(e.OriginalValue)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeEnvelope(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeEnvelope(b *testing.B) {
	data, err := EncodeEnvelope(benchEntry())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEnvelope(data); err != nil {
			b.Fatal(err)
		}
	}
}
