package rabbit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
)

// TestConsumeDeadLetterBatches: a backlog in a DLQ queue comes in
// batches; the message the handler refuses twice is offered again alone,
// the others of its batch are acked at once, and the queue ends empty.
// Counted: each dead letter accepted once.
func TestConsumeDeadLetterBatches(t *testing.T) {
	s := sub("batch." + broker.NewMessageID()[:6])
	b := newBroker(t, nil, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	queue := rabbit.DLQ(rabbit.Queue(s.Topic, s.Group))
	ch := channel(t)
	const n = 300
	for i := range n {
		if err := ch.PublishWithContext(t.Context(), "", queue, false, false,
			amqp.Publishing{MessageId: fmt.Sprint("m", i), Body: []byte("raw"), DeliveryMode: amqp.Persistent}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu       sync.Mutex
		accepted = map[string]int{}
		offers   = map[string]int{}
		largest  int
		done     = make(chan struct{})
	)
	const bad = "m57"
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		stopped <- b.ConsumeDeadLetterBatches(ctx, []string{queue}, func(_ context.Context, dls []driver.DeadLetter) []error {
			mu.Lock()
			defer mu.Unlock()
			largest = max(largest, len(dls))
			errs := make([]error, len(dls))
			for i, dl := range dls {
				id := dl.Entry.MessageID
				if offers[id]++; id == bad && offers[id] <= 2 {
					errs[i] = errors.New("refused")
					continue
				}
				if accepted[id]++; len(accepted) == n && accepted[id] == 1 {
					close(done)
				}
			}
			return errs
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("keeper accepted %d dead letters, want %d", len(accepted), n)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatalf("ConsumeDeadLetterBatches = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, c := range accepted {
		if c != 1 || (id != bad && offers[id] != 1) {
			t.Errorf("dead letter %s accepted %d times, offered %d; want once, offered once", id, c, offers[id])
		}
	}
	if offers[bad] != 3 {
		t.Errorf("refused dead letter offered %d times, want 3", offers[bad])
	}
	if largest < 2 {
		t.Errorf("largest batch %d: the backlog was handed one at a time", largest)
	}
	if d := depth(t, ch, queue); d != 0 {
		t.Errorf("%d messages left in %s, want 0 (all acked)", d, queue)
	}
}
