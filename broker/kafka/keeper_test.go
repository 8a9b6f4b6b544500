package kafka_test

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// produceRaw writes records as a foreign producer would.
func produceRaw(t testing.TB, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func TestConsumeDeadLetters(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "payer"}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	dlqTopic := kafka.DLQTopic(topic)
	// One redrive dead letter, made by a consumer.
	testenv.Consume(t, b, sub, newRecorder().handler(1, func(*broker.Delivery) error { return broker.Permanent(errors.New("no")) }))
	if err := b.Publish(t.Context(), topic, msg("ours", "k")); err != nil {
		t.Fatal(err)
	}
	kafkatest.DeadLetters(t.Context(), t, brokers, topic, "payer", 1, 0)
	// A Spring Kafka dead letter and a record that is nothing known, on the
	// same partition as each other.
	part := make([]byte, 4)
	binary.BigEndian.PutUint32(part, 7)
	produceRaw(t, brokers,
		&kgo.Record{Topic: dlqTopic, Key: []byte("x"), Value: []byte("spring payload"), Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-original-partition", Value: part},
			{Key: "kafka_dlt-exception-message", Value: []byte("NPE")},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("spring-app")},
		}},
		&kgo.Record{Topic: dlqTopic, Key: []byte("x"), Value: []byte("\x00 not json")},
	)

	var mu sync.Mutex
	got := map[string]driver.DeadLetter{}
	fails := map[string]int{}
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		stopped <- b.ConsumeDeadLetters(ctx, []string{dlqTopic}, func(_ context.Context, dl driver.DeadLetter) error {
			mu.Lock()
			defer mu.Unlock()
			// The store is down for the first two offers of each record.
			if fails[dl.Identity]++; fails[dl.Identity] <= 2 {
				return errors.New("store unavailable")
			}
			if _, dup := got[dl.Identity]; !dup {
				got[dl.Identity] = dl
				if len(got) == 3 {
					close(done)
				}
			}
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("keeper got %d dead letters, want 3", len(got))
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatalf("ConsumeDeadLetters = %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	var ours, spring, raw *driver.DeadLetter
	for _, dl := range got {
		if dl.DLQ != dlqTopic {
			t.Errorf("dead letter from %q, want %q", dl.DLQ, dlqTopic)
		}
		if want := dl.ID + "@"; len(dl.Identity) <= len(want) || dl.Identity[:len(want)] != want {
			t.Errorf("identity %q does not extend the id %q with the record time", dl.Identity, dl.ID)
		}
		switch {
		case dl.Entry.MessageID == "ours":
			ours = &dl
		case dl.Entry.Reason == "spring_dlt":
			spring = &dl
		case dl.Entry.Reason == string(driver.ReasonUnparseable):
			raw = &dl
		}
	}
	if ours == nil || spring == nil || raw == nil {
		t.Fatalf("dead letters = %+v, want ours, a Spring one and a raw one", got)
	}
	if e := ours.Entry; e.Worker != "payer" || e.Reason != string(driver.ReasonPermanent) || e.OriginalTopic != topic {
		t.Errorf("our entry = %+v", e)
	}
	if e := spring.Entry; e.OriginalTopic != "orders" || e.OriginalPartition != 7 || e.ErrorMessage != "NPE" ||
		e.Worker != "spring-app" || string(e.OriginalValue) != "spring payload" {
		t.Errorf("Spring entry = %+v", e)
	}
	if e := raw.Entry; string(e.OriginalValue) != "\x00 not json" || e.OriginalTopic != topic {
		t.Errorf("raw entry = %+v", e)
	}
	for id, n := range fails {
		if n != 3 {
			t.Errorf("dead letter %s offered %d times, want 3 (two refusals, one success)", id, n)
		}
	}
	if raw.Entry.OriginalPartition != -1 || raw.Entry.OriginalOffset != -1 {
		t.Errorf("raw entry locates %d@%d, want -1@-1", raw.Entry.OriginalPartition, raw.Entry.OriginalOffset)
	}
	// Everything kept is committed, up to each partition's end.
	ends, err := admin(t, brokers).ListEndOffsets(t.Context(), dlqTopic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		committed := kafkatest.Committed(t.Context(), t, brokers, kafka.DefaultKeeperGroup, dlqTopic, o.Partition)
		if o.Offset > 0 && committed != o.Offset {
			t.Errorf("keeper committed %s/%d at %d, want its end %d", dlqTopic, o.Partition, committed, o.Offset)
		}
	})
}

func TestRepublishReachesOnlyTheFailingGroup(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	failing, healthy := broker.Subscription{Topic: topic, Group: "failing"}, broker.Subscription{Topic: topic, Group: "healthy"}
	if err := b.Declare(t.Context(), failing, healthy); err != nil {
		t.Fatal(err)
	}
	recF, recH := newRecorder(), newRecorder()
	testenv.Consume(t, b, failing, recF.handler(1, func(d *broker.Delivery) error {
		if d.Headers[broker.HeaderReplayedFrom] == "" {
			return broker.Permanent(errors.New("first life fails"))
		}
		return nil
	}))
	testenv.Consume(t, b, healthy, recH.handler(1, nil))
	m := broker.Message{ID: "m", Key: []byte{0x00, 0xff}, Value: []byte("{\n \"a\": 1\n}"), Headers: map[string]string{"tenant": "acme"}}
	if err := b.Publish(t.Context(), topic, m); err != nil {
		t.Fatal(err)
	}
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, "failing", 1, 0)
	from := dlq.ReplayedFrom(kafka.DLQTopic(topic), kafka.RecordID(dls[0].Record.Partition, dls[0].Record.Offset))
	if err := b.Republish(t.Context(), dls[0].Entry, kafka.Route(topic, "failing"), from); err != nil {
		t.Fatalf("Republish: %v", err)
	}
	got := recF.WaitUntil(t, 30*time.Second, "the replay", func(c []call) bool { return successes(c)["m"] == 1 })
	r := callsOf(got, "m")[1]
	if string(r.d.Key) != string(m.Key) || string(r.d.Value) != string(m.Value) || r.d.Headers["tenant"] != "acme" ||
		r.d.Attempt != 1 || r.d.Headers[broker.HeaderReplayedFrom] != from || r.d.Topic != topic || r.d.Source != kafka.RetryTopic(topic, "failing") {
		t.Errorf("replay = key %q value %q headers %v attempt %d source %s", r.d.Key, r.d.Value, r.d.Headers, r.d.Attempt, r.d.Source)
	}
	// A route whose retry topic does not exist (a worker never declared)
	// is an error: nothing goes to the topic, which every group reads.
	before := kafkatest.EndOffsets(t.Context(), t, brokers, topic)
	err := b.Republish(t.Context(), dls[0].Entry, kafka.Route(topic, "never-ran"), from)
	if err == nil || !strings.Contains(err.Error(), kafka.RetryTopic(topic, "never-ran")) {
		t.Fatalf("Republish to a missing retry topic = %v, want an error naming it", err)
	}
	if after := kafkatest.EndOffsets(t.Context(), t, brokers, topic); !maps.Equal(after, before) {
		t.Errorf("end offsets of %s went from %v to %v", topic, before, after)
	}
	if h := recH.Snapshot(); len(h) != 1 || h[0].d.Headers[broker.HeaderReplayedFrom] != "" {
		t.Errorf("healthy group calls = %d, want the original only", len(h))
	}
}

// TestConsumeDeadLetterBatches: a backlog of dead letters comes in
// batches; the one the handler refuses twice is offered again alone (the
// others of its batch are not), and everything ends committed. Counted:
// each dead letter accepted once.
func TestConsumeDeadLetterBatches(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	dlqTopic := kafka.DLQTopic(topicName(t))
	const n = 300
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: dlqTopic, Partition: 0, Value: []byte("raw")}
	}
	if _, err := admin(t, brokers).CreateTopic(t.Context(), 1, 1, nil, dlqTopic); err != nil {
		t.Fatal(err)
	}
	produceRaw(t, brokers, recs...)

	var (
		mu       sync.Mutex
		accepted = map[string]int{}
		offers   = map[string]int{}
		largest  int
		done     = make(chan struct{})
	)
	const bad = "0-57"
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		stopped <- b.ConsumeDeadLetterBatches(ctx, []string{dlqTopic}, func(_ context.Context, dls []driver.DeadLetter) []error {
			mu.Lock()
			defer mu.Unlock()
			largest = max(largest, len(dls))
			errs := make([]error, len(dls))
			for i, dl := range dls {
				if offers[dl.ID]++; dl.ID == bad && offers[dl.ID] <= 2 {
					errs[i] = errors.New("refused")
					continue
				}
				if accepted[dl.ID]++; len(accepted) == n && accepted[dl.ID] == 1 {
					close(done)
				}
			}
			return errs
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("keeper accepted %d dead letters, want %d", len(accepted), n)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatalf("ConsumeDeadLetterBatches = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, c := range accepted {
		if c != 1 || (id != bad && offers[id] != 1) {
			t.Errorf("dead letter %s accepted %d times, offered %d; want once, offered once", id, c, offers[id])
		}
	}
	if offers[bad] != 3 {
		t.Errorf("refused dead letter offered %d times, want 3", offers[bad])
	}
	if largest < 2 {
		t.Errorf("largest batch %d: the backlog was handed one at a time", largest)
	}
	if c := kafkatest.Committed(t.Context(), t, brokers, kafka.DefaultKeeperGroup, dlqTopic, 0); c != n {
		t.Errorf("committed %d, want %d", c, n)
	}
}
