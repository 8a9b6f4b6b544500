package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// TestCopyWindowNothingLost: retry and dead-letter copies are sent without
// waiting (an in-flight window per partition). The copies' topic starts
// refusing writes in the middle of the run and the consumer is stopped
// while copies are refused or in flight; a second consumer then takes
// over. Nothing is lost: every message ends up handled or dead-lettered,
// the committed offset never passed a record whose dead letter was not
// acknowledged, and every record from the committed offset on is handled
// again by the second consumer (redelivered, never skipped). Duplicates
// are reported.
func TestCopyWindowNothingLost(t *testing.T) {
	const n = 600
	for _, tc := range []struct {
		name string
		mode broker.RetryMode
		// fails: how the handler fails message i on attempt a (nil: ok).
		fails func(i, attempt int) error
		// copies is the topic the copies go to.
		copies func(topic, group string) string
	}{
		{
			name: "dead letters",
			mode: broker.Blocking,
			fails: func(i, _ int) error {
				if i%5 == 0 {
					return broker.Permanent(errors.New("bad payload"))
				}
				return nil
			},
			copies: func(topic, _ string) string { return kafka.DLQTopic(topic) },
		},
		{
			name: "non_blocking retry copies",
			mode: broker.NonBlocking,
			fails: func(i, attempt int) error {
				if i%5 == 0 && attempt == 1 {
					return failure("once")
				}
				return nil
			},
			copies: kafka.RetryTopic,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, brokers := kafkatest.Fake(t)
			b := kafkatest.New(t, brokers, nil)
			topic := topicName(t)
			sub := broker.Subscription{Topic: topic, Group: "g", RetryMode: tc.mode, ShutdownTimeout: 2 * time.Second,
				Policy: retrypolicy.Policy{MaxRetries: 1, Backoff: schedule(10 * time.Millisecond)}}
			if err := b.Declare(t.Context(), sub); err != nil {
				t.Fatal(err)
			}
			index := map[string]int{}
			var msgs []broker.Message
			for i := range n {
				id := fmt.Sprintf("m%04d", i)
				index[id] = i
				msgs = append(msgs, msg(id))
			}
			if err := b.Publish(t.Context(), topic, msgs...); err != nil {
				t.Fatal(err)
			}
			decide := func(d *broker.Delivery) error { return tc.fails(index[d.ID], d.Attempt) }

			// Member 1: after n/3 calls, its handlers wait until the
			// copies' topic refuses writes.
			rec := newRecorder()
			refusing := make(chan struct{})
			var calls atomic.Int64
			h1 := rec.handler(1, decide)
			stop1 := testenv.Consume(t, b, sub, func(ctx context.Context, d *broker.Delivery) error {
				if calls.Add(1) > n/3 {
					select {
					case <-refusing:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return h1(ctx, d)
			})
			rec.WaitUntil(t, 30*time.Second, "a third of the calls", func(c []call) bool { return len(c) >= n/3 })
			fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: tc.copies(topic, sub.Group), Err: kerr.PolicyViolation, Count: -1})
			close(refusing)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if err := fault.Wait(ctx, 3); err != nil {
				t.Fatalf("waiting for refused copies: %v", err)
			}
			stop1()
			fault.Remove()
			committed := map[int32]int64{}
			for part := range int32(3) {
				committed[part] = kafkatest.Committed(ctx, t, brokers, sub.Group, topic, part)
			}
			t.Logf("member 1: %d calls, %d refused copy writes, committed %v", len(rec.Snapshot()), fault.Hits(), committed)

			if tc.mode == broker.Blocking {
				// The watermark: no commit past a record whose dead
				// letter was not acknowledged.
				acked := map[string]bool{}
				for _, dl := range kafkatest.DeadLetters(ctx, t, brokers, topic, sub.Group, 0, 300*time.Millisecond) {
					acked[dl.Entry.MessageID] = true
				}
				for _, cl := range rec.Snapshot() {
					if cl.err != nil && !acked[cl.d.ID] && committed[cl.d.Partition] > cl.d.Offset {
						t.Errorf("committed offset %d of partition %d passed %s at %d, whose dead letter was not acknowledged",
							committed[cl.d.Partition], cl.d.Partition, cl.d.ID, cl.d.Offset)
					}
				}
			}

			// Member 2 takes over and finishes.
			testenv.Consume(t, b, sub, rec.handler(2, decide))
			ends := kafkatest.EndOffsets(ctx, t, brokers, topic)
			want := 0
			for part, end := range ends {
				want += int(end - max(committed[part], 0))
			}
			rec.WaitUntil(t, 30*time.Second, "member 2 handling everything uncommitted", func(cs []call) bool {
				got := map[int32]map[int64]bool{}
				for _, c := range cs {
					if c.member == 2 && c.d.Source == topic {
						if got[c.d.Partition] == nil {
							got[c.d.Partition] = map[int64]bool{}
						}
						got[c.d.Partition][c.d.Offset] = true
					}
				}
				k := 0
				for _, offs := range got {
					k += len(offs)
				}
				return k >= want
			})
			// Never skipped: member 2 handled every offset from the
			// committed one on.
			calls2 := map[int32]map[int64]bool{}
			for _, c := range rec.Snapshot() {
				if c.member == 2 && c.d.Source == topic {
					if calls2[c.d.Partition] == nil {
						calls2[c.d.Partition] = map[int64]bool{}
					}
					calls2[c.d.Partition][c.d.Offset] = true
				}
			}
			for part, end := range ends {
				for off := max(committed[part], 0); off < end; off++ {
					if !calls2[part][off] {
						t.Errorf("partition %d offset %d (at or after the committed %d) was not handled again", part, off, committed[part])
					}
				}
			}

			// Nothing lost: in = handled + dead-lettered.
			var handled map[string]int
			deadLettered := map[string]int{}
			if tc.mode == broker.Blocking {
				dls := kafkatest.DeadLetters(ctx, t, brokers, topic, sub.Group, n/5, 500*time.Millisecond)
				for _, dl := range dls {
					deadLettered[dl.Entry.MessageID]++
				}
				handled = successes(rec.Snapshot())
			} else {
				handled = successes(rec.WaitUntil(t, 30*time.Second, "every message handled", func(cs []call) bool {
					return len(successes(cs)) == n
				}))
			}
			dups := 0
			for id, i := range index {
				h, dl := handled[id], deadLettered[id]
				switch {
				case h+dl == 0:
					t.Errorf("%s (message %d) lost: neither handled nor dead-lettered", id, i)
				case h > 0 && dl > 0:
					t.Errorf("%s handled %d times and dead-lettered %d times", id, h, dl)
				case h+dl > 1:
					dups++
				}
			}
			t.Logf("in %d = handled %d + dead-lettered %d distinct; %d duplicated (at least once)", n, len(handled), len(deadLettered), dups)
		})
	}
}
