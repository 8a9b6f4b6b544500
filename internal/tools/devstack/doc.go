// Package devstack is the environment of `redrive dev`: an embedded Kafka
// cluster (kfake) or a local RabbitMQ, an embedded Redis-protocol server
// (miniredis) for heartbeats and claim counts, the configuration that
// points redrive at them, and sample workers with a sample producer that
// inject failures, so that retries, dead letters, heartbeats and lag show
// up within seconds.
//
// It is for a first look and for demos: everything lives in one process
// and in memory, and is gone when the process exits.
package devstack
