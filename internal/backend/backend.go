// Package backend is the registry that turns a loaded configuration into a
// running broker.Broker for whichever backend its `broker:` key names. Each
// backend package registers itself from init (database/sql style), so a
// program links only the backends it imports and no import cycle arises.
//
// It is also the one way from the YAML configuration to a backend's own
// types, so that the public backends never take internal/config types:
// ConfigOf maps a configuration to a backend's Config (rabbit.Config,
// kafka.Config), DelayQueues lists the queues delayed messages wait in, and
// RouterOf gives the backend's dlq.Router (its DLQ names and replay
// routes), all without connecting.
package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/config"
)

// ErrNotLinked is returned by Open when the configured backend's package
// was not imported into the program.
var ErrNotLinked = errors.New("broker backend not linked in")

// Opener connects a backend described by cfg.
type Opener func(ctx context.Context, cfg *config.Config, log *slog.Logger) (broker.Broker, error)

var (
	mu      sync.RWMutex
	openers = map[broker.Backend]Opener{}
)

// Register makes a backend available under name. It panics when name is
// registered twice (a programming error).
func Register(name broker.Backend, open Opener) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[name]; dup {
		panic("backend: Register called twice for " + string(name))
	}
	openers[name] = open
}

// Open checks the names the backend cfg.Broker names will declare (Check)
// and connects it.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger) (broker.Broker, error) {
	mu.RLock()
	open, ok := openers[cfg.Broker]
	names := make([]string, 0, len(openers))
	for n := range openers {
		names = append(names, string(n))
	}
	mu.RUnlock()
	if !ok {
		sort.Strings(names)
		return nil, fmt.Errorf("%w: broker %q (linked: %s); import _ \"github.com/redrive/redrive/broker/%s\"",
			ErrNotLinked, cfg.Broker, strings.Join(names, ", "), pkgOf(cfg.Broker))
	}
	if err := Check(cfg); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return open(ctx, cfg, log)
}

func pkgOf(name broker.Backend) string {
	if name == broker.RabbitMQ {
		return "rabbit"
	}
	return string(name)
}

// Checker checks what a backend derives from a valid configuration (the
// queue, exchange and topic names and the routing keys it will declare),
// without connecting. It returns one problem per name, naming the field to
// change.
type Checker func(cfg *config.Config) []*config.FieldError

var checkers = map[broker.Backend]Checker{}

// RegisterChecker makes check the Checker of backend name. It panics when
// name has one already (a programming error).
func RegisterChecker(name broker.Backend, check Checker) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := checkers[name]; dup {
		panic("backend: RegisterChecker called twice for " + name)
	}
	checkers[name] = check
}

// Check runs the Checker of cfg.Broker on cfg (a configuration that passed
// config validation) and joins its problems; nil when there are none or no
// checker is linked. Every problem matches config.ErrInvalid. Open runs it
// first.
func Check(cfg *config.Config) error {
	mu.RLock()
	check := checkers[cfg.Broker]
	mu.RUnlock()
	if check == nil {
		return nil
	}
	var errs []error
	for _, fe := range check(cfg) {
		errs = append(errs, fe)
	}
	return errors.Join(errs...)
}

// Clip shortens a long name for a Checker's message: its start and end.
func Clip(name string) string {
	if len(name) <= 48 {
		return name
	}
	return name[:20] + "…" + name[len(name)-20:]
}

// ConfigMapper maps a loaded configuration to the Config type of one
// backend package (rabbit.Config, kafka.Config), loading the TLS files it
// names.
type ConfigMapper func(cfg *config.Config, log *slog.Logger) (any, error)

var configs = map[reflect.Type]ConfigMapper{}

// RegisterConfig makes mapTo the way to build a T (a backend package's
// Config) from a configuration; ConfigOf[T] reaches it. It panics when T
// has one already (a programming error).
func RegisterConfig[T any](mapTo func(cfg *config.Config, log *slog.Logger) (T, error)) {
	mu.Lock()
	defer mu.Unlock()
	t := reflect.TypeFor[T]()
	if _, dup := configs[t]; dup {
		panic("backend: RegisterConfig called twice for " + t.String())
	}
	configs[t] = func(cfg *config.Config, log *slog.Logger) (any, error) { return mapTo(cfg, log) }
}

// ConfigOf returns the T (a backend package's Config, e.g. rabbit.Config)
// that cfg describes, through the mapping the backend registered. It
// fails with ErrNotLinked when no linked package registered T.
func ConfigOf[T any](cfg *config.Config, log *slog.Logger) (T, error) {
	var zero T
	t := reflect.TypeFor[T]()
	mu.RLock()
	mapTo := configs[t]
	mu.RUnlock()
	if mapTo == nil {
		return zero, fmt.Errorf("%w: no configuration mapping for %s", ErrNotLinked, t)
	}
	if log == nil {
		log = slog.Default()
	}
	v, err := mapTo(cfg, log)
	if err != nil {
		return zero, err
	}
	return v.(T), nil
}

var delayQueues = map[broker.Backend]func(cfg *config.Config) ([]string, error){}

// RegisterDelayQueues makes queues the way backend name lists the queues
// delayed messages wait in. It panics when name has one already (a
// programming error).
func RegisterDelayQueues(name broker.Backend, queues func(cfg *config.Config) ([]string, error)) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := delayQueues[name]; dup {
		panic("backend: RegisterDelayQueues called twice for " + string(name))
	}
	delayQueues[name] = queues
}

// DelayQueues returns the queues delayed messages wait in on the backend
// cfg.Broker names, without connecting or reading TLS files; nil when the
// backend has none (Kafka) or is not linked.
func DelayQueues(cfg *config.Config) ([]string, error) {
	mu.RLock()
	queues := delayQueues[cfg.Broker]
	mu.RUnlock()
	if queues == nil {
		return nil, nil
	}
	return queues(cfg)
}

var routers = map[broker.Backend]dlq.Router{}

// RegisterRouter makes r the dlq.Router of backend name: how it names the
// DLQs and replay routes of the configured workers. It panics when name
// has one already (a programming error).
func RegisterRouter(name broker.Backend, r dlq.Router) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := routers[name]; dup {
		panic("backend: RegisterRouter called twice for " + string(name))
	}
	routers[name] = r
}

// RouterOf returns the dlq.Router of the backend cfg.Broker names, without
// connecting; ErrNotLinked when that backend is not linked in.
func RouterOf(cfg *config.Config) (dlq.Router, error) {
	mu.RLock()
	r := routers[cfg.Broker]
	mu.RUnlock()
	if r == nil {
		return nil, fmt.Errorf("%w: broker %q", ErrNotLinked, cfg.Broker)
	}
	return r, nil
}
