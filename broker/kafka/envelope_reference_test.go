package kafka

import (
	"testing"
	"time"

	"github.com/redrive/redrive/broker/driver"
)

// TestDecodeReferenceEnvelope reads the design's reference envelope as
// another language's dead-letter publisher writes it: without the members
// redrive adds (original_value_encoding, reason, original_headers), with
// original_value of every JSON type, and times as Jackson and others
// write them. Every member present lands in the entry; nothing absent is
// invented.
func TestDecodeReferenceEnvelope(t *testing.T) {
	const head = `{"original_topic":"escrow.commands","original_partition":3,"original_offset":12345,` +
		`"original_key":"deal_550e8400",` +
		`"error_details":{"exception_class":"java.lang.IllegalStateException","message":"no funds","stack_trace":"at Payout.run"},` +
		`"retry_count":5,"worker_instance":"payout-executor-1",` +
		`"first_failure_at":"2025-01-15T10:30:00.123456789Z","last_failure_at":"2025-01-15T11:45:00Z"`
	base := driver.Entry{
		OriginalTopic: "escrow.commands", OriginalPartition: 3, OriginalOffset: 12345,
		OriginalKey: []byte("deal_550e8400"),
		ErrorClass:  "java.lang.IllegalStateException", ErrorMessage: "no funds", StackTrace: "at Payout.run",
		RetryCount: 5, WorkerInstance: "payout-executor-1",
		FirstFailureAt: time.Date(2025, 1, 15, 10, 30, 0, 123456789, time.UTC),
		LastFailureAt:  time.Date(2025, 1, 15, 11, 45, 0, 0, time.UTC),
	}
	tests := []struct {
		name  string
		tail  string // members after head
		value []byte // the entry's OriginalValue (nil: no value)
		edit  func(*driver.Entry)
	}{
		{name: "JSON object value", tail: `,"original_value":{"deal_id": "d1", "amount": 100}}`, value: []byte(`{"deal_id": "d1", "amount": 100}`)},
		{name: "JSON object value, pretty-printed", tail: ",\"original_value\":{\n  \"a\": [1, 2]\n}}", value: []byte("{\n  \"a\": [1, 2]\n}")},
		{name: "JSON array value", tail: `,"original_value":[1,"two",null]}`, value: []byte(`[1,"two",null]`)},
		{name: "JSON number value", tail: `,"original_value":-1.5e3}`, value: []byte(`-1.5e3`)},
		{name: "JSON boolean value", tail: `,"original_value":false}`, value: []byte(`false`)},
		{name: "JSON string value is text", tail: `,"original_value":"{\"a\":1} \u00e9\n"}`, value: []byte("{\"a\":1} é\n")},
		{name: "empty string value", tail: `,"original_value":""}`, value: []byte{}},
		{name: "null value", tail: `,"original_value":null}`},
		{name: "absent value", tail: `}`},
		{name: "reason given", tail: `,"reason":"max_retries","original_value":1}`, value: []byte("1"),
			edit: func(e *driver.Entry) { e.Reason = "max_retries" }},
		{name: "headers of every JSON type", tail: `,"original_headers":{"s":"v","n":7,"b":true,"z":null,"o":{"x":[1]}}}`,
			edit: func(e *driver.Entry) {
				e.OriginalHeaders = map[string]string{"s": "v", "n": "7", "b": "true", "z": "", "o": `{"x":[1]}`}
			}},
		{name: "number key", tail: `,"original_key":42}`, edit: func(e *driver.Entry) { e.OriginalKey = []byte("42") }},
		{name: "null key", tail: `,"original_key":null}`, edit: func(e *driver.Entry) { e.OriginalKey = nil }},
		{name: "times in epoch milliseconds", tail: `,"first_failure_at":1736937000123,"last_failure_at":"1736941500000"}`,
			edit: func(e *driver.Entry) {
				e.FirstFailureAt = time.UnixMilli(1736937000123).UTC()
				e.LastFailureAt = time.UnixMilli(1736941500000).UTC()
			}},
		{name: "times with an offset and microseconds", tail: `,"first_failure_at":"2025-01-15T12:30:00.000001+02:00","last_failure_at":null}`,
			edit: func(e *driver.Entry) {
				e.FirstFailureAt = time.Date(2025, 1, 15, 10, 30, 0, 1000, time.UTC)
				e.LastFailureAt = time.Time{}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := head + tt.tail
			e, err := DecodeEnvelope([]byte(in))
			if err != nil {
				t.Fatalf("DecodeEnvelope(%s) = %v", in, err)
			}
			want := base
			want.OriginalValue = tt.value
			if tt.edit != nil {
				tt.edit(&want)
			}
			checkEntry(t, e, want)
			if (e.OriginalValue == nil) != (tt.value == nil) {
				t.Errorf("value nil = %v, want %v", e.OriginalValue == nil, tt.value == nil)
			}
			if want.Reason == "" && e.Reason != "" {
				t.Errorf("reason %q invented", e.Reason)
			}
			// What was read is written back and read again the same.
			again, err := EncodeEnvelope(e)
			if err != nil {
				t.Fatal(err)
			}
			e2, err := DecodeEnvelope(again)
			if err != nil {
				t.Fatalf("decoding re-encoded %s: %v", again, err)
			}
			checkEntry(t, e2, e)
		})
	}
}
