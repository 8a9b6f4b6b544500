package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// On Kafka the dry run compares with the cluster too: every topic to
// create, then, once applied, every topic kept.
func TestTopologyDryRunKafka(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	path := writeConfig(t, fmt.Sprintf("broker: kafka\nkafka: {brokers: [%q], partitions: 2}\nworkers: [{name: billing, topic: orders}]\n", cluster.ListenAddrs()[0]))
	code, out, errOut := cli(t, "topology", "apply", "--dry-run", "--config", path)
	for _, want := range []string{"create   topic orders (topic) partitions 2", "create   topic orders.dlq (dlq) partitions 2", "create   topic orders.retry.billing (retry)", "# dry run: 3 declarations"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("dry run on a fresh cluster: exit %d, output lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
	if code, out, errOut := cli(t, "topology", "apply", "--config", path); code != exitOK {
		t.Fatalf("apply: %d %s%s", code, out, errOut)
	}
	code, out, errOut = cli(t, "topology", "apply", "--dry-run", "--config", path)
	if code != exitOK || strings.Count(out, "keep     topic ") != 3 || strings.Contains(out, "create ") {
		t.Errorf("dry run after apply: exit %d, want 3 kept topics:\n%s%s", code, out, errOut)
	}
}
