package heartbeat

import "strings"

// Keys names the Redis keys of heartbeats. Prefix goes in front of every
// key; it is empty by default (a test, or two deployments sharing one
// Redis database, set one such as "staging:").
type Keys struct{ Prefix string }

// Heartbeat is the key of one instance's heartbeat JSON:
// "worker:{type}:{instance}".
func (k Keys) Heartbeat(typ, instance string) string {
	return k.Prefix + "worker:" + typ + ":" + instance
}

// Registry is the sorted set of a type's instances scored by the unix time
// of their last beat: "workers:{type}".
func (k Keys) Registry(typ string) string { return k.Prefix + "workers:" + typ }

// Stopping is the hash of a type's instances that began shutting down,
// valued by the unix time they began: "workers:{type}:stopping".
func (k Keys) Stopping(typ string) string { return k.Prefix + "workers:" + typ + ":stopping" }

// Paused is the hash of an operator's pause of a type (Pauses), absent
// when the type is not paused: "workers:{type}:paused".
func (k Keys) Paused(typ string) string { return k.Prefix + "workers:" + typ + ":paused" }

// Types is the set of every worker type that ever beat: "workers".
func (k Keys) Types() string { return k.Prefix + "workers" }

// Audit is the stream of operator actions on the registry (Retire,
// Pauses):
// "workers::audit", a name no worker type can produce.
func (k Keys) Audit() string { return k.Prefix + "workers::audit" }

// Discovered is the sorted set of a type's instances the monitor found by
// their heartbeat key alone (a publisher that writes no registry), scored
// by the unix time of the last beat it read: "workers:{type}:discovered".
// It lets the monitor report such an instance MISSING once its key
// expired; an instance that said SHUTTING_DOWN is removed from it.
func (k Keys) Discovered(typ string) string {
	return k.Prefix + "workers:" + typ + ":discovered"
}

// heartbeatMatch is the SCAN pattern of every heartbeat key under the
// prefix, its glob characters escaped.
func (k Keys) heartbeatMatch() string {
	var b strings.Builder
	for _, r := range k.Prefix {
		if strings.ContainsRune(`*?[]\^-`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String() + "worker:*"
}

// parseHeartbeat splits a heartbeat key into its type and instance; ok is
// false for a key that is not "{prefix}worker:{type}:{instance}" with two
// valid names.
func (k Keys) parseHeartbeat(key string) (typ, instance string, ok bool) {
	rest, ok := strings.CutPrefix(key, k.Prefix+"worker:")
	if !ok {
		return "", "", false
	}
	typ, instance, ok = strings.Cut(rest, ":")
	return typ, instance, ok && validName(typ, true) && validName(instance, false)
}
