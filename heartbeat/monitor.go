package heartbeat

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/internal/sampling"
)

// ErrUnavailable is wrapped by Monitor errors when Redis cannot be read:
// the workers' health is then unknown, not bad.
var ErrUnavailable = errors.New("heartbeat: redis unavailable")

// readChunk bounds the commands of one pipeline of value reads;
// readConcurrency bounds the pipelines in flight; setScan is the COUNT of
// one SSCAN of the set of types.
const (
	readChunk       = 1000
	readConcurrency = 4
	setScan         = 1000
)

// Monitor reads heartbeats from Redis and grades them. It is safe for
// concurrent use.
type Monitor struct {
	rdb  redis.Cmdable
	cfg  MonitorConfig
	keys Keys
	now  func() time.Time

	mu      sync.Mutex
	last    []WorkerStatus // rows of the last successful Check
	dropped Dropped        // of the last successful Read

	scanMu sync.Mutex
	cursor uint64          // where the next discovery SCAN goes on
	adopt  sampling.Outage // writes of discovered instances failing
}

// Dropped says what the last Check of a Monitor left out, so that an
// operator sees that the table is not whole (`redrive workers`, the
// console, redrive_worker_instances_dropped).
type Dropped struct {
	// Limit is MonitorConfig.MaxInstances.
	Limit int
	// OverLimit is how many instances were left out because Limit were
	// read already (those of configured worker types are read first).
	OverLimit int
	// BadNames is how many registry members, worker types and heartbeat
	// keys were left out for a name that cannot be a worker's (empty,
	// longer than MaxNameLen bytes, invalid UTF-8), or a registry key
	// that is not a sorted set.
	BadNames int
}

// Total is how many were left out.
func (d Dropped) Total() int { return d.OverLimit + d.BadNames }

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

// Dropped returns what the last successful Check left out.
func (m *Monitor) Dropped() Dropped {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dropped
}

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

// candidate is an instance the monitor reads: from its type's registry,
// from the discovered set, or found by its key alone in this check.
type candidate struct {
	Observation
	registered bool    // in workers:{type}: its publisher keeps it
	discovered float64 // its score in workers:{type}:discovered; 0 = none
	badScore   error   // its registry score is no time
	read       bool    // its key was read
}

// readNew reads the keys of the candidates not read yet (found by
// discovery alone).
func (m *Monitor) readNew(ctx context.Context, cands []candidate, now time.Time) error {
	var idx []int
	for i := range cands {
		if !cands[i].read {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	fresh := make([]candidate, len(idx))
	for j, i := range idx {
		fresh[j] = cands[i]
	}
	if err := m.readValues(ctx, fresh, now); err != nil {
		return err
	}
	for j, i := range idx {
		cands[i] = fresh[j]
	}
	return nil
}

// Read returns what Redis holds about every instance seen within
// ForgetAfter, at most MaxInstances of them (configured types first; see
// Dropped): the instances of the registries (SSCAN of the types, one
// pipeline of ZCOUNTs, one of ZREVRANGEBYSCOREs) and those found by their
// heartbeat key alone (SCAN, beside the registry reads), then their keys
// (GETRANGE, bounded by MaxValueLen, in pipelines of 1,000, four in
// flight). Instances found by their key alone are recorded in
// workers:{type}:discovered so that they read MISSING once their key
// expired. Its errors wrap ErrUnavailable.
func (m *Monitor) Read(ctx context.Context) ([]Observation, error) {
	now := m.now()
	drop := Dropped{Limit: m.cfg.MaxInstances}
	// Discovery runs beside the registry's instances and their keys; the
	// keys it finds that no registry names (none in the steady state:
	// they were recorded) are read after it.
	found := make(chan scanResult, 1)
	go func() { found <- m.scan(ctx) }()
	cands, regTotal, err := m.registered(ctx, now, &drop)
	if err == nil {
		err = m.readValues(ctx, cands, now)
	}
	scanned := <-found
	if err != nil {
		return nil, err
	}
	if scanned.err != nil {
		return nil, scanned.err
	}
	drop.BadNames += scanned.badNames
	for i := range cands {
		cands[i].read = true
	}
	cands = m.withFound(cands, scanned.keys, regTotal, &drop)
	if err := m.readNew(ctx, cands, now); err != nil {
		return nil, err
	}
	m.record(ctx, cands, now)
	m.mu.Lock()
	m.dropped = drop
	m.mu.Unlock()
	obs := make([]Observation, len(cands))
	for i, c := range cands {
		obs[i] = c.Observation
	}
	return obs, nil
}

// types returns the worker types to read: the configured ones, then the
// set's others in name order, at most MaxInstances in all.
func (m *Monitor) types(ctx context.Context, drop *Dropped) ([]string, error) {
	seen := map[string]bool{}
	out := make([]string, 0, len(m.cfg.Workers))
	for _, t := range m.cfg.Workers {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	var others []string
	var cursor uint64
	for {
		ts, next, err := m.rdb.SScan(ctx, m.keys.Types(), cursor, "", setScan).Result()
		if isWrongType(err) {
			drop.BadNames++
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", ErrUnavailable, m.keys.Types(), err)
		}
		for _, t := range ts {
			switch {
			case seen[t]:
			case !validName(t, true):
				drop.BadNames++
			default:
				others = append(others, t)
			}
			seen[t] = true
		}
		if cursor = next; cursor == 0 || len(out)+len(others) >= m.cfg.MaxInstances {
			break
		}
	}
	slices.Sort(others)
	return append(out, others...), nil
}

// registered returns the instances of the registries and the discovered
// sets seen within ForgetAfter, newest first per type, at most
// MaxInstances in all.
func (m *Monitor) registered(ctx context.Context, now time.Time, drop *Dropped) ([]candidate, int, error) {
	types, err := m.types(ctx, drop)
	if err != nil || len(types) == 0 {
		return nil, 0, err
	}
	cutoff := strconv.FormatFloat(unixSeconds(now.Add(-m.cfg.ForgetAfter)), 'f', 3, 64)
	regN := make([]*redis.IntCmd, len(types))
	discN := make([]*redis.IntCmd, len(types))
	_, err = m.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, t := range types {
			regN[i] = pipe.ZCount(ctx, m.keys.Registry(t), cutoff, "+inf")
			discN[i] = pipe.ZCount(ctx, m.keys.Discovered(t), cutoff, "+inf")
		}
		return nil
	})
	if err != nil && !isWrongType(err) {
		return nil, 0, fmt.Errorf("%w: read registry: %w", ErrUnavailable, err)
	}
	// Each type gets what it holds while the budget lasts, in order.
	budget, total := m.cfg.MaxInstances, 0
	alloc := make([][2]int64, len(types))
	for i := range types {
		for j, c := range []*redis.IntCmd{regN[i], discN[i]} {
			n, err := c.Result()
			if isWrongType(err) {
				drop.BadNames++
				continue
			}
			take := min(n, int64(budget))
			alloc[i][j] = take
			budget -= int(take)
			total += int(n)
		}
	}
	by := func(n int64) *redis.ZRangeBy { return &redis.ZRangeBy{Min: cutoff, Max: "+inf", Count: n} }
	regs := make([]*redis.ZSliceCmd, len(types))
	discs := make([]*redis.ZSliceCmd, len(types))
	_, err = m.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, t := range types {
			if alloc[i][0] > 0 {
				regs[i] = pipe.ZRevRangeByScoreWithScores(ctx, m.keys.Registry(t), by(alloc[i][0]))
			}
			if alloc[i][1] > 0 {
				discs[i] = pipe.ZRevRangeByScoreWithScores(ctx, m.keys.Discovered(t), by(alloc[i][1]))
			}
		}
		return nil
	})
	if err != nil && !isWrongType(err) {
		return nil, 0, fmt.Errorf("%w: read registry: %w", ErrUnavailable, err)
	}
	var out []candidate
	for i, t := range types {
		seen := map[string]bool{}
		for j, cmd := range []*redis.ZSliceCmd{regs[i], discs[i]} {
			if cmd == nil {
				continue
			}
			for _, z := range cmd.Val() {
				inst, _ := z.Member.(string)
				if !validName(inst, false) {
					drop.BadNames++
					total--
					continue
				}
				if seen[inst] {
					continue // in both: its publisher registers it now
				}
				seen[inst] = true
				c := candidate{Observation: Observation{Type: t, Instance: inst}, registered: j == 0}
				if j == 1 {
					c.discovered = z.Score
				}
				if c.LastSeen, err = scoreTime(z.Score, now); err != nil {
					c.badScore = fmt.Errorf("its registry entry %s: %w", m.keys.Registry(t), err)
				}
				out = append(out, c)
			}
		}
	}
	return out, total, nil
}

// withFound adds the instances found by their key alone to cands and keeps
// at most MaxInstances: the configured types' first, then by type. The
// instances left out are counted from the larger of what the registries
// hold (regTotal) and what was found: a registered instance beyond the
// limit is most likely found by its key too.
func (m *Monitor) withFound(cands []candidate, found []typeInstance, regTotal int, drop *Dropped) []candidate {
	have := make(map[typeInstance]bool, len(cands))
	for _, c := range cands {
		have[typeInstance{c.Type, c.Instance}] = true
	}
	for _, k := range found {
		if !have[k] {
			have[k] = true
			cands = append(cands, candidate{Observation: Observation{Type: k.typ, Instance: k.instance}})
		}
	}
	drop.OverLimit = max(regTotal, len(cands)) - min(len(cands), m.cfg.MaxInstances)
	if len(cands) <= m.cfg.MaxInstances {
		return cands
	}
	rank := func(typ string) int {
		if i := slices.Index(m.cfg.Workers, typ); i >= 0 {
			return i
		}
		return len(m.cfg.Workers)
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(rank(a.Type), rank(b.Type)), cmp.Compare(a.Type, b.Type))
	})
	return cands[:m.cfg.MaxInstances]
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

// isWrongType reports whether err is Redis's answer to a command on a key
// of another type: a value someone else wrote, not an outage.
func isWrongType(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE")
}
