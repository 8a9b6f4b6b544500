// Command peers runs one measurement of a library a redrive user might pick
// instead of redrive, for `redrive bench --peers`: watermill-amqp (v3) on
// RabbitMQ, watermill-kafka (v3, on Sarama) and segmentio/kafka-go on
// Kafka, doing the work of one bench scenario against the broker the bench
// started and set up. It is a module of its own so that redrive's module
// never requires these libraries; the bench builds it with the go command
// and runs it once per measurement.
//
// # Protocol
//
// The bench writes one JSON Request on a line to the peer's standard
// input. The bench has declared what the request names (exchange, queues
// and bindings on RabbitMQ; topics on Kafka) and, for the consume-side
// scenarios, pre-filled the queue or topic with Messages messages whose
// header "bench-seq" numbers them from 0. The peer answers with JSON Event
// lines on its standard output:
//
//	{"event":"start"}                     the measured interval begins now
//	{"event":"result","messages":...}     it ended: the peer's own figures
//	{"event":"error","error":"..."}       it failed; the exit status is 1
//
// The figures of a result are the peer process's own over the measured
// interval: wall time, user+system CPU time (getrusage) and heap
// allocations (runtime.MemStats.Mallocs). The bench adds its own process's
// CPU and allocations over the same interval (an in-process kfake serves
// the Kafka peers). Logs go to standard error.
//
// Scenarios, as the bench's own rows: publish (Messages in batches of
// Batch, each batch awaited), consume (drain, no-op handler, ack/commit),
// retry (every 10th message fails once), dlq (every 100th message fails for
// good and goes to PoisonTopic). kafka-go has no retry or dead-letter
// facility and runs publish and consume only.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Stdin, os.Stdout, os.Stderr))
}
