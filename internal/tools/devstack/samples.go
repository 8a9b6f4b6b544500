package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redrive/redrive/broker"
)

// Fate is what the sample handlers do with a sample message.
type Fate string

// Fates of sample messages.
const (
	FateOK        Fate = "ok"        // handled at once
	FateFlaky     Fate = "flaky"     // fails on its first attempt, then succeeds: a retry
	FateExhaust   Fate = "exhaust"   // fails every attempt: dead-lettered with reason max_retries
	FatePermanent Fate = "permanent" // fails with a permanent error: dead-lettered at once
	FatePanic     Fate = "panic"     // the handler panics on its first attempt, then succeeds
)

// Sample is the JSON payload of the sample producer's messages.
type Sample struct {
	N       int64     `json:"n"`
	Kind    string    `json:"kind"`
	Account string    `json:"account"`
	Amount  int       `json:"amount_cents,omitempty"`
	Fate    Fate      `json:"fate"`
	Created time.Time `json:"created_at"`
}

// Sample workers and the topics they consume (the seed's table).
var sampleTopics = []struct{ topic, kind string }{
	{"escrow.commands", "payout"},
	{"deal.deadlines", "deal_timeout"},
	{"reconciliation.triggers", "reconciliation"},
}

// pickFate draws a fate: mostly fine, with enough failures to watch.
func pickFate(r *rand.Rand) Fate {
	switch p := r.IntN(100); {
	case p < 8:
		return FateFlaky
	case p < 11:
		return FateExhaust
	case p < 14:
		return FatePermanent
	case p < 15:
		return FatePanic
	}
	return FateOK
}

// Producer publishes sample messages to the sample workers' topics.
type Producer struct {
	b           broker.Broker
	topicPrefix string
	rate        float64
	log         *slog.Logger
	n           atomic.Int64
}

// NewProducer returns a producer of rate messages per second on b, to the
// sample topics of s.
func (s *Stack) NewProducer(b broker.Broker, rate float64, log *slog.Logger) *Producer {
	if rate <= 0 {
		rate = 5
	}
	return &Producer{b: b, topicPrefix: s.topicPrefix(), rate: rate, log: log}
}

// Published returns how many messages the producer published.
func (p *Producer) Published() int64 { return p.n.Load() }

// Run publishes until ctx ends. A failed publish is logged and the next
// one tried; it returns nil when ctx ends.
func (p *Producer) Run(ctx context.Context) error {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	t := time.NewTicker(time.Duration(float64(time.Second) / p.rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		n := p.n.Load() + 1
		tp := sampleTopics[int(n)%len(sampleTopics)]
		s := Sample{N: n, Kind: tp.kind, Account: fmt.Sprintf("acct-%03d", r.IntN(50)), Fate: pickFate(r), Created: time.Now().UTC()}
		if tp.kind == "payout" {
			s.Amount = 100 + r.IntN(100_000)
		}
		body, _ := json.Marshal(s)
		msg := broker.Message{Key: []byte(s.Account), Value: body, Headers: map[string]string{"content-type": "application/json"}}
		topic := p.topicPrefix + tp.topic
		if err := p.b.Publish(ctx, topic, msg); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			p.log.Warn("dev: sample publish failed", "topic", topic, "err", err)
			continue
		}
		p.n.Store(n)
	}
}

// Handler is the sample workers' handler: it does 10–50 ms of "work" and
// then what the message's fate says. Its dead letters fall into failure
// groups (dlq.Fingerprint): exhausted retries and closed accounts in every
// DLQ, and over-limit amounts among the payouts.
func Handler(ctx context.Context, d *broker.Delivery) error {
	var s Sample
	if err := json.Unmarshal(d.Value, &s); err != nil {
		return broker.Permanent(fmt.Errorf("payload is not a sample: %w", err))
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(10+rand.IntN(40)) * time.Millisecond):
	}
	switch s.Fate {
	case FateFlaky:
		if d.Attempt == 1 {
			return fmt.Errorf("%s %d: upstream timed out after 3s (simulated)", s.Kind, s.N)
		}
	case FateExhaust:
		return fmt.Errorf("%s %d: ledger service unavailable (simulated)", s.Kind, s.N)
	case FatePermanent:
		if s.Kind == "payout" && s.N%2 == 0 {
			// A third failure group of the payouts' DLQ (the console and
			// `redrive dlq groups` show the dead letters by cause).
			return broker.Permanent(fmt.Errorf("%s %d: amount %d.%02d exceeds the limit of account '%s' (simulated)", s.Kind, s.N, s.Amount/100, s.Amount%100, s.Account))
		}
		return broker.Permanent(fmt.Errorf("%s %d: account %s is closed (simulated)", s.Kind, s.N, s.Account))
	case FatePanic:
		if d.Attempt == 1 {
			panic(fmt.Sprintf("%s %d: index out of range [3] with length 3 (simulated bug)", s.Kind, s.N))
		}
	case FateOK:
	default:
		return broker.Permanent(errors.New("unknown fate " + string(s.Fate)))
	}
	return nil
}
