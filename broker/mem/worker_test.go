package mem_test

import (
	"context"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/mem"
	"github.com/redrive/redrive/worker"
)

// TestWorkerRuntime: a program's own configuration runs on the
// in-memory broker with `broker: memory` (worker.Parse links it through
// the assembly): its workers join the process's Server, which the test
// waits on and inspects.
func TestWorkerRuntime(t *testing.T) {
	topic := "rt." + broker.NewMessageID()[:8] // the process's Server is shared
	yaml := `
broker: memory
workers:
  - name: payer
    topic: ` + topic + `
    retry: {max_retries: 1, backoff: "10ms"}
`
	r, err := worker.Parse(t.Context(), []byte(yaml), worker.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := r.Broker().(*mem.Broker)
	if !ok || b.Server() != mem.Default() {
		t.Fatalf("the runtime's broker is a %T, want a *mem.Broker of mem.Default()", r.Broker())
	}
	srv := b.Server()
	rec := &calls{clock: mem.NewClock(t0)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- r.Run(ctx, worker.Handlers{"payer": rec.handler(func(d *broker.Delivery) error {
			if d.Attempt == 1 {
				return boom("once")
			}
			return nil
		})})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	waitFor(t, srv, "the runtime to consume", func() bool { return srv.Stats(topic, "payer").Consumers == 1 })
	publish(t, b, topic, messages("rt", 5)...)
	drain(t, srv)
	if h := rec.handled(); len(h) != 5 || len(rec.snapshot()) != 10 {
		t.Errorf("handled %v in %d calls, want 5 messages in 10 calls (each failed once)", h, len(rec.snapshot()))
	}
}
