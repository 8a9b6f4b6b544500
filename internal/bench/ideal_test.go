package bench

import (
	"strings"
	"testing"
)

func TestGradeIdeal(t *testing.T) {
	prior := []Row{
		{Scenario: ScenarioPublish, Broker: RabbitMQ, Client: ClientRedrive, Rate: 10000},
		{Scenario: ScenarioConsume, Broker: RabbitMQ, Client: ClientRaw, Rate: 99999},
		{Scenario: ScenarioConsume, Broker: RabbitMQ, Client: ClientRedrive, Rate: 20000},
		{Scenario: ScenarioConsume, Broker: Kafka, Client: ClientRedrive, Rate: 1},
	}
	// ideal = 1 / (1 + 0.1 + 0.1 × 20000/10000) = 1/1.3
	for _, tc := range []struct {
		ratio float64
		met   bool
	}{{0.70, true}, {0.69, false}} {
		r := Row{Scenario: ScenarioRetry, Broker: RabbitMQ, Client: ClientRedrive, Ratio: tc.ratio}
		gradeIdeal(&r, prior, 0.1)
		if r.Met != tc.met || !strings.Contains(r.Target, "ideal 0.77") || !strings.Contains(r.Note, "ideal 0.77") {
			t.Errorf("ratio %.2f: met %v target %q note %q, want met %v and ideal 0.77", tc.ratio, r.Met, r.Target, r.Note, tc.met)
		}
	}
	r := Row{Scenario: ScenarioRetry, Broker: RabbitMQ, Client: ClientRedrive, Ratio: 0.5, Target: "t"}
	gradeIdeal(&r, prior[1:], 0.1) // no publish row: unchanged
	if r.Target != "t" || r.Note != "" {
		t.Errorf("without a publish row: target %q note %q, want unchanged", r.Target, r.Note)
	}
}
