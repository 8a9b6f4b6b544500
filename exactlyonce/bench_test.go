package exactlyonce_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/exactlyonce"
)

// BenchmarkInbox compares a handler that inserts one row in a transaction
// of its own (plain) with the same insert through the inbox (its record,
// its lock, the same commit), on the real PostgreSQL, deliveries called in
// parallel (no broker): the inbox's cost per message, as a ratio of the
// two in one run (`redrive bench --scenarios effects` measures it through
// the brokers).
func BenchmarkInbox(b *testing.B) {
	e := newEnv(b, nil)
	var seq atomic.Int64
	effect := func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
		_, err := tx.Exec(ctx, `INSERT INTO `+e.table("ledger")+` (worker, key, note) VALUES ($1, $2, '')`, d.Group, d.ID)
		return err
	}
	in, err := e.store.Inbox(exactlyonce.InboxConfig{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		h    broker.Handler
	}{
		{"plain", func(ctx context.Context, d *broker.Delivery) error {
			return pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error { return effect(ctx, tx, d) })
		}},
		{"inbox", in.Handler(effect)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					d := &broker.Delivery{Message: broker.Message{ID: "m-" + strconv.FormatInt(seq.Add(1), 10)}, Group: "g", Partition: -1}
					if err := c.h(context.Background(), d); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
