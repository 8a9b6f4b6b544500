package config

import (
	"math"
	"slices"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/retrypolicy"
	"github.com/redrive/redrive/worker/killswitch"
)

// Policy returns the worker's retry policy, defaults applied.
func (w Worker) Policy() retrypolicy.Policy {
	r := w.WithDefaults().Retry
	p := retrypolicy.Policy{
		Unlimited:    r.Unlimited,
		Backoff:      r.Backoff.Build(*r.RepeatLast),
		NonRetriable: slices.Clone(r.NonRetriable),
		MaxElapsed:   time.Duration(r.MaxElapsed),
	}
	if r.MaxRetries != nil {
		p.MaxRetries = *r.MaxRetries
	}
	return p
}

// Subscription returns the broker subscription of the worker, defaults
// applied: group = name, the retry policy and mode, concurrency, prefetch,
// max age = queue_ttl, max claims (unset: broker.DefaultMaxClaims marked
// MaxClaimsDefault, off where nothing counts claims), and the DLQ severity
// and retention ("forever" is broker.Forever).
func (w Worker) Subscription() broker.Subscription {
	w = w.WithDefaults()
	maxClaims := broker.DefaultMaxClaims
	if w.MaxClaims != nil {
		maxClaims = *w.MaxClaims
	}
	return broker.Subscription{
		Topic:            w.Topic,
		Group:            w.Name,
		Policy:           w.Policy(),
		RetryMode:        broker.RetryMode(w.Retry.Mode),
		Concurrency:      w.Concurrency,
		Prefetch:         w.Prefetch,
		MaxAge:           time.Duration(*w.QueueTTL),
		MaxClaims:        maxClaims,
		MaxClaimsDefault: w.MaxClaims == nil,
		DLQ: broker.DLQOptions{
			Severity:  w.DLQ.Severity,
			Retention: w.DLQ.Retention.Value(),
		},
	}
}

// Config returns the kill switch's configuration for the worker runtime
// (package worker/killswitch), whose defaults fill unset fields.
func (k KillSwitch) Config() killswitch.Config {
	return killswitch.Config{
		Enabled:         k.Enabled,
		Activation:      k.Activation,
		TripRatio:       k.TripRatio,
		Window:          time.Duration(k.Window),
		RestartAfter:    time.Duration(k.RestartAfter),
		MaxRestartAfter: time.Duration(k.MaxRestartAfter),
	}
}

// KillSwitches returns the kill switch configuration of every worker that
// enables one, by worker name.
func (c *Config) KillSwitches() map[string]killswitch.Config {
	out := map[string]killswitch.Config{}
	for _, w := range c.Workers {
		if w.KillSwitch.Enabled {
			out[w.Name] = w.KillSwitch.Config()
		}
	}
	return out
}

// Subscriptions returns the subscription of every worker, in order: what
// the topology declares, foreign workers' included.
func (c *Config) Subscriptions() []broker.Subscription {
	subs := make([]broker.Subscription, len(c.Workers))
	for i, w := range c.Workers {
		subs[i] = w.Subscription()
	}
	return subs
}

// RunSubscriptions returns the subscriptions a worker program runs, in
// order: every worker's but those declared foreign (another program
// consumes for them).
func (c *Config) RunSubscriptions() []broker.Subscription {
	subs := make([]broker.Subscription, 0, len(c.Workers))
	for _, w := range c.Workers {
		if !w.Foreign {
			subs = append(subs, w.Subscription())
		}
	}
	return subs
}

// Tiers returns the delay tiers, resolution × factor^k for
// k = 0..levels-1; nil when d is invalid (defaults not applied).
func (d Delay) Tiers() []time.Duration {
	if !d.valid() {
		return nil
	}
	tiers := make([]time.Duration, 0, d.Levels)
	t := time.Duration(d.Resolution)
	for range d.Levels {
		tiers = append(tiers, t)
		next, ok := mulDuration(t, int64(d.Factor))
		if !ok {
			break
		}
		t = next
	}
	return tiers
}

// MaxDelay returns the longest delay the tiers express with at most
// factor-1 passes per tier: resolution × (factor^levels − 1), saturating at
// the largest time.Duration; 0 when d is invalid (defaults not applied).
func (d Delay) MaxDelay() time.Duration {
	if !d.valid() {
		return 0
	}
	pow := int64(1)
	for range d.Levels {
		next, ok := mulInt(pow, int64(d.Factor))
		if !ok {
			return math.MaxInt64
		}
		pow = next
	}
	m, ok := mulDuration(time.Duration(d.Resolution), pow-1)
	if !ok {
		return math.MaxInt64
	}
	return m
}

// valid reports whether the tier parameters are usable.
func (d Delay) valid() bool { return d.Resolution > 0 && d.Factor >= 2 && d.Levels >= 1 }

// largestTier returns resolution × factor^(levels-1), saturating.
func (d Delay) largestTier() time.Duration {
	t := time.Duration(d.Resolution)
	for range d.Levels - 1 {
		next, ok := mulDuration(t, int64(d.Factor))
		if !ok {
			return math.MaxInt64
		}
		t = next
	}
	return t
}

// mulInt returns a × b for non-negative operands and false on overflow.
func mulInt(a, b int64) (int64, bool) {
	if a != 0 && b > math.MaxInt64/a {
		return 0, false
	}
	return a * b, true
}

// mulDuration returns d × n for non-negative operands and false on
// overflow.
func mulDuration(d time.Duration, n int64) (time.Duration, bool) {
	m, ok := mulInt(int64(d), n)
	return time.Duration(m), ok
}
