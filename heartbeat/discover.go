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

// scanCount is the COUNT of one discovery SCAN: the keys Redis examines
// per round trip.
const scanCount = 5000

// typeInstance names one instance.
type typeInstance struct{ typ, instance string }

// scanResult is what one check's discovery found.
type scanResult struct {
	keys     []typeInstance
	badNames int
	err      error
}

// scan looks for heartbeat keys ("{prefix}worker:*", strings only) with
// SCAN, examining at most ScanKeysPerCheck keys; a pass that did not
// reach the end of the keyspace goes on where it stopped at the next
// check. In a Redis of its own (or a database of its own) one pass is a
// few round trips per 1,000 keys.
func (m *Monitor) scan(ctx context.Context) scanResult {
	m.scanMu.Lock()
	defer m.scanMu.Unlock()
	var res scanResult
	match := m.keys.heartbeatMatch()
	for examined := 0; examined < m.cfg.ScanKeysPerCheck; examined += scanCount {
		keys, next, err := m.rdb.ScanType(ctx, m.cursor, match, scanCount, "string").Result()
		if err != nil {
			res.err = fmt.Errorf("%w: scan for heartbeat keys: %w", ErrUnavailable, err)
			return res
		}
		for _, k := range keys {
			typ, inst, ok := m.keys.parseHeartbeat(k)
			if !ok {
				res.badNames++
				continue
			}
			res.keys = append(res.keys, typeInstance{typ, inst})
		}
		if m.cursor = next; next == 0 {
			break
		}
	}
	return res
}

// readValues reads the heartbeat key of every candidate (at most
// MaxValueLen+1 bytes of each, GETRANGE, pipelines of readChunk commands,
// readConcurrency in flight) and the shutdown marks of the registered
// ones, and decodes them.
func (m *Monitor) readValues(ctx context.Context, cands []candidate, now time.Time) error {
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, readConcurrency)
		errMu sync.Mutex
		first error
	)
	fail := func(err error) {
		errMu.Lock()
		if first == nil {
			first = fmt.Errorf("%w: read heartbeats: %w", ErrUnavailable, err)
		}
		errMu.Unlock()
	}
	stops := stoppingReads(cands)
	wg.Go(func() {
		if err := m.readStopping(ctx, stops, now); err != nil {
			fail(err)
		}
	})
	for start := 0; start < len(cands); start += readChunk {
		part := cands[start:min(start+readChunk, len(cands))]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := m.readChunk(ctx, part, now); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	for _, st := range stops {
		for k, i := range st.cands {
			if k < len(st.since) { // none when the read failed
				cands[i].StoppingSince = st.since[k]
			}
		}
	}
	return first
}

// The bounds of GETRANGE, boxed once: a check reads thousands of keys.
var argZero, argMaxValue any = 0, MaxValueLen

// readChunk reads and decodes the keys of part.
func (m *Monitor) readChunk(ctx context.Context, part []candidate, now time.Time) error {
	cmds := make([]*redis.StringCmd, len(part))
	_, err := m.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, c := range part {
			cmds[i] = redis.NewStringCmd(ctx, "getrange", m.keys.Heartbeat(c.Type, c.Instance), argZero, argMaxValue)
			_ = pipe.Process(ctx, cmds[i])
		}
		return nil
	})
	if err != nil && !isWrongType(err) {
		return err
	}
	var empty []int // "" is a key that expired, or an empty value
	for i, cmd := range cmds {
		s, err := cmd.Result()
		c := &part[i]
		switch {
		case isWrongType(err):
			c.DecodeErr = errors.New("the key is not a string")
		case s == "":
			empty = append(empty, i)
		default:
			if hb, err := decodeHeartbeat(s, now); err != nil {
				c.DecodeErr = err
			} else {
				c.Heartbeat = &hb
			}
		}
	}
	if len(empty) > 0 {
		exists := make([]*redis.IntCmd, len(empty))
		_, err := m.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for j, i := range empty {
				exists[j] = pipe.Exists(ctx, m.keys.Heartbeat(part[i].Type, part[i].Instance))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for j, i := range empty {
			if exists[j].Val() > 0 {
				part[i].DecodeErr = errors.New("the value is empty")
			}
		}
	}
	for i := range part {
		if c := &part[i]; c.badScore != nil && c.Heartbeat == nil && c.DecodeErr == nil {
			c.DecodeErr = c.badScore
		}
	}
	return nil
}

// stoppingRead is the HMGET of one type's shutdown marks.
type stoppingRead struct {
	typ       string
	instances []string
	cands     []int       // their index in the candidates
	since     []time.Time // what readStopping found, zero for none
}

// stoppingReads lists the shutdown marks to read: one HMGET per type of
// the registered candidates (a publisher that writes no registry writes
// no marks).
func stoppingReads(cands []candidate) []*stoppingRead {
	byType := map[string]*stoppingRead{}
	var out []*stoppingRead
	for i := range cands {
		c := &cands[i]
		if !c.registered {
			continue
		}
		st := byType[c.Type]
		if st == nil {
			st = &stoppingRead{typ: c.Type}
			byType[c.Type] = st
			out = append(out, st)
		}
		st.instances = append(st.instances, c.Instance)
		st.cands = append(st.cands, i)
	}
	return out
}

// readStopping reads the shutdown marks of stops in one pipeline.
func (m *Monitor) readStopping(ctx context.Context, stops []*stoppingRead, now time.Time) error {
	if len(stops) == 0 {
		return nil
	}
	cmds := make([]*redis.SliceCmd, len(stops))
	_, err := m.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for j, st := range stops {
			cmds[j] = pipe.HMGet(ctx, m.keys.Stopping(st.typ), st.instances...)
		}
		return nil
	})
	if err != nil && !isWrongType(err) {
		return err
	}
	for j, st := range stops {
		st.since = make([]time.Time, len(st.instances))
		for k, v := range cmds[j].Val() {
			s, _ := v.(string)
			if s == "" {
				continue // no mark (most instances): no parse, no error to allocate
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil && k < len(st.since) {
				st.since[k], _ = scoreTime(f, now)
			}
		}
	}
	return nil
}

// record writes down the instances found by their key alone: each one
// that beats (RUNNING or PAUSED) into workers:{type}:discovered with the
// time of its beat, and its type into the set of types, so that it reads
// MISSING once its key expired; one that said SHUTTING_DOWN leaves the
// set (it stops, and its key expiring is its goodbye). Instances whose
// own publisher registers them are left alone. A failing write is logged
// once per outage: reading goes on.
func (m *Monitor) record(ctx context.Context, cands []candidate, now time.Time) {
	type write struct {
		c    *candidate
		gone bool
	}
	var ws []write
	for i := range cands {
		c := &cands[i]
		hb := c.Heartbeat
		switch {
		case c.registered || hb == nil:
		case hb.Status == StatusShuttingDown:
			if c.discovered != 0 {
				ws = append(ws, write{c, true})
			}
		case hb.Status == StatusRunning || hb.Status == StatusPaused:
			if unixSeconds(hb.Timestamp) > c.discovered {
				ws = append(ws, write{c, false})
			}
		}
	}
	if len(ws) == 0 {
		return
	}
	cutoff := "(" + unixString(now.Add(-m.cfg.ForgetAfter))
	_, err := m.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		types := map[string]bool{}
		for _, w := range ws {
			key := m.keys.Discovered(w.c.Type)
			if w.gone {
				pipe.ZRem(ctx, key, w.c.Instance)
				continue
			}
			pipe.ZAddGT(ctx, key, redis.Z{Score: unixSeconds(w.c.Heartbeat.Timestamp), Member: w.c.Instance})
			if !types[w.c.Type] {
				types[w.c.Type] = true
				pipe.ZRemRangeByScore(ctx, key, "-inf", cutoff)
				pipe.Expire(ctx, key, m.cfg.ForgetAfter)
				pipe.SAdd(ctx, m.keys.Types(), w.c.Type)
			}
		}
		return nil
	})
	switch began, ended := m.adopt.Observe(err); {
	case began:
		m.cfg.Logger.Warn("heartbeat: cannot record the instances found by their key alone; they read as missing only while a monitor sees their key",
			"err", err)
	case ended:
		m.cfg.Logger.Info("heartbeat: recording instances found by their key alone again")
	}
}
