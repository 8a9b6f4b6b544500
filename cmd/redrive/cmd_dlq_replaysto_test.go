package main

import (
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq/admin"
)

// TestReplaysTo: the REPLAYS TO column of redrive dlq ls says why an entry
// cannot be replayed: its origin disagrees, its message could not be
// decoded, or its DLQ has no configured worker.
func TestReplaysTo(t *testing.T) {
	for _, tt := range []struct {
		e    admin.Entry
		want string
	}{
		{admin.Entry{ReplayDestination: "queue orders.billing (worker billing)"}, "queue orders.billing (worker billing)"},
		{admin.Entry{OriginMismatch: true, ReplayRefused: "origin mismatch: …"}, "ORIGIN MISMATCH"},
		{admin.Entry{Reason: string(broker.ReasonUndecodable), ReplayRefused: "not replayable: …"}, "NOT REPLAYABLE"},
		{admin.Entry{ReplayRefused: "no configured worker replays this DLQ: …"}, "NO ROUTE"},
	} {
		if got := replaysTo(tt.e); got != tt.want {
			t.Errorf("replaysTo(%+v) = %q, want %q", tt.e, got, tt.want)
		}
	}
}
