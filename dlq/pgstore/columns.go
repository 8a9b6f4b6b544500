package pgstore

import (
	"encoding/json"
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
	first_failure_at, last_failure_at`

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
	first_failure_at, last_failure_at, coalesce(octet_length(original_value), 0)`
	switch m {
	case whole:
		c += `, original_key, original_value, original_headers, original_wire`
	case preview:
		c += `, original_key, substring(original_value FROM 1 FOR ` + previewParam + `), original_headers, original_wire`
	}
	return c
}

// scanRecord reads one row of cols(…, m).
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
		&first, &last, &r.ValueSize}
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
