package broker

import (
	"context"
	"fmt"
	"strings"
)

// DefaultMaxClaims is the max_claims of a configured worker that does not
// set it.
const DefaultMaxClaims = 5

// ClaimCounter counts how many times a message was claimed: handed to a
// handler without being finished. A message whose handling kills the
// process (a panic in a goroutine the handler started, os.Exit, OOM,
// SIGKILL) is redelivered and claimed again; past Subscription.MaxClaims it
// is dead-lettered with ReasonMaxClaims instead of being handled.
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

// ClaimKey is the counter key of a message of group identified by parts
// (RabbitMQ: message id and attempt; Kafka: topic, partition and offset).
func ClaimKey(group string, parts ...string) string {
	return "redrive:claims:" + group + ":" + strings.Join(parts, ":")
}

// UncountedMaxClaims reports whether s chose MaxClaims (it is not a
// default) but its claims cannot be counted: no Claims, and no count of
// the broker's own (native: a RabbitMQ quorum queue's x-delivery-count).
// Poison-pill protection is then off; the backends warn once at start.
func (s Subscription) UncountedMaxClaims(native bool) bool {
	return s.MaxClaims > 0 && s.Claims == nil && !native && !s.MaxClaimsDefault
}

// Claim counts a claim of key when sub has a claim counter and max claims,
// and reports whether the message is over the limit: it must then be
// dead-lettered with MaxClaimsOutcome without calling the handler. A
// counter error is treated as not over.
func (s Subscription) Claim(ctx context.Context, key string) (n int64, over bool) {
	if s.Claims == nil || s.MaxClaims <= 0 {
		return 0, false
	}
	n, err := s.Claims.Claim(ctx, key)
	if err != nil {
		return 0, false
	}
	return n, n > int64(s.MaxClaims)
}

// Release forgets key when sub counts claims. Errors are ignored: the key
// expires on its own.
func (s Subscription) Release(ctx context.Context, key string) {
	if s.Claims == nil || s.MaxClaims <= 0 {
		return
	}
	_ = s.Claims.Release(ctx, key)
}

// MaxClaimsOutcome is the dead-letter outcome of a message claimed n times
// when max were allowed.
func MaxClaimsOutcome(n int64, max int) Outcome {
	return Outcome{
		Reason: ReasonMaxClaims,
		Class:  ClassMaxClaims,
		Error: fmt.Sprintf("message claimed %d times without its handler finishing (max_claims %d): "+
			"the handler likely kills the process", n, max),
	}
}
