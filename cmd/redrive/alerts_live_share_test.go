package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestAlertsLiveShareLag runs the lag alerts of configs/prometheus/alerts.yml
// (only `for:` shortened) in a real Prometheus scraping `redrive exporter`
// for a worker of retry mode share, whose share group holds records it
// does not finish: the share group's lag above the topic's critical
// threshold fires ConsumerLagCritical, its share-partition start offset
// not moving fires ConsumerStalled (a member holds records and finishes
// none), both named by the worker and its topic as for a consumer group;
// once the member finishes them, both resolve.
func TestAlertsLiveShareLag(t *testing.T) {
	clearEnv(t)
	addrs, member, held := shareCluster(t, 8, 2)
	metrics := testenv.ClosedAddr(t)
	path := writeConfig(t, fmt.Sprintf(`
broker: kafka
kafka: {brokers: [%q]}
redis: {addr: %q}
workers: [{name: billing, topic: orders, retry: {mode: share}}]
lag: {thresholds: {orders: {warning: 2, critical: 5}}}
exporter: {listen: %q}
`, strings.Join(addrs, ","), testenv.Redis.URL(), metrics))
	d := startDaemon(t, "exporter", "--config", path, "--sample-interval", "300ms")
	eventually(t, "the exporter is ready", func() bool {
		if _, done := d.exited(); done {
			t.Fatalf("exporter exited:\n%s", d.stderr)
		}
		code, _ := httpGet("http://" + metrics + "/readyz")
		return code == http.StatusOK
	}, d.stderr.String)
	prom := startPrometheus(t, metrics)
	match := map[string]string{"group": "billing", "topic": "orders"}
	prom.waitAlert(t, "ConsumerLagCritical", match)
	prom.waitAlert(t, "ConsumerStalled", map[string]string{"group": "billing", "topic": "orders", "status": "stall"})

	for _, r := range held {
		r.Ack(kgo.AckAccept)
	}
	if err := member.FlushAcks(t.Context()); err != nil {
		t.Fatal(err)
	}
	prom.waitResolved(t, "ConsumerLagCritical", match)
	prom.waitResolved(t, "ConsumerStalled", match)
}
