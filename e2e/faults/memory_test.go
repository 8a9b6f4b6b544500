//go:build faults

// One file, over the usual length: the bounded-memory cases of the keeper
// and replay-all share the child-process harness and the report they are
// measured by.

package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// The child process of TestReplayAllMemory and TestKeeperMemory is this
// test binary run with envMemChild set (and envChild unset, so that
// TestMain runs the test); the other variables tell it what to do and
// where to write its report.
const (
	envMemChild   = "FAULTS_MEMORY_CHILD"
	envMemSchema  = "FAULTS_MEMORY_SCHEMA"
	envMemDLQ     = "FAULTS_MEMORY_DLQ"
	envMemReport  = "FAULTS_MEMORY_REPORT"
	envMemEntries = "FAULTS_MEMORY_ENTRIES" // overrides memEntries or keeperEntries, to measure by hand
)

const (
	// memEntries dead letters are replayed, each with a memPayload-byte
	// value: about 98 MiB of payload, so that holding them at once (or
	// any sizeable fraction of them) would show in the peak RSS.
	memEntries = 100_000
	memPayload = 1024
	// The child reads its peak RSS after memWarm entries, when the
	// connection pools, the Kafka client's buffers and the heap of the
	// steady state exist, and again at the end.
	memWarm = 10_000
	// memGrowthBound bounds the growth of the child's peak RSS (with
	// -race: of the memory its Go runtime mapped, see below) from the first
	// reading to the end. ReplayAll holds one page of records (100, about
	// 100 KiB of payload) at a time, so a streaming replay grows by noise
	// only: GC pacing (the heap may reach twice the live heap), the
	// scavenger's lag; measured: 0.0 MiB. The 90,000 entries replayed after
	// the first reading carry 88 MiB of payload alone (more once decoded
	// into records and copied into Kafka batches): an implementation that
	// kept them, or half of them, exceeds the bound.
	memGrowthBound = 48 << 20
	// memWorker is the configured worker of the replayed DLQ: its retry
	// topic is the replays' target.
	memWorker = "w"
)

const (
	// TestKeeperMemory's backlog: keeperEntries dead letters with
	// keeperPayload-byte values, 413 MiB of envelopes, far above what the
	// keeper may hold. (Fewer and larger than the replayed ones: the
	// keeper's cost is per dead letter, its memory per byte.)
	keeperEntries = 50_000
	keeperPayload = 8 << 10
	// keeperBound bounds the growth of the keeper's peak RSS (with -race:
	// of the memory its Go runtime mapped) from its start to its end. It
	// holds what its source prefetches, whatever the backlog: per
	// partition at most kafka.Config.MaxBufferedBytes (4 MiB) plus one
	// fetch, franz-go's fetch responses, the records being decoded, and as
	// much again as GC headroom (the heap may reach twice the live heap
	// before a collection). Measured: 102 MiB (93 MiB with 100,000 dead
	// letters of 4 KiB, 107 MiB with 20,000 of 4 KiB: the plateau does not follow
	// the backlog), 78 MiB of Go-mapped memory with -race. A keeper that
	// held half the backlog would exceed it.
	keeperBound = 192 << 20
)

// memReport is what a child tells the parent.
type memReport struct {
	Err string
	// Done counts the entries the child handled: replayed, or stored by
	// the keeper; Redelivered, the dead letters the keeper was offered
	// again after storing them.
	Done, Redelivered int64
	Progress          operate.Progress // of ReplayAll
	Elapsed           time.Duration
	// Peak RSS (VmHWM) and the Go runtime's memory before the work, after
	// memWarm entries, after half of them and at the end; RSS (VmRSS) at
	// the end; bytes.
	HWM    [4]int64
	Go     [4]goMem
	RSSEnd int64
}

// The readings of a memReport.
const (
	atStart = iota
	atWarm
	atHalf
	atEnd
)

// read takes reading i, once.
func (r *memReport) read(i int) {
	if r.HWM[i] != 0 {
		return
	}
	v, err := procStatus("VmHWM")
	if err != nil && r.Err == "" {
		r.Err = err.Error()
	}
	r.HWM[i], r.Go[i] = v, goMemory()
}

// goMem is the Go runtime's memory at one reading, in bytes.
type goMem struct {
	Total, HeapObjects uint64
	Goroutines         int
}

func goMemory() goMem {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return goMem{Total: s[0].Value.Uint64(), HeapObjects: s[1].Value.Uint64(), Goroutines: runtime.NumGoroutine()}
}

// TestReplayAllMemory (issue 7, bounded memory) replays 100,000 dead
// letters of 1 KiB from PostgreSQL to Kafka with operate.Ops.ReplayAll and
// checks that the peak RSS of the replaying process stays flat and that
// every entry was replayed exactly once: 100,000 replayed, none pending,
// 100,000 replay audit rows, 100,000 records on the worker's retry topic (its
// route), lost 0,
// duplicates 0 (the table's row). The replay runs in a child process (this
// test binary again), so that the RSS measured is redrive's alone: the
// Kafka cluster (kfake, which keeps every record in memory), the bulk load
// and the checks stay in this process.
//
// It is in the faults lane, not in make test, for its time: ReplayAll
// makes two status changes per entry (a chunk of entries at a time) and
// awaits each publish's acknowledgement (its documented protocol), about
// 2,000 entries/s here. FAULTS_MEMORY_ENTRIES=1000000 runs it at a
// million (7 min).
func TestReplayAllMemory(t *testing.T) {
	if os.Getenv(envMemChild) != "" {
		replayAllChild(t)
		return
	}
	n := entriesToHandle(t, memEntries)
	ctx := t.Context()
	start := time.Now()

	// PostgreSQL: a schema of its own with the tables of pgstore's
	// migrations, the entries bulk-loaded.
	schema := "faults_" + broker.NewMessageID()[:12]
	st := openStore(t, testenv.PostgreSQL.URL(), schema)
	const dlqName, topic = "memory.dlq", "memory"
	loadEntries(t, st, dlqName, topic, n)
	loaded := time.Since(start)

	// Kafka: an in-process cluster with the worker's retry topic, where
	// its replays go (the worker "w" of the topic: its route).
	_, brokers := kafkatest.Fake(t)
	adm := kadm.NewClient(newKgo(t, kgo.SeedBrokers(brokers...)))
	target := kafka.Route(topic, memWorker).Target
	if _, err := adm.CreateTopic(ctx, 3, -1, nil, target); err != nil {
		t.Fatalf("create topic %s: %v", target, err)
	}

	// The replay, in a child process.
	r := runMemChild(t, "TestReplayAllMemory", envBrokers+"="+strings.Join(brokers, ","),
		envMemSchema+"="+schema, envMemDLQ+"="+dlqName)
	t.Logf("ReplayAll of %d entries of %d B in %v (%.0f entries/s): %+v", n, memPayload,
		r.Elapsed.Round(time.Millisecond), float64(r.Progress.Replayed)/r.Elapsed.Seconds(), r.Progress)
	checkFlat(t, r, n, "ReplayAll")
	if want := (operate.Progress{Total: int64(n), Replayed: int64(n), Done: true}); r.Progress != want {
		t.Errorf("progress = %+v, want %+v", r.Progress, want)
	}

	// Every entry replayed once, with its audit row.
	for _, c := range []struct {
		status dlq.Status
		want   int64
	}{{dlq.StatusPending, 0}, {dlq.StatusReplaying, 0}, {dlq.StatusReplayed, int64(n)}} {
		got, err := st.Count(ctx, dlq.Query{DLQ: dlqName, Status: c.status})
		if err != nil {
			t.Fatalf("count %s: %v", c.status, err)
		}
		if got != c.want {
			t.Errorf("%d entries %s, want %d", got, c.status, c.want)
		}
	}
	var audits, audited, others int64
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE action = $2), count(DISTINCT entry_id) FILTER (WHERE action = $2),
			count(*) FILTER (WHERE action <> $2) FROM audit_log WHERE dlq = $1`,
		dlqName, dlq.ActionReplay).Scan(&audits, &audited, &others); err != nil {
		t.Fatalf("count audit rows: %v", err)
	}
	if audits != int64(n) || audited != int64(n) || others != 0 {
		t.Errorf("audit: %d replay rows for %d entries and %d other rows, want %d for %d and none", audits, audited, others, n, n)
	}

	// Every entry arrived at the worker's retry topic: read it to its end.
	arrived := sourceRecords(t, brokers, target)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = dlq.ReplayedFrom(dlqName, entryID(i))
	}
	records := 0
	for _, c := range arrived {
		records += c
	}
	row := account(t, keys, arrived, nil)
	t.Logf("retry topic: %d records of %d entries; %d replay audit rows; load %v, whole test %v",
		records, len(arrived), audits, loaded.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if row.dups != 0 || records != n {
		t.Errorf("retry topic: %d records for %d entries, %d duplicates: every entry must be replayed exactly once", records, n, row.dups)
	}
}

// entriesToHandle is def, or envMemEntries when set.
func entriesToHandle(t *testing.T, def int) int {
	t.Helper()
	s := os.Getenv(envMemEntries)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 2*memWarm {
		t.Fatalf("%s=%q: want a number of at least %d", envMemEntries, s, 2*memWarm)
	}
	return n
}

// TestKeeperMemory (issue 7, bounded memory) is TestReplayAllMemory's
// counterpart for the keeper: 50,000 dead letters of 8 KiB wait in a
// Kafka DLQ topic; a keeper in a child process stores them all in
// PostgreSQL, and its peak RSS stays flat: what it holds is bounded by its
// source's prefetch (the Kafka consumer's per-partition buffer and
// franz-go's fetches), not by the backlog. Every dead letter is stored
// once (the store's count, the table's row).
func TestKeeperMemory(t *testing.T) {
	if os.Getenv(envMemChild) != "" {
		keeperChild(t)
		return
	}
	n := entriesToHandle(t, keeperEntries)
	ctx := t.Context()
	start := time.Now()
	schema := "faults_" + broker.NewMessageID()[:12]
	st := openStore(t, testenv.PostgreSQL.URL(), schema)
	topic := "kmemory"
	dlqName := kafka.DLQTopic(topic)

	// The backlog: n envelopes in the DLQ topic of an in-process cluster.
	_, brokers := kafkatest.Fake(t)
	cl := newKgo(t, kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5*time.Millisecond))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, -1, nil, dlqName); err != nil {
		t.Fatalf("create topic %s: %v", dlqName, err)
	}
	// One envelope, encoded once (escaping 4 KiB is slow with -race), with
	// a fixed-width id placeholder that each dead letter replaces.
	const placeholder = "keeper-??????"
	envelope, err := kafka.EncodeEnvelope(dlq.Entry{MessageID: placeholder, OriginalTopic: topic, OriginalPartition: 0, OriginalOffset: 0,
		OriginalKey: []byte(placeholder), OriginalValue: bytes.Repeat([]byte("x"), keeperPayload),
		ErrorClass: "TimeoutError", ErrorMessage: "upstream timed out", Reason: string(driver.ReasonPermanent), RetryCount: 3,
		Worker: "g", Source: topic, FirstFailureAt: start, LastFailureAt: start})
	if err != nil {
		t.Fatalf("envelope: %v", err)
	}
	ids := make([]string, n)
	var backlog int64
	const batch = 1000
	for i := 0; i < n; i += batch {
		recs := make([]*kgo.Record, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			ids[j] = fmt.Sprintf("keeper-%06d", j)
			v := bytes.ReplaceAll(envelope, []byte(placeholder), []byte(ids[j]))
			recs = append(recs, &kgo.Record{Topic: dlqName, Key: []byte(ids[j]), Value: v})
			backlog += int64(len(v))
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce the backlog: %v", err)
		}
	}
	produced := time.Since(start)

	r := runMemChild(t, "TestKeeperMemory", envBrokers+"="+strings.Join(brokers, ","),
		envMemSchema+"="+schema, envMemDLQ+"="+dlqName, envMemEntries+"="+strconv.Itoa(n))
	t.Logf("keeper: %d dead letters of %d B (a backlog of %.0f MiB) stored in %v (%.0f/s), %d offered again after being stored",
		r.Done, keeperPayload, float64(backlog)/(1<<20), r.Elapsed.Round(time.Millisecond), float64(r.Done)/r.Elapsed.Seconds(), r.Redelivered)
	checkFlat(t, r, n, "keeper")
	// The keeper reaches its plateau before the first reading (it fetches
	// ahead at once), so flat after it says little about the backlog:
	// what it uses in all must also stay far below the backlog.
	used, measure := r.HWM[atEnd]-r.HWM[atStart], "peak RSS"
	if raceEnabled() {
		used, measure = int64(r.Go[atEnd].Total)-int64(r.Go[atStart].Total), "memory mapped by the Go runtime"
	}
	t.Logf("keeper: %s grew by %.1f MiB in all (bound %d MiB) for a backlog of %.0f MiB",
		measure, float64(used)/(1<<20), keeperBound>>20, float64(backlog)/(1<<20))
	if used > keeperBound {
		t.Errorf("keeper: %s grew by %.1f MiB, over the %d MiB bound, for a backlog of %.0f MiB: it does not stream",
			measure, float64(used)/(1<<20), keeperBound>>20, float64(backlog)/(1<<20))
	}

	got := stored(t, st, dlqName)
	row := account(t, ids, nil, got)
	t.Logf("store: %d records of %d dead letters; backlog produced in %v, whole test %v",
		len(got), n, produced.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if row.dups != 0 || r.Done != int64(n) {
		t.Errorf("the keeper stored %d of %d dead letters, %d duplicates", r.Done, n, row.dups)
	}
}

// keeperChild is the keeping process: a keeper of the DLQ topic into the
// store until it stored envMemEntries dead letters, with readings of its
// memory, reported in a file.
func keeperChild(t *testing.T) {
	var rep memReport
	defer writeReport(t, &rep)
	n, err := strconv.ParseInt(os.Getenv(envMemEntries), 10, 64)
	if err != nil {
		rep.Err = err.Error()
		return
	}
	// The keeper stops once every dead letter is stored, or fails after
	// a generous while.
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	st, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Config{Schema: os.Getenv(envMemSchema), MaxConns: 4, Logger: quiet})
	if err != nil {
		rep.Err = err.Error()
		return
	}
	defer st.Close()
	b, err := kafka.New(ctx, kafkatest.Config(strings.Split(os.Getenv(envBrokers), ",")))
	if err != nil {
		rep.Err = err.Error()
		return
	}
	defer b.Close()
	var mu sync.Mutex // guards rep while the keeper runs
	counted := &insertCounter{Store: st, inserted: func(stored bool) {
		mu.Lock()
		defer mu.Unlock()
		if !stored {
			rep.Redelivered++
			return
		}
		rep.Done++
		if rep.Done == memWarm {
			rep.read(atWarm)
		}
		if rep.Done == n/2 {
			rep.read(atHalf)
		}
		if rep.Done == n {
			rep.read(atEnd)
			cancel()
		}
	}}
	k, err := keeper.New(keeper.Config{Source: b, Store: counted, Broker: kafka.Name,
		DLQs: map[string]broker.Severity{os.Getenv(envMemDLQ): broker.SeverityWarning}, Logger: quiet})
	if err != nil {
		rep.Err = err.Error()
		return
	}
	rep.read(atStart)
	start := time.Now()
	err = k.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	rep.Elapsed = time.Since(start)
	if rep.Done < n {
		rep.Err = fmt.Sprintf("the keeper stopped after storing %d of %d dead letters: %v (%v)", rep.Done, n, err, ctx.Err())
	}
}

// insertCounter calls inserted after every successful Insert: true when the
// record is new.
type insertCounter struct {
	dlq.Store
	inserted func(stored bool)
}

// Insert implements dlq.Store.
func (c *insertCounter) Insert(ctx context.Context, r dlq.Record) (dlq.Record, bool, error) {
	stored, inserted, err := c.Store.Insert(ctx, r)
	if err == nil {
		c.inserted(inserted)
	}
	return stored, inserted, err
}

// InsertBatch implements dlq.Store: the keeper's path.
func (c *insertCounter) InsertBatch(ctx context.Context, rs []dlq.Record) ([]dlq.InsertResult, error) {
	res, err := c.Store.InsertBatch(ctx, rs)
	for _, r := range res {
		if r.Err == nil {
			c.inserted(r.Inserted)
		}
	}
	return res, err
}

// runMemChild runs test in a child process (this test binary) with env
// added and returns its report.
func runMemChild(t *testing.T, test string, env ...string) memReport {
	t.Helper()
	return startMemChild(t, test, env...)()
}

// startMemChild starts test in a child process (this test binary, with
// envMemChild set, its report file and the database URL without
// synchronous commits) and returns a function that waits for it and
// returns its report.
func startMemChild(t *testing.T, test string, env ...string) (wait func() memReport) {
	t.Helper()
	reportFile := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(),
		envMemChild+"=1",
		envMemReport+"="+reportFile,
		"DATABASE_URL="+noSyncCommit(testenv.PostgreSQL.URL()),
	), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("child: %v", err)
	}
	return func() memReport {
		t.Helper()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v\n%s", err, out.String())
		}
		raw, err := os.ReadFile(reportFile)
		if err != nil {
			t.Fatalf("the child wrote no report: %v\n%s", err, out.String())
		}
		var r memReport
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("child report %q: %v", raw, err)
		}
		if r.Err != "" {
			t.Errorf("child: %s", r.Err)
		}
		return r
	}
}

// checkFlat logs the readings of a child that handled n entries with what
// and fails t when its memory grew by more than memGrowthBound after the
// first memWarm entries.
func checkFlat(t *testing.T, r memReport, n int, what string) {
	t.Helper()
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	for i, v := range r.HWM {
		if v <= 0 || r.Go[i].Total == 0 {
			t.Fatalf("the child did not take reading %d: %+v", i, r)
		}
	}
	growth := r.HWM[atEnd] - r.HWM[atWarm]
	t.Logf("%s: peak RSS %.1f MiB before, %.1f MiB after %d entries, %.1f MiB after %d, %.1f MiB at the end "+
		"(growth %.1f MiB); RSS at the end %.1f MiB", what,
		mib(r.HWM[atStart]), mib(r.HWM[atWarm]), memWarm, mib(r.HWM[atHalf]), n/2, mib(r.HWM[atEnd]), mib(growth), mib(r.RSSEnd))
	g := r.Go
	goGrowth := int64(g[atEnd].Total) - int64(g[atWarm].Total)
	t.Logf("%s: its Go runtime: %.1f, %.1f, %.1f, %.1f MiB mapped (growth %.1f MiB); %.1f, %.1f, %.1f, %.1f MiB of heap objects; %d, %d, %d, %d goroutines",
		what, mib(int64(g[0].Total)), mib(int64(g[1].Total)), mib(int64(g[2].Total)), mib(int64(g[3].Total)), mib(goGrowth),
		mib(int64(g[0].HeapObjects)), mib(int64(g[1].HeapObjects)), mib(int64(g[2].HeapObjects)), mib(int64(g[3].HeapObjects)),
		g[0].Goroutines, g[1].Goroutines, g[2].Goroutines, g[3].Goroutines)
	measure := "peak RSS"
	if raceEnabled() {
		// The race runtime's own metadata (outside Go's heap) grows with
		// every synchronisation event, about 1 KiB per entry here: it is
		// not the program's memory (golang/go#26813, #37233). With -race
		// the bound applies to all the memory the Go runtime mapped
		// (heap, stacks, runtime metadata), which holds whatever redrive
		// would keep; without it, to the peak RSS.
		measure, growth = "memory mapped by the Go runtime", goGrowth
		t.Logf("race detector on: the bound applies to the memory the Go runtime mapped, not to the RSS")
	}
	if growth > memGrowthBound {
		t.Errorf("%s: %s grew by %.1f MiB while handling entries %d to %d, over the %d MiB bound: it does not stream",
			what, measure, mib(growth), memWarm, n, memGrowthBound>>20)
	}
}

// noSyncCommit returns the database URL (or key=value DSN) u with
// synchronous_commit off for its sessions, for the replaying child.
// ReplayAll commits two transactions per entry (the claim; the status
// change with its audit row), and each waits for its WAL flush: at a few
// milliseconds per flush on a test machine's disk, 100,000 entries would
// take ten minutes. Off, a commit returns before its flush; transactions,
// locks and audit rows are unchanged, only the durability of the last
// commits against a crash of the database server (which this test does not
// exercise) is given up.
func noSyncCommit(u string) string {
	switch {
	case !strings.Contains(u, "://"):
		return u + " synchronous_commit=off"
	case strings.Contains(u, "?"):
		return u + "&synchronous_commit=off"
	default:
		return u + "?synchronous_commit=off"
	}
}

// entryID is the id of the i-th entry, Kafka style (partition-offset).
func entryID(i int) string { return "0-" + strconv.Itoa(i) }

// loadEntries writes n pending entries of dlqName, dead letters of topic,
// with COPY into the table that pgstore's migrations made: through the
// store's Insert (a transaction each) they would take minutes.
func loadEntries(t *testing.T, st *pgstore.Store, dlqName, topic string, n int) {
	t.Helper()
	ctx := t.Context()
	received := dlq.StoreTime(time.Now().Add(-time.Hour))
	payload := bytes.Repeat([]byte("x"), memPayload)
	i := 0
	rows := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		id := entryID(i)
		value := append(fmt.Appendf(nil, "%08d", i), payload[8:]...)
		row := []any{dlqName, id, "memory-" + id, string(kafka.Name), string(broker.SeverityWarning), string(dlq.StatusPending),
			received, received.Add(time.Duration(i) * time.Microsecond),
			broker.NewMessageID(), topic, int32(i % 3), int64(i), []byte(id), value,
			"TimeoutError", "upstream timed out", driver.ReasonPermanent, int32(3)}
		i++
		return row, nil
	})
	copied, err := st.Pool().CopyFrom(ctx, pgx.Identifier{"dlq_entries"}, []string{
		"dlq", "id", "identity", "broker", "severity", "status", "status_changed_at", "received_at",
		"message_id", "original_topic", "original_partition", "original_offset", "original_key", "original_value",
		"error_class", "error_message", "reason", "retry_count",
	}, rows)
	if err != nil || copied != int64(n) {
		t.Fatalf("bulk load: %d of %d entries copied: %v", copied, n, err)
	}
	// The store reads them as its own.
	r, err := st.Get(ctx, dlqName, entryID(n-1))
	if err != nil || r.Status != dlq.StatusPending || len(r.Entry.OriginalValue) != memPayload || r.Entry.OriginalTopic != topic {
		t.Fatalf("bulk-loaded entry reads back as %+v, %v", r, err)
	}
}

// newKgo returns a franz-go client closed when t ends.
func newKgo(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// sourceRecords reads topic from its start to its end offsets and counts
// its records by their x-redrive-replayed-from header.
func sourceRecords(t testing.TB, brokers []string, topic string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(newKgo(t, kgo.SeedBrokers(brokers...))).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	left := map[int32]int64{} // partition → its end offset, not reached yet
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", topic, o.Partition, o.Err)
		}
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	cl := newKgo(t, kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	out := map[string]int{}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %v; partitions not read to their end offsets: %v", topic, err, left)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == broker.HeaderReplayedFrom {
					out[string(h.Value)]++
				}
			}
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	return out
}

// replayAllChild is the replaying process: ReplayAll of the DLQ from the
// store to the Kafka cluster, with readings of its memory, reported in a
// file.
func replayAllChild(t *testing.T) {
	ctx := t.Context()
	var rep memReport
	defer writeReport(t, &rep)
	quiet := slog.New(slog.DiscardHandler)
	st, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Config{Schema: os.Getenv(envMemSchema), MaxConns: 4, Logger: quiet})
	if err != nil {
		rep.Err = err.Error()
		return
	}
	defer st.Close()
	b, err := kafka.New(ctx, kafkatest.Config(strings.Split(os.Getenv(envBrokers), ",")))
	if err != nil {
		rep.Err = err.Error()
		return
	}
	defer b.Close()
	ops, err := operate.New(operate.Config{Store: st, Republisher: b, Logger: quiet,
		Routes: []dlq.Route{kafka.Route(strings.TrimSuffix(os.Getenv(envMemDLQ), ".dlq"), memWorker)}})
	if err != nil {
		rep.Err = err.Error()
		return
	}
	rep.read(atStart)
	start := time.Now()
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: os.Getenv(envMemDLQ)}, operate.ReplayAllOptions{
		Actor: "faults-memory",
		Progress: func(p operate.Progress) {
			if p.Replayed == memWarm {
				rep.read(atWarm)
			}
			if p.Replayed == p.Total/2 {
				rep.read(atHalf)
			}
		},
	})
	rep.Elapsed, rep.Progress, rep.Done = time.Since(start), p, p.Replayed
	if err != nil {
		rep.Err = err.Error()
		return
	}
	rep.read(atEnd)
}

// writeReport writes rep where the parent expects it, with the RSS at the
// end.
func writeReport(t *testing.T, rep *memReport) {
	var err error
	if rep.RSSEnd, err = procStatus("VmRSS"); err != nil && rep.Err == "" {
		rep.Err = err.Error()
	}
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(os.Getenv(envMemReport), b, 0o600); err != nil {
		t.Errorf("write report: %v", err)
	}
}

// raceEnabled reports whether this binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	return ok && slices.ContainsFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == "-race" && s.Value == "true" })
}

// procStatus reads a kB field of /proc/self/status, in bytes.
func procStatus(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/self/status: %s: %q: %w", field, value, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/self/status: no %s", field)
}
