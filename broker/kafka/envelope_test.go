package kafka

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/broker/driver"
)

func baseEntry() driver.Entry {
	return driver.Entry{
		MessageID:         "3f2a9c",
		OriginalTopic:     "escrow.commands",
		OriginalPartition: 3,
		OriginalOffset:    12345,
		OriginalKey:       []byte("deal_550e8400"),
		OriginalValue:     []byte(`{"deal":"550e8400","amount":1250}`),
		OriginalHeaders:   map[string]string{"content-type": "application/json", "traceparent": "00-abc-def-01"},
		ErrorClass:        "payout.BankError",
		ErrorMessage:      "bank said no",
		StackTrace:        "goroutine 7 [running]:\nmain.pay()",
		Reason:            "max_retries",
		RetryCount:        5,
		Worker:            "payout-executor",
		WorkerInstance:    "payout-executor-1",
		Source:            "escrow.commands",
		FirstFailureAt:    time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC),
		LastFailureAt:     time.Date(2025, 1, 15, 11, 45, 0, 123000000, time.UTC),
	}
}

// checkEntry fails t unless got is want, byte for byte where it matters.
func checkEntry(t testing.TB, got, want driver.Entry) {
	t.Helper()
	if (got.OriginalKey == nil) != (want.OriginalKey == nil) || !bytes.Equal(got.OriginalKey, want.OriginalKey) {
		t.Errorf("key = %q (nil %v), want %q (nil %v)", got.OriginalKey, got.OriginalKey == nil, want.OriginalKey, want.OriginalKey == nil)
	}
	if (got.OriginalValue == nil) != (want.OriginalValue == nil) || !bytes.Equal(got.OriginalValue, want.OriginalValue) {
		t.Errorf("value = %.200q (nil %v, %d bytes), want %.200q (nil %v, %d bytes)",
			got.OriginalValue, got.OriginalValue == nil, len(got.OriginalValue), want.OriginalValue, want.OriginalValue == nil, len(want.OriginalValue))
	}
	if (got.OriginalHeaders == nil) != (want.OriginalHeaders == nil) || !maps.Equal(got.OriginalHeaders, want.OriginalHeaders) {
		t.Errorf("headers = %q, want %q", got.OriginalHeaders, want.OriginalHeaders)
	}
	if !got.FirstFailureAt.Equal(want.FirstFailureAt) || !got.LastFailureAt.Equal(want.LastFailureAt) {
		t.Errorf("times = %v, %v; want %v, %v", got.FirstFailureAt, got.LastFailureAt, want.FirstFailureAt, want.LastFailureAt)
	}
	got.OriginalKey, got.OriginalValue, got.OriginalHeaders = nil, nil, nil
	want.OriginalKey, want.OriginalValue, want.OriginalHeaders = nil, nil, nil
	got.FirstFailureAt, got.LastFailureAt = time.Time{}, time.Time{}
	want.FirstFailureAt, want.LastFailureAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entry = %+v\nwant    %+v", got, want)
	}
}

// roundTrip encodes e, checks the envelope is valid UTF-8 JSON, decodes it
// and returns the envelope as a generic map for further checks.
func roundTrip(t testing.TB, e driver.Entry) map[string]any {
	t.Helper()
	data, err := EncodeEnvelope(e)
	if err != nil {
		t.Fatalf("EncodeEnvelope: %v", err)
	}
	if !utf8.Valid(data) || !json.Valid(data) {
		t.Fatalf("envelope is not valid UTF-8 JSON: %.300q", data)
	}
	got, err := DecodeEnvelope(data)
	if err != nil {
		t.Fatalf("DecodeEnvelope(%.300q): %v", data, err)
	}
	checkEntry(t, got, e)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // an embedded 1E400 is valid JSON but no float64
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("envelope does not decode generically: %v", err)
	}
	return m
}

func TestEnvelopeRoundTrip(t *testing.T) {
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	tests := []struct {
		name     string
		key      []byte
		value    []byte
		encoding any // original_value_encoding in the envelope; nil = absent
	}{
		{"compact JSON object", []byte("k"), []byte(`{"a":1,"b":[true,false,null],"c":"x"}`), "json"},
		{"JSON array", nil, []byte(`[1,2,3]`), "json"},
		{"JSON string", nil, []byte(`"hello"`), "json"},
		{"JSON number", nil, []byte(`-12.5e+3`), "json"},
		{"JSON null payload", nil, []byte(`null`), "json"},
		{"JSON true", nil, []byte(`true`), "json"},
		{"JSON with HTML characters", nil, []byte(`{"html":"<b>&amp;</b>"}`), "json"},
		{"JSON with escaped é", nil, []byte(`{"name":"Ren\u00e9"}`), "json"},
		{"JSON with escaped slash", nil, []byte(`{"url":"http:\/\/example.com\/"}`), "json"},
		{"JSON with raw é and escaped quote", nil, []byte(`{"q":"é \"quoted\" \\ \t"}`), "json"},
		{"JSON with uppercase escapes", nil, []byte(`{"s":"\u00E9\uD83D\uDE00"}`), "json"},
		{"JSON with U+2028", nil, []byte("{\"s\":\"a\u2028b\"}"), "json"},
		{"JSON with a big number", nil, []byte(`{"n":123456789012345678901234567890,"f":1.0000000000000000001,"e":1E400}`), "json"},
		{"JSON with duplicate keys", nil, []byte(`{"a":1,"a":2}`), "json"},
		{"pretty-printed JSON", nil, []byte("{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}\n"), "utf8"},
		{"JSON with unusual whitespace", nil, []byte("{ \"a\" :1 ,\t\"b\":2}"), "utf8"},
		{"JSON with leading space", nil, []byte(` {"a":1}`), "utf8"},
		{"JSON with trailing newline", nil, []byte("{\"a\":1}\n"), "utf8"},
		{"two JSON values", nil, []byte(`{"a":1}{"b":2}`), "utf8"},
		{"almost JSON", nil, []byte(`{"a":1,}`), "utf8"},
		{"plain text", nil, []byte("hello, world"), "utf8"},
		{"text with controls", nil, []byte("a\x00b\x1fc\x7fd\r\n\t\"\\/"), "utf8"},
		{"text with U+2028 and U+2029", nil, []byte("line\u2028sep\u2029para"), "utf8"},
		{"empty value", nil, []byte{}, "utf8"},
		{"nil value", nil, nil, nil},
		{"binary", binary, binary, "base64"},
		{"invalid UTF-8", nil, []byte("caf\xe9"), "base64"},
		{"JSON with invalid UTF-8 in a string", nil, []byte("{\"a\":\"\xff\"}"), "base64"},
		{"JSON with a lone surrogate escape", nil, []byte(`{"a":"\ud800"}`), "json"},
		{"deeply nested JSON", nil, []byte(strings.Repeat("[", 5000) + strings.Repeat("]", 5000)), "utf8"},
		{"nested JSON within bound", nil, []byte(strings.Repeat("[", 900) + strings.Repeat("]", 900)), "json"},
		{"empty key", []byte{}, []byte("x"), "utf8"},
		{"non-UTF-8 key", []byte{0xff, 0x00, 'k'}, []byte("x"), "utf8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := baseEntry()
			e.OriginalKey, e.OriginalValue = tt.key, tt.value
			m := roundTrip(t, e)
			if got := m["original_value_encoding"]; got != tt.encoding {
				t.Errorf("original_value_encoding = %v, want %v", got, tt.encoding)
			}
			if tt.encoding == "json" {
				// Embedded, so generic readers see structure, not a string.
				var want any
				dec := json.NewDecoder(bytes.NewReader(tt.value))
				dec.UseNumber()
				if err := dec.Decode(&want); err != nil {
					t.Fatal(err)
				}
				if !jsonEqual(m["original_value"], want) {
					t.Errorf("original_value = %v, want %v", m["original_value"], want)
				}
			}
			if tt.encoding == "utf8" && m["original_value"] != string(tt.value) {
				t.Errorf("original_value = %q, want the text %q", m["original_value"], tt.value)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestEnvelopeKeys(t *testing.T) {
	tests := []struct {
		key      []byte
		want     any // original_key in the envelope
		encoding any // original_key_encoding; nil = absent
	}{
		{nil, nil, nil},
		{[]byte{}, "", nil},
		{[]byte("deal_550e8400"), "deal_550e8400", nil},
		{[]byte("é\n\"<"), "é\n\"<", nil},
		{[]byte{0xff, 0xfe}, "//4=", "base64"},
		{[]byte{0x00, 0x01, 0x02}, "\x00\x01\x02", nil},
	}
	for _, tt := range tests {
		e := baseEntry()
		e.OriginalKey = tt.key
		m := roundTrip(t, e)
		if m["original_key"] != tt.want || m["original_key_encoding"] != tt.encoding {
			t.Errorf("key %q: envelope has %q (encoding %v), want %q (encoding %v)",
				tt.key, m["original_key"], m["original_key_encoding"], tt.want, tt.encoding)
		}
	}
}

func TestEnvelopeHeaders(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
	}{
		{"nil", nil},
		{"empty", map[string]string{}},
		{"plain", map[string]string{"a": "1", "b": "", "": "empty name"}},
		{"non-UTF-8 value", map[string]string{"bin": "\xff\x00\x01", "txt": "ok"}},
		{"non-UTF-8 name", map[string]string{"\xff\xfe": "v", "\xc3": "\xff", "ok": "1"}},
		{"escapes", map[string]string{"q\"uote": "back\\slash\n", "<html>": "&amp;"}},
		{"redrive-like names", map[string]string{"original_headers": "x", "base64": "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := baseEntry()
			e.OriginalHeaders = tt.headers
			m := roundTrip(t, e)
			if _, ok := m["original_headers"]; ok != (tt.headers != nil) {
				t.Errorf("original_headers present = %v, want %v", ok, tt.headers != nil)
			}
		})
	}

	e := baseEntry()
	e.OriginalHeaders = map[string]string{"bin": "\xff", "txt": "ok"}
	m := roundTrip(t, e)
	enc, _ := m["original_headers_encoding"].(map[string]any)
	if len(enc) != 1 || enc["bin"] != "base64" {
		t.Errorf("original_headers_encoding = %v, want {bin: base64}", m["original_headers_encoding"])
	}
	if h := m["original_headers"].(map[string]any); h["txt"] != "ok" || h["bin"] != "/w==" {
		t.Errorf("original_headers = %v", h)
	}
}

func TestEnvelopeLargeValue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	bin := make([]byte, 1<<20)
	for i := range bin {
		bin[i] = byte(r.Uint32())
	}
	var js bytes.Buffer
	js.WriteString(`{"items":[`)
	for i := 0; js.Len() < 1<<20; i++ {
		if i > 0 {
			js.WriteByte(',')
		}
		js.WriteString(`{"id":12345,"name":"caf\u00e9 <b>","ok":true}`)
	}
	js.WriteString(`]}`)
	for name, v := range map[string][]byte{"binary": bin, "json": js.Bytes(), "text": bytes.Repeat([]byte("é"), 1<<19)} {
		t.Run(name, func(t *testing.T) {
			e := baseEntry()
			e.OriginalValue = v
			e.OriginalKey = v[:100]
			roundTrip(t, e)
		})
	}
}

func TestEnvelopeStackTraceTruncated(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"short", "short"},
		{strings.Repeat("a", 500), strings.Repeat("a", 500)},
		{strings.Repeat("a", 501), strings.Repeat("a", 500)},
		{strings.Repeat("é", 600), strings.Repeat("é", 500)}, // 500 characters, 1000 bytes
		{strings.Repeat("a", 499) + "日本語", strings.Repeat("a", 499) + "日"},
		{strings.Repeat("a", 499) + "\xff\xfe", strings.Repeat("a", 499) + "\uFFFD"},
	}
	for _, tt := range tests {
		e := baseEntry()
		e.StackTrace = tt.in
		data, err := EncodeEnvelope(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeEnvelope(data)
		if err != nil {
			t.Fatal(err)
		}
		if got.StackTrace != tt.want {
			t.Errorf("stack trace of %d bytes: got %d runes (%d bytes), want %d runes",
				len(tt.in), utf8.RuneCountInString(got.StackTrace), len(got.StackTrace), utf8.RuneCountInString(tt.want))
		}
	}
}

func TestEnvelopeInvalidUTF8InText(t *testing.T) {
	e := baseEntry()
	e.ErrorMessage = "bad \xff byte"
	e.ErrorClass = "x\xfe"
	e.OriginalTopic = "t\xff"
	e.MessageID = "\xc3"
	data, err := EncodeEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(data) {
		t.Fatalf("envelope is not UTF-8: %q", data)
	}
	got, err := DecodeEnvelope(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.ErrorMessage != "bad \uFFFD byte" || got.ErrorClass != "x\uFFFD" {
		t.Errorf("error details = %q, %q", got.ErrorClass, got.ErrorMessage)
	}
	if got.OriginalTopic != "t\uFFFD" || got.MessageID != "\uFFFD" {
		t.Errorf("topic, id = %q, %q", got.OriginalTopic, got.MessageID)
	}
}

func TestEnvelopeFieldNames(t *testing.T) {
	data, err := EncodeEnvelope(baseEntry())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"message_id":              "3f2a9c",
		"original_topic":          "escrow.commands",
		"original_partition":      3.0,
		"original_offset":         12345.0,
		"original_key":            "deal_550e8400",
		"original_value_encoding": "json",
		"reason":                  "max_retries",
		"retry_count":             5.0,
		"worker":                  "payout-executor",
		"worker_instance":         "payout-executor-1",
		"source":                  "escrow.commands",
		"first_failure_at":        "2025-01-15T10:30:00Z",
		"last_failure_at":         "2025-01-15T11:45:00.123Z",
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	details, _ := m["error_details"].(map[string]any)
	if details["exception_class"] != "payout.BankError" || details["message"] != "bank said no" || details["stack_trace"] != "goroutine 7 [running]:\nmain.pay()" {
		t.Errorf("error_details = %v", m["error_details"])
	}
	if !bytes.Contains(data, []byte(`"original_value":{"deal":"550e8400","amount":1250}`)) {
		t.Errorf("value is not embedded verbatim: %s", data)
	}
	// Empty extras and zero times are left out.
	e := driver.Entry{OriginalTopic: "t", OriginalPartition: -1, OriginalOffset: -1}
	data, err = EncodeEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"message_id", "worker", "source", "first_failure_at", "last_failure_at", "original_headers", "original_value_encoding", "original_key_encoding"} {
		if bytes.Contains(data, []byte(`"`+k+`"`)) {
			t.Errorf("empty entry: %s present in %s", k, data)
		}
	}
	roundTrip(t, e)
}

func TestEnvelopeTimes(t *testing.T) {
	e := baseEntry()
	e.FirstFailureAt = time.Date(2025, 1, 15, 11, 30, 0, 987654321, time.FixedZone("CET", 3600))
	e.LastFailureAt = time.Time{}
	data, err := EncodeEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"first_failure_at":"2025-01-15T10:30:00.987654321Z"`)) {
		t.Errorf("first_failure_at not in UTC: %s", data)
	}
	got, err := DecodeEnvelope(data)
	if err != nil {
		t.Fatal(err)
	}
	if !got.FirstFailureAt.Equal(e.FirstFailureAt) || got.FirstFailureAt.Location() != time.UTC || !got.LastFailureAt.IsZero() {
		t.Errorf("times = %v, %v", got.FirstFailureAt, got.LastFailureAt)
	}
	for _, bad := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		e.LastFailureAt = bad
		if _, err := EncodeEnvelope(e); err == nil || !strings.HasPrefix(err.Error(), "dlq: encode envelope: last_failure_at:") {
			t.Errorf("EncodeEnvelope with year %d: err = %v", bad.Year(), err)
		}
	}
}
