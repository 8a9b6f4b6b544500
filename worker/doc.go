// Package worker runs an application's handlers on whichever broker the
// configuration names: the application maps worker names to handlers, and
// the runtime subscribes each configured worker with its own retry policy,
// dead-letter settings and queue TTL, then stops cleanly on SIGINT or
// SIGTERM (draining in-flight messages, then closing).
//
// Backends register themselves when their package is imported:
//
//	import (
//		_ "github.com/redrive/redrive/broker/kafka"
//		_ "github.com/redrive/redrive/broker/rabbit"
//	)
//
// The same program then runs on RabbitMQ or Kafka by changing the
// `broker:` line of its YAML.
//
// The runtime is configured by a Config (Load, Parse, New); its zero value
// is the default. With Config.HeartbeatRedis each worker beats in Redis
// under the process's identity (heartbeat.instance, Config.Instance;
// hostname-pid otherwise),
// reporting its consumer lag as the broker measures it (Kafka: records
// behind the high watermark on the partitions it owns; RabbitMQ: messages
// ready in its group queue). Config.Health (or health.listen) serves /livez
// and /readyz for Kubernetes-style probes; /readyz answers 503 from the
// start of a graceful shutdown.
package worker
