package heartbeat

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	now := time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)
	rows := Evaluate(MonitorConfig{}, now, []Observation{
		{Type: "payout-executor", Instance: "host-1", Heartbeat: &Heartbeat{Timestamp: now.Add(-3 * time.Second), Status: StatusRunning, LastMessageAt: now.Add(-time.Second), ConsumerLag: 2}},
		{Type: "refund-executor", Instance: "host-2", LastSeen: now.Add(-2 * time.Minute)},
	})
	var buf bytes.Buffer
	if err := Render(&buf, rows); err != nil {
		t.Fatal(err)
	}
	want := `TYPE             INSTANCE  STATUS   SEVERITY  LAST SEEN  LAST MESSAGE  LAG  REASON
payout-executor  host-1    RUNNING  OK        3s ago     1s ago        2    -
refund-executor  host-2    MISSING  CRITICAL  2m0s ago   -             0    no heartbeat for 2m0s (CRITICAL after 1m0s)
2 instance(s): 1 OK, 0 WARNING, 1 CRITICAL, 0 UNKNOWN; worst CRITICAL
`
	if buf.String() != want {
		t.Errorf("Render =\n%s\nwant\n%s", buf.String(), want)
	}

	buf.Reset()
	if err := Render(&buf, unknownRows(nil, now, ErrUnavailable)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "*     *         UNKNOWN  UNKNOWN") || !strings.Contains(buf.String(), "worst UNKNOWN") {
		t.Errorf("Render of an outage =\n%s", buf.String())
	}

	if err := Render(failWriter{}, rows); err == nil {
		t.Error("Render to a failing writer returned nil")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, bytes.ErrTooLarge }

// TestRenderEscapes: type, instance, status, reason and pause reason
// come from Redis, written by anyone: the table escapes every character a
// terminal would obey (OSC 52 clipboard writes, ESC[2J, U+202E).
func TestRenderEscapes(t *testing.T) {
	now := time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)
	evil := "\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202egnp.exe\x9b"
	rows := Evaluate(MonitorConfig{}, now, []Observation{
		{Type: "t" + evil, Instance: "i" + evil, Heartbeat: &Heartbeat{Timestamp: now, Status: Status("S" + evil)}},
		{Type: "p", Instance: "i", Heartbeat: &Heartbeat{Timestamp: now, Status: StatusPaused, PausedBy: "b" + evil, PauseReason: "r" + evil}},
		{Type: "", Instance: "", LastSeen: now},
	})
	var buf bytes.Buffer
	if err := Render(&buf, rows); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, r := range strings.ReplaceAll(out, "\n", "") {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e {
			t.Fatalf("Render wrote %U:\n%q", r, out)
		}
	}
	if !strings.Contains(out, `t\x1b]52;c;ZXZpbA==\a\x1b[2J\u202egnp.exe\x9b`) || !strings.Contains(out, `r\x1b]52`) {
		t.Errorf("the escaped values are not shown:\n%s", out)
	}
	if f := strings.Fields(strings.Split(out, "\n")[1]); f[0] != `""` || f[1] != `""` || f[2] != "LATE" {
		t.Errorf("empty names do not keep their columns:\n%s", out)
	}
}
