//go:build unix

package framefilter

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time (user and system) this process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchHeader is the content header of a typical delivery: a content
// type, a headers table of a few application and redrive headers (a
// W3C traceparent among them), persistent, a message id and a timestamp.
// entries adds that many more application headers.
func benchHeader(bodySize, entries int) []byte {
	es := [][]byte{
		ent("x-redrive-topic", vS("orders.created")),
		ent("x-redrive-key", vS("customer-42")),
		ent("traceparent", vS("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")),
		ent("tenant", vS("acme")),
		ent("schema-version", vI(3)),
		ent("retry-budget", vl(5)),
	}
	for i := range entries {
		es = append(es, ent(fmt.Sprint("app-header-", i), vS(strings.Repeat("v", 24))))
	}
	props := appendShortstr(nil, "application/json")
	props = append(props, tbl(es...)...)
	props = append(props, 2) // persistent
	props = appendShortstr(props, "01JABCDEFGHJKMNPQRSTVWXYZ0")
	props = binary.BigEndian.AppendUint64(props, 1700000000)
	return header(uint64(bodySize), flagContentType|flagHeaders|flagDeliveryMode|flagMessageID|flagTimestamp, props)
}

// BenchmarkConsume measures amqp091-go consuming deliveries from a test
// server over loopback TCP, unfiltered (the raw client) and through Wrap,
// in the same run, per message: ns/op is wall time, which on a shared
// machine mostly measures how soon the two goroutines are scheduled;
// cpu-ns/op is the CPU time the process spent (the client's and the test
// server's, which writes pre-encoded frames and is the same in both), and
// the ratio of filtered to raw is the filter's cost on the hot path.
func BenchmarkConsume(b *testing.B) {
	for _, bc := range []struct {
		name          string
		body, entries int
	}{
		{"1KiB-6headers", 1024, 0},
		{"64B-6headers", 64, 0},
		{"1KiB-56headers", 1024, 50},
	} {
		for _, filtered := range []bool{false, true} {
			name := bc.name + "/raw"
			if filtered {
				name = bc.name + "/filtered"
			}
			b.Run(name, func(b *testing.B) {
				d := delivery{benchHeader(bc.body, bc.entries), make([]byte, bc.body)}
				start := make(chan struct{})
				s := connect(b, filtered, clientFrameSize, func(w *bufio.Writer) {
					<-start
					for i := range b.N {
						writeDelivery(w, 1, uint64(i+1), d)
					}
					_ = w.Flush()
				}, nil)
				b.SetBytes(int64(len(d.header) + len(d.body)))
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime(b)
				close(start)
				for range b.N {
					if _, ok := s.next(b); !ok {
						b.Fatal("the connection closed")
					}
				}
				b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkCheck is Check alone on the typical content header and on
// one with 56 headers.
func BenchmarkCheck(b *testing.B) {
	for _, entries := range []int{0, 50} {
		p := benchHeader(1024, entries)
		b.Run(fmt.Sprint(len(p), "B"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				if !Check(p).OK() {
					b.Fatal("refused")
				}
			}
		})
	}
}
