package exporter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/internal/assembly/exporter"
	"github.com/redrive/redrive/lag"
)

// Kafka lag on a kfake cluster: a group 5 records behind with no member
// is exported with its value, and reads DEGRADED (level WARNING).
func TestKafkaLag(t *testing.T) {
	const topic = "orders"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := context.Background()
	for i := range 7 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	var offs kadm.Offsets
	offs.AddOffset(topic, 0, 2, -1)
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, "billing", offs); err != nil {
		t.Fatalf("commit: %v", err)
	}

	k, err := kafka.NewLagMonitor(cl, kafka.LagConfig{Groups: []string{"billing"}})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lag.NewTracker(lag.TrackerConfig{Thresholds: lag.Thresholds{topic: {Warning: 3, Critical: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := lag.NewSampler(lag.SamplerConfig{Monitor: k, Source: kafka.Name, Tracker: tr, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := exporter.New(exporter.Config{Broker: "kafka", Lag: s, Logger: quiet(),
		Groups: []exporter.Group{{Group: "billing", Topic: topic}}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	if err := s.Sample(ctx); err != nil {
		t.Fatalf("sample: %v", err)
	}

	fams := scrape(t, ts.URL)
	wantValue(t, fams, lag.MetricKafkaLag, map[string]string{"group": "billing", "topic": topic}, 5)
	wantValue(t, fams, lag.MetricKafkaLagPartition, map[string]string{"group": "billing", "topic": topic, "partition": "0"}, 5)
	wantValue(t, fams, lag.MetricUp, map[string]string{"source": "kafka"}, 1)

	code, h := health(t, ts.URL)
	g := group(t, h, "billing")
	if code != http.StatusOK || h.Status != exporter.StatusDegraded || g.Topic != topic || g.Lag != 5 || g.Level != "WARNING" || g.Health != exporter.StatusDegraded {
		t.Fatalf("/healthz = %d %s, group %+v; want 200 DEGRADED, billing/orders lag 5 WARNING", code, h.Status, g)
	}
	if h.Components.Broker.Status != exporter.StatusUp || h.Components.Broker.Broker != "kafka" {
		t.Errorf("broker component = %+v, want kafka UP", h.Components.Broker)
	}
	if code, body := get(t, ts.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d %s, want 200", code, body)
	}
}
