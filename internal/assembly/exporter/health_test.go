package exporter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/lag"
)

var t0 = time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)

// healthy is a RabbitMQ snapshot where everything is fine.
func healthy() Snapshot {
	return Snapshot{
		At: t0, Broker: "rabbitmq",
		Depths: &DepthSample{At: t0, Depths: []lag.QueueDepth{
			{Queue: "orders.billing", Exists: true, Consumers: 1, Role: lag.RoleGroup, Topic: "orders", Group: "billing"},
			{Queue: "orders.billing.dlq", Exists: true, Role: lag.RoleDLQ, Topic: "orders", Group: "billing"},
			{Queue: "redrive.unroutable", Exists: true, Role: lag.RoleUnroutable},
		}},
		Groups:     []Group{{Group: "billing", Topic: "orders"}},
		Thresholds: lag.Thresholds{"orders": {Warning: 10, Critical: 100}},
		Workers: &WorkersSample{At: t0, Rows: []heartbeat.WorkerStatus{
			{Type: "billing", Instance: "h-1", Status: heartbeat.StatusRunning, Severity: heartbeat.SeverityOK, Conditions: []heartbeat.Condition{heartbeat.ConditionOK}},
		}},
		DLQ: &DLQSample{At: t0, Pending: map[string]int64{"orders.billing.dlq": 0}},
	}
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name   string
		mod    func(*Snapshot)
		status Status
		reason string // a substring of one of the reasons
	}{
		{"healthy", func(*Snapshot) {}, StatusUp, ""},
		{"broker unreachable", func(s *Snapshot) { s.Depths = &DepthSample{Err: errors.New("dial: refused")} }, StatusDown, "broker rabbitmq: unreachable: dial: refused"},
		{"broker down wins over degraded", func(s *Snapshot) {
			s.Depths = &DepthSample{Err: errors.New("refused")}
			s.DLQ.Pending["orders.billing.dlq"] = 3
		}, StatusDown, "dlq orders.billing.dlq: 3 pending"},
		{"not sampled", func(s *Snapshot) { s.Depths = &DepthSample{} }, StatusDegraded, "not sampled yet"},
		{"pending dead letter", func(s *Snapshot) { s.DLQ.Pending["orders.billing.dlq"] = 2 }, StatusDegraded, "dlq orders.billing.dlq: 2 pending"},
		{"store unreadable", func(s *Snapshot) { s.DLQ = &DLQSample{At: t0, Err: errors.New("pg down")} }, StatusDegraded, "dlq: pending counts cannot be read: pg down"},
		{"worker critical", func(s *Snapshot) {
			s.Workers.Rows[0].Severity, s.Workers.Rows[0].Reason = heartbeat.SeverityCritical, "no heartbeat for 2m"
		}, StatusDegraded, "worker billing/h-1: CRITICAL: no heartbeat for 2m"},
		{"worker warning", func(s *Snapshot) { s.Workers.Rows[0].Severity = heartbeat.SeverityWarning }, StatusDegraded, "worker billing/h-1: WARNING"},
		{"redis unreadable", func(s *Snapshot) {
			s.Workers = &WorkersSample{At: t0, Err: errors.New("redis down"), Rows: []heartbeat.WorkerStatus{{Type: "*", Instance: "*", Severity: heartbeat.SeverityUnknown}}}
		}, StatusDegraded, "workers: heartbeats cannot be read: redis down"},
		{"queue above warning", func(s *Snapshot) { s.Depths.Depths[0].Messages = 11 }, StatusDegraded, "level WARNING"},
		{"queue without consumer", func(s *Snapshot) { s.Depths.Depths[0].Messages, s.Depths.Depths[0].Consumers = 1, 0 }, StatusDegraded, "status STOP"},
		{"queue below warning with a consumer", func(s *Snapshot) { s.Depths.Depths[0].Messages = 10 }, StatusUp, ""},
		{"group queue missing", func(s *Snapshot) { s.Depths.Depths[0].Exists = false }, StatusDegraded, "queue orders.billing does not exist"},
		{"unroutable messages", func(s *Snapshot) { s.Depths.Depths[2].Messages = 4 }, StatusDegraded, "4 messages parked in redrive.unroutable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := healthy()
			tt.mod(&s)
			h := Evaluate(s)
			if h.Status != tt.status {
				t.Fatalf("status = %s (%v), want %s", h.Status, h.Reasons, tt.status)
			}
			if tt.reason == "" && len(h.Reasons) > 0 {
				t.Errorf("reasons = %v, want none", h.Reasons)
			}
			if tt.reason != "" && !strings.Contains(strings.Join(h.Reasons, "\n"), tt.reason) {
				t.Errorf("reasons = %v, want one containing %q", h.Reasons, tt.reason)
			}
			if want := map[Status]int{StatusUp: 200, StatusDegraded: 200, StatusDown: 503}[tt.status]; h.HTTPStatus() != want {
				t.Errorf("HTTP status = %d, want %d", h.HTTPStatus(), want)
			}
		})
	}
}

func TestEvaluateKafka(t *testing.T) {
	topic := func(level lag.Level, status lag.Status) lag.TopicLag {
		return lag.TopicLag{Group: "billing", Topic: "orders", Partitions: 3, Members: 1, Lag: 7, Level: level, Status: status,
			TimeLag: 1500 * time.Millisecond, TimeLagKnown: true}
	}
	snap := func(tl lag.TopicLag, groupErrs map[string]error) Snapshot {
		return Snapshot{At: t0, Broker: "kafka", GroupLag: &GroupLagSample{Sampled: true,
			Report: lag.GroupReport{At: t0, Topics: []lag.TopicLag{tl}, GroupErrors: groupErrs}}}
	}
	for _, tt := range []struct {
		tl     lag.TopicLag
		errs   map[string]error
		status Status
	}{
		{topic(lag.LevelOK, lag.StatusOK), nil, StatusUp},
		{topic(lag.LevelOK, lag.StatusRewind), nil, StatusUp},
		{topic(lag.LevelOK, lag.StatusWarn), nil, StatusDegraded},
		{topic(lag.LevelOK, lag.StatusStall), nil, StatusDegraded},
		{topic(lag.LevelOK, lag.StatusStop), nil, StatusDegraded},
		{topic(lag.LevelCritical, lag.StatusOK), nil, StatusDegraded},
		{topic(lag.LevelOK, lag.StatusOK), map[string]error{"audit": errors.New("coordinator not available")}, StatusDegraded},
	} {
		h := Evaluate(snap(tt.tl, tt.errs))
		if h.Status != tt.status {
			t.Errorf("%s/%s errors %v: status %s (%v), want %s", tt.tl.Level, tt.tl.Status, tt.errs, h.Status, h.Reasons, tt.status)
		}
		g := h.Components.Lag.Groups[0]
		if g.Group != "billing" || g.Lag != 7 || g.Consumers != 1 || g.LagSeconds == nil || *g.LagSeconds != 1.5 || g.Level != string(tt.tl.Level) {
			t.Errorf("group row = %+v", g)
		}
		if tt.errs != nil && (len(h.Components.Lag.Groups) != 2 || h.Components.Lag.Groups[1].Group != "audit") {
			t.Errorf("unmeasured group not listed: %+v", h.Components.Lag.Groups)
		}
	}
	down := Evaluate(Snapshot{At: t0, Broker: "kafka", GroupLag: &GroupLagSample{Sampled: true, Err: errors.New("no seed broker answered")}})
	if down.Status != StatusDown || down.Components.Broker.Status != StatusDown || down.Components.Broker.Error != "no seed broker answered" {
		t.Errorf("unreachable kafka = %+v", down)
	}
}

func TestReady(t *testing.T) {
	for _, tt := range []struct {
		mod    func(*Snapshot)
		ready  bool
		reason string
	}{
		{func(*Snapshot) {}, true, ""},
		{func(s *Snapshot) { s.DLQ.Pending["orders.billing.dlq"] = 5 }, true, ""},
		{func(s *Snapshot) { s.Depths = &DepthSample{} }, false, "rabbitmq depth not sampled yet"},
		{func(s *Snapshot) { s.Depths = &DepthSample{At: t0, Err: errors.New("refused")} }, false, "rabbitmq unreachable: refused"},
		{func(s *Snapshot) { s.Workers = &WorkersSample{} }, false, "heartbeats not sampled yet"},
		{func(s *Snapshot) { s.DLQ = &DLQSample{} }, false, "dlq pending counts not sampled yet"},
		{func(s *Snapshot) { s.DLQ = &DLQSample{At: t0, Err: errors.New("pg down")} }, true, ""},
		{func(s *Snapshot) { s.Broker, s.Depths, s.GroupLag = "kafka", nil, &GroupLagSample{} }, false, "kafka lag not sampled yet"},
	} {
		s := healthy()
		tt.mod(&s)
		if ok, reason := Ready(s); ok != tt.ready || reason != tt.reason {
			t.Errorf("Ready = %v %q, want %v %q", ok, reason, tt.ready, tt.reason)
		}
	}
}

// TestHealthWorkersLeftOut: when the heartbeat sample left instances out
// (heartbeat.max_instances, names no worker can have), /healthz says how
// many and the limit, and is DEGRADED; the rows it lists are those read.
func TestHealthWorkersLeftOut(t *testing.T) {
	now := time.Now()
	rows := heartbeat.Evaluate(heartbeat.MonitorConfig{}, now, []heartbeat.Observation{
		{Type: "w", Instance: "a", Heartbeat: &heartbeat.Heartbeat{Timestamp: now, Status: heartbeat.StatusRunning}},
	})
	h := Evaluate(Snapshot{At: now, Workers: &WorkersSample{Rows: rows, At: now,
		Dropped: heartbeat.Dropped{Limit: 1, OverLimit: 99_999, BadNames: 2}}})
	if l := h.Components.WorkersLeftOut; l == nil || l.OverLimit != 99_999 || l.Limit != 1 || l.BadNames != 2 {
		t.Fatalf("workers_left_out = %+v", h.Components.WorkersLeftOut)
	}
	if h.Status != StatusDegraded || len(h.Components.Workers) != 1 || !strings.Contains(strings.Join(h.Reasons, ";"), "heartbeat.max_instances") {
		t.Errorf("health = %s, %d workers, reasons %v", h.Status, len(h.Components.Workers), h.Reasons)
	}
	h = Evaluate(Snapshot{At: now, Workers: &WorkersSample{Rows: rows, At: now}})
	if h.Components.WorkersLeftOut != nil || h.Status != StatusUp {
		t.Errorf("nothing left out: %+v, %s", h.Components.WorkersLeftOut, h.Status)
	}
}
