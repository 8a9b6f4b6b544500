package kafka_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
)

// The topics of Config.ForeignDLQs are read as their format says: Spring
// Kafka's headers on a spring topic, Kafka Connect's on a connect topic,
// either on an auto one; anything else (the other tool's headers, a value
// that happens to be a redrive envelope) is kept raw, never dropped, and
// never read as an envelope.
func TestConsumeForeignDeadLetters(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	base := topicName(t)
	springT, connectT, autoT := base+".spring", base+".connect", base+".auto"
	b := kafkatest.New(t, brokers, func(c *kafka.Config) {
		c.ForeignDLQs = map[string]kafka.ForeignFormat{springT: kafka.FormatSpring, connectT: kafka.FormatConnect, autoT: kafka.FormatAuto}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopics(t.Context(), 1, 1, nil, springT, connectT, autoT); err != nil {
		t.Fatal(err)
	}
	spring := []kgo.RecordHeader{{Key: "app", Value: []byte("1")},
		{Key: "kafka_dlt-original-topic", Value: []byte("orders")}, {Key: "kafka_dlt-exception-fqcn", Value: []byte("java.lang.IllegalStateException")}}
	connect := []kgo.RecordHeader{{Key: "app", Value: []byte("1")},
		{Key: "__connect.errors.topic", Value: []byte("events")}, {Key: "__connect.errors.exception.class.name", Value: []byte("DataException")}}
	env, err := kafka.EncodeEnvelope(driver.Entry{OriginalTopic: "x", Reason: "permanent", Worker: "w", OriginalValue: []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ reason, class, msg string }
	wants := map[string]want{ // by key
		"s-spring":   {"spring_dlt", "java.lang.IllegalStateException", ""},
		"s-connect":  {"unparseable", "", "no Spring Kafka (kafka_dlt-*) dead-letter headers"},
		"s-envelope": {"unparseable", "", "no Spring Kafka (kafka_dlt-*) dead-letter headers"},
		"c-connect":  {"connect_error", "DataException", ""},
		"c-spring":   {"unparseable", "", "no Kafka Connect (__connect.errors.*) dead-letter headers"},
		"a-spring":   {"spring_dlt", "java.lang.IllegalStateException", ""},
		"a-connect":  {"connect_error", "DataException", ""},
	}
	produceRaw(t, brokers,
		&kgo.Record{Topic: springT, Key: []byte("s-spring"), Headers: spring},
		&kgo.Record{Topic: springT, Key: []byte("s-connect"), Headers: connect},
		&kgo.Record{Topic: springT, Key: []byte("s-envelope"), Value: env},
		&kgo.Record{Topic: connectT, Key: []byte("c-connect"), Headers: connect},
		&kgo.Record{Topic: connectT, Key: []byte("c-spring"), Headers: spring},
		&kgo.Record{Topic: autoT, Key: []byte("a-spring"), Headers: spring},
		&kgo.Record{Topic: autoT, Key: []byte("a-connect"), Headers: connect},
	)

	var mu sync.Mutex
	got := map[string]driver.DeadLetter{}
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() {
		stopped <- b.ConsumeDeadLetters(ctx, []string{springT, connectT, autoT}, func(_ context.Context, dl driver.DeadLetter) error {
			mu.Lock()
			defer mu.Unlock()
			got[string(dl.Entry.OriginalKey)] = dl
			if len(got) == len(wants) {
				close(done)
			}
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("keeper got %d dead letters, want %d", len(got), len(wants))
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatalf("ConsumeDeadLetters = %v", err)
	}
	for key, w := range wants {
		e := got[key].Entry
		if e.Reason != w.reason || e.ErrorClass != w.class || !strings.Contains(e.ErrorMessage, w.msg) {
			t.Errorf("%s: reason %q class %q message %q; want %+v", key, e.Reason, e.ErrorClass, e.ErrorMessage, w)
		}
		if w.reason == "unparseable" && (e.OriginalTopic != "" || e.Worker != "") {
			t.Errorf("%s: a raw foreign dead letter claims topic %q, worker %q", key, e.OriginalTopic, e.Worker)
		}
		if w.reason != "unparseable" && (len(e.OriginalHeaders) != 1 || e.OriginalHeaders["app"] != "1") {
			t.Errorf("%s: headers %v, want the record's own only", key, e.OriginalHeaders)
		}
	}
	if e := got["s-envelope"].Entry; string(e.OriginalValue) != string(env) {
		t.Errorf("an envelope on a foreign topic was decoded: value %q", e.OriginalValue)
	}
}
