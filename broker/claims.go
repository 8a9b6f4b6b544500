package broker

import "context"

// DefaultMaxClaims is the max_claims of a configured worker that does not
// set it.
const DefaultMaxClaims = 5

// ClaimCounter counts how many times a message was claimed: handed to a
// handler without being finished. A message whose handling kills the
// process (a panic in a goroutine the handler started, os.Exit, OOM,
// SIGKILL) is redelivered and claimed again; past Subscription.MaxClaims it
// is dead-lettered with ReasonMaxClaims instead of being handled. Keys are
// built by the backends (a group, then the message's address on the broker).
//
// Implementations must be safe for concurrent use. An error means the count
// is unknown: the backends then run the handler anyway (never stall), and
// the implementation reports its own outage.
type ClaimCounter interface {
	// Claim counts one more claim of key and returns the count so far,
	// this one included.
	Claim(ctx context.Context, key string) (int64, error)
	// Release forgets key: its message is done.
	Release(ctx context.Context, key string) error
}
