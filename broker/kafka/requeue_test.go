package kafka_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// TestRequeueKeepsTheAttempt: a message handed back with broker.Requeue
// many more times than the policy allows retries comes back with the same
// attempt number each time and is never dead-lettered, in every retry
// mode (in share mode without a RELEASE, which would count a delivery);
// a later plain failure still spends attempt 1.
func TestRequeueKeepsTheAttempt(t *testing.T) {
	for _, mode := range []broker.RetryMode{broker.Blocking, broker.NonBlocking, broker.Share} {
		t.Run(string(mode), func(t *testing.T) {
			brokers := kafkatest.Cluster(t)
			b := kafkatest.New(t, brokers, nil)
			topic := topicName(t)
			const handBacks = 5 // more than max_retries
			sub := broker.Subscription{Topic: topic, Group: "rq", RetryMode: mode,
				Policy: retrypolicy.Policy{MaxRetries: 1, Backoff: schedule(100 * time.Millisecond)}}
			if err := b.Declare(t.Context(), sub); err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			n := 0
			testenv.Consume(t, b, sub, rec.handler(1, func(d *broker.Delivery) error {
				n++
				switch {
				case n <= handBacks:
					return broker.Requeue(errors.New("downstream down"))
				case n == handBacks+1:
					return failure("one real failure")
				}
				return nil
			}))
			if err := b.Publish(t.Context(), topic, msg("m")); err != nil {
				t.Fatal(err)
			}
			calls := rec.WaitUntil(t, 20*time.Second, "the message handled", func(c []call) bool {
				return len(c) > 0 && c[len(c)-1].err == nil
			})
			var got []int
			for _, c := range calls {
				got = append(got, c.d.Attempt)
			}
			want := []int{1, 1, 1, 1, 1, 1, 2} // five hand-backs, one failure, the retry
			if len(got) != len(want) {
				t.Fatalf("attempts %v, want %v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("attempts %v, want %v", got, want)
				}
			}
			if dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, "rq", 0, time.Second); len(dls) != 0 {
				t.Fatalf("%d dead letters, want none", len(dls))
			}
		})
	}
}
