package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/retrypolicy"
)

// ScenarioShare is the Kafka share-group scenario (retry mode share,
// KIP-932): a pre-filled topic drained by redrive's share-mode Consume
// and by raw franz-go share consumers, then by redrive with 10 % of the
// records failing once (a short back-off, held under the lock) and with
// 1 % dead-lettered.
const ScenarioShare = "share"

// Share scenario settings: both sides run shareMembers members of the
// share group taking shareMaxRecords records per poll, and as many
// handlers (the raw clients handle their records inline, one goroutine
// each).
const (
	shareMembers    = 2*kafkaPartitions + 1 // kafka.Config.ShareMembers's default
	shareMaxRecords = 500                   // franz-go's ShareMaxRecords default
	// shareBackoff is the share retry row's back-off: short, so waited
	// out holding the record.
	shareBackoff = 10 * time.Millisecond
)

// Clients of the share scenario's rows besides raw and redrive.
const (
	// ClientRawStrict is the raw share consumers fetching only while they
	// poll (franz-go's ShareMaxRecordsStrict, a 25 ms fetch wait), as
	// redrive's members do by default: the cost of that discipline, apart
	// from redrive's.
	ClientRawStrict = "raw, strict polls"
	// ClientShareAhead is redrive with kafka.Config.ShareFetchAhead.
	ClientShareAhead = "redrive, fetch ahead"
	ClientShareRetry = "redrive, 10 % fail once"
	ClientShareDLQ   = "redrive, 1 % dead-lettered"
)

// share runs the share scenario: consumeRounds rounds, each a raw drain
// and two redrive drains of the same topic (by default, and fetching
// ahead; each in a share group of its own), then one retry and one dlq
// drain per round, each after a redrive drain without failures that is
// its baseline.
func (e *kafkaEnv) share(ctx context.Context) ([]Row, error) {
	n := e.drainMessages()
	e.progress(ScenarioShare, ClientRaw)
	s := broker.Subscription{
		Topic:           e.prefix + "." + ScenarioShare,
		Group:           ScenarioShare,
		RetryMode:       broker.Share,
		Policy:          retrypolicy.Policy{MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{shareBackoff}}},
		Concurrency:     shareMembers,
		Prefetch:        shareMaxRecords,
		ShutdownTimeout: 5 * time.Second,
	}
	e.topics = append(e.topics, s.Topic, kafka.DLQTopic(s.Topic))
	if err := e.createTopic(ctx, s.Topic); err != nil {
		return nil, err
	}
	if err := e.fill(ctx, s.Topic, n); err != nil {
		return nil, err
	}
	ahead, err := kafka.New(ctx, kafka.Config{Brokers: e.brokers, Partitions: kafkaPartitions, ClientID: "redrive-bench",
		Logger: e.cfg.Logger, ShareFetchAhead: true})
	if err != nil {
		return nil, err
	}
	defer ahead.Close()
	through := func(b *kafka.Broker, group, mode, client string) (Row, error) {
		g := s
		g.Group = group
		e.topics = append(e.topics, kafka.RetryTopic(g.Topic, g.Group))
		r, err := consumeThrough(ctx, b, g, n, ScenarioShare, e.broker, mode, e.cfg.Timeout)
		r.Client = client
		return r, err
	}
	var raws, stricts, rds, aheads, bases, retries, dlqs []Row
	for i := range consumeRounds {
		raw, err := e.rawShareDrain(ctx, s.Topic, fmt.Sprintf("%s.raw.share.%d", e.prefix, i), n, false)
		if err != nil {
			return nil, err
		}
		strict, err := e.rawShareDrain(ctx, s.Topic, fmt.Sprintf("%s.raw.share.strict.%d", e.prefix, i), n, true)
		if err != nil {
			return nil, err
		}
		stricts = append(stricts, strict)
		e.progress(ScenarioShare, ClientRedrive)
		rd, err := through(e.b, fmt.Sprintf("share-%d", i), failNone, ClientRedrive)
		if err != nil {
			return nil, err
		}
		ah, err := through(ahead, fmt.Sprintf("share-ahead-%d", i), failNone, ClientShareAhead)
		if err != nil {
			return nil, err
		}
		raws, rds, aheads = append(raws, raw), append(rds, rd), append(aheads, ah)
	}
	for i := range consumeRounds {
		for _, f := range []struct {
			mode, client string
			rows         *[]Row
		}{{failRetry, ClientShareRetry, &retries}, {failDLQ, ClientShareDLQ, &dlqs}} {
			base, err := through(e.b, fmt.Sprintf("share-%s-base-%d", f.mode, i), failNever, ClientRedrive)
			if err != nil {
				return nil, err
			}
			r, err := through(e.b, fmt.Sprintf("share-%s-%d", f.mode, i), f.mode, f.client)
			if err != nil {
				return nil, err
			}
			bases, *f.rows = append(bases, base), append(*f.rows, r)
		}
	}
	raw, strict, rd, ah := medianRow(raws), medianRow(stricts), medianRow(rds), medianRow(aheads)
	compareRounds(&rd, rds, raws, "raw share consumer", 0.9)
	if x, _, ok := medianRatio(rds, stricts); ok {
		rd.Note = fmt.Sprintf("%.2f × raw with strict polls (median of the rounds' ratios); %s", x, rd.Note)
	}
	if x, _, ok := medianRatio(stricts, raws); ok {
		strict.Note = fmt.Sprintf("%.2f × raw (median of the rounds' ratios); %s", x, strict.Note)
	}
	compareRounds(&ah, aheads, raws, "raw share consumer", 0.9)
	retry, dlqRow := medianRow(retries), medianRow(dlqs)
	// bases alternate: the retry round's, then the dlq round's.
	var retryBases, dlqBases []Row
	for i, b := range bases {
		if i%2 == 0 {
			retryBases = append(retryBases, b)
		} else {
			dlqBases = append(dlqBases, b)
		}
	}
	compareRounds(&retry, retries, retryBases, "share consume", 0.8)
	compareRounds(&dlqRow, dlqs, dlqBases, "share consume", 0.8)
	note := fmt.Sprintf("%d members × %d records per poll, %d handlers", shareMembers, shareMaxRecords, shareMembers)
	raw.Note = fmt.Sprintf("%d franz-go share clients × %d records per poll (fetching ahead, franz-go's default), ACCEPT per record; %s", shareMembers, shareMaxRecords, raw.Note)
	rd.Note = note + ", fetching only while polling (the default); " + rd.Note
	ah.Note = note + ", fetching ahead (kafka.share.fetch_ahead); " + ah.Note
	retry.Note = fmt.Sprintf("%s back-off, held under the lock; each round after a drain without failures; %s", shareBackoff, retry.Note)
	dlqRow.Note = "permanent → <topic>.dlq, ACCEPT once acknowledged; each round after a drain without failures; " + dlqRow.Note
	strict.Note = fmt.Sprintf("%d franz-go share clients × %d records per poll, fetching only while polling (ShareMaxRecordsStrict, 25 ms fetch wait), ACCEPT per record; %s", shareMembers, shareMaxRecords, strict.Note)
	return []Row{raw, strict, rd, ah, retry, dlqRow}, nil
}

// rawShareDrain drains n records of topic as the share group group through
// shareMembers raw franz-go share clients (ShareMaxRecords
// shareMaxRecords; with strict, fetching only while polling), each
// polling, counting and accepting what it got, and returns the raw row of
// the share scenario.
func (e *kafkaEnv) rawShareDrain(ctx context.Context, topic, group string, n int, strict bool) (Row, error) {
	if err := kafka.SetShareOffsetReset(ctx, e.prod, group, "earliest"); err != nil {
		return Row{}, err
	}
	m := startMeter()
	dr := newDrain(n)
	pctx, stop := context.WithCancel(ctx)
	go func() {
		<-dr.done
		stop()
	}()
	var wg sync.WaitGroup
	clients := make([]*kgo.Client, shareMembers)
	for i := range clients {
		opts := []kgo.Opt{
			kgo.SeedBrokers(e.brokers...),
			kgo.ClientID("raw-bench"),
			kgo.ShareGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.ShareMaxRecords(shareMaxRecords),
			kgo.FetchMaxWait(kafka.DefaultFetchMaxWait),
		}
		if strict {
			opts = append(opts, kgo.ShareMaxRecordsStrict(), kgo.FetchMaxWait(25*time.Millisecond))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			stop()
			return Row{}, fmt.Errorf("raw share consumer: %w", err)
		}
		clients[i] = cl
		wg.Go(func() {
			for pctx.Err() == nil {
				cl.PollRecords(pctx, 0).EachRecord(func(r *kgo.Record) {
					dr.hit()
					r.Ack(kgo.AckAccept)
				})
			}
		})
	}
	werr := dr.wait(ctx, e.cfg.Timeout)
	_, u := m.stop()
	stop()
	wg.Wait()
	for _, cl := range clients {
		cl.Close()
	}
	if werr != nil {
		return Row{}, fmt.Errorf("raw share: %w", werr)
	}
	client := ClientRaw
	if strict {
		client = ClientRawStrict
	}
	return dr.row(ScenarioShare, Kafka, client, u), nil
}
