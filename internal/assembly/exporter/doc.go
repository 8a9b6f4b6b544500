// Package exporter serves what redrive knows about its deployment over
// HTTP: Prometheus metrics, a health report and a readiness probe.
//
//	GET /metrics  Prometheus text format, from a private prometheus.Registry
//	GET /healthz  JSON health report: 200 when UP or DEGRADED, 503 when DOWN
//	GET /readyz   200 once every source was sampled and the broker is reachable, else 503
//
// # Bounded work per request
//
// Nothing is measured when a request arrives. Samplers run in the
// background and keep their last sample: a [lag.Sampler] (consumer lag on
// Kafka, queue depth on RabbitMQ; it is also how the exporter knows whether
// the broker is reachable), a [heartbeat.Sampler] (worker heartbeats in
// Redis) and a [DLQSampler] (dead letters pending per DLQ, one grouped
// count per interval). A scrape or a health request reads those caches.
//
// The lag sampler's series (one per consumer group and partition: 100,000
// for 100 groups on 1,000 partitions) are not on the registry: /metrics
// merges the registry's families, encoded per scrape, with the lag page,
// which the sampler encodes once per sample and format. The page is byte
// for byte what promhttp serves over prometheus.Gatherers{registry,
// sampler} ([Server.Gatherer]); only its compression is per scrape (gzip
// level 2 rather than promhttp's 6: a quarter of the CPU for a 9 % larger
// response). The lag series change when a sample is taken and only then.
//
// # The health report
//
// In the spirit of Spring Boot's actuator:
//
//	{
//	  "status": "DEGRADED",
//	  "checked_at": "2025-01-15T10:30:00Z",
//	  "reasons": ["dlq orders.billing.dlq: 3 pending"],
//	  "components": {
//	    "broker":  {"status": "UP", "broker": "rabbitmq", "sampled_at": "…"},
//	    "lag":     {"status": "UP", "groups": [{"group": "billing", "topic": "orders", "lag": 0, …}], "queues": […]},
//	    "workers": [{"type": "billing", "instance": "host-4242", "status": "RUNNING", "severity": "OK", …}],
//	    "dlq":     {"orders.billing.dlq": 3}
//	  }
//	}
//
// The status is decided by [Evaluate]:
//
//   - DOWN (HTTP 503) when the broker cannot be reached (the last lag
//     sample failed).
//   - DEGRADED (HTTP 200) when anything needs an operator: a DLQ with
//     pending entries; a worker whose heartbeat severity is WARNING,
//     CRITICAL or UNKNOWN (Redis unreadable); a consumer group whose lag is
//     above its topic's warning or critical threshold, or whose status is
//     STOP, STALL or WARN (see package lag; on RabbitMQ a group queue with
//     messages ready and no consumer reads STOP); a group queue that does
//     not exist; messages parked in the RabbitMQ unroutable queue; a source
//     that could not be read or was not sampled yet. Each cause is one line
//     of "reasons".
//   - UP otherwise.
//
// A component that is not configured (no Redis monitor, no DLQ store) is
// left out of the report.
package exporter
