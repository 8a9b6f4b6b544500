// Package assembly turns a loaded configuration into the parts of a
// redrive process that depend on its backend: the backend opened through
// its driver.Descriptor (the configuration's `broker:` names any linked
// one), with its own Config built from its section of the file, its DLQ
// names and replay routes, the foreign DLQs it keeps, what measures its
// lag and what manages its topology.
//
// It is the one place that reads a backend's section of the
// configuration file, so that no backend imports the YAML layer
// (internal/assembly/config): it imports the built-in backends, RabbitMQ and
// Kafka, to map their sections (sections.go), which links both into every
// program that loads a configuration (worker.Load, the redrive command).
// A backend without a section (one registered by an application's own
// import) is opened with the backend-neutral driver.Settings alone.
package assembly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	_ "github.com/redrive/redrive/broker/mem" // links broker: memory into every program that loads a configuration
	"github.com/redrive/redrive/internal/assembly/config"
)

// ErrNotLinked is returned when the configured backend's package was not
// imported into the program (its descriptor is not registered).
var ErrNotLinked = errors.New("broker backend not linked in")

// Descriptor returns the descriptor of the backend c.Broker names;
// ErrNotLinked when it is not registered.
func Descriptor(c *config.Config) (driver.Descriptor, error) {
	d, ok := driver.Lookup(c.Broker)
	if !ok {
		return d, fmt.Errorf("%w: broker %q (linked: %s); import its package, e.g. _ \"github.com/redrive/redrive/broker/<backend>\"",
			ErrNotLinked, c.Broker, strings.Join(driver.Names(), ", "))
	}
	return d, nil
}

// Settings returns what the backend of c is opened with: the heartbeat
// instance, log (slog.Default when nil), and, for a backend with a
// section of its own, its Config mapped from that section (loading the
// TLS files it names).
func Settings(c *config.Config, log *slog.Logger) (driver.Settings, error) {
	if log == nil {
		log = slog.Default()
	}
	s := driver.Settings{Instance: c.Heartbeat.Instance, Logger: log}
	if sec, ok := sections[c.Broker]; ok {
		cfg, err := sec.config(c, log)
		if err != nil {
			return s, err
		}
		s.Config = cfg
	}
	return s, nil
}

// Open checks the names the backend of c will declare (Check) and
// connects it.
func Open(ctx context.Context, c *config.Config, log *slog.Logger) (broker.Broker, error) {
	d, err := Descriptor(c)
	if err != nil {
		return nil, err
	}
	if err := Check(c); err != nil {
		return nil, err
	}
	s, err := Settings(c, log)
	if err != nil {
		return nil, err
	}
	return d.Open(ctx, s)
}

// Check reports what the backend of c derives from a valid configuration
// that it could not declare (names over the broker's limits, a queue or
// topic two workers would share), without connecting: one error per
// problem, each a *config.FieldError naming the field to change (they
// match config.ErrInvalid), joined; nil when there is none or the backend
// checks nothing up front.
func Check(c *config.Config) error {
	sec, ok := sections[c.Broker]
	if !ok || sec.check == nil {
		return nil
	}
	var errs []error
	for _, p := range sec.check(c) {
		path := c.Broker
		switch {
		case p.Worker >= 0 && p.Field != "":
			path = fmt.Sprintf("workers[%d].%s", p.Worker, p.Field)
		case p.Worker >= 0:
			path = fmt.Sprintf("workers[%d]", p.Worker)
		case p.Field != "":
			path += "." + p.Field
		}
		errs = append(errs, &config.FieldError{Path: path, Msg: p.Msg})
	}
	return errors.Join(errs...)
}

// Router returns the router of the backend c names: its DLQ names and
// replay routes, without connecting.
func Router(c *config.Config) (driver.Router, error) {
	d, err := Descriptor(c)
	if err != nil {
		return nil, err
	}
	return d.Router, nil
}

// ForeignDLQ is another application's dead-letter queue or topic the
// keeper of c reads (the configuration's foreign_dlqs of the backend's
// section), with its policy and where its replays go.
type ForeignDLQ struct {
	// Name is the DLQ (queue or topic).
	Name string
	// Severity and Retention are its policy.
	Severity  broker.Severity
	Retention config.Retention
	// Route is where its replays go, as the operator configured.
	Route driver.Route
}

// ForeignDLQs returns the foreign DLQs of c, with their defaults: none
// but those of the configured backend's section.
func ForeignDLQs(c *config.Config) []ForeignDLQ {
	if sec, ok := sections[c.Broker]; ok && sec.foreign != nil {
		return sec.foreign(c)
	}
	return nil
}

// Address is where the configured broker is, secrets masked: for logs
// and errors; the backend's name for one without a section.
func Address(c *config.Config) string {
	if sec, ok := sections[c.Broker]; ok {
		return strings.Join(sec.address(c.Redacted()), ",")
	}
	return c.Broker
}

// Monitor opens what measures the lag of the backend of c for its
// workers; an error wrapping driver.ErrNoCapability when the backend
// measures none.
func Monitor(ctx context.Context, c *config.Config, log *slog.Logger) (driver.Monitor, error) {
	d, err := Descriptor(c)
	if err != nil {
		return nil, err
	}
	if d.Monitor == nil {
		return nil, fmt.Errorf("%w: broker %s measures no lag", driver.ErrNoCapability, c.Broker)
	}
	s, err := Settings(c, log)
	if err != nil {
		return nil, err
	}
	return d.Monitor(ctx, s, c.Subscriptions())
}

// Topology opens what manages the topology of the backend of c; an error
// wrapping driver.ErrNoCapability when the backend has none to manage.
func Topology(ctx context.Context, c *config.Config, log *slog.Logger) (driver.Topology, error) {
	d, err := Descriptor(c)
	if err != nil {
		return nil, err
	}
	if d.Topology == nil {
		return nil, fmt.Errorf("%w: broker %s has no topology to plan, apply or delete", driver.ErrNoCapability, c.Broker)
	}
	if err := Check(c); err != nil {
		return nil, err
	}
	s, err := Settings(c, log)
	if err != nil {
		return nil, err
	}
	return d.Topology(ctx, s)
}
