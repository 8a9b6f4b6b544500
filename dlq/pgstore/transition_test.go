package pgstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// insertPending inserts n pending RabbitMQ records of dlqName.
func insertPending(t *testing.T, s dlq.Store, dlqName string, n int, receivedAt time.Time) []dlq.Record {
	t.Helper()
	out := make([]dlq.Record, n)
	for i := range out {
		r, inserted, err := s.Insert(t.Context(), dlq.Record{Broker: "rabbitmq", DLQ: dlqName,
			Identity: fmt.Sprintf("%s-%d", dlqName, i), ReceivedAt: receivedAt,
			Entry: dlq.Entry{MessageID: fmt.Sprint(i), OriginalTopic: "orders", OriginalValue: []byte("v"), OriginalPartition: -1, OriginalOffset: -1}})
		if err != nil || !inserted {
			t.Fatalf("insert: %v (inserted %v)", err, inserted)
		}
		out[i] = r
	}
	return out
}

// Transitions from one status take the one-statement path, from several
// the transaction: racing on one record, the two paths let exactly one
// transition through, with one audit row.
func TestTransitionPathsRace(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	recs := insertPending(t, s, "race.dlq", 20, time.Now())
	for _, r := range recs {
		const n = 8
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			ok    int
			start = make(chan struct{})
		)
		for i := range n {
			from := []dlq.Status{dlq.StatusPending}
			if i%2 == 1 {
				from = append(from, dlq.StatusReplaying)
			}
			wg.Go(func() {
				<-start
				_, err := s.Transition(ctx, dlq.Transition{DLQ: r.DLQ, ID: r.ID, From: from, To: dlq.StatusDiscarded,
					Actor: fmt.Sprint("racer-", i), Action: dlq.ActionDiscard, Reason: "race"})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, dlq.ErrNotPending):
					t.Errorf("Transition: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		got, err := s.Get(ctx, r.DLQ, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		trail, err := s.Audit(ctx, r.DLQ, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ok != 1 || got.Status != dlq.StatusDiscarded || got.Version != 2 || len(trail) != 1 || trail[0].Actor != got.StatusBy {
			t.Fatalf("%s: %d of %d racing transitions succeeded; record %s v%d by %s; audit %+v; want 1, discarded v2, one row by its actor",
				r.ID, ok, n, got.Status, got.Version, got.StatusBy, trail)
		}
	}
}

// The one-statement path changes nothing when the version does not match,
// nor for an archived record, and the refusal names the current record.
func TestTransitionRefusals(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	recs := insertPending(t, s, "refuse.dlq", 2, time.Now().Add(-48*time.Hour))
	pending := []dlq.Status{dlq.StatusPending}

	cur, err := s.Transition(ctx, dlq.Transition{DLQ: "refuse.dlq", ID: recs[0].ID, From: pending, To: dlq.StatusReplaying, IfVersion: 2, Actor: "a"})
	if !errors.Is(err, dlq.ErrNotPending) || cur.Status != dlq.StatusPending || cur.Version != 1 {
		t.Fatalf("Transition of version 2 of a version 1 record = %s v%d, %v; want the pending record and ErrNotPending", cur.Status, cur.Version, err)
	}
	claimed, err := s.Transition(ctx, dlq.Transition{DLQ: "refuse.dlq", ID: recs[0].ID, From: pending, To: dlq.StatusReplaying, IfVersion: 1, Actor: "a"})
	if err != nil || claimed.Status != dlq.StatusReplaying || claimed.Version != 2 {
		t.Fatalf("Transition of the right version = %s v%d, %v", claimed.Status, claimed.Version, err)
	}
	if trail, _ := s.Audit(ctx, "refuse.dlq", recs[0].ID); len(trail) != 0 {
		t.Errorf("transitions without action wrote audit rows %+v", trail)
	}

	if n, err := s.Archive(ctx, "refuse.dlq", time.Now().Add(-time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("Archive = %d, %v; want the pending record archived", n, err)
	}
	cur, err = s.Transition(ctx, dlq.Transition{DLQ: "refuse.dlq", ID: recs[1].ID, From: pending, To: dlq.StatusDiscarded, Actor: "a", Action: dlq.ActionDiscard, Reason: "x"})
	if !errors.Is(err, dlq.ErrNotPending) || cur.Status != dlq.StatusArchived {
		t.Fatalf("Transition of an archived record = %s, %v; want the archived record and ErrNotPending", cur.Status, err)
	}
	if trail, _ := s.Audit(ctx, "refuse.dlq", recs[1].ID); len(trail) != 0 {
		t.Errorf("a refused transition wrote audit rows %+v", trail)
	}
}
