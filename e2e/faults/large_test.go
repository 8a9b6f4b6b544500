//go:build faults

// One file, over the usual length: one fault case (large dead letters in
// bounded memory), its child process and its helpers, read together.

package faults

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestLargeDeadLettersMemory (issue 12, bounded memory): 100 dead letters of
// 8 MiB (800 MiB of payloads) wait in PostgreSQL; a daemon in a child
// process (the admin API on the store and a RabbitMQ broker: what serve
// runs) answers 20 concurrent listings, 8 concurrent entry reads and 4
// concurrent payload downloads, then replays all of them with replay-all.
// Its peak RSS (with -race: the memory its Go runtime mapped) grows by less
// than largeBound: listings never load payloads, an entry page loads the
// 64 KiB preview, a download streams 1 MiB chunks, replay-all reads
// payloads in batches of at most 16 MiB. Counted: every entry is replayed
// exactly once (the group queue, drained as it fills, gets 100 messages of
// 8 MiB, none twice); every download is the payload byte for byte.
func TestLargeDeadLettersMemory(t *testing.T) {
	if os.Getenv(envMemChild) != "" {
		largeChild(t)
		return
	}
	ctx := t.Context()
	start := time.Now()
	schema := "faults_" + broker.NewMessageID()[:12]
	st := openStore(t, testenv.PostgreSQL.URL(), schema)

	// RabbitMQ: the worker whose DLQ holds the entries.
	sub := broker.Subscription{Topic: "large." + broker.NewMessageID()[:6], Group: "g"}
	_, prefix := newRabbit(t, sub)
	queue := rabbit.Queue(sub.Topic, sub.Group)
	dlqName := rabbit.DLQ(queue)
	sums := loadLarge(t, st, dlqName, sub, largeEntries)
	loaded := time.Since(start)

	// The replays are drained as they arrive, and counted.
	replays := drainReplays(t, queue, sums)

	dir := t.TempDir()
	addrFile, stopFile := filepath.Join(dir, "addr"), filepath.Join(dir, "stop")
	wait := startMemChild(t, "TestLargeDeadLettersMemory", envMemSchema+"="+schema, envMemDLQ+"="+dlqName,
		envLargePrefix+"="+prefix, envLargeTopic+"="+sub.Topic, envLargeAddr+"="+addrFile, envLargeStop+"="+stopFile)
	base := "http://" + waitFile(t, addrFile)

	// 20 listings, 8 entry reads and 4 downloads at once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	for i := range 20 {
		wg.Go(func() {
			var out struct {
				Entries []admin.Entry `json:"entries"`
			}
			if code := apiGet(base+"/internal/v1/dlq/"+dlqName+"?limit=100&order=oldest", &out); code != http.StatusOK || len(out.Entries) != largeEntries {
				fail("listing %d: %d with %d entries", i, code, len(out.Entries))
				return
			}
			for _, e := range out.Entries {
				if e.PayloadBytes != largePayload {
					fail("listing %d: entry %s of %d bytes", i, e.ID, e.PayloadBytes)
					return
				}
			}
		})
	}
	for i := range 8 {
		wg.Go(func() {
			var d admin.Detail
			id := largeID(i * 7)
			if code := apiGet(base+"/internal/v1/dlq/"+dlqName+"/"+id, &d); code != http.StatusOK || !d.PayloadTruncated ||
				d.PayloadBytes != largePayload || len(d.Payload) > 2*operate.DefaultPayloadPreview {
				fail("entry read %s: %d, truncated %v, %d of %d bytes shown", id, code, d.PayloadTruncated, len(d.Payload), d.PayloadBytes)
			}
		})
	}
	for i := range 4 {
		wg.Go(func() {
			id := largeID(50 + i)
			res, err := http.Get(base + "/internal/v1/dlq/" + dlqName + "/" + id + "/payload")
			if err != nil {
				fail("download %s: %v", id, err)
				return
			}
			defer res.Body.Close()
			h := sha256.New()
			n, err := io.Copy(h, res.Body)
			if err != nil || res.StatusCode != http.StatusOK || n != largePayload || [32]byte(h.Sum(nil)) != sums[id] {
				fail("download %s: %d, %d bytes, byte for byte %v, %v", id, res.StatusCode, n, [32]byte(h.Sum(nil)) == sums[id], err)
			}
		})
	}
	wg.Wait()
	readsDone := time.Since(start)
	for _, f := range failures {
		t.Error(f)
	}

	// Replay-all.
	var started struct {
		Job dlq.Job `json:"job"`
	}
	if code := apiDo(http.MethodPost, base+"/internal/v1/dlq/replay-all?rate=0&topic="+dlqName, &started); code != http.StatusAccepted {
		t.Fatalf("replay-all = %d", code)
	}
	var job struct {
		Job dlq.Job `json:"job"`
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if code := apiGet(base+"/internal/v1/dlq/jobs/"+started.Job.ID, &job); code != http.StatusOK {
			t.Fatalf("job = %d", code)
		}
		if job.Job.State != dlq.JobRunning || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p := job.Job.Progress; job.Job.State != dlq.JobDone || p.Replayed != largeEntries || p.Total != largeEntries {
		t.Errorf("replay-all job = %+v, want %d replayed", job.Job, largeEntries)
	}
	got := replays.wait(t, largeEntries, 2*time.Minute)
	if err := os.WriteFile(stopFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := wait()

	// Memory: from the daemon's start (serving, nothing read) to its end.
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	growth, measure := r.HWM[atEnd]-r.HWM[atStart], "peak RSS"
	if raceEnabled() {
		growth, measure = int64(r.Go[atEnd].Total)-int64(r.Go[atStart].Total), "memory mapped by the Go runtime"
	}
	t.Logf("%d dead letters of %d MiB (%d MiB of payloads): loaded in %v, reads done at %v, replay-all took %v",
		largeEntries, largePayload>>20, largeEntries*largePayload>>20, loaded.Round(time.Millisecond),
		readsDone.Round(time.Millisecond), r.Elapsed.Round(time.Millisecond))
	t.Logf("daemon: peak RSS %.1f MiB at start, %.1f MiB after the reads, %.1f MiB at the end (growth %.1f MiB); Go runtime %.1f → %.1f MiB mapped",
		mib(r.HWM[atStart]), mib(r.HWM[atHalf]), mib(r.HWM[atEnd]), mib(r.HWM[atEnd]-r.HWM[atStart]),
		mib(int64(r.Go[atStart].Total)), mib(int64(r.Go[atEnd].Total)))
	if growth > largeBound {
		t.Errorf("daemon: %s grew by %.1f MiB, over the %d MiB bound: listings, reads or replay-all hold payloads", measure, mib(growth), largeBound>>20)
	}
	keys := make([]string, 0, len(sums))
	for id := range sums {
		keys = append(keys, dlq.ReplayedFrom(dlqName, id))
	}
	row := account(t, keys, got, nil)
	t.Logf("replayed: %d of %d entries arrived, %d lost, %d duplicates, %d corrupt", len(got), largeEntries, row.lost, row.dups, replays.corrupt())
	if row.dups != 0 || replays.corrupt() != 0 || len(got) != largeEntries {
		t.Errorf("replay-all: %d arrived, %d duplicates, %d corrupt of %d: every entry must be replayed exactly once, byte for byte",
			len(got), row.dups, replays.corrupt(), largeEntries)
	}
	if n, err := st.Count(ctx, dlq.Query{DLQ: dlqName, Status: dlq.StatusReplayed}); err != nil || n != largeEntries {
		t.Errorf("%d entries replayed in the store, want %d (%v)", n, largeEntries, err)
	}
}

const (
	// largeEntries dead letters of largePayload bytes.
	largeEntries = 100
	largePayload = 8 << 20
	// largeBound bounds the growth of the daemon's peak RSS (with -race,
	// of the memory its Go runtime mapped). What it may hold at once:
	// replay-all's batch (16 MiB of payloads, two entries here) with the
	// pgx buffer that read it (a DataRow of 8 MiB) and the AMQP frames
	// being written; 4 downloads of 1 MiB chunks; 8 previews of 64 KiB
	// rendered to JSON; 20 listings of 100 brief records; and as much
	// again as GC headroom (the heap may reach twice the live heap).
	// Measured: see docs/reliability.md. Any of the old ways (a listing
	// that loads 100 payloads: 800 MiB; an entry page that loads one: 8
	// MiB each, 64 MiB for 8; a replay-all page of 100: 800 MiB) exceeds
	// it by far.
	largeBound = 96 << 20
)

// Variables of the large child.
const (
	envLargePrefix = "FAULTS_LARGE_PREFIX"
	envLargeTopic  = "FAULTS_LARGE_TOPIC"
	envLargeAddr   = "FAULTS_LARGE_ADDR"
	envLargeStop   = "FAULTS_LARGE_STOP"
)

func largeID(i int) string { return fmt.Sprintf("big-%03d", i) }

// largeBlock is the 512 bytes of pseudo-random bytes a large payload
// repeats: each payload is different (its id first) and compressible by
// PostgreSQL's pglz (a repeat within its first KiB), so that the database
// writes little to disk; it still sends and receives 8 MiB per value.
var largeBlock = func() []byte {
	b := make([]byte, 512)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}()

// largeValue is the payload of entry id: largePayload bytes, id and "|"
// first.
func largeValue(id string) []byte {
	v := bytes.Repeat(largeBlock, largePayload/len(largeBlock))
	copy(v, id+"|")
	return v
}

// loadLarge writes n pending entries of dlqName with largePayload-byte
// payloads: the first with COPY, the others copied from it by the database
// (each with its own id in its first bytes), so that 800 MiB need not
// cross a connection. The entries are dead letters of transient messages
// (their wire form): replayed, they do not make RabbitMQ write 800 MiB to
// disk. It returns the SHA-256 of each payload by id.
func loadLarge(t *testing.T, st *pgstore.Store, dlqName string, sub broker.Subscription, n int) map[string][32]byte {
	t.Helper()
	ctx := t.Context()
	wf, err := wire.Encode(wire.Form{Headers: wire.Table{{Name: "size", Value: int32(largePayload)}},
		Props: &wire.Properties{ContentType: "application/octet-stream", DeliveryMode: amqp.Transient}})
	if err != nil {
		t.Fatal(err)
	}
	received := dlq.StoreTime(time.Now().Add(-time.Hour))
	first := largeID(0)
	rows := [][]any{{dlqName, first, first, string(rabbit.Name), string(broker.SeverityWarning), string(dlq.StatusPending),
		received, received, first, sub.Topic, []byte(first), largeValue(first), wf,
		"TimeoutError", "upstream timed out", driver.ReasonPermanent, int32(3), sub.Group, rabbit.Queue(sub.Topic, sub.Group)}}
	cols := []string{"dlq", "id", "identity", "broker", "severity", "status", "status_changed_at", "received_at",
		"message_id", "original_topic", "original_key", "original_value", "original_wire",
		"error_class", "error_message", "reason", "retry_count", "worker", "source"}
	if _, err := st.Pool().CopyFrom(ctx, pgx.Identifier{"dlq_entries"}, cols, pgx.CopyFromRows(rows)); err != nil {
		t.Fatalf("bulk load: %v", err)
	}
	tag, err := st.Pool().Exec(ctx, `INSERT INTO dlq_entries (`+strings.Join(cols, ", ")+`)
		SELECT dlq, x.id, x.id, broker, severity, status, status_changed_at + i * interval '1 microsecond', received_at + i * interval '1 microsecond',
			x.id, original_topic, convert_to(x.id, 'UTF8'),
			overlay(original_value PLACING convert_to(x.id || '|', 'UTF8') FROM 1), original_wire,
			error_class, error_message, reason, retry_count, worker, source
		FROM dlq_entries, generate_series(1, $2::int - 1) AS i, LATERAL (SELECT 'big-' || lpad(i::text, 3, '0') AS id) x
		WHERE dlq_entries.id = $1 ORDER BY i`, first, n)
	if err != nil || tag.RowsAffected() != int64(n-1) {
		t.Fatalf("bulk load: %d of %d entries copied: %v", tag.RowsAffected(), n-1, err)
	}
	sums := make(map[string][32]byte, n)
	for i := range n {
		id := largeID(i)
		sums[id] = sha256.Sum256(largeValue(id))
	}
	// The store reads them as its own.
	r, err := st.Get(ctx, dlqName, largeID(n-1))
	if err != nil || r.Status != dlq.StatusPending || sha256.Sum256(r.Entry.OriginalValue) != sums[r.ID] || r.ValueSize != largePayload {
		t.Fatalf("bulk-loaded entry %s reads back as %d bytes (%v)", largeID(n-1), len(r.Entry.OriginalValue), err)
	}
	return sums
}

// replayCounter counts the replays arriving on a queue.
type replayCounter struct {
	mu      sync.Mutex
	seen    map[string]int
	bad     int
	changed chan struct{}
}

func (c *replayCounter) corrupt() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bad
}

// wait waits until n distinct replays arrived, then returns the counts.
func (c *replayCounter) wait(t *testing.T, n int, timeout time.Duration) map[string]int {
	t.Helper()
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		ch, got := c.changed, len(c.seen)
		out := make(map[string]int, len(c.seen))
		for k, v := range c.seen {
			out[k] = v
		}
		c.mu.Unlock()
		if got >= n {
			time.Sleep(500 * time.Millisecond) // duplicates, if any, show
			c.mu.Lock()
			defer c.mu.Unlock()
			for k, v := range c.seen {
				out[k] = v
			}
			return out
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%d of %d replays arrived", got, n)
		}
	}
}

// drainReplays consumes queue as a foreign application would and counts
// each message by its x-redrive-replayed-from header, checking its body.
func drainReplays(t *testing.T, queue string, sums map[string][32]byte) *replayCounter {
	t.Helper()
	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(2, 0, false); err != nil {
		t.Fatal(err)
	}
	msgs, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &replayCounter{seen: map[string]int{}, changed: make(chan struct{})}
	go func() {
		for m := range msgs {
			from, _ := m.Headers[broker.HeaderReplayedFrom].(string)
			_, id, _ := strings.Cut(from, "/")
			c.mu.Lock()
			c.seen[from]++
			if sha256.Sum256(m.Body) != sums[id] || m.DeliveryMode != amqp.Transient || m.ContentType != "application/octet-stream" {
				c.bad++
			}
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			_ = m.Ack(false)
		}
	}()
	return c
}

// waitFile waits for the child to write its listen address.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child did not write %s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func apiGet(url string, out any) int { return apiDo(http.MethodGet, url, out) }

func apiDo(method, url string, out any) int {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return 0
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json") // the API's writes take JSON
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return -res.StatusCode
	}
	return res.StatusCode
}

// largeChild is the daemon: the admin API (no auth, loopback) on the store
// and a RabbitMQ broker, with the worker's replay route; it takes its
// readings at start, when the parent's reads are done (the first replay
// arrives, i.e. the job's first Transition), and at the end (the stop
// file).
func largeChild(t *testing.T) {
	var rep memReport
	var mu sync.Mutex // rep is read from the request that starts replay-all
	reading := func(i int) {
		mu.Lock()
		defer mu.Unlock()
		rep.read(i)
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		writeReport(t, &rep)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	st, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Config{Schema: os.Getenv(envMemSchema), MaxConns: 8, Logger: quiet})
	if err != nil {
		rep.Err = err.Error()
		return
	}
	defer st.Close()
	b, err := rabbit.New(ctx, rabbitConfig(os.Getenv(envLargePrefix)))
	if err != nil {
		rep.Err = err.Error()
		return
	}
	defer b.Close()
	half := &halfway{Store: st, read: func() { reading(atHalf) }}
	ops, err := operate.New(operate.Config{Store: half, Republisher: b, Logger: quiet,
		Routes: []dlq.Route{rabbit.Route(os.Getenv(envLargeTopic), "g")}})
	if err != nil {
		rep.Err = err.Error()
		return
	}
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", InsecureNoAuth: true, Logger: quiet})
	if err != nil {
		rep.Err = err.Error()
		return
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rep.Err = err.Error()
		return
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	reading(atStart)
	reading(atWarm)
	if err := os.WriteFile(os.Getenv(envLargeAddr), []byte(ln.Addr().String()), 0o600); err != nil {
		rep.Err = err.Error()
		return
	}
	start := time.Now()
	for {
		if _, err := os.Stat(os.Getenv(envLargeStop)); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			mu.Lock()
			rep.Err = "the parent never said stop: " + ctx.Err().Error()
			mu.Unlock()
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	mu.Lock()
	rep.Elapsed = time.Since(start)
	mu.Unlock()
	reading(atHalf) // no-op when the first replay took it
	reading(atEnd)
}

// halfway takes a reading at the first GetMany: replay-all started, every
// read of the parent is done.
type halfway struct {
	dlq.Store
	once sync.Once
	read func()
}

// GetMany implements dlq.Store.
func (h *halfway) GetMany(ctx context.Context, dlqName string, ids []string) ([]dlq.Record, error) {
	h.once.Do(h.read)
	return h.Store.GetMany(ctx, dlqName, ids)
}
