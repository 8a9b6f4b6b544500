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

func TestBesideRaw(t *testing.T) {
	prior := []Row{
		{Scenario: ScenarioPublish, Broker: RabbitMQ, Client: ClientRedrive, Rate: 10000},
		{Scenario: ScenarioConsume, Broker: RabbitMQ, Client: ClientRedrive, Rate: 20000},
	}
	raw := Row{Scenario: ScenarioRetry, Broker: RabbitMQ, Client: ClientRaw, Rate: 15000}
	r := Row{Scenario: ScenarioRetry, Broker: RabbitMQ, Client: ClientRedrive, Rate: 12000, Note: "n"}
	besideRaw(&r, raw, prior, 0.1)
	// 12000/15000 = 0.80; raw 15000/20000 = 0.75 × consume, 0.75 × 1.3 = 0.975, 0.98 × ideal.
	if want := "0.80 × raw retry (raw: 0.75 × consume, 0.98 × ideal); n"; r.Note != want {
		t.Errorf("note %q, want %q", r.Note, want)
	}
	r = Row{Scenario: ScenarioRetry, Broker: RabbitMQ, Client: ClientRedrive, Rate: 12000}
	besideRaw(&r, raw, nil, 0.1)
	if want := "0.80 × raw retry; "; r.Note != want {
		t.Errorf("without consume and publish rows: note %q, want %q", r.Note, want)
	}
	r = Row{Scenario: ScenarioRetry, Broker: RabbitMQ, Client: ClientRedrive, Rate: 12000, Note: "n"}
	besideRaw(&r, Row{}, prior, 0.1)
	if r.Note != "n" {
		t.Errorf("without a raw rate: note %q, want unchanged", r.Note)
	}
}
