package dlq

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors callers branch on. Store and operate.Ops errors wrap them.
var (
	// ErrNotFound: no record with that DLQ and id (HTTP 404).
	ErrNotFound = errors.New("dead letter not found")
	// ErrNotPending: the record is not in the status the operation needs,
	// typically a replay or discard of an entry that is no longer pending
	// (HTTP 409).
	ErrNotPending = errors.New("dead letter is not pending")
	// ErrIDConflict: Insert got an id the DLQ already uses for a message of
	// another identity.
	ErrIDConflict = errors.New("dead-letter id already used by another message")
	// ErrInvalidQuery: a Query field is out of range or malformed; the
	// message names the field (HTTP 400).
	ErrInvalidQuery = errors.New("invalid query")
)

// Store keeps dead letters, their status and the audit log. Implementations
// (dlq/pgstore for production, dlq/memstore for `redrive dev`) pass the
// conformance suite in dlq/storetest. All methods are safe for concurrent
// use, also from several processes sharing one database (pgstore).
type Store interface {
	// Insert stores r as a pending record, after r.PrepareInsert. It is
	// idempotent on (r.DLQ, r.Identity): when the DLQ already holds (or
	// has archived) a record of that identity, Insert stores nothing and
	// returns that record with inserted = false, also under concurrent
	// inserts of the same identity. An r.ID already used by another
	// identity is ErrIDConflict.
	Insert(ctx context.Context, r Record) (stored Record, inserted bool, err error)
	// InsertBatch stores rs as Insert stores each, as one batch (pgstore:
	// one multi-row statement, its summary counts in the same
	// transaction), and returns one InsertResult per record, in the order
	// of rs. A record that cannot be stored (invalid, its id used by
	// another identity, refused by the database) gets its error in its
	// result while the others are stored; err is set only when the batch
	// as a whole failed (the database is unreachable, the store closed):
	// the caller offers it again, inserts being idempotent.
	InsertBatch(ctx context.Context, rs []Record) (results []InsertResult, err error)
	// Get returns the record id of dlq, live or archived, with its whole
	// message; ErrNotFound when there is none.
	Get(ctx context.Context, dlq, id string) (Record, error)
	// GetMany returns the records ids of dlq (live or archived) with their
	// whole messages, in the order of ids; ids without a record are left
	// out. Callers bound the bytes they ask for (Record.ValueSize).
	GetMany(ctx context.Context, dlq string, ids []string) ([]Record, error)
	// Preview is Get with at most max bytes of the value
	// (Record.ValueSize is the whole size): what a page shows of an entry,
	// whatever its payload's size.
	Preview(ctx context.Context, dlq, id string, max int) (Record, error)
	// ReadValue returns at most n bytes of the value of entry id of dlq,
	// from byte off (fewer, or none, at its end; nil for a nil value):
	// the whole payload, streamed a chunk at a time.
	ReadValue(ctx context.Context, dlq, id string, off int64, n int) ([]byte, error)
	// List returns one page of the records q selects, in insertion order
	// (or newest first with q.NewestFirst), and the cursor of the next.
	// The records are Brief: their messages are not loaded.
	List(ctx context.Context, q Query) (Page, error)
	// Count returns how many records q selects, ignoring its cursor and
	// limit.
	Count(ctx context.Context, q Query) (int64, error)
	// Summaries returns one Summary per DLQ holding at least one record
	// (live or archived), sorted by DLQ name.
	Summaries(ctx context.Context) ([]Summary, error)
	// Transition changes a record's status as t says and, when t.Action
	// is set, writes the audit row in the same transaction. When the
	// record's status is not one of t.From (or its version is not
	// t.IfVersion) nothing changes and the error wraps ErrNotPending;
	// archived records are never changed. It returns the updated record,
	// Brief.
	Transition(ctx context.Context, t Transition) (Record, error)
	// Audit returns the audit rows of entry id of dlq, oldest first (none,
	// not an error, for an unknown entry).
	Audit(ctx context.Context, dlq, id string) ([]AuditEntry, error)
	// Groups returns the failure groups of q.DLQ (see Group): its live
	// records (archived ones aside) grouped by Record.Fingerprint, most
	// pending first, then largest, at most q.Limit of them.
	Groups(ctx context.Context, q GroupQuery) ([]Group, error)
	// Arrivals counts the arrivals of q.DLQ (live and archived records)
	// (or of its failure group q.Group) per bucket of q's window, and
	// those of its q.Groups busiest failure groups, reading only the
	// window (see ArrivalsQuery).
	Arrivals(ctx context.Context, q ArrivalsQuery) (Arrivals, error)
	// Archive moves up to limit records of dlq received before before, in
	// any status but replaying, to the archive, oldest first, and returns
	// how many it moved. Archived records stay readable: Get, and List
	// with Status archived.
	Archive(ctx context.Context, dlq string, before time.Time, limit int) (int, error)
	// Close releases the store's resources.
	Close() error
}

// InsertResult is the outcome of one record of Store.InsertBatch: what
// Store.Insert returns for it.
type InsertResult struct {
	// Stored is the record as stored, or the record already stored under
	// its identity when Inserted is false.
	Stored   Record
	Inserted bool
	// Err is why this record was not stored (nothing else is set then).
	Err error
}

// Transition is a status change, for Store.Transition.
type Transition struct {
	DLQ string
	ID  string
	// From lists the statuses the record may be in.
	From []Status
	// To is the new status (not StatusArchived).
	To Status
	// IfVersion, when positive, is the version the record must have.
	IfVersion int64
	// Actor did it (Record.StatusBy, AuditEntry.Actor).
	Actor string
	// Action, when not empty, is the audit row's action; Reason its
	// reason.
	Action string
	Reason string
	// At is the time of the change; now when zero.
	At time.Time
}

// Query limits.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Query selects records for List and Count. Zero fields select everything.
type Query struct {
	// DLQ selects one DLQ; empty = every DLQ.
	DLQ string
	// Status selects one status; empty = every status but archived
	// (archived records are listed only when asked for).
	Status Status
	// ErrorClass selects one error class (exact match).
	ErrorClass string
	// Text selects records whose error message contains it, ignoring case.
	Text string
	// Group selects the records of one failure group: those whose
	// Record.Fingerprint it is.
	Group string
	// Since and Until select records received in [Since, Until).
	Since, Until time.Time
	// Cursor continues a listing where the page that returned it ended
	// (Page.Next); empty = from the start. It is only valid with the same
	// order (NewestFirst).
	Cursor string
	// Limit bounds the page: 0 = DefaultLimit, at most MaxLimit.
	Limit int
	// NewestFirst lists the newest records first; default oldest first.
	NewestFirst bool
}

// Validate reports the first problem of q, naming the field, wrapped in
// ErrInvalidQuery.
func (q Query) Validate() error {
	switch {
	case q.DLQ != "" && !ValidName(q.DLQ):
		return fmt.Errorf("%w: dlq: %q is not a DLQ name", ErrInvalidQuery, q.DLQ)
	case q.Status != "" && !q.Status.Valid():
		return fmt.Errorf("%w: status: %q is not one of pending, replaying, replayed, discarded, archived", ErrInvalidQuery, q.Status)
	case q.Limit < 0 || q.Limit > MaxLimit:
		return fmt.Errorf("%w: limit: %d is not between 1 and %d", ErrInvalidQuery, q.Limit, MaxLimit)
	case !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until):
		return fmt.Errorf("%w: since: %s is not before until %s", ErrInvalidQuery, q.Since.Format(time.RFC3339Nano), q.Until.Format(time.RFC3339Nano))
	case len(q.Text) > 1024:
		return fmt.Errorf("%w: text: longer than 1024 bytes", ErrInvalidQuery)
	case len(q.ErrorClass) > 1024:
		return fmt.Errorf("%w: error_class: longer than 1024 bytes", ErrInvalidQuery)
	case q.Group != "" && !ValidFingerprint(q.Group):
		return fmt.Errorf("%w: group: %.40q is not a failure fingerprint (32 lower-case hexadecimal digits)", ErrInvalidQuery, q.Group)
	}
	if q.Cursor != "" {
		c, err := DecodeCursor(q.Cursor)
		if err != nil {
			return err
		}
		if c.NewestFirst != q.NewestFirst {
			return fmt.Errorf("%w: cursor: it belongs to a listing in the other order", ErrInvalidQuery)
		}
	}
	return nil
}

// PageLimit returns q.Limit with the default applied.
func (q Query) PageLimit() int {
	if q.Limit == 0 {
		return DefaultLimit
	}
	return q.Limit
}

// Page is one page of a listing.
type Page struct {
	Records []Record
	// Next is the cursor of the next page; empty on the last page.
	Next string
}

// Cursor is a position in a listing: after the record of store sequence
// number After (its insertion order), in the given order. Clients treat its
// encoding (Encode) as opaque; stores use this type to build and read it.
type Cursor struct {
	After       int64
	NewestFirst bool
}

// Encode renders c as an opaque, URL-safe string.
func (c Cursor) Encode() string {
	dir := "a"
	if c.NewestFirst {
		dir = "d"
	}
	return base64.RawURLEncoding.EncodeToString([]byte("c1" + dir + strconv.FormatInt(c.After, 10)))
}

// DecodeCursor reads a cursor made by Cursor.Encode; malformed cursors wrap
// ErrInvalidQuery.
func DecodeCursor(s string) (Cursor, error) {
	bad := fmt.Errorf("%w: cursor: %.40q is not a cursor of this API", ErrInvalidQuery, s)
	if len(s) > 64 {
		return Cursor{}, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 4 || !strings.HasPrefix(string(raw), "c1") {
		return Cursor{}, bad
	}
	var c Cursor
	switch raw[2] {
	case 'a':
	case 'd':
		c.NewestFirst = true
	default:
		return Cursor{}, bad
	}
	n, err := strconv.ParseInt(string(raw[3:]), 10, 64)
	if err != nil || n < 0 {
		return Cursor{}, bad
	}
	c.After = n
	return c, nil
}

// Summary describes one DLQ as the store sees it.
type Summary struct {
	DLQ string
	// Broker and Severity are those of the DLQ's newest record.
	Broker   string
	Severity string
	// Counts by status.
	Pending, Replaying, Replayed, Discarded, Archived int64
	// OldestPending is when the oldest pending record by insertion order
	// (the first a listing shows) was received, zero when none is pending;
	// LastReceived when the newest record was.
	OldestPending time.Time
	LastReceived  time.Time
}
