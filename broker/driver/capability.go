package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/redrive/redrive/broker"
)

// The capabilities a backend may offer beyond broker.Broker, each a small
// interface. An opened Broker is checked for those of a running consumer
// (Pauser, Prober, Source, BatchSource, Republisher, Instancer) where they are
// used, once; those that need no consumer are reached through the
// Descriptor (Monitor, Topology, DevServer).

// Pauser stops and resumes this process's consumers of one subscription
// without ending Consume: the worker runtime pauses a worker while an
// operator holds it or its kill switch is open, so that nothing is
// delivered to a handler that would only hand it back. A backend keeps
// one Hold per subscription (Holds) and watches it.
type Pauser interface {
	// PauseConsume makes this process's consumers of topic/group stop
	// taking deliveries.
	PauseConsume(topic, group string)
	// ResumeConsume undoes PauseConsume.
	ResumeConsume(topic, group string)
}

// Prober tells about this process's Consume calls: the worker runtime's
// /readyz asks whether each worker consumes, and its heartbeats carry the
// messages waiting for it.
type Prober interface {
	// ConsumerLag returns the messages waiting for topic/group's
	// consumers.
	ConsumerLag(ctx context.Context, topic, group string) (int64, error)
	// ConsumerReady returns nil when topic/group's consumers consume now,
	// else why not (wrapping ErrNotConsuming when no Consume of theirs
	// runs in this process).
	ConsumerReady(ctx context.Context, topic, group string) error
}

// ErrNotConsuming is wrapped by Prober.ConsumerReady for a topic and
// group no Consume call of this process consumes.
var ErrNotConsuming = errors.New("not consuming")

// Instancer reports the identity a backend writes into the dead letters
// of this process (Settings.Instance, or DefaultInstance).
type Instancer interface {
	InstanceID() string
}

// Topology manages what a backend declares for the configured workers:
// `redrive topology plan`, `apply` and `delete`. Its lines are for
// people (one declaration or object each; names from the server and from
// a record anyone may write are the caller's to escape).
type Topology interface {
	// Plan compares what Apply would declare for subs with what exists:
	// one line per declaration, and the conflicts that would make Apply
	// fail (nil when there are none). An error wrapping
	// ErrInvalidConfig is the configuration's fault.
	Plan(ctx context.Context, subs []broker.Subscription) (lines []string, conflicts error, err error)
	// Unnamed lists what exists that no subscription of subs needs
	// (declared for workers no longer configured), one line each, with
	// how to delete it.
	Unnamed(ctx context.Context, subs []broker.Subscription) ([]string, error)
	// Apply declares, idempotently, what subs need, reporting every
	// clash with what exists.
	Apply(ctx context.Context, subs []broker.Subscription) error
	// Remove deletes (or, with DryRun, looks up) what req names, one
	// line per object. Objects in which messages wait or that something
	// consumes are refused unless Force: the error then wraps
	// ErrRemoveRefused, and the lines say which. Each deletion is logged
	// with the Settings' Logger.
	Remove(ctx context.Context, req RemoveRequest) ([]string, error)
	// Close releases the connection, if any.
	Close() error
}

// RemoveRequest is what Topology.Remove deletes.
type RemoveRequest struct {
	// Remove are the subscriptions whose objects go; Keep those that
	// stay (objects shared with them are kept).
	Remove, Keep []broker.Subscription
	// Names are further objects to delete by name (Kafka: topics,
	// RabbitMQ: none); a backend that takes none refuses them with
	// ErrInvalidConfig.
	Names []string
	// Unnamed also deletes what Unnamed lists (RabbitMQ: what its
	// topology record holds that no configured worker needs).
	Unnamed bool
	// Force deletes what would be refused, with its messages.
	Force bool
	// DryRun looks everything up and deletes nothing.
	DryRun bool
}

// ErrRemoveRefused is wrapped by Topology.Remove when it refused to
// delete something (messages wait in it, or something consumes it).
var ErrRemoveRefused = errors.New("removal refused")

// DevServer is a server of a backend running inside the process, for
// `redrive dev` (Kafka: an in-memory cluster); the dev stack points its
// configuration at Addrs.
type DevServer interface {
	// Addrs are the addresses clients connect to.
	Addrs() []string
	// Close stops the server; its data is gone.
	Close()
}

// DevServerConfig configures a DevServer.
type DevServerConfig struct {
	// Port is the port of the first listener, the others following it;
	// 0 (the default) = random free ports. It listens on 127.0.0.1.
	Port int
}

// Validate reports a port that is not one.
func (c DevServerConfig) Validate() error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("%w: DevServerConfig.Port: %d is not a port", ErrInvalidConfig, c.Port)
	}
	return nil
}
