// One file, over the usual length: the cases of the suite that runs
// unchanged against both brokers, each a method of suite, so that a
// backend author reads the whole contract in one place.

package e2e

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// Run runs every scenario against env. Each scenario uses its own topic
// and groups.
func Run(t *testing.T, env Env) {
	s := &suite{env: env, r: env.Resolution}
	t.Run("PublishConsume", s.publishConsume)
	t.Run("RetryThenSucceed", s.retryThenSucceed)
	t.Run("HeadersOnDemand", s.headersOnDemand)
	t.Run("ReuseDeliveries", s.reuseDeliveries)
	t.Run("AlwaysFailsToDLQ", s.alwaysFails)
	t.Run("PermanentAndRetryAfter", s.permanentAndRetryAfter)
	t.Run("RetryOnlyFailingGroup", s.retryOnlyFailingGroup)
	t.Run("PublishDelayed", s.publishDelayed)
	t.Run("QueueTTLExpires", s.queueTTL)
	t.Run("ShutdownLosesNothing", s.shutdown)
	t.Run("Counting", s.counting)
	t.Run("Traces", s.traces)
}

type suite struct {
	env Env
	r   time.Duration // resolution
}

// slack is the scheduling allowance on top of the promised accuracy.
const slack = 400 * time.Millisecond

func (s *suite) broker(t *testing.T) broker.Broker {
	t.Helper()
	b := s.env.New(t)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func (s *suite) sub(topic, group string, p retrypolicy.Policy) broker.Subscription {
	return broker.Subscription{
		Topic: topic, Group: group, Policy: p, RetryMode: s.env.RetryMode,
		Concurrency: 4, ShutdownTimeout: 10 * time.Second,
	}
}

func (s *suite) schedule(steps ...int) retrypolicy.Schedule {
	sch := retrypolicy.Schedule{}
	for _, n := range steps {
		sch.Delays = append(sch.Delays, time.Duration(n)*s.r)
	}
	return sch
}

func declare(t *testing.T, b broker.Broker, subs ...broker.Subscription) {
	t.Helper()
	if err := b.Declare(t.Context(), subs...); err != nil {
		t.Fatalf("Declare: %v", err)
	}
}

func publish(t *testing.T, b broker.Broker, topic string, msgs ...broker.Message) {
	t.Helper()
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatalf("Publish(%s, %d messages): %v", topic, len(msgs), err)
	}
}

func messages(prefix string, n int) []broker.Message {
	out := make([]broker.Message, n)
	for i := range out {
		id := fmt.Sprintf("%s-%04d", prefix, i)
		out[i] = broker.Message{ID: id, Key: []byte(id), Value: []byte(`{"n":` + fmt.Sprint(i) + `}`),
			Headers: map[string]string{"trace-id": "t-" + id}}
	}
	return out
}

// publishConsume: two groups each get every message; two members of one
// group share the load.
func (s *suite) publishConsume(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	subA := s.sub(topic, "group-a", retrypolicy.Policy{})
	subB := s.sub(topic, "group-b", retrypolicy.Policy{})
	subA.Concurrency, subB.Concurrency = 1, 1
	declare(t, b, subA, subB)
	rec := newRecorder()
	slow := func(*broker.Delivery) error { time.Sleep(5 * time.Millisecond); return nil } // simulated work, so members overlap
	testenv.Consume(t, b, subA, rec.handler("group-a", 1, slow))
	testenv.Consume(t, b, subA, rec.handler("group-a", 2, slow))
	testenv.Consume(t, b, subB, rec.handler("group-b", 1, nil))

	const n = 300
	msgs := messages("pc", n)
	publish(t, b, topic, msgs...)
	calls := rec.WaitUntil(t, 60*time.Second, "both groups to handle every message", func(c []call) bool {
		return len(successes(c, "group-a")) == n && len(successes(c, "group-b")) == n
	})
	members := map[int]int{}
	for _, c := range calls {
		if c.group == "group-a" {
			members[c.member]++
		}
	}
	if members[1] == 0 || members[2] == 0 {
		t.Errorf("group-a members handled %v: want both members to share the load", members)
	}
	want := map[string]broker.Message{}
	for _, m := range msgs {
		want[m.ID] = m
	}
	for _, c := range calls {
		m := want[c.d.ID]
		if !bytes.Equal(c.d.Value, m.Value) || !bytes.Equal(c.d.Key, m.Key) || c.d.Headers["trace-id"] != m.Headers["trace-id"] {
			t.Fatalf("delivery %s = key %q value %q headers %v, want key %q value %q trace-id %q",
				c.d.ID, c.d.Key, c.d.Value, c.d.Headers, m.Key, m.Value, m.Headers["trace-id"])
		}
		if c.d.Topic != topic || c.d.Attempt != 1 {
			t.Fatalf("delivery %s: topic %q attempt %d, want %q and 1", c.d.ID, c.d.Topic, c.d.Attempt, topic)
		}
	}
	reportDuplicates(t, calls, "group-a", "group-b")
}

// retryThenSucceed: fails twice, then succeeds on attempt 3; each retry
// is not earlier than its scheduled delay; no dead letter.
func (s *suite) retryThenSucceed(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "worker", retrypolicy.Policy{MaxRetries: 3, Backoff: s.schedule(2, 4)})
	declare(t, b, sub)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler("worker", 1, func(d *broker.Delivery) error {
		if d.Attempt < 3 {
			return failing("attempt %d fails", d.Attempt)
		}
		return nil
	}))
	publish(t, b, topic, messages("rts", 1)...)
	calls := rec.WaitUntil(t, 30*time.Second, "success on attempt 3", func(c []call) bool {
		return len(successes(c, "worker")) == 1
	})
	if len(calls) != 3 {
		t.Fatalf("handler calls = %d, want 3", len(calls))
	}
	for i, c := range calls {
		if c.attempt != i+1 {
			t.Errorf("call %d: attempt %d, want %d", i+1, c.attempt, i+1)
		}
	}
	for i, want := range []time.Duration{2 * s.r, 4 * s.r} {
		gap := calls[i+1].at.Sub(calls[i].at)
		if gap < want {
			t.Errorf("retry %d came after %s, earlier than its %s back-off", i+1, gap, want)
		}
	}
	if c := calls[2]; c.d.FirstFailureAt.IsZero() || c.d.LastError == "" {
		t.Errorf("attempt 3 carries no story: first failure %v, last error %q", c.d.FirstFailureAt, c.d.LastError)
	}
	if got := s.env.DeadLetters(t.Context(), t, topic, "worker", 0, 3*s.r); len(got) != 0 {
		t.Errorf("dead letters = %d, want 0", len(got))
	}
}

// headersOnDemand: with Subscription.HeadersOnDemand a first delivery has
// no Headers map, and the handler reads every header with Header on each
// attempt; retries and the dead letter carry them as usual. Counted:
// published = handled + dead-lettered.
func (s *suite) headersOnDemand(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "worker", retrypolicy.Policy{MaxRetries: 1, Backoff: s.schedule(1)})
	sub.HeadersOnDemand = true
	declare(t, b, sub)
	rec := newRecorder()
	const n = 10
	msgs := messages("hod", n)
	testenv.Consume(t, b, sub, rec.handler("worker", 1, func(d *broker.Delivery) error {
		switch {
		case d.ID == msgs[0].ID:
			return failing("always")
		case d.Attempt == 1 && d.ID < msgs[n/2].ID:
			return failing("once")
		}
		return nil
	}))
	publish(t, b, topic, msgs...)
	dls := s.env.DeadLetters(t.Context(), t, topic, "worker", 1, 3*s.r)
	calls := rec.waitHandledOnce(t, "worker", n-1, 30*time.Second)
	if len(dls) != 1 || dls[0].MessageID != msgs[0].ID {
		t.Fatalf("dead letters %v, want %s alone", dls, msgs[0].ID)
	}
	if got, want := dls[0].OriginalHeaders["trace-id"], "t-"+msgs[0].ID; got != want {
		t.Errorf("dead letter's trace-id = %q, want %q", got, want)
	}
	for _, c := range calls {
		if got, want := c.d.Header("trace-id"), "t-"+c.d.ID; got != want {
			t.Errorf("%s attempt %d: Header(trace-id) = %q, want %q", c.d.ID, c.attempt, got, want)
		}
		if c.attempt == 1 && c.d.Headers != nil {
			t.Errorf("%s attempt 1: Headers built (%v) with HeadersOnDemand", c.d.ID, c.d.Headers)
		}
	}
}

// reuseDeliveries: with Subscription.ReuseDeliveries a handler that keeps
// nothing of its delivery, but writes its Headers, sees on every attempt
// its own message's value and headers, never what an earlier message or
// call left (Kafka refills the same Deliveries and maps; RabbitMQ gives
// each its own). A failure is retried and dead-lettered with the headers
// as published. Counted: published = handled + dead-lettered.
func (s *suite) reuseDeliveries(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "worker", retrypolicy.Policy{MaxRetries: 1, Backoff: s.schedule(1)})
	sub.ReuseDeliveries = true
	declare(t, b, sub)
	const n = 600 // several batches of a Kafka partition's worker
	msgs := messages("reuse", n)
	index := map[string]int{}
	for i := range msgs {
		if i%3 == 0 {
			msgs[i].Headers["third"] = ""
		}
		index[msgs[i].ID] = i
	}
	var (
		mu    sync.Mutex
		wrong []string // what a call saw that was not its message's
	)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler("worker", 1, func(d *broker.Delivery) error {
		i, ok := index[d.ID]
		got := map[string]string{}
		for k, v := range d.AllHeaders() {
			if !strings.HasPrefix(k, "x-") { // redrive's and the broker's
				got[k] = v
			}
		}
		if !ok || !bytes.Equal(d.Value, msgs[i].Value) || !maps.Equal(got, msgs[i].Headers) {
			mu.Lock()
			wrong = append(wrong, fmt.Sprintf("%s attempt %d: value %q headers %v", d.ID, d.Attempt, d.Value, got))
			mu.Unlock()
		}
		if d.Headers != nil {
			d.Headers["scratch"] = d.ID
		}
		switch {
		case i == 0:
			return failing("always")
		case d.Attempt == 1 && i%7 == 0:
			return failing("once")
		}
		return nil
	}))
	for start := 0; start < n; start += 100 {
		publish(t, b, topic, msgs[start:start+100]...)
	}
	dls := s.env.DeadLetters(t.Context(), t, topic, "worker", 1, 3*s.r)
	rec.waitHandledOnce(t, "worker", n-1, 60*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(wrong) > 0 {
		t.Fatalf("%d calls saw another message's value or headers, first: %s", len(wrong), wrong[0])
	}
	if len(dls) != 1 || dls[0].MessageID != msgs[0].ID {
		t.Fatalf("dead letters %v, want %s alone", dls, msgs[0].ID)
	}
	h := dls[0].OriginalHeaders
	if third, ok := h["third"]; h["trace-id"] != "t-"+msgs[0].ID || !ok || third != "" || h["scratch"] != "" {
		t.Errorf("dead letter's headers %v, want the published trace-id and third, no scratch", h)
	}
}

// alwaysFails: exactly max_retries+1 handler calls, then one dead letter
// with its whole story.
func (s *suite) alwaysFails(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	const maxRetries = 2
	sub := s.sub(topic, "worker", retrypolicy.Policy{MaxRetries: maxRetries, Backoff: s.schedule(1)})
	declare(t, b, sub)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler("worker", 1, func(d *broker.Delivery) error {
		return failing("boom on attempt %d", d.Attempt)
	}))
	msg := broker.Message{ID: "always-1", Key: []byte("deal_550e8400"), Value: []byte("{\n  \"pretty\": true\n}\n"),
		Headers: map[string]string{"tenant": "acme"}}
	publish(t, b, topic, msg)
	dls := s.env.DeadLetters(t.Context(), t, topic, "worker", 1, 3*s.r)
	if len(dls) != 1 {
		t.Fatalf("dead letters = %d, want 1", len(dls))
	}
	if n := len(rec.Snapshot()); n != maxRetries+1 {
		t.Errorf("handler calls = %d, want max_retries+1 = %d", n, maxRetries+1)
	}
	e := dls[0]
	checks := []struct {
		field     string
		got, want any
	}{
		{"reason", e.Reason, string(driver.ReasonMaxRetries)},
		{"retry count", e.RetryCount, maxRetries},
		{"error class", e.ErrorClass, "e2e.Failing"},
		{"error message", e.ErrorMessage, fmt.Sprintf("boom on attempt %d", maxRetries+1)},
		{"worker", e.Worker, "worker"},
		{"original topic", e.OriginalTopic, topic},
		{"message id", e.MessageID, msg.ID},
		{"value", string(e.OriginalValue), string(msg.Value)},
		{"key", string(e.OriginalKey), string(msg.Key)},
		{"headers", fmt.Sprint(e.OriginalHeaders), fmt.Sprint(msg.Headers)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("dead letter %s = %v, want %v", c.field, c.got, c.want)
		}
	}
	if e.Source == "" || e.FirstFailureAt.IsZero() || e.LastFailureAt.Before(e.FirstFailureAt) {
		t.Errorf("dead letter story incomplete: source %q first %v last %v", e.Source, e.FirstFailureAt, e.LastFailureAt)
	}
}

// permanentAndRetryAfter: Permanent goes to the DLQ after one call;
// RetryAfter replaces the schedule's delay.
func (s *suite) permanentAndRetryAfter(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "worker", retrypolicy.Policy{MaxRetries: 3, Backoff: s.schedule(50)})
	declare(t, b, sub)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler("worker", 1, func(d *broker.Delivery) error {
		switch {
		case d.ID == "perm":
			return broker.Permanent(failing("cannot decode"))
		case d.ID == "after" && d.Attempt == 1:
			return broker.RetryAfter(failing("busy"), 2*s.r)
		}
		return nil
	}))
	publish(t, b, topic, broker.Message{ID: "perm", Value: []byte("x")}, broker.Message{ID: "after", Value: []byte("y")})
	calls := rec.WaitUntil(t, 30*time.Second, "RetryAfter message to succeed", func(c []call) bool {
		return successes(c, "worker")["after"] == 1
	})
	after := callsOf(calls, "worker", "after")
	if gap := after[1].at.Sub(after[0].at); gap < 2*s.r || gap >= 50*s.r {
		t.Errorf("RetryAfter(2×resolution) retried after %s; want ≥ %s and well below the schedule's %s", gap, 2*s.r, 50*s.r)
	}
	dls := s.env.DeadLetters(t.Context(), t, topic, "worker", 1, 3*s.r)
	if len(dls) != 1 || dls[0].Reason != string(driver.ReasonPermanent) || dls[0].MessageID != "perm" {
		t.Fatalf("dead letters = %+v, want one permanent entry for message perm", dls)
	}
	if n := len(callsOf(rec.Snapshot(), "worker", "perm")); n != 1 {
		t.Errorf("permanent message handled %d times, want 1", n)
	}
}

// retryOnlyFailingGroup: a retry reaches only the group that failed.
func (s *suite) retryOnlyFailingGroup(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	p := retrypolicy.Policy{MaxRetries: 3, Backoff: s.schedule(1)}
	subA, subB := s.sub(topic, "fails-once", p), s.sub(topic, "healthy", p)
	declare(t, b, subA, subB)
	rec := newRecorder()
	testenv.Consume(t, b, subA, rec.handler("fails-once", 1, func(d *broker.Delivery) error {
		if d.Attempt == 1 {
			return failing("first try fails")
		}
		return nil
	}))
	testenv.Consume(t, b, subB, rec.handler("healthy", 1, nil))
	publish(t, b, topic, messages("rofg", 5)...)
	rec.WaitUntil(t, 30*time.Second, "both groups to succeed", func(c []call) bool {
		return len(successes(c, "fails-once")) == 5 && len(successes(c, "healthy")) == 5
	})
	// Give a stray retry copy time to reach the healthy group, if one were
	// misrouted: the retry back-off is one resolution.
	time.Sleep(5 * s.r)
	for id, n := range successes(rec.Snapshot(), "healthy") {
		if n != 1 {
			t.Errorf("healthy group handled %s %d times, want 1: a retry leaked to another group", id, n)
		}
	}
}

// publishDelayed: never early, at most one resolution late, bounded tier
// passes.
func (s *suite) publishDelayed(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "worker", retrypolicy.Policy{})
	sub2 := s.sub(topic, "other", retrypolicy.Policy{})
	declare(t, b, sub, sub2)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler("worker", 1, nil))
	testenv.Consume(t, b, sub2, rec.handler("other", 1, nil))
	delays := []int{1, 3, 5, 37} // in resolutions; 37 = 2×16 + 4 + 1 with factor 4
	sent := map[string]time.Time{}
	want := map[string]time.Duration{}
	for i, n := range delays {
		id := fmt.Sprintf("delayed-%d", i)
		d := time.Duration(n) * s.r
		if i == 1 {
			d += s.r / 2 // a delay that is not a whole number of resolutions
		}
		sent[id], want[id] = time.Now(), d
		if err := b.PublishDelayed(t.Context(), topic, d, broker.Message{ID: id, Value: []byte(id)}); err != nil {
			t.Fatalf("PublishDelayed: %v", err)
		}
	}
	calls := rec.WaitUntil(t, 60*time.Second, "every delayed message in both groups", func(c []call) bool {
		return len(successes(c, "worker")) == len(delays) && len(successes(c, "other")) == len(delays)
	})
	for _, c := range calls {
		late := c.at.Sub(sent[c.d.ID]) - want[c.d.ID]
		if late < 0 {
			t.Errorf("%s (%s) handled %s early", c.d.ID, want[c.d.ID], -late)
		}
		if late > s.r+slack {
			t.Errorf("%s (%s) handled %s late, want at most one resolution (%s) plus %s", c.d.ID, want[c.d.ID], late, s.r, slack)
		}
		if s.env.TierPasses != nil {
			if got, max := s.env.TierPasses(&c.d), s.env.MaxTierPasses(want[c.d.ID]); got > max || got < 1 {
				t.Errorf("%s (%s) took %d tier passes, want 1..%d", c.d.ID, want[c.d.ID], got, max)
			}
		}
	}
}

// queueTTL: with no consumer, a message outlives the worker's queue TTL
// and lands in the DLQ with reason expired, without a handler call.
func (s *suite) queueTTL(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "dead-worker", retrypolicy.Policy{MaxRetries: 3})
	sub.MaxAge = 3 * s.r
	declare(t, b, sub)
	publish(t, b, topic, broker.Message{ID: "stale", Value: []byte("deadline passed")})
	time.Sleep(2 * sub.MaxAge) // the worker is down for longer than the TTL
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler("dead-worker", 1, nil))
	dls := s.env.DeadLetters(t.Context(), t, topic, "dead-worker", 1, 3*s.r)
	if len(dls) != 1 || dls[0].Reason != string(driver.ReasonExpired) || dls[0].MessageID != "stale" {
		t.Fatalf("dead letters = %+v, want one entry for stale with reason expired", dls)
	}
	if !bytes.Equal(dls[0].OriginalValue, []byte("deadline passed")) {
		t.Errorf("expired entry value = %q", dls[0].OriginalValue)
	}
	if n := len(rec.Snapshot()); n != 0 {
		t.Errorf("handler called %d times for an expired message, want 0", n)
	}
}

// shutdown: stopping a consumer while handlers run loses nothing; in-flight
// handlers finish.
func (s *suite) shutdown(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "worker", retrypolicy.Policy{MaxRetries: 1, Backoff: s.schedule(1)})
	declare(t, b, sub)
	const n = 200
	rec := newRecorder()
	work := func(d *broker.Delivery) error { time.Sleep(20 * time.Millisecond); return nil }
	stop := testenv.Consume(t, b, sub, rec.handler("worker", 1, work))
	publish(t, b, topic, messages("sd", n)...)
	rec.WaitUntil(t, 30*time.Second, "a quarter of the messages", func(c []call) bool { return len(c) >= n/4 })
	stop()
	first := len(rec.Snapshot())
	if first >= n {
		t.Logf("all %d messages were handled before shutdown; the restart has nothing left", n)
	}
	testenv.Consume(t, b, sub, rec.handler("worker", 2, work))
	calls := rec.WaitUntil(t, 60*time.Second, "every message after restart", func(c []call) bool {
		return len(successes(c, "worker")) == n
	})
	reportDuplicates(t, calls, "worker")
}

// counting: 2,000 messages, 10 % failing at random, some for good:
// handled + dead-lettered = 2,000.
func (s *suite) counting(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "worker", retrypolicy.Policy{MaxRetries: 2, Backoff: s.schedule(1)})
	sub.Concurrency = 8
	declare(t, b, sub)
	const n = 2000
	rng := rand.New(rand.NewPCG(7, 11))
	fate := map[string]string{} // id -> "ok" | "flaky" | "fatal" | "permanent"
	msgs := messages("cnt", n)
	for _, m := range msgs {
		switch x := rng.IntN(100); {
		case x < 1:
			fate[m.ID] = "permanent"
		case x < 2:
			fate[m.ID] = "fatal"
		case x < 10:
			fate[m.ID] = "flaky"
		default:
			fate[m.ID] = "ok"
		}
	}
	wantDead := 0
	for _, f := range fate {
		if f == "permanent" || f == "fatal" {
			wantDead++
		}
	}
	fates := maps.Clone(fate)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler("worker", 1, func(d *broker.Delivery) error {
		switch fates[d.ID] {
		case "permanent":
			return broker.Permanent(failing("bad payload"))
		case "fatal":
			return failing("always fails")
		case "flaky":
			if d.Attempt == 1 {
				return failing("flaky")
			}
		}
		return nil
	}))
	for i := 0; i < n; i += 200 {
		publish(t, b, topic, msgs[i:i+200]...)
	}
	calls := rec.WaitUntil(t, 120*time.Second, "every healthy message handled", func(c []call) bool {
		return len(successes(c, "worker")) == n-wantDead
	})
	dls := s.env.DeadLetters(t.Context(), t, topic, "worker", wantDead, 5*s.r)
	dead := map[string]int{}
	for _, e := range dls {
		dead[e.MessageID]++
	}
	handled := successes(calls, "worker")
	lost := 0
	for _, m := range msgs {
		if handled[m.ID] == 0 && dead[m.ID] == 0 {
			lost++
		}
	}
	dupHandled, dupDead := 0, 0
	for _, c := range handled {
		dupHandled += c - 1
	}
	for _, c := range dead {
		dupDead += c - 1
	}
	t.Logf("%s %s counting: published %d, handled %d, dead-lettered %d, lost %d, duplicates %d handled / %d dead",
		s.env.Name, sub.RetryMode, n, len(handled), len(dead), lost, dupHandled, dupDead)
	if lost != 0 || len(handled)+len(dead) != n {
		t.Fatalf("lost %d messages: handled %d + dead-lettered %d != published %d", lost, len(handled), len(dead), n)
	}
	if len(dead) != wantDead {
		t.Errorf("dead-lettered %d distinct messages, want %d", len(dead), wantDead)
	}
	for id := range dead {
		if f := fate[id]; f != "permanent" && f != "fatal" {
			t.Errorf("message %s (%s) was dead-lettered", id, f)
		}
	}
}

// reportDuplicates logs how many messages a group handled more than once
// (at-least-once allows it; the count must be visible).
func reportDuplicates(t *testing.T, calls []call, groups ...string) {
	for _, g := range groups {
		dups := 0
		for _, n := range successes(calls, g) {
			dups += n - 1
		}
		t.Logf("group %s: %d distinct messages handled, %d duplicates", g, len(successes(calls, g)), dups)
	}
}
