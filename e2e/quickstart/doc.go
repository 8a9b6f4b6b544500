// Package quickstart holds the walk through the README's Quick start: a
// test that extracts the section's code blocks (the worker program, the
// configurations, the shell commands) and runs them as written, on
// RabbitMQ and on Kafka (`redrive dev --no-samples`), from the worker's
// dead letter through `redrive serve`, the CLI's listing and the replay to
// the message handled. The README drifting from what works breaks it.
package quickstart
