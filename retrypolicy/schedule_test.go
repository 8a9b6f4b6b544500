package retrypolicy

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		in   string
		want []time.Duration
	}{
		{"1s", []time.Duration{time.Second}},
		{"1s -> 5s -> 30s -> 5m -> 30m", []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute}},
		{"1s->5s->30s", []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}},
		{"1s,5s, 30s", []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}},
		{"  1s  ->  2s  ", []time.Duration{time.Second, 2 * time.Second}},
		{"1s -> 2s, 3s", []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}},
		{"\t1s\n->\n2s", []time.Duration{time.Second, 2 * time.Second}},
		{"0s -> 0", []time.Duration{0, 0}},
		{"1.5s -> 250ms", []time.Duration{1500 * time.Millisecond, 250 * time.Millisecond}},
		{"1h30m", []time.Duration{90 * time.Minute}},
		{"1d -> 2d12h", []time.Duration{24 * time.Hour, 60 * time.Hour}},
		{"30m -> 1d", []time.Duration{30 * time.Minute, 24 * time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSchedule(tt.in)
			if err != nil {
				t.Fatalf("ParseSchedule(%q): %v", tt.in, err)
			}
			if !slices.Equal(got.Delays, tt.want) {
				t.Fatalf("ParseSchedule(%q) = %v, want %v", tt.in, got.Delays, tt.want)
			}
			if got.NoRepeat {
				t.Errorf("ParseSchedule(%q) set NoRepeat", tt.in)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("parsed schedule does not validate: %v", err)
			}
		})
	}
}

func TestParseScheduleErrors(t *testing.T) {
	tests := []struct {
		in       string
		contains []string // each must be in the error message
	}{
		{"", []string{"empty"}},
		{"   ", []string{"empty"}},
		{"1s -> x -> 5s", []string{"step 2", `"x"`, "not a duration"}},
		{"1s, 5", []string{"step 2", `"5"`, "not a duration"}},
		{"1s -> -5s", []string{"step 2", `"-5s"`, "negative"}},
		{"1s ->", []string{"step 2", "empty"}},
		{"-> 1s", []string{"step 1", "empty"}},
		{"1s,,5s", []string{"step 2", "empty"}},
		{"1s -> -> 5s", []string{"step 2", "empty"}},
		{",", []string{"step 1", "empty"}},
		{"1s > 5s", []string{"step 1", "not a duration"}},
		{"1s -> 1.5d", []string{"step 2", `"1.5d"`, "not a duration"}},
		{"d", []string{"step 1", "not a duration"}},
		{"-1d", []string{"step 1", "not a duration"}},
		{"1d-5s", []string{"step 1", "not a duration"}},
		{"1d+5s", []string{"step 1", "not a duration"}},
		{"9999999d", []string{"step 1", "out of range"}},
		{"106751d23h47m17s", []string{"step 1", "out of range"}},
		{"1s -> 5s\n -> oops\nmore", []string{"step 3", `"oops\nmore"`}},
		{"1s -> 5x -> -1s -> 30s ->", []string{"step 2", `"5x"`, "step 3", `"-1s" is negative`, "step 5 is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := ParseSchedule(tt.in)
			if err == nil {
				t.Fatalf("ParseSchedule(%q) = %v, want an error", tt.in, s)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %q does not wrap ErrInvalid", err)
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") {
				t.Errorf("error %q spans several lines", msg)
			}
			for _, c := range tt.contains {
				if !strings.Contains(msg, c) {
					t.Errorf("error %q does not contain %q", msg, c)
				}
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"1s", time.Second},
		{" 5m ", 5 * time.Minute},
		{"1.5s", 1500 * time.Millisecond},
		{"1h30m", 90 * time.Minute},
		{"1d", 24 * time.Hour},
		{"30d", 30 * 24 * time.Hour},
		{"2d12h", 60 * time.Hour},
		{"1d30m15s", 24*time.Hour + 30*time.Minute + 15*time.Second},
		{"0d", 0},
		{"-5s", -5 * time.Second}, // a valid duration; schedules reject it
		{"106751d", 106751 * 24 * time.Hour},
		{"106751d23h47m16.854775807s", math.MaxInt64},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil {
			t.Errorf("ParseDuration(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	for _, in := range []string{"", " ", "x", "5", "d", "1.5d", "-1d", "1d-1h", "1d 12h", "1dd", "12h1d", "1e3s", "9999999d", "106752d", "106751d24h"} {
		got, err := ParseDuration(in)
		if err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, got)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseDuration(%q) error %q does not wrap ErrInvalid", in, err)
		}
		if !strings.Contains(err.Error(), strconv.Quote(in)) {
			t.Errorf("ParseDuration(%q) error %q does not quote the input", in, err)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{time.Second, "1s"},
		{1500 * time.Millisecond, "1.5s"},
		{250 * time.Millisecond, "250ms"},
		{5 * time.Minute, "5m"},
		{90 * time.Second, "1m30s"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + 5*time.Second, "1h0m5s"},
		{10*time.Minute + 500*time.Millisecond, "10m0.5s"},
		{24 * time.Hour, "24h"},
		{-time.Hour, "-1h"},
	}
	for _, tt := range tests {
		got := FormatDuration(tt.in)
		if got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := ParseDuration(got)
		if err != nil || back != tt.in {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v; want it back", tt.in, back, err)
		}
	}
}

func TestScheduleDelay(t *testing.T) {
	s := Schedule{Delays: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}}
	tests := []struct {
		n              int
		repeat, noRept time.Duration
	}{
		{-1, 0, 0},
		{0, 0, 0},
		{1, time.Second, time.Second},
		{2, 5 * time.Second, 5 * time.Second},
		{3, 30 * time.Second, 30 * time.Second},
		{4, 30 * time.Second, 0},
		{100, 30 * time.Second, 0},
	}
	nr := s
	nr.NoRepeat = true
	for _, tt := range tests {
		if got := s.Delay(tt.n); got != tt.repeat {
			t.Errorf("Delay(%d) = %v, want %v", tt.n, got, tt.repeat)
		}
		if got := nr.Delay(tt.n); got != tt.noRept {
			t.Errorf("NoRepeat Delay(%d) = %v, want %v", tt.n, got, tt.noRept)
		}
	}
	if got := (Schedule{}).Delay(1); got != 0 {
		t.Errorf("empty schedule Delay(1) = %v, want 0", got)
	}
}

func TestScheduleString(t *testing.T) {
	s := Schedule{Delays: []time.Duration{time.Second, 90 * time.Second, time.Hour, 1500 * time.Millisecond}}
	if got, want := s.String(), "1s -> 1m30s -> 1h -> 1.5s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestScheduleValidate(t *testing.T) {
	if err := (Schedule{}).Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty schedule: Validate() = %v, want ErrInvalid", err)
	}
	err := Schedule{Delays: []time.Duration{time.Second, -time.Second}}.Validate()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "step 2") {
		t.Errorf("negative step: Validate() = %v, want ErrInvalid naming step 2", err)
	}
	if err := (Schedule{Delays: []time.Duration{0, time.Second}}).Validate(); err != nil {
		t.Errorf("valid schedule: Validate() = %v", err)
	}
}

func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{
		"1s -> 5s -> 30s -> 5m -> 30m",
		"1s,5s,30s",
		"1d -> 2d12h",
		"0 -> 1ns -> 1.5s",
		"106751d23h47m16.854775807s",
		"9999999d",
		"1s -> -5s",
		"1s,,5s",
		"->",
		"",
		"d",
		"1d+5s",
		"1h0m5s -> 10m0.5s",
		"\x00\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSchedule(in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseSchedule(%q) error %q does not wrap ErrInvalid", in, err)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("ParseSchedule(%q) error %q spans several lines", in, err)
			}
			return
		}
		if len(s.Delays) == 0 {
			t.Fatalf("ParseSchedule(%q) returned no delays and no error", in)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("ParseSchedule(%q) = %v, which does not validate: %v", in, s.Delays, err)
		}
		again, err := ParseSchedule(s.String())
		if err != nil {
			t.Fatalf("ParseSchedule(%q) = %q, which does not re-parse: %v", in, s, err)
		}
		if !slices.Equal(again.Delays, s.Delays) {
			t.Fatalf("ParseSchedule(%q) = %v; re-parsed from %q = %v", in, s.Delays, s, again.Delays)
		}
	})
}
