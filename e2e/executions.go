package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// ExecutionsHook is the seed's dead-letter hook, carried by the suite as
// an example of an application's own action: an execution whose message
// expired before a worker took it (RabbitMQ queue TTL, Kafka max age) is
// marked failed with {"error": "Worker queue TTL expired", ...}, unless it
// is already terminal. A missing execution is fine; a database error is
// returned, so the keeper offers the dead letter again later.
type ExecutionsHook struct {
	DB    *pgxpool.Pool
	Table string // default "executions"

	mu       sync.Mutex
	failures int
	changed  chan struct{}
}

// DeadLettered implements dlq.Hook.
func (h *ExecutionsHook) DeadLettered(ctx context.Context, r dlq.Record) error {
	err := h.markFailed(ctx, r)
	h.mu.Lock()
	if err != nil {
		h.failures++
	}
	if h.changed != nil {
		close(h.changed)
	}
	h.changed = make(chan struct{})
	h.mu.Unlock()
	return err
}

func (h *ExecutionsHook) markFailed(ctx context.Context, r dlq.Record) error {
	if r.Entry.Reason != string(driver.ReasonExpired) {
		return nil
	}
	id := executionID(r.Entry)
	if id == "" {
		return nil
	}
	detail, _ := json.Marshal(map[string]string{
		"error":  "Worker queue TTL expired",
		"worker": r.Entry.Worker,
		"dlq":    r.DLQ,
		"entry":  r.ID,
	})
	table := h.Table
	if table == "" {
		table = "executions"
	}
	_, err := h.DB.Exec(ctx, `UPDATE `+pgx.Identifier{table}.Sanitize()+`
		SET status = 'failed', error = $2, updated_at = now()
		WHERE id = $1 AND status NOT IN ('succeeded', 'failed', 'cancelled')`, id, detail)
	if err != nil {
		return fmt.Errorf("executions: mark %s failed: %w", id, err)
	}
	return nil
}

// executionID reads "execution_id" from a JSON payload: a number (the
// reference design's ids, e.g. {"execution_id": 42}) or a string; else
// the message key.
func executionID(e dlq.Entry) string {
	var v struct {
		ID json.RawMessage `json:"execution_id"`
	}
	if json.Unmarshal(e.OriginalValue, &v) == nil && len(v.ID) > 0 {
		var n int64
		if json.Unmarshal(v.ID, &n) == nil {
			return strconv.FormatInt(n, 10)
		}
		var s string
		if json.Unmarshal(v.ID, &s) == nil && s != "" {
			return s
		}
	}
	return string(e.OriginalKey)
}

// waitCalls waits until the hook failed at least n times.
func (h *ExecutionsHook) waitCalls(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		if h.changed == nil {
			h.changed = make(chan struct{})
		}
		f, ch := h.failures, h.changed
		h.mu.Unlock()
		if f >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the hook failed %d times, want at least %d", f, n)
		}
	}
}

// executionsDB is a table of executions of one test.
type executionsDB struct {
	pool  *pgxpool.Pool
	table string
}

func newExecutionsDB(t *testing.T) *executionsDB {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), testenv.PostgreSQL.URL())
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	db := &executionsDB{pool: pool, table: "executions_" + broker.NewMessageID()[:10]}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP TABLE IF EXISTS `+db.ident()+`, `+pgx.Identifier{db.table + "_broken"}.Sanitize())
		pool.Close()
	})
	if _, err := pool.Exec(t.Context(), `CREATE TABLE `+db.ident()+` (
		id text PRIMARY KEY, status text NOT NULL, error jsonb, updated_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	return db
}

func (db *executionsDB) ident() string { return pgx.Identifier{db.table}.Sanitize() }

func (db *executionsDB) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := db.pool.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func (db *executionsDB) insert(t *testing.T, id, status string) {
	db.exec(t, `INSERT INTO `+db.ident()+` (id, status) VALUES ($1, $2)`, id, status)
}

// breakTable renames the table away: the hook's UPDATE fails.
func (db *executionsDB) breakTable(t *testing.T) {
	db.exec(t, `ALTER TABLE `+db.ident()+` RENAME TO `+pgx.Identifier{db.table + "_broken"}.Sanitize())
}

func (db *executionsDB) repairTable(t *testing.T) {
	db.exec(t, `ALTER TABLE `+pgx.Identifier{db.table + "_broken"}.Sanitize()+` RENAME TO `+db.ident())
}

func (db *executionsDB) status(t *testing.T, id string) string {
	t.Helper()
	var s string
	if err := db.pool.QueryRow(t.Context(), `SELECT status FROM `+db.ident()+` WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatalf("read execution %s: %v", id, err)
	}
	return s
}

// failure returns the error JSON the hook stored for id, decoded; nil
// when there is none.
func (db *executionsDB) failure(t *testing.T, id string) map[string]string {
	t.Helper()
	var raw []byte
	if err := db.pool.QueryRow(t.Context(), `SELECT error FROM `+db.ident()+` WHERE id = $1`, id).Scan(&raw); err != nil || raw == nil {
		return nil
	}
	var out map[string]string
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("execution %s: error %s is not the hook's JSON: %v", id, raw, err)
	}
	return out
}

// waitStatus polls the table (the keeper retries the hook with back-off;
// there is no event to wait on) until id has status.
func (db *executionsDB) waitStatus(t *testing.T, id, status string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if db.status(t, id) == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s is %q after %s, want %q", id, db.status(t, id), timeout, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
