package driver

import (
	"context"
	"fmt"
	"strings"
)

// ClaimKey is the counter key of a message of group identified by parts
// (RabbitMQ: message id and attempt; Kafka: topic, partition and offset).
func ClaimKey(group string, parts ...string) string {
	return "redrive:claims:" + group + ":" + strings.Join(parts, ":")
}

// Counts reports whether the subscription's claim counter counts claims
// (a counter and max claims are set): only then does a backend build an
// Input.ClaimKey.
func (p *Pipeline) Counts() bool { return p.sub.Claims != nil && p.sub.MaxClaims > 0 }

// WarnUncountedClaims logs, once per Consume, that the subscription chose
// MaxClaims (it is not a default) but its claims cannot be counted: no
// Claims, and no count of the broker's own (native: a RabbitMQ quorum
// queue's x-delivery-count). Poison-pill protection is then off.
func (p *Pipeline) WarnUncountedClaims(native bool) {
	s := &p.sub
	if s.MaxClaims > 0 && s.Claims == nil && !native && !s.MaxClaimsDefault {
		p.log.Warn("max_claims is set but there is no claim counter (worker.Config.ClaimsRedis) and the broker does not count deliveries: poison-pill protection is off",
			"max_claims", s.MaxClaims)
	}
}

// claim counts this claim of a delivery and reports the count and whether
// it is over MaxClaims. A counter error counts as not over (the handler
// runs; the counter reports its own outage).
func (p *Pipeline) claim(ctx context.Context, dec *Decision, in Input) (int64, bool) {
	s := &p.sub
	if s.MaxClaims <= 0 {
		return 0, false
	}
	if in.ClaimKey != "" && s.Claims != nil {
		dec.claim = in.ClaimKey
		n, err := s.Claims.Claim(ctx, in.ClaimKey)
		if err != nil {
			return 0, false
		}
		return n, n > int64(s.MaxClaims)
	}
	if in.NativeClaims > 0 {
		return in.NativeClaims, in.NativeClaims > int64(s.MaxClaims)
	}
	return 0, false
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
