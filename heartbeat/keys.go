package heartbeat

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
