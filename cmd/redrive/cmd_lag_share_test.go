package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// shareCluster is a kfake cluster whose topic "orders" (one partition)
// holds n records, all taken by a member of the share group "billing",
// which finished the first done: share lag n − done. The member stays,
// holding the rest (closed when t ends), and is returned with them.
func shareCluster(t *testing.T, n, done int) ([]string, *kgo.Client, []*kgo.Record) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	c.SetGroupConfigs("billing", map[string]string{"share.auto.offset.reset": "earliest"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	sc, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ShareGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ClientID("billing-1"), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	var took []*kgo.Record
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for len(took) < n && ctx.Err() == nil {
		sc.PollRecords(ctx, 0).EachRecord(func(r *kgo.Record) { took = append(took, r) })
	}
	for _, r := range took[:done] {
		r.Ack(kgo.AckAccept)
	}
	if err := sc.FlushAcks(ctx); err != nil || len(took) != n {
		t.Fatalf("took %d records, flush %v", len(took), err)
	}
	return c.ListenAddrs(), sc, took[done:]
}

// TestLagKafkaShare: `redrive lag` and the exporter measure a worker of
// retry mode share from its share group's offsets (the records it has not
// finished, held ones included), under the worker's name, with its
// level; the partition rows show the share-partition start offset (the
// first record not finished). Its retry topic's consumer group, which no
// worker started yet, is no error.
func TestLagKafkaShare(t *testing.T) {
	clearEnv(t)
	addrs, _, _ := shareCluster(t, 6, 4)
	path := writeConfig(t, fmt.Sprintf(`
broker: kafka
kafka: {brokers: [%q]}
redis: {addr: %q}
workers: [{name: billing, topic: orders, retry: {mode: share}}]
lag: {thresholds: {orders: {warning: 1, critical: 50}}}
`, strings.Join(addrs, ","), testenv.Redis.URL()))
	code, out, errOut := cli(t, "lag", "--config", path)
	row := fields(out, "billing ")
	// GROUP TOPIC PARTITIONS MEMBERS LAG LAG-AGE LEVEL STATUS REASON
	if code != exitOK || len(row) < 8 || row[1] != "orders" || row[2] != "1" || row[3] != "1" || row[4] != "2" || row[6] != "WARNING" {
		t.Fatalf("lag: %d, row %v\n%s%s", code, row, out, errOut)
	}
	code, out, _ = cli(t, "lag", "--partitions", "--config", path)
	// GROUP TOPIC PARTITION COMMITTED END LAG LAG-AGE MEMBER …
	if p := fields(out, "billing  orders  0 "); code != exitOK || len(p) < 8 || p[3] != "4" || p[4] != "6" || p[5] != "2" || p[7] != "billing-1" || strings.Contains(out, "not measured") {
		t.Errorf("lag --partitions: %d, row %v\n%s", code, p, out)
	}

	addr := testenv.ClosedAddr(t)
	d := startDaemon(t, "exporter", "--config", path, "--listen", addr, "--sample-interval", "100ms")
	base := "http://" + addr
	eventually(t, "the exporter is ready", func() bool {
		if _, done := d.exited(); done {
			t.Fatalf("exporter exited:\n%s", d.stderr)
		}
		code, _ := httpGet(base + "/readyz")
		return code == http.StatusOK
	}, d.stderr.String)
	if v, ok := metricValue(t, base, "kafka_consumer_lag", map[string]string{"group": "billing", "topic": "orders"}); !ok || v != 2 {
		t.Errorf("kafka_consumer_lag{billing,orders} = %v (present %v), want 2", v, ok)
	}
	if code := d.stop(t); code != exitOK {
		t.Errorf("exporter exited %d:\n%s", code, d.stderr)
	}
}
