// Package retrypolicy decides when a failed message is tried again and when it
// is given up on. It is pure: no I/O, no clocks, no goroutines.
//
// A [Policy] pairs a [Backoff] (an explicit [Schedule] such as
// "1s -> 5s -> 30s -> 5m -> 30m", or an [Exponential] back-off with cap and
// jitter) with a maximum number of retries and the error classes that are
// never retried.
package retrypolicy
