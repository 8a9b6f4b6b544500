// Package dlq owns dead letters: the [Entry] view of a dead-lettered message
// on either broker, the JSON envelope written to Kafka "<topic>.dlq" topics
// (see EncodeEnvelope and DecodeEnvelope), and, in later work, the keeper,
// the store, replay and discard with an audit log, and the admin HTTP API.
package dlq
