package dlq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
)

// StartDiscardAll starts a background job discarding the pending entries
// of q.DLQ that q's filter selects (ErrorClass, Text, Group, Since,
// Until), with reason (required: ErrReasonRequired) and actor in every
// audit row, at most rate per second (as StartReplayAll). One job, replay
// or discard, runs per DLQ at a time: ErrJobRunning with the running job
// otherwise; the other errors are those of StartReplayAll.
func (js *Jobs) StartDiscardAll(ctx context.Context, q Query, actor, reason string, rate float64) (Job, error) {
	if rate < 0 {
		rate = js.rate
	}
	if math.IsNaN(rate) || !ValidReplayRate(rate) {
		return Job{}, fmt.Errorf("%w: rate: %v is not 0 or from %v to %v per second", ErrInvalidQuery, rate, MinReplayRate, MaxReplayRate)
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		return Job{}, fmt.Errorf("dlq: discard all %s: %w", q.DLQ, ErrReasonRequired)
	}
	q, j, err := js.newJob(ctx, JobDiscardAll, q, actor, rate)
	if err != nil {
		return Job{}, err
	}
	j.Reason = clip(reason)
	got, err := js.start(j, func(ctx context.Context, j *job) func() {
		p, err := js.ops.DiscardAll(ctx, q, DiscardAllOptions{
			Actor: j.Actor, Reason: j.Reason, Rate: j.Rate, Stop: j.stop,
			Progress: func(p Progress) {
				j.mu.Lock()
				j.Progress = progressOf(j.Kind, p)
				j.mu.Unlock()
			},
		})
		return js.finish(j, p, err)
	})
	if errors.Is(err, ErrJobRunning) {
		return got.view(), err
	}
	if err != nil {
		return Job{}, err
	}
	return got.view(), nil
}
