package operate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/redrive/redrive/dlq"
	"io"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
)

// ErrReasonRequired is returned by Discard without a reason (HTTP 400).
var ErrReasonRequired = errors.New("a reason is required")

// ErrReplayFailed is wrapped (with the broker's error) when the
// Republisher refused a replay or did not confirm it in time (HTTP 502).
// The entry is pending again.
var ErrReplayFailed = errors.New("the broker did not take the replay")

// ErrNoRepublisher is returned by Replay, ReplayAll and Reconcile of an Ops
// built without a Republisher (a read-only Ops, e.g. a CLI without broker).
var ErrNoRepublisher = errors.New("dlq: no republisher configured: replay needs a broker")

// Config configures Ops.
type Config struct {
	// Store is required.
	Store dlq.Store
	// Republisher replays entries; nil makes a read-only Ops whose replays
	// fail with ErrNoRepublisher.
	Republisher dlq.Republisher
	// Routes are the configured workers' replay routes (see Route), and
	// those of the configured foreign DLQs (ForeignRoute, one each): an
	// entry is replayed only to the route of the DLQ it sits in. A DLQ
	// without a route cannot be replayed (ErrNoRoute).
	Routes []dlq.Route
	// MaxPayloadPreview bounds what Show loads and the API and console
	// render of a payload inline; the whole payload is read with Payload.
	// Default DefaultPayloadPreview.
	MaxPayloadPreview int
	// Policies maps DLQ names to their settings. DLQs without one use
	// Policy{} (warning, DefaultRetention), with the severity of their
	// newest record. Several workers sharing one Kafka "<topic>.dlq"
	// should be merged by the caller (Policy.Merge).
	Policies map[string]dlq.Policy
	// Registerer, when set, gets worker_dlq_replayed_total{dlq} and
	// redrive_dlq_pending{dlq}. Never the global default unless passed.
	Registerer prometheus.Registerer
	// Logger; default slog.Default().
	Logger *slog.Logger
	// ReplayTimeout bounds one Republish call; default 30 s.
	ReplayTimeout time.Duration
	// ReconcileAfter is how long an entry must have been replaying before
	// Reconcile takes it for abandoned by a crash; default 2 min. It must
	// exceed ReplayTimeout, so that a replay in progress in another
	// instance is not replayed twice.
	ReconcileAfter time.Duration
	// ReconcileInterval is how often Run reconciles. Default 1 min.
	ReconcileInterval time.Duration
	// ArchiveInterval is how often Run archives. Default 1 h.
	ArchiveInterval time.Duration
	// MetricsInterval is how often Run refreshes the pending gauge.
	// Default 15 s.
	MetricsInterval time.Duration
	// Now is the clock; default time.Now. For tests.
	Now func() time.Time
}

// Ops are the dead-letter operations of the admin API, the CLI and the
// daemon: list, show, replay, replay-all, discard, reconcile, archive. Every
// replay and discard changes the status and writes an audit row in one
// transaction. Ops is safe for concurrent use.
type Ops struct {
	store    dlq.Store
	pub      dlq.Republisher
	routes   map[string][]dlq.Route
	preview  int
	policies map[string]dlq.Policy
	log      *slog.Logger
	metrics  *metrics
	now      func() time.Time
	kick     chan struct{} // refreshSoon → Run

	replayTimeout     time.Duration
	reconcileAfter    time.Duration
	reconcileInterval time.Duration
	archiveInterval   time.Duration
	metricsInterval   time.Duration
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c Config) Validate() error {
	if c.Store == nil {
		return errors.New("dlq: operate.Config.Store: required")
	}
	replay, reconcile := orDefault(c.ReplayTimeout, DefaultReplayTimeout), orDefault(c.ReconcileAfter, DefaultReconcileAfter)
	if reconcile <= replay {
		return fmt.Errorf("dlq: operate.Config.ReconcileAfter: must exceed ReplayTimeout (%s), got %s", replay, reconcile)
	}
	seen := map[[2]string]bool{}
	foreign := map[string]bool{} // DLQ → its route is foreign
	for i, rt := range c.Routes {
		switch prev, dup := foreign[rt.DLQ]; {
		case rt.Foreign && (rt.DLQ == "" || rt.Target == "" && rt.Exchange == "" && rt.Resolve == nil):
			return fmt.Errorf("dlq: operate.Config.Routes[%d]: a foreign route needs dlq and a target (or exchange, or Resolve), got %+v", i, rt)
		case rt.Resolve != nil && !rt.Foreign:
			return fmt.Errorf("dlq: operate.Config.Routes[%d]: only a foreign route resolves its target per entry, got %+v", i, rt)
		case dup && (prev || rt.Foreign):
			return fmt.Errorf("dlq: operate.Config.Routes[%d]: %q is a foreign DLQ and has another route", i, rt.DLQ)
		case !rt.Foreign && (rt.DLQ == "" || rt.Topic == "" || rt.Worker == "" || rt.Target == ""):
			return fmt.Errorf("dlq: operate.Config.Routes[%d]: dlq, topic, worker and target are required, got %+v", i, rt)
		}
		foreign[rt.DLQ] = rt.Foreign
		k := [2]string{rt.DLQ, rt.Worker}
		if seen[k] {
			return fmt.Errorf("dlq: operate.Config.Routes[%d]: two routes of worker %q in %q", i, rt.Worker, rt.DLQ)
		}
		seen[k] = true
	}
	for _, name := range slices.Sorted(maps.Keys(c.Policies)) {
		if err := c.Policies[name].Validate(); err != nil {
			return fmt.Errorf("dlq: operate.Config.Policies[%q]: %w", name, err)
		}
	}
	return nil
}

// Defaults of Config.
const (
	// DefaultReplayTimeout is Config.ReplayTimeout's default.
	DefaultReplayTimeout = 30 * time.Second
	// DefaultReconcileAfter is Config.ReconcileAfter's default.
	DefaultReconcileAfter = 2 * time.Minute
)

// New checks cfg and returns its Ops, with its metrics registered on
// cfg.Registerer.
func New(cfg Config) (*Ops, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &Ops{
		store:             cfg.Store,
		pub:               cfg.Republisher,
		policies:          make(map[string]dlq.Policy, len(cfg.Policies)),
		routes:            make(map[string][]dlq.Route, len(cfg.Routes)),
		kick:              make(chan struct{}, 1),
		preview:           cfg.MaxPayloadPreview,
		log:               cfg.Logger,
		now:               cfg.Now,
		replayTimeout:     orDefault(cfg.ReplayTimeout, DefaultReplayTimeout),
		reconcileAfter:    orDefault(cfg.ReconcileAfter, DefaultReconcileAfter),
		reconcileInterval: orDefault(cfg.ReconcileInterval, time.Minute),
		archiveInterval:   orDefault(cfg.ArchiveInterval, time.Hour),
		metricsInterval:   orDefault(cfg.MetricsInterval, 15*time.Second),
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.preview <= 0 {
		o.preview = DefaultPayloadPreview
	}
	for _, rt := range cfg.Routes {
		o.routes[rt.DLQ] = append(o.routes[rt.DLQ], rt)
	}
	for name, p := range cfg.Policies {
		if p.Severity == "" {
			p.Severity = broker.DefaultSeverity
		}
		o.policies[name] = p
	}
	if cfg.Registerer != nil {
		m, err := newMetrics(cfg.Registerer)
		if err != nil {
			return nil, fmt.Errorf("dlq: new ops: %w", err)
		}
		o.metrics = m
	}
	return o, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Store returns the store Ops works on.
func (o *Ops) Store() dlq.Store { return o.store }

// Policy returns the settings of dlq: its configured Policy with defaults
// filled in (severity warning, retention DefaultRetention), and whether
// it is configured.
func (o *Ops) Policy(dlqName string) (dlq.Policy, bool) {
	p, ok := o.policies[dlqName]
	return p.WithDefaults(), ok
}

// DLQInfo is a DLQ as the admin API lists it: the store's summary and the
// configured policy.
type DLQInfo struct {
	dlq.Summary
	// Retention is the effective retention (broker.Forever = never
	// archived).
	Retention time.Duration
	// Configured tells a DLQ of the configuration from one only known by
	// its records.
	Configured bool
}

// DLQs lists every DLQ that is configured or holds records, sorted by
// name, with counts by status. A configured severity wins over the
// records'.
func (o *Ops) DLQs(ctx context.Context) ([]DLQInfo, error) {
	sums, err := o.store.Summaries(ctx)
	if err != nil {
		return nil, fmt.Errorf("dlq: list dlqs: %w", err)
	}
	seen := make(map[string]bool, len(sums))
	out := make([]DLQInfo, 0, len(sums)+len(o.policies))
	for _, s := range sums {
		seen[s.DLQ] = true
		p, ok := o.Policy(s.DLQ)
		if ok || s.Severity == "" {
			s.Severity = string(p.Severity)
		}
		out = append(out, DLQInfo{Summary: s, Retention: p.Retention, Configured: ok})
	}
	for name := range o.policies {
		if seen[name] {
			continue
		}
		p, _ := o.Policy(name)
		out = append(out, DLQInfo{Summary: dlq.Summary{DLQ: name, Severity: string(p.Severity)}, Retention: p.Retention, Configured: true})
	}
	slices.SortFunc(out, func(a, b DLQInfo) int { return cmp.Compare(a.DLQ, b.DLQ) })
	return out, nil
}

// Known reports whether dlq is configured or holds records (live or
// archived).
func (o *Ops) Known(ctx context.Context, dlqName string) (bool, error) {
	if _, ok := o.policies[dlqName]; ok {
		return true, nil
	}
	for _, st := range []dlq.Status{"", dlq.StatusArchived} {
		n, err := o.store.Count(ctx, dlq.Query{DLQ: dlqName, Status: st})
		if err != nil {
			return false, fmt.Errorf("dlq: look up dlq %q: %w", dlqName, err)
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

// List returns one page of the records q selects (see Query).
func (o *Ops) List(ctx context.Context, q dlq.Query) (dlq.Page, error) {
	if err := q.Validate(); err != nil {
		return dlq.Page{}, err
	}
	p, err := o.store.List(ctx, q)
	if err != nil {
		return dlq.Page{}, fmt.Errorf("dlq: list %q: %w", q.DLQ, err)
	}
	return p, nil
}

// DefaultPayloadPreview is the default of Config.MaxPayloadPreview.
const DefaultPayloadPreview = 64 << 10

// PayloadPreview is how many bytes of a payload Show loads.
func (o *Ops) PayloadPreview() int { return o.preview }

// Show returns entry id of dlq with its audit trail, oldest first. The
// payload holds at most PayloadPreview bytes; Record.ValueSize says how
// large it is (Payload reads it whole).
func (o *Ops) Show(ctx context.Context, dlqName, id string) (dlq.Record, []dlq.AuditEntry, error) {
	r, err := o.store.Preview(ctx, dlqName, id, o.preview)
	if err != nil {
		return dlq.Record{}, nil, fmt.Errorf("dlq: show %s: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	trail, err := o.store.Audit(ctx, dlqName, id)
	if err != nil {
		return dlq.Record{}, nil, fmt.Errorf("dlq: show %s: audit: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	return r, trail, nil
}

// payloadChunk is how much of a payload Payload holds at a time.
const payloadChunk = 1 << 20

// Payload writes the whole payload of entry id of dlq to w, a chunk at a
// time (memory does not grow with its size), after calling start with its
// size (so that an HTTP handler can set its headers); nil is a nil value
// (no payload at all). An error before start was called is the store's
// (ErrNotFound); later ones are w's or the store's.
func (o *Ops) Payload(ctx context.Context, dlqName, id string, start func(size int64, isNil bool), w io.Writer) error {
	r, err := o.store.Preview(ctx, dlqName, id, 0)
	if err != nil {
		return fmt.Errorf("dlq: payload of %s: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	isNil := r.Entry.OriginalValue == nil
	start(r.ValueSize, isNil)
	for off := int64(0); off < r.ValueSize; {
		b, err := o.store.ReadValue(ctx, dlqName, id, off, payloadChunk)
		if err != nil {
			return fmt.Errorf("dlq: payload of %s at byte %d: %w", dlq.ReplayedFrom(dlqName, id), off, err)
		}
		if len(b) == 0 {
			return fmt.Errorf("dlq: payload of %s: ends at byte %d of %d", dlq.ReplayedFrom(dlqName, id), off, r.ValueSize)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		off += int64(len(b))
	}
	return nil
}
