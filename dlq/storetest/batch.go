package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redrive/redrive/dlq"
)

// testInsertBatch: one batch of new records, duplicates (of a stored record
// and within the batch), an invalid record and an id conflict. The good
// records are stored in batch order, each bad one reports its own error,
// counted: stored + duplicates + refused = the batch.
func testInsertBatch(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	const name = "batch.dlq"
	old := mustInsert(t, s, record(name, "old", 0))
	k := record("batch-k.dlq", "", 1)
	k.Broker, k.ID = offsetBackend, offsetID(0, 7)
	mustInsert(t, s, k)

	invalid := record(name, "invalid", 3)
	invalid.Broker = "not a backend name"
	conflict := record("batch-k.dlq", "", 6)
	conflict.Broker, conflict.ID, conflict.Identity = offsetBackend, k.ID, k.ID+"@other"
	batch := []dlq.Record{
		record(name, "n1", 1),  // 0: new
		record(name, "old", 2), // 1: duplicate of a stored record
		invalid,                // 2: invalid
		record(name, "n2", 4),  // 3: new
		record(name, "n1", 5),  // 4: duplicate within the batch
		conflict,               // 5: its id is another identity's
		record(name, "n3", 7),  // 6: new
	}
	res, err := s.InsertBatch(ctx, batch)
	if err != nil {
		t.Fatalf("InsertBatch: %v", err)
	}
	if len(res) != len(batch) {
		t.Fatalf("InsertBatch returned %d results for %d records", len(res), len(batch))
	}
	var stored, dups, refused int
	for i, r := range res {
		switch {
		case r.Err != nil:
			refused++
		case r.Inserted:
			stored++
		default:
			dups++
		}
		if r.Err == nil && (r.Stored.DLQ != batch[i].DLQ || r.Stored.Identity != batch[i].Identity) {
			t.Errorf("result %d is %s (identity %q), want identity %q", i, r.Stored.Key(), r.Stored.Identity, batch[i].Identity)
		}
	}
	if stored != 3 || dups != 2 || refused != 2 {
		t.Errorf("batch of %d: %d stored, %d duplicates, %d refused; want 3, 2, 2", len(batch), stored, dups, refused)
	}
	for _, i := range []int{0, 3, 6} {
		if !res[i].Inserted || res[i].Err != nil || res[i].Stored.Status != dlq.StatusPending || res[i].Stored.ID == "" {
			t.Errorf("result %d = inserted %v, %v, %+v; want a new pending record", i, res[i].Inserted, res[i].Err, res[i].Stored)
		}
	}
	if r := res[1]; r.Inserted || r.Err != nil || r.Stored.ID != old.ID || !slices.Equal(r.Stored.Entry.OriginalValue, old.Entry.OriginalValue) {
		t.Errorf("duplicate of a stored record: %+v, %v; want the stored record %s with its value", r.Stored, r.Err, old.ID)
	}
	if r := res[4]; r.Inserted || r.Err != nil || r.Stored.ID != res[0].Stored.ID {
		t.Errorf("duplicate within the batch: id %q, inserted %v, %v; want the id of its first, %q", r.Stored.ID, r.Inserted, r.Err, res[0].Stored.ID)
	}
	if err := res[2].Err; !errors.Is(err, dlq.ErrInvalidRecord) {
		t.Errorf("invalid record: %v, want ErrInvalidRecord", err)
	}
	if err := res[5].Err; !errors.Is(err, dlq.ErrIDConflict) {
		t.Errorf("id conflict: %v, want ErrIDConflict", err)
	}
	got := ids(listAll(t, s, dlq.Query{DLQ: name}))
	want := []string{"old", "n1", "n2", "n3"} // identities
	if !slices.Equal(got, want) {
		t.Errorf("listing after the batch = %v, want %v (insertion order)", got, want)
	}
	if n, err := s.Count(ctx, dlq.Query{DLQ: name, Status: dlq.StatusPending}); err != nil || n != 4 {
		t.Errorf("Count = %d, %v; want 4", n, err)
	}
	if res, err := s.InsertBatch(ctx, nil); err != nil || len(res) != 0 {
		t.Errorf("InsertBatch(nil) = %v, %v", res, err)
	}
}

// testInsertBatchConcurrent: writers insert overlapping batches at once;
// every identity is stored once and every result names the stored record.
func testInsertBatchConcurrent(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	const (
		name    = "batch-conc.dlq"
		writers = 4
		n       = 60
	)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inserted = map[string]int{}
		idOf     = map[string]map[string]bool{}
		errs     []error
	)
	for w := range writers {
		wg.Go(func() {
			batch := make([]dlq.Record, 0, n)
			for i := range n { // each writer its own order
				j := (i*7 + w*13) % n
				batch = append(batch, record(name, fmt.Sprintf("c-%d", j), j))
			}
			res, err := s.InsertBatch(ctx, batch)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			for _, r := range res {
				if r.Err != nil {
					errs = append(errs, r.Err)
					continue
				}
				if r.Inserted {
					inserted[r.Stored.Identity]++
				}
				if idOf[r.Stored.Identity] == nil {
					idOf[r.Stored.Identity] = map[string]bool{}
				}
				idOf[r.Stored.Identity][r.Stored.ID] = true
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent batches failed: %v", errs)
	}
	for i := range n {
		id := fmt.Sprintf("c-%d", i)
		if inserted[id] != 1 || len(idOf[id]) != 1 {
			t.Errorf("identity %s: inserted %d times, ids %v; want once, one id", id, inserted[id], idOf[id])
		}
	}
	if c, err := s.Count(ctx, dlq.Query{DLQ: name}); err != nil || c != n {
		t.Errorf("Count = %d, %v; want %d", c, err, n)
	}
}
