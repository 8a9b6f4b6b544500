package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
)

// partOf returns the part of entry id of d, live or archived, and the part
// dlq_id_parts records for it (-1 when none).
func partOf(t *testing.T, s *pgstore.Store, d, id string) (part, recorded int32) {
	t.Helper()
	ctx := context.Background()
	err := s.Pool().QueryRow(ctx, `SELECT part FROM dlq_entries WHERE dlq = $1 AND id = $2
		UNION ALL SELECT part FROM dlq_entries_archive WHERE dlq = $1 AND id = $2`, d, id).Scan(&part)
	if err != nil {
		t.Fatalf("part of %s/%s: %v", d, id, err)
	}
	recorded = -1
	if err := s.Pool().QueryRow(ctx, `SELECT coalesce((SELECT part FROM dlq_id_parts WHERE dlq = $1 AND id = $2), -1)`, d, id).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	return part, recorded
}

// An entry whose id carries no time (Kafka's) goes to the partition of the
// week it was received in (0 when that partition does not exist), its part
// recorded; it reads, lists and transitions there; a redelivery is a
// duplicate and its id with another identity a conflict, in any week, by
// the single insert and the batch (COPY) alike.
func TestKafkaPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now().Add(-10 * 7 * 24 * time.Hour)
	s, schema, _ := openClocked(t, start)
	w := int32(week(start))
	next, old := start.Add(7*24*time.Hour), start.Add(-5*7*24*time.Hour)
	const d = "orders.dlq"
	big := bytes.Repeat([]byte("v"), 3<<20/2) // read in chunks (fillValues)
	kafka := func(id, identity string, at time.Time) dlq.Record {
		return dlq.Record{Broker: "kafka", DLQ: d, ID: id, Identity: identity, ReceivedAt: at,
			Entry: dlq.Entry{OriginalPartition: 1, OriginalValue: []byte("value of " + id)}}
	}
	single := kafka(offsetID(0, 1), "", time.Time{}) // received now: week w
	single.Entry.OriginalValue = big
	if _, inserted, err := s.Insert(ctx, single); err != nil || !inserted {
		t.Fatalf("Insert = %v, %v", inserted, err)
	}
	batch := []dlq.Record{
		kafka("1-0", "", next),
		kafka("1-1", "", next),
		kafka("1-2", "", old),
		kafka("1-3", "1-0", next),    // the identity of 1-0: a duplicate
		kafka("1-1", "other", start), // the id of 1-1, another week: a conflict
		kafka("0-1", "other2", next), // the id of the single insert: a conflict
	}
	res, err := s.InsertBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		inserted bool
		id       string
		conflict bool
	}{{true, "1-0", false}, {true, "1-1", false}, {true, "1-2", false}, {false, "1-0", false}, {false, "", true}, {false, "", true}} {
		r := res[i]
		if r.Inserted != want.inserted || errors.Is(r.Err, dlq.ErrIDConflict) != want.conflict || (!want.conflict && (r.Err != nil || r.Stored.ID != want.id)) {
			t.Errorf("InsertBatch[%d] = inserted %v, id %s, %v; want inserted %v, id %s, conflict %v", i, r.Inserted, r.Stored.ID, r.Err, want.inserted, want.id, want.conflict)
		}
	}
	for _, tt := range []struct {
		id   string
		want int32
	}{{"0-1", w}, {"1-0", w + 1}, {"1-1", w + 1}, {"1-2", 0}} {
		if part, recorded := partOf(t, s, d, tt.id); part != tt.want || recorded != tt.want {
			t.Errorf("%s is in part %d (recorded %d), want %d", tt.id, part, recorded, tt.want)
		}
	}
	// The identities that conflicted stay free; redeliveries, in another
	// week too, are duplicates, the same id with another identity a
	// conflict (the single insert's path).
	for _, identity := range []string{"other", "other2"} {
		if _, inserted, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: d, Identity: identity}); err != nil || !inserted {
			t.Errorf("Insert of %s = %v, %v; want inserted", identity, inserted, err)
		}
	}
	for _, r := range []dlq.Record{kafka("0-1", "", next), kafka("9-9", "1-1", start)} {
		if again, inserted, err := s.Insert(ctx, r); err != nil || inserted || again.ID != r.Identity && again.ID != r.ID {
			t.Errorf("Insert of %s again = %s, %v, %v; want the stored one", r.ID, again.ID, inserted, err)
		}
	}
	if _, _, err := s.Insert(ctx, kafka("1-2", "other3", next)); !errors.Is(err, dlq.ErrIDConflict) {
		t.Errorf("Insert of id 1-2 (partition 0) with another identity in a week partition: %v, want ErrIDConflict", err)
	}

	// Reads.
	got, err := s.Get(ctx, d, "0-1")
	if err != nil || !bytes.Equal(got.Entry.OriginalValue, big) {
		t.Fatalf("Get = %d bytes, %v", len(got.Entry.OriginalValue), err)
	}
	if p, err := s.Preview(ctx, d, "1-1", 5); err != nil || string(p.Entry.OriginalValue) != "value" {
		t.Errorf("Preview = %q, %v", p.Entry.OriginalValue, err)
	}
	if b, err := s.ReadValue(ctx, d, "1-0", 9, 3); err != nil || string(b) != "1-0" {
		t.Errorf("ReadValue = %q, %v", b, err)
	}
	ids := []string{"0-1", "1-0", "1-1", "1-2"}
	if many, err := s.GetMany(ctx, d, ids); err != nil || len(many) != 4 {
		t.Errorf("GetMany = %d records, %v; want 4", len(many), err)
	}
	if page, err := s.List(ctx, dlq.Query{DLQ: d, Status: dlq.StatusPending}); err != nil || len(page.Records) != 6 {
		t.Errorf("List = %d records, %v; want 6", len(page.Records), err)
	}
	// Transitions: one statement (one status from), and the transaction.
	for _, tr := range []dlq.Transition{
		{DLQ: d, ID: "1-0", From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusReplaying, Action: "replay"},
		{DLQ: d, ID: "1-0", From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusReplayed},
		{DLQ: d, ID: "1-1", From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Action: "discard"},
		{DLQ: d, ID: "0-1", From: []dlq.Status{dlq.StatusPending, dlq.StatusReplaying}, To: dlq.StatusDiscarded, Action: "discard"},
		{DLQ: d, ID: "1-2", From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Action: "discard"},
	} {
		tr.Actor = "t"
		if r, err := s.Transition(ctx, tr); err != nil || r.Status != tr.To {
			t.Errorf("Transition %s to %s = %s, %v", tr.ID, tr.To, r.Status, err)
		}
	}
	if a, err := s.Audit(ctx, d, "1-0"); err != nil || len(a) != 1 {
		t.Errorf("Audit = %+v, %v; want the replay", a, err)
	}
	checkCounts(t, schema)
}

// ArchivePeriods moves a week of Kafka entries with its partition (the
// same part in the archive: their recorded part stays right); those of a
// DLQ kept forever and the replaying ones stay live in partition 0, their
// recorded part 0; all read, transition and stay duplicates.
func TestArchivePeriodsKafka(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now().Add(-10 * 7 * 24 * time.Hour)
	s, schema, clock := openClocked(t, start)
	w := int32(week(start))
	entries := []struct {
		dlq, id  string
		severity string
		status   dlq.Status
		archived bool
	}{
		{"short.dlq", "0-1", "warning", dlq.StatusPending, true},
		{"short.dlq", "0-2", "warning", dlq.StatusDiscarded, true},
		{"short.dlq", "0-3", "warning", dlq.StatusReplaying, false},
		{"ledger.dlq", "0-1", "critical", dlq.StatusPending, false}, // kept forever
		{"ledger.dlq", "0-2", "critical", dlq.StatusDiscarded, false},
	}
	var batch []dlq.Record
	for i := range 10 { // the COPY path
		batch = append(batch, dlq.Record{Broker: "kafka", DLQ: "short.dlq", ID: offsetID(1, int64(i))})
	}
	for _, e := range entries {
		batch = append(batch, dlq.Record{Broker: "kafka", DLQ: e.dlq, ID: e.id, Severity: e.severity})
	}
	res, err := s.InsertBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !r.Inserted || r.Err != nil {
			t.Fatalf("InsertBatch: %+v", r)
		}
		if part, recorded := partOf(t, s, r.Stored.DLQ, r.Stored.ID); part != w || recorded != w {
			t.Fatalf("%s/%s in part %d (recorded %d), want %d", r.Stored.DLQ, r.Stored.ID, part, recorded, w)
		}
	}
	for _, e := range entries {
		if e.status != dlq.StatusPending {
			if _, err := s.Transition(ctx, dlq.Transition{DLQ: e.dlq, ID: e.id, From: []dlq.Status{dlq.StatusPending}, To: e.status}); err != nil {
				t.Fatal(err)
			}
		}
	}
	end := start.Add(6 * 7 * 24 * time.Hour)
	clock.Store(&end)
	got, err := s.ArchivePeriods(ctx, map[string]time.Duration{"short.dlq": 14 * 24 * time.Hour})
	if err != nil || got.Partitions != 3 || got.Kept != 3 || got.Archived["short.dlq"] != 12 || got.Pending["short.dlq"] != 11 {
		t.Errorf("ArchivePeriods = %+v, %v; want 3 partitions, 3 kept, 12 archived of short.dlq of which 11 pending", got, err)
	}
	for _, e := range entries {
		part, recorded := partOf(t, s, e.dlq, e.id)
		r, err := s.Get(ctx, e.dlq, e.id)
		want, status := int32(0), e.status
		if e.archived {
			want, status = w, dlq.StatusArchived
		}
		if err != nil || r.Status != status || part != want || recorded != want {
			t.Errorf("%s/%s: %s in part %d (recorded %d), %v; want %s in %d", e.dlq, e.id, r.Status, part, recorded, err, status, want)
		}
		if again, inserted, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: e.dlq, ID: e.id}); err != nil || inserted || again.ID != e.id {
			t.Errorf("Insert of %s/%s again = %s, %v, %v; want the stored one", e.dlq, e.id, again.ID, inserted, err)
		}
		if _, _, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: e.dlq, ID: e.id, Identity: "another"}); !errors.Is(err, dlq.ErrIDConflict) {
			t.Errorf("Insert of %s/%s with another identity: %v, want ErrIDConflict", e.dlq, e.id, err)
		}
	}
	if table := partitionOf(t, s, "short.dlq", "1-5"); table != fmt.Sprint("dlq_entries_archive_w", w) {
		t.Errorf("1-5 is in %s, want the archive's partition of its week", table)
	}
	for _, tr := range []dlq.Transition{
		{DLQ: "short.dlq", ID: "0-3", From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusReplayed},
		{DLQ: "ledger.dlq", ID: "0-1", From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusReplaying},
	} {
		if r, err := s.Transition(ctx, tr); err != nil || r.Status != tr.To {
			t.Errorf("Transition of kept %s/%s = %s, %v", tr.DLQ, tr.ID, r.Status, err)
		}
	}
	checkCounts(t, schema)
}

// A store of schema version 6 holding Kafka entries (in partition 0, no
// recorded part) migrates to 7: they read, replay and stay duplicates; a
// new one goes to its received week.
func TestMigrateVersion6Kafka(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	s, schema, _ := openClocked(t, start)
	const d = "orders.dlq"
	// Back to version 6, with entries as a store of version 6 wrote them.
	for _, sql := range append(undo8, `DROP TABLE dlq_id_parts`, `DELETE FROM schema_migrations WHERE version >= 7`) {
		if _, err := s.Pool().Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := s.Pool().Exec(ctx, schema5Insert, d, offsetID(0, int64(i)), offsetID(0, int64(i)), start); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, schema)
	var version int
	if err := s.Pool().QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || version != pgstore.SchemaVersion() {
		t.Fatalf("schema version = %d, %v; want %d", version, err, pgstore.SchemaVersion())
	}
	for i := range 3 {
		id := offsetID(0, int64(i))
		if part, recorded := partOf(t, s, d, id); part != 0 || recorded != -1 {
			t.Errorf("%s in part %d (recorded %d), want 0, none", id, part, recorded)
		}
		if r, err := s.Get(ctx, d, id); err != nil || r.Status != dlq.StatusPending {
			t.Errorf("Get %s = %s, %v", id, r.Status, err)
		}
		if again, inserted, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: d, ID: id}); err != nil || inserted || again.ID != id {
			t.Errorf("Insert of %s again = %s, %v, %v; want the stored one", id, again.ID, inserted, err)
		}
		if _, _, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: d, ID: id, Identity: "another"}); !errors.Is(err, dlq.ErrIDConflict) {
			t.Errorf("Insert of %s with another identity: %v, want ErrIDConflict", id, err)
		}
	}
	for _, to := range []dlq.Status{dlq.StatusReplaying, dlq.StatusReplayed} {
		from := dlq.StatusPending
		if to == dlq.StatusReplayed {
			from = dlq.StatusReplaying
		}
		if r, err := s.Transition(ctx, dlq.Transition{DLQ: d, ID: "0-1", From: []dlq.Status{from}, To: to, Actor: "t"}); err != nil || r.Status != to {
			t.Errorf("Transition to %s = %s, %v", to, r.Status, err)
		}
	}
	if _, inserted, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: d, ID: "0-9"}); err != nil || !inserted {
		t.Fatalf("Insert = %v, %v", inserted, err)
	}
	if part, recorded := partOf(t, s, d, "0-9"); part != int32(week(start)) || recorded != part {
		t.Errorf("new entry in part %d (recorded %d), want %d", part, recorded, week(start))
	}
}

// A lookup of a Kafka entry reads partition 0 and its recorded week only:
// a Get and a transition look the part up first and name it (the others
// are pruned when planning: not in the plan).
func TestKafkaPartitionPruning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	now := time.Now()
	for w := range pgstore.PartitionsAhead + 1 {
		at := now.Add(time.Duration(w) * 7 * 24 * time.Hour)
		for i := range 3 {
			if _, _, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: "x.dlq", ID: offsetID(int32(w), int64(i)), ReceivedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec := fmt.Sprint("dlq_entries_w", week(now)+1) // the week of 1-1
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, tt := range []struct {
		sql  string
		want []string
	}{
		{`SELECT id FROM dlq_entries WHERE dlq = 'x.dlq' AND id = '1-1' AND part = ` + fmt.Sprint(week(now)+1), []string{rec}},
		{`SELECT id FROM dlq_entries WHERE dlq = 'x.dlq' AND id = '1-1' AND part IN (0, ` + fmt.Sprint(week(now)+1) + `) FOR UPDATE`, []string{"dlq_entries_p0", rec}},
		{`UPDATE dlq_entries SET status = 'replaying' WHERE dlq = 'x.dlq' AND id = '1-1' AND part = ` + fmt.Sprint(week(now)+1) + ` AND status = 'pending'`, []string{rec}},
	} {
		rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) `+tt.sql)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		var read []string
		for _, l := range lines {
			if m := regexp.MustCompile(`Scan (?:using \S+ )?on (dlq_entries_(?:p0|w\d+))`).FindStringSubmatch(l); m != nil && !strings.Contains(l, "never executed") {
				read = append(read, m[1])
			}
		}
		plan := strings.Join(lines, "\n")
		if !slices.Equal(read, tt.want) {
			t.Errorf("%s reads %v, want %v:\n%s", tt.sql, read, tt.want, plan)
		}
		t.Logf("%s\n%s", tt.sql, plan)
	}
}

// Concurrent inserts of one Kafka id received in different weeks store it
// once: with other identities the others are id conflicts, with the same
// identity duplicates.
func TestKafkaIDUniqueAcrossWeeks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now().Add(-10 * 7 * 24 * time.Hour)
	s, schema, _ := openClocked(t, start)
	for _, sameIdentity := range []bool{false, true} {
		id := fmt.Sprint("7-", sameIdentity)
		const n = 9
		var wg sync.WaitGroup
		res := make([]error, n)
		inserted := make([]bool, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := dlq.Record{Broker: "kafka", DLQ: "u.dlq", ID: id, Identity: fmt.Sprint("i", i),
					ReceivedAt: start.Add(time.Duration(i%3) * 7 * 24 * time.Hour)} // 3 weeks
				if sameIdentity {
					r.Identity = "same"
				}
				_, inserted[i], res[i] = s.Insert(ctx, r)
			}()
		}
		wg.Wait()
		var stored, conflicts int
		for i := range n {
			switch {
			case inserted[i] && res[i] == nil:
				stored++
			case !sameIdentity && errors.Is(res[i], dlq.ErrIDConflict), sameIdentity && res[i] == nil:
				conflicts++
			default:
				t.Errorf("Insert %d = %v, %v", i, inserted[i], res[i])
			}
		}
		var rows int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM dlq_entries WHERE dlq = 'u.dlq' AND id = $1`, id).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if stored != 1 || conflicts != n-1 || rows != 1 {
			t.Errorf("same identity %v: %d stored, %d conflicts or duplicates, %d rows; want 1, %d, 1", sameIdentity, stored, conflicts, rows, n-1)
		}
	}
	checkCounts(t, schema)
}
