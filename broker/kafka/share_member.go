package kafka

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxShareFetchWait bounds how long a member's fetch waits on a broker
// that has nothing for it, whatever Config.FetchMaxWait says: with strict
// polls a member fetches from one broker at a time, and the other
// brokers' records wait meanwhile; fetching ahead, a fetch parked on a
// share partition whose in-flight records are at the broker's limit holds
// the member's next poll (with 500 ms the bench's fetch-ahead consume ran
// at 0.20 × raw, with 25 ms at 0.77).
const maxShareFetchWait = 25 * time.Millisecond

// turnPoll bounds how long a member with a turn to poll waits for
// records when standby members wait for a turn (Config.ShareStandby).
const turnPoll = 2 * maxShareFetchWait

// shareMember is one member of the share group: a client that polls,
// hands what it took to the consumer's handlers, renews the locks of what
// it holds, and polls again once every record it took is settled.
type shareMember struct {
	c   *shareConsumer
	cl  *kgo.Client
	log *slog.Logger

	mu sync.Mutex
	// batch holds the records of the last poll, in one allocation; open
	// counts those not settled yet. The member polls again only once open
	// is 0.
	batch []shareRecord
	open  int
	// held counts the open records in phaseHeld: a member whose open
	// records are all held gives its turn to a standby member.
	held    int
	idle    chan struct{} // signaled when open became held (or 0)
	took    chan struct{} // signaled when a poll took records
	stopped bool          // stop began: nothing is held any more
	gone    bool          // stop ended: what runs still is abandoned
	lock    time.Duration // the acquisition lock of the last poll
	// interrupt cancels the poll in progress (the worker was paused).
	interrupt context.CancelFunc
}

// newMember returns member i of c, its client created. By default the
// client fetches only while the member polls, at most Prefetch records
// (franz-go's strict share polls): nothing is locked for the member but
// what it handles, so that a record's delivery count counts the
// deliveries to a handler (and those a crash takes with it), and a member
// that holds a record takes nothing the others could handle. Such a
// client fetches from one broker at a time (see maxShareFetchWait). With
// Config.ShareFetchAhead the client fetches ahead, franz-go's default:
// faster, but what it fetched waits, locked, in a member that holds a
// record, and costs a delivery if the member stops or crashes before
// polling it.
func (c *shareConsumer) newMember(i int) (*shareMember, error) {
	m := &shareMember{
		c:    c,
		log:  c.log.With("member", i),
		idle: make(chan struct{}, 1),
		took: make(chan struct{}, 1),
		lock: defaultShareLock,
	}
	opts := c.b.baseOptions()
	opts = append(opts,
		kgo.ShareGroup(c.sub.Group),
		kgo.ConsumeTopics(c.sub.Topic),
		kgo.ShareMaxRecords(int32(c.sub.Prefetch)),
		kgo.ShareAckCallback(m.acked),
	)
	opts = append(opts, kgo.FetchMaxWait(min(c.b.cfg.FetchMaxWait, maxShareFetchWait)))
	if !c.b.cfg.ShareFetchAhead {
		opts = append(opts, kgo.ShareMaxRecordsStrict())
	}
	opts = append(opts, c.b.cfg.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	return m, nil
}

// run polls until ctx ends, then gives back what the member holds and
// waits (bounded by the shutdown timeout) for what runs. The member polls
// only with a turn (shareConsumer.turns): it keeps it while its polls are
// handled to the end, and gives it to a standby member while it waits out
// back-offs.
func (m *shareMember) run(ctx context.Context) {
	renewCtx, stopRenew := context.WithCancel(context.Background())
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		m.renewLoop(renewCtx)
	}()
	defer func() {
		stopRenew()
		<-renewed
	}()
	for m.waitUnpaused(ctx) {
		if !m.c.takeTurn(ctx) {
			break
		}
		holding, more := m.pollTurn(ctx)
		m.c.giveTurn()
		if !more {
			break
		}
		if !holding {
			continue
		}
		// The acknowledgements go with the next poll, which may wait
		// for a turn: sent now, they move the share partition's start
		// offset on (the broker hands out a bounded window past it).
		m.flushAcks()
		if !m.waitSettled(ctx.Done()) {
			break
		}
		m.flushAcks()
	}
	m.stop()
}

// flushAcks has the acknowledgements marked so far sent now, rather
// than with the next poll, without waiting for the broker's answer
// (FlushAcks signals the client's connections first, then waits until
// its context ends: canceled, it does not wait).
func (m *shareMember) flushAcks() {
	_ = m.cl.FlushAcks(canceled)
}

// canceled is a context canceled from the start.
var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// pollTurn polls while the member has the turn: until a poll takes
// nothing (the worker paused, nothing to take) or leaves the member
// holding records in back-offs (holding), once everything else it took
// is settled. more is false when ctx ends.
func (m *shareMember) pollTurn(ctx context.Context) (holding, more bool) {
	for {
		fs := m.poll(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return false, false
		}
		fs.EachError(func(topic string, part int32, err error) {
			if !errors.Is(err, context.Canceled) {
				m.log.Warn("share fetch error", "fetch_topic", topic, "partition", part, "error", err)
			}
		})
		polled := time.Now()
		n := fs.NumRecords()
		if n == 0 {
			return false, true
		}
		batch := make([]shareRecord, 0, n)
		fs.EachRecord(func(r *kgo.Record) {
			batch = append(batch, shareRecord{m: m, r: r})
		})
		m.take(batch, polled)
		for i := range batch {
			sr := &batch[i]
			if sr.r.AcquisitionDeadline().Before(polled) { // waited locked too long: someone else has it
				sr.settle(kgo.AckRelease)
				continue
			}
			m.c.dispatch(sr)
		}
		if holding, ok := m.waitWorked(ctx.Done()); !ok || holding {
			return holding, ok
		}
	}
}

// poll polls, until ctx ends or the worker is paused (a pause cancels
// the poll in progress, pauseFetching), and with standby members at most
// turnPoll: the broker's assignor shares the partitions among all the
// members, so a member whose partitions have nothing gives its turn to
// one that may have.
func (m *shareMember) poll(ctx context.Context) kgo.Fetches {
	var (
		pctx   context.Context
		cancel context.CancelFunc
	)
	if cap(m.c.turns) < len(m.c.members) {
		pctx, cancel = context.WithTimeout(ctx, turnPoll)
	} else {
		pctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	m.mu.Lock()
	m.interrupt = cancel
	m.mu.Unlock()
	if on, _ := m.c.b.holds.Of(m.c.sub.Topic, m.c.sub.Group).State(); on { // paused since waitUnpaused
		return nil
	}
	fs := m.cl.PollRecords(pctx, 0)
	m.mu.Lock()
	m.interrupt = nil
	m.mu.Unlock()
	return fs
}

// pauseFetching stops (on) or resumes the member's fetching: paused, the
// client fetches nothing more of the topic and the poll in progress ends.
func (m *shareMember) pauseFetching(on bool) {
	if !on {
		m.cl.ResumeFetchTopics(m.c.sub.Topic)
		return
	}
	m.cl.PauseFetchTopics(m.c.sub.Topic)
	m.mu.Lock()
	if m.interrupt != nil {
		m.interrupt()
	}
	m.mu.Unlock()
}

// waitUnpaused waits while the worker is paused (Broker.PauseConsume):
// the member takes no records meanwhile. It returns false when ctx ends.
func (m *shareMember) waitUnpaused(ctx context.Context) bool {
	hold := m.c.b.holds.Of(m.c.sub.Topic, m.c.sub.Group)
	for {
		on, changed := hold.State()
		if !on {
			return ctx.Err() == nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// take records batch, taken by the poll at polled, as open, and the lock
// the broker granted them: the longest left of any (a record fetched
// ahead has less). A record's lock is taken to have started a lock
// before its deadline, so that the renewals come in time for one fetched
// ahead, whose lock started when it was fetched.
func (m *shareMember) take(batch []shareRecord, polled time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lock time.Duration
	for i := range batch {
		lock = max(lock, batch[i].r.AcquisitionDeadline().Sub(polled))
	}
	if lock > 0 {
		m.lock = lock
	}
	for i := range batch {
		if dl := batch[i].r.AcquisitionDeadline(); dl.IsZero() {
			batch[i].renewed = polled
		} else {
			batch[i].renewed = dl.Add(-m.lock)
		}
	}
	m.batch, m.open, m.held = batch, len(batch), 0
	select { // the renewals follow the lock just learned
	case m.took <- struct{}{}:
	default:
	}
}

// waitSettled waits until every record the member took is settled. It
// returns false when done is closed first.
func (m *shareMember) waitSettled(done <-chan struct{}) bool {
	for {
		m.mu.Lock()
		n := m.open
		m.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-m.idle:
		case <-done:
			return false
		}
	}
}

// waitWorked waits until every record the member took is settled or held
// (waiting out a back-off, a requeue's pause or its due time), and
// reports whether some are held. ok is false when done is closed first.
func (m *shareMember) waitWorked(done <-chan struct{}) (holding, ok bool) {
	for {
		m.mu.Lock()
		open, held := m.open, m.held
		m.mu.Unlock()
		if open == held {
			return held > 0, true
		}
		select {
		case <-m.idle:
		case <-done:
			return false, false
		}
	}
}

// signalIdle tells a waitSettled or waitWorked that no record the member
// took is queued, running or being copied any more (m.mu held).
func (m *shareMember) signalIdle() {
	if m.open == m.held {
		select {
		case m.idle <- struct{}{}:
		default:
		}
	}
}

// forget removes sr from the open records, unless it was settled
// already; it reports whether it did.
func (m *shareMember) forget(sr *shareRecord) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sr.phase == phaseSettled {
		return false
	}
	if sr.phase == phaseHeld {
		m.held--
	}
	sr.phase = phaseSettled
	if sr.timer != nil {
		sr.timer.Stop()
	}
	m.open--
	m.signalIdle()
	return true
}

// setPhase moves sr, unless settled, to p.
func (m *shareMember) setPhase(sr *shareRecord, p sharePhase) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sr.phase == phaseSettled {
		return
	}
	if sr.phase == phaseHeld && p != phaseHeld {
		m.held--
	}
	sr.phase = p
}

// hold keeps sr until until, then calls then (nil: until the member
// stops). A stopping member gives sr back at once.
func (m *shareMember) hold(sr *shareRecord, until time.Time, then func()) {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		sr.settle(kgo.AckRelease)
		return
	}
	if sr.phase != phaseSettled {
		if sr.phase != phaseHeld {
			m.held++
			m.signalIdle()
		}
		sr.phase = phaseHeld
		if then != nil {
			sr.timer = time.AfterFunc(time.Until(until), then)
		}
	}
	m.mu.Unlock()
}

// stop gives back the records the member holds in a back-off, then waits,
// at most the shutdown timeout, for those that run or are being copied to
// settle; the rest is given back when the member leaves the group.
func (m *shareMember) stop() {
	m.mu.Lock()
	m.stopped = true
	var back []*shareRecord
	for i := range m.batch {
		if sr := &m.batch[i]; sr.phase == phaseHeld && (sr.timer == nil || sr.timer.Stop()) {
			back = append(back, sr)
		}
	}
	m.mu.Unlock()
	for _, sr := range back {
		sr.settle(kgo.AckRelease)
	}
	done := make(chan struct{})
	t := time.AfterFunc(m.c.sub.ShutdownTimeout, func() { close(done) })
	defer t.Stop()
	if !m.waitSettled(done) {
		m.mu.Lock()
		n := m.open
		m.mu.Unlock()
		m.log.Warn("records still running at the shutdown timeout; given back when the member leaves", "records", n)
	}
	m.mu.Lock()
	m.gone = true
	m.mu.Unlock()
}

// abandoned reports whether the member stopped waiting for its records:
// a handler that returns after that has its record given back, whatever
// it decided (no copy is written for it).
func (m *shareMember) abandoned() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gone
}
