// Package memstore is the embedded dlq.Store of `redrive dev` and first
// looks: no server, no cgo. Everything is held in memory by one process;
// with a journal file (Open) every change is also appended to a JSON-lines
// file, read back and compacted at the next Open. It is not meant for
// production: use dlq/pgstore there.
//
// Limits: one process per journal (nothing stops a second one from
// corrupting it); all records, payloads included, live in memory; listing
// filters by scanning; the journal is written without fsync unless
// Config.Sync is set, so a machine crash may lose the last changes (a torn
// last line is ignored at Open); the journal grows until the next Open
// compacts it.
package memstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/dlq"
)

// ErrClosed is returned by a Store used after Close.
var ErrClosed = errors.New("memstore: store closed")

// Config configures a Store. The zero Config is the default.
type Config struct {
	// Sync flushes the journal to disk (fsync) after every change.
	// Default false: the operating system flushes it.
	Sync bool
	// Logger receives the journal's warnings. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of received and status-change times. Default
	// time.Now.
	Now func() time.Time
}

// Validate returns nil: every Config is valid. It is here so that every
// configuration of redrive validates alike.
func (c Config) Validate() error { return nil }

// Store is an in-memory dlq.Store, optionally journaled to a file.
type Store struct {
	opts Config

	mu         sync.Mutex
	seq        int64
	recs       []*rec // by seq, ascending
	byID       map[key]*rec
	byIdentity map[key]*rec
	audit      map[key][]dlq.AuditEntry
	auditSeq   int64
	journal    *journal // nil: memory only
	closed     bool
}

var _ dlq.Store = (*Store)(nil)

// key addresses a record (DLQ and id, or DLQ and identity).
type key struct{ dlq, id string }

// rec is a stored record: seq orders the listings.
type rec struct {
	seq int64
	r   dlq.Record
}

// New returns an empty store held in memory only.
func New(opts Config) *Store {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{
		opts:       opts,
		byID:       map[key]*rec{},
		byIdentity: map[key]*rec{},
		audit:      map[key][]dlq.AuditEntry{},
	}
}

// Close closes the journal. The store cannot be used afterwards.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.journal != nil {
		return s.journal.close()
	}
	return nil
}

func (s *Store) lock() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Insert implements dlq.Store.
func (s *Store) Insert(ctx context.Context, r dlq.Record) (dlq.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return dlq.Record{}, false, err
	}
	r, err := r.PrepareInsert(s.opts.Now())
	if err != nil {
		return dlq.Record{}, false, fmt.Errorf("memstore: insert: %w", err)
	}
	if err := s.lock(); err != nil {
		return dlq.Record{}, false, err
	}
	defer s.mu.Unlock()
	if old, ok := s.byIdentity[key{r.DLQ, r.Identity}]; ok {
		return clone(old.r), false, nil
	}
	if _, ok := s.byID[key{r.DLQ, r.ID}]; ok {
		return dlq.Record{}, false, fmt.Errorf("memstore: insert %s: %w", r.Key(), dlq.ErrIDConflict)
	}
	n := &rec{seq: s.seq + 1, r: clone(r)}
	if err := s.write(n, nil); err != nil {
		return dlq.Record{}, false, fmt.Errorf("memstore: insert %s: %w", r.Key(), err)
	}
	s.add(n)
	return clone(n.r), true, nil
}

// InsertBatch implements dlq.Store: each record as Insert stores it, in
// order.
func (s *Store) InsertBatch(ctx context.Context, rs []dlq.Record) ([]dlq.InsertResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]dlq.InsertResult, len(rs))
	for i, r := range rs {
		stored, inserted, err := s.Insert(ctx, r)
		if err != nil && !errors.Is(err, dlq.ErrInvalidRecord) && !errors.Is(err, dlq.ErrIDConflict) {
			return nil, err // the store as a whole (closed, journal)
		}
		out[i] = dlq.InsertResult{Stored: stored, Inserted: inserted, Err: err}
	}
	return out, nil
}

// add indexes n; the caller holds mu.
func (s *Store) add(n *rec) {
	s.seq = max(s.seq, n.seq)
	i, _ := slices.BinarySearchFunc(s.recs, n.seq, func(r *rec, seq int64) int { return cmp.Compare(r.seq, seq) })
	s.recs = slices.Insert(s.recs, i, n)
	s.byID[key{n.r.DLQ, n.r.ID}] = n
	s.byIdentity[key{n.r.DLQ, n.r.Identity}] = n
}

// write journals the state of n and, when set, an audit row; the caller
// holds mu.
func (s *Store) write(n *rec, a *dlq.AuditEntry) error {
	if s.journal == nil {
		return nil
	}
	return s.journal.append(line{Rec: encodeRec(n), Audit: a}, s.opts.Sync)
}

// Get implements dlq.Store.
func (s *Store) Get(ctx context.Context, dlqName, id string) (dlq.Record, error) {
	if err := ctx.Err(); err != nil {
		return dlq.Record{}, err
	}
	if err := s.lock(); err != nil {
		return dlq.Record{}, err
	}
	defer s.mu.Unlock()
	n, ok := s.byID[key{dlqName, id}]
	if !ok {
		return dlq.Record{}, fmt.Errorf("memstore: get %s: %w", dlq.ReplayedFrom(dlqName, id), dlq.ErrNotFound)
	}
	return clone(n.r), nil
}

// GetMany implements dlq.Store.
func (s *Store) GetMany(ctx context.Context, dlqName string, ids []string) ([]dlq.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]dlq.Record, 0, len(ids))
	for _, id := range ids {
		if n, ok := s.byID[key{dlqName, id}]; ok {
			out = append(out, clone(n.r))
		}
	}
	return out, nil
}

// Preview implements dlq.Store.
func (s *Store) Preview(ctx context.Context, dlqName, id string, limit int) (dlq.Record, error) {
	if err := ctx.Err(); err != nil {
		return dlq.Record{}, err
	}
	if err := s.lock(); err != nil {
		return dlq.Record{}, err
	}
	defer s.mu.Unlock()
	n, ok := s.byID[key{dlqName, id}]
	if !ok {
		return dlq.Record{}, fmt.Errorf("memstore: preview %s: %w", dlq.ReplayedFrom(dlqName, id), dlq.ErrNotFound)
	}
	r := n.r
	if v := r.Entry.OriginalValue; len(v) > limit {
		r.Entry.OriginalValue = v[:max(limit, 0)]
	}
	return clone(r), nil
}

// ReadValue implements dlq.Store.
func (s *Store) ReadValue(ctx context.Context, dlqName, id string, off int64, n int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, ok := s.byID[key{dlqName, id}]
	if !ok {
		return nil, fmt.Errorf("memstore: read value of %s: %w", dlq.ReplayedFrom(dlqName, id), dlq.ErrNotFound)
	}
	v := r.r.Entry.OriginalValue
	if v == nil {
		return nil, nil
	}
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("memstore: read value of %s: negative offset or length", dlq.ReplayedFrom(dlqName, id))
	}
	if off >= int64(len(v)) {
		return []byte{}, nil
	}
	return cloneBytes(v[off:min(off+int64(n), int64(len(v)))]), nil
}

// Transition implements dlq.Store.
func (s *Store) Transition(ctx context.Context, t dlq.Transition) (dlq.Record, error) {
	if err := ctx.Err(); err != nil {
		return dlq.Record{}, err
	}
	name := dlq.ReplayedFrom(t.DLQ, t.ID)
	if !t.To.Valid() || t.To == dlq.StatusArchived {
		return dlq.Record{}, fmt.Errorf("memstore: transition %s: invalid target status %q", name, t.To)
	}
	at := t.At
	if at.IsZero() {
		at = s.opts.Now()
	}
	at = dlq.StoreTime(at)
	if err := s.lock(); err != nil {
		return dlq.Record{}, err
	}
	defer s.mu.Unlock()
	n, ok := s.byID[key{t.DLQ, t.ID}]
	if !ok {
		return dlq.Record{}, fmt.Errorf("memstore: transition %s: %w", name, dlq.ErrNotFound)
	}
	from := n.r.Status
	if from == dlq.StatusArchived || !slices.Contains(t.From, from) {
		return brief(n.r), fmt.Errorf("memstore: transition %s to %s: %w: it is %s", name, t.To, dlq.ErrNotPending, from)
	}
	if t.IfVersion > 0 && n.r.Version != t.IfVersion {
		return brief(n.r), fmt.Errorf("memstore: transition %s to %s: %w: it changed meanwhile (version %d, not %d)",
			name, t.To, dlq.ErrNotPending, n.r.Version, t.IfVersion)
	}
	next := &rec{seq: n.seq, r: n.r}
	next.r.Status, next.r.StatusChangedAt, next.r.StatusBy = t.To, at, t.Actor
	next.r.Version++
	var a *dlq.AuditEntry
	if t.Action != "" {
		a = &dlq.AuditEntry{
			Seq: s.auditSeq + 1, At: at, Actor: t.Actor, Action: t.Action,
			DLQ: t.DLQ, EntryID: t.ID, From: from, To: t.To, Reason: t.Reason,
		}
	}
	if err := s.write(next, a); err != nil {
		return dlq.Record{}, fmt.Errorf("memstore: transition %s: %w", name, err)
	}
	n.r = next.r
	if a != nil {
		s.auditSeq = a.Seq
		s.audit[key{t.DLQ, t.ID}] = append(s.audit[key{t.DLQ, t.ID}], *a)
	}
	return brief(n.r), nil
}

// Audit implements dlq.Store.
func (s *Store) Audit(ctx context.Context, dlqName, id string) ([]dlq.AuditEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return slices.Clone(s.audit[key{dlqName, id}]), nil
}

// Archive implements dlq.Store.
func (s *Store) Archive(ctx context.Context, dlqName string, before time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if limit <= 0 {
		return 0, nil
	}
	now := dlq.StoreTime(s.opts.Now())
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	moved := 0
	for _, n := range s.recs {
		if moved == limit {
			break
		}
		r := &n.r
		if r.DLQ != dlqName || !r.ReceivedAt.Before(before) ||
			r.Status == dlq.StatusArchived || r.Status == dlq.StatusReplaying {
			continue
		}
		next := &rec{seq: n.seq, r: n.r}
		next.r.Status, next.r.StatusChangedAt, next.r.StatusBy = dlq.StatusArchived, now, dlq.ArchiverActor
		next.r.Version++
		if err := s.write(next, nil); err != nil {
			return moved, fmt.Errorf("memstore: archive %s: %w", r.Key(), err)
		}
		n.r = next.r
		moved++
	}
	return moved, nil
}

// clone returns a deep copy of r, so that callers never share the store's
// byte slices and maps.
func clone(r dlq.Record) dlq.Record {
	e := &r.Entry
	e.OriginalKey = cloneBytes(e.OriginalKey)
	e.OriginalValue = cloneBytes(e.OriginalValue)
	e.OriginalWire = cloneBytes(e.OriginalWire)
	if e.OriginalHeaders != nil {
		e.OriginalHeaders = maps.Clone(e.OriginalHeaders)
	}
	return r
}

// brief returns r without its message, as listings return records.
func brief(r dlq.Record) dlq.Record {
	e := &r.Entry
	e.OriginalKey, e.OriginalValue, e.OriginalHeaders, e.OriginalWire = nil, nil, nil, nil
	if utf8.RuneCountInString(e.ErrorMessage) > dlq.ListedErrorLen {
		e.ErrorMessage = string([]rune(e.ErrorMessage)[:dlq.ListedErrorLen])
	}
	r.Brief = true
	return r
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
