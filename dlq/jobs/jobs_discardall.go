package jobs

import (
	"context"
	"fmt"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"math"
	"strings"
)

// StartDiscardAll starts a background job discarding the pending entries
// of q.DLQ that q's filter selects (ErrorClass, Text, Group, Since,
// Until), with reason (required: ErrReasonRequired) and actor in every
// audit row, at most rate per second (as StartReplayAll). One job, replay
// or discard, runs per DLQ at a time: ErrJobRunning with the running job
// otherwise; the other errors are those of StartReplayAll.
func (js *Jobs) StartDiscardAll(ctx context.Context, q dlq.Query, actor, reason string, rate float64) (dlq.Job, error) {
	if rate < 0 {
		rate = js.rate
	}
	if math.IsNaN(rate) || !operate.ValidReplayRate(rate) {
		return dlq.Job{}, fmt.Errorf("%w: rate: %v is not 0 or from %v to %v per second", dlq.ErrInvalidQuery, rate, operate.MinReplayRate, operate.MaxReplayRate)
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		return dlq.Job{}, fmt.Errorf("dlq: discard all %s: %w", q.DLQ, operate.ErrReasonRequired)
	}
	return js.create(ctx, dlq.JobDiscardAll, q, actor, dlq.AuditReason(reason), rate)
}
