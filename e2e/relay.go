package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/relay"
	"github.com/redrive/redrive/retrypolicy"
	"github.com/redrive/redrive/worker"
	"github.com/redrive/redrive/worker/killswitch"
)

// RunRelay runs the suite's behaviours through HTTP (package relay: a
// worker whose handler is an endpoint), each with an endpoint in Go and
// one in Python: every answer of the relay's table, an endpoint that goes
// down under load with the kill switch on, and a replay. Every message is
// counted: published = handled + dead-lettered, lost = 0.
func RunRelay(t *testing.T, env Env) {
	s := &suite{env: env, r: env.Resolution}
	for _, k := range endpointKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Run("Answers", func(t *testing.T) { s.relayAnswers(t, k) })
			t.Run("EndpointDown", func(t *testing.T) { s.relayOutage(t, k, broker.NonBlocking) })
			if env.Name == "kafka" { // RabbitMQ never blocks
				t.Run("EndpointDownBlocking", func(t *testing.T) { s.relayOutage(t, k, broker.Blocking) })
			}
			t.Run("Replay", func(t *testing.T) { s.relayReplay(t, k) })
		})
	}
}

// relayTimeout is the endpoint timeout of the scenarios; a "hang" lasts
// four times as long.
const relayTimeout = 500 * time.Millisecond

// relayGroup is the worker of the scenarios.
const relayGroup = "relay-payer"

// runRelay runs the worker sub on b with its handler the endpoint at url,
// on the worker runtime as redrive relay does, until the test ends.
func (s *suite) runRelay(t *testing.T, b broker.Broker, sub broker.Subscription, url string, cfg worker.Config) *relay.Endpoint {
	t.Helper()
	ep, err := relay.NewEndpoint(relay.EndpointConfig{Worker: sub.Group, Topic: sub.Topic, URL: url, Timeout: relayTimeout,
		Concurrency: sub.Concurrency, MaxRetryAfter: sub.Policy.LongestDelay(), Registerer: cfg.Registerer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ep.Close)
	cfg.NoSignals, cfg.Logger = true, quietLogger()
	rt, err := worker.New(b, []broker.Subscription{sub}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Background(t, "relay runtime", sub.ShutdownTimeout+30*time.Second,
		func(ctx context.Context) error { return rt.Run(ctx, worker.Handlers{sub.Group: ep.Handle}) })
	return ep
}

// relayCase is one message of the answers scenario and what must become
// of it.
type relayCase struct {
	id, behaviour string
	key, value    []byte
	headers       map[string]string
	raw           bool          // published with the backend's own client
	calls         int           // POSTs the endpoint gets
	dead          driver.Reason // "" when it is handled
}

// relayAnswers: each answer of the relay's table, on messages published
// through redrive and with the raw clients, binary included.
func (s *suite) relayAnswers(t *testing.T, k endpointKind) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, relayGroup, retrypolicy.Policy{MaxRetries: 3, Backoff: s.schedule(1, 1, 20)})
	declare(t, b, sub)
	ep := k.start(t, 4*relayTimeout)
	s.runRelay(t, b, sub, ep.URL(), worker.Config{})

	cases := []relayCase{
		{id: "ok-json", behaviour: "ok", value: []byte("{\n  \"amount\": 10,\n  \"note\": \"caf\u00e9\"\n}\n"), headers: map[string]string{"tenant": "acme"}, calls: 1},
		{id: "ok-binary", behaviour: "ok", key: []byte{0xde, 0xad, 0, 0xbe}, value: []byte{0, 0xff, 0xfe, '\n', 0x80, '"', '%'}, calls: 1,
			headers: map[string]string{"bytes": "\x01\x02\xff\r\n", "X-Request-ID": "R-1", "__TypeId__": "com.example.Payout",
				"unicode": "Euro € 😀", "with space": "a b", "empty": ""}},
		{id: "ok-empty", behaviour: "ok", value: nil, calls: 1},
		{id: "fail-twice-1", behaviour: "fail:2", value: []byte("f1"), calls: 3},
		{id: "fail-twice-2", behaviour: "fail:2", value: []byte("f2"), calls: 3},
		{id: "always", behaviour: "always", value: []byte("a"), calls: 4, dead: driver.ReasonMaxRetries},
		{id: "permanent", behaviour: "permanent", value: []byte("p"), calls: 1, dead: driver.ReasonPermanent},
		{id: "drop", behaviour: "drop", value: []byte("d"), calls: 1, dead: driver.ReasonPermanent},
		{id: "retry-after", behaviour: "retry-after:1", value: []byte("r"), calls: 2},
		{id: "hang-once", behaviour: "hang-once", value: []byte("h"), calls: 2},
		{id: "raw-ok", behaviour: "ok", raw: true, key: []byte("raw-key"), value: []byte{0xca, 0xfe, 0, 1}, calls: 1,
			headers: map[string]string{"bin": "\x00\xff", "Mixed.Case_name": "v"}},
		{id: "raw-fail", behaviour: "fail:1", raw: true, value: []byte("raw"), calls: 2},
	}
	for i := range cases {
		c := &cases[i]
		h := maps.Clone(c.headers)
		if h == nil {
			h = map[string]string{}
		}
		h["case"], h["behaviour"] = c.id, c.behaviour
		if c.raw {
			raw := map[string][]byte{}
			for k, v := range h {
				raw[k] = []byte(v)
			}
			s.env.RawPublish(t, topic, c.key, c.value, raw)
			maps.Copy(h, s.env.RawTyped) // what a handler sees of the typed AMQP headers
		} else {
			publish(t, b, topic, broker.Message{ID: c.id, Key: c.key, Value: c.value, Headers: h})
		}
		c.headers = h // what the endpoint must see
	}

	reqs := ep.Requests().WaitUntil(t, 90*time.Second, "every message handled or dead-lettered", func(rs []relayRequest) bool {
		for _, c := range cases {
			if len(requestsOf(rs, c.id)) < c.calls {
				return false
			}
		}
		return true
	})
	wantDead := 0
	for _, c := range cases {
		if c.dead != "" {
			wantDead++
		}
	}
	dls := s.env.DeadLetters(t.Context(), t, topic, relayGroup, wantDead, 3*s.r+time.Second)
	deadByID := map[string]dlq.Entry{}
	for _, e := range dls {
		deadByID[e.MessageID] = e
	}

	handled, dead, dups := 0, 0, 0
	for _, c := range cases {
		got := requestsOf(reqs, c.id)
		oks := 0
		for i, r := range got {
			if r.answer == "ok" {
				oks++
			}
			if !bytes.Equal(r.body, c.value) {
				t.Errorf("%s: POST %d body = %q, want %q (byte for byte)", c.id, i+1, r.body, c.value)
			}
			if !maps.Equal(r.headers, c.headers) {
				t.Errorf("%s: POST %d headers = %q, want %q", c.id, i+1, r.headers, c.headers)
			}
			if r.attempt != i+1 {
				t.Errorf("%s: POST %d has attempt %d", c.id, i+1, r.attempt)
			}
			if c.key != nil && !bytes.Equal(r.key, c.key) {
				t.Errorf("%s: key = %q, want %q", c.id, r.key, c.key)
			}
			if !c.raw && r.id != c.id {
				t.Errorf("%s: ce-id = %q", c.id, r.id)
			}
		}
		if len(got) != c.calls {
			t.Errorf("%s: %d POSTs, want %d", c.id, len(got), c.calls)
		}
		switch {
		case oks > 1:
			dups += oks - 1
			handled++
		case oks == 1:
			handled++
		}
		if e, ok := deadByID[c.id]; ok {
			dead++
			if oks > 0 {
				t.Errorf("%s: handled and dead-lettered", c.id)
			}
			if e.Reason != string(c.dead) {
				t.Errorf("%s: dead letter reason %q, want %q", c.id, e.Reason, c.dead)
			}
			if !bytes.Equal(e.OriginalValue, c.value) {
				t.Errorf("%s: dead letter value %q, want %q", c.id, e.OriginalValue, c.value)
			}
			s.checkRelayError(t, k, c, e)
		} else if c.dead != "" {
			t.Errorf("%s: not dead-lettered (reason %s expected)", c.id, c.dead)
		}
	}
	if got := requestsOf(reqs, "retry-after"); len(got) == 2 {
		if gap := got[1].at.Sub(got[0].at); gap < time.Second {
			t.Errorf("the retry after a 429 with Retry-After: 1 came %s later, before the second", gap)
		}
	}
	if got := requestsOf(reqs, "hang-once"); len(got) == 2 && got[1].lastErrorClass != "http.timeout" {
		t.Errorf("the retry of a POST past the timeout says last error class %q, want http.timeout", got[1].lastErrorClass)
	}
	if got := requestsOf(reqs, "fail-twice-1"); len(got) == 3 && got[2].lastErrorClass != "http.500" {
		t.Errorf("the third POST of fail:2 says last error class %q, want http.500", got[2].lastErrorClass)
	}
	published := len(cases)
	lost := published - handled - dead
	t.Logf("%s endpoint on %s: published %d = handled %d + dead-lettered %d; lost %d; duplicates %d; %d POSTs",
		k.name, s.env.Name, published, handled, dead, lost, dups, len(reqs))
	if lost != 0 || dups != 0 || len(dls) != wantDead {
		t.Errorf("lost %d, duplicates %d, dead letters %d (want 0, 0, %d)", lost, dups, len(dls), wantDead)
	}
}

// checkRelayError checks a dead letter's error: the answer's status and
// the start of the endpoint's body.
func (s *suite) checkRelayError(t *testing.T, k endpointKind, c relayCase, e dlq.Entry) {
	t.Helper()
	want := map[string][2]string{
		"always":    {"http.500", "HTTP 500 Internal Server Error"},
		"permanent": {"http.422", "HTTP 422 Unprocessable Entity: invalid payout permanent"},
		"drop":      {"http.200", `HTTP 200 OK (the body says "DROP")`},
	}[c.id]
	if c.id == "drop" && k.name == "Python" { // the example's Permanent is a 422
		want = [2]string{"http.422", "HTTP 422 Unprocessable Entity: invalid payout drop"}
	}
	if c.id == "always" {
		want[1] += ": " + map[string]string{"Go": "downstream failed on attempt 4", "Python": "RuntimeError: downstream failed on attempt 4"}[k.name]
	}
	if e.ErrorClass != want[0] || !strings.HasPrefix(e.ErrorMessage, want[1]) {
		t.Errorf("%s: dead letter error %s %q, want %s %q…", c.id, e.ErrorClass, e.ErrorMessage, want[0], want[1])
	}
}

// relayOutage: steady traffic while the endpoint goes down (the Go server
// closes, the Python process is SIGKILLed) and comes back, with the kill
// switch on. The outage is 20 s; this one is scaled down with
// the window, back-off and probes (as e2e/faults' kill switch cases):
// what is measured, dead letters and lost messages, does not depend on
// the scale.
//
// Non-blocking retries (and RabbitMQ's, which never block) fail every
// message in turn: the failures outnumber the window's successes of
// before the outage and trip the switch, which must. Kafka's blocking
// retries fail only the head record of each partition, in place: too few
// calls to trip a window full of successes, but none behind the head is
// tried, and a schedule longer than the outage (as a real one is: 1s → 5s
// → 30s → 5m → 30m) dead-letters nothing.
func (s *suite) relayOutage(t *testing.T, k endpointKind, mode broker.RetryMode) {
	const (
		total  = 240
		every  = 33 * time.Millisecond // a batch of 4: about 120 messages/s
		outage = 1500 * time.Millisecond
	)
	b := s.broker(t)
	topic := topicName(t)
	// max_retries 2 and activation 3: on Kafka in blocking mode only the
	// head record of a partition fails, so that one message's failures
	// must be able to trip the switch before its retries are spent.
	// The schedule outlasts the time the switch takes to trip (a 1s → 5s
	// → 30s schedule does with the default 30s window): the window holds
	// the successes of before the outage, which the failures must
	// outnumber.
	sub := s.sub(topic, relayGroup, retrypolicy.Policy{MaxRetries: 2, Backoff: s.schedule(3, 10)})
	if sub.RetryMode = mode; mode == broker.Blocking {
		sub.Policy = retrypolicy.Policy{MaxRetries: 3, Backoff: s.schedule(3, 10, 30)}
	}
	declare(t, b, sub)
	ep := k.start(t, 4*relayTimeout)
	reg := prometheus.NewRegistry()
	s.runRelay(t, b, sub, ep.URL(), worker.Config{Registerer: reg, KillSwitches: map[string]killswitch.Config{relayGroup: {
		Enabled: true, Activation: 3, TripRatio: 0.5, Window: time.Second, RestartAfter: 200 * time.Millisecond, MaxRestartAfter: 800 * time.Millisecond}}})

	start := time.Now()
	var down, up time.Time
	for i := 0; i < total; i += 4 {
		if down.IsZero() && time.Since(start) > 500*time.Millisecond {
			ep.Down(t)
			down = time.Now()
		}
		if !down.IsZero() && up.IsZero() && time.Since(down) > outage {
			ep.Up(t)
			up = time.Now()
		}
		msgs := make([]broker.Message, 4)
		for j := range msgs {
			id := fmt.Sprintf("out-%04d", i+j)
			msgs[j] = broker.Message{ID: id, Value: []byte(id), Headers: map[string]string{"case": id, "behaviour": "ok"}}
		}
		publish(t, b, topic, msgs...)
		time.Sleep(every)
	}
	if up.IsZero() {
		time.Sleep(time.Until(down.Add(outage)))
		ep.Up(t)
	}
	// Wait for every message to be handled; one dead-lettered never is,
	// and the accounting below says so.
	reqs, _ := ep.Requests().Await(60*time.Second, func(rs []relayRequest) bool {
		seen := map[string]bool{}
		for _, r := range rs {
			if r.answer == "ok" {
				seen[r.caseID] = true
			}
		}
		return len(seen) == total
	})
	dls := s.env.DeadLetters(t.Context(), t, topic, relayGroup, 0, 3*s.r+time.Second)
	oks := map[string]int{}
	for _, r := range reqs {
		if !bytes.Equal(r.body, []byte(r.caseID)) {
			t.Errorf("%s: body %q", r.caseID, r.body)
		}
		if r.answer == "ok" {
			oks[r.caseID]++
		}
	}
	dups := 0
	for _, n := range oks {
		dups += n - 1
	}
	trips, _ := testenv.Value(testenv.Scrape(t, reg), "worker_kill_switch_trips_total", map[string]string{"worker": relayGroup})
	lost := total - len(oks) - len(dls)
	t.Logf("%s endpoint down for %s on %s (%s retries): published %d = handled %d + dead-lettered %d; lost %d; duplicates %d; kill switch trips %v",
		k.name, outage, s.env.Name, mode, total, len(oks), len(dls), lost, dups, trips)
	if len(dls) != 0 || lost != 0 {
		t.Errorf("the outage cost %d dead letters and %d lost messages, want 0 and 0", len(dls), lost)
	}
	if trips < 1 && mode == broker.NonBlocking {
		t.Errorf("worker_kill_switch_trips_total = %v, want >= 1: the outage did not pause the worker", trips)
	}
}

// relayReplay: a message the endpoint refuses is dead-lettered, stored by
// the keeper, replayed by an operator, and reaches the endpoint again
// with attempt 1 and where it was replayed from, its body byte for byte.
func (s *suite) relayReplay(t *testing.T, k endpointKind) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, relayGroup, retrypolicy.Policy{MaxRetries: 1, Backoff: s.schedule(1)})
	declare(t, b, sub)
	st := newCounting(s.dlqStore(t))
	name := s.env.DLQName(topic, relayGroup)
	s.keeper(t, b, st, name, nil)
	ep := k.start(t, 4*relayTimeout)
	s.runRelay(t, b, sub, ep.URL(), worker.Config{})

	body := []byte{0, 0xff, '\n', 0x80, 'x'}
	publish(t, b, topic, broker.Message{ID: "replay-me", Key: []byte("deal-7"), Value: body,
		Headers: map[string]string{"case": "replay-me", "behaviour": "permanent-once", "tenant": "acme"}})
	st.waitAll(t, name, 1, 60*time.Second)
	o := s.ops(t, b, st, [2]string{topic, relayGroup})
	page, err := o.List(t.Context(), dlq.Query{DLQ: name})
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("List = %d records, %v; want 1", len(page.Records), err)
	}
	id := page.Records[0].ID
	if _, err := o.Replay(t.Context(), name, id, "e2e-operator"); err != nil {
		t.Fatalf("Replay: %v", err)
	}
	reqs := ep.Requests().WaitUntil(t, 60*time.Second, "the replay to reach the endpoint", func(rs []relayRequest) bool {
		return len(requestsOf(rs, "replay-me")) >= 2
	})
	got := requestsOf(reqs, "replay-me")
	first, replay := got[0], got[1]
	if first.answer != "permanent" || first.attempt != 1 || first.replayedFrom != "" {
		t.Errorf("first POST: %+v", first)
	}
	if replay.answer != "ok" || replay.attempt != 1 || replay.replayedFrom != dlq.ReplayedFrom(name, id) ||
		!bytes.Equal(replay.body, body) || string(replay.key) != "deal-7" || replay.headers["tenant"] != "acme" || replay.id != "replay-me" {
		t.Errorf("replayed POST: attempt %d, replayed from %q (want %q), body %q, key %q, headers %v, id %q",
			replay.attempt, replay.replayedFrom, dlq.ReplayedFrom(name, id), replay.body, replay.key, replay.headers, replay.id)
	}
	if len(got) != 2 {
		t.Errorf("the endpoint got %d POSTs of the message, want 2 (first, replay)", len(got))
	}
}
