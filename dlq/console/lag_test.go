package console_test

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/lag"
)

// lagSource stands for the lag sampler of a backend measured by group
// lag: one group lagging and stalled.
type lagSource struct{}

func (lagSource) Groups() bool { return true }
func (lagSource) Depths() bool { return false }

func (lagSource) LastGroups() (lag.GroupReport, error) {
	return lag.GroupReport{At: time.Now(), Topics: []lag.TopicLag{{Group: "billing", Topic: "orders", Partitions: 3, Members: 1, Lag: 42,
		Level: lag.LevelWarning, Status: lag.StatusStall, Reason: "committed offset 7 not moving"}}}, nil
}

func (lagSource) LastDepths() ([]lag.QueueDepth, time.Time, error) { return nil, time.Time{}, nil }

// rabbitLag is a RabbitMQ depth sample of one worker's queues, a delay
// queue and the unroutable queue, none consumed.
type rabbitLag struct{}

func (rabbitLag) Groups() bool                         { return false }
func (rabbitLag) Depths() bool                         { return true }
func (rabbitLag) LastGroups() (lag.GroupReport, error) { return lag.GroupReport{}, nil }

func (rabbitLag) LastDepths() ([]lag.QueueDepth, time.Time, error) {
	return []lag.QueueDepth{
		{Queue: "orders.billing", Exists: true, Messages: 3, Role: lag.RoleGroup},
		{Queue: "orders.billing.dlq", Exists: true, Messages: 1, Consumers: 1, Role: lag.RoleDLQ},
		{Queue: "redrive.route.0.1", Exists: true, Messages: 9, Role: lag.RoleDelay},
		{Queue: "redrive.unroutable", Exists: true, Messages: 2, Role: lag.RoleUnroutable},
		{Queue: "redrive.route.1.1", Exists: false, Role: lag.RoleDelay},
	}, time.Now(), nil
}

// "no consumer" marks only the queues that should have one: a delay
// queue never has a consumer, by design; the unroutable queue holding
// messages reads "parked".
func TestLagPageMarksNoConsumerWhereExpected(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), func(cfg *console.Config) {
		cfg.Broker = "rabbitmq"
		cfg.Lag = rabbitLag{}
	})
	r := f.client().login(viewerToken).get("/lag")
	expect(t, "lag", r, http.StatusOK, "orders.billing")
	for queue, want := range map[string]string{
		"orders.billing":     "no consumer",
		"orders.billing.dlq": "ok",
		"redrive.route.0.1":  "ok",
		"redrive.unroutable": "parked",
		"redrive.route.1.1":  "missing",
	} {
		m := regexp.MustCompile(`(?s)<td class="mono">` + regexp.QuoteMeta(queue) + `</td>.*?<span class="badge [^"]*">([^<]*)</span>`).FindStringSubmatch(r.body)
		if m == nil || m[1] != want {
			t.Errorf("%s: status %v, want %q", queue, m, want)
		}
	}
}
