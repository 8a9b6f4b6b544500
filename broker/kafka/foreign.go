package kafka

import (
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/broker/driver"
)

// Header names written by other tools' dead-letter publishers, as their
// sources write them.
const (
	// Spring Kafka's DeadLetterPublishingRecoverer (KafkaHeaders.DLT_*,
	// written by its DeadLetterRecordManager): texts are UTF-8, numbers
	// big-endian binary.
	springTopic      = "kafka_dlt-original-topic"
	springPartition  = "kafka_dlt-original-partition" // 4-byte big-endian int
	springOffset     = "kafka_dlt-original-offset"    // 8-byte big-endian long
	springTimestamp  = "kafka_dlt-original-timestamp" // 8-byte big-endian long, ms
	springGroup      = "kafka_dlt-original-consumer-group"
	springFQCN       = "kafka_dlt-exception-fqcn"
	springCauseFQCN  = "kafka_dlt-exception-cause-fqcn" // the root cause's class
	springMessage    = "kafka_dlt-exception-message"
	springStacktrace = "kafka_dlt-exception-stacktrace"
	springPrefix     = "kafka_dlt-"

	// Kafka Connect's DeadLetterQueueReporter
	// (errors.deadletterqueue.context.headers.enable): every value is
	// UTF-8 text, numbers in decimal.
	connectTopic      = "__connect.errors.topic"
	connectPartition  = "__connect.errors.partition"
	connectOffset     = "__connect.errors.offset"
	connectConnector  = "__connect.errors.connector.name"
	connectTask       = "__connect.errors.task.id"
	connectClass      = "__connect.errors.exception.class.name"
	connectMessage    = "__connect.errors.exception.message"
	connectStacktrace = "__connect.errors.exception.stacktrace"
	connectPrefix     = "__connect.errors."
)

// ForeignFormat says whose dead-letter headers the records of another
// application's DLQ topic carry (Config.ForeignDLQs).
type ForeignFormat string

// The formats of foreign DLQ topics.
const (
	// FormatSpring is Spring Kafka's DeadLetterPublishingRecoverer
	// (kafka_dlt-* headers).
	FormatSpring ForeignFormat = "spring"
	// FormatConnect is Kafka Connect's dead-letter queue reporter
	// (__connect.errors.* headers).
	FormatConnect ForeignFormat = "connect"
	// FormatAuto reads either, by the headers each record carries.
	FormatAuto ForeignFormat = "auto"
)

// valid reports whether f is one of the formats.
func (f ForeignFormat) valid() bool {
	return f == FormatSpring || f == FormatConnect || f == FormatAuto
}

// fromForeignHeaders maps the dead-letter headers of Spring Kafka
// (kafka_dlt-*) or Kafka Connect (__connect.errors.*) into an Entry, so
// that their DLQ topics are triaged with redrive's, and returns the prefix
// of the tool's own headers. It reports false when neither tool's headers
// are there. The record's key, value and wire form are the caller's to
// fill in; the tools' own headers (prefix) are left out of OriginalHeaders.
func fromForeignHeaders(h map[string]string) (e driver.Entry, prefix string, ok bool) {
	return decodeForeign(FormatAuto, h)
}

// decodeForeign is fromForeignHeaders for the headers of format f only.
func decodeForeign(f ForeignFormat, h map[string]string) (e driver.Entry, prefix string, ok bool) {
	if f != FormatConnect && (h[springTopic] != "" || h[springFQCN] != "") {
		return fromSpring(h), springPrefix, true
	}
	if f != FormatSpring && (h[connectTopic] != "" || h[connectClass] != "") {
		return fromConnect(h), connectPrefix, true
	}
	return driver.Entry{}, "", false
}

// fromSpring reads Spring Kafka's headers. The error class is the root
// cause's when Spring names one (its exception is most often the
// ListenerExecutionFailedException wrapping it), so that failures group by
// what went wrong; the stack trace shows both.
func fromSpring(h map[string]string) driver.Entry {
	class := h[springCauseFQCN]
	if class == "" {
		class = h[springFQCN]
	}
	e := driver.Entry{
		OriginalTopic:     h[springTopic],
		OriginalPartition: int32(beInt(h[springPartition])),
		OriginalOffset:    beInt(h[springOffset]),
		ErrorClass:        class,
		ErrorMessage:      h[springMessage],
		StackTrace:        truncateRunes(h[springStacktrace], MaxStackTrace),
		Worker:            h[springGroup],
		Reason:            "spring_dlt",
		OriginalHeaders:   without(h, springPrefix),
	}
	if p := beInt(h[springPartition]); p < -1 || p > 1<<31-1 {
		e.OriginalPartition = -1
	}
	if ms := beInt(h[springTimestamp]); ms > 0 && ms <= maxUnixMilli {
		e.FirstFailureAt = time.UnixMilli(ms).UTC()
	}
	return e
}

// fromConnect reads Kafka Connect's headers; the worker is the connector,
// the instance its task ("<connector>-<task>").
func fromConnect(h map[string]string) driver.Entry {
	p, err := strconv.ParseInt(h[connectPartition], 10, 32)
	if err != nil {
		p = -1
	}
	o, err := strconv.ParseInt(h[connectOffset], 10, 64)
	if err != nil {
		o = -1
	}
	e := driver.Entry{
		OriginalTopic:     h[connectTopic],
		OriginalPartition: int32(p),
		OriginalOffset:    o,
		ErrorClass:        h[connectClass],
		ErrorMessage:      h[connectMessage],
		StackTrace:        truncateRunes(h[connectStacktrace], MaxStackTrace),
		Worker:            h[connectConnector],
		Reason:            "connect_error",
		OriginalHeaders:   without(h, connectPrefix),
	}
	if t := h[connectTask]; t != "" && e.Worker != "" {
		e.WorkerInstance = e.Worker + "-" + t
	}
	return e
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
