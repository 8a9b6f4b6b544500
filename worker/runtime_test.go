package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// twoWorkers is a configuration of two workers under a prefix and topic
// of the test's own, removed when the test ends.
func twoWorkers(t *testing.T) string {
	id := broker.NewMessageID()[:6]
	yaml := `
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: worker-test-` + id + `}
workers:
  - {name: payout-executor, topic: worker-test.payouts.` + id + `}
  - {name: refund-executor, topic: worker-test.payouts.` + id + `}
`
	teardown(t, yaml)
	return yaml
}

// quiet returns c with the test defaults: no signal handling, no logs.
func quiet(c worker.Config) worker.Config {
	c.NoSignals, c.Logger = true, slog.New(slog.DiscardHandler)
	return c
}

func TestRunRefusesMismatchedHandlers(t *testing.T) {
	noop := func(context.Context, *broker.Delivery) error { return nil }
	tests := []struct {
		name     string
		handlers worker.Handlers
		want     []error
		mention  []string
	}{
		{"missing handler", worker.Handlers{"payout-executor": noop}, []error{worker.ErrNoHandler}, []string{`"refund-executor"`}},
		{"unknown worker", worker.Handlers{"payout-executor": noop, "refund-executor": noop, "payout-exector": noop},
			[]error{worker.ErrNoWorker}, []string{`"payout-exector"`, "payout-executor, refund-executor"}},
		{"nil handler", worker.Handlers{"payout-executor": noop, "refund-executor": nil}, []error{worker.ErrNoHandler}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, err := worker.Parse(t.Context(), []byte(twoWorkers(t)), quiet(worker.Config{}))
			if err != nil {
				testenv.RabbitMQ.Fail(t, err)
			}
			err = rt.Run(t.Context(), tt.handlers)
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("Run = %v, want %v", err, w)
				}
			}
			for _, m := range tt.mention {
				if err == nil || !strings.Contains(err.Error(), m) {
					t.Errorf("error %v does not mention %s", err, m)
				}
			}
		})
	}
}

// broker: names a linked backend (a registered driver.Descriptor): the
// built-in ones, which worker.Load links, or one the program imports.
func TestParseRejectsUnlinkedBackend(t *testing.T) {
	_, err := worker.Parse(t.Context(), []byte("broker: pigeon\nworkers: [{name: w, topic: t}]\n"), quiet(worker.Config{}))
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), `broker: "pigeon" is not kafka, memory or rabbitmq`) {
		t.Fatalf("Parse with an unlinked backend = %v, want config.ErrInvalid naming the linked backends", err)
	}
}

func TestParseRejectsBadConfig(t *testing.T) {
	_, err := worker.Parse(t.Context(), []byte("broker: rabbitmq\nworkers:\n  - {name: w, topic: t, retry: {max_retries: -1}}\n"), quiet(worker.Config{}))
	if err == nil || !strings.Contains(err.Error(), "workers[0].retry.max_retries") {
		t.Fatalf("Parse = %v, want an error naming workers[0].retry.max_retries", err)
	}
}

// A worker with an endpoint is redrive relay's: a runtime runs it only
// when Config.Workers names it, and the others then not.
func TestWorkersSelection(t *testing.T) {
	yaml := twoWorkers(t)
	i := strings.Index(yaml, "- {name: refund-executor")
	end := i + strings.IndexByte(yaml[i:], '}')
	yaml = yaml[:end] + `, endpoint: {url: "http://127.0.0.1:1/"}` + yaml[end:]
	groups := func(rt *worker.Runtime) []string {
		var out []string
		for _, s := range rt.Subscriptions() {
			out = append(out, s.Group)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		workers []string
		want    string
	}{
		{"default: the Go workers", nil, "payout-executor"},
		{"named", []string{"refund-executor"}, "refund-executor"},
		{"both", []string{"refund-executor", "payout-executor"}, "payout-executor refund-executor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := worker.Parse(t.Context(), []byte(yaml), quiet(worker.Config{Workers: tc.workers}))
			if err != nil {
				testenv.RabbitMQ.Fail(t, err)
			}
			t.Cleanup(func() { _ = rt.Broker().Close() })
			if got := strings.Join(groups(rt), " "); got != tc.want {
				t.Errorf("subscriptions = %q, want %q", got, tc.want)
			}
		})
	}
	_, err := worker.Parse(t.Context(), []byte(yaml), quiet(worker.Config{Workers: []string{"nobody"}}))
	if !errors.Is(err, worker.ErrNoWorker) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("Parse naming an unknown worker = %v, want ErrNoWorker naming it", err)
	}
	if err := (worker.Config{Workers: []string{""}}).Validate(); err == nil || !strings.Contains(err.Error(), "Config.Workers[0]") {
		t.Errorf("Validate of an empty name = %v", err)
	}
}
