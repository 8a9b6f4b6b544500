//go:build faults

package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// effectsBroker is a broker of the exactly-once cases: the parent's
// broker, what a child needs to reach it, and how to tell that a group
// has nothing left to take.
type effectsBroker struct {
	name string
	// open returns a broker of the parent with subs declared and the
	// children's environment; cleaned up when t ends.
	open func(t *testing.T, subs ...broker.Subscription) (broker.Broker, []string)
}

var effectsBrokers = []effectsBroker{
	{name: "rabbitmq", open: func(t *testing.T, subs ...broker.Subscription) (broker.Broker, []string) {
		b, prefix := newRabbit(t, subs...)
		return b, []string{envBrokerKind + "=rabbitmq", envPrefix + "=" + prefix}
	}},
	{name: "kafka", open: func(t *testing.T, subs ...broker.Subscription) (broker.Broker, []string) {
		brokers := childCluster(t)
		b := kafkatest.New(t, brokers, nil)
		if err := b.Declare(context.Background(), subs...); err != nil {
			t.Fatal(err)
		}
		return b, []string{envBrokerKind + "=kafka", envBrokers + "=" + strings.Join(brokers, ",")}
	}},
}

// settle waits until sub's group has nothing left to take: on RabbitMQ
// its queue and every delay queue of env's prefix are empty (a retry
// waiting in a tier counts), on Kafka its committed offsets reached the
// end of every partition. What a consumer still handles then is drained
// by its graceful stop.
func settle(t *testing.T, env []string, sub broker.Subscription) {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	if vars[envBrokerKind] == "kafka" {
		// Probes that fail (a broker of the list removed by the case) are
		// "not yet", not a failure.
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(vars[envBrokers], ",")...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		testenv.Eventually(t, 2*time.Minute, sub.Group+" caught up on "+sub.Topic, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ends, err := adm.ListEndOffsets(ctx, sub.Topic)
			if err != nil || ends.Error() != nil {
				return false
			}
			offs, err := adm.FetchOffsets(ctx, sub.Group)
			if err != nil || offs.Error() != nil {
				return false
			}
			done := true
			ends.Each(func(o kadm.ListedOffset) {
				if c, ok := offs.Lookup(sub.Topic, o.Partition); o.Offset > 0 && (!ok || c.At < o.Offset) {
					done = false
				}
			})
			return done
		})
		return
	}
	queues, err := rabbit.DelayQueues(rabbitConfig(vars[envPrefix]))
	if err != nil {
		t.Fatal(err)
	}
	queues = append(queues, rabbit.Queue(sub.Topic, sub.Group))
	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	defer conn.Close()
	testenv.Eventually(t, 2*time.Minute, sub.Group+"'s queue and the delay queues empty", func() bool {
		for _, q := range queues {
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
			_ = ch.Close()
			if err == nil && st.Messages > 0 {
				return false
			}
		}
		return true
	})
}

// inboxName names a case's variant.
func inboxName(inbox bool) string {
	if inbox {
		return "inbox"
	}
	return "no-inbox"
}

// childEnv is the environment of a worker child on topic for group.
func childEnv(env []string, db *effectsDB, topic, group string, inbox bool, extra ...string) []string {
	out := append(append(append([]string{}, env...), db.env()...), envTopic+"="+topic, envWorker+"="+group)
	if !inbox {
		out = append(out, envNoInbox+"=1")
	}
	return append(out, extra...)
}

// pgCluster is a PostgreSQL cluster of the test's own (Debian's
// pg_createcluster), so that a case can restart PostgreSQL for real
// without touching the shared one.
type pgCluster struct {
	version, name string
	url           string
}

// privatePostgres creates and starts a cluster on a free loopback port
// with trust authentication, dropped (stopped first) when t ends. It
// needs root and Debian's postgresql-common.
func privatePostgres(t *testing.T) *pgCluster {
	t.Helper()
	versions, err := os.ReadDir("/usr/lib/postgresql")
	if err != nil || len(versions) == 0 {
		t.Fatalf("no PostgreSQL server under /usr/lib/postgresql (Debian's postgresql package): %v", err)
	}
	_, port, err := net.SplitHostPort(testenv.ClosedAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	c := &pgCluster{version: versions[len(versions)-1].Name(), name: "redrive_faults_" + testenv.RandomHex(4)}
	if out, err := exec.Command("pg_createcluster", c.version, c.name, "-p", port, "--start", "--", "--auth=trust").CombinedOutput(); err != nil {
		t.Fatalf("pg_createcluster %s %s -p %s: %v\n%s", c.version, c.name, port, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("pg_dropcluster", "--stop", c.version, c.name).CombinedOutput(); err != nil {
			t.Errorf("pg_dropcluster %s %s: %v\n%s", c.version, c.name, err, out)
		}
	})
	c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", port)
	testenv.Eventually(t, time.Minute, "the private PostgreSQL accepting connections", func() bool {
		conn, err := pgx.Connect(context.Background(), c.url)
		if err != nil {
			return false
		}
		_ = conn.Close(context.Background())
		return true
	})
	return c
}

// restart restarts the cluster (fast shutdown: sessions cut, transactions
// in flight rolled back), returning once it accepts connections again.
func (c *pgCluster) restart(t *testing.T) {
	t.Helper()
	start := time.Now()
	if out, err := exec.Command("pg_ctlcluster", c.version, c.name, "restart", "-m", "fast").CombinedOutput(); err != nil {
		t.Fatalf("pg_ctlcluster %s %s restart: %v\n%s", c.version, c.name, err, out)
	}
	t.Logf("PostgreSQL %s/%s restarted in %s", c.version, c.name, time.Since(start).Round(time.Millisecond))
}
