package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

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
`, testenv.RabbitMQ.URL(), id, topic))
	teardownAfter(t, path)
	return path, topic
}

// teardownAfter deletes, when the test ends, every exchange and queue the
// configuration at path declares.
func teardownAfter(t *testing.T, path string) {
	t.Helper()
	c, rc := loadRabbitConfig(t, path)
	t.Cleanup(func() {
		if _, err := rabbit.Teardown(context.Background(), rc, c.Subscriptions()...); err != nil {
			t.Errorf("teardown of %s: %v", path, err)
		}
	})
}

// loadRabbitConfig loads the configuration at path and its rabbit.Config.
func loadRabbitConfig(t *testing.T, path string) (*config.Config, rabbit.Config) {
	t.Helper()
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := assembly.RabbitConfig(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return c, rc
}

func TestTopologyApplyAndPublish(t *testing.T) {
	path, topic := rabbitConfig(t)
	q := rabbit.Queue(topic, "billing")

	code, out, errOut := cli(t, "topology", "apply", "--dry-run", "--config", path)
	if code != exitOK || !strings.Contains(out, "queue    "+q+" ") || !strings.Contains(out, "# dry run:") {
		t.Fatalf("dry run: %d\n%s%s", code, out, errOut)
	}
	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
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

// The dry run compares with what exists: after a change of queue_ttl and
// of the DLQ's settings behind redrive's back, it lists every conflict and
// exits 1, and changes nothing.
func TestTopologyDryRunConflicts(t *testing.T) {
	path, topic := rabbitConfig(t)
	if code, out, errOut := cli(t, "topology", "apply", "--config", path); code != exitOK {
		t.Fatalf("apply: %d %s%s", code, out, errOut)
	}
	code, out, errOut := cli(t, "topology", "apply", "--dry-run", "--config", path)
	q := rabbit.Queue(topic, "billing")
	if code != exitOK || !strings.Contains(out, "keep     queue    "+q+" ") || strings.Contains(out, "create ") || errOut != "" {
		t.Fatalf("dry run after apply: %d\n%s%s", code, out, errOut)
	}

	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	defer conn.Close()
	ch, _ := conn.Channel()
	if _, err := ch.QueueDelete(rabbit.DLQ(q), false, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(rabbit.DLQ(q), true, false, false, false, amqp.Table{"x-max-length": int64(3)}); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(readFile(t, path), "retry: {backoff: 100ms}", "retry: {backoff: 100ms}, queue_ttl: 1m", 1)
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cli(t, "topology", "apply", "--dry-run", "--config", path)
	if code != exitFailure || strings.Count(out, "conflict ") != 2 || !strings.Contains(out, "# dry run:") {
		t.Fatalf("dry run with two clashes: exit %d, want 1 and two conflict lines\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"would fail", `queue "` + q + `" (0 messages ready, 0 consumers) exists with x-message-ttl=300000 but the config wants x-message-ttl=60000`,
		`queue "` + rabbit.DLQ(q) + `" (0 messages ready, 0 consumers) exists with x-max-length=3`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if q, err := ch.QueueDeclarePassive(q, true, false, false, false, nil); err != nil || q.Messages != 0 {
		t.Errorf("the group queue after the dry run: %+v %v", q, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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
`, testenv.RabbitMQ.URL(), id, queueType, topic))
	}
	classic := doc("classic")
	teardownAfter(t, classic)
	if code, out, errOut := cli(t, "topology", "apply", "--config", classic); code != exitOK {
		t.Fatalf("apply classic: %d %s%s", code, out, errOut)
	}
	quorum := doc("quorum")
	// The dry run finds the same five, explained the same way.
	code, out, errOut := cli(t, "topology", "apply", "--dry-run", "--config", quorum)
	if code != exitFailure || strings.Count(out, "\nconflict ") != 5 || strings.Count(errOut, "is classic") != 5 {
		t.Errorf("dry run of quorum over classic = %d, want 1 and 5 conflicts naming a classic queue:\n%s%s", code, out, errOut)
	}
	code, _, errOut = cli(t, "topology", "apply", "--config", quorum)
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
