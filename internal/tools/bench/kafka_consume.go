package bench

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker/kafka"
)

// consumeRounds is how many times the Kafka consume, retry and dlq rows
// drain their topic through each client (consume: alternating): at a
// million records a second one drain lasts a tenth of a second, and a
// single one swung the ratios by ±30 % and more (GC cycles, kfake's own
// work on the same two cores).
const consumeRounds = 7

// consume: drain a pre-filled topic with a no-op handler and commit,
// redrive Consume (one worker per partition) vs a raw group consumer with
// one goroutine per partition marking records for franz-go's periodic
// commit (every second, as redrive's default CommitInterval). Both read
// the same topic, each round in a new group, consumeRounds rounds
// alternating the clients; each row is its client's median round, its
// ratio the median of the rounds' ratios (compareRounds). Three more rows
// are redrive with HeadersOnDemand (no Headers map per record), with
// ReuseDeliveries (the map reused), and with both (nothing allocated per
// record); a fourth, ClientRawHeaders, is the raw consumer building the
// map redrive's default builds, whose ratio the default row's note gives:
// what the map costs anyone, apart from what redrive adds.
func (e *kafkaEnv) consume(ctx context.Context) ([]Row, error) {
	n := e.drainMessages()
	e.progress(ScenarioConsume, ClientRaw)
	s, err := e.sub(ctx, ScenarioConsume)
	if err != nil {
		return nil, err
	}
	if err := e.fill(ctx, s.Topic, n); err != nil {
		return nil, err
	}
	// An untimed drain first: the first one of a topic was the slowest
	// by far (0.5 × the next ones), which paired its round with an odd
	// ratio (1.4–1.7).
	if _, err := e.rawDrain(ctx, ScenarioConsume, s.Topic, e.prefix+".raw.consume.warm-up", n, false, nil); err != nil {
		return nil, err
	}
	// By default, then with each option that lightens a record.
	variants := []struct {
		client          string
		onDemand, reuse bool
	}{{ClientRedrive, false, false}, {ClientOnDemand, true, false}, {ClientReuse, false, true}, {ClientLean, true, true}}
	var raws, maps []Row
	rounds := make([][]Row, len(variants))
	for i := range consumeRounds {
		raw, err := e.rawDrain(ctx, ScenarioConsume, s.Topic, fmt.Sprintf("%s.raw.consume.%d", e.prefix, i), n, false, nil)
		if err != nil {
			return nil, err
		}
		m, err := e.rawDrain(ctx, ScenarioConsume, s.Topic, fmt.Sprintf("%s.raw.consume.map.%d", e.prefix, i), n, true, nil)
		if err != nil {
			return nil, err
		}
		m.Client = ClientRawHeaders
		raws, maps = append(raws, raw), append(maps, m)
		e.progress(ScenarioConsume, ClientRedrive)
		for k, v := range variants {
			rs := s
			rs.Group = fmt.Sprintf("%s-%d-%d", s.Group, i, k)
			rs.HeadersOnDemand, rs.ReuseDeliveries = v.onDemand, v.reuse
			rd, err := consumeThrough(ctx, e.redrive, rs, n, ScenarioConsume, e.broker, failNone, e.cfg.Timeout)
			if err != nil {
				return nil, err
			}
			rd.Client = v.client
			rounds[k] = append(rounds[k], rd)
		}
	}
	rows := []Row{medianRow(raws), medianRow(maps)}
	for k := range variants {
		rd := medianRow(rounds[k])
		compareRounds(&rd, rounds[k], raws, ClientRaw, 0.9) // issue 19's target for Kafka consume
		if k == 0 {
			if x, _, ok := medianRatio(rounds[k], maps); ok {
				rd.Note = fmt.Sprintf("%.2f × raw building the same headers map (median of the rounds' ratios); %s", x, rd.Note)
			}
		}
		rows = append(rows, rd)
	}
	return rows, nil
}

// rawDrain drains n records of topic as group through a raw group
// consumer, one goroutine per partition marking records for franz-go's
// periodic commit (every second, as redrive's default CommitInterval),
// and returns the raw row of scenario. With headers, each record's
// headers are also made into the map redrive's Delivery.Headers is
// (headersMap) and handed to a handler (keepHeaders). With work, each
// record is handed to it before it counts (the relay scenario's POST);
// a record it fails is not counted.
func (e *kafkaEnv) rawDrain(ctx context.Context, scenario, topic, group string, n int, headers bool, work func(*kgo.Record) error) (Row, error) {
	m := startMeter()
	dr := newDrain(n)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(e.brokers...),
		kgo.ClientID("raw-bench"),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(time.Second),
		kgo.FetchMaxWait(kafka.DefaultFetchMaxWait),
	)
	if err != nil {
		return Row{}, fmt.Errorf("raw consumer: %w", err)
	}
	workers := map[int32]chan []*kgo.Record{}
	var wg sync.WaitGroup
	pctx, stop := context.WithCancel(ctx)
	go func() {
		<-dr.done
		stop()
	}()
	for pctx.Err() == nil {
		fs := cl.PollRecords(pctx, 1000)
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			w, ok := workers[p.Partition]
			if !ok {
				w = make(chan []*kgo.Record, 1)
				workers[p.Partition] = w
				wg.Go(func() {
					for recs := range w {
						if headers {
							for _, r := range recs {
								keepHeaders(headersMap(r))
							}
						}
						if work != nil {
							for _, r := range recs {
								if work(r) == nil {
									dr.hit()
								}
							}
						} else {
							for range recs { // the plain raw drain's whole work
								dr.hit()
							}
						}
						cl.MarkCommitRecords(recs...)
					}
				})
			}
			select {
			case w <- p.Records:
			case <-pctx.Done():
			}
		})
	}
	werr := dr.wait(ctx, e.cfg.Timeout)
	_, u := m.stop()
	stop()
	for _, w := range workers {
		close(w)
	}
	wg.Wait()
	cl.Close() // commits what is marked
	if werr != nil {
		return Row{}, fmt.Errorf("raw: %w", werr)
	}
	return dr.row(scenario, Kafka, ClientRaw, u), nil
}

// headersMap returns r's headers by name, built as redrive's consumer
// builds Delivery.Headers: a map sized for them, values sharing the
// record's memory, the last of a repeated name winning.
func headersMap(r *kgo.Record) map[string]string {
	m := make(map[string]string, len(r.Headers))
	for _, h := range r.Headers {
		m[h.Key] = unsafe.String(unsafe.SliceData(h.Value), len(h.Value))
	}
	return m
}

// keepHeaders is the raw drain's handler of a headers map: called through
// a variable, the map escapes to the heap as a Delivery's does, where
// the compiler would otherwise build a map that goes nowhere on the stack.
var keepHeaders = func(map[string]string) {}
