// Package kafkatest gives tests a Kafka cluster and probes for what the
// Kafka backend wrote: an in-process kfake cluster (or the cluster of
// KAFKA_BROKERS), a *kafka.Broker tuned for short test durations, and a
// reader of dead-letter topics. It is meant for tests only.
package kafkatest

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
)

// EnvBrokers is the environment variable naming an external cluster
// (comma-separated host:port) that Cluster uses instead of kfake.
const EnvBrokers = "KAFKA_BROKERS"

// Cluster returns the seed brokers of a cluster for t: KAFKA_BROKERS when
// set, else a new three-broker kfake cluster closed when t ends.
func Cluster(t testing.TB) []string {
	t.Helper()
	if env := os.Getenv(EnvBrokers); env != "" {
		var out []string
		for _, b := range strings.Split(env, ",") {
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
		return out
	}
	_, addrs := Fake(t)
	return addrs
}

// Fake starts a three-broker kfake cluster, closed when t ends, whatever
// KAFKA_BROKERS says: tests that inject faults (ControlKey, Fault) need it.
func Fake(t testing.TB, opts ...kfake.Opt) (*kfake.Cluster, []string) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3)}, opts...)...)
	if err != nil {
		t.Fatalf("kfake: start cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()
}

// Config returns a kafka.Config for brokers with the short waits tests want
// (100 ms fetch waits, heartbeats and commits).
func Config(brokers []string) kafka.Config {
	return kafka.Config{
		Brokers:           brokers,
		Partitions:        3,
		ClientID:          "redrive-test",
		InstanceID:        "test-instance",
		Logger:            Logger(),
		ConnectTimeout:    5 * time.Second,
		DeliveryTimeout:   10 * time.Second,
		CommitInterval:    100 * time.Millisecond,
		FetchMaxWait:      100 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		WriteRetryBackoff: 20 * time.Millisecond,
	}
}

// New returns a Broker on brokers with Config(brokers) changed by edit (may
// be nil), closed when t ends.
func New(t testing.TB, brokers []string, edit func(*kafka.Config)) *kafka.Broker {
	t.Helper()
	cfg := Config(brokers)
	if edit != nil {
		edit(&cfg)
	}
	b, err := kafka.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("kafka.New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// Logger is the tests' logger: silent unless REDRIVE_TEST_LOG is set (then
// debug logs go to stderr).
func Logger() *slog.Logger {
	if os.Getenv("REDRIVE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// DeadLetter is one record of a <topic>.dlq topic: its decoded envelope and
// the record itself.
type DeadLetter struct {
	Entry  driver.Entry
	Record *kgo.Record
}

// DeadLetters reads <topic>.dlq from its start until want dead letters of
// group have arrived (failing t after a minute or when ctx ends), keeps
// reading for quiet so that extra ones show, and returns all of group's it
// read. A dead letter belongs to group when its envelope's worker (or its
// x-redrive-worker header) is group. A record that is not an envelope fails
// t.
func DeadLetters(ctx context.Context, t testing.TB, brokers []string, topic, group string, want int, quiet time.Duration) []DeadLetter {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(kafka.DLQTopic(topic)),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("dead-letter probe client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var out []DeadLetter
	read := func(ctx context.Context) {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) {
			if ctx.Err() == nil && err != context.DeadlineExceeded && err != context.Canceled {
				t.Logf("dead-letter probe: fetch %s/%d: %v", tp, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			e, err := kafka.DecodeEnvelope(r.Value)
			if err != nil {
				t.Errorf("dead-letter probe: record %d/%d is not an envelope: %v", r.Partition, r.Offset, err)
				return
			}
			worker := e.Worker
			if worker == "" {
				for _, h := range r.Headers {
					if h.Key == broker.HeaderWorker {
						worker = string(h.Value)
					}
				}
			}
			if worker == group {
				out = append(out, DeadLetter{Entry: e, Record: r})
			}
		})
	}
	for len(out) < want {
		if ctx.Err() != nil {
			t.Fatalf("dead-letter probe: %s has %d dead letters of group %q, want %d: %v", kafka.DLQTopic(topic), len(out), group, want, ctx.Err())
		}
		read(ctx)
	}
	qctx, qcancel := context.WithTimeout(ctx, quiet)
	defer qcancel()
	for qctx.Err() == nil {
		read(qctx)
	}
	return out
}

// Entries returns the envelopes of dls.
func Entries(dls []DeadLetter) []driver.Entry {
	out := make([]driver.Entry, len(dls))
	for i, d := range dls {
		out[i] = d.Entry
	}
	return out
}

// Committed returns the offset group committed on topic's partition, -1
// when none.
func Committed(ctx context.Context, t testing.TB, brokers []string, group, topic string, partition int32) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("offset probe client: %v", err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of group %q: %v", group, err)
	}
	if o, ok := offs.Lookup(topic, partition); ok {
		return o.At
	}
	return -1
}

// EndOffsets returns the end offset of each partition of topic: how many
// records were ever written to it, to tell that nothing was.
func EndOffsets(ctx context.Context, t testing.TB, brokers []string, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("offset probe client: %v", err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}
