package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// attuneTable is the header table services in other languages send (what
// pika or the Java client write): every AMQP field type, nested.
func attuneTable(i int) amqp.Table {
	return amqp.Table{
		"execution-id": fmt.Sprintf("exec-%d", i), "attempt": int32(i), "big": int64(1) << 40, "small": int8(-3), "short": int16(300),
		"ratio": float64(0.25), "f32": float32(1.5), "ok": true, "price": amqp.Decimal{Scale: 2, Value: 1999},
		"at": time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC), "raw": []byte{0, 0xff}, "none": nil,
		"ctx":  amqp.Table{"tenant": "acme", "ids": []any{int32(1), "two", amqp.Table{"deep": true}}},
		"tags": []any{"a", int64(2)},
	}
}

// TestServeRabbitForeignDLQ (issue 41, point 5): a shared dead-letter
// queue fed by a plain dead-letter exchange, as the reference design's
// attune.dlx → attune.dlx.queue of services in other languages, declared
// and fed with raw amqp091 (queue TTL expiry, a consumer's reject), is
// kept by `redrive serve` (rabbitmq.foreign_dlqs): every message is one
// entry with the x-death story (queue, reason, count, time, exchange,
// routing keys); listed and grouped; replayed where x-death says it was
// published, only to the allowed exchange, byte for byte with its typed
// headers and properties and without the broker's x-death; one naming
// another exchange is refused, and so is one without x-death (published
// into the DLQ directly: kept raw, naming no exchange); one is discarded
// with a reason. Counted: every message
// published is an entry, every entry replayed arrives once.
func TestServeRabbitForeignDLQ(t *testing.T) {
	clearEnv(t)
	n := testenv.Name(t)
	var (
		executions, other, dlx = n + ".attune.executions", n + ".other", n + ".attune.dlx"
		dlxQueue, execQ        = n + ".attune.dlx.queue", n + ".exec.q"
		cancelQ, otherQ        = n + ".cancel.q", n + ".other.q"
	)
	ch := testenv.AMQP(t)
	t.Cleanup(func() {
		testenv.DeleteTopology([][2]string{{"queue", dlxQueue}, {"queue", execQ}, {"queue", cancelQ}, {"queue", otherQ},
			{"exchange", executions}, {"exchange", other}, {"exchange", dlx}}, func(d [2]string) (string, string) { return d[0], d[1] })
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ch.ExchangeDeclare(executions, "direct", true, false, false, false, nil))
	must(ch.ExchangeDeclare(other, "direct", true, false, false, false, nil))
	must(ch.ExchangeDeclare(dlx, "fanout", true, false, false, false, nil))
	declare := func(q string, args amqp.Table, exchange, key string) {
		_, err := ch.QueueDeclare(q, true, false, false, false, args)
		must(err)
		if exchange != "" {
			must(ch.QueueBind(q, key, exchange, false, nil))
		}
	}
	declare(dlxQueue, nil, dlx, "")
	declare(execQ, amqp.Table{"x-message-ttl": int32(200), "x-dead-letter-exchange": dlx}, executions, "execution.requested")
	declare(cancelQ, amqp.Table{"x-dead-letter-exchange": dlx}, executions, "execution.cancel")
	declare(otherQ, amqp.Table{"x-message-ttl": int32(200), "x-dead-letter-exchange": dlx}, other, "x")

	// What the services publish, pika-like: properties and typed headers.
	const nExpired, nRejected = 5, 3
	sent := map[string]amqp.Publishing{} // by message id
	publish := func(exchange, key, id string, i int) {
		p := amqp.Publishing{Headers: attuneTable(i), ContentType: "application/json", ContentEncoding: "identity", DeliveryMode: amqp.Persistent,
			Priority: 4, CorrelationId: "corr-" + id, ReplyTo: "replies", MessageId: id, Timestamp: time.Date(2025, 1, 15, 10, 0, i, 0, time.UTC),
			Type: "ExecutionRequested", AppId: "attune-api", Body: []byte(fmt.Sprintf("{\n  \"execution\": %d\n}", i))}
		sent[id] = p
		must(ch.PublishWithContext(t.Context(), exchange, key, false, false, p))
	}
	for i := range nExpired {
		publish(executions, "execution.requested", fmt.Sprintf("exp-%d", i), i)
	}
	for i := range nRejected {
		publish(executions, "execution.cancel", fmt.Sprintf("rej-%d", i), 10+i)
	}
	publish(other, "x", "other-0", 20)
	publish("", dlxQueue, "direct-0", 21) // into the DLQ itself: no x-death
	const total = nExpired + nRejected + 2

	// A service rejects the cancels (basic.nack, no requeue).
	rejects, err := ch.Consume(cancelQ, "rejecter", false, true, false, false, nil)
	must(err)
	for range nRejected {
		select {
		case m := <-rejects:
			must(m.Nack(false, false))
		case <-time.After(10 * time.Second):
			t.Fatal("the cancels were not delivered to the rejecting consumer")
		}
	}
	must(ch.Cancel("rejecter", false))

	pg := newSchema(t, "serve_rabbit_foreign_"+strings.ToLower(broker.NewMessageID()[:8]))
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	path := writeConfig(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq:
  url: %q
  prefix: %s-p
  foreign_dlqs:
    - queue: %s
      severity: critical
      retention: forever
      replay_to: {x_death_exchanges: [%s]}
redis: {addr: %q}
postgres: {url: %q}
workers:
  - {name: w, topic: %s.t}
admin: {listen: %q}
exporter: {listen: %q}
`, testenv.RabbitMQ.URL(), n, dlxQueue, executions, testenv.Redis.URL(), pg, n, adminAddr, metricsAddr))
	t.Cleanup(func() { deleteRedriveTopology(t, path) })
	if code, out, errOut := cli(t, "topology", "apply", "--config", path); code != exitOK {
		t.Fatalf("topology apply: %d %s%s", code, out, errOut)
	}
	d := startDaemon(t, "serve", "--config", path, "--insecure-no-auth", "--sample-interval", "100ms")

	st, err := pgstore.Open(t.Context(), pg, pgstore.Config{})
	must(err)
	defer st.Close()
	byMsg := map[string]dlq.Record{}
	eventually(t, "every dead letter stored", func() bool {
		if _, done := d.exited(); done {
			t.Fatalf("serve exited:\n%s", d.stderr)
		}
		p, err := st.List(t.Context(), dlq.Query{DLQ: dlxQueue, Limit: dlq.MaxLimit})
		if err != nil {
			return false
		}
		for _, r := range p.Records {
			byMsg[r.Entry.MessageID] = r
		}
		return len(p.Records) == total && len(byMsg) == total
	}, func() string { return fmt.Sprintf("%d of %d stored\n%s", len(byMsg), total, d.stderr) })

	// The x-death story, in the entry and its typed headers.
	for id, want := range map[string]struct{ reason, queue, exchange, key string }{
		"exp-0": {"expired", execQ, executions, "execution.requested"},
		"rej-1": {"rejected", cancelQ, executions, "execution.cancel"},
	} {
		r, err := st.Get(t.Context(), dlxQueue, byMsg[id].ID)
		must(err)
		e := r.Entry
		story := fmt.Sprintf("from queue %s: %s (1 time, ", want.queue, want.reason)
		if e.Reason != want.reason || e.Source != want.queue || e.OriginalTopic != want.key || r.Severity != "critical" ||
			!strings.Contains(e.ErrorMessage, story) || !strings.Contains(e.ErrorMessage, fmt.Sprintf("published to exchange %q with routing keys [%q])", want.exchange, want.key)) ||
			e.LastFailureAt.IsZero() || time.Since(e.LastFailureAt) > time.Minute {
			t.Errorf("%s: entry = reason %q source %q topic %q severity %s, failed %v, message %q", id, e.Reason, e.Source, e.OriginalTopic, r.Severity, e.LastFailureAt, e.ErrorMessage)
		}
		code, body := httpGet("http://" + adminAddr + "/internal/v1/dlq/" + dlxQueue + "/" + r.ID)
		var detail struct {
			Wire struct {
				Headers []struct {
					Name  string          `json:"name"`
					Type  string          `json:"type"`
					Value json.RawMessage `json:"value"`
				} `json:"headers"`
			} `json:"wire"`
			ReplayDestination string `json:"replay_destination"`
		}
		must(json.Unmarshal([]byte(body), &detail))
		var death string
		for _, h := range detail.Wire.Headers {
			if h.Name == "x-death" {
				death = string(h.Value)
			}
		}
		if code != http.StatusOK || !strings.Contains(death, `"queue"`) || !strings.Contains(death, want.queue) || !strings.Contains(death, `"count"`) ||
			!strings.Contains(death, `"routing-keys"`) || !strings.Contains(death, `"time"`) || !strings.Contains(death, want.exchange) ||
			detail.ReplayDestination != fmt.Sprintf("exchange %s, routing key %q (every queue it routes to)", want.exchange, want.key) {
			t.Errorf("%s: GET entry = %d, x-death %s, destination %q", id, code, death, detail.ReplayDestination)
		}
	}

	// Listed (the CLI) and grouped (the API).
	if _, out, errOut := cli(t, "dlq", "ls", "--config", path); !strings.Contains(strings.Join(fields(out, dlxQueue+" "), " "), "critical "+fmt.Sprint(total)) {
		t.Errorf("dlq ls = %q %s, want %s critical with %d pending", out, errOut, dlxQueue, total)
	}
	code, body := httpGet("http://" + adminAddr + "/internal/v1/dlq/" + dlxQueue + "/groups")
	var groups struct {
		Groups []struct {
			ErrorClass string `json:"error_class"`
			Count      int64  `json:"count"`
		} `json:"groups"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &groups) != nil {
		t.Fatalf("groups = %d %s", code, body)
	}
	counts := map[string]int64{}
	for _, g := range groups.Groups {
		counts[g.ErrorClass] += g.Count
	}
	if counts["expired"] != nExpired+1 || counts["rejected"] != nRejected || counts[""] != 1 {
		t.Errorf("groups by class = %v, want expired %d, rejected %d, one unparseable", counts, nExpired+1, nRejected)
	}

	// The services are back: they consume their queues, recording.
	var mu sync.Mutex
	got := map[string][]amqp.Delivery{} // by x-redrive-replayed-from
	for _, q := range []string{execQ, cancelQ} {
		msgs, err := ch.Consume(q, "", true, false, false, false, nil)
		must(err)
		go func() {
			for m := range msgs {
				from, _ := m.Headers[broker.HeaderReplayedFrom].(string)
				mu.Lock()
				got[from] = append(got[from], m)
				mu.Unlock()
			}
		}()
	}

	// Where x-death says: one replay, then the rest.
	first := byMsg["exp-0"]
	dest := fmt.Sprintf("exchange %s, routing key %q (every queue it routes to)", executions, "execution.requested")
	if code, out, errOut := cli(t, "dlq", "replay", dlxQueue, first.ID, "--config", path); code != exitOK || !strings.Contains(out, "to "+dest) {
		t.Fatalf("dlq replay: %d %q %s", code, out, errOut)
	}
	code, out, errOut := cli(t, "dlq", "replay-all", dlxQueue, "--config", path)
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("%d replayed, 0 skipped, 0 failed, 2 mismatched of %d", nExpired+nRejected-1, nExpired+nRejected+1)) {
		t.Errorf("dlq replay-all: %d %q %s", code, out, errOut)
	}
	// The other exchange is not allowed, the message without x-death
	// names none: both refused, both pending.
	for id, want := range map[string]string{"other-0": "origin mismatch", "direct-0": "has no x-death naming the exchange"} {
		code, out, errOut := cli(t, "dlq", "replay", dlxQueue, byMsg[id].ID, "--config", path)
		if code != exitUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, "409") {
			t.Errorf("dlq replay %s = %d %q %q, want refused: %s", id, code, out, errOut, want)
		}
	}
	if code, out, errOut := cli(t, "dlq", "discard", dlxQueue, byMsg["other-0"].ID, "--config", path, "--reason", "published to the wrong exchange"); code != exitOK {
		t.Errorf("dlq discard: %d %q %s", code, out, errOut)
	}

	// Every replay arrives once, as it was published, without x-death.
	eventually(t, "every replay consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == nExpired+nRejected
	}, func() string { mu.Lock(); defer mu.Unlock(); return fmt.Sprint(len(got), " replays") })
	// A message published after them marks the end: a replay sent twice
	// would come before it.
	for _, key := range []string{"execution.requested", "execution.cancel"} {
		must(ch.PublishWithContext(t.Context(), executions, key, false, false, amqp.Publishing{MessageId: "end", Headers: amqp.Table{broker.HeaderReplayedFrom: "end"}}))
	}
	eventually(t, "the end markers", func() bool { mu.Lock(); defer mu.Unlock(); return len(got["end"]) == 2 }, func() string { return "" })
	mu.Lock()
	defer mu.Unlock()
	for id, r := range byMsg {
		if id == "other-0" || id == "direct-0" {
			continue
		}
		ms := got[dlq.ReplayedFrom(dlxQueue, r.ID)]
		if len(ms) != 1 {
			t.Errorf("%s arrived %d times, want once", id, len(ms))
			continue
		}
		m, p := ms[0], sent[id]
		if !bytes.Equal(m.Body, p.Body) || m.MessageId != id || m.ContentType != p.ContentType || m.CorrelationId != p.CorrelationId ||
			m.Priority != p.Priority || m.Type != p.Type || m.AppId != p.AppId || !m.Timestamp.Equal(p.Timestamp) || m.ReplyTo != p.ReplyTo {
			t.Errorf("%s replayed as %+v, want %+v", id, m, p)
		}
		for k, v := range p.Headers {
			w, ok := v.(time.Time)
			if g, isTime := m.Headers[k].(time.Time); ok && isTime && g.Equal(w) {
				continue // AMQP timestamps arrive in the local zone
			}
			if !reflect.DeepEqual(m.Headers[k], v) {
				t.Errorf("%s: header %s = %#v, want %#v", id, k, m.Headers[k], v)
			}
		}
		for k := range m.Headers {
			if k == "x-death" || strings.HasPrefix(k, "x-first-death-") || strings.HasPrefix(k, "x-last-death-") {
				t.Errorf("%s: replayed with the broker's %s %v", id, k, m.Headers[k])
			}
		}
		wantQ := execQ
		if strings.HasPrefix(id, "rej-") {
			wantQ = cancelQ
		}
		if m.RoutingKey != map[string]string{execQ: "execution.requested", cancelQ: "execution.cancel"}[wantQ] || m.Exchange != executions {
			t.Errorf("%s replayed through %s/%s", id, m.Exchange, m.RoutingKey)
		}
	}
	// Nothing lost: every entry is replayed, discarded or (unknown) pending.
	statuses := map[dlq.Status]int{}
	p, err := st.List(t.Context(), dlq.Query{DLQ: dlxQueue, Limit: dlq.MaxLimit})
	must(err)
	for _, r := range p.Records {
		statuses[r.Status]++
	}
	if statuses[dlq.StatusReplayed] != nExpired+nRejected || statuses[dlq.StatusDiscarded] != 1 || statuses[dlq.StatusPending] != 1 || len(p.Records) != total {
		t.Errorf("statuses = %v of %d entries", statuses, len(p.Records))
	}
	if trail, err := st.Audit(t.Context(), dlxQueue, first.ID); err != nil || len(trail) != 1 || trail[0].Reason != "to "+dest {
		t.Errorf("audit of the first replay = %+v, %v", trail, err)
	}
	if code := d.stop(t); code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, d.stderr)
	}
}

// deleteRedriveTopology removes what `topology apply` declared for the
// configuration at path.
func deleteRedriveTopology(t *testing.T, path string) {
	c, err := config.Load(path)
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	if cfg, err := assembly.RabbitConfig(c, slog.New(slog.DiscardHandler)); err == nil {
		if plan, err := rabbit.Plan(cfg, c.Subscriptions()...); err == nil {
			deletePlan(plan)
		}
	}
}
