//go:build faults

package faults

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/crashtest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// poisonPill is TestPoisonPill on b, whose worker subprocesses are of kind
// with env added; deadLetters waits for want dead letters of sub and counts
// them by message id.
func poisonPill(t *testing.T, b broker.Broker, sub broker.Subscription, kind string, env []string, deadLetters func(want int) map[string]int) {
	published := ids(sub.Topic, 50)
	poison := published[10]
	var others []string
	for _, id := range published {
		if id != poison {
			others = append(others, id)
		}
	}
	publishAll(t, b, sub.Topic, published, nil)
	ctx, stop := context.WithCancel(context.Background())
	env = append(env, envChild+"="+kind, envTopic+"="+sub.Topic, envPoison+"="+poison, "REDIS_ADDR="+testenv.Redis.URL())
	sv, finished := crashtest.Supervise(ctx, t, "TestPoisonPill", env...)
	defer func() { stop(); <-finished }()
	sv.WaitDone(2*time.Minute, others...)
	dead := deadLetters(1)
	stop()
	<-finished
	if err := sv.Err(); err != nil {
		t.Errorf("supervision: %v", err)
	}
	if starts := sv.Starts(); starts[poison] != poisonMaxClaims {
		t.Errorf("poison handler started %d times, want max_claims = %d", starts[poison], poisonMaxClaims)
	}
	if dead[poison] != 1 {
		t.Errorf("poison %s dead-lettered %d times, want once (dead letters: %v)", poison, dead[poison], dead)
	}
	t.Logf("%d worker processes", sv.Runs())
	account(t, published, sv.Done(), dead)
}

// rabbitDeadLettersWait waits (a minute at most) until the dead-letter
// queue of sub holds want messages, then drains it and counts its
// messages by id; every one must have reason max_claims.
func rabbitDeadLettersWait(t testing.TB, sub broker.Subscription, want int) map[string]int {
	t.Helper()
	conn, ch := amqpChannel(t)
	defer conn.Close()
	q := rabbit.DLQ(rabbit.Queue(sub.Topic, sub.Group))
	tag := broker.NewMessageID()
	msgs, err := ch.Consume(q, tag, false, false, false, false, nil)
	if err != nil {
		t.Fatalf("consume %s: %v", q, err)
	}
	out := map[string]int{}
	n := 0
	timeout := time.After(time.Minute)
	for n < want {
		select {
		case m := <-msgs:
			_ = m.Ack(false)
			e := rabbit.EntryFromDelivery(m)
			if e.Reason != string(driver.ReasonMaxClaims) {
				t.Errorf("dead letter %s: reason %q, want %q", e.MessageID, e.Reason, driver.ReasonMaxClaims)
			}
			out[e.MessageID]++
			n++
		case <-timeout:
			t.Errorf("%s: %d of %d dead letters after a minute", q, n, want)
			return out
		}
	}
	_ = ch.Cancel(tag, false)
	for id, k := range rabbitDeadLetters(t, sub) { // any extra ones
		out[id] += k
	}
	return out
}
