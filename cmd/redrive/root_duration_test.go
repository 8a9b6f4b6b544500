package main

import (
	"strings"
	"testing"
)

func TestShortDuration(t *testing.T) {
	for in, want := range map[string]string{
		"4m0s":    "4m",
		"1h0m0s":  "1h",
		"1h30m0s": "1h30m",
		"1h0m30s": "1h0m30s",
		"1m30s":   "1m30s",
		"0s":      "0s",
		"500ms":   "500ms",
		"10m0s":   "10m",
		"30s":     "30s",
	} {
		if got := shortDuration(in); got != want {
			t.Errorf("shortDuration(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHelpDurationDefaults: help prints duration defaults as a user
// writes them.
func TestHelpDurationDefaults(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--help"}, "(default 4m)"},
		{[]string{"bench", "--help"}, "(default 10m)"},
		{[]string{"dlq", "replay-all", "--help"}, "(default 500ms)"},
	} {
		code, out, errOut := cli(t, tc.args...)
		if code != exitOK || !strings.Contains(out+errOut, tc.want) || strings.Contains(out+errOut, "m0s)") {
			t.Errorf("redrive %s: %d, want %q and no \"m0s)\" in:\n%s%s", strings.Join(tc.args, " "), code, tc.want, out, errOut)
		}
	}
}
