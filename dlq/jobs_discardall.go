package dlq

import (
	"context"
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
	return js.create(ctx, JobDiscardAll, q, actor, clip(reason), rate)
}
