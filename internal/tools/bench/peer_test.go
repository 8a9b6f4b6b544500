package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestRunPeersTiny builds the peers module and runs every peer scenario
// with a few hundred messages against the real RabbitMQ and an in-process
// kfake cluster: each peer row is there with its figures (the peer checks
// its own count, the bench what it left on the broker), and each redrive
// row is compared with its fastest peer. It never asserts a timing.
func TestRunPeersTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the peers module; talks to RabbitMQ and kfake")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		Scenarios:     PeerScenarios,
		Messages:      300,
		KafkaMessages: 400, // Kafka consume, retry and dlq: redrive, raw and the peers
		Batch:         20,
		Concurrency:   4,
		RabbitURL:     testenv.RabbitMQ.URL(),
		Peers:         true,
		Timeout:       2 * time.Minute,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	type key struct{ scenario, broker, client string }
	got := map[key]Row{}
	for _, r := range rep.Rows {
		got[key{r.Scenario, r.Broker, r.Client}] = r
	}
	for _, s := range PeerScenarios {
		peers := []key{{s, RabbitMQ, ClientWatermillAMQP}, {s, Kafka, ClientWatermillKafka}}
		if s == ScenarioPublish || s == ScenarioConsume {
			peers = append(peers, key{s, Kafka, ClientKafkaGo})
		}
		for _, k := range peers {
			r, ok := got[k]
			n := 300
			if k.broker == Kafka && s != ScenarioPublish {
				n = 400
			}
			switch {
			case !ok:
				t.Errorf("no row %v", k)
			case r.Messages != n || r.Rate <= 0 || r.AllocsPerMsg <= 0 || r.Note == "":
				t.Errorf("%v: %+v", k, r)
			case cpuMeasured && r.CPUPerMsg <= 0:
				t.Errorf("%v: %s CPU/msg", k, r.CPUPerMsg)
			case s == ScenarioPublish && (r.P50 <= 0 || r.P99 < r.P50):
				t.Errorf("%v: p50 %s p99 %s", k, r.P50, r.P99)
			}
		}
		for _, b := range AllBrokers {
			rd, ok := got[key{s, b, ClientRedrive}]
			if !ok || rd.BestPeer == "" || rd.VsPeer <= 0 {
				t.Errorf("%s %s redrive: not compared with a peer: %+v", s, b, rd)
			}
		}
	}
	// Where a peer's guarantee is weaker than redrive's, its row says so.
	for _, k := range []key{{ScenarioRetry, RabbitMQ, ClientWatermillAMQP}, {ScenarioPublish, Kafka, ClientKafkaGo}} {
		if !strings.Contains(got[k].Note, "weaker") {
			t.Errorf("%v: note does not say its guarantee is weaker: %q", k, got[k].Note)
		}
	}
	if _, ok := got[key{ScenarioRetry, Kafka, ClientKafkaGo}]; ok {
		t.Error("kafka-go measured on retry: it has no retry facility")
	}
	var buf bytes.Buffer
	if err := rep.Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "| vs best peer |") || !strings.Contains(buf.String(), "(vs watermill-amqp)") {
		t.Errorf("table without peers:\n%s", buf.String())
	}
	t.Logf("\n%s", buf.String())
}

func TestComparePeers(t *testing.T) {
	rows := []Row{
		{Scenario: ScenarioPublish, Broker: Kafka, Client: ClientRaw, Rate: 1000},
		{Scenario: ScenarioPublish, Broker: Kafka, Client: ClientRedrive, Rate: 600},
		{Scenario: ScenarioPublish, Broker: Kafka, Client: ClientWatermillKafka, Rate: 200},
		{Scenario: ScenarioPublish, Broker: Kafka, Client: ClientKafkaGo, Rate: 300},
		{Scenario: ScenarioPublish, Broker: RabbitMQ, Client: ClientRedrive, Rate: 100},
		{Scenario: ScenarioConsume, Broker: RabbitMQ, Client: ClientRedrive, Rate: 100},
		{Scenario: ScenarioConsume, Broker: RabbitMQ, Client: ClientWatermillAMQP, Rate: 400},
		{Scenario: ScenarioDelay, Broker: RabbitMQ, Client: ClientRedrive},
	}
	comparePeers(rows)
	for i, want := range []struct {
		vs   float64
		peer string
	}{{}, {2, ClientKafkaGo}, {}, {}, {}, {0.25, ClientWatermillAMQP}, {}, {}} {
		if rows[i].VsPeer != want.vs || rows[i].BestPeer != want.peer {
			t.Errorf("row %d (%s %s %s): %.2f vs %q, want %.2f vs %q", i, rows[i].Scenario, rows[i].Broker, rows[i].Client,
				rows[i].VsPeer, rows[i].BestPeer, want.vs, want.peer)
		}
	}
}

func TestCheckCount(t *testing.T) {
	if note, err := checkCount("q", 5, 5); note != "" || err != nil {
		t.Errorf("equal: %q, %v", note, err)
	}
	if _, err := checkCount("q", 4, 5); err == nil || !strings.Contains(err.Error(), "1 lost") {
		t.Errorf("fewer: %v", err)
	}
	if note, err := checkCount("q", 7, 5); err != nil || !strings.Contains(note, "2 duplicates in q") {
		t.Errorf("more: %q, %v", note, err)
	}
	if poisonWant(ScenarioDLQ, 300) != 3 || poisonWant(ScenarioDLQ, 301) != 4 || poisonWant(ScenarioRetry, 300) != 0 {
		t.Error("poisonWant")
	}
}
