package jobs

import (
	"context"
	"errors"
	"fmt"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"log/slog"
	"math"
	"os"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultRate        = 100 // replay-all entries per second when a job gives no rate
	DefaultMaxFinished = 100
	// DefaultActor is the actor of a job started without one.
	DefaultActor = "admin"
	// DefaultLease is how long a replica owns a running job without
	// renewing it (Config.Lease).
	DefaultLease = 30 * time.Second
	// MinLease is the shortest Config.Lease accepted.
	MinLease = 30 * time.Millisecond
)

// Config configures Jobs.
type Config struct {
	// Ops replays. Required.
	Ops *operate.Ops
	// DefaultRate is the rate (entries/s) of a job started with a
	// negative rate; default DefaultRate, negative = as fast as the
	// broker confirms. Like a job's rate, it is 0 or from MinReplayRate to
	// MaxReplayRate.
	DefaultRate float64
	// MaxFinished is how many finished jobs are remembered; default
	// DefaultMaxFinished.
	MaxFinished int
	// Store keeps the jobs. Default: in memory (NewMemJobStore), for one
	// process: its jobs end with it (Close cancels them). With a store
	// the replicas share (dlq/pgstore), every replica sees and cancels
	// every job, Close hands its running jobs over (their lease expires at
	// once), and each replica takes over the running jobs whose owner's
	// lease expired, resuming them from their last checkpoint.
	Store dlq.JobStore
	// Replica names this process in the jobs it owns (Job.Owner); default
	// host-pid-random.
	Replica string
	// Lease is how long a replica owns a running job without renewing it;
	// 0 = DefaultLease, else at least MinLease. The owner renews it
	// every Lease/3; with Store set, the replicas look for expired leases
	// every Lease/2.
	Lease time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Jobs runs replay-all jobs in the background, at most one running per
// DLQ, kept in a JobStore with the last Config.MaxFinished finished
// ones. The admin API and the console share one. Entries a job left
// replaying are reconciled by Ops.Run. All methods are safe for concurrent
// use.
type Jobs struct {
	ops     *operate.Ops
	store   dlq.JobStore
	shared  bool // store given: hand over on Close, take over expired leases
	replica string
	lease   time.Duration
	rate    float64
	log     *slog.Logger
	max     int
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	running map[string]*run // the jobs this process runs, by id
}

// run is a job this process runs.
type run struct {
	stop     chan struct{} // closed to stop the run before its next entry
	stopOnce sync.Once
	done     chan struct{} // closed when the run has ended

	mu   sync.Mutex
	live dlq.JobProgress // progress of the run so far (the store has the last checkpoint)
}

func (r *run) halt() { r.stopOnce.Do(func() { close(r.stop) }) }

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c Config) Validate() error {
	if c.Ops == nil {
		return errors.New("dlq: jobs.Config.Ops: required")
	}
	if rate := c.defaultRate(); !operate.ValidReplayRate(rate) {
		return fmt.Errorf("dlq: jobs.Config.DefaultRate: must be 0, negative or from %v to %v messages per second, got %v", operate.MinReplayRate, operate.MaxReplayRate, c.DefaultRate)
	}
	if c.Lease != 0 && c.Lease < MinLease {
		return fmt.Errorf("dlq: jobs.Config.Lease: must be 0 (the default) or at least %s, got %s", MinLease, c.Lease)
	}
	return nil
}

// defaultRate is DefaultRate with its default applied (0 = unbounded).
func (c Config) defaultRate() float64 {
	switch {
	case c.DefaultRate == 0:
		return DefaultRate
	case c.DefaultRate < 0:
		return 0
	}
	return c.DefaultRate
}

// New checks cfg and returns the runner; Close stops it. With
// cfg.Store set, it starts looking for jobs to take over.
func New(cfg Config) (*Jobs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.DefaultRate = cfg.defaultRate()
	if cfg.MaxFinished <= 0 {
		cfg.MaxFinished = DefaultMaxFinished
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Replica == "" {
		cfg.Replica = DefaultReplica()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	js := &Jobs{ops: cfg.Ops, store: cfg.Store, shared: cfg.Store != nil, replica: cfg.Replica, lease: cfg.Lease,
		rate: cfg.DefaultRate, log: cfg.Logger, max: cfg.MaxFinished, running: map[string]*run{}}
	if js.store == nil {
		js.store = dlq.NewMemJobStore()
	}
	js.ctx, js.cancel = context.WithCancel(context.Background())
	if js.shared {
		js.wg.Add(1)
		go js.takeOver()
	}
	return js, nil
}

// DefaultReplica is the default Config.Replica: the host name, the
// process id and a random suffix.
func DefaultReplica() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "redrive"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), dlq.NewID(time.Now())[20:])
}

// Replica is the name of this process in the jobs it owns.
func (js *Jobs) Replica() string { return js.replica }

// Close stops the jobs this process runs and waits for them: each stops
// before its next entry. With the in-memory store they end cancelled;
// with a shared store their lease expires at once, so that another replica
// resumes them. StartReplayAll fails with ErrShuttingDown afterwards.
func (js *Jobs) Close() {
	js.mu.Lock()
	js.cancel()
	js.mu.Unlock()
	js.wg.Wait()
}

// StartReplayAll starts a background job replaying the pending entries of
// q.DLQ that q's filter selects (ErrorClass, Text, Since, Until; the other
// fields are ignored), at most rate per second (0 = as fast as the broker
// confirms, negative = Config.DefaultRate; else from MinReplayRate to
// MaxReplayRate, ErrInvalidQuery outside), with actor (default
// DefaultActor) in the audit rows. ctx bounds only the start; the job
// runs until it is done, it is cancelled (Cancel) or Close is called. It
// returns the new job; with ErrJobRunning, the job already running for
// that DLQ (on any replica sharing the store); ErrUnknownDLQ for a DLQ
// neither configured nor holding records; a *FieldError naming since when
// q.Since is not in the past (the job takes the entries received before
// it starts); ErrShuttingDown once Close was called.
func (js *Jobs) StartReplayAll(ctx context.Context, q dlq.Query, actor string, rate float64) (dlq.Job, error) {
	if rate < 0 {
		rate = js.rate
	}
	if math.IsNaN(rate) || !operate.ValidReplayRate(rate) {
		return dlq.Job{}, fmt.Errorf("%w: rate: %v is not 0 or from %v to %v messages per second", dlq.ErrInvalidQuery, rate, operate.MinReplayRate, operate.MaxReplayRate)
	}
	return js.create(ctx, dlq.JobReplayAll, q, actor, "", rate)
}

// create checks the selection q of a job of kind (the pending entries of
// q's filter), stores the job owned by this replica and runs it.
func (js *Jobs) create(ctx context.Context, kind string, q dlq.Query, actor, reason string, rate float64) (dlq.Job, error) {
	q = dlq.Query{DLQ: q.DLQ, Status: dlq.StatusPending, ErrorClass: q.ErrorClass, Text: q.Text, Group: q.Group, Since: q.Since, Until: q.Until}
	if err := q.Validate(); err != nil {
		return dlq.Job{}, err
	}
	if q.DLQ == "" {
		return dlq.Job{}, fmt.Errorf("%w: dlq: required", dlq.ErrInvalidQuery)
	}
	if actor == "" {
		actor = DefaultActor
	}
	actor, reason = dlq.AuditActor(actor), dlq.AuditReason(reason) // storable as the audit rows keep them
	if js.ctx.Err() != nil {
		return dlq.Job{}, dlq.ErrShuttingDown
	}
	known, err := js.ops.Known(ctx, q.DLQ)
	if err != nil {
		return dlq.Job{}, err
	}
	if !known {
		return dlq.Job{}, fmt.Errorf("%w: %q", dlq.ErrUnknownDLQ, q.DLQ)
	}
	now := time.Now().UTC()
	if !q.Since.IsZero() && !q.Since.Before(now) {
		// The job takes the entries received before it starts: a since
		// from now on selects none, and would fail the job.
		return dlq.Job{}, dlq.BadField("since", "%s is not in the past: a job takes the entries received before it starts", q.Since.UTC().Format(time.RFC3339))
	}
	lease := now.Add(js.lease)
	st := dlq.JobState{Job: dlq.Job{
		ID: dlq.NewID(now), Kind: kind, Reason: reason, DLQ: q.DLQ, Actor: actor, Rate: rate, State: dlq.JobRunning, StartedAt: now,
		Filter: dlq.JobFilter{ErrorClass: q.ErrorClass, Text: q.Text, Group: q.Group, Since: timePtr(q.Since), Until: timePtr(q.Until)},
		Owner:  js.replica, LeaseExpires: &lease,
	}, Until: q.Until}
	if st.Until.IsZero() || st.Until.After(now) {
		st.Until = now
	}
	got, err := js.store.CreateJob(ctx, st)
	if errors.Is(err, dlq.ErrJobRunning) {
		return got.Job, err
	}
	if err != nil {
		return dlq.Job{}, fmt.Errorf("dlq: start %s of %s: %w", kind, q.DLQ, err)
	}
	if !js.launch(got, false) {
		return dlq.Job{}, dlq.ErrShuttingDown // its lease expires: another replica (or this one restarted) resumes it
	}
	return got.Job, nil
}

// launch runs job st in the background, resuming it from its checkpoint
// when resume is set; false once Close was called.
func (js *Jobs) launch(st dlq.JobState, resume bool) bool {
	r := &run{stop: make(chan struct{}), done: make(chan struct{}), live: st.Progress}
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.ctx.Err() != nil {
		return false
	}
	js.running[st.ID] = r
	js.wg.Add(1)
	go func() {
		defer js.wg.Done()
		defer close(r.done)
		js.runJob(st, r, resume)
		js.mu.Lock()
		delete(js.running, st.ID)
		js.mu.Unlock()
	}()
	return true
}

// local returns the run of job id when this process runs it.
func (js *Jobs) local(id string) *run {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.running[id]
}

// Lookup returns the replay-all job id (running, or among the last
// Config.MaxFinished finished ones): ErrNoJob when there is none.
func (js *Jobs) Lookup(ctx context.Context, id string) (dlq.Job, error) {
	st, err := js.store.GetJob(ctx, id)
	if err != nil {
		return dlq.Job{}, err
	}
	return js.withLive(st.Job), nil
}

// ListJobs returns the replay-all jobs (the running ones and the last
// Config.MaxFinished finished ones), newest first.
func (js *Jobs) ListJobs(ctx context.Context) ([]dlq.Job, error) {
	all, err := js.store.ListJobs(ctx, js.max)
	if err != nil {
		return nil, fmt.Errorf("dlq: list replay-all jobs: %w", err)
	}
	out := make([]dlq.Job, len(all))
	for i, st := range all {
		out[i] = js.withLive(st.Job)
	}
	return out, nil
}

// withLive returns j with the live progress of its run when this process
// runs it (the store has its last checkpoint).
func (js *Jobs) withLive(j dlq.Job) dlq.Job {
	if r := js.local(j.ID); r != nil && j.State == dlq.JobRunning {
		r.mu.Lock()
		j.Progress = r.live
		r.mu.Unlock()
	}
	return j
}

// Job is Lookup for callers without a context (tests, the in-memory
// store): false when the job is unknown or the store failed.
func (js *Jobs) Job(id string) (dlq.Job, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	j, err := js.Lookup(ctx, id)
	return j, err == nil
}

// List is ListJobs for callers without a context: nil when the store
// failed.
func (js *Jobs) List() []dlq.Job {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, _ := js.ListJobs(ctx)
	return all
}

// Cancel cancels the running replay-all job id on behalf of actor
// (recorded in the job and logged), whichever replica runs it: the job
// stops before its next entry (the entry being replayed is finished; the
// rest stay pending). It waits until the job has stopped or ctx ends, and
// returns the job. An unknown job is ErrNoJob; a job that has already
// ended ErrJobNotRunning (with the job).
func (js *Jobs) Cancel(ctx context.Context, id, actor string) (dlq.Job, error) {
	if actor == "" {
		actor = DefaultActor
	}
	actor = dlq.AuditActor(actor) // storable as the audit rows keep it
	st, err := js.store.CancelJob(ctx, id, actor, time.Now().UTC())
	if errors.Is(err, dlq.ErrJobNotRunning) {
		return st.Job, err
	}
	if err != nil {
		return dlq.Job{}, err
	}
	js.log.Info("dlq: replay-all cancel asked for", "job", id, "dlq", st.DLQ, "by", st.CancelledBy, "owner", st.Owner)
	if r := js.local(id); r != nil {
		r.halt()
		select {
		case <-r.done:
		case <-ctx.Done():
		}
		return js.lookupAfter(ctx, st.Job), nil
	}
	// Another replica runs it: it sees the request when it next renews
	// its lease or checkpoints (or, dead, once a replica takes it over).
	tick := time.NewTicker(min(js.lease/10, time.Second))
	defer tick.Stop()
	for {
		j, err := js.store.GetJob(ctx, id)
		if err == nil && j.State != dlq.JobRunning {
			return j.Job, nil
		}
		select {
		case <-ctx.Done():
			return js.lookupAfter(context.WithoutCancel(ctx), st.Job), nil
		case <-tick.C:
		}
	}
}

// lookupAfter returns job j as stored now, or j when that fails.
func (js *Jobs) lookupAfter(ctx context.Context, j dlq.Job) dlq.Job {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if got, err := js.Lookup(ctx, j.ID); err == nil {
		return got
	}
	return j
}

// takeOver looks for running jobs whose owner's lease expired, every
// Lease/2 until Close, and resumes them here.
func (js *Jobs) takeOver() {
	defer js.wg.Done()
	tick := time.NewTicker(js.lease / 2)
	defer tick.Stop()
	for {
		for js.ctx.Err() == nil {
			now := time.Now().UTC()
			st, ok, err := js.store.ClaimJob(js.ctx, js.replica, now, now.Add(js.lease))
			if err != nil {
				if js.ctx.Err() == nil {
					js.log.Warn("dlq: look for replay-all jobs to take over", "error", err)
				}
				break
			}
			if !ok {
				break
			}
			js.log.Info("dlq: replay-all job taken over: its owner's lease expired", "job", st.ID, "dlq", st.DLQ,
				"replica", js.replica, "takeovers", st.Takeovers)
			if !js.launch(st, true) {
				return
			}
		}
		select {
		case <-js.ctx.Done():
			return
		case <-tick.C:
		}
	}
}
