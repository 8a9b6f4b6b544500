package config

// Redis configures the Redis of heartbeats, operator pauses and
// poison-pill claim counts. A worker program (worker.Load) publishes
// heartbeats when the file has this section.
type Redis struct {
	Addr     string `yaml:"addr"`     // host:port
	Password string `yaml:"password"` // secret: masked by Redacted (redrive config check)
	DB       int    `yaml:"db"`       // database number; >= 0
	// Prefix goes in front of every key redrive reads and writes in
	// Redis: heartbeats and their registry, operator pauses, the audit
	// stream, claim counts (e.g. "payments:" gives
	// payments:worker:{type}:{instance}). Applications sharing a Redis
	// then never see each other's workers; workers in other languages
	// write their heartbeat key under it too
	// (docs/heartbeat-protocol.md). Empty (the default) keeps the names
	// without a prefix. At most 64 characters of a-z A-Z 0-9 . _ - : /.
	Prefix string `yaml:"prefix"`

	// set: the file has a redis: section (Configured).
	set bool
}

// Configured reports whether the configuration file has a redis: section
// (its defaults are filled in either way).
func (r Redis) Configured() bool { return r.set }

// Heartbeat configures worker heartbeats and their monitor.
type Heartbeat struct {
	Interval           Duration `yaml:"interval"`             // refresh period; > 0
	TTL                Duration `yaml:"ttl"`                  // key TTL; > 0 and longer than interval
	MissingAfter       Duration `yaml:"missing_after"`        // CRITICAL (missing) after this long without a heartbeat; > 0
	IdleAfter          Duration `yaml:"idle_after"`           // WARNING (stuck) after this long without a message while lag > 0; > 0
	ShutdownStuckAfter Duration `yaml:"shutdown_stuck_after"` // WARNING after this long in SHUTTING_DOWN; > 0
	// Instance identifies a worker process in its heartbeats, its dead
	// letters and the worker_instance label, e.g. "${POD_NAME}" or
	// "${HOSTNAME}". A name that survives a restart (a StatefulSet pod, a
	// systemd unit instance) lets the restarted process take over its
	// predecessor's heartbeat, so that the predecessor's missing alert
	// resolves. Empty (also when it expands to empty): hostname-pid,
	// which changes on every restart. At most 200 characters, no
	// whitespace or control characters.
	Instance string `yaml:"instance"`
	// MaxInstances bounds the worker instances the monitor reads in one
	// check (serve, exporter, redrive workers): the rows of the table,
	// /healthz and the console, and the series of /metrics. Configured
	// workers' instances are read first; the others are left out,
	// counted (redrive_worker_instances_dropped) and logged. Default
	// 10000; >= 1.
	MaxInstances int `yaml:"max_instances"`
}
