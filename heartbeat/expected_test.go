package heartbeat

import (
	"testing"
	"time"
)

func TestWithExpected(t *testing.T) {
	now := time.Now()
	rows := []WorkerStatus{
		{Type: "a", Instance: "h-1", Status: StatusRunning, Severity: SeverityOK},
		{Type: "stray", Instance: "h-2", Status: StatusRunning, Severity: SeverityOK},
	}
	got := WithExpected(rows, []string{"a", "b"}, now)
	if len(got) != 3 || got[0].Type != "a" || got[1].Type != "stray" {
		t.Fatalf("WithExpected = %+v", got)
	}
	b := got[2]
	if b.Type != "b" || b.Instance != NeverSeenInstance || b.Status != StatusMissing || b.Severity != SeverityCritical ||
		len(b.Conditions) != 1 || b.Conditions[0] != ConditionMissing || b.Reason == "" || !b.CheckedAt.Equal(now) {
		t.Errorf("row of a worker never seen: %+v", b)
	}
	if Worst(got) != SeverityCritical {
		t.Errorf("worst = %s", Worst(got))
	}
	if len(WithExpected(nil, nil, now)) != 0 {
		t.Error("rows out of nothing")
	}
}
