//go:build faults

package faults

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/crashtest"
)

// The share-mode cases (retry mode share, Kafka share groups): a member
// SIGKILLed while it holds locked records, a kfake broker removed, a
// poison pill counted by the broker's delivery count. They run on kfake
// clusters of their own (go test -tags faults -run 'TestShare' ./e2e/faults/).

const (
	childKafkaShare = "kafka-share"
	// envHold makes a share child hold the records whose id ends in
	// "-hold" for an hour's back-off, under their locks, after reporting
	// "held:<id>".
	envHold = "FAULTS_HOLD"
	// shareLock is the acquisition lock of the share cases' clusters.
	shareLock = time.Second
)

// shareOpts configure a kfake cluster for the share cases: records locked
// for shareLock (expired locks swept every 50 ms), members silent for two
// seconds evicted (heartbeats every 200 ms), and the Kafka default of
// five deliveries before a record is archived.
func shareOpts() []kfake.Opt {
	return []kfake.Opt{kfake.BrokerConfigs(map[string]string{
		"group.share.record.lock.duration.ms": "1000",
		"share.record.lock.sweep.interval.ms": "50",
		"group.share.session.timeout.ms":      "2000",
		"group.share.heartbeat.interval.ms":   "200",
		"group.share.delivery.count.limit":    "5",
	})}
}

// shareSub is kafkaSub in share mode.
func shareSub(topic string) broker.Subscription {
	s := kafkaSub(topic)
	s.RetryMode = broker.Share
	return s
}

// kafkaShareChild is the worker subprocess of the share cases: it consumes
// shareSub(FAULTS_TOPIC) on the cluster at FAULTS_BROKERS until SIGTERM.
// With FAULTS_POISON, one member holding one record at a time, so that a
// crash gives back no other record; with FAULTS_HOLD, the "-hold" records
// are held in a back-off until the process is killed.
func kafkaShareChild(ctx context.Context) error {
	cfg := kafkatest.Config(strings.Split(os.Getenv(envBrokers), ","))
	if os.Getenv(envPoison) != "" {
		cfg.ShareMembers = 1
	}
	if os.Getenv(envHold) != "" {
		cfg.ShareMaxHold = 2 * time.Hour
	}
	b, err := kafka.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	sub, done := childSub(shareSub(os.Getenv(envTopic)))
	defer done()
	h := childHandler
	if os.Getenv(envHold) != "" {
		h = func(ctx context.Context, d *broker.Delivery) error {
			if strings.HasSuffix(d.ID, "-hold") {
				crashtest.Done("held:" + d.ID)
				// Waited out holding the record (ShareMaxHold), the
				// handler free: its member holds it, locked, until
				// the process is killed.
				return broker.RetryAfter(errors.New("held"), time.Hour)
			}
			return childHandler(ctx, d)
		}
	}
	return b.Consume(ctx, sub, h)
}

// TestShareMemberKilled: a worker process in share mode takes records and
// holds some of them locked (waiting out a back-off) when it is
// SIGKILLed; a second process handles the rest, and the held records once
// the broker gives them back (their session closed, or their locks
// expired): every record handled or dead-lettered, none lost; records the
// first process handled but had not acknowledged yet are handled again
// (duplicates, at least once).
func TestShareMemberKilled(t *testing.T) {
	_, brokers := kafkatest.Fake(t, shareOpts()...)
	topic := "faults.share.killed." + broker.NewMessageID()[:6]
	sub := shareSub(topic)
	b := kafkatest.New(t, brokers, nil)
	if err := b.Declare(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	published := ids(topic, 400)
	var held []string
	for i := 0; i < len(published); i += 200 {
		published[i] += "-hold"
		held = append(held, published[i])
	}
	publishAll(t, b, topic, published, nil)
	env := []string{envBrokers + "=" + strings.Join(brokers, ","), envTopic + "=" + topic}
	c := newTally()
	first := startChild(t, c, childKafkaShare, append(env, envHold+"=1")...)
	if !waitIDs(c, held, "held:", time.Minute) || !c.wait(len(held)+len(published)/10, time.Minute) {
		t.Fatalf("first worker: %d of %d messages (and %d held) in a minute", c.distinct(), len(published), len(held))
	}
	first.kill()
	killed := time.Now()
	t.Logf("SIGKILLed the first worker holding %d locked records, after %d distinct messages", len(held), c.distinct()-len(held))
	second := startChild(t, c, childKafkaShare, env...)
	if !c.wait(len(published)+len(held), time.Minute) {
		t.Errorf("after the restart, %d of %d messages handled in a minute", c.distinct()-len(held), len(published))
	}
	t.Logf("every record handled %s after the kill (the broker gives a dead member's records back when its session closes, at the latest when their %s locks expire)",
		time.Since(killed).Round(10*time.Millisecond), shareLock)
	second.stop(t)
	account(t, published, c.counts(), kafkaDeadLetters(t, brokers, sub))
}

// TestShareBrokerRemoved is TestKafkaBrokerRemoved in share mode.
func TestShareBrokerRemoved(t *testing.T) { kafkaBrokerRemoved(t, shareSub, shareOpts()...) }

// TestSharePoisonPill is TestPoisonPill in share mode: the broker's
// delivery count, not Redis, counts the claims; the records come back
// after each crash when their lock expires.
func TestSharePoisonPill(t *testing.T) {
	_, brokers := kafkatest.Fake(t, shareOpts()...)
	topic := "faults.share.poison." + broker.NewMessageID()[:6]
	sub := poisonSub(shareSub(topic), nil)
	b := kafkatest.New(t, brokers, nil)
	if err := b.Declare(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	poisonPill(t, b, sub, childKafkaShare, []string{envBrokers + "=" + strings.Join(brokers, ",")}, func(want int) map[string]int {
		out := map[string]int{}
		for _, e := range kafkatest.Entries(kafkatest.DeadLetters(context.Background(), t, brokers, topic, sub.Group, want, time.Second)) {
			if e.Reason != string(driver.ReasonMaxClaims) || e.GroupType != kafka.GroupTypeShare || e.DeliveryCount != poisonMaxClaims+1 {
				t.Errorf("dead letter %s: reason %q, group type %q, delivery count %d; want %q, share, %d",
					e.MessageID, e.Reason, e.GroupType, e.DeliveryCount, driver.ReasonMaxClaims, poisonMaxClaims+1)
			}
			out[e.MessageID]++
		}
		return out
	})
}

// waitIDs waits until c counted prefix+id for every id of ids, and
// reports whether it did before timeout.
func waitIDs(c *tally, ids []string, prefix string, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		missing := 0
		for _, id := range ids {
			if c.n[prefix+id] == 0 {
				missing++
			}
		}
		ch := c.changed
		c.mu.Unlock()
		if missing == 0 {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}
