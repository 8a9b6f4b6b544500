package lag

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestRenderGroups(t *testing.T) {
	tr, _ := NewTracker(TrackerConfig{Thresholds: Thresholds{"escrow.commands": {Warning: 10, Critical: 50}}})
	a := part("payout-executor", "escrow.commands", 0, 40, 52, "worker-1")
	a.TimeLag, a.TimeLagKnown = 4200*time.Millisecond, true
	b := part("payout-executor", "escrow.commands", 1, -1, 3, "")
	bad := PartitionLag{Group: "payout-executor", Topic: "escrow.commands", Partition: 2, Lag: -1, Err: errors.New("NOT_LEADER")}
	rep := tr.Observe(GroupSample{At: time.Now(), Partitions: []PartitionLag{a, b, bad}, GroupErrors: map[string]error{"refund-executor": errors.New("COORDINATOR_NOT_AVAILABLE")}})

	var buf bytes.Buffer
	if err := RenderGroups(&buf, rep); err != nil {
		t.Fatal(err)
	}
	want := `GROUP            TOPIC            PARTITIONS     MEMBERS  LAG  LAG AGE  LEVEL    STATUS  REASON
payout-executor  escrow.commands  3 (1 unknown)  1        16   4s       WARNING  STOP    partition 1: no consumer assigned; committed offset none not moving, lag 4
group refund-executor: not measured: COORDINATOR_NOT_AVAILABLE
`
	if buf.String() != want {
		t.Errorf("RenderGroups =\n%s\nwant\n%s", buf.String(), want)
	}

	buf.Reset()
	if err := RenderPartitions(&buf, rep); err != nil {
		t.Fatal(err)
	}
	want = `GROUP            TOPIC            PARTITION  COMMITTED  END  LAG  LAG AGE  MEMBER    STATUS  REASON
payout-executor  escrow.commands  0          40         52   12   4s       worker-1  OK      -
payout-executor  escrow.commands  1          none       3    4    -        -         STOP    no consumer assigned; committed offset none not moving, lag 4
payout-executor  escrow.commands  2          0          0    ?    -        -         OK      NOT_LEADER
group refund-executor: not measured: COORDINATOR_NOT_AVAILABLE
`
	if buf.String() != want {
		t.Errorf("RenderPartitions =\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestRenderDepths(t *testing.T) {
	var buf bytes.Buffer
	err := RenderDepths(&buf, []QueueDepth{
		{Queue: "escrow.commands.payout-executor", Exists: true, Messages: 12, Consumers: 2},
		{Queue: "redrive.delay.4000"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `QUEUE                            STATE    READY  CONSUMERS
escrow.commands.payout-executor  ok       12     2
redrive.delay.4000               missing  -      -
`
	if buf.String() != want {
		t.Errorf("RenderDepths =\n%q\nwant\n%q", buf.String(), want)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRenderWriteErrors(t *testing.T) {
	if err := RenderDepths(failWriter{}, []QueueDepth{{Queue: "q"}}); err == nil {
		t.Error("RenderDepths to a failing writer returned nil")
	}
	if err := RenderGroups(failWriter{}, GroupReport{Topics: []TopicLag{{Group: "g"}}}); err == nil {
		t.Error("RenderGroups to a failing writer returned nil")
	}
}
