package broker

import (
	"strings"
	"testing"
	"time"
)

func TestSeverityRankAndCheck(t *testing.T) {
	for _, tt := range []struct {
		s    Severity
		rank int
		ok   bool
	}{
		{SeverityInfo, 1, true}, {SeverityWarning, 2, true}, {SeverityCritical, 3, true},
		{"", 0, true}, {"urgent", 0, false}, {"WARNING", 0, false},
	} {
		if got := tt.s.Rank(); got != tt.rank {
			t.Errorf("%q.Rank() = %d, want %d", tt.s, got, tt.rank)
		}
		if err := tt.s.Check(); (err == nil) != tt.ok {
			t.Errorf("%q.Check() = %v, want ok %v", tt.s, err, tt.ok)
		} else if err != nil && !strings.Contains(err.Error(), `"`+string(tt.s)+`"`) {
			t.Errorf("%q.Check() = %v, does not name the value", tt.s, err)
		}
	}
}

func TestDLQOptions(t *testing.T) {
	if got := (DLQOptions{}).WithDefaults(); got != (DLQOptions{Severity: DefaultSeverity, Retention: DefaultDLQRetention}) {
		t.Errorf("WithDefaults() = %+v", got)
	}
	if got := (DLQOptions{Severity: SeverityInfo, Retention: Forever}).WithDefaults(); got.Severity != SeverityInfo || got.Retention != Forever {
		t.Errorf("WithDefaults() changed set fields: %+v", got)
	}
	for _, o := range []DLQOptions{{Severity: "high"}, {Retention: -2 * time.Second}} {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", o)
		}
	}
	if err := (DLQOptions{Severity: SeverityCritical, Retention: Forever}).Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	day, hour := DLQOptions{Severity: SeverityInfo, Retention: 24 * time.Hour}, DLQOptions{Severity: SeverityCritical, Retention: time.Hour}
	for _, m := range []DLQOptions{day.Merge(hour), hour.Merge(day)} {
		if m != (DLQOptions{Severity: SeverityCritical, Retention: 24 * time.Hour}) {
			t.Errorf("Merge = %+v, want critical, 24h (most severe, longest)", m)
		}
	}
	forever := DLQOptions{Severity: SeverityWarning, Retention: Forever}
	if m := day.Merge(forever); m.Retention != Forever || m.Severity != SeverityWarning {
		t.Errorf("Merge with forever = %+v, want warning, forever", m)
	}
	if m := forever.Merge(day); m.Retention != Forever {
		t.Errorf("forever.Merge = %+v, want forever", m)
	}
}
