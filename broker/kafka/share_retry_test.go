package kafka_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// TestShareBackoffBoundary: a back-off within Config.ShareMaxHold is
// waited out holding the record (no copy anywhere), a longer one goes
// through <topic>.retry.<group> and comes back no earlier than its
// back-off, then is dead-lettered from there; the record's story carries
// over. Counted: each message's calls and copies.
func TestShareBackoffBoundary(t *testing.T) {
	brokers := shareCluster(t, 2*time.Second, 5)
	b := kafkatest.New(t, brokers, func(c *kafka.Config) { c.ShareMaxHold = 300 * time.Millisecond })
	topic := topicName(t)
	sub := shareSub(topic, "boundary", retrypolicy.Policy{MaxRetries: 2,
		Backoff: schedule(200*time.Millisecond, 700*time.Millisecond)})
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, func(d *broker.Delivery) error {
		if d.ID == "short" && d.Attempt == 2 {
			return nil
		}
		return failure("attempt %d fails", d.Attempt)
	}))
	produceMessages(t, brokers, topic, []broker.Message{msg("short"), msg("long")})
	rec.WaitUntil(t, 30*time.Second, "short handled", func(c []call) bool { return successes(c)["short"] == 1 })
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, sub.Group, 1, time.Second)
	calls := rec.Snapshot()

	short := callsOf(calls, "short")
	if len(short) != 2 || short[1].at.Sub(short[0].at) < 200*time.Millisecond || short[1].d.Source != topic {
		t.Errorf("short: %d calls, the retry from %q after %s; want 2, from %s, after >= 200ms", len(short), short[len(short)-1].d.Source, short[len(short)-1].at.Sub(short[0].at), topic)
	}
	long := callsOf(calls, "long")
	if len(long) != 3 {
		t.Fatalf("long: %d calls, want 3", len(long))
	}
	if gap := long[1].at.Sub(long[0].at); gap < 200*time.Millisecond || long[1].d.Source != topic {
		t.Errorf("long attempt 2: from %q after %s, want held in place (%s) after >= 200ms", long[1].d.Source, gap, topic)
	}
	retryTopic := kafka.RetryTopic(topic, sub.Group)
	if gap := long[2].at.Sub(long[1].at); gap < 700*time.Millisecond || long[2].d.Source != retryTopic || long[2].d.Attempt != 3 {
		t.Errorf("long attempt 3: from %q, attempt %d, after %s; want %s, 3, after >= 700ms", long[2].d.Source, long[2].d.Attempt, gap, retryTopic)
	}
	if long[2].d.LastError != "attempt 2 fails" || long[2].d.FirstFailureAt.IsZero() {
		t.Errorf("long attempt 3: last error %q, first failure %v; want the story of attempt 2", long[2].d.LastError, long[2].d.FirstFailureAt)
	}
	if len(dls) != 1 || dls[0].Entry.MessageID != "long" || dls[0].Entry.Reason != string(driver.ReasonMaxRetries) || dls[0].Entry.RetryCount != 2 {
		t.Fatalf("dead letters %+v, want long with max_retries after 2 retries", kafkatest.Entries(dls))
	}
	if e := dls[0].Entry; e.OriginalTopic != topic || e.OriginalPartition != long[0].d.Partition || e.OriginalOffset != long[0].d.Offset || e.Source != retryTopic {
		t.Errorf("dead letter of long: from %s/%d@%d via %s, want %s/%d@%d via %s", e.OriginalTopic, e.OriginalPartition, e.OriginalOffset, e.Source,
			topic, long[0].d.Partition, long[0].d.Offset, retryTopic)
	}
	if got := sum(kafkatest.EndOffsets(t.Context(), t, brokers, retryTopic)); got != 1 {
		t.Errorf("retry topic holds %d records, want 1 (long's 700ms back-off; the 200ms ones were held)", got)
	}
}

// TestShareDelayed: records published with PublishDelayed are handled no
// earlier than due; a delay within the hold is waited out under the
// lock, a longer one moves to the retry topic as it is (no failure
// story) and is handled from there. The original topic is read by a raw
// consumer afterwards: exactly the published records.
func TestShareDelayed(t *testing.T) {
	brokers := shareCluster(t, 2*time.Second, 5)
	b := kafkatest.New(t, brokers, func(c *kafka.Config) { c.ShareMaxHold = 500 * time.Millisecond })
	topic := topicName(t)
	sub := shareSub(topic, "delayed", retrypolicy.Policy{})
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, nil))
	sent := map[string]time.Time{}
	delays := map[string]time.Duration{"now": 0, "soon": 300 * time.Millisecond, "later": 1500 * time.Millisecond}
	for id, d := range delays {
		sent[id] = time.Now()
		if err := b.PublishDelayed(t.Context(), topic, d, msg(id)); err != nil {
			t.Fatal(err)
		}
	}
	calls := rec.WaitUntil(t, 30*time.Second, "every delayed record handled", func(c []call) bool { return len(successes(c)) == len(delays) })
	for _, c := range calls {
		if early := delays[c.d.ID] - c.at.Sub(sent[c.d.ID]); early > 0 {
			t.Errorf("%s handled %s early", c.d.ID, early)
		}
		if c.d.Attempt != 1 || c.d.LastError != "" {
			t.Errorf("%s: attempt %d, last error %q; a delay is no failure", c.d.ID, c.d.Attempt, c.d.LastError)
		}
		want := topic
		if c.d.ID == "later" {
			want = kafka.RetryTopic(topic, sub.Group)
		}
		if c.d.Source != want {
			t.Errorf("%s handled from %s, want %s", c.d.ID, c.d.Source, want)
		}
	}
	if len(calls) != len(delays) {
		t.Errorf("%d calls, want %d", len(calls), len(delays))
	}
	if got := readAll(t, brokers, topic, len(delays)); len(got) != len(delays) || sum(kafkatest.EndOffsets(t.Context(), t, brokers, topic)) != int64(len(delays)) {
		t.Errorf("%s holds %d records, want the %d published", topic, len(got), len(delays))
	}
}

// TestSharePoisonPill: a handler that never finishes one record (the
// process stops each time, giving the record back) is called for it
// MaxClaims times; the broker's delivery count then dead-letters it,
// reason max_claims, without a call, and no Redis is involved. The other
// records are handled once.
func TestSharePoisonPill(t *testing.T) {
	brokers := shareCluster(t, 5*time.Second, 5)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := shareSub(topic, "poison", retrypolicy.Policy{MaxRetries: 3})
	sub.MaxClaims, sub.ShutdownTimeout = 2, 200*time.Millisecond
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	msgs := []broker.Message{msg("pill")}
	for i := range 20 {
		msgs = append(msgs, msg(fmt.Sprintf("p-%02d", i)))
	}
	produceMessages(t, brokers, topic, msgs)
	var starts atomic.Int32
	rec := newRecorder()
	release := make(chan struct{})
	defer close(release)
	for run := 1; run <= sub.MaxClaims; run++ {
		started := make(chan struct{}, 1)
		stop := testenv.Consume(t, b, sub, rec.handler(run, func(d *broker.Delivery) error {
			if d.ID == "pill" {
				if n := starts.Add(1); int(n) != run || d.Redelivered != (run > 1) {
					t.Errorf("pill started %d times by run %d, redelivered %v", n, run, d.Redelivered)
				}
				started <- struct{}{}
				<-release // never finishes: as a handler that kills its process
			}
			return nil
		}))
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatalf("run %d: the pill was not delivered", run)
		}
		stop()
	}
	testenv.Consume(t, b, sub, rec.handler(9, nil))
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, sub.Group, 1, time.Second)
	if len(dls) != 1 || dls[0].Entry.MessageID != "pill" || dls[0].Entry.Reason != string(driver.ReasonMaxClaims) || dls[0].Entry.DeliveryCount != sub.MaxClaims+1 {
		t.Fatalf("dead letters %+v, want the pill, reason max_claims, delivery count %d", kafkatest.Entries(dls), sub.MaxClaims+1)
	}
	calls := rec.WaitUntil(t, 30*time.Second, "the other records handled", func(c []call) bool { return len(successes(c)) >= len(msgs)-1 })
	handled := successes(calls)
	for _, m := range msgs[1:] {
		if handled[m.ID] < 1 {
			t.Errorf("%s not handled", m.ID)
		}
	}
	if n := starts.Load(); int(n) != sub.MaxClaims {
		t.Errorf("pill started %d times, want max_claims = %d", n, sub.MaxClaims)
	}
}
