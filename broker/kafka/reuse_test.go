package kafka_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// TestReuseDeliveriesOnACluster: with ReuseDeliveries, in both header
// modes, every message is handled once with exactly its own value and
// headers, never what an earlier record or its handler left in the reused
// Delivery: records of many fetches, with header sets that differ from one
// record to the next (a few over the reused map's bound), handlers that
// write Headers, and failures retried in place. The Deliveries are reused:
// no more distinct ones than the workers' slabs hold.
func TestReuseDeliveriesOnACluster(t *testing.T) {
	for _, onDemand := range []bool{false, true} {
		t.Run(fmt.Sprintf("on demand %v", onDemand), func(t *testing.T) { testReuse(t, onDemand) })
	}
}

func testReuse(t *testing.T, onDemand bool) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, func(c *kafka.Config) {
		c.ClientOptions = append(c.ClientOptions, kgo.FetchMaxPartitionBytes(4000))
	})
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "reuse", Concurrency: 3, ReuseDeliveries: true, HeadersOnDemand: onDemand,
		Policy: retrypolicy.Policy{MaxRetries: 2, Backoff: retrypolicy.Schedule{Delays: []time.Duration{0}}}}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	const n, failEvery = 900, 97
	var msgs []broker.Message
	for i := range n {
		h := map[string]string{"seq": strconv.Itoa(i)}
		if i%2 == 1 {
			h["odd"] = ""
		}
		if i%50 == 0 {
			for k := range 80 {
				h["many-"+strconv.Itoa(k)] = strconv.Itoa(i)
			}
		}
		msgs = append(msgs, broker.Message{ID: fmt.Sprintf("m-%03d", i), Key: []byte("k" + strconv.Itoa(i%7)),
			Value: bytes.Repeat([]byte{byte(i)}, 50+i%30), Headers: h})
	}
	for start := 0; start < n; start += 100 {
		if err := b.Publish(t.Context(), topic, msgs[start:start+100]...); err != nil {
			t.Fatal(err)
		}
	}

	// What each call saw, copied while it ran: the handler keeps nothing.
	type seen struct {
		id      string
		attempt int
		value   []byte
		headers map[string]string
	}
	var (
		mu       sync.Mutex
		calls    []seen
		pointers = map[string]bool{}
		done     = make(chan struct{})
		handled  int
	)
	errOnce := errors.New("fails once")
	testenv.Consume(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
		s := seen{id: d.ID, attempt: d.Attempt, value: bytes.Clone(d.Value), headers: map[string]string{}}
		for k, v := range d.AllHeaders() {
			if !strings.HasPrefix(k, "x-redrive-") {
				s.headers[k] = v
			}
		}
		if !onDemand {
			d.Headers["written"] = d.ID // left for the next record, if reused uncleared
		}
		seq, _ := strconv.Atoi(s.headers["seq"])
		fail := seq%failEvery == 0 && d.Attempt == 1
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, s)
		if d.Attempt == 1 {
			pointers[fmt.Sprintf("%p", d)] = true
		}
		if fail {
			return errOnce
		}
		if handled++; handled == n {
			close(done)
		}
		return nil
	})
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d messages handled after 60 s", handled, n)
	}

	mu.Lock()
	defer mu.Unlock()
	byID := map[string][]seen{}
	for _, c := range calls {
		byID[c.id] = append(byID[c.id], c)
	}
	failures := 0
	for i, m := range msgs {
		cs := byID[m.ID]
		want := 1
		if i%failEvery == 0 {
			want, failures = 2, failures+1
		}
		if len(cs) != want {
			t.Fatalf("%s: %d calls, want %d (in: %d messages; calls: %d)", m.ID, len(cs), want, n, len(calls))
		}
		for _, c := range cs {
			if !bytes.Equal(c.value, m.Value) || !maps.Equal(c.headers, m.Headers) {
				t.Fatalf("%s attempt %d: value %d bytes of %v, headers %v; want %d bytes of %d, headers %v",
					m.ID, c.attempt, len(c.value), c.value[:1], c.headers, len(m.Value), byte(i), m.Headers)
			}
		}
	}
	if len(calls) != n+failures {
		t.Fatalf("%d calls, want %d messages + %d retries", len(calls), n, failures)
	}
	// First attempts are built in the three partitions' slabs, at most
	// 128 Deliveries each.
	if limit := 3 * 128; len(pointers) > limit {
		t.Fatalf("%d distinct Deliveries for %d first attempts, want at most %d: not reused", len(pointers), n, limit)
	}
}
