package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
)

// rabbitConfig is the stack's RabbitMQ configuration.
func (s *Stack) rabbitConfig() (rabbit.Config, error) {
	return assembly.RabbitConfig(s.Config, slog.New(slog.DiscardHandler))
}

// Leftovers is what an earlier stack of the same prefix left on RabbitMQ.
type Leftovers struct {
	// Queues holding messages, with their counts.
	Queues []rabbit.Checked
	// Messages is their sum.
	Messages int
}

// CheckRabbitMQ compares the stack's topology with what exists on
// RabbitMQ before it is declared. Another stack of the same prefix
// consuming its group queues is an error (two would share, then delete,
// one topology); a clash with an existing queue is an error listing every
// one; queues an earlier run kept (--keep) or left behind (a crash) are
// returned, with their messages. It does nothing on Kafka.
func (s *Stack) CheckRabbitMQ(ctx context.Context) (Leftovers, error) {
	var left Leftovers
	if s.cfg.Broker != rabbit.Name {
		return left, nil
	}
	cfg, err := s.rabbitConfig()
	if err != nil {
		return left, err
	}
	checked, err := rabbit.Check(ctx, cfg, s.Config.Subscriptions()...)
	if err != nil {
		return left, fmt.Errorf("devstack: compare with RabbitMQ at %s: %w", rabbit.MaskURL(cfg.URL), err)
	}
	for _, c := range checked {
		if c.Kind != "queue" || c.Presence != rabbit.Present {
			continue
		}
		if c.Consumers > 0 {
			return left, fmt.Errorf("devstack: another redrive dev is running with prefix %q (queue %s has %d consumers): stop it, or give this one another prefix (--prefix)",
				s.cfg.Prefix, c.Name, c.Consumers)
		}
		if c.Messages > 0 {
			left.Queues = append(left.Queues, c)
			left.Messages += c.Messages
		}
	}
	if err := rabbit.Conflicts(checked); err != nil {
		return left, fmt.Errorf("devstack: RabbitMQ holds queues of prefix %q with other settings: %w", s.cfg.Prefix, err)
	}
	return left, nil
}

// String lists the leftover queues and their messages on one line.
func (l Leftovers) String() string {
	parts := make([]string, len(l.Queues))
	for i, q := range l.Queues {
		parts[i] = fmt.Sprintf("%s (%d)", q.Name, q.Messages)
	}
	return strings.Join(parts, ", ")
}

// Teardown deletes every exchange and queue the stack declared on
// RabbitMQ, with the messages they hold, and says what it deleted; with
// keep it deletes nothing and says exactly what stays. It does nothing on
// Kafka, whose embedded cluster Close discards.
func (s *Stack) Teardown(ctx context.Context, keep bool) (string, error) {
	if s.cfg.Broker != rabbit.Name {
		return "", nil
	}
	cfg, err := s.rabbitConfig()
	if err != nil {
		return "", err
	}
	subs := s.Config.Subscriptions()
	if keep {
		checked, err := rabbit.Check(ctx, cfg, subs...)
		if err != nil {
			return "", fmt.Errorf("devstack: list what is kept on RabbitMQ: %w", err)
		}
		var queues, exchanges []string
		messages := 0
		for _, c := range checked {
			switch {
			case c.Presence != rabbit.Present:
			case c.Kind == "queue":
				queues = append(queues, fmt.Sprintf("%s (%d)", c.Name, c.Messages))
				messages += c.Messages
			case c.Kind == "exchange":
				exchanges = append(exchanges, c.Name)
			}
		}
		return fmt.Sprintf("kept on RabbitMQ (--keep): %d queues holding %d messages: %s; %d exchanges: %s. "+
			"The next run with prefix %s takes them over; a run without --keep deletes them at its end.",
			len(queues), messages, strings.Join(queues, ", "), len(exchanges), strings.Join(exchanges, ", "), s.cfg.Prefix), nil
	}
	removed, err := rabbit.Teardown(ctx, cfg, subs...)
	if err != nil {
		return "", fmt.Errorf("devstack: delete what it declared on RabbitMQ: %w", err)
	}
	queues, exchanges, messages := 0, 0, 0
	for _, r := range removed {
		if r.Kind == "queue" {
			queues++
			messages += r.Messages
		} else {
			exchanges++
		}
	}
	return fmt.Sprintf("deleted from RabbitMQ what it declared: %d queues (holding %d messages) and %d exchanges, all named %s.*; run with --keep to keep them.",
		queues, messages, exchanges, s.cfg.Prefix), nil
}
