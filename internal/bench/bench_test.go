package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testenv"
)

// TestRunTiny runs every scenario with a few hundred messages against the
// real RabbitMQ (RABBITMQ_URL, default local) and an in-process kfake
// cluster, and checks the table has its rows with sane figures. It never
// asserts a timing or a target.
func TestRunTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("talks to RabbitMQ and kfake")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		Messages:       200,
		DelayMessages:  200,
		ReplayMessages: 200,
		Batch:          20,
		Concurrency:    4,
		RabbitURL:      testenv.RabbitMQ.URL(),
		Resolution:     50 * time.Millisecond,
		RedisAddr:      testenv.Redis.URL(),
		// 3 groups on 150 partitions: two topics (100 + 50 partitions).
		ScrapeGroups:     3,
		ScrapePartitions: 150,
		MonitorWorkers:   200,
		Scrapes:          3,
		Timeout:          time.Minute,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	type key struct{ scenario, broker, client string }
	got := map[key]Row{}
	for _, r := range rep.Rows {
		got[key{r.Scenario, r.Broker, r.Client}] = r
	}
	want := []key{
		{ScenarioPublish, RabbitMQ, ClientRaw}, {ScenarioPublish, RabbitMQ, ClientRedrive},
		{ScenarioConsume, RabbitMQ, ClientRaw}, {ScenarioConsume, RabbitMQ, ClientRedrive},
		{ScenarioRetry, RabbitMQ, ClientRedrive}, {ScenarioDLQ, RabbitMQ, ClientRedrive},
		{ScenarioDelay, RabbitMQ, ClientRedrive},
		{ScenarioReplay, RabbitMQ, ClientRaw}, {ScenarioReplay, RabbitMQ, ClientRedrive},
		{ScenarioPublish, Kafka, ClientRaw}, {ScenarioPublish, Kafka, ClientRedrive},
		{ScenarioConsume, Kafka, ClientRaw}, {ScenarioConsume, Kafka, ClientRedrive},
		{ScenarioRetry, Kafka, ClientRedrive}, {ScenarioDLQ, Kafka, ClientRedrive},
		{ScenarioScrape, Kafka, ClientRedrive}, {ScenarioMonitor, Redis, ClientRedrive},
	}
	wantMessages := map[string]int{ScenarioScrape: 3 * 150, ScenarioMonitor: 200}
	if len(rep.Rows) != len(want) {
		t.Errorf("%d rows, want %d", len(rep.Rows), len(want))
	}
	for _, k := range want {
		r, ok := got[k]
		switch {
		case !ok:
			t.Errorf("no row %v", k)
			continue
		case wantMessages[k.scenario] != 0 && r.Messages != wantMessages[k.scenario]:
			t.Errorf("%v: %d messages, want %d", k, r.Messages, wantMessages[k.scenario])
		case wantMessages[k.scenario] == 0 && r.Messages != 200:
			t.Errorf("%v: %d messages, want 200", k, r.Messages)
		case r.AllocsPerMsg <= 0:
			t.Errorf("%v: %.1f allocs/msg", k, r.AllocsPerMsg)
		case cpuMeasured && r.CPUPerMsg <= 0:
			t.Errorf("%v: %s CPU/msg", k, r.CPUPerMsg)
		}
		if k.scenario == ScenarioScrape || k.scenario == ScenarioMonitor {
			// Timed per scrape / check against an absolute target.
			if r.P50 <= 0 || r.P99 < r.P50 || r.Target == "" || r.Note == "" {
				t.Errorf("%v: no latency or target: %+v", k, r)
			}
			continue
		}
		if k.scenario == ScenarioDelay {
			if r.Early != 0 {
				t.Errorf("delay: %d delivered early", r.Early)
			}
			if r.P50 <= 0 && r.Max <= 0 {
				t.Errorf("delay: no lateness measured: %+v", r)
			}
			continue
		}
		if r.Rate <= 0 {
			t.Errorf("%v: rate %.1f", k, r.Rate)
		}
		if k.client == ClientRedrive && r.Ratio <= 0 {
			t.Errorf("%v: ratio %.2f", k, r.Ratio)
		}
	}
	var buf bytes.Buffer
	if err := rep.Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "\n"); n != len(rep.Rows)+2 {
		t.Errorf("table has %d lines, want %d:\n%s", n, len(rep.Rows)+2, out)
	}
	t.Logf("\n%s", out)
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{
		{Brokers: []string{"nats"}},
		{Scenarios: []string{"bogus"}},
		{Messages: -1},
		{ScrapeGroups: -1},
		{MonitorWorkers: -1},
		{Resolution: 1500 * time.Microsecond},
	} {
		if err := c.WithDefaults().Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := (Config{}).WithDefaults().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestPercentile(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(i+1) * time.Millisecond
	}
	if p := percentile(ds, 0.5); p != 50*time.Millisecond {
		t.Errorf("p50 = %s", p)
	}
	if p := percentile(ds, 0.99); p != 99*time.Millisecond {
		t.Errorf("p99 = %s", p)
	}
}
