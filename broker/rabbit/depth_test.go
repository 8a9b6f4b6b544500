package rabbit_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func newDepthMonitor(t testing.TB, url string) *rabbit.DepthMonitor {
	t.Helper()
	r, err := rabbit.NewDepthMonitor(rabbit.DepthConfig{URL: url, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestDepth(t *testing.T) {
	t.Parallel()
	ch := testenv.AMQP(t)
	full := testenv.FilledQueue(t, ch, 7)
	empty := testenv.FilledQueue(t, ch, 0)
	missing := "depth-test.missing." + broker.NewMessageID()[:8]
	r := newDepthMonitor(t, testenv.RabbitMQ.URL())

	got, err := r.Measure(t.Context(), full, missing, empty)
	if err != nil {
		t.Fatalf("Measure: %v", err)
	}
	want := []driver.QueueDepth{
		{Queue: full, Exists: true, Messages: 7},
		{Queue: missing},
		{Queue: empty, Exists: true}, // measured on a new channel after the 404
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Measure = %+v, want %+v", got, want)
	}

	// A consumer with prefetch 1 takes one message unacknowledged: ready
	// drops to 6 (unacked messages are not counted) and consumers reads 1.
	cch := testenv.AMQP(t)
	if err := cch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := cch.Consume(full, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-deliveries:
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery within 5s")
	}
	got, err = r.Measure(t.Context(), full)
	if err != nil {
		t.Fatal(err)
	}
	if want := (driver.QueueDepth{Queue: full, Exists: true, Messages: 6, Consumers: 1}); got[0] != want {
		t.Fatalf("with a consumer: %+v, want %+v", got[0], want)
	}
}

func TestDepthUnreachable(t *testing.T) {
	t.Parallel()
	r := newDepthMonitor(t, "amqp://guest:secret@"+testenv.ClosedAddr(t)+"/")
	_, err := r.Measure(t.Context(), "q")
	if !errors.Is(err, driver.ErrUnavailable) {
		t.Fatalf("Measure against a closed port = %v, want driver.ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error leaks the password: %v", err)
	}
	if _, err := rabbit.NewDepthMonitor(rabbit.DepthConfig{URL: "http://nope"}); !errors.Is(err, rabbit.ErrInvalidConfig) {
		t.Errorf("NewDepthMonitor(bad url) = %v, want ErrInvalidConfig", err)
	}
}

// With several URLs the first that answers is measured through, and the
// passwords of all of them stay hidden when none does.
func TestDepthURLs(t *testing.T) {
	t.Parallel()
	q := testenv.FilledQueue(t, testenv.AMQP(t), 3)
	r, err := rabbit.NewDepthMonitor(rabbit.DepthConfig{URLs: []string{"amqp://guest:one-S3CRET@" + testenv.ClosedAddr(t) + "/", testenv.RabbitMQ.URL()}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	got, err := r.Measure(t.Context(), q)
	if err != nil || got[0].Messages != 3 {
		t.Fatalf("Measure through the second URL = %+v, %v; want 3 messages", got, err)
	}
	down, err := rabbit.NewDepthMonitor(rabbit.DepthConfig{URLs: []string{"amqp://guest:one-S3CRET@" + testenv.ClosedAddr(t) + "/", "amqp://guest:two-S3CRET@" + testenv.ClosedAddr(t) + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = down.Measure(t.Context(), q)
	if !errors.Is(err, driver.ErrUnavailable) || strings.Contains(err.Error(), "S3CRET") {
		t.Fatalf("Measure with no URL answering = %v, want driver.ErrUnavailable without passwords", err)
	}
	if _, err := rabbit.NewDepthMonitor(rabbit.DepthConfig{URL: testenv.RabbitMQ.URL(), URLs: []string{testenv.RabbitMQ.URL()}}); !errors.Is(err, rabbit.ErrInvalidConfig) {
		t.Errorf("NewDepthMonitor(url and urls) = %v, want ErrInvalidConfig", err)
	}
}

func TestDepthWorkerQueues(t *testing.T) {
	t.Parallel()
	n := rabbit.Names{Prefix: "redrive"}
	tests := []struct {
		mode string
		want []string
	}{
		{rabbit.DelayHops, []string{"redrive.delay.1000", "redrive.delay.4000", "redrive.delay.16000"}},
		// Levels in declaration order: the last first, so that each level's
		// dead-letter target exists when it is declared.
		{rabbit.DelayRoute, []string{"redrive.route.2.1", "redrive.route.2.2", "redrive.route.2.3",
			"redrive.route.1.1", "redrive.route.1.2", "redrive.route.1.3",
			"redrive.route.0.1", "redrive.route.0.2", "redrive.route.0.3"}},
	}
	for _, tt := range tests {
		delay, err := rabbit.DelayQueues(rabbit.Config{Prefix: "redrive", Delay: rabbit.DelayConfig{Mode: tt.mode, Resolution: time.Second, Factor: 4, Levels: 3}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(delay, tt.want) {
			t.Errorf("%s: DelayQueues = %v, want %v", tt.mode, delay, tt.want)
		}
		queues := rabbit.WorkerQueues(n, delay, []broker.Subscription{{Topic: "escrow.commands", Group: "payout-executor"}})
		var got []string
		for _, q := range queues {
			got = append(got, q.Name)
			// Only group queues and DLQs expect a consumer, and they name
			// their worker.
			worker := q.Topic == "escrow.commands" && q.Group == "payout-executor"
			if q.Role == "" || q.Role.ExpectsConsumer() != (q.Role == driver.RoleGroup || q.Role == driver.RoleDLQ) || worker != q.Role.ExpectsConsumer() {
				t.Errorf("%s: %+v", tt.mode, q)
			}
		}
		want := append(append([]string{"escrow.commands.payout-executor", "escrow.commands.payout-executor.dlq"}, tt.want...), "redrive.unroutable")
		if !slices.Equal(got, want) {
			t.Errorf("%s: WorkerQueues = %v, want %v", tt.mode, got, want)
		}
	}
}
