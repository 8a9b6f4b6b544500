package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The renewal of the locks of the records a share member holds, and the
// broker's answers to its acknowledgements.

// defaultShareLock is the acquisition lock a member assumes before its
// first poll tells it the broker's (Kafka's default
// group.share.record.lock.duration.ms).
const defaultShareLock = 30 * time.Second

// maxRenewEvery bounds how long a member leaves a held record's lock
// unrenewed, however long the lock: the broker also gives back the
// records of a share session whose connection closes, and franz-go closes
// a connection idle for ConnIdleTimeout (20 s by default).
const maxRenewEvery = 5 * time.Second

// lockDuration is the acquisition lock the broker grants, as the last
// poll reported it.
func (m *shareMember) lockDuration() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lock
}

// renewEvery is how long a record's lock goes unrenewed at most: a third
// of the lock, and at most maxRenewEvery.
func (m *shareMember) renewEvery() time.Duration {
	return max(min(m.lockDuration()/3, maxRenewEvery), 10*time.Millisecond)
}

// renewLoop renews the locks of the records the member holds until ctx
// ends, looking every half renewal period.
func (m *shareMember) renewLoop(ctx context.Context) {
	for {
		every := m.renewEvery()
		t := time.NewTimer(every / 2)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.took: // a record fetched ahead may be due at once
			t.Stop()
			m.renew(ctx, m.renewEvery())
			continue
		case <-t.C:
		}
		m.renew(ctx, every)
	}
}

// renew renews (AckRenew, KIP-1222) the locks of the open records whose
// lock started every or more ago, and sends the renewals at once.
func (m *shareMember) renew(ctx context.Context, every time.Duration) {
	now := time.Now()
	var (
		srs []*shareRecord
		rs  []*kgo.Record
	)
	m.mu.Lock()
	for i := range m.batch {
		if sr := &m.batch[i]; sr.phase != phaseSettled && now.Sub(sr.renewed) >= every {
			srs, rs = append(srs, sr), append(rs, sr.r)
		}
	}
	m.mu.Unlock()
	if len(rs) == 0 {
		return
	}
	m.log.Debug("renewing", "records", len(rs), "every", every, "lock", m.lockDuration())
	m.cl.MarkAcks(kgo.AckRenew, rs...)
	fctx, cancel := context.WithTimeout(ctx, m.c.b.cfg.DeliveryTimeout)
	err := m.cl.FlushAcks(fctx)
	cancel()
	if err != nil {
		return
	}
	m.mu.Lock()
	for _, sr := range srs {
		sr.renewed = now
	}
	m.mu.Unlock()
}

// acked logs the acknowledgements the broker refused: their records are
// delivered again (a lock that expired, a partition that moved).
func (m *shareMember) acked(_ *kgo.Client, rs kgo.ShareAckResults) {
	for _, r := range rs {
		if r.Err != nil && !errors.Is(r.Err, context.Canceled) {
			m.log.Warn("share acknowledgement refused; its records will be delivered again", "ack_topic", r.Topic, "partition", r.Partition, "error", r.Err)
		}
	}
}
