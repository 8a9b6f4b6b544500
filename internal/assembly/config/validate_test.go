package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq/access"
)

// Token hashes of admin.operators in the tests.
var (
	hashA = access.HashToken("token-of-a-0123456789-abcdefghijklm")
	hashB = access.HashToken("token-of-b-0123456789-abcdefghijklm")
)

func TestValidateRules(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		// broker
		{"broker missing", "workers: []", []string{"broker: required (kafka or rabbitmq)"}},
		{"broker unknown", "broker: rabit", []string{`broker: "rabit" is not kafka or rabbitmq`}},
		{"broker kafka without brokers", "broker: kafka", []string{"kafka.brokers: required when broker is kafka"}},
		{"broker kafka with empty brokers", "broker: kafka\nkafka: {brokers: [\"\", \" , \"]}", []string{"kafka.brokers: required when broker is kafka"}},

		// rabbitmq
		{"rabbitmq url scheme", "broker: rabbitmq\nrabbitmq: {url: \"http://h:5672/\"}", []string{`rabbitmq.url: scheme "http" is not amqp or amqps`}},
		{"rabbitmq url without host", "broker: rabbitmq\nrabbitmq: {url: \"amqp:///vhost\"}", []string{`rabbitmq.url: "amqp:///vhost" has no host`}},
		{"rabbitmq url not a URL", "broker: rabbitmq\nrabbitmq: {url: \"amqp://u:pw@h:port/\"}", []string{`rabbitmq.url: "amqp://***" is not a valid URL (a password with "/", "?", "#" or "@" must be percent-encoded (%2F %3F %23 %40))`}},
		{"rabbitmq urls", "broker: rabbitmq\nrabbitmq: {urls: [\"amqp://h1/\", \"amqps://h2/\"]}", nil},
		{"rabbitmq url and urls", "broker: rabbitmq\nrabbitmq: {url: \"amqp://h/\", urls: [\"amqp://h1/\"]}",
			[]string{"rabbitmq.urls: set, and so is rabbitmq.url (url is the one-URL form of urls: keep one)"}},
		{"rabbitmq urls entry named by index", "broker: rabbitmq\nrabbitmq: {urls: [\"amqp://h1/\", \"http://u:pw@h2/\", \"amqp://u:pw@h3:port/\"]}",
			[]string{`rabbitmq.urls[1]: scheme "http" is not amqp or amqps`, `rabbitmq.urls[2]: "amqp://***" is not a valid URL (a password with "/", "?", "#" or "@" must be percent-encoded (%2F %3F %23 %40))`}},
		{"rabbitmq tls needs every url amqps", "broker: rabbitmq\nrabbitmq: {urls: [\"amqps://h1/\", \"amqp://h2/\"], tls: {server_name: h}}",
			[]string{"rabbitmq.tls: set, but rabbitmq.urls[1] is not amqps://"}},
		{"rabbitmq url unchecked for kafka", "broker: kafka\nkafka: {brokers: [k:9092]}\nrabbitmq: {url: \"http://h/\"}", nil},
		{"rabbitmq prefix", "broker: rabbitmq\nrabbitmq: {prefix: \"my prefix\"}", []string{`rabbitmq.prefix: "my prefix" is not a legal name (1-191 of a-z A-Z 0-9 . _ - :)`}},
		{"rabbitmq queue_type", "broker: rabbitmq\nrabbitmq: {queue_type: mirrored}", []string{`rabbitmq.queue_type: "mirrored" is not classic or quorum`}},
		{"rabbitmq quorum", "broker: rabbitmq\nrabbitmq: {queue_type: quorum}", nil},
		{"rabbitmq delay queue_type", "broker: rabbitmq\nrabbitmq: {queue_type: quorum, delay: {queue_type: classic}}", nil},
		{"rabbitmq delay queue_type unknown", "broker: rabbitmq\nrabbitmq: {delay: {queue_type: stream}}", []string{`rabbitmq.delay.queue_type: "stream" is not classic or quorum`}},
		{"rabbitmq max_length", "broker: rabbitmq\nrabbitmq: {max_length: -1}", []string{"rabbitmq.max_length: -1 is negative"}},
		{"rabbitmq keeper_batch", "broker: rabbitmq\nrabbitmq: {keeper_batch: 20000}", []string{"rabbitmq.keeper_batch: 20000 is not between 1 and 10000"}},
		{"rabbitmq keeper_batch_wait", "broker: rabbitmq\nrabbitmq: {keeper_batch_wait: 2s}", []string{"rabbitmq.keeper_batch_wait: 2s is not between 0 and 1s"}},
		{"delay mode", "broker: rabbitmq\nrabbitmq: {delay: {mode: teleport}}", []string{`rabbitmq.delay.mode: "teleport" is not hops or route`}},
		{"delay resolution negative", "broker: rabbitmq\nrabbitmq: {delay: {resolution: -1s}}", []string{"rabbitmq.delay.resolution: -1s is not positive"}},
		{"delay resolution fraction of ms", "broker: rabbitmq\nrabbitmq: {delay: {resolution: 1500us}}", []string{"rabbitmq.delay.resolution: 1.5ms is not a whole number of milliseconds"}},
		{"delay factor", "broker: rabbitmq\nrabbitmq: {delay: {factor: 1}}", []string{"rabbitmq.delay.factor: 1 is below 2"}},
		{"delay levels", "broker: rabbitmq\nrabbitmq: {delay: {levels: -1}}", []string{"rabbitmq.delay.levels: -1 is below 1"}},
		{"delay largest tier over the TTL limit", "broker: rabbitmq\nrabbitmq: {delay: {levels: 30}}",
			[]string{"rabbitmq.delay.levels: the largest tier, 1s × 4^29, exceeds RabbitMQ's x-message-ttl limit (49d17h2m47.295s)"}},
		{"delay tiers too short for a back-off", "broker: rabbitmq\nrabbitmq: {delay: {levels: 2}}\nworkers:\n  - {name: w, topic: t}\n  - {name: v, topic: t, retry: {backoff: \"1s -> 15s\"}}",
			[]string{`workers[0].retry.backoff: worker "w": longest delay 30m exceeds 15s, the longest the delay tiers express (rabbitmq.delay: 1s × (4^2 − 1))`}},
		{"delay tiers fit when retries stop early", "broker: rabbitmq\nrabbitmq: {delay: {levels: 2}}\nworkers: [{name: w, topic: t, retry: {max_retries: 2, backoff: \"1s -> 15s -> 1h\"}}]", nil},
		{"delay tiers and an exponential back-off with jitter", "broker: rabbitmq\nrabbitmq: {delay: {resolution: 1s, factor: 2, levels: 4}}\nworkers: [{name: w, topic: t, retry: {backoff: {exponential: {initial: 1s, max: 10s, jitter: 0.6}}}}]",
			[]string{`workers[0].retry.backoff: worker "w": longest delay 16s exceeds 15s, the longest the delay tiers express (rabbitmq.delay: 1s × (2^4 − 1))`}},
		{"delay tiers ignored on kafka", "broker: kafka\nkafka: {brokers: [k:9092]}\nrabbitmq: {delay: {levels: 1}}\nworkers: [{name: w, topic: t}]", nil},

		// kafka
		{"kafka partitions", "broker: kafka\nkafka: {brokers: [k:9092], partitions: -1}", []string{"kafka.partitions: -1 is not positive"}},
		{"kafka replication_factor", "broker: kafka\nkafka: {brokers: [k:9092], replication_factor: -2}", []string{"kafka.replication_factor: -2 is not -1 (the broker's default) or positive"}},
		{"kafka negative tuning", "broker: kafka\nkafka: {brokers: [k:9092], commit_interval: -1s}", []string{"kafka.commit_interval: -1s is negative"}},
		{"kafka heartbeat vs session", "broker: kafka\nkafka: {brokers: [k:9092], heartbeat_interval: 10s, session_timeout: 5s}", []string{"kafka.heartbeat_interval: 10s must be shorter than session_timeout (5s)"}},

		// kafka.foreign_dlqs
		{"foreign dlqs", "broker: kafka\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: orders.DLT, replay_to: orders}, {topic: dlq-jdbc-sink, format: connect, severity: critical, retention: forever, replay_to: events}]}", nil},
		{"foreign dlq format", "broker: kafka\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: d, format: avro, replay_to: t}]}",
			[]string{`kafka.foreign_dlqs[0].format: "avro" is not spring, connect or auto`}},
		{"foreign dlq replay_to missing", "broker: kafka\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: d}]}",
			[]string{"kafka.foreign_dlqs[0].replay_to: required: the topic replays of its entries go to (never the one a record names)"}},
		{"foreign dlq replays to itself", "broker: kafka\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: d, replay_to: d}]}",
			[]string{`kafka.foreign_dlqs[0].replay_to: "d" is the dead-letter topic itself`}},
		{"foreign dlq replays to another foreign dlq", "broker: kafka\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: d, replay_to: t}, {topic: e, replay_to: d}]}",
			[]string{`kafka.foreign_dlqs[1].replay_to: "d" is the dead-letter topic of kafka.foreign_dlqs[0]`}},
		{"foreign dlq listed twice", "broker: kafka\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: d, replay_to: t}, {topic: d, replay_to: u}]}",
			[]string{`kafka.foreign_dlqs[1].topic: "d" is already kafka.foreign_dlqs[0].topic`}},
		{"foreign dlq names", "broker: kafka\nkafka: {brokers: [k:9092], foreign_dlqs: [{replay_to: \"a b\"}]}",
			[]string{"kafka.foreign_dlqs[0].topic: required", `kafka.foreign_dlqs[0].replay_to: "a b" is not a legal topic name (1-249 of a-z A-Z 0-9 . _ -, not "." or "..")`}},
		{"foreign dlq severity and retention", "broker: kafka\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: d, replay_to: t, severity: loud, retention: -1h}]}",
			[]string{`kafka.foreign_dlqs[0].severity: "loud" is not critical, warning or info`, "kafka.foreign_dlqs[0].retention: -1h is negative"}},
		{"foreign dlqs on rabbitmq", "broker: rabbitmq\nkafka: {foreign_dlqs: [{topic: d, replay_to: t}]}",
			[]string{`kafka.foreign_dlqs: set, but broker is "rabbitmq" (foreign dead-letter topics are Kafka topics)`}},

		// rabbitmq.foreign_dlqs
		{"foreign queues", "broker: rabbitmq\nrabbitmq: {foreign_dlqs: [{queue: attune.dlx.queue, severity: critical, retention: forever, replay_to: {x_death_exchanges: [attune.executions, attune.jobs]}}, {queue: \"legacy dlq\", replay_to: {exchange: legacy, routing_key: \"\"}}]}", nil},
		{"foreign queue replay_to missing", "broker: rabbitmq\nrabbitmq: {foreign_dlqs: [{queue: q}]}",
			[]string{"rabbitmq.foreign_dlqs[0].replay_to: required: exchange (with routing_key), or x_death_exchanges (the exchanges x-death may name)"}},
		{"foreign queue replay_to both", "broker: rabbitmq\nrabbitmq: {foreign_dlqs: [{queue: q, replay_to: {exchange: e, x_death_exchanges: [e]}}]}",
			[]string{"rabbitmq.foreign_dlqs[0].replay_to.x_death_exchanges: set with exchange: give one or the other"}},
		{"foreign queue x-death with a routing key", "broker: rabbitmq\nrabbitmq: {foreign_dlqs: [{queue: q, replay_to: {routing_key: k, x_death_exchanges: [e]}}]}",
			[]string{"rabbitmq.foreign_dlqs[0].replay_to.routing_key: set with x_death_exchanges: the routing key is the one x-death names"}},
		{"foreign queue x-death exchanges", "broker: rabbitmq\nrabbitmq: {foreign_dlqs: [{queue: q, replay_to: {x_death_exchanges: [e, \"\", e, \"a\\u0007\"]}}]}",
			[]string{"rabbitmq.foreign_dlqs[0].replay_to.x_death_exchanges[1]: empty (the default exchange is not a replay target)",
				`rabbitmq.foreign_dlqs[0].replay_to.x_death_exchanges[2]: "e" is listed twice`,
				`rabbitmq.foreign_dlqs[0].replay_to.x_death_exchanges[3]: "a\a" holds control characters or invalid UTF-8`}},
		{"foreign queue names", "broker: rabbitmq\nrabbitmq: {foreign_dlqs: [{replay_to: {exchange: e}}, {queue: " + strings.Repeat("q", 256) + ", replay_to: {exchange: " + strings.Repeat("e", 256) + "}}]}",
			[]string{"rabbitmq.foreign_dlqs[0].queue: required", "rabbitmq.foreign_dlqs[1].queue: 256 bytes, over RabbitMQ's 255",
				"rabbitmq.foreign_dlqs[1].replay_to.exchange: 256 bytes, over RabbitMQ's 255"}},
		{"foreign queue listed twice", "broker: rabbitmq\nrabbitmq: {foreign_dlqs: [{queue: q, replay_to: {exchange: e}}, {queue: q, replay_to: {exchange: f}}]}",
			[]string{`rabbitmq.foreign_dlqs[1].queue: "q" is already rabbitmq.foreign_dlqs[0].queue`}},
		{"foreign queue severity and retention", "broker: rabbitmq\nrabbitmq: {foreign_dlqs: [{queue: q, replay_to: {exchange: e}, severity: loud, retention: -1h}]}",
			[]string{`rabbitmq.foreign_dlqs[0].severity: "loud" is not critical, warning or info`, "rabbitmq.foreign_dlqs[0].retention: -1h is negative"}},
		{"foreign queues on kafka", "broker: kafka\nkafka: {brokers: [k:9092]}\nrabbitmq: {foreign_dlqs: [{queue: q, replay_to: {exchange: e}}]}",
			[]string{`rabbitmq.foreign_dlqs: set, but broker is "kafka" (foreign dead-letter queues are RabbitMQ queues)`}},

		// The names a backend derives (queues, topics, keys) are checked by
		// the backend: broker/rabbit and broker/kafka, check_test.go.

		// dlq
		{"dlq max_payload_preview negative", "broker: rabbitmq\ndlq: {max_payload_preview: -1}", []string{"dlq.max_payload_preview: -1 is negative (bytes of a payload shown inline)"}},
		{"dlq max_payload_preview", "broker: rabbitmq\ndlq: {max_payload_preview: 1048576}", nil},
		{"dlq job_lease short", "broker: rabbitmq\ndlq: {job_lease: 500ms}", []string{"dlq.job_lease: 500ms is shorter than 1s"}},
		{"dlq replica", "broker: rabbitmq\ndlq: {replica: pod-1, job_lease: 10s}", nil},
		{"dlq replica with a space", "broker: rabbitmq\ndlq: {replica: \"pod 1\"}", []string{"dlq.replica: \"pod 1\" is longer than 200 characters or holds whitespace or control characters"}},
		{"admin session_secret short", "broker: rabbitmq\nadmin: {session_secret: short}", []string{"admin.session_secret: shorter than 32 characters"}},
		{"admin session_secret", "broker: rabbitmq\nadmin: {session_secret: 0123456789abcdef0123456789abcdef}", nil},
		{"dlq unknown key", "broker: rabbitmq\ndlq: {max_preview: 5}", []string{"dlq.max_preview: unknown key (line 2)"}},

		// redis, postgres
		{"redis addr", "broker: rabbitmq\nredis: {addr: localhost}", []string{`redis.addr: "localhost" is not host:port`}},
		{"redis addr port", "broker: rabbitmq\nredis: {addr: \"h:0\"}", []string{`redis.addr: "h:0" is not host:port`}},
		{"redis db", "broker: rabbitmq\nredis: {db: -1}", []string{"redis.db: -1 is negative"}},
		{"postgres scheme", "broker: rabbitmq\npostgres: {url: \"mysql://u:p@h/db\"}", []string{`postgres.url: scheme "mysql" is not postgres or postgresql`}},
		{"postgres DSN", "broker: rabbitmq\npostgres: {url: \"host=h user=u password=p dbname=d\"}", nil},

		// heartbeat
		{"heartbeat negative", "broker: rabbitmq\nheartbeat: {interval: -1s, missing_after: -1m}",
			[]string{"heartbeat.interval: -1s is not positive", "heartbeat.missing_after: -1m is not positive"}},
		{"heartbeat instance with a space", "broker: rabbitmq\nheartbeat: {instance: \"pod 1\"}",
			[]string{`heartbeat.instance: "pod 1" holds whitespace, a control character or invalid UTF-8`}},
		{"heartbeat instance too long", "broker: rabbitmq\nheartbeat: {instance: " + strings.Repeat("x", 201) + "}",
			[]string{"heartbeat.instance: 201 characters, more than 200"}},
		{"health listen", "broker: rabbitmq\nhealth: {listen: nowhere}", []string{`health.listen: "nowhere" is not host:port`}},
		{"heartbeat ttl not longer than interval", "broker: rabbitmq\nheartbeat: {interval: 30s, ttl: 30s}",
			[]string{"heartbeat.ttl: 30s must be longer than heartbeat.interval (30s)"}},
		{"heartbeat ttl against the default interval", "broker: rabbitmq\nheartbeat: {ttl: 5s}",
			[]string{"heartbeat.ttl: 5s must be longer than heartbeat.interval (10s)"}},

		// workers
		{"worker name and topic required", "broker: rabbitmq\nworkers: [{concurrency: 1}]", []string{"workers[0].name: required", "workers[0].topic: required"}},
		{"worker name illegal", "broker: rabbitmq\nworkers: [{name: \"pay out\", topic: t}]",
			[]string{`workers[0].name: "pay out" is not a legal topic name (1-249 of a-z A-Z 0-9 . _ -, not "." or "..")`}},
		{"worker topic dot", "broker: rabbitmq\nworkers: [{name: w, topic: \".\"}]",
			[]string{`workers[0].topic: "." is not a legal topic name (1-249 of a-z A-Z 0-9 . _ -, not "." or "..")`}},
		{"worker topic dotdot", "broker: rabbitmq\nworkers: [{name: w, topic: \"..\"}]",
			[]string{`workers[0].topic: ".." is not a legal topic name (1-249 of a-z A-Z 0-9 . _ -, not "." or "..")`}},
		{"worker topic slash", "broker: rabbitmq\nworkers: [{name: w, topic: a/b}]",
			[]string{`workers[0].topic: "a/b" is not a legal topic name (1-249 of a-z A-Z 0-9 . _ -, not "." or "..")`}},
		{"worker topic non-ASCII", "broker: rabbitmq\nworkers: [{name: w, topic: événements}]",
			[]string{`workers[0].topic: "événements" is not a legal topic name (1-249 of a-z A-Z 0-9 . _ -, not "." or "..")`}},
		{"worker topic too long", "broker: rabbitmq\nworkers: [{name: w, topic: " + strings.Repeat("t", 250) + "}]",
			[]string{`workers[0].topic: "` + strings.Repeat("t", 40) + `..." is not a legal topic name (1-249 of a-z A-Z 0-9 . _ -, not "." or "..")`}},
		{"worker topic 249 characters", "broker: rabbitmq\nworkers: [{name: w, topic: " + strings.Repeat("t", 249) + "}]", nil},
		{"worker names unique", "broker: rabbitmq\nworkers: [{name: w, topic: t}, {name: v, topic: t}, {name: w, topic: u}]",
			[]string{`workers[2].name: "w" is already the name of workers[0]`}},
		{"worker queue_ttl", "broker: rabbitmq\nworkers: [{name: w, topic: t, queue_ttl: -5m}]", []string{"workers[0].queue_ttl: -5m is negative"}},
		{"worker concurrency and prefetch", "broker: rabbitmq\nworkers: [{name: w, topic: t, concurrency: -1, prefetch: -2}]",
			[]string{"workers[0].concurrency: -1 is negative", "workers[0].prefetch: -2 is negative"}},
		{"worker kill_switch", "broker: rabbitmq\nworkers: [{name: w, topic: t, kill_switch: {enabled: true, window: 10s}}]", nil},
		{"worker kill_switch trip_ratio", "broker: rabbitmq\nworkers: [{name: w, topic: t, kill_switch: {enabled: true, trip_ratio: 2}}]",
			[]string{"workers[0].kill_switch.trip_ratio: 2 is not in (0, 1]"}},
		{"worker kill_switch max_restart_after", "broker: rabbitmq\nworkers: [{name: w, topic: t, kill_switch: {restart_after: 1m, max_restart_after: 10s}}]",
			[]string{"workers[0].kill_switch.max_restart_after: 10s is below restart_after 1m0s"}},
		{"worker max_claims negative", "broker: rabbitmq\nworkers: [{name: w, topic: t, max_claims: -1}]",
			[]string{"workers[0].max_claims: -1 is negative"}},
		{"max_retries negative", "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {max_retries: -1}}]",
			[]string{"workers[0].retry.max_retries: -1 is negative (unlimited retries must be explicit: set unlimited: true)"}},
		{"unlimited with max_retries", "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {max_retries: 3, unlimited: true}}]",
			[]string{"workers[0].retry.unlimited: true conflicts with max_retries: 3 (set one of them)"}},
		{"unlimited alone", "broker: kafka\nkafka: {brokers: [k:9092]}\nworkers: [{name: w, topic: t, retry: {unlimited: true}}]", nil},
		{"backoff negative step", "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: \"1s -> -5s\"}}]",
			[]string{`workers[0].retry.backoff: step 2: "-5s" is negative`}},
		{"backoff negative list item", "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: [1s, -5s]}}]",
			[]string{"workers[0].retry.backoff[1]: -5s is negative"}},
		{"exponential fields", "broker: kafka\nkafka: {brokers: [k:9092]}\nworkers: [{name: w, topic: t, retry: {backoff: {exponential: {initial: -1s, multiplier: 0.5, max: -1m, jitter: 1.5}}}}]",
			[]string{
				"workers[0].retry.backoff.exponential.initial: -1s is negative",
				"workers[0].retry.backoff.exponential.multiplier: 0.5 is not a finite number >= 1",
				"workers[0].retry.backoff.exponential.max: -1m is negative",
				"workers[0].retry.backoff.exponential.jitter: 1.5 is outside [0, 1]",
			}},
		{"exponential NaN and Inf", "broker: kafka\nkafka: {brokers: [k:9092]}\nworkers: [{name: w, topic: t, retry: {backoff: {exponential: {multiplier: .inf, jitter: .nan}}}}]",
			[]string{
				"workers[0].retry.backoff.exponential.multiplier: +Inf is not a finite number >= 1",
				"workers[0].retry.backoff.exponential.jitter: NaN is outside [0, 1]",
			}},
		{"non_retriable empty class", "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {non_retriable: [validation, \" \"]}}]",
			[]string{"workers[0].retry.non_retriable[1]: empty error class"}},
		{"max_elapsed", "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {max_elapsed: -1h}}]", []string{"workers[0].retry.max_elapsed: -1h is negative"}},
		{"retry mode", "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {mode: blockin}}]",
			[]string{`workers[0].retry.mode: "blockin" is not blocking, non_blocking or share`}},
		{"share standby", "broker: kafka\nkafka: {brokers: [k:9092], share: {standby: -1}}\nworkers: [{name: w, topic: t}]",
			[]string{"kafka.share.standby: -1 is not from 0 (none) to 1000"}},
		{"dlq severity", "broker: rabbitmq\nworkers: [{name: w, topic: t, dlq: {severity: high}}]",
			[]string{`workers[0].dlq.severity: "high" is not critical, warning or info`}},
		{"dlq retention", "broker: rabbitmq\nworkers: [{name: w, topic: t, dlq: {retention: -24h}}]", []string{"workers[0].dlq.retention: -24h is negative"}},

		// lag
		{"lag thresholds", "broker: rabbitmq\nlag:\n  thresholds:\n    a: {warning: -1, critical: -2}\n    b: {warning: 600, critical: 500}\n    c d: {warning: 1, critical: 1}",
			[]string{
				`lag.thresholds["a"].warning: -1 is negative`,
				`lag.thresholds["a"].critical: -2 is negative`,
				`lag.thresholds["b"].warning: 600 is above critical (500)`,
				`lag.thresholds["c d"]: "c d" is not a legal topic name`,
			}},

		// admin, exporter
		{"admin listen", "broker: rabbitmq\nadmin: {listen: \"127.0.0.1\"}", []string{`admin.listen: "127.0.0.1" is not host:port`}},
		{"admin token on a public address", "broker: rabbitmq\nadmin: {listen: \"0.0.0.0:8080\"}",
			[]string{"admin.token: required when admin.listen (0.0.0.0:8080) is not a loopback address: set admin.operators (or admin.proxy_auth, or the single admin.token)"}},
		{"admin token on all interfaces", "broker: rabbitmq\nadmin: {listen: \":8080\"}",
			[]string{"admin.token: required when admin.listen (:8080) is not a loopback address: set admin.operators (or admin.proxy_auth, or the single admin.token)"}},
		{"viewer token equal to the operator's", "broker: rabbitmq\nadmin: {token: same-token, viewer_token: same-token}",
			[]string{"admin.viewer_token: must differ from admin.token (a viewer would get the operator's rights)"}},
		{"viewer token without operator token", "broker: rabbitmq\nadmin: {viewer_token: viewer-token}",
			[]string{"admin.viewer_token: needs an operator (admin.token, admin.operators or admin.proxy_auth): without one the console runs without login"}},
		{"viewer token with a named operator", "broker: rabbitmq\nadmin: {viewer_token: viewer-token, operators: [{name: alice, role: operator, token_hash: \"" + hashA + "\"}]}", nil},
		{"viewer token with viewers only", "broker: rabbitmq\nadmin: {viewer_token: viewer-token, operators: [{name: vic, role: viewer, token_hash: \"" + hashA + "\"}]}",
			[]string{"admin.viewer_token: needs an operator (admin.token, admin.operators or admin.proxy_auth): without one the console runs without login"}},
		{"operators on a public address", "broker: rabbitmq\nadmin: {listen: \"0.0.0.0:8080\", operators: [{name: alice, role: operator, token_hash: \"" + hashA + "\"}, {name: \"Zoë Müller\", role: viewer, token_hash: \"" + hashB + "\"}]}", nil},
		{"proxy on a public address", "broker: rabbitmq\nadmin: {listen: \"0.0.0.0:8080\", proxy_auth: {proxies: [10.0.0.5, \"fd00::/64\"], user_header: X-Forwarded-Email, groups_header: X-Forwarded-Groups, role: none, operator_groups: [payments-oncall], viewer_groups: [staff]}}", nil},
		{"operators", "broker: rabbitmq\nadmin:\n  token: t0k3n-long\n  viewer_token: v1ewer-long\n  operators:\n" +
			"    - {name: admin, role: operator, token_hash: \"" + hashA + "\"}\n" +
			"    - {name: \"al\\x1bice\", role: root, token_hash: \"" + hashA[:20] + "\"}\n" +
			"    - {name: bob, role: viewer}\n" +
			"    - {name: bob, role: viewer, token_hash: \"" + hashA + "\"}\n" +
			"    - {name: carol, role: operator, token_hash: \"" + access.HashToken("t0k3n-long") + "\"}\n" +
			"    - {name: redrive-archiver, role: operator, token_hash: \"SHA256:" + hashB[7:] + "\"}\n" +
			"    - {name: \"dave (as eve)\", role: operator, token_hash: \"" + hashB + "\"}",
			[]string{
				`admin.operators[0].name: "admin" is admin.token's operator name too: each name is one holder's`,
				`admin.operators[1].name: "al\x1bice": not a name the audit log can record: holds the character U+001B (control, format or a space other than U+0020)`,
				`admin.operators[1].role: "root" is not operator or viewer`,
				`admin.operators[1].token_hash: not "sha256:" and 64 lower-case hex digits`,
				"admin.operators[2].token_hash: required: the token's hash, from `redrive admin hash-token`",
				`admin.operators[3].name: "bob" is admin.operators[2]'s name too: each name is one holder's`,
				`admin.operators[3].token_hash: the same token as admin.operators[0]: a token must name one holder`,
				`admin.operators[4].token_hash: the same token as admin.token: a token must name one holder`,
				`admin.operators[5].name: "redrive-archiver": not a name the audit log can record: "redrive-" names redrive's own actors`,
				`admin.operators[5].token_hash: "SHA256:` + hashB[7:16] + `" does not start with "sha256:" (make one with ` + "`redrive admin hash-token`" + `)`,
				`admin.operators[6].name: "dave (as eve)": not a name the audit log can record: holds a parenthesis`,
			}},
		{"proxy_auth", "broker: rabbitmq\nadmin:\n  proxy_auth:\n    proxies: [\"0.0.0.0/0\", not-an-ip]\n    user_header: Authorization\n    groups_header: \"X Groups\"\n    role: root\n    operator_groups: [\"a,b\", \" ops\"]",
			[]string{
				`admin.proxy_auth.proxies[0]: "0.0.0.0/0" is every address: anyone could name himself`,
				`admin.proxy_auth.proxies[1]: "not-an-ip" is not an IP address or a CIDR such as 10.0.0.0/8`,
				"admin.proxy_auth.user_header: Authorization carries something else: name the header the proxy sets the user in",
				`admin.proxy_auth.groups_header: "X Groups" is not a header name (letters, digits and -)`,
				`admin.proxy_auth.role: "root" is not viewer, operator or none`,
				`admin.proxy_auth.operator_groups[0]: "a,b" is not a group name (1 to 256 bytes, no comma, no white space at either end)`,
				`admin.proxy_auth.operator_groups[1]: " ops" is not a group name (1 to 256 bytes, no comma, no white space at either end)`,
			}},
		{"proxy_auth without proxies or groups header", "broker: rabbitmq\nadmin: {proxy_auth: {role: none, viewer_groups: [staff]}}",
			[]string{
				"admin.proxy_auth.proxies: required: the addresses the authenticating proxy connects from",
				"admin.proxy_auth.viewer_groups: needs admin.proxy_auth.groups_header (the header that lists a person's groups)",
			}},
		{"proxy_auth letting nobody in", "broker: rabbitmq\nadmin: {proxy_auth: {proxies: [127.0.0.1], role: none}}",
			[]string{"admin.proxy_auth.role: none with no operator_groups or viewer_groups lets nobody in"}},
		{"admin public with token", "broker: rabbitmq\nadmin: {listen: \"0.0.0.0:8080\", token: t0k3n-long}", nil},
		{"short tokens", "broker: rabbitmq\nadmin: {token: short, viewer_token: tiny}", []string{
			"admin.token: shorter than 8 characters: too easy to guess",
			"admin.viewer_token: shorter than 8 characters: too easy to guess"}},
		{"admin localhost", "broker: rabbitmq\nadmin: {listen: \"localhost:8080\"}", nil},
		{"admin IPv6 loopback", "broker: rabbitmq\nadmin: {listen: \"[::1]:8080\"}", nil},
		{"exporter listen", "broker: rabbitmq\nexporter: {listen: \"h:99999\"}", []string{`exporter.listen: "h:99999" is not host:port`}},

		// tracing, console
		{"tracing on with defaults", "broker: rabbitmq\ntracing: {enabled: true}", nil},
		{"tracing endpoint https", "broker: rabbitmq\ntracing: {enabled: true, endpoint: \"https://otel.example:4318/v1/traces\", sample_ratio: 0.25}", nil},
		{"tracing endpoint scheme", "broker: rabbitmq\ntracing: {enabled: true, endpoint: \"grpc://otel:4317\"}", []string{`tracing.endpoint: scheme "grpc" is not http or https`}},
		{"tracing endpoint without host", "broker: rabbitmq\ntracing: {endpoint: \"http:///v1/traces\"}", []string{`tracing.endpoint: "http:///v1/traces" has no host`}},
		{"tracing protocol", "broker: rabbitmq\ntracing: {enabled: true, protocol: grpc}", []string{`tracing.protocol: "grpc" is not http/protobuf (the OTLP exporter built in)`}},
		{"tracing sample ratio", "broker: rabbitmq\ntracing: {sample_ratio: 1.5}", []string{`tracing.sample_ratio: 1.5 is not in (0, 1]`}},

		// exactly_once
		{"exactly_once on with postgres.url", "broker: rabbitmq\npostgres: {url: \"postgres://h/app\"}\nexactly_once: {enabled: true, schema: app_effects}", nil},
		{"exactly_once on with its own url", "broker: rabbitmq\nexactly_once: {enabled: true, url: \"host=db dbname=app\", inbox_retention: 30d, relay_batch: 1000, poll_interval: 250ms}", nil},
		{"exactly_once on without a database", "broker: rabbitmq\nexactly_once: {enabled: true}",
			[]string{"exactly_once.url: required when exactly_once.enabled (or set postgres.url): the application's database holds the inbox and the outbox"}},
		{"exactly_once url scheme", "broker: rabbitmq\nexactly_once: {url: \"mysql://u:pw@h/app\"}", []string{`exactly_once.url: scheme "mysql" is not postgres or postgresql`}},
		{"exactly_once schema", "broker: rabbitmq\nexactly_once: {schema: \"App-Effects\"}", []string{`exactly_once.schema: "App-Effects" is not a lower-case identifier (a-z 0-9 _, at most 63, not starting with a digit)`}},
		{"exactly_once limits", "broker: rabbitmq\nexactly_once: {inbox_retention: 12h, stalled_after: 100ms, relay_batch: 20000, poll_interval: 1ms}", []string{
			"exactly_once.inbox_retention: 12h0m0s is shorter than 1d", "exactly_once.stalled_after: 100ms is shorter than 1s",
			"exactly_once.relay_batch: 20000 is not in 1..10000", "exactly_once.poll_interval: 1ms is shorter than 10ms"}},
		{"console trace link", "broker: rabbitmq\nconsole: {trace_link: \"https://tempo.example/trace/{trace_id}\"}", nil},
		{"console trace link without placeholder", "broker: rabbitmq\nconsole: {trace_link: \"https://tempo.example/trace/\"}", []string{`console.trace_link: "https://tempo.example/trace/" has no {trace_id}`}},
		{"console trace link scheme", "broker: rabbitmq\nconsole: {trace_link: \"javascript:alert('{trace_id}')\"}", []string{`console.trace_link: scheme "javascript" is not http or https`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse([]byte(tt.doc), noEnv)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected problems:\n%v", err)
				}
				if err := c.Validate(); err != nil {
					t.Fatalf("Validate after Parse: %v", err)
				}
				return
			}
			assertLines(t, err, tt.want...)
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error is not ErrInvalid")
			}
		})
	}
}

func TestValidateCollectsEverything(t *testing.T) {
	c := &Config{
		Broker: "rabit",
		Workers: []Worker{
			{Name: "w", Topic: "t", Retry: Retry{MaxRetries: ptr(-1)}},
			{Name: "w", Topic: "t", Retry: Retry{Mode: "eventually"}},
		},
		Lag: Lag{Thresholds: map[string]Threshold{"t": {Warning: 5, Critical: 1}}},
	}
	assertLines(t, c.Validate(),
		`broker: "rabit" is not kafka or rabbitmq`,
		"workers[0].retry.max_retries: -1 is negative (unlimited retries must be explicit: set unlimited: true)",
		`workers[1].name: "w" is already the name of workers[0]`,
		`workers[1].retry.mode: "eventually" is not blocking, non_blocking or share`,
		`lag.thresholds["t"].warning: 5 is above critical (1)`,
	)
	if c.RabbitMQ.URL != "" || c.Workers[0].QueueTTL != nil {
		t.Error("Validate changed the config (it must validate a copy with defaults)")
	}
}

func TestValidateHandBuiltConfig(t *testing.T) {
	c := &Config{Broker: "rabbitmq", Workers: []Worker{{Name: "w", Topic: "t"}}}
	if err := c.Validate(); err != nil {
		t.Fatalf("a config without defaults applied: %v", err)
	}
}

func TestParseSuppressesProblemsOfUndecodedFields(t *testing.T) {
	// broker could not be decoded: no second "broker: required" line.
	_, err := parse([]byte("broker: {name: rabbitmq}\nworkers: [{name: w, topic: t, concurrency: x}]"), noEnv)
	assertLines(t, err, "broker: expected a string, found a mapping", `workers[0].concurrency: "x" is not an integer`)
}

func ptr[T any](v T) *T { return &v }

func TestDelayTiers(t *testing.T) {
	tests := []struct {
		d     Delay
		tiers []time.Duration
		max   time.Duration
	}{
		{Delay{Resolution: Duration(time.Second), Factor: 4, Levels: 8},
			[]time.Duration{time.Second, 4 * time.Second, 16 * time.Second, 64 * time.Second, 256 * time.Second, 1024 * time.Second, 4096 * time.Second, 16384 * time.Second},
			65535 * time.Second},
		{Delay{Resolution: Duration(100 * time.Millisecond), Factor: 2, Levels: 3},
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}, 700 * time.Millisecond},
		{Delay{Resolution: Duration(time.Second), Factor: 1000, Levels: 20}, nil, 1<<63 - 1},
		{Delay{}, nil, 0},
	}
	for _, tt := range tests {
		if got := tt.d.MaxDelay(); got != tt.max {
			t.Errorf("%+v.MaxDelay() = %s, want %s", tt.d, got, tt.max)
		}
		if tt.tiers == nil {
			continue
		}
		got := tt.d.Tiers()
		if len(got) != len(tt.tiers) {
			t.Fatalf("%+v.Tiers() = %v, want %v", tt.d, got, tt.tiers)
		}
		for i := range got {
			if got[i] != tt.tiers[i] {
				t.Errorf("%+v.Tiers()[%d] = %s, want %s", tt.d, i, got[i], tt.tiers[i])
			}
		}
	}
}
