package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// testArrivals: Arrivals counts a DLQ's arrivals per bucket of its
// window, archived ones included, others DLQs and arrivals outside the
// window not; the busiest groups come with their own counts, most first,
// cut at Groups; Group counts one group's; the day and week presets end in the bucket of now; bad
// queries are refused naming the field.
func testArrivals(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	const name = "arr.dlq"
	since := base.Truncate(time.Hour) // 10:00
	q := dlq.ArrivalsQuery{DLQ: name, Since: since, Step: time.Hour, Buckets: 4, Groups: 2}
	// A: 10:00, 10:59:59, 12:30 (archived later: still an arrival);
	// B: 11:00 ×3; C: 13:59; outside: 09:59:59 and 14:00; another DLQ.
	times := map[string][]time.Duration{
		"a": {0, time.Hour - time.Second, 150 * time.Minute},
		"b": {time.Hour, time.Hour, time.Hour},
		"c": {4*time.Hour - time.Minute},
		"x": {-time.Second, 4 * time.Hour},
	}
	classes := map[string]string{"a": "A", "b": "B", "c": "C", "x": "A"}
	fps := map[string]string{}
	for _, k := range []string{"a", "b", "c", "x"} {
		rs := fill(t, s, name, k, len(times[k]), func(i int, r *dlq.Record) {
			r.ReceivedAt = since.Add(times[k][i])
			r.Entry.ErrorClass = "arr." + classes[k]
		})
		fps[k] = rs[0].Fingerprint
	}
	fill(t, s, "arr-other.dlq", "o", 3, func(i int, r *dlq.Record) { r.ReceivedAt = since })
	// Archive what came before 10:00:30: the 09:59:59 and 10:00 ones.
	if n, err := s.Archive(ctx, name, since.Add(30*time.Second), 10); err != nil || n != 2 {
		t.Fatalf("Archive = %d, %v; want 2", n, err)
	}

	got, err := s.Arrivals(ctx, q)
	if err != nil {
		t.Fatalf("Arrivals: %v", err)
	}
	if want := []int64{2, 3, 1, 1}; !slices.Equal(got.Counts, want) {
		t.Errorf("Counts = %v, want %v", got.Counts, want)
	}
	if got.Query != q {
		t.Errorf("Query = %+v, want %+v", got.Query, q)
	}
	wantGroups := []dlq.GroupArrivals{
		{Fingerprint: fps["a"], Total: 3, Counts: []int64{2, 0, 1, 0}},
		{Fingerprint: fps["b"], Total: 3, Counts: []int64{0, 3, 0, 0}},
	}
	if fps["b"] < fps["a"] { // equal totals: by fingerprint
		wantGroups[0], wantGroups[1] = wantGroups[1], wantGroups[0]
	}
	if fmt.Sprint(got.Groups) != fmt.Sprint(wantGroups) {
		t.Errorf("Groups = %v, want %v", got.Groups, wantGroups)
	}

	// Without groups, and over a window with nothing in it.
	q.Groups = 0
	if got, err := s.Arrivals(ctx, q); err != nil || len(got.Groups) != 0 || !slices.Equal(got.Counts, []int64{2, 3, 1, 1}) {
		t.Errorf("Arrivals without groups = %+v, %v", got, err)
	}
	empty := dlq.ArrivalsQuery{DLQ: name, Since: since.Add(-48 * time.Hour), Step: 6 * time.Hour, Buckets: 3, Groups: 5}
	if got, err := s.Arrivals(ctx, empty); err != nil || len(got.Groups) != 0 || !slices.Equal(got.Counts, []int64{0, 0, 0}) {
		t.Errorf("Arrivals of an empty window = %+v, %v", got, err)
	}

	// One group's.
	q.Group = fps["b"]
	if got, err := s.Arrivals(ctx, q); err != nil || !slices.Equal(got.Counts, []int64{0, 3, 0, 0}) {
		t.Errorf("Arrivals of group b = %+v, %v; want 0 3 0 0", got, err)
	}

	// The presets: 24 hourly and 28 six-hourly buckets ending in now's.
	now := since.Add(3*time.Hour + 10*time.Minute) // 13:10
	day, err := s.Arrivals(ctx, dlq.ArrivalsDay(name, now))
	if err != nil || len(day.Counts) != 24 || !slices.Equal(day.Counts[20:], []int64{2, 3, 1, 1}) {
		t.Errorf("ArrivalsDay = %v, %v; want ... 2 3 1 1", day.Counts, err)
	}
	week, err := s.Arrivals(ctx, dlq.ArrivalsWeek(name, now))
	if err != nil || len(week.Counts) != 28 || week.Counts[27] != 3 || week.Counts[26] != 6 { // 12:00–18:00 (14:00 too); 06:00–12:00 (09:59:59 too)
		t.Errorf("ArrivalsWeek = %v, %v; want ... 6 3", week.Counts, err)
	}

	for _, bad := range []struct {
		q     dlq.ArrivalsQuery
		field string
	}{
		{dlq.ArrivalsQuery{DLQ: "", Since: since, Step: time.Hour, Buckets: 1}, "dlq:"},
		{dlq.ArrivalsQuery{DLQ: name, Step: time.Hour, Buckets: 1}, "since:"},
		{dlq.ArrivalsQuery{DLQ: name, Since: since, Step: time.Second, Buckets: 1}, "step:"},
		{dlq.ArrivalsQuery{DLQ: name, Since: since, Step: time.Hour, Buckets: dlq.MaxArrivalBuckets + 1}, "buckets:"},
		{dlq.ArrivalsQuery{DLQ: name, Since: since, Step: time.Hour, Buckets: 1, Groups: dlq.MaxArrivalGroups + 1}, "groups:"},
		{dlq.ArrivalsQuery{DLQ: name, Since: since, Step: time.Hour, Buckets: 1, Group: "not-a-fingerprint"}, "group:"},
	} {
		if _, err := s.Arrivals(ctx, bad.q); !errors.Is(err, dlq.ErrInvalidQuery) || !strings.Contains(err.Error(), bad.field) {
			t.Errorf("Arrivals(%+v) = %v, want ErrInvalidQuery naming %s", bad.q, err, bad.field)
		}
	}
}
