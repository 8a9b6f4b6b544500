// Package backend is the registry that turns a loaded configuration into a
// running broker.Broker for whichever backend its `broker:` key names. Each
// backend package registers itself from init (database/sql style), so a
// program links only the backends it imports and no import cycle arises.
package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/config"
)

// ErrNotLinked is returned by Open when the configured backend's package
// was not imported into the program.
var ErrNotLinked = errors.New("broker backend not linked in")

// Opener connects a backend described by cfg.
type Opener func(ctx context.Context, cfg *config.Config, log *slog.Logger) (broker.Broker, error)

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes a backend available under name. It panics when name is
// registered twice (a programming error).
func Register(name string, open Opener) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[name]; dup {
		panic("backend: Register called twice for " + name)
	}
	openers[name] = open
}

// Open connects the backend cfg.Broker names.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger) (broker.Broker, error) {
	mu.RLock()
	open, ok := openers[cfg.Broker]
	names := make([]string, 0, len(openers))
	for n := range openers {
		names = append(names, n)
	}
	mu.RUnlock()
	if !ok {
		sort.Strings(names)
		return nil, fmt.Errorf("%w: broker %q (linked: %s); import _ \"github.com/redrive/redrive/broker/%s\"",
			ErrNotLinked, cfg.Broker, strings.Join(names, ", "), pkgOf(cfg.Broker))
	}
	if log == nil {
		log = slog.Default()
	}
	return open(ctx, cfg, log)
}

func pkgOf(name string) string {
	if name == config.BrokerRabbitMQ {
		return "rabbit"
	}
	return name
}
