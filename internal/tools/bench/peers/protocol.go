package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"
)

// Peer names of Request.Peer.
const (
	WatermillAMQP  = "watermill-amqp"
	WatermillKafka = "watermill-kafka"
	KafkaGo        = "kafka-go"
)

// Scenario names of Request.Scenario, as the bench's.
const (
	ScenarioPublish = "publish"
	ScenarioConsume = "consume"
	ScenarioRetry   = "retry"
	ScenarioDLQ     = "dlq"
)

// headerSeq numbers the pre-filled messages from 0, as the bench's.
const headerSeq = "bench-seq"

// Request is the one JSON line the bench writes to the peer's stdin.
type Request struct {
	Peer     string `json:"peer"`
	Scenario string `json:"scenario"`
	// URL is the RabbitMQ broker (watermill-amqp).
	URL string `json:"url,omitempty"`
	// Exchange is the durable topic exchange the bench declared; Queue its
	// durable queue of type QueueType, bound with the key Topic
	// (watermill-amqp).
	Exchange  string `json:"exchange,omitempty"`
	Queue     string `json:"queue,omitempty"`
	QueueType string `json:"queue_type,omitempty"`
	// Brokers are the Kafka seed brokers (watermill-kafka, kafka-go).
	Brokers []string `json:"brokers,omitempty"`
	// Topic is the Kafka topic, or the RabbitMQ routing key, of the
	// scenario.
	Topic string `json:"topic"`
	// PoisonTopic is where retry and dlq send what fails for good (a
	// routing key bound to a queue on RabbitMQ, a topic on Kafka).
	PoisonTopic string `json:"poison_topic,omitempty"`
	// Group is the Kafka consumer group.
	Group string `json:"group,omitempty"`
	// Messages is how many messages to publish or to drain.
	Messages int `json:"messages"`
	// Size is the body size of published messages in bytes.
	Size int `json:"size"`
	// Batch is how many messages one Publish / WriteMessages call carries.
	Batch int `json:"batch"`
	// Concurrency is the RabbitMQ consumers (each a channel of its own)
	// and Prefetch their prefetch in total.
	Concurrency int `json:"concurrency"`
	Prefetch    int `json:"prefetch"`
	// TimeoutMS bounds the measurement.
	TimeoutMS int64 `json:"timeout_ms"`
}

// scenarios lists what each peer runs.
var scenarios = map[string][]string{
	WatermillAMQP:  {ScenarioPublish, ScenarioConsume, ScenarioRetry, ScenarioDLQ},
	WatermillKafka: {ScenarioPublish, ScenarioConsume, ScenarioRetry, ScenarioDLQ},
	KafkaGo:        {ScenarioPublish, ScenarioConsume},
}

// Validate reports the first problem of r, naming the field.
func (r Request) Validate() error {
	ss, ok := scenarios[r.Peer]
	switch {
	case !ok:
		return fmt.Errorf("peer %q is not %s, %s or %s", r.Peer, WatermillAMQP, WatermillKafka, KafkaGo)
	case !slices.Contains(ss, r.Scenario):
		return fmt.Errorf("scenario %q is not one of %s for %s", r.Scenario, strings.Join(ss, ", "), r.Peer)
	case r.Topic == "":
		return errors.New("topic is empty")
	case r.Messages <= 0 || r.Size < 0 || r.Batch <= 0 || r.TimeoutMS <= 0:
		return errors.New("messages, batch and timeout_ms must be positive, size not negative")
	case (r.Scenario == ScenarioRetry || r.Scenario == ScenarioDLQ) && r.PoisonTopic == "":
		return fmt.Errorf("poison_topic is empty for %s", r.Scenario)
	}
	if r.Peer == WatermillAMQP {
		switch {
		case r.URL == "" || r.Exchange == "" || r.Queue == "":
			return errors.New("url, exchange and queue are required for " + WatermillAMQP)
		case r.Concurrency <= 0 || r.Prefetch <= 0:
			return errors.New("concurrency and prefetch must be positive")
		}
		return nil
	}
	switch {
	case len(r.Brokers) == 0:
		return errors.New("brokers is empty")
	case r.Group == "" && r.Scenario != ScenarioPublish:
		return errors.New("group is empty")
	}
	return nil
}

// Event is one JSON line the peer writes to stdout.
type Event struct {
	Event string `json:"event"` // "start", "result" or "error"
	// Result figures, over the measured interval.
	Messages  int   `json:"messages,omitempty"`
	ElapsedNS int64 `json:"elapsed_ns,omitempty"`
	// FirstNS is the time from the start to the first message done
	// (consume-side scenarios): the consumer's start-up.
	FirstNS int64 `json:"first_ns,omitempty"`
	// CPUNS is the peer process's user+system CPU time.
	CPUNS   int64  `json:"cpu_ns,omitempty"`
	Mallocs uint64 `json:"mallocs,omitempty"`
	// P50NS, P99NS and MaxNS are per publish call (publish).
	P50NS int64 `json:"p50_ns,omitempty"`
	P99NS int64 `json:"p99_ns,omitempty"`
	MaxNS int64 `json:"max_ns,omitempty"`
	// Note says how the peer was configured and where its guarantees
	// differ from redrive's.
	Note  string `json:"note,omitempty"`
	Error string `json:"error,omitempty"`
}

// result is what a scenario returns.
type result struct {
	messages int
	// end is when the last message was done; the zero time means when the
	// scenario returned.
	end   time.Time
	first time.Duration
	lat   []time.Duration
	note  string
}

// scenarioFunc runs one scenario: it calls m.start when the measured
// interval begins and m.finish when it ends, then cleans up.
type scenarioFunc func(ctx context.Context, r Request, m *meter, log *slog.Logger) error

// run reads the request from in, runs it and writes the events to out; it
// returns the exit status.
func run(ctx context.Context, in io.Reader, out, errOut io.Writer) int {
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	enc := json.NewEncoder(out)
	fail := func(err error) int {
		_ = enc.Encode(Event{Event: "error", Error: err.Error()})
		return 1
	}
	line, err := bufio.NewReaderSize(in, 64<<10).ReadBytes('\n')
	if err != nil && (err != io.EOF || len(line) == 0) {
		return fail(fmt.Errorf("read request: %w", err))
	}
	var r Request
	if err := json.Unmarshal(line, &r); err != nil {
		return fail(fmt.Errorf("decode request: %w", err))
	}
	if err := r.Validate(); err != nil {
		return fail(fmt.Errorf("request: %w", err))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(r.TimeoutMS)*time.Millisecond)
	defer cancel()
	m := &meter{enc: enc}
	if err := scenarioOf(r)(ctx, r, m, log); err != nil {
		return fail(fmt.Errorf("%s %s: %w", r.Peer, r.Scenario, err))
	}
	if !m.finished {
		return fail(fmt.Errorf("%s %s: the measurement never finished", r.Peer, r.Scenario))
	}
	return 0
}

// scenarioOf returns the function of a validated request.
func scenarioOf(r Request) scenarioFunc {
	switch r.Peer {
	case WatermillAMQP:
		if r.Scenario == ScenarioPublish {
			return amqpPublish
		}
		return amqpConsume
	case WatermillKafka:
		if r.Scenario == ScenarioPublish {
			return saramaPublish
		}
		return saramaConsume
	default:
		if r.Scenario == ScenarioPublish {
			return kafkaGoPublish
		}
		return kafkaGoConsume
	}
}

// meter times the measured interval and takes the process's CPU time and
// allocations at its ends.
type meter struct {
	enc      *json.Encoder
	started  bool
	finished bool
	t0       time.Time
	u0       usage
}

// start marks the beginning of the measured interval and tells the bench.
func (m *meter) start() error {
	m.started = true
	m.u0 = readUsage()
	m.t0 = time.Now()
	return m.enc.Encode(Event{Event: "start"})
}

// finish marks the end of the measured interval and writes the result
// event of res, timed from start to res.end (now when zero).
func (m *meter) finish(res result) error {
	if !m.started {
		return errors.New("finish before start")
	}
	m.finished = true
	return m.enc.Encode(m.event(res, readUsage()))
}

// event is the result event of res given the usage u at its end.
func (m *meter) event(res result, u usage) Event {
	end := res.end
	if end.IsZero() {
		end = time.Now()
	}
	ev := Event{
		Event:     "result",
		Messages:  res.messages,
		ElapsedNS: int64(end.Sub(m.t0)),
		FirstNS:   int64(res.first),
		CPUNS:     int64(u.cpu - m.u0.cpu),
		Mallocs:   u.mallocs - m.u0.mallocs,
		Note:      res.note,
	}
	if len(res.lat) > 0 {
		sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
		ev.P50NS = int64(percentile(res.lat, 0.50))
		ev.P99NS = int64(percentile(res.lat, 0.99))
		ev.MaxNS = int64(res.lat[len(res.lat)-1])
	}
	return ev
}

// percentile returns the p-quantile of sorted ds (nearest rank), as the
// bench's.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}
