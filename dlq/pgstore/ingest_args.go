package pgstore

import (
	"strings"
	"time"

	"github.com/redrive/redrive/dlq"
)

// batchArgs are the column arrays of insertSQL, the records going to
// partitions into, and whether each id is one without time (timeless).
func batchArgs(rs []dlq.Record, into []int32) []any {
	n := len(rs)
	var (
		dlqs, ids, idents, brokers, sevs, statuses, bys = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		changed, received                               = make([]time.Time, n), make([]time.Time, n)
		versions, offsets                               = make([]int64, n), make([]int64, n)
		msgIDs, topics, classes, msgs, stacks, reasons  = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		workers, instances, sources                     = make([]string, n), make([]string, n), make([]string, n)
		parts, retries                                  = make([]int32, n), make([]int32, n)
		keys, values, headers, wires                    = make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n)
		firsts, lasts                                   = make([]*time.Time, n), make([]*time.Time, n)
		fingerprints                                    = make([]string, n)
		timeless                                        = make([]bool, n)
	)
	for i, r := range rs {
		e := &r.Entry
		dlqs[i], ids[i], idents[i], brokers[i], sevs[i], statuses[i], bys[i] = r.DLQ, r.ID, r.Identity, string(r.Broker), r.Severity, string(r.Status), r.StatusBy
		changed[i], received[i], versions[i] = r.StatusChangedAt, r.ReceivedAt, r.Version
		msgIDs[i], topics[i], parts[i], offsets[i] = e.MessageID, e.OriginalTopic, e.OriginalPartition, e.OriginalOffset
		keys[i], values[i], headers[i], wires[i] = e.OriginalKey, e.OriginalValue, encodeHeaders(e.OriginalHeaders), e.OriginalWire
		classes[i], msgs[i], stacks[i], reasons[i], retries[i] = e.ErrorClass, e.ErrorMessage, e.StackTrace, e.Reason, int32(e.RetryCount)
		workers[i], instances[i], sources[i] = e.Worker, e.WorkerInstance, e.Source
		firsts[i], lasts[i] = nullTime(e.FirstFailureAt), nullTime(e.LastFailureAt)
		fingerprints[i], timeless[i] = r.Fingerprint, idWeek(r.ID) == 0
	}
	return []any{dlqs, ids, idents, brokers, sevs, statuses, changed, bys, versions, received,
		msgIDs, topics, parts, offsets, keys, values, headers, wires,
		classes, msgs, stacks, reasons, retries, workers, instances, sources, firsts, lasts, fingerprints, into, timeless}
}

// InsertColumns returns the columns of dlq_entries an insert writes, for
// tools that load rows themselves (the store benchmark's raw COPY
// reference); InsertValues returns a prepared record's values for them.
func InsertColumns() []string {
	cols := strings.Split(insertCols, ",")
	for i, c := range cols {
		cols[i] = strings.TrimSpace(c)
	}
	return cols
}

// InsertValues returns the values of r, prepared by dlq.Record.PrepareInsert,
// for InsertColumns, as the store writes them, in partition 0.
func InsertValues(r dlq.Record) []any { return insertValues(r, 0) }

// insertValues returns the values of r for InsertColumns, in partition
// part.
func insertValues(r dlq.Record, part int32) []any {
	e := &r.Entry
	return []any{r.DLQ, r.ID, r.Identity, r.Broker, r.Severity, string(r.Status), r.StatusChangedAt, r.StatusBy, r.Version, r.ReceivedAt,
		e.MessageID, e.OriginalTopic, e.OriginalPartition, e.OriginalOffset, e.OriginalKey, e.OriginalValue, encodeHeaders(e.OriginalHeaders), e.OriginalWire,
		e.ErrorClass, e.ErrorMessage, e.StackTrace, e.Reason, int32(e.RetryCount), e.Worker, e.WorkerInstance, e.Source,
		nullTime(e.FirstFailureAt), nullTime(e.LastFailureAt), r.Fingerprint, part}
}

// stagingColumns are the columns of the staging table a batch is copied
// into: InsertColumns, then timeless (the id carries no time: its part is
// recorded in dlq_id_parts).
func stagingColumns() []string { return append(InsertColumns(), "timeless") }

// stagingValues returns the values of r for stagingColumns, in partition
// part.
func stagingValues(r dlq.Record, part int32) []any {
	return append(insertValues(r, part), idWeek(r.ID) == 0)
}
