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
package worker
