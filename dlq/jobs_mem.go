package dlq

import (
	"context"
	"slices"
	"sync"
	"time"
)

// memJobs is the in-memory JobStore: one process's jobs, forgotten when it
// exits.
type memJobs struct {
	mu    sync.Mutex
	byID  map[string]*JobState
	order []string // ids, oldest first
}

// NewMemJobStore returns a JobStore in memory, for one process (the
// default of jobs.Config.Store): a restart forgets its jobs.
func NewMemJobStore() JobStore { return &memJobs{byID: map[string]*JobState{}} }

func cloneJob(j *JobState) JobState {
	c := *j
	return c
}

// CreateJob implements JobStore.
func (m *memJobs) CreateJob(_ context.Context, j JobState) (JobState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range m.order {
		if cur := m.byID[id]; cur.DLQ == j.DLQ && cur.State == JobRunning {
			return cloneJob(cur), ErrJobRunning
		}
	}
	c := j
	m.byID[j.ID] = &c
	m.order = append(m.order, j.ID)
	return j, nil
}

// GetJob implements JobStore.
func (m *memJobs) GetJob(_ context.Context, id string) (JobState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.byID[id]
	if j == nil {
		return JobState{}, ErrNoJob
	}
	return cloneJob(j), nil
}

// ListJobs implements JobStore.
func (m *memJobs) ListJobs(_ context.Context, _ int) ([]JobState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]JobState, 0, len(m.order))
	for _, id := range slices.Backward(m.order) {
		out = append(out, cloneJob(m.byID[id]))
	}
	return out, nil
}

// owned returns j's stored job while j.Owner owns it and it runs.
func (m *memJobs) owned(j JobState) (*JobState, error) {
	cur := m.byID[j.ID]
	if cur == nil || cur.State != JobRunning || cur.Owner != j.Owner {
		return nil, ErrLeaseLost
	}
	return cur, nil
}

// SaveJob implements JobStore.
func (m *memJobs) SaveJob(_ context.Context, j JobState) (JobState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := m.owned(j)
	if err != nil {
		return JobState{}, err
	}
	cur.Progress, cur.Cursor, cur.LeaseExpires = j.Progress, j.Cursor, j.LeaseExpires
	return cloneJob(cur), nil
}

// FinishJob implements JobStore: it forgets the oldest finished jobs
// beyond max.
func (m *memJobs) FinishJob(_ context.Context, j JobState, max int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := m.owned(j)
	if err != nil {
		return err
	}
	cur.State, cur.Error, cur.FinishedAt, cur.Progress = j.State, j.Error, j.FinishedAt, j.Progress
	cur.CancelledBy, cur.CancelledAt, cur.LeaseExpires = j.CancelledBy, j.CancelledAt, nil
	finished := 0
	for i := len(m.order) - 1; i >= 0; i-- {
		id := m.order[i]
		if m.byID[id].State == JobRunning {
			continue
		}
		if finished++; finished > max {
			delete(m.byID, id)
			m.order = slices.Delete(m.order, i, i+1)
		}
	}
	return nil
}

// CancelJob implements JobStore.
func (m *memJobs) CancelJob(_ context.Context, id, actor string, at time.Time) (JobState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.byID[id]
	switch {
	case cur == nil:
		return JobState{}, ErrNoJob
	case cur.State != JobRunning:
		return cloneJob(cur), ErrJobNotRunning
	case cur.CancelledBy == "":
		cur.CancelledBy, cur.CancelledAt = actor, &at
	}
	return cloneJob(cur), nil
}

// ClaimJob implements JobStore.
func (m *memJobs) ClaimJob(_ context.Context, owner string, now, leaseUntil time.Time) (JobState, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range m.order {
		cur := m.byID[id]
		if cur.State == JobRunning && cur.LeaseExpires != nil && cur.LeaseExpires.Before(now) {
			cur.Owner, cur.LeaseExpires = owner, &leaseUntil
			cur.Takeovers++
			return cloneJob(cur), true, nil
		}
	}
	return JobState{}, false, nil
}
