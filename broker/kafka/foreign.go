package kafka

import (
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/dlq"
)

// Header names written by other tools' dead-letter publishers.
const (
	// Spring Kafka's DeadLetterPublishingRecoverer (KafkaHeaders.DLT_*).
	springTopic      = "kafka_dlt-original-topic"
	springPartition  = "kafka_dlt-original-partition" // 4-byte big-endian int
	springOffset     = "kafka_dlt-original-offset"    // 8-byte big-endian long
	springTimestamp  = "kafka_dlt-original-timestamp" // 8-byte big-endian long, ms
	springGroup      = "kafka_dlt-original-consumer-group"
	springFQCN       = "kafka_dlt-exception-fqcn"
	springMessage    = "kafka_dlt-exception-message"
	springStacktrace = "kafka_dlt-exception-stacktrace"
	springPrefix     = "kafka_dlt-"

	// Kafka Connect's errors.deadletterqueue.context.headers.enable.
	connectTopic      = "__connect.errors.topic"
	connectPartition  = "__connect.errors.partition"
	connectOffset     = "__connect.errors.offset"
	connectConnector  = "__connect.errors.connector.name"
	connectClass      = "__connect.errors.exception.class.name"
	connectMessage    = "__connect.errors.exception.message"
	connectStacktrace = "__connect.errors.exception.stacktrace"
	connectPrefix     = "__connect.errors."
)

// fromForeignHeaders maps the dead-letter headers of Spring Kafka
// (kafka_dlt-*) or Kafka Connect (__connect.errors.*) into an Entry, so
// that their DLQ topics are triaged with redrive's, and returns the prefix
// of the tool's own headers. It reports false when neither tool's headers
// are there. The record's key, value and wire form are the caller's to
// fill in; the tools' own headers (prefix) are left out of OriginalHeaders.
// The tools' record of where the message came from (topic, group) is
// checked against the DLQ's configured route like redrive's (Ops.Target).
func fromForeignHeaders(h map[string]string) (e dlq.Entry, prefix string, ok bool) {
	switch {
	case h[springTopic] != "" || h[springFQCN] != "":
		e = dlq.Entry{
			OriginalTopic:     h[springTopic],
			OriginalPartition: int32(beInt(h[springPartition])),
			OriginalOffset:    beInt(h[springOffset]),
			ErrorClass:        h[springFQCN],
			ErrorMessage:      h[springMessage],
			StackTrace:        truncateRunes(h[springStacktrace], MaxStackTrace),
			Worker:            h[springGroup],
			Reason:            "spring_dlt",
			OriginalHeaders:   without(h, springPrefix),
		}
		if ms := beInt(h[springTimestamp]); ms > 0 && ms <= maxUnixMilli {
			e.FirstFailureAt = time.UnixMilli(ms).UTC()
		}
		return e, springPrefix, true
	case h[connectTopic] != "" || h[connectClass] != "":
		p, _ := strconv.ParseInt(h[connectPartition], 10, 32)
		o, err := strconv.ParseInt(h[connectOffset], 10, 64)
		if err != nil {
			o = -1
		}
		return dlq.Entry{
			OriginalTopic:     h[connectTopic],
			OriginalPartition: int32(p),
			OriginalOffset:    o,
			ErrorClass:        h[connectClass],
			ErrorMessage:      h[connectMessage],
			StackTrace:        truncateRunes(h[connectStacktrace], MaxStackTrace),
			Worker:            h[connectConnector],
			Reason:            "connect_error",
			OriginalHeaders:   without(h, connectPrefix),
		}, connectPrefix, true
	}
	return dlq.Entry{}, "", false
}

// maxUnixMilli is the last millisecond of year 9999, the largest time an
// envelope encodes: a larger foreign timestamp is ignored.
const maxUnixMilli = 253402300799999

// beInt reads a big-endian integer of 4 or 8 bytes, or a decimal string
// (some producers write text); -1 when it is neither.
func beInt(s string) int64 {
	switch len(s) {
	case 4:
		return int64(int32(binary.BigEndian.Uint32([]byte(s))))
	case 8:
		return int64(binary.BigEndian.Uint64([]byte(s)))
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	return -1
}

func without(h map[string]string, prefix string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if !strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}
