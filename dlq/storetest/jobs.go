package storetest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/jobs"
	"github.com/redrive/redrive/dlq/operate"
)

// testReplayAllResume stops a ReplayAll in its third page, after its
// second checkpoint, and resumes it from that checkpoint: the entries the
// first run handled after it are counted as duplicates, not replayed
// again, and every entry is published exactly once.
func testReplayAllResume(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	fill(t, s, "resume.dlq", "r", 30, nil)
	pub := &publisher{}
	ops := newOps(t, opsConfig(s, pub))
	started := time.Now()
	var (
		cp     operate.Progress
		cursor string
		stop   = make(chan struct{})
	)
	opts := operate.ReplayAllOptions{Actor: "alice", PageSize: 7, Stop: stop,
		Checkpoint: func(p operate.Progress, c string) error { cp, cursor = p, c; return nil },
		Progress: func(p operate.Progress) {
			if p.Replayed == 17 && !p.Done {
				close(stop) // 3 entries of the third page replayed after the checkpoint
			}
		},
	}
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: "resume.dlq"}, opts)
	if !errors.Is(err, operate.ErrStopped) || p.Replayed != 17 || cp.Replayed != 14 || cursor == "" {
		t.Fatalf("first run = %+v, %v; checkpoint %+v at %q; want stopped at 17 replayed, checkpoint at 14", p, err, cp, cursor)
	}
	resumed, err := ops.ReplayAll(ctx, dlq.Query{DLQ: "resume.dlq"}, operate.ReplayAllOptions{Actor: "bob", PageSize: 7,
		Resume: &operate.ReplayAllResume{Cursor: cursor, Progress: cp, Started: started}})
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	if resumed.Total != 30 || resumed.Replayed != 14+13 || resumed.Duplicates != 3 || resumed.Skipped != 0 {
		t.Errorf("resumed progress = %+v, want 30 in all: 27 replayed, 3 duplicates", resumed)
	}
	seen := map[string]int{}
	for _, c := range pub.published() {
		seen[c.from]++
	}
	if len(seen) != 30 {
		t.Errorf("%d distinct entries published, want 30", len(seen))
	}
	for from, n := range seen {
		if n != 1 {
			t.Errorf("%s published %d times", from, n)
		}
	}
}

// RunJobs is the conformance suite of a dlq.JobStore: newStore returns an
// empty entry store and the job store shared by the replicas using it.
func RunJobs(t *testing.T, newStore func(t *testing.T) (dlq.Store, dlq.JobStore)) {
	t.Run("Lease", func(t *testing.T) {
		t.Parallel()
		_, js := newStore(t)
		testJobLease(t, js)
	})
	t.Run("CancelFromOtherReplica", func(t *testing.T) {
		t.Parallel()
		s, js := newStore(t)
		testJobCancelElsewhere(t, s, js)
	})
	t.Run("HandOver", func(t *testing.T) {
		t.Parallel()
		s, js := newStore(t)
		testJobHandOver(t, s, js)
	})
	t.Run("Takeover", func(t *testing.T) {
		t.Parallel()
		s, js := newStore(t)
		testJobTakeover(t, s, js)
	})
}

// testJobLease walks a job through create, renew, takeover after its
// lease expired, cancel from another replica and finish.
func testJobLease(t *testing.T, js dlq.JobStore) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	lease := now.Add(time.Minute)
	j := dlq.JobState{Job: dlq.Job{ID: dlq.NewID(now), DLQ: "jobs.dlq", Actor: "alice", Rate: 10, State: dlq.JobRunning,
		StartedAt: now, Owner: "a", LeaseExpires: &lease, Filter: dlq.JobFilter{ErrorClass: "db.Timeout"}}, Until: now}
	if _, err := js.CreateJob(ctx, j); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	other := j
	other.ID = dlq.NewID(now.Add(time.Millisecond))
	if got, err := js.CreateJob(ctx, other); !errors.Is(err, dlq.ErrJobRunning) || got.ID != j.ID {
		t.Fatalf("second running job of one DLQ = %s, %v; want %s, ErrJobRunning", got.ID, err, j.ID)
	}
	// Renew with a checkpoint.
	j.Progress, j.Cursor = dlq.JobProgress{Total: 30, Replayed: 7}, dlq.Cursor{After: 7}.Encode()
	if got, err := js.SaveJob(ctx, j); err != nil || got.Progress.Replayed != 7 || got.Cursor != j.Cursor || got.Filter.ErrorClass != "db.Timeout" {
		t.Fatalf("SaveJob by its owner = %+v, %v", got, err)
	}
	// Not expired: nothing to take over.
	if _, ok, err := js.ClaimJob(ctx, "b", now.Add(30*time.Second), now.Add(2*time.Minute)); ok || err != nil {
		t.Fatalf("ClaimJob before the lease expired = %v, %v; want none", ok, err)
	}
	later := now.Add(2 * time.Minute)
	b, ok, err := js.ClaimJob(ctx, "b", later, later.Add(time.Minute))
	if !ok || err != nil || b.ID != j.ID || b.Owner != "b" || b.Takeovers != 1 || b.Cursor != j.Cursor || b.Progress.Replayed != 7 {
		t.Fatalf("ClaimJob after the lease expired = %+v, %v, %v", b, ok, err)
	}
	if _, err := js.SaveJob(ctx, j); !errors.Is(err, dlq.ErrLeaseLost) {
		t.Fatalf("SaveJob by the former owner = %v, want ErrLeaseLost", err)
	}
	if err := js.FinishJob(ctx, j, 10); !errors.Is(err, dlq.ErrLeaseLost) {
		t.Fatalf("FinishJob by the former owner = %v, want ErrLeaseLost", err)
	}
	// Cancel from a third replica: the owner reads it when it renews.
	if c, err := js.CancelJob(ctx, j.ID, "carol", later); err != nil || c.CancelledBy != "carol" {
		t.Fatalf("CancelJob = %+v, %v", c, err)
	}
	if c, err := js.CancelJob(ctx, j.ID, "dave", later); err != nil || c.CancelledBy != "carol" {
		t.Fatalf("second CancelJob = %q, %v; the first request is kept", c.CancelledBy, err)
	}
	got, err := js.SaveJob(ctx, b)
	if err != nil || got.CancelledBy != "carol" {
		t.Fatalf("SaveJob by the new owner = %q, %v; want the cancel request", got.CancelledBy, err)
	}
	b.State, b.Error, b.FinishedAt = dlq.JobCancelled, "cancelled by carol", &later
	if err := js.FinishJob(ctx, b, 10); err != nil {
		t.Fatalf("FinishJob: %v", err)
	}
	if c, err := js.CancelJob(ctx, j.ID, "dave", later); !errors.Is(err, dlq.ErrJobNotRunning) || c.State != dlq.JobCancelled {
		t.Fatalf("CancelJob of an ended job = %s, %v", c.State, err)
	}
	if _, err := js.GetJob(ctx, "01nonexistent"); !errors.Is(err, dlq.ErrNoJob) {
		t.Fatalf("GetJob unknown = %v, want ErrNoJob", err)
	}
	// The DLQ is free again; the last max finished jobs are kept.
	if _, err := js.CreateJob(ctx, other); err != nil {
		t.Fatalf("CreateJob after the end: %v", err)
	}
	other.State, other.FinishedAt = dlq.JobDone, &later
	if err := js.FinishJob(ctx, other, 1); err != nil {
		t.Fatalf("FinishJob: %v", err)
	}
	list, err := js.ListJobs(ctx, 10)
	if err != nil || len(list) != 1 || list[0].ID != other.ID {
		t.Fatalf("ListJobs after FinishJob(max 1) = %d jobs, %v; want the last one", len(list), err)
	}
	// A discard-all keeps its kind, reason, group and count.
	d := dlq.JobState{Job: dlq.Job{ID: dlq.NewID(later), Kind: dlq.JobDiscardAll, Reason: "obsolete", DLQ: "jobs.dlq", Actor: "alice",
		State: dlq.JobRunning, StartedAt: later, Owner: "a", LeaseExpires: &lease, Filter: dlq.JobFilter{Group: "abc123"}}, Until: later}
	if _, err := js.CreateJob(ctx, d); err != nil {
		t.Fatalf("CreateJob discard-all: %v", err)
	}
	d.Progress = dlq.JobProgress{Total: 5, Discarded: 3}
	if _, err := js.SaveJob(ctx, d); err != nil {
		t.Fatalf("SaveJob discard-all: %v", err)
	}
	if got, err := js.GetJob(ctx, d.ID); err != nil || got.Kind != dlq.JobDiscardAll || got.Reason != "obsolete" ||
		got.Filter.Group != "abc123" || got.Progress.Discarded != 3 {
		t.Fatalf("discard-all job reads back as %+v, %v", got, err)
	}
}

// errDead is what a dead replica's stores answer.
var errDead = errors.New("storetest: this replica is dead")

// dying wraps a replica's stores: once dead is set, every call fails, as
// if the process had been killed.
type dying struct {
	dlq.Store
	js   dlq.JobStore
	dead atomic.Bool
}

func (d *dying) check() error {
	if d.dead.Load() {
		return errDead
	}
	return nil
}

func (d *dying) List(ctx context.Context, q dlq.Query) (dlq.Page, error) {
	if err := d.check(); err != nil {
		return dlq.Page{}, err
	}
	return d.Store.List(ctx, q)
}

func (d *dying) Transition(ctx context.Context, t dlq.Transition) (dlq.Record, error) {
	if err := d.check(); err != nil {
		return dlq.Record{}, err
	}
	return d.Store.Transition(ctx, t)
}

func (d *dying) GetMany(ctx context.Context, dlqName string, ids []string) ([]dlq.Record, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return d.Store.GetMany(ctx, dlqName, ids)
}

func (d *dying) CreateJob(ctx context.Context, j dlq.JobState) (dlq.JobState, error) {
	if err := d.check(); err != nil {
		return j, err
	}
	return d.js.CreateJob(ctx, j)
}

func (d *dying) GetJob(ctx context.Context, id string) (dlq.JobState, error) {
	if err := d.check(); err != nil {
		return dlq.JobState{}, err
	}
	return d.js.GetJob(ctx, id)
}

func (d *dying) ListJobs(ctx context.Context, max int) ([]dlq.JobState, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return d.js.ListJobs(ctx, max)
}

func (d *dying) SaveJob(ctx context.Context, j dlq.JobState) (dlq.JobState, error) {
	if err := d.check(); err != nil {
		return j, err
	}
	return d.js.SaveJob(ctx, j)
}

func (d *dying) FinishJob(ctx context.Context, j dlq.JobState, max int) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.js.FinishJob(ctx, j, max)
}

func (d *dying) CancelJob(ctx context.Context, id, actor string, at time.Time) (dlq.JobState, error) {
	if err := d.check(); err != nil {
		return dlq.JobState{}, err
	}
	return d.js.CancelJob(ctx, id, actor, at)
}

func (d *dying) ClaimJob(ctx context.Context, owner string, now, leaseUntil time.Time) (dlq.JobState, bool, error) {
	if err := d.check(); err != nil {
		return dlq.JobState{}, false, err
	}
	return d.js.ClaimJob(ctx, owner, now, leaseUntil)
}

// testJobTakeover runs a replay-all of 250 entries on replica a, which
// dies in its second page (its stores fail from then on); replica b takes
// the job over once a's lease expired and finishes it. Every entry is
// replayed once or counted as a duplicate (the 50 a replayed after its
// checkpoint, and the one it was publishing); once the reconciler has run
// every entry is replayed, and only that last one was published twice.
func testJobTakeover(t *testing.T, s dlq.Store, js dlq.JobStore) {
	ctx := context.Background()
	const n = 250
	fill(t, s, "take.dlq", "t", n, nil)
	a := &dying{Store: s, js: js}
	pubA, pubB := &publisher{}, &publisher{}
	var published atomic.Int64
	pubA.during = func(dlq.Entry, string) {
		if published.Add(1) == 151 {
			a.dead.Store(true) // dies publishing entry 151: published, never recorded replayed
		}
	}
	cfgA := opsConfig(a, pubA)
	cfgA.Routes = append(cfgA.Routes, route("take.dlq"))
	cfgB := opsConfig(s, pubB)
	cfgB.Routes = append(cfgB.Routes, route("take.dlq"))
	// a's lease (below) expires before b takes the job over: the entry a
	// left replaying is older than ReconcileAfter by then.
	cfgB.ReplayTimeout, cfgB.ReconcileAfter = 100*time.Millisecond, 200*time.Millisecond
	const lease = 300 * time.Millisecond
	jobsA, err := jobs.New(jobs.Config{Ops: newOps(t, cfgA), Store: a, Replica: "a", Lease: lease, DefaultRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer jobsA.Close()
	opsB := newOps(t, cfgB)
	jobsB, err := jobs.New(jobs.Config{Ops: opsB, Store: js, Replica: "b", Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	defer jobsB.Close()
	j, err := jobsA.StartReplayAll(ctx, dlq.Query{DLQ: "take.dlq"}, "alice", 0)
	if err != nil {
		t.Fatalf("StartReplayAll on a: %v", err)
	}
	// No event crosses replicas: b reads the shared store.
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for j, _ = jobsB.Job(j.ID); j.State == dlq.JobRunning; j, _ = jobsB.Job(j.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("job still running after 30 s: %+v", j)
		}
		<-tick.C
	}
	p := j.Progress
	if j.State != dlq.JobDone || j.Owner != "b" || j.Takeovers != 1 || p.Total != n || p.Replayed+p.Duplicates != n || p.Duplicates != 51 {
		t.Errorf("job after the takeover = %+v; want done by b after 1 takeover, 250 = replayed + 51 duplicates", j)
	}
	if _, err := opsB.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	seen := map[string]int{}
	for _, c := range append(pubA.published(), pubB.published()...) {
		seen[c.from]++
	}
	dups := 0
	for _, k := range seen {
		dups += k - 1
	}
	if len(seen) != n || dups != 1 {
		t.Errorf("%d distinct entries published (%d duplicates), want %d, one of them twice", len(seen), dups, n)
	}
	if c, err := s.Count(ctx, dlq.Query{DLQ: "take.dlq", Status: dlq.StatusReplayed}); err != nil || c != n {
		t.Errorf("%d entries replayed (%v), want %d", c, err, n)
	}
}

// testJobCancelElsewhere runs a slow replay-all on replica a; replica b
// lists it and cancels it: b's Cancel returns once a has stopped, and the
// job records b's actor.
func testJobCancelElsewhere(t *testing.T, s dlq.Store, js dlq.JobStore) {
	ctx := context.Background()
	fill(t, s, "cancel.dlq", "c", 50, nil)
	replica := func(name string) *jobs.Jobs {
		cfg := opsConfig(s, &publisher{})
		cfg.Routes = append(cfg.Routes, route("cancel.dlq"))
		jobs, err := jobs.New(jobs.Config{Ops: newOps(t, cfg), Store: js, Replica: name, Lease: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(jobs.Close)
		return jobs
	}
	a, b := replica("a"), replica("b")
	j, err := a.StartReplayAll(ctx, dlq.Query{DLQ: "cancel.dlq"}, "alice", 5) // 10 s for 50 entries
	if err != nil {
		t.Fatalf("StartReplayAll on a: %v", err)
	}
	if _, err := b.StartReplayAll(ctx, dlq.Query{DLQ: "cancel.dlq"}, "bob", 5); !errors.Is(err, dlq.ErrJobRunning) {
		t.Errorf("a second job of the DLQ on b = %v, want ErrJobRunning", err)
	}
	list, err := b.ListJobs(ctx)
	if err != nil || len(list) != 1 || list[0].ID != j.ID || list[0].Owner != "a" || list[0].State != dlq.JobRunning {
		t.Fatalf("b lists %+v, %v; want a's running job", list, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := b.Cancel(cctx, j.ID, "carol")
	if err != nil || got.State != dlq.JobCancelled || got.CancelledBy != "carol" || got.Owner != "a" || got.Progress.Replayed >= 50 {
		t.Fatalf("Cancel on b = %+v, %v; want a's job cancelled by carol before its end", got, err)
	}
	if viewA, err := a.Lookup(ctx, j.ID); err != nil || viewA.State != dlq.JobCancelled || viewA.Error != "cancelled by carol" {
		t.Errorf("a sees %+v, %v", viewA, err)
	}
}

// testJobHandOver closes replica a (a clean shutdown) while its job runs:
// the job stays running with its lease expired, and replica b resumes it
// at once and finishes it.
func testJobHandOver(t *testing.T, s dlq.Store, js dlq.JobStore) {
	ctx := context.Background()
	fill(t, s, "hand.dlq", "h", 40, nil)
	pub := &publisher{}
	replica := func(name string) *jobs.Jobs {
		cfg := opsConfig(s, pub)
		cfg.Routes = append(cfg.Routes, route("hand.dlq"))
		// A long lease: b takes the job over because a handed it over,
		// not because the lease ran out.
		jobs, err := jobs.New(jobs.Config{Ops: newOps(t, cfg), Store: js, Replica: name, Lease: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(jobs.Close)
		return jobs
	}
	a := replica("a")
	j, err := a.StartReplayAll(ctx, dlq.Query{DLQ: "hand.dlq"}, "alice", 20) // 2 s for 40 entries
	if err != nil {
		t.Fatalf("StartReplayAll on a: %v", err)
	}
	a.Close()
	st, err := js.GetJob(ctx, j.ID)
	if err != nil || st.State != dlq.JobRunning || st.LeaseExpires == nil || st.LeaseExpires.After(time.Now()) {
		t.Fatalf("after a's Close the job is %+v, %v; want running, its lease expired", st, err)
	}
	b := replica("b") // looks for expired leases at once
	deadline := time.Now().Add(30 * time.Second)
	for j, _ = b.Job(j.ID); j.State == dlq.JobRunning; j, _ = b.Job(j.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("job still running after 30 s: %+v", j)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p := j.Progress; j.State != dlq.JobDone || j.Owner != "b" || j.Takeovers != 1 || p.Replayed+p.Duplicates != 40 {
		t.Errorf("job = %+v; want done by b after 1 takeover, 40 replayed or duplicates", j)
	}
	seen := map[string]int{}
	for _, c := range pub.published() {
		seen[c.from]++
	}
	if len(seen) != 40 || len(pub.published()) != 40 {
		t.Errorf("%d entries published %d times, want 40 once each", len(seen), len(pub.published()))
	}
}
