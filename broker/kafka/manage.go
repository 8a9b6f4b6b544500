package kafka

import (
	"context"
	"fmt"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// manager is the descriptor's Topology: Plan, Declare, Strays and Remove
// of one connected Broker.
type manager struct{ b *Broker }

// newManager is the descriptor's Topology: it connects.
func newManager(ctx context.Context, s driver.Settings) (driver.Topology, error) {
	cfg, err := configOf(s)
	if err != nil {
		return nil, err
	}
	b, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return manager{b: b}, nil
}

// Plan is Plan's lines; Kafka has no conflicts (a topic is updated).
func (m manager) Plan(ctx context.Context, subs []broker.Subscription) ([]string, error, error) {
	plans, err := m.b.Plan(ctx, subs...)
	if err != nil {
		return nil, nil, err
	}
	lines := make([]string, len(plans))
	for i, p := range plans {
		lines[i] = p.String()
	}
	return lines, nil, nil
}

// Unnamed is Strays as lines: the topics shaped like redrive's that no
// configured worker needs.
func (m manager) Unnamed(ctx context.Context, subs []broker.Subscription) ([]string, error) {
	strays, err := m.b.Strays(ctx, subs...)
	var out []string
	for _, s := range strays {
		out = append(out, fmt.Sprintf("unnamed  topic %s: exists, no configured worker needs it (delete: redrive topology delete --topic %s)", s, s))
	}
	return out, err
}

// Apply is Declare.
func (m manager) Apply(ctx context.Context, subs []broker.Subscription) error {
	return m.b.Declare(ctx, subs...)
}

// Remove is Remove's removals as lines, each deletion logged. Kafka has
// no topology record: req.Unnamed is refused (name the topics instead).
func (m manager) Remove(ctx context.Context, req driver.RemoveRequest) ([]string, error) {
	if req.Unnamed {
		return nil, fmt.Errorf("%w: --unnamed is RabbitMQ's (its topology record); on %s name each topic `redrive topology plan` lists with --topic", ErrInvalidConfig, Name)
	}
	rs, err := m.b.Remove(ctx, RemoveRequest{Remove: req.Remove, Keep: req.Keep, Topics: req.Names, Force: req.Force, DryRun: req.DryRun})
	lines := make([]string, len(rs))
	for i, r := range rs {
		lines[i] = r.String()
		if r.Action == "deleted" {
			m.b.cfg.Logger.Info("topology delete", "topic", r.Topic, "role", r.Role, "waiting", r.Waiting, "forced", req.Force)
		}
	}
	return lines, err
}

// Close closes the Broker.
func (m manager) Close() error { return m.b.Close() }
