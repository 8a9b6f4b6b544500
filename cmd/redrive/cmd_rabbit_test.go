package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
)

func rabbitURL() string {
	if u := os.Getenv("RABBITMQ_URL"); u != "" {
		return u
	}
	return rabbit.DefaultURL
}

// rabbitConfig writes a config with a prefix and topic of its own and
// deletes what the test declared when it ends.
func rabbitConfig(t *testing.T) (path, topic string) {
	t.Helper()
	id := broker.NewMessageID()[:6]
	topic = "cli." + id
	path = writeConfig(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: %q, prefix: cli-%s, delay: {resolution: 100ms, factor: 2, levels: 2}}
workers:
  - {name: billing, topic: %s, retry: {backoff: 100ms}}
`, rabbitURL(), id, topic))
	t.Cleanup(func() { deleteQueues("cli-"+id, topic) })
	return path, topic
}

// deleteQueues deletes, best effort, the queues of a test configuration
// with prefix, delays 100ms × 2 on 2 levels, and one worker, billing, on
// topic.
func deleteQueues(prefix, topic string) {
	conn, err := amqp.Dial(rabbitURL())
	if err != nil {
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	delay, _ := rabbit.DelayQueues(rabbit.Config{Prefix: prefix, Delay: rabbit.DelayConfig{Resolution: 100 * time.Millisecond, Factor: 2, Levels: 2}})
	q := rabbit.Queue(topic, "billing")
	for _, name := range append(delay, q, rabbit.DLQ(q), prefix+".unroutable") {
		_, _ = ch.QueueDelete(name, false, false, false)
	}
}

func TestTopologyApplyAndPublish(t *testing.T) {
	path, topic := rabbitConfig(t)
	q := rabbit.Queue(topic, "billing")

	code, out, errOut := cli(t, "topology", "apply", "--dry-run", "--config", path)
	if code != exitOK || !strings.Contains(out, "queue    "+q+" ") || !strings.Contains(out, "# dry run:") {
		t.Fatalf("dry run: %d\n%s%s", code, out, errOut)
	}
	conn, err := amqp.Dial(rabbitURL())
	if err != nil {
		t.Fatalf("RabbitMQ is required: %v", err)
	}
	defer conn.Close()
	ch, _ := conn.Channel()
	if _, err := ch.QueueDeclarePassive(q, true, false, false, false, nil); err == nil {
		t.Fatalf("dry run declared %s", q)
	}

	if code, out, errOut := cli(t, "topology", "apply", "--config", path); code != exitOK {
		t.Fatalf("apply: %d %s%s", code, out, errOut)
	}
	ch, _ = conn.Channel()
	if _, err := ch.QueueDeclarePassive(q, true, false, false, false, nil); err != nil {
		t.Fatalf("apply did not declare %s: %v", q, err)
	}

	code, out, errOut = cli(t, "publish", "--config", path, "--topic", topic, "--key", "k1", "--header", "trace=abc", "--data", "hello")
	if code != exitOK || strings.TrimSpace(out) == "" {
		t.Fatalf("publish: %d %q %q", code, out, errOut)
	}
	msgs, err := ch.Consume(q, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := <-msgs
	e := rabbit.EntryFromDelivery(m)
	if string(m.Body) != "hello" || m.MessageId != strings.TrimSpace(out) || string(e.OriginalKey) != "k1" || e.OriginalHeaders["trace"] != "abc" {
		t.Fatalf("published message = body %q id %q key %q headers %v", m.Body, m.MessageId, e.OriginalKey, e.OriginalHeaders)
	}
}

func TestPublishBadInput(t *testing.T) {
	path, topic := rabbitConfig(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--data", "x"}, exitUsage, "--topic is required"},
		{[]string{"--topic", topic, "--delay", "soon", "--data", "x"}, exitUsage, `--delay "soon" is not a duration`},
		{[]string{"--topic", topic, "--header", "novalue", "--data", "x"}, exitUsage, `header "novalue" is not k=v`},
		{[]string{"--topic", "nobody.listens." + topic, "--data", "x"}, exitFailure, "unroutable"},
	}
	for _, tt := range tests {
		code, _, errOut := cli(t, append([]string{"publish", "--config", path}, tt.args...)...)
		if code != tt.code || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("publish %v = %d %q, want %d and one line containing %q", tt.args, code, errOut, tt.code, tt.want)
		}
	}
}

// Applying queue_type: quorum over a classic deployment reports every
// queue to migrate, one line each, and changes nothing.
func TestTopologyApplyReportsEveryTypeConflict(t *testing.T) {
	id := broker.NewMessageID()[:6]
	topic := "cli.migrate." + id
	doc := func(queueType string) string {
		return writeConfig(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: %q, prefix: clim-%s, queue_type: %s, delay: {resolution: 100ms, factor: 2, levels: 2}}
workers:
  - {name: billing, topic: %s, retry: {backoff: 100ms}}
`, rabbitURL(), id, queueType, topic))
	}
	t.Cleanup(func() { deleteQueues("clim-"+id, topic) })
	if code, out, errOut := cli(t, "topology", "apply", "--config", doc("classic")); code != exitOK {
		t.Fatalf("apply classic: %d %s%s", code, out, errOut)
	}
	code, _, errOut := cli(t, "topology", "apply", "--config", doc("quorum"))
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != exitFailure || len(lines) != 5 { // group queue, DLQ, unroutable, 2 delay levels
		t.Fatalf("apply quorum over classic = %d, %d lines, want 1 and 5 lines:\n%s", code, len(lines), errOut)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "redrive: topology apply: rabbit: topology conflict: queue ") || !strings.Contains(l, "is classic") {
			t.Errorf("line %q: want a topology conflict naming a classic queue", l)
		}
	}
}
