package kafka

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/broker/driver"
)

// timeLags fills in TimeLag of parts: 0 for partitions without lag, the age
// of the record at the next offset to consume for up to TimeLagPartitions
// lagging ones (the most lagging first). Partitions it cannot fetch keep
// TimeLagKnown false.
func (k *LagMonitor) timeLags(ctx context.Context, now time.Time, parts []driver.PartitionLag) {
	var lagging []*driver.PartitionLag
	topics := map[string]bool{}
	for i := range parts {
		p := &parts[i]
		switch {
		case p.Err != nil:
		case p.Lag == 0:
			p.TimeLag, p.TimeLagKnown = 0, true
		default:
			lagging = append(lagging, p)
		}
	}
	slices.SortStableFunc(lagging, func(a, b *driver.PartitionLag) int { return cmp.Compare(b.Lag, a.Lag) })
	if len(lagging) > k.cfg.TimeLagPartitions {
		lagging = lagging[:k.cfg.TimeLagPartitions]
	}
	if len(lagging) == 0 {
		return
	}
	for _, p := range lagging {
		topics[p.Topic] = true
	}
	meta, err := k.adm.Metadata(ctx, sortedKeys(topics)...)
	if err != nil {
		return
	}

	// One fetch per (topic, partition, offset): groups at the same offset
	// share it.
	type target struct {
		topic     string
		partition int32
		offset    int64
	}
	want := map[target][]*driver.PartitionLag{}
	for _, p := range lagging {
		t := target{p.Topic, p.Partition, p.End - p.Lag}
		if p.Share { // the oldest record not finished: the share-partition start
			t.offset = p.Committed
		}
		want[t] = append(want[t], p)
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		sem = make(chan struct{}, timeLagConcurrency)
	)
	for t, ps := range want {
		td, ok := meta.Topics[t.topic]
		if !ok || td.Err != nil {
			continue
		}
		pd, ok := td.Partitions[t.partition]
		if !ok || pd.Err != nil || pd.Leader < 0 {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ts, ok := k.recordTime(ctx, pd.Leader, t.topic, [16]byte(td.ID), t.partition, t.offset)
			if !ok {
				return
			}
			age := max(now.Sub(ts), 0)
			mu.Lock()
			for _, p := range ps {
				p.TimeLag, p.TimeLagKnown = age, true
			}
			mu.Unlock()
		})
	}
	wg.Wait()
}

// recordTime fetches the first record at or after offset of one partition
// from its leader and returns its timestamp.
func (k *LagMonitor) recordTime(ctx context.Context, leader int32, topic string, id [16]byte, partition int32, offset int64) (time.Time, bool) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = k.cfg.FetchMaxBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rt.TopicID = id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = k.cfg.FetchMaxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	resp, err := req.RequestWith(ctx, k.cl.Broker(int(leader)))
	if err != nil {
		return time.Time{}, false
	}
	for _, t := range resp.Topics {
		if t.Topic != topic && t.TopicID != id {
			continue
		}
		for i := range t.Partitions {
			part := &t.Partitions[i]
			if part.Partition != partition || part.ErrorCode != 0 {
				continue
			}
			fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Offset: offset, Topic: topic, Partition: partition,
			}, part, kgo.DefaultDecompressor(), nil)
			for _, r := range fp.Records {
				if r.Offset >= offset {
					return r.Timestamp, true
				}
			}
		}
	}
	return time.Time{}, false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
