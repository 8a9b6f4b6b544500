package operate_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/rabbitfixture"
	"github.com/redrive/redrive/internal/testsupport/storekinds"
)

var _ dlq.Republisher = (*rabbit.Broker)(nil)

// stores are the stores the integration tests run on.
var stores = storekinds.Kinds()

// take reads n messages from the group queue, waiting up to 10 s.
func take(t *testing.T, f *rabbitfixture.Fixture, n int) []amqp.Delivery {
	t.Helper()
	tag := broker.NewMessageID()
	if err := f.Ch.Qos(500, 0, false); err != nil {
		t.Fatal(err)
	}
	msgs, err := f.Ch.Consume(f.Queue, tag, false, false, false, false, nil)
	if err != nil {
		t.Fatalf("consume %s: %v", f.Queue, err)
	}
	defer f.Ch.Cancel(tag, false) //nolint:errcheck
	out := make([]amqp.Delivery, 0, n)
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case m := <-msgs:
			_ = m.Ack(false)
			out = append(out, m)
		case <-timeout:
			t.Fatalf("%d of %d messages on %s", len(out), n, f.Queue)
		}
	}
	return out
}

func TestReplayToRabbitMQ(t *testing.T) {
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			f := rabbitfixture.New(t)
			s := st.Open(t)
			ops, err := operate.New(operate.Config{Store: s, Republisher: f.Broker, Logger: slog.New(slog.DiscardHandler),
				Routes: []dlq.Route{rabbit.Route(f.Sub.Topic, f.Sub.Group)}})
			if err != nil {
				t.Fatal(err)
			}
			e := dlq.Entry{
				MessageID:         "order-42",
				OriginalTopic:     f.Sub.Topic,
				OriginalPartition: -1,
				OriginalOffset:    -1,
				OriginalKey:       []byte("deal_550e8400"),
				OriginalValue:     []byte("{\n  \"amount\": 1250,\n  \"bin\": \"\x00\xff\xfe\"\n}"),
				OriginalHeaders:   map[string]string{"content-type": "application/json", "trace": "abc\x01", "empty": ""},
				ErrorClass:        "payout.BankError",
				ErrorMessage:      "bank said no",
				Reason:            string(driver.ReasonMaxRetries),
				RetryCount:        5,
				Worker:            f.Sub.Group,
				Source:            f.Queue,
			}
			r, _, err := s.Insert(ctx, dlq.Record{Broker: rabbit.Name, DLQ: f.DLQ, Identity: "order-42/1", Entry: e})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ops.Replay(ctx, f.DLQ, r.ID, "tester"); err != nil {
				t.Fatalf("Replay: %v", err)
			}
			m := take(t, f, 1)[0]
			if !bytes.Equal(m.Body, e.OriginalValue) {
				t.Errorf("body = %q, want %q", m.Body, e.OriginalValue)
			}
			if m.MessageId != "order-42" {
				t.Errorf("message id = %q", m.MessageId)
			}
			want := map[string]string{
				driver.HeaderKey:          "deal_550e8400",
				broker.HeaderReplayedFrom: f.DLQ + "/" + r.ID,
				driver.HeaderTopic:        f.Sub.Topic,
			}
			for k, v := range e.OriginalHeaders {
				want[k] = v
			}
			for k, v := range want {
				if got, ok := m.Headers[k].(string); !ok || got != v {
					t.Errorf("header %s = %#v, want %q", k, m.Headers[k], v)
				}
			}
			for k := range m.Headers {
				if k == broker.HeaderReason || k == broker.HeaderError || k == broker.HeaderAttempt {
					t.Errorf("the replay carries the failure header %s", k)
				}
			}
			got, trail, err := ops.Show(ctx, f.DLQ, r.ID)
			if err != nil || got.Status != dlq.StatusReplayed || len(trail) != 1 || trail[0].Actor != "tester" {
				t.Errorf("after replay: %s, trail %+v, %v", got.Status, trail, err)
			}
			if n := f.Depth(t); n != 0 {
				t.Errorf("%d messages left on the queue, want 0", n)
			}
		})
	}
}

func TestReplayAllToRabbitMQ(t *testing.T) {
	for _, st := range stores {
		// 1,000 entries on the embedded store; fewer on PostgreSQL, where
		// each replay costs two transactions, to keep the test quick.
		n := 1000
		if st.Name == "pgstore" {
			n = 300
		}
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			f := rabbitfixture.New(t)
			s := st.Open(t)
			ops, err := operate.New(operate.Config{Store: s, Republisher: f.Broker, Logger: slog.New(slog.DiscardHandler),
				Routes: []dlq.Route{rabbit.Route(f.Sub.Topic, f.Sub.Group)}})
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				e := dlq.Entry{
					MessageID: fmt.Sprintf("m-%04d", i), OriginalTopic: f.Sub.Topic, OriginalPartition: -1, OriginalOffset: -1,
					OriginalValue: []byte(fmt.Sprintf("body-%d", i)), Source: f.Queue, ErrorClass: "x", Reason: string(driver.ReasonPermanent),
				}
				if _, _, err := s.Insert(ctx, dlq.Record{Broker: rabbit.Name, DLQ: f.DLQ, Identity: e.MessageID, Entry: e}); err != nil {
					t.Fatal(err)
				}
			}
			var last operate.Progress
			p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: f.DLQ}, operate.ReplayAllOptions{Actor: "tester", Progress: func(p operate.Progress) { last = p }})
			if err != nil {
				t.Fatalf("ReplayAll: %v", err)
			}
			if p.Total != int64(n) || p.Replayed != int64(n) || !last.Done {
				t.Errorf("progress = %+v (last report %+v), want %d replayed", p, last, n)
			}
			if d := f.Depth(t); d != n {
				t.Errorf("queue depth after replay-all = %d, want %d", d, n)
			}
			seen := map[string]int{}
			for _, m := range take(t, f, n) {
				seen[m.MessageId]++
				if want := fmt.Sprintf("body-%d", atoi(m.MessageId[2:])); string(m.Body) != want {
					t.Errorf("message %s has body %q, want %q", m.MessageId, m.Body, want)
				}
			}
			if len(seen) != n {
				t.Errorf("%d distinct messages, want %d", len(seen), n)
			}
			for id, c := range seen {
				if c != 1 {
					t.Errorf("message %s replayed %d times", id, c)
				}
			}
			// A second run replays nothing: every entry is replayed.
			p, err = ops.ReplayAll(ctx, dlq.Query{DLQ: f.DLQ}, operate.ReplayAllOptions{Actor: "tester"})
			if err != nil || p.Replayed != 0 {
				t.Errorf("second ReplayAll = %+v, %v; want nothing", p, err)
			}
			if c, _ := s.Count(ctx, dlq.Query{DLQ: f.DLQ, Status: dlq.StatusReplayed}); c != int64(n) {
				t.Errorf("%d entries replayed in the store, want %d", c, n)
			}
			time.Sleep(100 * time.Millisecond)
			if d := f.Depth(t); d != 0 {
				t.Errorf("queue depth after the second run = %d, want 0", d)
			}
		})
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
