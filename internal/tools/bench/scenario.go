package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/redrive/redrive/broker"
)

// base is what the runs of both brokers share: the configuration, the
// broker's name and the redrive broker under test.
type base struct {
	cfg     Config
	broker  string        // Kafka or RabbitMQ
	redrive broker.Broker // the redrive broker under test, once connected
	// rounds is how many times the consume, retry and dlq scenarios
	// drain their pre-filled topic, each in a new group, reporting the
	// median round (Kafka: kafkaEnv.consume, failingRounds; a RabbitMQ
	// queue is drained once).
	rounds int
}

// progress reports the measurement of scenario by client starting.
func (e *base) progress(scenario, client string) {
	if e.cfg.Progress != nil {
		e.cfg.Progress(scenario, e.broker, client)
	}
	e.cfg.Logger.Info("bench: measuring", "scenario", scenario, "broker", e.broker, "client", client)
}

func (e *base) env() *base { return e }

// step is one scenario of a run and what measures it.
type step struct {
	scenario string
	run      func(context.Context) ([]Row, error)
}

// runSteps runs the steps the configuration selects, in order, each
// bounded by cfg.Timeout, and after each one the peers take part in (peer
// nil: no peers) the peers' run of it; the rows go to *rows as they come,
// so that later steps compare with earlier rows.
func (e *base) runSteps(ctx context.Context, steps []step, rows *[]Row, peer func(context.Context, string) ([]Row, error)) error {
	for _, s := range steps {
		if !e.cfg.runs(s.scenario) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
		rs, err := s.run(sctx)
		cancel()
		*rows = append(*rows, rs...)
		if err != nil {
			return fmt.Errorf("%s: %w", s.scenario, err)
		}
		if peer != nil && runsPeers(s.scenario) {
			rs, err := peer(ctx, s.scenario)
			*rows = append(*rows, rs...)
			if err != nil {
				return fmt.Errorf("%s: %w", s.scenario, err)
			}
		}
	}
	return nil
}

// drainer is a broker's run as the drain scenarios use it: a new
// subscription, and a raw pre-fill of its topic or queue.
type drainer interface {
	env() *base
	sub(ctx context.Context, name string) (broker.Subscription, error)
	fill(ctx context.Context, topic string, n int) error
}

// redriveDrain pre-fills a new subscription's topic or queue and times
// Consume draining it once with the handler of mode.
func redriveDrain(ctx context.Context, d drainer, scenario, mode string) (Row, error) {
	s, n, err := prepare(ctx, d, scenario)
	if err != nil {
		return Row{}, err
	}
	e := d.env()
	return consumeThrough(ctx, e.redrive, s, n, scenario, e.broker, mode, e.cfg.Timeout)
}

// prepare declares the subscription of scenario and pre-fills its topic
// or queue with the drain's messages (drainMessages), how many it returns.
func prepare(ctx context.Context, d drainer, scenario string) (broker.Subscription, int, error) {
	e := d.env()
	n := e.drainMessages()
	e.progress(scenario, ClientRedrive)
	s, err := d.sub(ctx, scenario)
	if err != nil {
		return s, 0, err
	}
	return s, n, d.fill(ctx, s.Topic, n)
}

// failing runs the retry or dlq scenario, notes saying what its handler
// does by mode, and compares it with the no-failure redrive consume row
// of prior, when there is one.
//
// With rounds (Kafka), each round of the failing drain follows a
// no-failure redrive drain of the same topic in a group of its own, and
// the row's ratio is the median of the rounds' ratios (failingRounds).
func failing(ctx context.Context, d drainer, mode string, notes map[string]string, prior []Row) ([]Row, error) {
	if d.env().rounds > 1 {
		r, err := failingRounds(ctx, d, mode)
		if err != nil {
			return nil, err
		}
		r.Note = notes[mode] + "; " + r.Note
		return []Row{r}, nil
	}
	r, err := redriveDrain(ctx, d, mode, mode)
	if err != nil {
		return nil, err
	}
	r.Note = notes[mode] + "; " + r.Note
	for _, p := range prior {
		if p.Scenario == ScenarioConsume && p.Client == ClientRedrive && p.Broker == d.env().broker {
			compare(&r, p, "consume", 0.8)
		}
	}
	return []Row{r}, nil
}

// drainMessages is how many messages a consume, retry or dlq drain
// takes: Config.KafkaMessages on Kafka, Config.Messages on RabbitMQ.
func (e *base) drainMessages() int {
	if e.broker == Kafka {
		return e.cfg.KafkaMessages
	}
	return e.cfg.Messages
}

// publishTimed publishes batches to topic through the redrive broker,
// timing each call, and returns the redrive row of scenario (n messages).
func (e *base) publishTimed(ctx context.Context, scenario, topic string, n int, batches [][]broker.Message) (Row, error) {
	lat := make([]time.Duration, 0, len(batches))
	m := startMeter()
	for _, batch := range batches {
		t0 := time.Now()
		if err := e.redrive.Publish(ctx, topic, batch...); err != nil {
			return Row{}, err
		}
		lat = append(lat, time.Since(t0))
	}
	el, u := m.stop()
	return row(scenario, e.broker, ClientRedrive, n, el, u).withLatencies(lat), nil
}

// failingRounds runs the rounds of the failing scenario mode, each after
// a no-failure drain of the same topic (a consume round beside it whose
// handler reads the sequence header as the failing one does), and
// returns the median round graded by the median of the rounds' ratios
// (compareRounds).
func failingRounds(ctx context.Context, d drainer, mode string) (Row, error) {
	s, n, err := prepare(ctx, d, mode)
	if err != nil {
		return Row{}, err
	}
	e := d.env()
	rs, bases := make([]Row, 0, e.rounds), make([]Row, 0, e.rounds)
	for i := range e.rounds {
		c := s
		c.Group = fmt.Sprintf("%s-consume-%d", s.Group, i)
		base, err := consumeThrough(ctx, e.redrive, c, n, ScenarioConsume, e.broker, failNever, e.cfg.Timeout)
		if err != nil {
			return Row{}, err
		}
		g := s
		g.Group = fmt.Sprintf("%s-%d", s.Group, i)
		r, err := consumeThrough(ctx, e.redrive, g, n, mode, e.broker, mode, e.cfg.Timeout)
		if err != nil {
			return Row{}, err
		}
		rs, bases = append(rs, r), append(bases, base)
	}
	r := medianRow(rs)
	compareRounds(&r, rs, bases, "consume", 0.8)
	r.Note = "each round after a drain of the same topic by the same handler without failures; " + r.Note
	return r, nil
}
