package kafka

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/redrive/redrive/broker/driver"
)

func be32(n int32) string {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, uint32(n))
	return string(b)
}

func be64(n int64) string {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(n))
	return string(b)
}

func TestFromForeignHeaders(t *testing.T) {
	tests := []struct {
		name    string
		h       map[string]string
		ok      bool
		want    driver.Entry
		headers map[string]string
	}{
		{
			name: "spring",
			h: map[string]string{
				"kafka_dlt-original-topic": "orders", "kafka_dlt-original-partition": be32(2),
				"kafka_dlt-original-offset": be64(1234), "kafka_dlt-original-consumer-group": "billing",
				"kafka_dlt-exception-fqcn": "java.lang.IllegalStateException", "kafka_dlt-exception-message": "bad state",
				"kafka_dlt-exception-stacktrace": strings.Repeat("x", 600), "trace": "t1",
			},
			ok: true,
			want: driver.Entry{OriginalTopic: "orders", OriginalPartition: 2, OriginalOffset: 1234, Worker: "billing",
				ErrorClass: "java.lang.IllegalStateException", ErrorMessage: "bad state", Reason: "spring_dlt"},
			headers: map[string]string{"trace": "t1"},
		},
		{
			name: "connect",
			h: map[string]string{
				"__connect.errors.topic": "events", "__connect.errors.partition": "1", "__connect.errors.offset": "99",
				"__connect.errors.connector.name": "pg-sink", "__connect.errors.exception.class.name": "org.apache.kafka.connect.errors.DataException",
				"__connect.errors.exception.message": "schema mismatch",
			},
			ok: true,
			want: driver.Entry{OriginalTopic: "events", OriginalPartition: 1, OriginalOffset: 99, Worker: "pg-sink",
				ErrorClass: "org.apache.kafka.connect.errors.DataException", ErrorMessage: "schema mismatch", Reason: "connect_error"},
			headers: map[string]string{},
		},
		{
			name: "spring names the root cause",
			h: map[string]string{
				"kafka_dlt-original-topic": "orders", "kafka_dlt-original-partition": be32(0), "kafka_dlt-original-offset": be64(5),
				"kafka_dlt-exception-fqcn":       "org.springframework.kafka.listener.ListenerExecutionFailedException",
				"kafka_dlt-exception-cause-fqcn": "java.lang.IllegalStateException", "kafka_dlt-exception-message": "failed; bad state",
			},
			ok: true,
			want: driver.Entry{OriginalTopic: "orders", OriginalPartition: 0, OriginalOffset: 5,
				ErrorClass: "java.lang.IllegalStateException", ErrorMessage: "failed; bad state", Reason: "spring_dlt"},
			headers: map[string]string{},
		},
		{
			name: "connect task and garbage partition",
			h: map[string]string{
				"__connect.errors.topic": "events", "__connect.errors.partition": "x", "__connect.errors.offset": "",
				"__connect.errors.connector.name": "pg-sink", "__connect.errors.task.id": "3", "__connect.errors.stage": "VALUE_CONVERTER",
			},
			ok: true,
			want: driver.Entry{OriginalTopic: "events", OriginalPartition: -1, OriginalOffset: -1, Worker: "pg-sink",
				WorkerInstance: "pg-sink-3", Reason: "connect_error"},
			headers: map[string]string{},
		},
		{name: "neither", h: map[string]string{"k": "v"}},
		{name: "spring with garbage numbers", h: map[string]string{"kafka_dlt-original-topic": "t", "kafka_dlt-original-offset": "\x01"}, ok: true,
			want: driver.Entry{OriginalTopic: "t", OriginalPartition: -1, OriginalOffset: -1, Reason: "spring_dlt"}, headers: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, ok := fromForeignHeaders(tt.h)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if got.OriginalTopic != tt.want.OriginalTopic || got.OriginalPartition != tt.want.OriginalPartition ||
				got.OriginalOffset != tt.want.OriginalOffset || got.Worker != tt.want.Worker ||
				got.ErrorClass != tt.want.ErrorClass || got.ErrorMessage != tt.want.ErrorMessage || got.Reason != tt.want.Reason ||
				got.WorkerInstance != tt.want.WorkerInstance {
				t.Errorf("entry = %+v, want %+v", got, tt.want)
			}
			if len([]rune(got.StackTrace)) > MaxStackTrace {
				t.Errorf("stack trace kept %d characters, want at most %d", len(got.StackTrace), MaxStackTrace)
			}
			if len(got.OriginalHeaders) != len(tt.headers) {
				t.Errorf("headers = %v, want %v", got.OriginalHeaders, tt.headers)
			}
			for k, v := range tt.headers {
				if got.OriginalHeaders[k] != v {
					t.Errorf("header %s = %q, want %q", k, got.OriginalHeaders[k], v)
				}
			}
		})
	}
}
