package exactlyonce

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// HookFunc is the application's action on a new dead letter (what
// dlq.Hook's DeadLettered does, e.g. mark the execution failed), run
// inside tx, the inbox's transaction: it commits with the inbox's record
// of the dead letter, or not at all. It must not commit or roll back tx.
type HookFunc func(ctx context.Context, tx pgx.Tx, r dlq.Record) error

// DefaultHookName is the name a dead-letter hook's records are kept under
// when InboxConfig.Name is empty.
const DefaultHookName = "redrive-dead-letter-hook"

// Hook returns f as the keeper's dead-letter hook (keeper.Config.Hook):
// the keeper calls it at least once per dead letter (again after a crash
// or when the store or the hook failed), and f runs once: the inbox
// records the entry's address (dlq.Record.Key, "<dlq>/<id>") under the
// inbox's name (DefaultHookName when empty; InboxConfig.Key is not used)
// in f's transaction. An error of f, or of the database, rolls it all
// back and is returned, so that the keeper does not acknowledge the dead
// letter and offers it again later: the reference design's dead-letter
// handler, whose database errors lead to a retry. A message dead-lettered
// again after a replay is a new entry, and runs f again.
func (in *Inbox) Hook(f HookFunc) dlq.Hook {
	name := in.cfg.Name
	if name == "" {
		name = DefaultHookName
	}
	return dlq.HookFunc(func(ctx context.Context, r dlq.Record) error {
		err := in.run(ctx, name, r.Key(), func(tx pgx.Tx) error { return f(ctx, tx, r) }, func() {
			in.s.log.Debug("exactlyonce: dead letter already hooked", "hook", name, "entry", r.Key())
		})
		if err != nil {
			return fmt.Errorf("exactlyonce: dead-letter hook %s for %s: %w", name, r.Key(), err)
		}
		return nil
	})
}
