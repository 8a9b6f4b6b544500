package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/dlq"
)

// kafkaPartitions is the partition count of every topic of the run; the
// consumers of both sides run one worker per partition.
const kafkaPartitions = 3

// kafkaEnv is one run's Kafka set-up: the cluster, a redrive broker, a raw
// producer and the topics to delete at the end.
type kafkaEnv struct {
	base
	peers   *peerRunner // nil without Config.Peers
	prefix  string
	brokers []string
	b       *kafka.Broker
	prod    *kgo.Client
	adm     *kadm.Client
	topics  []string
}

func runKafka(ctx context.Context, cfg Config, prefix string, peers *peerRunner) (rows []Row, err error) {
	e := &kafkaEnv{base: base{cfg: cfg, broker: Kafka, rounds: consumeRounds}, prefix: prefix, brokers: cfg.KafkaBrokers, peers: peers}
	if len(e.brokers) == 0 {
		// Share group members learn a new assignment at their next
		// heartbeat: 5 s by default, longer than a share drain, which
		// then measured the group's forming more than its consuming.
		c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "200"}))
		if err != nil {
			return nil, fmt.Errorf("start kfake: %w", err)
		}
		defer c.Close()
		e.brokers = c.ListenAddrs()
	}
	e.b, err = kafka.New(ctx, kafka.Config{
		Brokers:    e.brokers,
		Partitions: kafkaPartitions,
		ClientID:   "redrive-bench",
		// The keeper scenario's group, the run's own.
		KeeperGroup: prefix + ".keeper",
		Logger:      cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	defer e.b.Close()
	e.redrive = e.b
	e.prod, err = kgo.NewClient(
		kgo.SeedBrokers(e.brokers...),
		kgo.ClientID("raw-bench"),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotent by default
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return nil, fmt.Errorf("raw producer: %w", err)
	}
	defer e.prod.Close()
	e.adm = kadm.NewClient(e.prod)
	defer func() {
		if len(e.topics) == 0 {
			return
		}
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, derr := e.adm.DeleteTopics(dctx, e.topics...); derr != nil && err == nil {
			err = fmt.Errorf("cleanup: delete topics: %w", derr)
		}
	}()

	steps := []step{
		{ScenarioPublish, e.publish},
		{ScenarioConsume, e.consume},
		{ScenarioRetry, func(ctx context.Context) ([]Row, error) { return failing(ctx, e, failRetry, kafkaNotes, rows) }},
		{ScenarioDLQ, func(ctx context.Context) ([]Row, error) { return failing(ctx, e, failDLQ, kafkaNotes, rows) }},
		{ScenarioShare, e.share},
		{ScenarioKeeper, func(ctx context.Context) ([]Row, error) { return keeperScenario(ctx, e, kafka.Name) }},
		{ScenarioRelay, func(ctx context.Context) ([]Row, error) { return relayScenario(ctx, e) }},
		{ScenarioEffects, func(ctx context.Context) ([]Row, error) { return effectsScenario(ctx, e) }},
		{ScenarioScrape, e.scrape},
	}
	var peer func(context.Context, string) ([]Row, error)
	if peers != nil {
		peer = e.peer
	}
	err = e.runSteps(ctx, steps, &rows, peer)
	return rows, err
}

// kafkaNotes say what the handler of the retry and dlq scenarios does.
var kafkaNotes = map[string]string{
	failRetry: "10 % fail once, blocking retry at once",
	failDLQ:   "1 % permanent → <topic>.dlq",
}

// sub declares a subscription (its topic, retry and dead-letter topics)
// and remembers the topics for cleanup.
func (e *kafkaEnv) sub(ctx context.Context, name string) (broker.Subscription, error) {
	s := broker.Subscription{
		Topic:           e.prefix + "." + name,
		Group:           name,
		Policy:          benchPolicy,
		Concurrency:     kafkaPartitions,
		ShutdownTimeout: 5 * time.Second,
	}
	e.topics = append(e.topics, s.Topic, kafka.DLQTopic(s.Topic), kafka.RetryTopic(s.Topic, s.Group))
	return s, e.b.Declare(ctx, s)
}

// rawTopic creates a topic for the raw client.
func (e *kafkaEnv) rawTopic(ctx context.Context, name string) (string, error) {
	topic := e.prefix + ".raw." + name
	return topic, e.createTopic(ctx, topic)
}

// createTopic creates topic with the run's partitions and remembers it for
// cleanup.
func (e *kafkaEnv) createTopic(ctx context.Context, topic string) error {
	e.topics = append(e.topics, topic)
	resp, err := e.adm.CreateTopics(ctx, kafkaPartitions, -1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// records turns a batch of messages into raw records.
func records(topic string, batch []broker.Message) []*kgo.Record {
	recs := make([]*kgo.Record, len(batch))
	for i, m := range batch {
		recs[i] = &kgo.Record{Topic: topic, Value: m.Value,
			Headers: []kgo.RecordHeader{{Key: headerSeq, Value: []byte(m.Headers[headerSeq])}}}
	}
	return recs
}

// recordsWithID is records with a new message id header on each, as
// redrive's Publish writes it.
func recordsWithID(topic string, batch []broker.Message) []*kgo.Record {
	recs := records(topic, batch)
	for _, r := range recs {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: driver.HeaderMessageID, Value: driver.AppendMessageID(nil)})
	}
	return recs
}

// produce writes recs and waits for every acknowledgement.
func (e *kafkaEnv) produce(ctx context.Context, recs []*kgo.Record) error {
	if err := e.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("raw: produce: %w", err)
	}
	return nil
}

// publishRounds is how many times the Kafka publish row writes its
// messages through each client, in turn: a round of 100,000 lasts a
// tenth of a second, and the rounds' ratios swung 0.66–1.06 in one run.
const publishRounds = 15

// publish: redrive Publish in batches vs raw ProduceSync with the same
// batches (idempotent, acks=all, no linger), publishRounds rounds in turn,
// each pair on topics of its own, deleted after it (kfake keeps every
// record in memory). As for consume, each row is its client's median
// round and the ratio the median of the rounds' ratios.
func (e *kafkaEnv) publish(ctx context.Context) ([]Row, error) {
	n := e.cfg.Messages
	batches := messages(n, e.cfg.Batch, body(e.cfg.Size))
	var raws, ids, rds []Row
	for i := range publishRounds {
		e.progress(ScenarioPublish, ClientRaw)
		topic, err := e.rawTopic(ctx, fmt.Sprintf("publish-%d", i))
		if err != nil {
			return nil, err
		}
		raw, err := e.publishRaw(ctx, topic, n, batches, records)
		if err != nil {
			return nil, err
		}
		idTopic, err := e.rawTopic(ctx, fmt.Sprintf("publish-id-%d", i))
		if err != nil {
			return nil, err
		}
		id, err := e.publishRaw(ctx, idTopic, n, batches, recordsWithID)
		if err != nil {
			return nil, err
		}
		id.Client = ClientRawID
		e.progress(ScenarioPublish, ClientRedrive)
		s, err := e.sub(ctx, fmt.Sprintf("publish-%d", i))
		if err != nil {
			return nil, err
		}
		if err := e.b.Publish(ctx, s.Topic, batches[0][0]); err != nil { // warm-up
			return nil, err
		}
		rd, err := e.publishTimed(ctx, ScenarioPublish, s.Topic, n, batches)
		if err != nil {
			return nil, err
		}
		raws, ids, rds = append(raws, raw), append(ids, id), append(rds, rd)
		if err := e.dropTopics(ctx, topic, idTopic, s.Topic); err != nil {
			return nil, err
		}
	}
	raw, id, rd := medianRow(raws), medianRow(ids), medianRow(rds)
	compareRounds(&rd, rds, raws, ClientRaw, 0.95)
	if x, _, ok := medianRatio(rds, ids); ok {
		rd.Note = fmt.Sprintf("%.2f × raw with the same id header (median of the rounds' ratios); %s", x, rd.Note)
	}
	return []Row{raw, id, rd}, nil
}

// publishRaw times the raw producer writing batches to topic as build
// makes them (records, recordsWithID), after a warm-up record.
func (e *kafkaEnv) publishRaw(ctx context.Context, topic string, n int, batches [][]broker.Message, build func(string, []broker.Message) []*kgo.Record) (Row, error) {
	if err := e.produce(ctx, build(topic, batches[0][:1])); err != nil { // warm-up
		return Row{}, err
	}
	lat := make([]time.Duration, 0, len(batches))
	m := startMeter()
	for _, batch := range batches {
		t0 := time.Now()
		if err := e.produce(ctx, build(topic, batch)); err != nil {
			return Row{}, err
		}
		lat = append(lat, time.Since(t0))
	}
	el, u := m.stop()
	return row(ScenarioPublish, Kafka, ClientRaw, n, el, u).withLatencies(lat), nil
}

// dropTopics deletes topics now (they stay on the cleanup list; deleting
// a missing topic there is harmless).
func (e *kafkaEnv) dropTopics(ctx context.Context, topics ...string) error {
	resp, err := e.adm.DeleteTopics(ctx, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("delete topics %v: %w", topics, err)
	}
	return nil
}

// fill writes n sequence-numbered records to topic (not measured).
func (e *kafkaEnv) fill(ctx context.Context, topic string, n int) error {
	for _, batch := range messages(n, 1000, body(e.cfg.Size)) {
		if err := e.produce(ctx, records(topic, batch)); err != nil {
			return fmt.Errorf("pre-fill %s: %w", topic, err)
		}
	}
	return nil
}

// rawRelay drains n pre-filled records of a raw topic through the raw
// consumer (a goroutine per partition), each POSTed by post before it is
// marked for commit.
func (e *kafkaEnv) rawRelay(ctx context.Context, name string, n int, post func(relayMsg) error) (Row, error) {
	topic, err := e.rawTopic(ctx, name)
	if err != nil {
		return Row{}, err
	}
	if err := e.fill(ctx, topic, n); err != nil {
		return Row{}, err
	}
	return e.rawDrain(ctx, ScenarioRelay, topic, e.prefix+".raw."+name, n, false, func(r *kgo.Record) error {
		// A record without a message id: the relay's ce-id is its position.
		id := r.Topic + "-" + strconv.FormatInt(int64(r.Partition), 10) + "-" + strconv.FormatInt(r.Offset, 10)
		var seq string
		for _, h := range r.Headers {
			if h.Key == headerSeq {
				seq = string(h.Value)
			}
		}
		return post(relayMsg{id: id, topic: r.Topic, seq: seq, at: r.Timestamp, body: r.Value})
	})
}

// dlqOf names the DLQ topic of s's topic.
func (e *kafkaEnv) dlqOf(s broker.Subscription) string { return kafka.DLQTopic(s.Topic) }

// rawDrainDLQ drains n dead letters of topic through a raw group consumer.
func (e *kafkaEnv) rawDrainDLQ(ctx context.Context, topic string, n int) (Row, error) {
	return e.rawDrain(ctx, ScenarioKeeper, topic, e.prefix+".raw.keeper", n, false, nil)
}

// keeperSource is the redrive broker: its ConsumeDeadLetterBatches as
// Config.KeeperGroup.
func (e *kafkaEnv) keeperSource() dlq.Source { return e.b }

// held is the sum of topic's end offsets.
func (e *kafkaEnv) held(ctx context.Context, topic string) (int64, error) {
	ends, err := e.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n, nil
}

// left is the keeper group's lag on topic: the end offsets past its
// committed ones.
func (e *kafkaEnv) left(ctx context.Context, topic string) (int64, error) {
	ends, err := e.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	committed, err := e.adm.FetchOffsets(ctx, e.prefix+".keeper")
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("offsets of the keeper group: %w", err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		at := int64(0)
		if c, ok := committed.Lookup(topic, o.Partition); ok {
			at = c.At
		}
		n += o.Offset - at
	})
	return n, nil
}
