// Package e2e is redrive's end-to-end suite, written once and run unchanged
// against every backend: a backend's test file builds an [Env] and calls
// [Run]. Every scenario counts messages: what went in = what was handled +
// what is in a dead-letter queue, duplicates reported.
package e2e
