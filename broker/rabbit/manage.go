package rabbit

import (
	"context"
	"errors"
	"fmt"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// manager is the descriptor's Topology: Check, Apply, Unnamed and Remove
// over one Config, each connecting for the call.
type manager struct{ cfg Config }

// newManager is the descriptor's Topology.
func newManager(_ context.Context, s driver.Settings) (driver.Topology, error) {
	cfg, err := configOf(s)
	if err != nil {
		return nil, err
	}
	return manager{cfg: cfg}, nil
}

// Plan is Check's lines and Conflicts.
func (m manager) Plan(ctx context.Context, subs []broker.Subscription) ([]string, error, error) {
	checked, err := Check(ctx, m.cfg, subs...)
	if err != nil {
		return nil, nil, err
	}
	lines := make([]string, len(checked))
	for i, d := range checked {
		lines[i] = d.String()
	}
	return lines, Conflicts(checked), nil
}

// Unnamed is Unnamed's removals as lines: what the prefix's topology
// record holds that no configured worker needs.
func (m manager) Unnamed(ctx context.Context, subs []broker.Subscription) ([]string, error) {
	rs, err := Unnamed(ctx, m.cfg, subs...)
	if errors.Is(err, ErrBadRecord) {
		return []string{fmt.Sprintf("# %v: what the configuration no longer names is unknown; `redrive topology apply` writes a new record", err)}, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rs {
		if r.Action != ActionAbsent {
			out = append(out, fmt.Sprintf("unnamed  %s: applied before, no configured worker needs it (delete: redrive topology delete --unnamed)", r.Describe()))
		}
	}
	return out, nil
}

// Apply is Apply.
func (m manager) Apply(ctx context.Context, subs []broker.Subscription) error {
	return Apply(ctx, m.cfg, subs...)
}

// Remove is Remove's removals as lines. RabbitMQ deletes nothing by
// name: req.Names is refused.
func (m manager) Remove(ctx context.Context, req driver.RemoveRequest) ([]string, error) {
	if len(req.Names) > 0 {
		return nil, fmt.Errorf("%w: --topic names Kafka topics; the broker is %s", ErrInvalidConfig, Name)
	}
	rs, err := Remove(ctx, m.cfg, RemoveRequest{Remove: req.Remove, Keep: req.Keep, Unnamed: req.Unnamed, Force: req.Force, DryRun: req.DryRun})
	lines := make([]string, len(rs))
	for i, r := range rs {
		lines[i] = r.String()
	}
	return lines, err
}

// Close does nothing: each call connected and closed.
func (manager) Close() error { return nil }
