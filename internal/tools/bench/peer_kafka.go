package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kafkaPeers are the Kafka peers in the order measured; kafka-go has no
// retry or dead-letter facility and runs publish and consume only.
var kafkaPeers = []string{ClientWatermillKafka, ClientKafkaGo}

// peer measures each Kafka peer doing scenario on topics of its own: the
// bench creates the scenario's topic (and for retry and dlq a poison
// topic) with the run's partitions, pre-fills it for the consume-side
// scenarios, runs the peer and then counts what it left: every published
// message (after one warm-up) in the topic, every poisoned one in the
// poison topic.
func (e *kafkaEnv) peer(ctx context.Context, scenario string) ([]Row, error) {
	var rows []Row
	for _, p := range kafkaPeers {
		if p == ClientKafkaGo && scenario != ScenarioPublish && scenario != ScenarioConsume {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
		r, err := e.peerOne(sctx, p, scenario)
		cancel()
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func (e *kafkaEnv) peerOne(ctx context.Context, peer, scenario string) (Row, error) {
	n := e.cfg.Messages // publish: Sarama's SyncProducer does 5-8 k/s
	if scenario != ScenarioPublish {
		n = e.drainMessages()
	}
	e.progress(scenario, peer)
	topic := e.prefix + ".peer." + peer + "." + scenario
	if err := e.createTopic(ctx, topic); err != nil {
		return Row{}, fmt.Errorf("%s: %w", peer, err)
	}
	req := peerRequest{
		Peer: peer, Scenario: scenario, Brokers: e.brokers, Topic: topic, Group: topic,
		Messages: n, Size: e.cfg.Size, Batch: e.cfg.Batch,
		TimeoutMS: e.cfg.Timeout.Milliseconds(),
	}
	if scenario == ScenarioRetry || scenario == ScenarioDLQ {
		req.PoisonTopic = topic + ".poison"
		if err := e.createTopic(ctx, req.PoisonTopic); err != nil {
			return Row{}, fmt.Errorf("%s: %w", peer, err)
		}
	}
	if scenario != ScenarioPublish {
		if err := e.fill(ctx, topic, n); err != nil {
			return Row{}, err
		}
	}
	r, err := e.peers.run(ctx, req, Kafka)
	if err != nil {
		return Row{}, err
	}
	what, want := topic, int64(n)+1 // the warm-up message
	switch scenario {
	case ScenarioConsume:
		return r, nil
	case ScenarioRetry, ScenarioDLQ:
		what, want = req.PoisonTopic, poisonWant(scenario, n)
	}
	got, err := e.records(ctx, what)
	if err != nil {
		return r, err
	}
	note, err := checkCount(what, got, want)
	r.Note += note
	if err != nil {
		return r, fmt.Errorf("%s: %w", peer, err)
	}
	return r, nil
}

// records returns how many records topic holds: the sum of its
// partitions' end offsets (the run's topics are new and never compacted).
func (e *kafkaEnv) records(ctx context.Context, topic string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	offs, err := e.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	var sum int64
	offs.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	return sum, nil
}
