package kafka_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
)

func admin(t testing.TB, brokers []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func retentionOf(t testing.TB, adm *kadm.Client, topic string) string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatalf("describe %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatalf("describe %s: %v", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == kafka.ConfigRetention && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

func TestDeclareCreatesTopics(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	adm := admin(t, brokers)
	topicA, topicB := topicName(t)+".a", topicName(t)+".b"
	subs := []broker.Subscription{
		{Topic: topicA, Group: "blocking"},
		{Topic: topicA, Group: "nb", RetryMode: broker.NonBlocking, DLQ: broker.DLQOptions{Retention: 48 * time.Hour}},
		{Topic: topicB, Group: "keep", DLQ: broker.DLQOptions{Retention: broker.Forever}},
	}
	for range 2 { // idempotent
		if err := b.Declare(t.Context(), subs...); err != nil {
			t.Fatalf("Declare: %v", err)
		}
	}
	details, err := adm.ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{topicA, kafka.DLQTopic(topicA), kafka.RetryTopic(topicA, "nb"), kafka.RetryTopic(topicA, "blocking"),
		topicB, kafka.DLQTopic(topicB), kafka.RetryTopic(topicB, "keep")} {
		d, ok := details[name]
		if !ok || d.Err != nil {
			t.Errorf("topic %s missing after Declare", name)
			continue
		}
		if len(d.Partitions) != 3 {
			t.Errorf("topic %s has %d partitions, want 3", name, len(d.Partitions))
		}
	}
	if details.Has(kafka.RetryTopic(topicB, "blocking")) {
		t.Errorf("Declare created a retry topic for a group of another topic")
	}
	// The DLQ shared by two groups keeps the longest retention: the
	// default 30 days beats 48 hours.
	if got, want := retentionOf(t, adm, kafka.DLQTopic(topicA)), strconv.FormatInt((30*24*time.Hour).Milliseconds(), 10); got != want {
		t.Errorf("%s retention.ms = %s, want %s", kafka.DLQTopic(topicA), got, want)
	}
	if got := retentionOf(t, adm, kafka.DLQTopic(topicB)); got != "-1" {
		t.Errorf("%s retention.ms = %s, want -1 (forever)", kafka.DLQTopic(topicB), got)
	}
	if err := b.Declare(t.Context(), broker.Subscription{Topic: "", Group: "g"}); err == nil {
		t.Error("Declare accepted a subscription without a topic")
	}
}

func TestPlanAndApply(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	adm := admin(t, brokers)
	topic := topicName(t)
	// The main topic exists already, with one partition.
	if _, err := adm.CreateTopic(t.Context(), 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	sub := broker.Subscription{Topic: topic, Group: "g", RetryMode: broker.NonBlocking, DLQ: broker.DLQOptions{Retention: broker.Forever}}

	plans, err := b.Plan(t.Context(), sub)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	byTopic := map[string]kafka.TopicPlan{}
	for _, p := range plans {
		byTopic[p.Topic] = p
	}
	if len(plans) != 3 {
		t.Fatalf("Plan = %+v, want 3 topics", plans)
	}
	if p := byTopic[topic]; p.Action != kafka.ActionKeep || p.CurrentPartitions != 1 || len(p.Notes) != 1 || p.Role != kafka.RoleTopic {
		t.Errorf("plan of %s = %+v, want keep, 1 partition, a note about the partition count", topic, p)
	}
	if p := byTopic[kafka.DLQTopic(topic)]; p.Action != kafka.ActionCreate || p.Configs[kafka.ConfigRetention] != "-1" || p.Partitions != 3 {
		t.Errorf("plan of the DLQ = %+v, want create with 3 partitions and retention.ms -1", p)
	}
	if p := byTopic[kafka.RetryTopic(topic, "g")]; p.Action != kafka.ActionCreate || p.Role != kafka.RoleRetry {
		t.Errorf("plan of the retry topic = %+v, want create", p)
	}
	if details, _ := adm.ListTopics(t.Context(), kafka.DLQTopic(topic)); details.Has(kafka.DLQTopic(topic)) && details[kafka.DLQTopic(topic)].Err == nil {
		t.Fatal("Plan created a topic")
	}

	if _, err := b.Apply(t.Context(), sub); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got := retentionOf(t, adm, kafka.DLQTopic(topic)); got != "-1" {
		t.Errorf("DLQ retention.ms after Apply = %s, want -1", got)
	}
	plans, err = b.Plan(t.Context(), sub)
	if err != nil {
		t.Fatalf("Plan after Apply: %v", err)
	}
	for _, p := range plans {
		if p.Action != kafka.ActionKeep {
			t.Errorf("after Apply, %s plans %s, want keep", p.Topic, p.Action)
		}
	}

	// A new retention is an update.
	sub.DLQ.Retention = 7 * 24 * time.Hour
	plans, err = b.Apply(t.Context(), sub)
	if err != nil {
		t.Fatalf("Apply with a new retention: %v", err)
	}
	updated := false
	for _, p := range plans {
		if p.Topic == kafka.DLQTopic(topic) {
			updated = p.Action == kafka.ActionUpdate && p.CurrentConfigs[kafka.ConfigRetention] == "-1"
		}
	}
	if !updated {
		t.Errorf("Apply plans = %+v, want an update of the DLQ retention from -1", plans)
	}
	if got, want := retentionOf(t, adm, kafka.DLQTopic(topic)), strconv.FormatInt((7*24*time.Hour).Milliseconds(), 10); got != want {
		t.Errorf("DLQ retention.ms after the update = %s, want %s", got, want)
	}
	// The partition count is reported, never changed.
	details, err := adm.ListTopics(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(details[topic].Partitions); n != 1 {
		t.Errorf("%s has %d partitions after Apply, want 1 (unchanged)", topic, n)
	}
}
