package memstore

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/redrive/redrive/dlq"
)

// maxLine bounds one journal line (a record with its payload).
const maxLine = 512 << 20

// journal appends JSON lines to a file.
type journal struct {
	f    *os.File
	path string
}

// line is one journal line: the whole state of one record after a change,
// and the audit row written with it, or an audit row alone (compaction).
type line struct {
	Rec   *jrec           `json:"rec,omitempty"`
	Audit *dlq.AuditEntry `json:"audit,omitempty"`
}

// jrec is a record as the journal writes it; keys, values and headers are
// base64 (byte for byte), nil kept apart from empty.
type jrec struct {
	Seq             int64      `json:"seq"`
	ID              string     `json:"id"`
	Broker          string     `json:"broker"`
	DLQ             string     `json:"dlq"`
	Identity        string     `json:"identity"`
	Severity        string     `json:"severity"`
	ReceivedAt      time.Time  `json:"received_at"`
	Status          dlq.Status `json:"status"`
	StatusChangedAt time.Time  `json:"status_changed_at"`
	StatusBy        string     `json:"status_by"`
	Version         int64      `json:"version"`

	MessageID         string      `json:"message_id"`
	OriginalTopic     string      `json:"original_topic"`
	OriginalPartition int32       `json:"original_partition"`
	OriginalOffset    int64       `json:"original_offset"`
	Key               []byte      `json:"key"`
	Value             []byte      `json:"value"`
	Headers           [][2][]byte `json:"headers"`
	Wire              []byte      `json:"wire,omitempty"`
	ErrorClass        string      `json:"error_class"`
	ErrorMessage      string      `json:"error_message"`
	StackTrace        string      `json:"stack_trace"`
	Reason            string      `json:"reason"`
	RetryCount        int         `json:"retry_count"`
	Worker            string      `json:"worker"`
	WorkerInstance    string      `json:"worker_instance"`
	Source            string      `json:"source"`
	FirstFailureAt    time.Time   `json:"first_failure_at"`
	LastFailureAt     time.Time   `json:"last_failure_at"`
	// Fingerprint is absent from journals written before it was kept:
	// decode computes it.
	Fingerprint string `json:"fingerprint,omitempty"`
}

func encodeRec(n *rec) *jrec {
	r, e := &n.r, &n.r.Entry
	j := &jrec{
		Seq: n.seq, ID: r.ID, Broker: string(r.Broker), DLQ: r.DLQ, Identity: r.Identity, Severity: r.Severity,
		ReceivedAt: r.ReceivedAt, Status: r.Status, StatusChangedAt: r.StatusChangedAt, StatusBy: r.StatusBy, Version: r.Version,
		MessageID: e.MessageID, OriginalTopic: e.OriginalTopic, OriginalPartition: e.OriginalPartition, OriginalOffset: e.OriginalOffset,
		Key: e.OriginalKey, Value: e.OriginalValue, Wire: e.OriginalWire,
		ErrorClass: e.ErrorClass, ErrorMessage: e.ErrorMessage, StackTrace: e.StackTrace, Reason: e.Reason, RetryCount: e.RetryCount,
		Worker: e.Worker, WorkerInstance: e.WorkerInstance, Source: e.Source,
		FirstFailureAt: e.FirstFailureAt, LastFailureAt: e.LastFailureAt, Fingerprint: r.Fingerprint,
	}
	if e.OriginalHeaders != nil {
		j.Headers = make([][2][]byte, 0, len(e.OriginalHeaders))
		for _, k := range slices.Sorted(maps.Keys(e.OriginalHeaders)) {
			j.Headers = append(j.Headers, [2][]byte{[]byte(k), []byte(e.OriginalHeaders[k])})
		}
	}
	return j
}

func (j *jrec) decode() *rec {
	n := &rec{seq: j.Seq, r: dlq.Record{
		ID: j.ID, Broker: j.Broker, DLQ: j.DLQ, Identity: j.Identity, Severity: j.Severity,
		ReceivedAt: j.ReceivedAt, Status: j.Status, StatusChangedAt: j.StatusChangedAt, StatusBy: j.StatusBy, Version: j.Version,
		ValueSize: int64(len(j.Value)),
		Entry: dlq.Entry{
			MessageID: j.MessageID, OriginalTopic: j.OriginalTopic, OriginalPartition: j.OriginalPartition, OriginalOffset: j.OriginalOffset,
			OriginalKey: j.Key, OriginalValue: j.Value, OriginalWire: j.Wire,
			ErrorClass: j.ErrorClass, ErrorMessage: j.ErrorMessage, StackTrace: j.StackTrace, Reason: j.Reason, RetryCount: j.RetryCount,
			Worker: j.Worker, WorkerInstance: j.WorkerInstance, Source: j.Source,
			FirstFailureAt: j.FirstFailureAt, LastFailureAt: j.LastFailureAt,
		},
	}}
	n.r.Fingerprint = j.Fingerprint
	if n.r.Fingerprint == "" {
		n.r.Fingerprint = dlq.Fingerprint(n.r.Entry)
	}
	if j.Headers != nil {
		n.r.Entry.OriginalHeaders = make(map[string]string, len(j.Headers))
		for _, kv := range j.Headers {
			n.r.Entry.OriginalHeaders[string(kv[0])] = string(kv[1])
		}
	}
	return n
}

// append writes l as one line (one write call, so a crash tears at most
// the last line).
func (j *journal) append(l line, sync bool) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("journal: encode: %w", err)
	}
	b = append(b, '\n')
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("journal %s: write: %w", j.path, err)
	}
	if sync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("journal %s: sync: %w", j.path, err)
		}
	}
	return nil
}

func (j *journal) close() error {
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("memstore: close journal %s: %w", j.path, err)
	}
	return nil
}

// Open returns a store journaled to path: the journal is read (created
// when missing), compacted (rewritten with one line per record and audit
// row, atomically) and then appended to on every change. A torn last line
// (a crash in the middle of a write) is dropped with a warning; damage
// anywhere else is an error.
func Open(path string, opts Config) (*Store, error) {
	s := New(opts)
	if err := s.load(path); err != nil {
		return nil, err
	}
	if err := s.compact(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("memstore: open journal: %w", err)
	}
	s.journal = &journal{f: f, path: path}
	return s, nil
}

// load reads the journal at path into s.
func (s *Store) load(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("memstore: open journal: %w", err)
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 64<<10)
	recs := map[key]*rec{}
	for lineNo := 1; ; lineNo++ {
		b, err := readLine(rd)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("memstore: read journal %s: line %d: %w", path, lineNo, err)
		}
		complete := len(b) > 0 && b[len(b)-1] == '\n'
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(b, &l); err != nil || (l.Rec == nil && l.Audit == nil) {
			if !complete { // the last write was torn by a crash
				s.opts.Logger.Warn("memstore: dropping a torn last line of the journal", "path", path, "line", lineNo)
				break
			}
			return fmt.Errorf("memstore: read journal %s: line %d is damaged: %v", path, lineNo, err)
		}
		if l.Rec != nil {
			n := l.Rec.decode()
			recs[key{n.r.DLQ, n.r.ID}] = n
		}
		if a := l.Audit; a != nil {
			s.audit[key{a.DLQ, a.EntryID}] = append(s.audit[key{a.DLQ, a.EntryID}], *a)
			s.auditSeq = max(s.auditSeq, a.Seq)
		}
	}
	for _, n := range recs {
		s.add(n)
	}
	return nil
}

// readLine reads one line, newline included, of at most maxLine bytes.
func readLine(rd *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(out) > 0:
			return out, nil
		default:
			return nil, err
		}
	}
}

// compact rewrites the journal at path with the state of s.
func (s *Store) compact(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("memstore: compact journal: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	w := bufio.NewWriterSize(tmp, 64<<10)
	enc := json.NewEncoder(w)
	for _, n := range s.recs {
		if err := enc.Encode(line{Rec: encodeRec(n)}); err != nil {
			tmp.Close()
			return fmt.Errorf("memstore: compact journal: %w", err)
		}
	}
	var trail []dlq.AuditEntry
	for _, rows := range s.audit {
		trail = append(trail, rows...)
	}
	slices.SortFunc(trail, func(a, b dlq.AuditEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	for i := range trail {
		if err := enc.Encode(line{Audit: &trail[i]}); err != nil {
			tmp.Close()
			return fmt.Errorf("memstore: compact journal: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("memstore: compact journal: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("memstore: compact journal: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("memstore: compact journal: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("memstore: compact journal: %w", err)
	}
	return nil
}
