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
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testenv"
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

// Replay-all takeover: the entries, and the job lease of the replicas.
const (
	replicaEntries = 10_000
	replicaLease   = time.Second
)

// TestReplicaKilled (issue 17, several serve replicas): 10,000 dead
// letters wait in PostgreSQL; two replicas (child processes) share it and
// one RabbitMQ. A replay-all started on replica a is visible on b; a is
// SIGKILLed mid-run; once its lease (1 s) expired, b takes the job over
// from its last checkpoint and finishes it; b's reconciler replays the
// entry a left replaying. Counted on the group queue, drained as it
// fills: every entry arrives (lost = 0); an entry arriving twice is a
// duplicate, and there are at most as many as the job counted.
func TestReplicaKilled(t *testing.T) {
	ctx := t.Context()
	schema := "faults_" + broker.NewMessageID()[:12]
	st := openStore(t, testenv.PostgreSQL.URL(), schema)
	sub := broker.Subscription{Topic: "replicas." + broker.NewMessageID()[:6], Group: "g"}
	_, prefix := newRabbit(t, sub)
	queue := rabbit.Queue(sub.Topic, sub.Group)
	dlqName := rabbit.DLQ(queue)
	sums := loadSmall(t, st, dlqName, sub, replicaEntries)
	replays := drainReplays(t, queue, sums)

	dir := t.TempDir()
	start := func(name string) (*child, string) {
		addrFile := filepath.Join(dir, name)
		c := startChild(t, newTally(), childReplica, envPrefix+"="+prefix, envTopic+"="+sub.Topic,
			envReplicaSchema+"="+schema, envReplicaName+"="+name, envReplicaAddr+"="+addrFile,
			"DATABASE_URL="+noSyncCommit(testenv.PostgreSQL.URL()))
		return c, "http://" + waitFile(t, addrFile) + "/internal/v1/dlq"
	}
	a, apiA := start("a")
	_, apiB := start("b")

	var started struct {
		Job dlq.Job `json:"job"`
	}
	if code := apiDo(http.MethodPost, apiA+"/replay-all?rate=0&topic="+dlqName, &started); code != http.StatusAccepted {
		t.Fatalf("replay-all on a = %d", code)
	}
	id := started.Job.ID
	// No event crosses the processes: the job is read from b's API (the
	// shared store) until a has checkpointed 3,000 entries.
	job := func(api string) dlq.Job {
		var out struct {
			Job dlq.Job `json:"job"`
		}
		if code := apiGet(api+"/jobs/"+id, &out); code != http.StatusOK {
			t.Fatalf("GET %s/jobs/%s = %d", api, id, code)
		}
		return out.Job
	}
	poll := func(what string, timeout time.Duration, done func(dlq.Job) bool) dlq.Job {
		deadline := time.Now().Add(timeout)
		for {
			j := job(apiB)
			if done(j) {
				return j
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after %s: job %+v", what, timeout, j)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	before := poll("a checkpoints 3,000 entries", 2*time.Minute, func(j dlq.Job) bool {
		return j.Owner == "a" && j.Progress.Replayed >= 3000 || j.State != dlq.JobRunning
	})
	if before.State != dlq.JobRunning {
		t.Fatalf("the job ended before a was killed: %+v", before)
	}
	a.kill()
	killed := time.Now()
	t.Logf("a SIGKILLed with %d entries checkpointed", before.Progress.Replayed)
	j := poll("b finishes the job", 3*time.Minute, func(j dlq.Job) bool { return j.State != dlq.JobRunning })
	took := time.Since(killed)
	p := j.Progress
	t.Logf("job %s: %s by %s after %d takeover(s), %v after the kill: %+v", j.ID, j.State, j.Owner, j.Takeovers, took.Round(time.Millisecond), p)
	if j.State != dlq.JobDone || j.Owner != "b" || j.Takeovers != 1 || p.Total != replicaEntries ||
		p.Replayed+p.Duplicates != replicaEntries || p.Skipped+p.Failed+p.Mismatched != 0 {
		t.Errorf("job = %+v; want done by b after one takeover, replayed + duplicates = %d", j, replicaEntries)
	}

	got := replays.wait(t, replicaEntries, 2*time.Minute)
	keys := make([]string, 0, len(sums))
	for id := range sums {
		keys = append(keys, dlq.ReplayedFrom(dlqName, id))
	}
	r := account(t, keys, got, nil)
	if int64(r.dups) > p.Duplicates || replays.corrupt() != 0 {
		t.Errorf("%d duplicates arrived, the job counted %d; %d corrupt", r.dups, p.Duplicates, replays.corrupt())
	}
	if n, err := st.Count(ctx, dlq.Query{DLQ: dlqName, Status: dlq.StatusReplayed}); err != nil || n != replicaEntries {
		t.Errorf("%d entries replayed in the store, want %d (%v)", n, replicaEntries, err)
	}
}

// loadSmall writes n pending entries of dlqName (small transient
// messages of sub's topic) in one statement, and returns the SHA-256 of
// each payload by id.
func loadSmall(t *testing.T, st *pgstore.Store, dlqName string, sub broker.Subscription, n int) map[string][32]byte {
	t.Helper()
	wf, err := wire.Encode(wire.Form{Props: &wire.Properties{ContentType: "application/octet-stream", DeliveryMode: amqp.Transient}})
	if err != nil {
		t.Fatal(err)
	}
	received := dlq.StoreTime(time.Now().Add(-time.Hour))
	tag, err := st.Pool().Exec(t.Context(), `INSERT INTO dlq_entries (dlq, id, identity, broker, severity, status, status_changed_at,
		received_at, message_id, original_topic, original_key, original_value, original_wire, error_class, error_message, reason,
		retry_count, worker, source)
		SELECT $1, x.id, x.id, $2, $3, 'pending', $4::timestamptz + i * interval '1 microsecond', $4::timestamptz + i * interval '1 microsecond',
			x.id, $5, convert_to(x.id, 'UTF8'), convert_to('payload of ' || x.id, 'UTF8'), $6,
			'TimeoutError', 'upstream timed out', $7, 3, $8, $9
		FROM generate_series(0, $10::int - 1) AS i, LATERAL (SELECT 'r-' || lpad(i::text, 5, '0') AS id) x ORDER BY i`,
		dlqName, string(broker.RabbitMQ), string(broker.SeverityWarning), received, sub.Topic, wf,
		string(broker.ReasonPermanent), sub.Group, rabbit.Queue(sub.Topic, sub.Group), n)
	if err != nil || tag.RowsAffected() != int64(n) {
		t.Fatalf("load: %d of %d entries: %v", tag.RowsAffected(), n, err)
	}
	sums := make(map[string][32]byte, n)
	for i := range n {
		id := fmt.Sprintf("r-%05d", i)
		sums[id] = sha256.Sum256([]byte("payload of " + id))
	}
	return sums
}

// replicaChild is the main of a replica child: it serves until SIGTERM
// (or SIGKILL).
func replicaChild(ctx context.Context) error {
	quiet := slog.New(slog.DiscardHandler)
	st, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Options{Schema: os.Getenv(envReplicaSchema), MaxConns: 8, Logger: quiet})
	if err != nil {
		return err
	}
	defer st.Close()
	b, err := rabbit.New(ctx, rabbitConfig(os.Getenv(envPrefix)))
	if err != nil {
		return err
	}
	defer b.Close()
	// Interrupted replays are reconciled soon: a replica killed mid-replay
	// leaves one entry replaying.
	ops, err := dlq.NewOps(dlq.OpsConfig{Store: st, Republisher: b, Logger: quiet,
		Routes:        []dlq.Route{rabbit.Route(os.Getenv(envTopic), "g")},
		ReplayTimeout: time.Second, ReconcileAfter: 2 * time.Second, ReconcileInterval: time.Second})
	if err != nil {
		return err
	}
	jobs, err := dlq.NewJobs(dlq.JobsConfig{Ops: ops, Store: st.Jobs(), Replica: os.Getenv(envReplicaName), Lease: replicaLease, Logger: quiet})
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
