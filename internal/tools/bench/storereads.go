package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
)

// Targets of the store scenario's reads (issue 22), at 10 M entries.
const (
	targetPage  = 20 * time.Millisecond
	targetCount = 10 * time.Millisecond
	targetByID  = 5 * time.Millisecond
	// targetGroups is the failure groups' target (issue 18) for a DLQ of
	// up to groupsTargetEntries entries.
	targetGroups        = 200 * time.Millisecond
	groupsTargetEntries = 100_000
)

// measureReads times each operator-facing read on random DLQs and
// positions, checking every result against the stored entries.
func measureReads(ctx context.Context, cfg StoreConfig, st *pgstore.Store, ids []string, end time.Time, rep *StoreReport) error {
	// The truth, counted once: entries by DLQ and status.
	truth := map[string]int64{}
	rows, err := st.Pool().Query(ctx, `SELECT dlq || '/' || status, count(*) FROM dlq_entries GROUP BY 1`)
	if err != nil {
		return fmt.Errorf("bench: store: count: %w", err)
	}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			rows.Close()
			return fmt.Errorf("bench: store: count: %w", err)
		}
		truth[k] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("bench: store: count: %w", err)
	}
	var maxSeq int64
	if err := st.Pool().QueryRow(ctx, `SELECT max(seq) FROM dlq_entries`).Scan(&maxSeq); err != nil {
		return fmt.Errorf("bench: store: max seq: %w", err)
	}
	rep.RSSBefore = rss()
	pick := func(rng *rand.Rand) string { return storeDLQs[rng.IntN(len(storeDLQs))].name }
	page := func(q dlq.Query, check func(r dlq.Record) bool) error {
		p, err := st.List(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range p.Records {
			if r.DLQ != q.DLQ || !check(r) {
				return fmt.Errorf("%w: %s (status %s, class %s) in a listing of %+v", errWrong, r.Key(), r.Status, r.Entry.ErrorClass, q)
			}
		}
		if len(p.Records) == 0 && q.Cursor == "" && q.Since.IsZero() && q.Text != storeRareText {
			return fmt.Errorf("%w: an empty first page of %+v", errWrong, q)
		}
		return nil
	}
	// The busiest failure group of each DLQ, for the by-group listing.
	busiest := map[string]string{}
	for _, d := range storeDLQs {
		gs, err := st.Groups(ctx, dlq.GroupQuery{DLQ: d.name})
		if err != nil {
			return fmt.Errorf("bench: store: groups of %s: %w", d.name, err)
		}
		if len(gs) == 0 {
			return fmt.Errorf("bench: store: %w: no failure group in %s", errWrong, d.name)
		}
		busiest[d.name] = gs[0].Fingerprint
	}
	arrivals := func(q dlq.ArrivalsQuery) error {
		q.Groups = 8
		a, err := st.Arrivals(ctx, q)
		if err == nil && len(a.Counts) != q.Buckets {
			err = fmt.Errorf("%w: %d buckets of arrivals, want %d", errWrong, len(a.Counts), q.Buckets)
		}
		return err
	}
	pending := func(r dlq.Record) bool { return r.Status == dlq.StatusPending }
	any := func(dlq.Record) bool { return true }
	reads := []struct {
		name    string
		target  time.Duration
		samples int
		fn      func(rng *rand.Rand) error
	}{
		{"page: first, DLQ × pending", targetPage, 0, func(rng *rand.Rand) error {
			return page(dlq.Query{DLQ: pick(rng), Status: dlq.StatusPending}, pending)
		}},
		{"page: deep (keyset at a random entry), DLQ × pending", targetPage, 0, func(rng *rand.Rand) error {
			c := dlq.Cursor{After: rng.Int64N(maxSeq)}.Encode()
			return page(dlq.Query{DLQ: pick(rng), Status: dlq.StatusPending, Cursor: c}, pending)
		}},
		{"page: newest first, DLQ", targetPage, 0, func(rng *rand.Rand) error {
			return page(dlq.Query{DLQ: pick(rng), NewestFirst: true}, any)
		}},
		{"page: by time (a 1 h window), DLQ", targetPage, 0, func(rng *rand.Rand) error {
			since := end.Add(-storeSpan + time.Duration(rng.Int64N(int64(storeSpan-time.Hour))))
			return page(dlq.Query{DLQ: pick(rng), Since: since, Until: since.Add(time.Hour)}, func(r dlq.Record) bool {
				return !r.ReceivedAt.Before(since) && r.ReceivedAt.Before(since.Add(time.Hour))
			})
		}},
		{"page: by error class, DLQ", targetPage, 0, func(rng *rand.Rand) error {
			class := storeErrors[rng.IntN(len(storeErrors))].class
			return page(dlq.Query{DLQ: pick(rng), ErrorClass: class}, func(r dlq.Record) bool { return r.Entry.ErrorClass == class })
		}},
		{"page: text filter (1 entry in 4 matches), DLQ", targetPage, 0, func(rng *rand.Rand) error {
			return page(dlq.Query{DLQ: pick(rng), Text: storeCommonText}, func(r dlq.Record) bool {
				return strings.Contains(strings.ToLower(r.Entry.ErrorMessage), storeCommonText)
			})
		}},
		{"page: text filter (1 in 5,000 matches), DLQ", 0, min(cfg.Samples, 10), func(rng *rand.Rand) error {
			return page(dlq.Query{DLQ: pick(rng), Text: storeRareText}, func(r dlq.Record) bool {
				return strings.Contains(r.Entry.ErrorMessage, storeRareText)
			})
		}},
		{"count: DLQ × pending", targetCount, 0, func(rng *rand.Rand) error {
			d := pick(rng)
			n, err := st.Count(ctx, dlq.Query{DLQ: d, Status: dlq.StatusPending})
			if err == nil && n != truth[d+"/pending"] {
				err = fmt.Errorf("%w: %d pending in %s, counted %d", errWrong, n, d, truth[d+"/pending"])
			}
			return err
		}},
		{"summaries: every DLQ (console header, gauges)", targetCount, 0, func(*rand.Rand) error {
			sums, err := st.Summaries(ctx)
			if err != nil {
				return err
			}
			if len(sums) != len(storeDLQs) {
				return fmt.Errorf("%w: %d summaries, want %d", errWrong, len(sums), len(storeDLQs))
			}
			for _, s := range sums {
				if s.Pending != truth[s.DLQ+"/pending"] || s.Replayed != truth[s.DLQ+"/replayed"] || s.Discarded != truth[s.DLQ+"/discarded"] {
					return fmt.Errorf("%w: summary %+v", errWrong, s)
				}
			}
			return nil
		}},
		{groupsRead(truth), groupsTarget(truth), 0, func(rng *rand.Rand) error {
			d := pick(rng)
			gs, err := st.Groups(ctx, dlq.GroupQuery{DLQ: d})
			var n int64
			for _, g := range gs {
				n += g.Count
			}
			if live := truth[d+"/pending"] + truth[d+"/replaying"] + truth[d+"/replayed"] + truth[d+"/discarded"]; err == nil && (len(gs) == 0 || n > live) {
				err = fmt.Errorf("%w: %d groups of %d entries in %s, which holds %d", errWrong, len(gs), n, d, live)
			}
			return err
		}},
		{"page: by failure group (its busiest), DLQ", targetPage, 0, func(rng *rand.Rand) error {
			d := pick(rng)
			g := busiest[d]
			return page(dlq.Query{DLQ: d, Group: g}, func(r dlq.Record) bool { return r.Fingerprint == g })
		}},
		{"arrivals chart: 24 h by hour, 8 groups, DLQ", 0, 0, func(rng *rand.Rand) error {
			return arrivals(dlq.ArrivalsDay(pick(rng), end.Add(-time.Duration(rng.Int64N(int64(storeSpan-24*time.Hour))))))
		}},
		{"arrivals chart: 7 d by 6 h, 8 groups, DLQ", 0, min(cfg.Samples, 20), func(rng *rand.Rand) error {
			return arrivals(dlq.ArrivalsWeek(pick(rng), end.Add(-time.Duration(rng.Int64N(int64(storeSpan-7*24*time.Hour))))))
		}},
		{"entry by id (whole, with payload)", targetByID, 0, func(rng *rand.Rand) error {
			d, id, _ := strings.Cut(ids[rng.IntN(len(ids))], "/")
			r, err := st.Get(ctx, d, id)
			if err == nil && (r.ID != id || len(r.Entry.OriginalValue) < 256) {
				err = fmt.Errorf("%w: entry %s/%s read as %s with %d bytes", errWrong, d, id, r.Key(), len(r.Entry.OriginalValue))
			}
			return err
		}},
	}
	for _, rd := range reads {
		c := cfg
		if rd.samples > 0 {
			c.Samples = rd.samples
		}
		cfg.Logger.Info("bench: store: timing", "read", rd.name)
		res, err := timed(ctx, c, rd.name, rd.target, rd.fn)
		if err != nil {
			return err
		}
		rep.Reads = append(rep.Reads, res)
		rep.RSSReads = max(rep.RSSReads, rss())
	}
	return nil
}

// largestDLQ returns the entry count of the largest DLQ in truth (entries
// by "dlq/status").
func largestDLQ(truth map[string]int64) int64 {
	per := map[string]int64{}
	var top int64
	for k, n := range truth {
		d, _, _ := strings.Cut(k, "/")
		per[d] += n
		top = max(top, per[d])
	}
	return top
}

// groupsRead names the failure-groups read with the size of the largest
// DLQ it groups.
func groupsRead(truth map[string]int64) string {
	return fmt.Sprintf("groups: a DLQ's failure groups (largest DLQ %d entries)", largestDLQ(truth))
}

// groupsTarget is targetGroups when every DLQ holds at most
// groupsTargetEntries entries, else none (the target is set at that size).
func groupsTarget(truth map[string]int64) time.Duration {
	if largestDLQ(truth) <= groupsTargetEntries {
		return targetGroups
	}
	return 0
}
