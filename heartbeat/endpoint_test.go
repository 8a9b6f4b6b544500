package heartbeat

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A relay instance's endpoint travels in its heartbeat to the monitor's
// row; other heartbeats have none.
func TestMonitorEndpoint(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	want := &Endpoint{URL: "https://payouts.internal/events", Outcomes: map[string]int64{"success": 7, "retry": 2},
		P50: 1500 * time.Microsecond, P99: 40 * time.Millisecond}
	relay := newPublisher(t, rdb, PublisherConfig{Type: "payout", Instance: "relay-1", Prefix: prefix,
		Endpoint: func() *Endpoint { return want }})
	plain := newPublisher(t, rdb, PublisherConfig{Type: "payout", Instance: "go-1", Prefix: prefix})
	for _, p := range []*Publisher{relay, plain} {
		if err := p.Beat(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := newMonitor(t, rdb, MonitorConfig{Prefix: prefix}).Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Endpoint{}
	for _, r := range rows {
		wantRow(t, r, StatusRunning, SeverityOK, ConditionOK)
		got[r.Instance] = r.Endpoint
	}
	if e := got["relay-1"]; e == nil || e.URL != want.URL || e.Outcomes["success"] != 7 || e.Outcomes["retry"] != 2 ||
		e.P50 != want.P50 || e.P99 != want.P99 {
		t.Errorf("relay row's endpoint = %+v, want %+v", e, want)
	}
	if e, ok := got["go-1"]; !ok || e != nil {
		t.Errorf("plain worker's endpoint = %+v (row found: %v), want none", e, ok)
	}
}

// An endpoint written by hand beyond its bounds makes the heartbeat
// malformed; within them it is read.
func TestMonitorEndpointBounds(t *testing.T) {
	t.Parallel()
	many := `{`
	for i := range MaxEndpointOutcomes + 1 {
		if i > 0 {
			many += ","
		}
		many += `"o` + strings.Repeat("x", i) + `":1`
	}
	many += `}`
	for _, tc := range []struct {
		name, endpoint string
		ok             bool
	}{
		{"valid", `{"url":"http://h/","outcomes":{"success":1},"p50_ms":1.5,"p99_ms":2}`, true},
		{"empty object", `{}`, true},
		{"null", `null`, true},
		{"long url", `{"url":"` + strings.Repeat("u", MaxEndpointURL+1) + `"}`, false},
		{"too many outcomes", `{"outcomes":` + many + `}`, false},
		{"long outcome name", `{"outcomes":{"` + strings.Repeat("n", 33) + `":1}}`, false},
		{"negative count", `{"outcomes":{"success":-1}}`, false},
		{"negative latency", `{"p50_ms":-1}`, false},
		{"huge latency", `{"p99_ms":1e300}`, false},
		{"not an object", `"https://h/"`, false},
		{"deeply nested", strings.Repeat(`{"x":`, 2000) + `1` + strings.Repeat(`}`, 2000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := newRedis(t)
			keys := Keys{Prefix: prefix}
			ctx := t.Context()
			rdb.SAdd(ctx, keys.Types(), "w")
			rdb.ZAdd(ctx, keys.Registry("w"), redis.Z{Score: unixSeconds(time.Now()), Member: "i"})
			v := `{"timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) + `","status":"RUNNING","last_message_at":null,"consumer_lag":0,"endpoint":` + tc.endpoint + `}`
			rdb.Set(ctx, keys.Heartbeat("w", "i"), v, time.Minute)
			row := checkOne(t, newMonitor(t, rdb, MonitorConfig{Prefix: prefix}))
			if tc.ok {
				wantRow(t, row, StatusRunning, SeverityOK, ConditionOK)
			} else {
				wantRow(t, row, StatusUnknown, SeverityWarning, ConditionMalformed)
			}
		})
	}
}
