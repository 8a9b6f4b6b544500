package dlq

import "strings"

// ReconcileActor is the actor of the audit rows operate.Ops.Reconcile writes.
const ReconcileActor = "redrive-reconciler"

// MaxReasonLen bounds a discard reason and the error text of a
// replay_failed audit row.
const MaxReasonLen = 1024

// MaxActorLen bounds an audit row's actor, in bytes (longer ones are
// cut): what an authenticated name with a claim beside it takes
// (access.MaxActorLen), as the fleet's audit keeps (heartbeat.MaxActorLen).
const MaxActorLen = 200

// ActionReplayAsStored is the audit action of a replay an operator forced
// with operate.Ops.ReplayAsStored for an entry whose original message is unknown: its
// stored bytes were sent as they are.
const ActionReplayAsStored = "replay_as_stored"

// AuditActor is actor as an audit row keeps it: printable, at most
// MaxActorLen bytes, "unknown" when empty.
func AuditActor(actor string) string {
	actor = strings.TrimSpace(CleanText(actor))
	if len(actor) > MaxActorLen {
		actor = truncateBytes(actor, MaxActorLen)
	}
	return orUnknown(actor)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// AuditReason is s as an audit row keeps a reason: printable, at most
// MaxReasonLen bytes.
func AuditReason(s string) string { return truncateBytes(CleanText(s), MaxReasonLen) }

// truncateBytes cuts s to at most n bytes on a rune boundary.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
