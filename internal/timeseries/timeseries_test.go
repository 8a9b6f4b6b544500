package timeseries_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/timeseries"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// TestHistoryBounds: each series keeps its newest Points points, oldest
// first; series beyond MaxSeries are dropped and counted; a series
// without a point in the kept window is forgotten and makes room.
func TestHistoryBounds(t *testing.T) {
	h, err := timeseries.New(timeseries.Config{Points: 3, MaxSeries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Series(); len(got) != 0 {
		t.Fatalf("empty history has %d series", len(got))
	}
	for i := range 5 {
		h.Record(t0.Add(time.Duration(i)*time.Minute), map[string]float64{"b": float64(i), "a": float64(10 * i), "c": 1})
	}
	got := h.Series()
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("series = %+v, want a and b (c beyond MaxSeries)", got)
	}
	for _, s := range got {
		if len(s.Points) != 3 {
			t.Fatalf("%s keeps %d points, want 3", s.Name, len(s.Points))
		}
		for j, p := range s.Points {
			if want := t0.Add(time.Duration(j+2) * time.Minute); !p.T.Equal(want) {
				t.Errorf("%s point %d at %s, want %s (oldest first)", s.Name, j, p.T, want)
			}
		}
	}
	if v := got[1].Points[2].V; v != 4 {
		t.Errorf("newest b = %v, want 4", v)
	}
	if d := h.Dropped(); d != 5 {
		t.Errorf("dropped %d points, want 5 (c's)", d)
	}
	// b stops; after 3 samples without it, it is forgotten and c fits.
	for i := 5; i < 9; i++ {
		h.Record(t0.Add(time.Duration(i)*time.Minute), map[string]float64{"a": 1, "c": 2})
	}
	got = h.Series()
	names := fmt.Sprint(len(got), " ", got[0].Name, " ", got[1].Name)
	if names != "2 a c" {
		t.Errorf("series after b stopped: %s, want 2 a c", names)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  timeseries.Config
		want bool
	}{
		{timeseries.Config{}, true},
		{timeseries.Config{Points: -1}, false},
		{timeseries.Config{MaxSeries: -1}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.want {
			t.Errorf("%+v: Validate = %v", tc.cfg, err)
		}
	}
}
