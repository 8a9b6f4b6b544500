package e2e

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// TestForeignKafka (issue 40): for each retry mode (blocking,
// non_blocking) and each seed (foreignSeeds), records generated as other
// clients produce them (genKafka: no headers, null keys and values,
// repeated, binary and null headers, empty and non-UTF-8 values, deep and
// huge JSON, an old timestamp, a due time of their own) are produced raw
// to a worker's topic and sent down every path: handled, retried (in
// place or through the retry topic), handed back, delayed, expired,
// dead-lettered, kept, listed and replayed. Counted: published = handled +
// dead-lettered (nothing is parked on Kafka), each entry replayed and
// handled once; the handler, the store and the replay see the key, the
// value and the headers (order and repeated names in the store) as a
// plain consumer of the topic reads them.
func TestForeignKafka(t *testing.T) {
	seeds := foreignSeeds(t)
	brokers := kafkatest.Cluster(t)
	for _, mode := range []broker.RetryMode{broker.Blocking, broker.NonBlocking} {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed=%d", mode, seed), func(t *testing.T) { foreignKafka(t, brokers, mode, seed) })
		}
	}
}

// kafkaView is the handler's string view of a record's headers: each
// name's last value, redrive's own aside.
func kafkaView(hs []kgo.RecordHeader) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		if !wire.Own(h.Key) {
			out[h.Key] = string(h.Value)
		}
	}
	return out
}

// lastHeader returns the value of the last header named name.
func lastHeader(hs []kgo.RecordHeader, name string) string {
	v := ""
	for _, h := range hs {
		if h.Key == name {
			v = string(h.Value)
		}
	}
	return v
}

func foreignKafka(t *testing.T, brokers []string, mode broker.RetryMode, seed int64) {
	ctx := t.Context()
	cases := genKafka(seed, 12)
	env := kafkaEnv(brokers)
	b := env.New(t).(*kafka.Broker)
	topic, group := topicName(t), "foreign"
	sub := broker.Subscription{Topic: topic, Group: group, Concurrency: 4, ShutdownTimeout: 10 * time.Second, RetryMode: mode,
		MaxAge: time.Hour, Policy: retrypolicy.Policy{MaxRetries: 2, Backoff: retrypolicy.Schedule{Delays: []time.Duration{100 * time.Millisecond}}}}
	declare(t, b, sub)
	dlqName := kafka.DLQTopic(topic)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	sent := make([]time.Time, len(cases))
	for i, c := range cases {
		sent[i] = time.Now()
		if err := cl.ProduceSync(ctx, c.rec).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	// How a record is told apart: its fid header, its fid key, or its
	// value (unique among those with neither).
	byFid, byValue := map[string]int{}, map[string]int{}
	for i, c := range cases {
		switch fid := lastHeader(c.rec.Headers, "fid"); {
		case fid != "":
			byFid[fid] = i
		case bytes.HasPrefix(c.rec.Key, []byte("fid-")):
			byFid[string(c.rec.Key)] = i
		default:
			if _, dup := byValue[string(c.rec.Value)]; dup {
				t.Fatalf("seed %d: records %d and %d cannot be told apart", seed, byValue[string(c.rec.Value)], i)
			}
			byValue[string(c.rec.Value)] = i
		}
	}
	which := func(fid string, key, value []byte) (int, bool) {
		if i, ok := byFid[fid]; ok {
			return i, true
		}
		if i, ok := byFid[string(key)]; ok && bytes.HasPrefix(key, []byte("fid-")) {
			return i, true
		}
		i, ok := byValue[string(value)]
		return i, ok
	}
	// The reference: the records as a plain consumer of the topic reads them.
	ref := make([]*kgo.Record, len(cases))
	for _, r := range readTopic(t, brokers, topic, len(cases), nil) {
		if i, ok := which(lastHeader(r.Headers, "fid"), r.Key, r.Value); ok {
			ref[i] = r
		}
	}
	msgs := make([]foreignMsg, len(cases))
	for i, c := range cases {
		if ref[i] == nil {
			t.Fatalf("seed %d: record %d not read back from %s", seed, i, topic)
		}
		msgs[i] = foreignMsg{fate: c.fate, body: ref[i].Value, view: kafkaView(ref[i].Headers), sent: sent[i]}
	}
	fr := newForeignRun(msgs, func(d *broker.Delivery) (int, bool) {
		i, ok := which(d.Header("fid"), d.Key, d.Value)
		if ok && !bytes.Equal(d.Key, ref[i].Key) {
			t.Errorf("record %d (%s): key %q, want %q", i, cases[i].fate, d.Key, ref[i].Key)
		}
		return i, ok
	})

	s := &suite{env: env}
	st := newCounting(s.store(t, testenv.PostgreSQL.URL(), ""))
	stored, refused := fr.drive(t, s, b, st, sub, dlqName,
		func(e dlq.Entry) (int, bool) {
			var fid string
			if f, err := wire.Decode(e.OriginalWire); err == nil {
				if v, ok := f.Headers.Get("fid"); ok {
					b, _ := v.([]byte)
					fid = string(b)
				}
			}
			return which(fid, e.OriginalKey, e.OriginalValue)
		},
		func(i int, e dlq.Entry) {
			what := fmt.Sprintf("record %d (%s): kept", i, cases[i].fate)
			checkKafkaEntry(t, what, ref[i], e)
			if e.OriginalTopic != topic {
				t.Errorf("%s with topic %q, want %q", what, e.OriginalTopic, topic)
			}
		})
	fr.account(t, seed, stored, 0, refused)
}
