//go:build faults

package faults

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/jobs"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// childReplica is a `redrive serve` replica as far as replay-all goes: the
// admin API with the replay-all jobs in PostgreSQL, the store's background
// work (the reconciler) and a RabbitMQ republisher.
const childReplica = "replica"

// Variables of the replica child.
const (
	envReplicaSchema = "FAULTS_REPLICA_SCHEMA"
	envReplicaName   = "FAULTS_REPLICA_NAME"
	envReplicaAddr   = "FAULTS_REPLICA_ADDR" // file the child writes its API address to
)

// Replay-all takeover: the entries (FAULTS_REPLICA_ENTRIES overrides
// them, to run it by hand at size), and the job lease of the replicas.
const (
	replicaEntries    = 10_000
	replicaLease      = time.Second
	envReplicaEntries = "FAULTS_REPLICA_ENTRIES"
)

// replicaCount is replicaEntries, or envReplicaEntries when set, and how
// long the test waits for the replays of that many entries.
func replicaCount(t *testing.T) (int, time.Duration) {
	t.Helper()
	n := replicaEntries
	if v := os.Getenv(envReplicaEntries); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < replicaEntries {
			t.Fatalf("%s=%q: want a number of at least %d", envReplicaEntries, v, replicaEntries)
		}
	}
	return n, time.Duration(n/replicaEntries) * 2 * time.Minute
}

// TestReplicaKilled (issue 17, several serve replicas): 10,000 dead
// letters wait in PostgreSQL; two replicas (child processes) share it and
// one broker. A replay-all started on replica a is visible on b; a is
// SIGKILLed mid-run; once its lease (1 s) expired, b takes the job over
// from its last checkpoint and finishes it; b's reconciler replays the
// entry a left replaying. Counted where the replays arrive (RabbitMQ: the
// group queue drained as it fills; Kafka: the group consuming its retry
// topic): every entry arrives (lost = 0); an entry arriving twice is a
// duplicate, and there are at most as many as the job counted.
func TestReplicaKilled(t *testing.T) {
	n, wait := replicaCount(t)
	t.Run("rabbitmq", func(t *testing.T) {
		sub := broker.Subscription{Topic: "replicas." + broker.NewMessageID()[:6], Group: "g"}
		_, prefix := newRabbit(t, sub)
		queue := rabbit.Queue(sub.Topic, sub.Group)
		wf, err := wire.Encode(wire.Form{Props: &wire.Properties{ContentType: "application/octet-stream", DeliveryMode: amqp.Transient}})
		if err != nil {
			t.Fatal(err)
		}
		replicaKilled(t, replicaSetup{kind: rabbit.Name, dlq: rabbit.DLQ(queue), source: queue, wire: wf, sub: sub,
			env: []string{envPrefix + "=" + prefix},
			drain: func(sums map[string][32]byte) func() map[string]int {
				c := drainReplays(t, queue, sums)
				return func() map[string]int {
					if n := c.corrupt(); n != 0 {
						t.Errorf("%d replays arrived corrupt", n)
					}
					return c.wait(t, n, wait)
				}
			}})
	})
	t.Run("kafka", func(t *testing.T) {
		brokers := childCluster(t)
		sub := kafkaSub("replicas." + broker.NewMessageID()[:6])
		b := kafkatest.New(t, brokers, nil)
		if err := b.Declare(context.Background(), sub); err != nil {
			t.Fatal(err)
		}
		replicaKilled(t, replicaSetup{kind: kafka.Name, dlq: kafka.DLQTopic(sub.Topic), source: sub.Topic, sub: sub,
			env: []string{envBrokers + "=" + strings.Join(brokers, ",")},
			drain: func(sums map[string][32]byte) func() map[string]int {
				c := newTally()
				var corrupt atomic.Int64
				stop := testenv.Consume(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
					from := d.Headers[broker.HeaderReplayedFrom]
					_, id, _ := strings.Cut(from, "/")
					if sha256.Sum256(d.Value) != sums[id] {
						corrupt.Add(1)
					}
					c.add(from)
					return nil
				})
				return func() map[string]int {
					if !c.wait(n, wait) {
						t.Errorf("%d of %d replays arrived", c.distinct(), n)
					}
					stop() // duplicates, if any, were consumed with the rest
					if n := corrupt.Load(); n != 0 {
						t.Errorf("%d replays arrived corrupt", n)
					}
					return c.counts()
				}
			}})
	})
}

// replicaSetup is the broker side of TestReplicaKilled.
type replicaSetup struct {
	kind   string
	dlq    string // where the entries were dead-lettered
	source string // the queue or topic they failed in
	wire   []byte // their stored wire form (nil: none)
	sub    broker.Subscription
	env    []string // the broker's variables for the children
	// drain starts counting the replays of the entries whose payload
	// digests are sums; the function it returns waits for every entry and
	// returns the counts by replayed-from key.
	drain func(sums map[string][32]byte) func() map[string]int
}

// replicaKilled is TestReplicaKilled on the broker of s.
func replicaKilled(t *testing.T, s replicaSetup) {
	entries, wait := replicaCount(t)
	ctx := t.Context()
	schema := "faults_" + broker.NewMessageID()[:12]
	st := openStore(t, testenv.PostgreSQL.URL(), schema)
	sums := loadSmall(t, st, s, entries)
	replays := s.drain(sums)

	dir := t.TempDir()
	start := func(name string) (*child, string) {
		addrFile := filepath.Join(dir, name)
		env := append([]string{envTopic + "=" + s.sub.Topic, envReplicaSchema + "=" + schema, envReplicaName + "=" + name,
			envReplicaAddr + "=" + addrFile, "DATABASE_URL=" + noSyncCommit(testenv.PostgreSQL.URL())}, s.env...)
		c := startChild(t, newTally(), childReplica, env...)
		return c, "http://" + waitFile(t, addrFile) + "/internal/v1/dlq"
	}
	a, apiA := start("a")
	_, apiB := start("b")

	var started struct {
		Job dlq.Job `json:"job"`
	}
	if code := apiDo(http.MethodPost, apiA+"/replay-all?rate=0&topic="+s.dlq, &started); code != http.StatusAccepted {
		t.Fatalf("replay-all on a = %d", code)
	}
	id := started.Job.ID
	// No event crosses the processes: the job is read from the APIs.
	poll := func(api, what string, timeout time.Duration, done func(dlq.Job) bool) dlq.Job {
		deadline := time.Now().Add(timeout)
		for {
			var out struct {
				Job dlq.Job `json:"job"`
			}
			if code := apiGet(api+"/jobs/"+id, &out); code != http.StatusOK {
				t.Fatalf("GET %s/jobs/%s = %d", api, id, code)
			}
			if done(out.Job) {
				return out.Job
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after %s: job %+v", what, timeout, out.Job)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// b sees a's job (the shared store: its last checkpoint).
	poll(apiB, "b lists a's job", time.Minute, func(j dlq.Job) bool { return j.Owner == "a" && j.State == dlq.JobRunning })
	// a shows its live progress; it checkpoints after each page of 100
	// entries. It is killed in the middle of a page after 3,000: the
	// entries it replayed after its checkpoint are the duplicates.
	before := poll(apiA, "a replays 3,000 entries", 2*time.Minute, func(j dlq.Job) bool {
		n := j.Progress.Replayed
		return n >= 3000 && n%100 >= 30 && n%100 <= 70 || j.State != dlq.JobRunning
	})
	a.kill()
	killed := time.Now()
	if before.State != dlq.JobRunning {
		t.Fatalf("the job ended before a was killed: %+v", before)
	}
	t.Logf("a SIGKILLed after replaying %d entries (at least)", before.Progress.Replayed)
	j := poll(apiB, "b finishes the job", wait+time.Minute, func(j dlq.Job) bool { return j.State != dlq.JobRunning })
	p := j.Progress
	t.Logf("job %s: %s by %s after %d takeover(s), %v after the kill: %+v", j.ID, j.State, j.Owner, j.Takeovers,
		time.Since(killed).Round(time.Millisecond), p)
	if j.State != dlq.JobDone || j.Owner != "b" || j.Takeovers != 1 || p.Total != int64(entries) ||
		p.Replayed+p.Duplicates != int64(entries) || p.Skipped+p.Failed+p.Mismatched != 0 || p.Duplicates < int64(before.Progress.Replayed%100) {
		t.Errorf("job = %+v; want done by b after one takeover, replayed + duplicates = %d, at least the %d entries a replayed after its checkpoint duplicates",
			j, entries, before.Progress.Replayed%100)
	}

	got := replays()
	keys := make([]string, 0, len(sums))
	for id := range sums {
		keys = append(keys, dlq.ReplayedFrom(s.dlq, id))
	}
	r := account(t, keys, got, nil)
	if int64(r.dups) > p.Duplicates {
		t.Errorf("%d duplicates arrived, the job counted %d", r.dups, p.Duplicates)
	}
	if n, err := st.Count(ctx, dlq.Query{DLQ: s.dlq, Status: dlq.StatusReplayed}); err != nil || n != int64(entries) {
		t.Errorf("%d entries replayed in the store, want %d (%v)", n, entries, err)
	}
}

// loadSmall writes n pending entries of s.dlq (small messages of s's
// topic) in one statement, and returns the SHA-256 of each payload by id.
func loadSmall(t *testing.T, st *pgstore.Store, s replicaSetup, n int) map[string][32]byte {
	t.Helper()
	received := dlq.StoreTime(time.Now().Add(-time.Hour))
	partition := int32(-1)
	if s.kind == kafka.Name {
		partition = 0
	}
	tag, err := st.Pool().Exec(t.Context(), `INSERT INTO dlq_entries (dlq, id, identity, broker, severity, status, status_changed_at,
		received_at, message_id, original_topic, original_partition, original_offset, original_key, original_value, original_wire,
		error_class, error_message, reason, retry_count, worker, source)
		SELECT $1, x.id, x.id, $2, $3, 'pending', $4::timestamptz + i * interval '1 microsecond', $4::timestamptz + i * interval '1 microsecond',
			x.id, $5, $11, CASE WHEN $11 < 0 THEN -1 ELSE i END, convert_to(x.id, 'UTF8'), convert_to('payload of ' || x.id, 'UTF8'), $6,
			'TimeoutError', 'upstream timed out', $7, 3, $8, $9
		FROM generate_series(0, $10::int - 1) AS i, LATERAL (SELECT 'r-' || lpad(i::text, 7, '0') AS id) x ORDER BY i`,
		s.dlq, string(s.kind), string(broker.SeverityWarning), received, s.sub.Topic, s.wire,
		string(driver.ReasonPermanent), s.sub.Group, s.source, n, partition)
	if err != nil || tag.RowsAffected() != int64(n) {
		t.Fatalf("load: %d of %d entries: %v", tag.RowsAffected(), n, err)
	}
	sums := make(map[string][32]byte, n)
	for i := range n {
		id := fmt.Sprintf("r-%07d", i)
		sums[id] = sha256.Sum256([]byte("payload of " + id))
	}
	return sums
}

// replicaChild is the main of a replica child: it serves until SIGTERM
// (or SIGKILL).
func replicaChild(ctx context.Context) error {
	quiet := slog.New(slog.DiscardHandler)
	st, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Config{Schema: os.Getenv(envReplicaSchema), MaxConns: 8, Logger: quiet})
	if err != nil {
		return err
	}
	defer st.Close()
	var (
		b     broker.Broker
		route dlq.Route
	)
	if brokers := os.Getenv(envBrokers); brokers != "" {
		b, err = kafka.New(ctx, kafkatest.Config(strings.Split(brokers, ",")))
		route = kafka.Route(os.Getenv(envTopic), "g")
	} else {
		b, err = rabbit.New(ctx, rabbitConfig(os.Getenv(envPrefix)))
		route = rabbit.Route(os.Getenv(envTopic), "g")
	}
	if err != nil {
		return err
	}
	defer b.Close()
	rp, ok := b.(dlq.Republisher)
	if !ok {
		return errors.New("the broker does not replay")
	}
	// Interrupted replays are reconciled soon: a replica killed mid-replay
	// leaves one entry replaying.
	ops, err := operate.New(operate.Config{Store: st, Republisher: rp, Logger: quiet,
		Routes:        []dlq.Route{route},
		ReplayTimeout: time.Second, ReconcileAfter: 2 * time.Second, ReconcileInterval: time.Second})
	if err != nil {
		return err
	}
	jobs, err := jobs.New(jobs.Config{Ops: ops, Store: st.Jobs(), Replica: os.Getenv(envReplicaName), Lease: replicaLease, Logger: quiet})
	if err != nil {
		return err
	}
	srv, err := admin.New(admin.Config{Ops: ops, Jobs: jobs, Listen: "127.0.0.1:0", InsecureNoAuth: true, Logger: quiet})
	if err != nil {
		jobs.Close()
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	go func() { _ = ops.Run(ctx) }()
	if err := os.WriteFile(os.Getenv(envReplicaAddr), []byte(ln.Addr().String()), 0o600); err != nil {
		return err
	}
	<-ctx.Done()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "signal") {
		return err
	}
	return nil
}
