package bench

import (
	"context"
	"fmt"
)

// peerPublishCap bounds the messages watermill-amqp publishes: it awaits
// each message's confirm before sending the next, about 100–400 a second
// here, so 100,000 would outlast the scenario's default timeout. Its rate
// over this many is as good a measure.
const peerPublishCap = 10_000

// peer measures watermill-amqp doing scenario on a queue of its own: the
// bench declares a durable topic exchange, the scenario's queue (and for
// retry and dlq a poison queue) of the run's queue type, pre-fills the
// queue for the consume-side scenarios, runs the peer and then counts what
// it left: every published message in the queue, every poisoned one in
// the poison queue.
func (e *rabbitEnv) peer(ctx context.Context, scenario string) (Row, error) {
	n := e.cfg.Messages
	capped := scenario == ScenarioPublish && n > peerPublishCap
	if capped {
		n = peerPublishCap
	}
	e.progress(scenario, ClientWatermillAMQP)
	exchange := e.prefix + ".peer"
	queue := exchange + "." + scenario
	if err := e.declare(exchange, queue, scenario); err != nil {
		return Row{}, fmt.Errorf("%s: %w", ClientWatermillAMQP, err)
	}
	req := peerRequest{
		Peer: ClientWatermillAMQP, Scenario: scenario,
		URL: e.cfg.RabbitURL, Exchange: exchange, Queue: queue, QueueType: e.cfg.QueueType,
		Topic: scenario, Messages: n, Size: e.cfg.Size, Batch: e.cfg.Batch,
		Concurrency: e.cfg.Concurrency, Prefetch: 8 * e.cfg.Concurrency,
		TimeoutMS: e.cfg.Timeout.Milliseconds(),
	}
	poison := queue + ".poison"
	if scenario == ScenarioRetry || scenario == ScenarioDLQ {
		req.PoisonTopic = scenario + ".poison"
		if err := e.declare(exchange, poison, req.PoisonTopic); err != nil {
			return Row{}, fmt.Errorf("%s: %w", ClientWatermillAMQP, err)
		}
	}
	if scenario != ScenarioPublish {
		if err := e.rawFill(ctx, exchange, scenario, n); err != nil {
			return Row{}, err
		}
	}
	r, err := e.peers.run(ctx, req, RabbitMQ)
	if err != nil {
		return Row{}, err
	}
	if capped {
		r.Note += fmt.Sprintf("; %d of the row's %d messages (one confirm at a time: the rest would take most of the timeout)", n, e.cfg.Messages)
	}
	what, want := queue, int64(n)
	if scenario != ScenarioPublish {
		what, want = poison, poisonWant(scenario, n)
	}
	if scenario == ScenarioConsume {
		return r, nil
	}
	got, err := e.count(what)
	if err != nil {
		return r, err
	}
	note, err := checkCount(what, got, want)
	r.Note += note
	if err != nil {
		return r, fmt.Errorf("%s: %w", ClientWatermillAMQP, err)
	}
	return r, e.purge(what)
}

// count returns how many messages queue holds.
func (e *rabbitEnv) count(queue string) (int64, error) {
	conn, ch, err := e.dial()
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", queue, err)
	}
	return int64(q.Messages), nil
}
