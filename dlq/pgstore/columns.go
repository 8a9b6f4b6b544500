package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// tableCols are the columns of dlq_entries that the archive copies.
const tableCols = `seq, dlq, id, identity, broker, severity, status, status_changed_at, status_by, version, received_at,
	message_id, original_topic, original_partition, original_offset, original_key, original_value, original_headers, original_wire,
	error_class, error_message, stack_trace, reason, retry_count, worker, worker_instance, source,
	first_failure_at, last_failure_at, fingerprint`

// What a read loads of a record's message (key, value, headers, wire form).
type message int

const (
	// brief: nothing (listings, status changes); the error message is
	// cut to dlq.ListedErrorLen characters.
	brief message = iota
	// whole: everything.
	whole
	// preview: everything, the value cut to the bytes of the query
	// parameter previewParam names.
	preview
)

// previewParam is the placeholder of the preview length in reads of
// preview: the queries that use it pass it as their third parameter.
const previewParam = "$3"

// cols returns the select list of a record of the live table or, when
// archived, of the archive (status archived, changed when archived, by the
// archiver), loading m of its message. Scan it with scanRecord.
func cols(archived bool, m message) string {
	status := `status, status_changed_at, status_by`
	if archived {
		status = `'archived', archived_at, '` + dlq.ArchiverActor + `'`
	}
	errorMessage := `error_message`
	if m == brief {
		errorMessage = `left(error_message, ` + strconv.Itoa(dlq.ListedErrorLen) + `)`
	}
	c := `seq, dlq, id, identity, broker, severity, ` + status + `, version, received_at,
	message_id, original_topic, original_partition, original_offset,
	error_class, ` + errorMessage + `, stack_trace, reason, retry_count, worker, worker_instance, source,
	first_failure_at, last_failure_at, coalesce(octet_length(original_value), 0), fingerprint`
	switch m {
	case whole:
		// A large value is read in chunks after the row (fillValues): in
		// the row, the driver would hold it twice (its read buffer, a
		// power of two, and the copy).
		c += `, original_key, CASE WHEN octet_length(original_value) > ` + strconv.Itoa(valueChunk) + ` THEN NULL ELSE original_value END,
		original_headers, original_wire`
	case preview:
		c += `, original_key, substring(original_value FROM 1 FOR ` + previewParam + `), original_headers, original_wire`
	}
	return c
}

// valueChunk is how much of a value one query reads: values up to it come
// with their row, larger ones in chunks of it (fillValues).
const valueChunk = 1 << 20

// scanRecord reads one row of cols(…, m). A value over valueChunk read
// whole is left nil: fillValues reads it.
func scanRecord(row pgx.Row, m message) (int64, dlq.Record, error) {
	var (
		seq         int64
		r           dlq.Record
		status      string
		headers     []byte
		first, last *time.Time
	)
	e := &r.Entry
	dest := []any{&seq, &r.DLQ, &r.ID, &r.Identity, &r.Broker, &r.Severity, &status, &r.StatusChangedAt, &r.StatusBy, &r.Version, &r.ReceivedAt,
		&e.MessageID, &e.OriginalTopic, &e.OriginalPartition, &e.OriginalOffset,
		&e.ErrorClass, &e.ErrorMessage, &e.StackTrace, &e.Reason, &e.RetryCount, &e.Worker, &e.WorkerInstance, &e.Source,
		&first, &last, &r.ValueSize, &r.Fingerprint}
	if m != brief {
		dest = append(dest, &e.OriginalKey, &e.OriginalValue, &headers, &e.OriginalWire)
	}
	if err := row.Scan(dest...); err != nil {
		return 0, r, err
	}
	r.Brief = m == brief
	r.Status = dlq.Status(status)
	r.StatusChangedAt = r.StatusChangedAt.UTC()
	r.ReceivedAt = r.ReceivedAt.UTC()
	if first != nil {
		e.FirstFailureAt = first.UTC()
	}
	if last != nil {
		e.LastFailureAt = last.UTC()
	}
	if m == whole && e.OriginalValue == nil && r.ValueSize > valueChunk {
		e.OriginalValue = make([]byte, 0, r.ValueSize) // to fill
	}
	var err error
	if e.OriginalHeaders, err = decodeHeaders(headers); err != nil {
		return 0, r, fmt.Errorf("headers of %s: %w", r.Key(), err)
	}
	return seq, r, nil
}

// encodeHeaders renders headers as a JSON array of [name, value] pairs,
// each base64, sorted by name; nil for nil headers.
func encodeHeaders(h map[string]string) []byte {
	if h == nil {
		return nil
	}
	pairs := make([][2][]byte, 0, len(h))
	for _, k := range slices.Sorted(maps.Keys(h)) {
		pairs = append(pairs, [2][]byte{[]byte(k), []byte(h[k])})
	}
	b, _ := json.Marshal(pairs) // cannot fail: only byte slices
	return b
}

func decodeHeaders(b []byte) (map[string]string, error) {
	if b == nil {
		return nil, nil
	}
	var pairs [][2][]byte
	if err := json.Unmarshal(b, &pairs); err != nil {
		return nil, err
	}
	h := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		h[string(kv[0])] = string(kv[1])
	}
	return h, nil
}

// fillValues reads the large values of recs (those scanRecord left empty
// with room for them) a chunk at a time into their final buffers, so that
// reading a value costs its size and one chunk.
func fillValues(ctx context.Context, q querier, recs []dlq.Record) error {
	for i := range recs {
		r := &recs[i]
		v := r.Entry.OriginalValue
		if v == nil || len(v) != 0 || int64(cap(v)) != r.ValueSize || r.ValueSize <= valueChunk {
			continue
		}
		v = v[:r.ValueSize]
		if err := readInto(ctx, q, r.DLQ, r.ID, v); err != nil {
			return fmt.Errorf("value of %s: %w", r.Key(), err)
		}
		r.Entry.OriginalValue = v
	}
	return nil
}

// readInto fills dst with the value of entry id of dlqName (live, else
// archived) from its start, a chunk at a time, copied straight from the
// driver's buffer.
func readInto(ctx context.Context, q querier, dlqName, id string, dst []byte) error {
	w, err := idPart(ctx, q, dlqName, id)
	if err != nil {
		return err
	}
	table := "dlq_entries"
	for off := 0; off < len(dst); {
		chunk := &chunkScanner{dst: dst[off:min(off+valueChunk, len(dst))]}
		err := q.QueryRow(ctx, `SELECT substring(original_value FROM $3 FOR $4) FROM `+table+` WHERE dlq = $1 AND id = $2 AND part IN (0, $5::integer)`,
			dlqName, id, off+1, len(chunk.dst), w).Scan(chunk)
		if errors.Is(err, pgx.ErrNoRows) && table == "dlq_entries" {
			table = "dlq_entries_archive" // archived meanwhile
			continue
		}
		if err != nil {
			return err
		}
		if chunk.n != len(chunk.dst) {
			return fmt.Errorf("%d bytes at byte %d, want %d (changed meanwhile)", chunk.n, off, len(chunk.dst))
		}
		off += chunk.n
	}
	return nil
}

// chunkScanner scans a bytea into dst without an intermediate copy
// (pgtype.BytesScanner).
type chunkScanner struct {
	dst []byte
	n   int
}

// ScanBytes implements pgtype.BytesScanner.
func (c *chunkScanner) ScanBytes(v []byte) error {
	if len(v) > len(c.dst) {
		return fmt.Errorf("chunk of %d bytes, want at most %d", len(v), len(c.dst))
	}
	c.n = copy(c.dst, v)
	return nil
}
