package bench

import (
	"bytes"
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// probesRE finds the delay row's count of raw hop probes.
var probesRE = regexp.MustCompile(`\((\d+) probes\)`)

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
		Messages:        200,
		KafkaMessages:   300, // Kafka consume, retry and dlq rounds
		DelayMessages:   200,
		ReplayMessages:  200,
		KeeperMessages:  200,
		RelayMessages:   200,
		DatabaseURL:     testenv.PostgreSQL.URL(),
		Batch:           20,
		Concurrency:     4,
		RabbitURL:       testenv.RabbitMQ.URL(),
		Resolution:      50 * time.Millisecond,
		EffectsMessages: 200,
		// Route mode, 50 ms × 2^k over 6 levels (3.15 s): 6 delay queues.
		DelayFactor: 2,
		DelayLevels: 6,
		DelaySpan:   time.Second,
		RedisAddr:   testenv.Redis.URL(),
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
		{ScenarioRetry, RabbitMQ, ClientRaw}, {ScenarioRetry, RabbitMQ, ClientRedrive}, {ScenarioDLQ, RabbitMQ, ClientRedrive},
		{ScenarioDelay, RabbitMQ, ClientRedrive},
		{ScenarioReplay, RabbitMQ, ClientRaw}, {ScenarioReplay, RabbitMQ, ClientRedrive},
		{ScenarioKeeper, RabbitMQ, ClientRaw}, {ScenarioKeeper, RabbitMQ, ClientRedrive},
		{ScenarioRelay, RabbitMQ, ClientHTTP}, {ScenarioRelay, RabbitMQ, ClientRawHTTP}, {ScenarioRelay, RabbitMQ, ClientRedrive},
		{ScenarioEffects, RabbitMQ, ClientPlainTx}, {ScenarioEffects, RabbitMQ, ClientInbox}, {ScenarioEffects, RabbitMQ, ClientRaw},
		{ScenarioEffects, RabbitMQ, ClientRelay}, {ScenarioEffects, RabbitMQ, ClientRelayByHand}, {ScenarioEffects, RabbitMQ, ClientRelayVsByHand},
		{ScenarioEffects, RabbitMQ, ClientRelayLatency}, {ScenarioEffects, RabbitMQ, ClientRelayPolling},
		{ScenarioPublish, Kafka, ClientRaw}, {ScenarioPublish, Kafka, ClientRawID}, {ScenarioPublish, Kafka, ClientRedrive},
		{ScenarioConsume, Kafka, ClientRaw}, {ScenarioConsume, Kafka, ClientRawHeaders}, {ScenarioConsume, Kafka, ClientRedrive}, {ScenarioConsume, Kafka, ClientOnDemand}, {ScenarioConsume, Kafka, ClientReuse},
		{ScenarioConsume, Kafka, ClientLean},
		{ScenarioRetry, Kafka, ClientRedrive}, {ScenarioDLQ, Kafka, ClientRedrive},
		{ScenarioShare, Kafka, ClientRaw}, {ScenarioShare, Kafka, ClientRawStrict}, {ScenarioShare, Kafka, ClientRedrive}, {ScenarioShare, Kafka, ClientShareAhead}, {ScenarioShare, Kafka, ClientShareRetry}, {ScenarioShare, Kafka, ClientShareDLQ},
		{ScenarioKeeper, Kafka, ClientRaw}, {ScenarioKeeper, Kafka, ClientRedrive},
		{ScenarioRelay, Kafka, ClientHTTP}, {ScenarioRelay, Kafka, ClientRawHTTP}, {ScenarioRelay, Kafka, ClientRedrive},
		{ScenarioEffects, Kafka, ClientPlainTx}, {ScenarioEffects, Kafka, ClientInbox}, {ScenarioEffects, Kafka, ClientRaw},
		{ScenarioEffects, Kafka, ClientRelay}, {ScenarioEffects, Kafka, ClientRelayByHand}, {ScenarioEffects, Kafka, ClientRelayVsByHand},
		{ScenarioEffects, Kafka, ClientRelayLatency}, {ScenarioEffects, Kafka, ClientRelayPolling},
		{ScenarioScrape, Kafka, ClientRedrive}, {ScenarioMonitor, Redis, ClientRedrive},
	}
	wantMessages := map[string]int{ScenarioScrape: 3 * 150, ScenarioMonitor: 200}
	kafkaRounds := map[string]bool{ScenarioConsume: true, ScenarioRetry: true, ScenarioDLQ: true, ScenarioShare: true}
	if len(rep.Rows) != len(want) {
		t.Errorf("%d rows, want %d", len(rep.Rows), len(want))
	}
	for _, k := range want {
		r, ok := got[k]
		n := 200
		switch {
		case wantMessages[k.scenario] != 0:
			n = wantMessages[k.scenario]
		case k.broker == Kafka && kafkaRounds[k.scenario]:
			n = 300 // KafkaMessages
		case k.broker == RabbitMQ && k.scenario == ScenarioConsume:
			n = 67 // a third of 200 a round, rounded up
		case k.scenario == ScenarioRelay:
			n = 40 // a fifth of 200 a round
		case k.scenario == ScenarioEffects && k.client != ClientRelayLatency && k.client != ClientRelayPolling:
			n = 67 // a round of the inbox and relay comparisons
		}
		switch {
		case !ok:
			t.Errorf("no row %v", k)
			continue
		case r.Messages != n:
			t.Errorf("%v: %d messages, want %d", k, r.Messages, n)
		case !(r.AllocsPerMsg > 0) || math.IsInf(r.AllocsPerMsg, 0):
			t.Errorf("%v: %.1f allocs/msg", k, r.AllocsPerMsg)
		case cpuMeasured && r.CPUPerMsg <= 0:
			t.Errorf("%v: %s CPU/msg", k, r.CPUPerMsg)
		case cpuMeasured && (!(r.PerCore() > 0) || math.IsInf(r.PerCore(), 0)):
			t.Errorf("%v: %.1f msg/s per core", k, r.PerCore())
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
			if !strings.Contains(r.Note, "6 levels: 6 delay queues") || !strings.Contains(r.Note, "delays 0–1000ms") {
				t.Errorf("delay: note does not name the queues and span: %s", r.Note)
			}
			// Where the lateness comes from: the raw hop probed beside
			// the run delivered (one probe every 20 ms over ≥ 1 s).
			if m := probesRE.FindStringSubmatch(r.Note); m == nil || m[1] == "0" {
				t.Errorf("delay: note has no raw hop probes: %s", r.Note)
			}
			for _, want := range []string{"lateness from its return p99", "p99 by queues stored", "10ms timer here fired late"} {
				if !strings.Contains(r.Note, want) {
					t.Errorf("delay: note lacks %q: %s", want, r.Note)
				}
			}
			continue
		}
		if r.Rate <= 0 {
			t.Errorf("%v: rate %.1f", k, r.Rate)
		}
		if k.client == ClientRedrive && r.Ratio <= 0 {
			t.Errorf("%v: ratio %.2f", k, r.Ratio)
		}
		if k.scenario == ScenarioRetry && k.broker == RabbitMQ && k.client == ClientRedrive && (!strings.Contains(r.Target, "ideal") || !strings.Contains(r.Note, "× ideal") || !strings.Contains(r.Note, "× raw retry (raw: ")) {
			t.Errorf("rabbitmq retry: not graded against its ideal: target %q note %q", r.Target, r.Note)
		}
		if k.scenario == ScenarioPublish && k.broker == Kafka && k.client == ClientRedrive && !strings.Contains(r.Note, "× raw with the same id header") {
			t.Errorf("kafka publish: note lacks the ratio to the raw producer writing the id header: %s", r.Note)
		}
		if k.scenario == ScenarioConsume && k.broker == Kafka && k.client == ClientRedrive && !strings.Contains(r.Note, "× raw building the same headers map") {
			t.Errorf("kafka consume: note lacks the ratio to the raw consumer building the headers map: %s", r.Note)
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
	if cpuMeasured {
		checkCostColumns(t, out)
	}
	t.Logf("\n%s", out)
}

// checkCostColumns checks that every row of a Markdown table has a
// positive, finite CPU/msg, msg/s per core and allocs/msg cell.
func checkCostColumns(t *testing.T, table string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	cells := func(line string) []string {
		f := strings.Split(strings.Trim(line, "|"), "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		return f
	}
	col := map[string]int{}
	for i, h := range cells(lines[0]) {
		col[h] = i
	}
	for _, name := range []string{"CPU/msg", "msg/s per core", "allocs/msg"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("no %q column: %s", name, lines[0])
		}
	}
	for _, line := range lines[2:] {
		c := cells(line)
		if d, err := time.ParseDuration(c[col["CPU/msg"]]); err != nil || d <= 0 {
			t.Errorf("CPU/msg %q (%v): %s", c[col["CPU/msg"]], err, line)
		}
		for _, name := range []string{"msg/s per core", "allocs/msg"} {
			v, err := strconv.ParseFloat(c[col[name]], 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s %q (%v): %s", name, c[col[name]], err, line)
			}
		}
	}
}

// TestMarkdownCosts renders rows with known costs: CPU/msg in µs, what one
// core handles (1 s / CPU/msg) and allocations per message.
func TestMarkdownCosts(t *testing.T) {
	r := row(ScenarioConsume, RabbitMQ, ClientRaw, 1000, time.Second, usage{cpu: 40 * time.Millisecond, mallocs: 58_500})
	if r.CPUPerMsg != 40*time.Microsecond || r.PerCore() != 25_000 || r.AllocsPerMsg != 58.5 {
		t.Fatalf("row: %s CPU/msg, %.1f per core, %.1f allocs/msg", r.CPUPerMsg, r.PerCore(), r.AllocsPerMsg)
	}
	none := row(ScenarioConsume, RabbitMQ, ClientRedrive, 1000, time.Second, usage{mallocs: 1000})
	if none.PerCore() != 0 {
		t.Errorf("no CPU measured: %.1f per core", none.PerCore())
	}
	var buf bytes.Buffer
	if err := (&Report{Rows: []Row{r}}).Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "| 40.0µs | 25000 | 58.5 |") {
		t.Errorf("costs not rendered:\n%s", buf.String())
	}
	checkCostColumns(t, buf.String())
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{
		{Brokers: []string{"nats"}},
		{Scenarios: []string{"bogus"}},
		{Messages: -1},
		{KeeperMessages: -1},
		{ScrapeGroups: -1},
		{MonitorWorkers: -1},
		{Resolution: 1500 * time.Microsecond},
		{DelaySpan: 1500 * time.Microsecond},
		{DelayFactor: 1},
		{DelayLevels: -1},
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
