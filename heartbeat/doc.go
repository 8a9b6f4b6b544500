// Package heartbeat publishes worker heartbeats to Redis and reads them back
// into a health table.
//
// # Keys
//
// With an empty key prefix (the default; [Keys.Prefix] puts one in front of
// every key):
//
//	worker:{type}:{instance}   string, the heartbeat JSON, EX ttl (30 s; 60 s once SHUTTING_DOWN)
//	workers:{type}             sorted set, member = instance, score = unix time of its last beat
//	workers:{type}:stopping    hash, field = instance, value = unix time it began shutting down
//	workers                    set of every worker type that ever beat
//	workers::audit             stream of retirements (Retire): who retired which instance, when, why
//
// {type} is the worker name (the consumer group) and {instance} identifies
// one process: PublisherConfig.Instance (the configuration's
// heartbeat.instance, e.g. a pod name, so that a restarted process takes
// over its own heartbeat), "hostname-pid" by default. The heartbeat JSON is
//
//	{"timestamp": "2025-01-15T10:30:00.000Z", "status": "RUNNING",
//	 "last_message_at": "2025-01-15T10:29:58.125Z", "consumer_lag": 12,
//	 "started_at": "2025-01-15T09:00:00.000Z"}
//
// with RFC 3339 UTC timestamps (millisecond precision), status RUNNING or
// SHUTTING_DOWN, last_message_at null until the first message, and
// started_at (an addition to the design's four fields) telling how long a
// worker that never handled a message has been idle.
//
// The sorted set outlives the heartbeat key: a worker whose key expired still
// reads as MISSING instead of vanishing. Entries older than ForgetAfter
// (24 h by default) are pruned by the publishers and ignored by the monitor;
// [Publisher.Deregister] removes an instance that exited cleanly, and
// [Retire] one that vanished (an operator's decision, audited).
//
// # Publisher
//
// A [Publisher] beats every Interval with one round trip (SET of the key and
// the registry update, pipelined). [Publisher.MessageHandled] and
// [Publisher.SetLag] are atomic stores, cheap enough for every message;
// PublisherConfig.Lag, when set, is asked for the consumer lag before each
// beat (the worker package passes its broker's measure). When
// Redis is unreachable the worker keeps working: the publisher logs once per
// outage and resumes when Redis is back. When Run's context ends it writes
// SHUTTING_DOWN with a 60 s TTL and records the moment in
// workers:{type}:stopping; a process that then drains and exits cleanly calls
// Deregister.
//
// # Monitor
//
// A [Monitor] reads every heartbeat with a bounded number of round trips
// whatever the number of workers (SMEMBERS; one pipeline of ZRANGEBYSCORE +
// HGETALL per type; MGETs of 1,000 keys, four in flight at once) and
// evaluates each worker; 10,000 workers take a few tens of milliseconds:
//
//	condition                                              severity  condition label
//	no heartbeat for more than MissingAfter (60 s)         CRITICAL  missing
//	key expired, last beat less than MissingAfter ago      OK        late
//	lag above the critical threshold of its worker type    CRITICAL  lag_critical
//	SHUTTING_DOWN for more than ShutdownStuckAfter (2 m)   WARNING   shutdown_stuck
//	RUNNING, lag > 0, no message for IdleAfter (5 m)       WARNING   stuck
//	lag above the warning threshold of its worker type     WARNING   lag_warning
//	heartbeat JSON that cannot be read                     WARNING   malformed
//	SHUTTING_DOWN within ShutdownStuckAfter                OK        shutting_down
//	RUNNING, none of the above                             OK        ok
//
// A worker's severity is the worst of the conditions it meets. When Redis
// cannot be read every worker reads UNKNOWN (never "all dead"): [Monitor.Check]
// returns the workers it saw last, or one "*" row when it saw none, with
// severity UNKNOWN and an error wrapping [ErrUnavailable].
//
// # Metrics
//
// A [Sampler] runs the monitor on an interval and serves the cached table to
// Prometheus, so a scrape costs no Redis round trip:
//
//	worker_heartbeat_timestamp_seconds{type,worker_instance}         last beat, unix seconds
//	redrive_worker_status{type,worker_instance,condition,severity}   1 per condition a worker meets
//	redrive_worker_running_instances{type,dlq_severity}              RUNNING instances of each configured worker
//
// The worker process is labelled worker_instance, never instance: a
// Prometheus scrape owns that label (the target's address).
//
// worker_heartbeat_timestamp_seconds is not exported while Redis is
// unreachable, so a Redis outage does not look like every worker missing.
package heartbeat
