package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func validRequest(peer, scenario string) Request {
	r := Request{Peer: peer, Scenario: scenario, Topic: "t", Messages: 10, Size: 8, Batch: 5, TimeoutMS: 1000}
	switch peer {
	case WatermillAMQP:
		r.URL, r.Exchange, r.Queue, r.Concurrency, r.Prefetch = "amqp://x", "x", "q", 2, 4
	default:
		r.Brokers, r.Group = []string{"127.0.0.1:1"}, "g"
	}
	if scenario == ScenarioRetry || scenario == ScenarioDLQ {
		r.PoisonTopic = "p"
	}
	return r
}

func TestValidate(t *testing.T) {
	for peer, ss := range scenarios {
		for _, s := range ss {
			if err := validRequest(peer, s).Validate(); err != nil {
				t.Errorf("%s %s: %v", peer, s, err)
			}
		}
	}
	for _, c := range []struct {
		name string
		mod  func(*Request)
		want string
	}{
		{"peer", func(r *Request) { r.Peer = "nats" }, `peer "nats"`},
		{"kafka-go retry", func(r *Request) { r.Peer, r.Brokers, r.Group = KafkaGo, []string{"b"}, "g" }, `scenario "retry"`},
		{"topic", func(r *Request) { r.Topic = "" }, "topic"},
		{"messages", func(r *Request) { r.Messages = 0 }, "messages"},
		{"timeout", func(r *Request) { r.TimeoutMS = 0 }, "timeout_ms"},
		{"poison", func(r *Request) { r.PoisonTopic = "" }, "poison_topic"},
		{"url", func(r *Request) { r.URL = "" }, "url"},
		{"prefetch", func(r *Request) { r.Prefetch = 0 }, "prefetch"},
	} {
		r := validRequest(WatermillAMQP, ScenarioRetry)
		c.mod(&r)
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
	r := validRequest(WatermillKafka, ScenarioConsume)
	r.Brokers = nil
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "brokers") {
		t.Errorf("no brokers: %v", err)
	}
}

// TestRunBadRequest: a request the peer cannot run gets one error event
// and exit status 1, never a start.
func TestRunBadRequest(t *testing.T) {
	for _, in := range []string{"", "{not json\n", `{"peer":"nats"}` + "\n",
		`{"peer":"kafka-go","scenario":"dlq","topic":"t","messages":1,"batch":1,"timeout_ms":1}` + "\n"} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), strings.NewReader(in), &out, &errOut); code != 1 {
			t.Errorf("%q: exit %d", in, code)
		}
		var ev Event
		dec := json.NewDecoder(&out)
		if err := dec.Decode(&ev); err != nil || ev.Event != "error" || ev.Error == "" {
			t.Errorf("%q: event %+v, %v", in, ev, err)
		}
		if dec.More() {
			t.Errorf("%q: more than one event: %s", in, out.String())
		}
	}
}

// TestMeter: start writes the start event, finish the result with the
// figures of the interval between them.
func TestMeter(t *testing.T) {
	var out bytes.Buffer
	m := &meter{enc: json.NewEncoder(&out)}
	if err := m.finish(result{}); err == nil {
		t.Error("finish before start: no error")
	}
	if err := m.start(); err != nil {
		t.Fatal(err)
	}
	keep := make([][]byte, 0, 1000)
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) { // burn CPU and allocate
		keep = append(keep[:0], make([]byte, 64))
	}
	_ = keep
	lat := []time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}
	if err := m.finish(result{messages: 3, lat: lat, note: "n"}); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	var start, res Event
	if err := dec.Decode(&start); err != nil || start.Event != "start" {
		t.Fatalf("first event %+v, %v", start, err)
	}
	if err := dec.Decode(&res); err != nil || res.Event != "result" {
		t.Fatalf("second event %+v, %v", res, err)
	}
	switch {
	case res.Messages != 3 || res.Note != "n":
		t.Errorf("result %+v", res)
	case res.ElapsedNS < int64(20*time.Millisecond):
		t.Errorf("elapsed %s, want ≥ 20ms", time.Duration(res.ElapsedNS))
	case res.Mallocs == 0:
		t.Error("no allocations counted")
	case cpuMeasured && res.CPUNS <= 0:
		t.Error("no CPU time counted")
	case res.P50NS != int64(2*time.Millisecond) || res.MaxNS != int64(3*time.Millisecond):
		t.Errorf("p50 %d max %d", res.P50NS, res.MaxNS)
	}
}

func TestFate(t *testing.T) {
	for _, c := range []struct {
		scenario string
		seq      int
		first    bool
		want     error
	}{
		{ScenarioConsume, 0, true, nil},
		{ScenarioRetry, 10, true, errTransient},
		{ScenarioRetry, 10, false, nil},
		{ScenarioRetry, 11, true, nil},
		{ScenarioDLQ, 200, true, errPermanent},
		{ScenarioDLQ, 200, false, errPermanent},
		{ScenarioDLQ, 10, true, nil},
	} {
		if got := fate(c.scenario, c.seq, c.first); !errors.Is(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("fate(%s, %d, %v) = %v, want %v", c.scenario, c.seq, c.first, got, c.want)
		}
	}
	if _, err := seqOf("x"); err == nil || !strings.Contains(err.Error(), headerSeq) {
		t.Errorf("seqOf(x): %v", err)
	}
}
