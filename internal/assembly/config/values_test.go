package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/retrypolicy"
)

func TestDurationYAML(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		out  string
		err  string
	}{
		{in: "1s", want: time.Second, out: "1s"},
		{in: "1.5s", want: 1500 * time.Millisecond, out: "1.5s"},
		{in: "90m", want: 90 * time.Minute, out: "1h30m"},
		{in: "30d", want: 30 * 24 * time.Hour, out: "30d"},
		{in: "2d12h", want: 60 * time.Hour, out: "2d12h"},
		{in: "24h", want: 24 * time.Hour, out: "1d"},
		{in: "0", want: 0, out: "0s"},
		{in: "-5m", want: -5 * time.Minute, out: "-5m"},
		{in: "10", err: `"10" is not a duration`},
		{in: "5x", err: `"5x" is not a duration`},
		{in: "d", err: `"d" is not a duration`},
		{in: "[1s]", err: `expected a duration, found a list`},
	}
	for _, tt := range tests {
		var d Duration
		err := yaml.Unmarshal([]byte(tt.in), &d)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Unmarshal(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || time.Duration(d) != tt.want {
			t.Errorf("Unmarshal(%q) = %s, %v; want %s", tt.in, time.Duration(d), err, tt.want)
			continue
		}
		out, err := yaml.Marshal(d)
		if err != nil || strings.TrimSpace(string(out)) != tt.out {
			t.Errorf("Marshal(%s) = %q, %v; want %q", time.Duration(d), out, err, tt.out)
		}
		if d.Duration() != tt.want {
			t.Errorf("Duration() = %s", d.Duration())
		}
	}
}

func TestDurationText(t *testing.T) {
	var v struct{ D Duration }
	if err := json.Unmarshal([]byte(`{"D":"30d"}`), &v); err != nil || v.D.Duration() != 30*24*time.Hour {
		t.Fatalf("json: %v %s", err, v.D)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `{"D":"30d"}` {
		t.Errorf("json = %s, %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"D":"soon"}`), &v); err == nil || !strings.Contains(err.Error(), `"soon" is not a duration`) {
		t.Errorf("json error = %v", err)
	}
}

func TestBackoffYAML(t *testing.T) {
	sched := func(ds ...time.Duration) Backoff { return ScheduleBackoff(ds...) }
	tests := []struct {
		in   string
		want Backoff
		str  string
		err  string
	}{
		{in: `"1s -> 5s -> 30s -> 5m -> 30m"`, want: sched(time.Second, 5*time.Second, 30*time.Second, 5*time.Minute, 30*time.Minute), str: "1s -> 5s -> 30s -> 5m -> 30m"},
		{in: `"1s, 5s"`, want: sched(time.Second, 5*time.Second), str: "1s -> 5s"},
		{in: `30s`, want: sched(30 * time.Second), str: "30s"},
		{in: `[1s, 2s, 1d]`, want: sched(time.Second, 2*time.Second, 24*time.Hour), str: "1s -> 2s -> 24h"},
		{in: `{exponential: {initial: 1s, multiplier: 2, max: 5m, jitter: 0.2}}`,
			want: Backoff{Exponential: &retrypolicy.Exponential{Initial: time.Second, Multiplier: 2, Max: 5 * time.Minute, Jitter: 0.2}},
			str:  "exponential(initial=1s, multiplier=2, max=5m, jitter=0.2)"},
		{in: `~`, want: Backoff{}},
		{in: `""`, want: Backoff{}},
		{in: `"5x"`, err: `"5x" is not a duration`},
		{in: `"1s -> 5x"`, err: `step 2: "5x" is not a duration`},
		{in: `[1s, soon]`, err: `[1]: "soon" is not a duration`},
		{in: `[]`, err: `the list of delays is empty`},
		{in: `{linear: {step: 1s}}`, err: `linear: unknown key (line 1)`},
		{in: `{exponential: {initial: 1s, cap: 5m}}`, err: `exponential.cap: unknown key (line 1)`},
		{in: `{}`, err: `expected exponential: {initial, multiplier, max, jitter}`},
	}
	for _, tt := range tests {
		var b Backoff
		err := yaml.Unmarshal([]byte(tt.in), &b)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Unmarshal(%s) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(b, tt.want) {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", tt.in, b, err, tt.want)
			continue
		}
		if b.String() != tt.str {
			t.Errorf("String() = %q, want %q", b.String(), tt.str)
		}
		out, err := yaml.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		var back Backoff
		if err := yaml.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(back, b) {
			t.Errorf("round trip of %s via %q = %+v, %v", tt.in, out, back, err)
		}
	}
}

func TestBackoffBuild(t *testing.T) {
	b := ScheduleBackoff(time.Second, 5*time.Second)
	s := b.Build(false).(retrypolicy.Schedule)
	if !s.NoRepeat || s.Delay(3) != 0 {
		t.Errorf("repeat_last false: %+v delay(3) = %s", s, s.Delay(3))
	}
	s = b.Build(true).(retrypolicy.Schedule)
	if s.NoRepeat || s.Delay(3) != 5*time.Second {
		t.Errorf("repeat_last true: %+v delay(3) = %s", s, s.Delay(3))
	}
	s.Delays[0] = time.Hour
	if b.Delays[0] != time.Second {
		t.Error("Build shares the delays slice")
	}
	if (Backoff{}).Build(true) != nil {
		t.Error("unset Backoff builds a back-off")
	}
}

func TestRetentionYAML(t *testing.T) {
	tests := []struct {
		in    string
		want  Retention
		value time.Duration
		out   string
		err   string
	}{
		{in: "forever", want: RetainForever, value: broker.Forever, out: "forever"},
		{in: "Forever", want: RetainForever, value: broker.Forever, out: "forever"},
		{in: "30d", want: RetainFor(30 * 24 * time.Hour), value: 30 * 24 * time.Hour, out: "30d"},
		{in: "12h", want: RetainFor(12 * time.Hour), value: 12 * time.Hour, out: "12h"},
		{in: "never", err: `"never" is not a duration or "forever"`},
		{in: "{days: 3}", err: `expected a duration or "forever", found a mapping`},
	}
	for _, tt := range tests {
		var r Retention
		err := yaml.Unmarshal([]byte(tt.in), &r)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Unmarshal(%s) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || r != tt.want || r.Value() != tt.value {
			t.Errorf("Unmarshal(%s) = %+v (value %s), %v", tt.in, r, r.Value(), err)
		}
		out, _ := yaml.Marshal(r)
		if strings.TrimSpace(string(out)) != tt.out {
			t.Errorf("Marshal = %q, want %q", out, tt.out)
		}
	}
}

func TestWorkerDecodesWithPlainYAML(t *testing.T) {
	// Other packages may decode a Worker with yaml directly: the custom
	// types still work (without ${ENV} expansion or path-named errors).
	var w Worker
	err := yaml.Unmarshal([]byte(`{name: w, topic: t, queue_ttl: 1m, retry: {backoff: "1s -> 2s"}, dlq: {retention: forever}}`), &w)
	if err != nil {
		t.Fatal(err)
	}
	if *w.QueueTTL != Duration(time.Minute) || w.Retry.Backoff.String() != "1s -> 2s" || !w.DLQ.Retention.Forever {
		t.Errorf("worker = %+v", w)
	}
}
