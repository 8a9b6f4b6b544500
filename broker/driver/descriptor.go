package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/redrive/redrive/broker"
)

// Descriptor is what a backend registers, once, from its package's init
// (database/sql style): its name, how to open it, and what it offers
// without a connection. A program links a backend by importing its
// package (`import _ "github.com/redrive/redrive/broker/rabbit"`);
// worker.Load, `redrive serve` and the CLI then open whichever backend
// the configuration's `broker:` key names, through Lookup, and never name
// a backend themselves.
//
// The optional fields are the backend's capabilities: nil means it has
// none of that kind, and the command that needs it says so.
type Descriptor struct {
	// Name is the backend's name: the value of the configuration's
	// `broker:` key and of a stored dead letter's Broker ("rabbitmq",
	// "kafka"). Required; 1 to 32 characters of [a-z0-9_-].
	Name string
	// Open connects the backend. Required.
	Open func(ctx context.Context, s Settings) (broker.Broker, error)
	// Router names the backend's DLQs and replay routes without
	// connecting. Required.
	Router Router
	// Words are how people call the backend and where its messages
	// wait, in what the console, the CLI and the audit log say; its
	// empty fields default to DefaultWords' (Display: Name).
	Words Words
	// Monitor, when set, opens what measures how far the consumers of
	// subs (the configured workers: topic, group, retry mode) are behind
	// (`redrive serve`, `redrive exporter`, `redrive lag`): a
	// GroupLagMonitor, a DepthMonitor, or both.
	Monitor func(ctx context.Context, s Settings, subs []broker.Subscription) (Monitor, error)
	// Topology, when set, manages what the backend declares for the
	// configured workers (`redrive topology plan|apply|delete`).
	Topology func(ctx context.Context, s Settings) (Topology, error)
	// DevServer, when set, starts a server of the backend inside the
	// process, for `redrive dev` (Kafka: an in-memory cluster).
	DevServer func(cfg DevServerConfig) (DevServer, error)
}

// Settings are what every backend is opened with, whatever its kind.
type Settings struct {
	// Instance is the identity of this worker process (heartbeat.instance;
	// dead letters carry it as worker_instance); empty: DefaultInstance().
	Instance string
	// Logger receives the backend's logs; nil: slog.Default().
	Logger *slog.Logger
	// Config is the backend's own configuration value (rabbit.Config,
	// kafka.Config), as the program's assembly built it from the
	// backend's section of the configuration file; nil: the backend's
	// defaults. A backend without a section of its own ignores it; one
	// given a value of another type fails with ErrInvalidConfig.
	Config any
}

// ConfigAs returns s.Config as a T (the calling backend's Config type):
// the zero T when s.Config is nil, and an error wrapping
// ErrInvalidConfig when it is of another type.
func ConfigAs[T any](s Settings) (T, error) {
	var zero T
	switch c := s.Config.(type) {
	case nil:
		return zero, nil
	case T:
		return c, nil
	case *T:
		if c == nil {
			return zero, nil
		}
		return *c, nil
	default:
		return zero, fmt.Errorf("%w: Settings.Config is a %T, want a %T", ErrInvalidConfig, s.Config, zero)
	}
}

// ErrInvalidConfig is wrapped by a backend's errors about its
// configuration (each backend's own ErrInvalidConfig wraps it), so that a
// program tells bad input from an unreachable broker without naming the
// backend.
var ErrInvalidConfig = errors.New("invalid backend configuration")

// ErrNoCapability is wrapped when a command needs a capability the
// configured backend does not have (a Monitor, a Topology, a DevServer).
var ErrNoCapability = errors.New("the backend does not offer this")

var (
	regMu    sync.RWMutex
	registry = map[string]Descriptor{}
)

// Register makes d available under d.Name. It panics when d is invalid
// (no name, no Open, no Router) or its name is registered already: both
// are programming errors of the backend.
func Register(d Descriptor) {
	switch {
	case !ValidName(d.Name):
		panic(fmt.Sprintf("driver: Register: name %q is not 1 to 32 characters of [a-z0-9_-]", d.Name))
	case d.Open == nil:
		panic("driver: Register " + d.Name + ": Open is nil")
	case d.Router == nil:
		panic("driver: Register " + d.Name + ": Router is nil")
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[d.Name]; dup {
		panic("driver: Register called twice for " + d.Name)
	}
	registry[d.Name] = d
}

// Lookup returns the descriptor registered under name and whether there
// is one (the backend's package is linked into the program).
func Lookup(name string) (Descriptor, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	d, ok := registry[name]
	return d, ok
}

// Names lists the registered backends' names, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ValidName reports whether name can name a backend (a Descriptor's
// Name, a stored dead letter's Broker): 1 to 32 characters of
// [a-z0-9_-].
func ValidName(name string) bool {
	if name == "" || len(name) > 32 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Words are how people call where a backend's messages wait, for the
// sentences that name a replay's destination (Route.Destination) and an
// origin mismatch.
type Words struct {
	// Display is the backend's name as people write it ("RabbitMQ",
	// "Kafka"), in titles.
	Display string
	// Unit is what a DLQ and a replay target are: "queue" (RabbitMQ),
	// "topic" (Kafka).
	Unit string
	// EveryGroup says who receives a message published to a topic:
	// "every queue bound to it" (RabbitMQ), "every consumer group of it"
	// (Kafka).
	EveryGroup string
}

// DefaultWords are the Words of a backend that gives none, and of a
// backend name that is not registered (Display: the name itself).
var DefaultWords = Words{Unit: "queue", EveryGroup: "every consumer of it"}

// WordsOf returns the Words of the backend registered as name, its
// empty fields DefaultWords' (Display: name); DefaultWords when none is.
func WordsOf(name string) Words {
	w := DefaultWords
	if d, ok := Lookup(name); ok {
		w = d.Words
	}
	if w.Display == "" {
		w.Display = name
	}
	if w.Unit == "" {
		w.Unit = DefaultWords.Unit
	}
	if w.EveryGroup == "" {
		w.EveryGroup = DefaultWords.EveryGroup
	}
	return w
}

// NewError returns a sentinel error with its own text that also matches
// kind in errors.Is: a backend's ErrInvalidConfig ("rabbit: invalid
// config") is a driver.ErrInvalidConfig, so that callers branch on the
// driver's sentinel without naming the backend.
func NewError(text string, kind error) error { return &kindError{text: text, kind: kind} }

// kindError is NewError's error.
type kindError struct {
	text string
	kind error
}

func (e *kindError) Error() string        { return e.text }
func (e *kindError) Is(target error) bool { return target == e.kind }

// Problem is one thing a backend cannot declare as configured, found
// without connecting: a name over the broker's limit, a queue or topic
// two workers would share. The program's assembly turns it into an error
// naming the configuration field to change.
type Problem struct {
	// Worker is the index of the subscription (the configured worker) to
	// change; -1 for a setting of the backend's own.
	Worker int
	// Field is the setting to change, in the configuration file's
	// spelling: a worker's ("name", "topic"), or one of the backend's own
	// section ("prefix", "delay.levels", "foreign_dlqs[0].queue"); empty
	// for the section as a whole.
	Field string
	// Msg says what is wrong and how to fix it.
	Msg string
}

// ClipName shortens a long name for a Problem's message: its start and
// end.
func ClipName(name string) string {
	if len(name) <= 48 {
		return name
	}
	return name[:20] + "…" + name[len(name)-20:]
}
