package bench_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/internal/tools/bench"
)

// TestKeeperScenario runs the keeper scenario at a small size on both
// brokers (RabbitMQ, an in-process kfake cluster; PostgreSQL): Run fails
// unless the keeper's store holds each dead letter once and its DLQ holds
// nothing after, so a nil error is the count check; each side drained the
// same number, the keeper row is compared with the raw one, and the
// keeper's schema is gone after. It never asserts a timing.
func TestKeeperScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("talks to RabbitMQ, kfake and PostgreSQL")
	}
	const n = 300
	before := benchSchemas(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Config{
		Scenarios:      []string{bench.ScenarioKeeper},
		KeeperMessages: n,
		Concurrency:    4,
		RabbitURL:      testenv.RabbitMQ.URL(),
		DatabaseURL:    testenv.PostgreSQL.URL(),
		Timeout:        time.Minute,
		Logger:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	type key struct{ broker, client string }
	got := map[key]bench.Row{}
	for _, r := range rep.Rows {
		if r.Scenario != bench.ScenarioKeeper {
			t.Errorf("row of scenario %q", r.Scenario)
		}
		got[key{r.Broker, r.Client}] = r
	}
	for _, b := range bench.AllBrokers {
		for _, c := range []string{bench.ClientRaw, bench.ClientRedrive} {
			r, ok := got[key{b, c}]
			switch {
			case !ok:
				t.Errorf("%s %s: no row", b, c)
			case r.Messages != n:
				t.Errorf("%s %s: %d messages, want %d", b, c, r.Messages, n)
			case r.Rate <= 0:
				t.Errorf("%s %s: rate %.1f", b, c, r.Rate)
			case c == bench.ClientRedrive && (r.Ratio <= 0 || r.Baseline != bench.ClientRaw || !strings.Contains(r.Target, "0.90")):
				t.Errorf("%s keeper: ratio %.2f vs %q, target %q; want compared with the raw drain at 0.9", b, r.Ratio, r.Baseline, r.Target)
			}
		}
	}
	if len(rep.Rows) != 4 {
		t.Errorf("%d rows, want 4", len(rep.Rows))
	}
	if after := benchSchemas(t); after > before {
		t.Errorf("%d bench schemas after the run, %d before: the keeper's schema was not dropped", after, before)
	}
	var buf bytes.Buffer
	if err := rep.Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
}
