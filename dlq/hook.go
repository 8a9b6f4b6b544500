package dlq

import "context"

// Hook is the application's own action on a new dead letter, e.g. marking
// a job failed. The keeper calls it after the entry is stored and before
// the message is acknowledged; an error makes the keeper offer the message
// again later (it is not acknowledged), so DeadLettered runs at least once
// per entry and must be idempotent. It is not called for unparseable
// entries.
type Hook interface {
	DeadLettered(ctx context.Context, r Record) error
}

// HookFunc adapts a function to Hook.
type HookFunc func(ctx context.Context, r Record) error

// DeadLettered calls f.
func (f HookFunc) DeadLettered(ctx context.Context, r Record) error { return f(ctx, r) }
