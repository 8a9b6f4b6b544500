package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnavailable is wrapped by Monitor errors when Redis cannot be read:
// the workers' health is then unknown, not bad.
var ErrUnavailable = errors.New("heartbeat: redis unavailable")

// mgetChunk bounds the keys of one MGET; readConcurrency bounds the MGETs
// in flight.
const (
	mgetChunk       = 1000
	readConcurrency = 4
)

// Monitor reads heartbeats from Redis and grades them. It is safe for
// concurrent use.
type Monitor struct {
	rdb  redis.Cmdable
	cfg  MonitorConfig
	keys Keys
	now  func() time.Time

	mu   sync.Mutex
	last []WorkerStatus // rows of the last successful Check
}

// NewMonitor returns a monitor for cfg (validated, then defaults filled in)
// reading through rdb. It does not contact Redis.
func NewMonitor(rdb redis.Cmdable, cfg MonitorConfig) (*Monitor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	return &Monitor{rdb: rdb, cfg: cfg, keys: Keys{Prefix: cfg.Prefix}, now: time.Now}, nil
}

// Config returns the monitor's configuration with defaults filled in.
func (m *Monitor) Config() MonitorConfig { return m.cfg }

// Check reads every heartbeat and grades it (see Evaluate). When Redis
// cannot be read it returns an error wrapping ErrUnavailable together with
// rows of severity UNKNOWN: the workers of the last successful Check, or a
// single row of type and instance "*" when there was none.
func (m *Monitor) Check(ctx context.Context) ([]WorkerStatus, error) {
	obs, err := m.Read(ctx)
	now := m.now()
	if err != nil {
		m.mu.Lock()
		last := m.last
		m.mu.Unlock()
		return unknownRows(last, now, err), err
	}
	rows := Evaluate(m.cfg, now, obs)
	m.mu.Lock()
	m.last = rows
	m.mu.Unlock()
	return rows, nil
}

// Read returns what Redis holds about every instance seen within
// ForgetAfter: SMEMBERS, one pipeline for the registry, then MGETs of
// 1,000 keys, four in flight at once. Its errors wrap ErrUnavailable.
func (m *Monitor) Read(ctx context.Context) ([]Observation, error) {
	types, err := m.rdb.SMembers(ctx, m.keys.Types()).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrUnavailable, m.keys.Types(), err)
	}
	if len(types) == 0 {
		return nil, nil
	}

	cutoff := strconv.FormatFloat(unixSeconds(m.now().Add(-m.cfg.ForgetAfter)), 'f', 3, 64)
	regs := make([]*redis.ZSliceCmd, len(types))
	stops := make([]*redis.MapStringStringCmd, len(types))
	_, err = m.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, t := range types {
			regs[i] = pipe.ZRangeByScoreWithScores(ctx, m.keys.Registry(t), &redis.ZRangeBy{Min: cutoff, Max: "+inf"})
			stops[i] = pipe.HGetAll(ctx, m.keys.Stopping(t))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: read registry: %w", ErrUnavailable, err)
	}

	var obs []Observation
	for i, t := range types {
		stopping := stops[i].Val()
		for _, z := range regs[i].Val() {
			inst, _ := z.Member.(string)
			o := Observation{Type: t, Instance: inst, LastSeen: fromUnixSeconds(z.Score)}
			if s, ok := stopping[inst]; ok {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					o.StoppingSince = fromUnixSeconds(f)
				}
			}
			obs = append(obs, o)
		}
	}
	if len(obs) == 0 {
		return nil, nil
	}

	if err := m.readKeys(ctx, obs); err != nil {
		return nil, err
	}
	return obs, nil
}

// unknownRows turns the last known rows into UNKNOWN ones for err.
func unknownRows(last []WorkerStatus, now time.Time, err error) []WorkerStatus {
	reason := "heartbeats cannot be read: " + err.Error()
	if len(last) == 0 {
		return []WorkerStatus{{
			Type: "*", Instance: "*", Status: StatusUnknown, Severity: SeverityUnknown,
			Conditions: []Condition{ConditionUnknown}, Reason: reason, CheckedAt: now,
		}}
	}
	rows := make([]WorkerStatus, len(last))
	for i, r := range last {
		rows[i] = WorkerStatus{
			Type: r.Type, Instance: r.Instance, Status: StatusUnknown, Severity: SeverityUnknown,
			Conditions: []Condition{ConditionUnknown}, LastSeen: r.LastSeen,
			LastMessageAt: r.LastMessageAt, Lag: r.Lag, Reason: reason, CheckedAt: now,
		}
	}
	return rows
}

// readKeys fills in the heartbeat of every observation with MGETs of up to
// mgetChunk keys, readChunks of them at once on separate connections so
// that decoding overlaps with Redis's work.
func (m *Monitor) readKeys(ctx context.Context, obs []Observation) error {
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, readConcurrency)
		errMu sync.Mutex
		first error
	)
	for start := 0; start < len(obs); start += mgetChunk {
		part := obs[start:min(start+mgetChunk, len(obs))]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			keys := make([]string, len(part))
			for i, o := range part {
				keys[i] = m.keys.Heartbeat(o.Type, o.Instance)
			}
			vals, err := m.rdb.MGet(ctx, keys...).Result()
			if err != nil {
				errMu.Lock()
				if first == nil {
					first = fmt.Errorf("%w: read heartbeats: %w", ErrUnavailable, err)
				}
				errMu.Unlock()
				return
			}
			for i, v := range vals {
				if s, ok := v.(string); ok {
					if hb, err := decodeHeartbeat(s); err != nil {
						part[i].DecodeErr = err
					} else {
						part[i].Heartbeat = &hb
					}
				}
			}
		})
	}
	wg.Wait()
	return first
}
