package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// exists looks up a queue or exchange with a passive declaration on a
// channel of its own (the server closes it on NOT_FOUND).
func exists(t *testing.T, conn *amqp.Connection, kind, name string) bool {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if kind == "queue" {
		_, err = ch.QueueDeclarePassive(name, true, false, false, false, nil)
	} else {
		err = ch.ExchangeDeclarePassive(name, amqp.ExchangeTopic, true, false, false, false, nil)
	}
	if ae, ok := err.(*amqp.Error); ok && ae.Code == amqp.NotFound {
		return false
	}
	if err != nil {
		t.Fatalf("look up %s %s: %v", kind, name, err)
	}
	return true
}

// The lifecycle on RabbitMQ: apply; plan has nothing to do; delete one
// worker refuses its queue while a message waits (dry run or not, nothing
// goes), shows and then does (--force, the message counted); the worker's
// queues are gone, the other worker's and the shared objects stay; plan
// wants them back; delete --all removes the rest, shared objects too.
func TestTopologyLifecycleRabbitMQ(t *testing.T) {
	id := broker.NewMessageID()[:6]
	prefix, billing, shipping := "lc-"+id, "lc.billing."+id, "lc.shipping."+id
	path := writeConfig(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: %q, prefix: %s, delay: {resolution: 100ms, factor: 2, levels: 2}}
workers:
  - {name: billing, topic: %s, retry: {backoff: 100ms}}
  - {name: shipping, topic: %s, retry: {backoff: 100ms}}
`, testenv.RabbitMQ.URL(), prefix, billing, shipping))
	teardownAfter(t, path)
	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	defer conn.Close()
	bq, sq := rabbit.Queue(billing, "billing"), rabbit.Queue(shipping, "shipping")

	if code, out, errOut := cli(t, "topology", "apply", "--config", path); code != exitOK {
		t.Fatalf("apply: %d %s%s", code, out, errOut)
	}
	code, out, errOut := cli(t, "topology", "plan", "--config", path)
	if code != exitOK || !strings.Contains(out, "# nothing to do") || strings.Contains(out, "create ") {
		t.Fatalf("plan after apply: exit %d, want nothing to do:\n%s%s", code, out, errOut)
	}

	// A message waits in billing's queue, published by a foreign producer.
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	conf, err := ch.PublishWithDeferredConfirmWithContext(t.Context(), "", bq, true, false, amqp.Publishing{Body: []byte("waiting")})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := conf.WaitContext(t.Context()); !ok || err != nil {
		t.Fatalf("publish: %v %v", ok, err)
	}
	for _, yes := range []string{"--dry-run-is-default", "--yes"} {
		args := []string{"topology", "delete", "--worker", "billing", "--config", path}
		if yes == "--yes" {
			args = append(args, yes)
		}
		code, out, errOut = cli(t, args...)
		if code != exitFailure || !strings.Contains(out, "refused  queue "+bq+" [1 messages, 0 consumers]") {
			t.Errorf("delete %v with a message waiting: exit %d, want 1 and the queue refused with its count:\n%s%s", args, code, out, errOut)
		}
		if !exists(t, conn, "queue", bq) || !exists(t, conn, "queue", rabbit.DLQ(bq)) {
			t.Fatalf("delete %v deleted %s or its DLQ while the queue held a message (nothing goes while one is refused)", args, bq)
		}
	}

	code, out, errOut = cli(t, "topology", "delete", "--worker", "billing", "--force", "--config", path)
	for _, want := range []string{"delete   queue " + bq + " [1 messages", "delete   queue " + rabbit.DLQ(bq) + " [0 messages",
		"delete   binding " + prefix + ".route.topics -> exchange " + prefix + ".route.0", "# dry run: 3 objects of 1 workers"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("forced dry run: exit %d, output lacks %q:\n%s%s", code, out, want, errOut)
		}
	}
	if strings.Contains(out, sq) || strings.Contains(out, "delete   exchange ") || strings.Contains(out, "queue "+prefix) {
		t.Errorf("deleting billing touches shipping's or the shared objects:\n%s", out)
	}
	if !exists(t, conn, "queue", bq) {
		t.Fatal("the dry run deleted the queue")
	}
	code, out, errOut = cli(t, "topology", "delete", "--worker", "billing", "--force", "--yes", "--config", path)
	if code != exitOK || !strings.Contains(out, "deleted  queue "+bq+" [1 messages") || !strings.Contains(errOut, "by=") {
		t.Fatalf("forced delete: exit %d, want the queue deleted with its message counted and an audit line on stderr:\n%s%s", code, out, errOut)
	}
	for _, q := range []string{bq, rabbit.DLQ(bq)} {
		if exists(t, conn, "queue", q) {
			t.Errorf("queue %s survived its worker's delete", q)
		}
	}
	for _, q := range []string{sq, rabbit.DLQ(sq), prefix + ".unroutable"} {
		if !exists(t, conn, "queue", q) {
			t.Errorf("queue %s, not billing's, was deleted", q)
		}
	}
	for _, x := range []string{prefix + ".topics", prefix + ".retry", prefix + ".dlx"} {
		if !exists(t, conn, "exchange", x) {
			t.Errorf("shared exchange %s deleted while shipping still uses it", x)
		}
	}
	if code, out, _ := cli(t, "topology", "plan", "--config", path); code != exitOK || !strings.Contains(out, "create   queue    "+bq) {
		t.Errorf("plan after deleting billing (still configured): exit %d, want its queue to create:\n%s", code, out)
	}

	code, out, errOut = cli(t, "topology", "delete", "--all", "--yes", "--config", path)
	if code != exitOK || strings.Contains(out, "refused") {
		t.Fatalf("delete --all: exit %d:\n%s%s", code, out, errOut)
	}
	c, rc := loadRabbitConfig(t, path)
	plan, err := rabbit.Plan(rc, c.Subscriptions()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range plan {
		if (d.Kind == "queue" || d.Kind == "exchange") && exists(t, conn, d.Kind, d.Name) {
			t.Errorf("%s %s survived delete --all", d.Kind, d.Name)
		}
	}
}

// On Kafka: apply; plan has nothing to do and names a stray retry topic;
// delete refuses a retry topic whose records wait for the group, deletes
// it with --force, keeps the DLQ another worker of the topic needs, never
// deletes the application topic, and deletes a stray topic only by name.
func TestTopologyLifecycleKafka(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	addr := cluster.ListenAddrs()[0]
	path := writeConfig(t, fmt.Sprintf("broker: kafka\nkafka: {brokers: [%q], partitions: 1}\nworkers: [{name: billing, topic: orders}, {name: audit, topic: orders}]\n", addr))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics := func() []string { // a client of its own: kgo caches metadata
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		td, err := kadm.NewClient(cl).ListTopics(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return td.Names()
	}

	if code, out, errOut := cli(t, "topology", "apply", "--config", path); code != exitOK {
		t.Fatalf("apply: %d %s%s", code, out, errOut)
	}
	if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "old.retry.gone"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "topology", "plan", "--config", path)
	if code != exitOK || !strings.Contains(out, "# nothing to do") || !strings.Contains(out, "unnamed  topic old.retry.gone") {
		t.Fatalf("plan after apply: exit %d, want nothing to do and the stray named:\n%s%s", code, out, errOut)
	}
	// A record waits in billing's retry topic, produced by a raw client.
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders.retry.billing", Value: []byte("w")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cli(t, "topology", "delete", "--worker", "billing", "--yes", "--config", path)
	if code != exitFailure || !strings.Contains(out, "refused  topic orders.retry.billing (retry) [1 records waiting for group billing]") {
		t.Errorf("delete with a record waiting: exit %d, want it refused with its count:\n%s%s", code, out, errOut)
	}
	if !slices.Contains(topics(), "orders.retry.billing") {
		t.Fatal("a refused topic was deleted")
	}
	code, out, errOut = cli(t, "topology", "delete", "--worker", "billing", "--force", "--yes", "--config", path)
	if code != exitOK || !strings.Contains(out, "deleted  topic orders.retry.billing (retry) [1 records") || strings.Contains(out, "orders.dlq") {
		t.Errorf("forced delete of billing: exit %d, want its retry topic deleted and the DLQ audit needs kept:\n%s%s", code, out, errOut)
	}
	have := topics()
	if slices.Contains(have, "orders.retry.billing") || !slices.Contains(have, "orders.dlq") || !slices.Contains(have, "orders.retry.audit") {
		t.Errorf("after deleting billing: topics %v", have)
	}
	if code, out, errOut := cli(t, "topology", "delete", "--all", "--yes", "--config", path); code != exitOK {
		t.Fatalf("delete --all: exit %d:\n%s%s", code, out, errOut)
	}
	have = topics()
	if slices.Contains(have, "orders.dlq") || slices.Contains(have, "orders.retry.audit") || !slices.Contains(have, "orders") || !slices.Contains(have, "old.retry.gone") {
		t.Errorf("after delete --all: topics %v, want orders and the unnamed stray only", have)
	}
	if code, out, errOut := cli(t, "topology", "delete", "--topic", "old.retry.gone", "--yes", "--config", path); code != exitOK || !strings.Contains(out, "deleted  topic old.retry.gone") {
		t.Errorf("delete --topic: exit %d:\n%s%s", code, out, errOut)
	}
	if slices.Contains(topics(), "old.retry.gone") {
		t.Error("the named stray survived")
	}
}

// A worker removed from the configuration is not forgotten: plan lists
// its queues as unnamed (apply's record under the prefix), delete
// --unnamed shows them, then deletes them, leaving the configured
// worker's; after delete --all nothing of the prefix is left, the record
// included.
func TestTopologyUnnamedRabbitMQ(t *testing.T) {
	id := broker.NewMessageID()[:6]
	prefix, billing, shipping := "un-"+id, "un.billing."+id, "un.shipping."+id
	conf := func(workers string) string {
		return writeConfig(t, fmt.Sprintf("broker: rabbitmq\nrabbitmq: {url: %q, prefix: %s, delay: {resolution: 100ms, factor: 2, levels: 2}}\nworkers:\n%s",
			testenv.RabbitMQ.URL(), prefix, workers))
	}
	both := conf(fmt.Sprintf("  - {name: billing, topic: %s, retry: {backoff: 100ms}}\n  - {name: shipping, topic: %s, retry: {backoff: 100ms}}\n", billing, shipping))
	teardownAfter(t, both)
	later := conf(fmt.Sprintf("  - {name: shipping, topic: %s, retry: {backoff: 100ms}}\n", shipping))
	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	defer conn.Close()
	bq, sq := rabbit.Queue(billing, "billing"), rabbit.Queue(shipping, "shipping")

	if code, out, errOut := cli(t, "topology", "apply", "--config", both); code != exitOK {
		t.Fatalf("apply: %d %s%s", code, out, errOut)
	}
	code, out, errOut := cli(t, "topology", "plan", "--config", later)
	for _, want := range []string{"unnamed  queue " + bq + " [0 messages, 0 consumers]", "unnamed  queue " + rabbit.DLQ(bq) + " [0 messages", "# nothing to do"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("plan without billing: exit %d, output lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
	if strings.Contains(out, "unnamed  queue "+sq) {
		t.Errorf("plan lists the configured worker's queue as unnamed:\n%s", out)
	}
	code, out, errOut = cli(t, "topology", "delete", "--unnamed", "--config", later)
	if code != exitOK || !strings.Contains(out, "delete   queue "+bq) || !exists(t, conn, "queue", bq) {
		t.Fatalf("delete --unnamed dry run: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli(t, "topology", "delete", "--unnamed", "--yes", "--config", later)
	if code != exitOK || !strings.Contains(out, "deleted  queue "+bq) {
		t.Fatalf("delete --unnamed: exit %d:\n%s%s", code, out, errOut)
	}
	if exists(t, conn, "queue", bq) || exists(t, conn, "queue", rabbit.DLQ(bq)) || !exists(t, conn, "queue", sq) || !exists(t, conn, "queue", rabbit.DLQ(sq)) {
		t.Error("delete --unnamed: billing's queues should be gone, shipping's kept")
	}
	if _, out, _ := cli(t, "topology", "plan", "--config", later); strings.Contains(out, "unnamed") {
		t.Errorf("plan after delete --unnamed still lists unnamed objects:\n%s", out)
	}
	if code, out, errOut := cli(t, "topology", "delete", "--all", "--yes", "--config", later); code != exitOK {
		t.Fatalf("delete --all: exit %d:\n%s%s", code, out, errOut)
	}
	for _, q := range []string{sq, prefix + ".unroutable", prefix + ".topology"} {
		if exists(t, conn, "queue", q) {
			t.Errorf("queue %s survived delete --all", q)
		}
	}
}

// What plan prints from the topology record reaches a terminal escaped:
// the record is a message anyone may publish, naming an exchange of the
// prefix whose name carries an escape sequence.
func TestTopologyPlanEscapesRecord(t *testing.T) {
	id := broker.NewMessageID()[:6]
	prefix := "esc-" + id
	path := writeConfig(t, fmt.Sprintf("broker: rabbitmq\nrabbitmq: {url: %q, prefix: %s, delay: {resolution: 100ms, factor: 2, levels: 2}}\nworkers:\n  - {name: billing, topic: esc.%s, retry: {backoff: 100ms}}\n",
		testenv.RabbitMQ.URL(), prefix, id))
	teardownAfter(t, path)
	if code, out, errOut := cli(t, "topology", "apply", "--config", path); code != exitOK {
		t.Fatalf("apply: %d %s%s", code, out, errOut)
	}
	evil := prefix + ".\x1b]52;c;ZXZpbA==\x07"
	ch := testenv.AMQP(t)
	if err := ch.ExchangeDeclare(evil, amqp.ExchangeFanout, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testenv.AMQP(t).ExchangeDelete(evil, false, false) })
	body, err := json.Marshal(map[string]any{"objects": []map[string]string{{"kind": "exchange", "name": evil}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	conf, err := ch.PublishWithDeferredConfirmWithContext(t.Context(), "", prefix+".topology", true, false, amqp.Publishing{Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := conf.WaitContext(t.Context()); !ok || err != nil {
		t.Fatalf("publish the record: %v %v", ok, err)
	}
	_, out, errOut := cli(t, "topology", "plan", "--config", path)
	if !strings.Contains(out, "unnamed  exchange "+prefix+`.\x1b]52;c;ZXZpbA==\a`) || strings.ContainsAny(out+errOut, "\x1b\x07") {
		t.Errorf("plan: want the recorded exchange listed, escaped:\n%q\n%q", out, errOut)
	}
}
