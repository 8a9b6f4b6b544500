package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// The property tests of issue 40 (TestForeignRabbitMQ, TestForeignKafka)
// publish generated foreign messages (foreign_gen_test.go) with the raw
// clients and send each down the path its fate says: handled, retried (each
// delay and retry mode), handed back, delayed, expired, dead-lettered,
// kept by the keeper, listed, replayed or refused. This file is what both
// share: the handler that plays the fates, the checks of what the handler
// and the store see against what was published, and the accounting.

// foreignMsg is what a run knows of one published message.
type foreignMsg struct {
	fate fate
	body []byte
	// view is the handler's string view of its headers, redrive's own
	// aside, as published.
	view map[string]string
	// sent is when it was published (a delayed one is never handled
	// before sent + foreignDelay).
	sent time.Time
}

// foreignRun plays one run's fates and counts what happened.
type foreignRun struct {
	msgs []foreignMsg
	// identify tells which message a delivery is (false: none).
	identify func(d *broker.Delivery) (int, bool)

	mu       sync.Mutex
	calls    map[int]int // first-life handler calls
	handled  map[int]int // first-life successes
	replayed map[int]int // successes of replays
	unknown  int         // deliveries of no published message
	problems []string    // what the handler saw wrong
	changed  testenv.Recorder[struct{}]
}

func newForeignRun(msgs []foreignMsg, identify func(d *broker.Delivery) (int, bool)) *foreignRun {
	return &foreignRun{msgs: msgs, identify: identify, calls: map[int]int{}, handled: map[int]int{}, replayed: map[int]int{}}
}

// ownless is h without redrive's own headers.
func ownless(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		if !wire.Own(k) {
			out[k] = v
		}
	}
	return out
}

// handle is the worker's handler: it checks the delivery against what was
// published and plays the message's fate.
func (fr *foreignRun) handle(_ context.Context, d *broker.Delivery) error {
	defer fr.changed.Add(struct{}{})
	i, ok := fr.identify(d)
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if !ok {
		fr.unknown++
		return nil
	}
	m := fr.msgs[i]
	problem := func(format string, args ...any) {
		fr.problems = append(fr.problems, fmt.Sprintf("message %d (%s): ", i, m.fate)+fmt.Sprintf(format, args...))
	}
	if !bytes.Equal(d.Value, m.body) {
		problem("body of %d bytes, want the %d published", len(d.Value), len(m.body))
	}
	if got := ownless(maps.Collect(d.AllHeaders())); m.view != nil && !maps.Equal(got, m.view) {
		problem("headers %q, want %q", got, m.view)
	}
	if d.Header(broker.HeaderReplayedFrom) != "" {
		if !m.fate.replayable() {
			problem("replayed")
		}
		fr.replayed[i]++
		return nil
	}
	fr.calls[i]++
	switch m.fate {
	case fateHandled:
	case fateDelayed:
		if early := time.Until(m.sent.Add(foreignDelay)); early > 0 {
			problem("handled %s before its delay ended", early)
		}
	case fateRetried:
		if d.Attempt < 3 {
			return failing("retry me (attempt %d)", d.Attempt)
		}
	case fateRequeued:
		if d.Attempt != 1 {
			problem("attempt %d after a hand-back, want 1", d.Attempt)
		}
		if fr.calls[i] == 1 {
			return broker.Requeue(errors.New("downstream busy"))
		}
	case fatePermanent:
		return broker.Permanent(failing("cannot process it"))
	case fateExhausted:
		return failing("failing (attempt %d)", d.Attempt)
	default:
		problem("handed to the handler")
		return broker.Permanent(failing("must not be handled"))
	}
	fr.handled[i]++
	return nil
}

// count returns how many messages were handled in their first life and
// how many replays were.
func (fr *foreignRun) count() (handled, replayed int) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return len(fr.handled), len(fr.replayed)
}

// want returns how many messages each fate group holds: handled in their
// first life, dead-lettered, and replayed.
func (fr *foreignRun) want() (handled, dead, replayed int) {
	for _, m := range fr.msgs {
		switch {
		case m.fate.firstLife():
			handled++
		case m.fate.replayable():
			dead++
			replayed++
		default:
			dead++
		}
	}
	return
}

// waitHandled waits until every first-life message was handled and n
// replays were.
func (fr *foreignRun) waitHandled(t *testing.T, what string, handled, replayed int) {
	t.Helper()
	fr.changed.WaitUntil(t, 60*time.Second, what, func([]struct{}) bool {
		h, r := fr.count()
		return h >= handled && r >= replayed
	})
}

// drive runs sub's worker on b with the handler of fr and a keeper of
// dlqName on st until every fate is played: the first-life messages
// handled, the dead letters kept, replayed (or refused, see replayAll)
// and the replays handled. It returns how many entries were kept and
// how many refused, the worker stopped.
func (fr *foreignRun) drive(t *testing.T, s *suite, b broker.Broker, st *counting, sub broker.Subscription, dlqName string,
	which func(e dlq.Entry) (int, bool), check func(i int, e dlq.Entry)) (stored, refused int) {
	t.Helper()
	s.keeper(t, b, st, dlqName, nil)
	stop := testenv.Consume(t, b, sub, fr.handle)
	defer stop()
	wantHandled, wantDead, wantReplayed := fr.want()
	fr.waitHandled(t, "every first-life message handled", wantHandled, 0)
	stored = int(st.waitStored(t, dlqName, int64(wantDead), 60*time.Second))
	refused = fr.replayAll(t, st, s.ops(t, b, st, [2]string{sub.Topic, sub.Group}), dlqName, which, check)
	fr.waitHandled(t, "every replay handled", wantHandled, wantReplayed)
	return stored, refused
}

// replayAll replays every entry of dlqName in st through ops: a message
// of a replayable fate must replay, an undecodable one must be refused
// (ErrUnknownMessage). check compares each entry with what was published;
// which tells the message of an entry. It returns how many were refused.
func (fr *foreignRun) replayAll(t *testing.T, st dlq.Store, ops *operate.Ops, dlqName string,
	which func(e dlq.Entry) (int, bool), check func(i int, e dlq.Entry)) (refused int) {
	t.Helper()
	ctx := t.Context()
	page, err := st.List(ctx, dlq.Query{DLQ: dlqName, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	kept := map[int]int{}
	for _, r := range page.Records {
		full, err := st.Get(ctx, r.DLQ, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		i, ok := which(full.Entry)
		if !ok {
			t.Errorf("entry %s: no published message has it (body %.40q)", r.ID, full.Entry.OriginalValue)
			continue
		}
		kept[i]++
		m := fr.msgs[i]
		if full.Entry.Reason != string(m.fate.reason()) {
			t.Errorf("message %d (%s): kept with reason %q, want %q", i, m.fate, full.Entry.Reason, m.fate.reason())
		}
		if !bytes.Equal(full.Entry.OriginalValue, m.body) {
			t.Errorf("message %d (%s): kept body of %d bytes, want the %d published", i, m.fate, len(full.Entry.OriginalValue), len(m.body))
		}
		check(i, full.Entry)
		_, err = ops.Replay(ctx, r.DLQ, r.ID, "property-test")
		switch {
		case m.fate.replayable() && err != nil:
			t.Errorf("message %d (%s): replay: %v", i, m.fate, err)
		case !m.fate.replayable() && !errors.Is(err, operate.ErrUnknownMessage):
			t.Errorf("message %d (%s): replay = %v, want ErrUnknownMessage", i, m.fate, err)
		case !m.fate.replayable():
			refused++
		}
	}
	for i, m := range fr.msgs {
		if want := map[bool]int{true: 1}[!m.fate.firstLife()]; kept[i] != want {
			t.Errorf("message %d (%s): kept %d times, want %d", i, m.fate, kept[i], want)
		}
	}
	return refused
}

// account checks the end state: every first-life message handled, every
// dead-lettered one kept (and replayed, when it may be) — published =
// handled + dead-lettered + parked, with nothing parked — no message
// handled on the wrong path, no delivery of an unknown message, nothing
// the handler saw wrong. Duplicates (at least once) are counted and
// reported.
func (fr *foreignRun) account(t *testing.T, seed int64, stored int, parked int, refused int) {
	t.Helper()
	fr.mu.Lock()
	defer fr.mu.Unlock()
	wantHandled, wantDead, wantReplayed := fr.want()
	dups := 0
	for i, m := range fr.msgs {
		h, r := fr.handled[i], fr.replayed[i]
		if h > 1 || r > 1 {
			dups += max(h-1, 0) + max(r-1, 0)
		}
		if m.fate.firstLife() != (h > 0) || m.fate.replayable() != (r > 0) {
			t.Errorf("message %d (%s): handled %d times, replayed %d", i, m.fate, h, r)
		}
		if !m.fate.firstLife() && m.fate != fatePermanent && m.fate != fateExhausted && fr.calls[i] > 0 {
			t.Errorf("message %d (%s): its handler was called %d times in its first life", i, m.fate, fr.calls[i])
		}
	}
	for _, p := range fr.problems {
		t.Error(p)
	}
	if fr.unknown > 0 {
		t.Errorf("%d deliveries of no published message", fr.unknown)
	}
	if parked != 0 || stored != wantDead {
		t.Errorf("parked %d, kept %d; want 0 and %d", parked, stored, wantDead)
	}
	t.Logf("seed %d: published %d = handled %d + dead-lettered %d + parked %d; replayed %d, refused %d; duplicates %d",
		seed, len(fr.msgs), len(fr.handled), stored, parked, len(fr.replayed), refused, dups)
	if len(fr.msgs) != len(fr.handled)+stored+parked || len(fr.handled) != wantHandled || len(fr.replayed) != wantReplayed {
		t.Errorf("accounting: published %d, handled %d, dead-lettered %d, parked %d, replayed %d; want handled %d, replayed %d",
			len(fr.msgs), len(fr.handled), stored, parked, len(fr.replayed), wantHandled, wantReplayed)
	}
}
