package bench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/dlq"
)

// storeDLQ is one DLQ of the store scenario: its share of the entries.
type storeDLQ struct {
	name     string
	backend  string
	severity broker.Severity
	weight   int // percent
}

// storeDLQs are the store scenario's DLQs: uneven sizes, both brokers,
// every severity (the critical ones are the financial, kept-forever kind).
var storeDLQs = []storeDLQ{
	{"payments.settle.dlq", "kafka", broker.SeverityCritical, 40},
	{"orders.billing.dlq", "rabbitmq", broker.SeverityWarning, 25},
	{"emails.send.dlq", "rabbitmq", broker.SeverityInfo, 15},
	{"inventory.sync.dlq", "kafka", broker.SeverityWarning, 12},
	{"ledger.post.dlq", "rabbitmq", broker.SeverityCritical, 8},
}

// storeErrors are the error classes of the scenario, with the text of
// their messages; storeCommonText matches one class in four.
var storeErrors = []struct{ class, format string }{
	{"db.ConnectionRefused", "dial tcp 10.0.%d.%d:5432: connect: connection refused (attempt %d)"},
	{"payments.ValidationError", "validation failed: amount %d.%02d exceeds limit for account ACC-%d"},
	{"http.Timeout", "timeout after %dms calling POST https://bank.example/api/v2/transfers (request %d)"},
	{"java.lang.NullPointerException", "NullPointerException in OrderMapper.map line %d (order %d)"},
}

const (
	storeCommonText = "timeout after"
	// storeRareText matches about one entry in 5,000 (the NPE line
	// numbers run over 1,250 values).
	storeRareText = "OrderMapper.map line 1234 "
)

// storeSpan is how far back the scenario's arrival times go: a month.
const storeSpan = 30 * 24 * time.Hour

// storeRecord returns entry i of n of the scenario, the same for the same
// i (so that the raw COPY writes the rows the store wrote): its DLQ by
// weight, arrival times spread over storeSpan before end in the order of
// i, a JSON payload of 256 B–4 KiB averaging about 1 KiB.
func storeRecord(i, n int, end time.Time) dlq.Record {
	rng := rand.New(rand.NewPCG(uint64(i), 0x5eed))
	w, d := rng.IntN(100), storeDLQs[0]
	for _, c := range storeDLQs {
		if w < c.weight {
			d = c
			break
		}
		w -= c.weight
	}
	at := end.Add(-storeSpan + time.Duration(float64(storeSpan)*float64(i)/float64(max(n, 1))))
	ms := at.UnixMilli()
	r := dlq.Record{Broker: d.backend, DLQ: d.name, Severity: string(d.severity), ReceivedAt: at}
	if d.backend == "kafka" {
		r.ID = kafka.RecordID(int32(i%12), int64(i/12))
		r.Identity = fmt.Sprintf("%s@%d", r.ID, ms)
	} else {
		r.ID = dlq.NewID(at) // as the store makes them: the week partition is the id's
		r.Identity = fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64())
	}
	ek := rng.IntN(len(storeErrors))
	var msg string
	switch ek {
	case 0:
		msg = fmt.Sprintf(storeErrors[0].format, rng.IntN(8), rng.IntN(250), 1+rng.IntN(5))
	case 1:
		msg = fmt.Sprintf(storeErrors[1].format, rng.IntN(100000), rng.IntN(100), rng.IntN(1_000_000))
	case 2:
		msg = fmt.Sprintf(storeErrors[2].format, 1000+rng.IntN(29000), i)
	default:
		msg = fmt.Sprintf(storeErrors[3].format, 1000+rng.IntN(1250), i)
	}
	r.Entry = dlq.Entry{
		MessageID:         fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&(1<<48-1)),
		OriginalTopic:     d.name[:len(d.name)-len(".dlq")],
		OriginalPartition: -1,
		OriginalOffset:    -1,
		OriginalKey:       fmt.Appendf(nil, "customer-%d", rng.IntN(100_000)),
		OriginalValue:     storePayload(rng),
		OriginalHeaders:   map[string]string{"content-type": "application/json", "trace-id": fmt.Sprintf("%032x", rng.Uint64()), "tenant": fmt.Sprint("t", rng.IntN(40))},
		ErrorClass:        storeErrors[ek].class,
		ErrorMessage:      msg,
		StackTrace:        "goroutine 1 [running]:\nmain.handle(...)\n\t/app/handler.go:88 +0x1d\nmain.main()\n\t/app/main.go:41 +0x65",
		Reason:            string(driver.ReasonMaxRetries),
		RetryCount:        5,
		Worker:            "billing",
		WorkerInstance:    fmt.Sprint("billing-", rng.IntN(6)),
		Source:            d.name[:len(d.name)-len(".dlq")],
		FirstFailureAt:    at.Add(-time.Duration(rng.IntN(3600)) * time.Second),
		LastFailureAt:     at.Add(-time.Second),
	}
	if d.backend == "kafka" {
		r.Entry.OriginalPartition, r.Entry.OriginalOffset = int32(i%12), int64(i/12)
	}
	return r
}

// storePayload is a JSON document of 256 B–4 KiB: 70 % up to 1 KiB, 25 %
// up to 2 KiB, 5 % up to 4 KiB (about 1 KiB on average), half of it
// random hex (so that it compresses as real payloads do, not to nothing).
func storePayload(rng *rand.Rand) []byte {
	var size int
	switch p := rng.IntN(100); {
	case p < 70:
		size = 256 + rng.IntN(768)
	case p < 95:
		size = 1024 + rng.IntN(1024)
	default:
		size = 2048 + rng.IntN(2048)
	}
	b := make([]byte, 0, size)
	b = fmt.Appendf(b, `{"order_id":%d,"currency":"EUR","items":[`, rng.IntN(1<<30))
	for len(b) < size-40 {
		b = fmt.Appendf(b, `{"sku":"%016x","qty":%d},`, rng.Uint64(), 1+rng.IntN(9))
	}
	b = append(b, `{"sku":"end","qty":0}]}`...)
	for len(b) < size {
		b = append(b, ' ')
	}
	return b[:size]
}
