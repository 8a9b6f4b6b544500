//go:build faults

package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
	"github.com/redrive/redrive/worker"
	"github.com/redrive/redrive/worker/killswitch"
)

// Durations of the kill switch cases. The proof runs a 20 s
// outage; these cases scale everything down together (traffic 2.4 s at
// 300 messages/s, an outage of 1.2 s, a 1 s window, probes every 200 ms
// to 800 ms, retries after 100 ms) so that the suite stays short: the
// ratios between outage, window, back-off and probes are those of a real
// deployment, and what is measured (dead letters, lost messages, trips)
// does not depend on the scale.
const (
	ksTraffic = 720                   // messages
	ksEvery   = 33 * time.Millisecond // one batch of 10: about 300/s
	ksOutage  = 1200 * time.Millisecond
	// ksActivate is max_retries + 1: on Kafka in blocking mode only the
	// head record of a partition fails, and a burst of ten published at
	// once lands on one partition, so the first failing message alone
	// must be able to trip the switch before its retries are spent (its
	// last failure then trips it and is handed back).
	ksActivate = 3
)

// ksConfig is the kill switch of the cases.
func ksConfig(enabled bool) killswitch.Config {
	return killswitch.Config{Enabled: enabled, Activation: ksActivate, TripRatio: 0.5, Window: time.Second,
		RestartAfter: 200 * time.Millisecond, MaxRestartAfter: 800 * time.Millisecond}
}

// ksBackend is one broker of the kill switch cases.
type ksBackend struct {
	name string
	// open returns a broker for sub (declared), owned by the test, and a
	// reader of sub's dead letters by message id.
	open func(t *testing.T, sub broker.Subscription) (broker.Broker, func() map[string]int)
	sub  func(topic string) broker.Subscription
}

func ksBackends() []ksBackend {
	return []ksBackend{
		{name: "rabbitmq", sub: rabbitSub, open: func(t *testing.T, sub broker.Subscription) (broker.Broker, func() map[string]int) {
			b, _ := newRabbit(t, sub)
			seen := map[string]int{} // reading drains the queue: keep the total
			return b, func() map[string]int {
				for id, n := range rabbitDeadLetters(t, sub) {
					seen[id] += n
				}
				return maps.Clone(seen)
			}
		}},
		{name: "kafka", sub: kafkaSub, open: func(t *testing.T, sub broker.Subscription) (broker.Broker, func() map[string]int) {
			brokers := childCluster(t)
			b := kafkatest.New(t, brokers, nil)
			if err := b.Declare(context.Background(), sub); err != nil {
				t.Fatal(err)
			}
			return b, func() map[string]int { return kafkaDeadLetters(t, brokers, sub) }
		}},
		{name: "kafka-share", sub: shareSub, open: func(t *testing.T, sub broker.Subscription) (broker.Broker, func() map[string]int) {
			_, brokers := kafkatest.Fake(t, shareOpts()...)
			b := kafkatest.New(t, brokers, nil)
			if err := b.Declare(context.Background(), sub); err != nil {
				t.Fatal(err)
			}
			return b, func() map[string]int { return kafkaDeadLetters(t, brokers, sub) }
		}},
	}
}

// runWorker runs sub on b with cfg (no signals, no logs) until the test
// ends; stop ends it.
func runWorker(t *testing.T, b broker.Broker, sub broker.Subscription, h broker.Handler, cfg worker.Config) (stop func()) {
	t.Helper()
	cfg.NoSignals, cfg.Logger = true, slog.New(slog.DiscardHandler)
	rt, err := worker.New(b, []broker.Subscription{sub}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return testenv.Background(t, "Run", sub.ShutdownTimeout+30*time.Second,
		func(ctx context.Context) error { return rt.Run(ctx, worker.Handlers{sub.Group: h}) })
}

// TestKillSwitch: steady load into a worker whose handler fails every
// message (transiently) for ksOutage and then recovers. With the kill
// switch nothing is dead-lettered or lost and every message is handled;
// without it the case prints how many dead letters the outage cost. A
// burst of Permanent failures at the same rate never trips it.
func TestKillSwitch(t *testing.T) {
	for _, be := range ksBackends() {
		t.Run(string(be.name), func(t *testing.T) {
			t.Run("on", func(t *testing.T) {
				r, trips, tm := outage(t, be, true, errors.New("payment API unreachable"))
				if r.dead != 0 || r.handled != r.published {
					t.Errorf("with the kill switch: %d dead-lettered, %d of %d handled; want 0 and all", r.dead, r.handled, r.published)
				}
				if trips < 1 {
					t.Errorf("worker_kill_switch_trips_total = %v, want >= 1", trips)
				}
				tm.check(t, ksConfig(true))
			})
			t.Run("off", func(t *testing.T) {
				r, _, _ := outage(t, be, false, errors.New("payment API unreachable"))
				t.Logf("without the kill switch the %s outage cost %d dead letters of %d messages", ksOutage, r.dead, r.published)
				if r.dead == 0 {
					t.Errorf("no dead letter without the kill switch: the outage did not reach the DLQ, so the case proves nothing")
				}
			})
			t.Run("permanent", func(t *testing.T) {
				r, trips, _ := outage(t, be, true, broker.Permanent(errors.New("malformed payload")))
				if trips != 0 {
					t.Errorf("a burst of Permanent failures tripped the kill switch %v times", trips)
				}
				if r.dead == 0 {
					t.Error("no Permanent failure was dead-lettered")
				}
			})
		})
	}
}

// ksSlack is what the timing checks of the case allow on top of the
// configured durations: the race detector and a busy 2-core machine
// delay goroutines by hundreds of milliseconds. The checks catch a switch
// that trips only after its window or resumes only after several probes,
// not a few milliseconds of lateness.
const ksSlack = time.Second

// ksTimes is when the events of an outage case happened.
type ksTimes struct {
	firstFailure time.Time // the handler's first failing call
	tripped      time.Time // worker_kill_switch_trips_total first > 0 (polled every 10 ms)
	recovered    time.Time // the downstream came back
	resumed      time.Time // the first message handled after that
}

// check asserts the promises: the pause starts within the window
// of the first failure, and processing resumes within the longest
// restart_after of the recovery plus one probe.
func (tm ksTimes) check(t *testing.T, cfg killswitch.Config) {
	t.Helper()
	if tm.tripped.IsZero() || tm.resumed.IsZero() || tm.firstFailure.IsZero() {
		t.Errorf("kill switch timing not observed: %+v", tm)
		return
	}
	toTrip, toResume := tm.tripped.Sub(tm.firstFailure), tm.resumed.Sub(tm.recovered)
	t.Logf("tripped %v after the first failure (window %v); resumed %v after the recovery (restart_after %v..%v)",
		toTrip.Round(time.Millisecond), cfg.Window, toResume.Round(time.Millisecond), cfg.RestartAfter, cfg.MaxRestartAfter)
	if toTrip > cfg.Window+ksSlack {
		t.Errorf("the switch tripped %v after the first failure; want within the window %v (+%v)", toTrip, cfg.Window, ksSlack)
	}
	if toResume > cfg.MaxRestartAfter+ksSlack {
		t.Errorf("processing resumed %v after the recovery; want within max_restart_after %v plus one probe (+%v)", toResume, cfg.MaxRestartAfter, ksSlack)
	}
}

// outage runs one kill switch case: ksTraffic messages paced at about
// 300/s, the handler failing with fail for the first ksOutage of it. It
// returns the accounting, the trips counted and when each event happened.
func outage(t *testing.T, be ksBackend, enabled bool, fail error) (row, float64, ksTimes) {
	t.Helper()
	sub := be.sub("faults.killswitch." + broker.NewMessageID()[:6])
	sub.Policy = retrypolicy.Policy{MaxRetries: 2, Backoff: retrypolicy.Schedule{Delays: []time.Duration{100 * time.Millisecond}}}
	b, deadLetters := be.open(t, sub)
	reg := prometheus.NewRegistry()
	var down atomic.Bool
	var mu sync.Mutex // guards tm
	var tm ksTimes
	c := newTally()
	runWorker(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
		if down.Load() {
			mu.Lock()
			if tm.firstFailure.IsZero() {
				tm.firstFailure = time.Now()
			}
			mu.Unlock()
			return fail
		}
		mu.Lock()
		if tm.resumed.IsZero() && !tm.recovered.IsZero() {
			tm.resumed = time.Now()
		}
		mu.Unlock()
		c.add(d.ID)
		return nil
	}, worker.Config{KillSwitches: map[string]killswitch.Config{sub.Group: ksConfig(enabled)}, Registerer: reg})
	published := ids("ks", ksTraffic)
	down.Store(true)
	recovered := time.AfterFunc(ksOutage, func() {
		mu.Lock()
		tm.recovered = time.Now()
		mu.Unlock()
		down.Store(false)
	})
	defer recovered.Stop()
	pollDone := make(chan struct{})
	pollStopped := make(chan struct{})
	go func() { // the first trip, as an operator's scrape would see it
		defer close(pollStopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-pollDone:
				return
			case <-tick.C:
				if n, err := countTrips(reg); err == nil && n > 0 {
					mu.Lock()
					tm.tripped = time.Now()
					mu.Unlock()
					return
				}
			}
		}
	}()
	defer func() { close(pollDone); <-pollStopped }()
	publishPaced(t, b, sub.Topic, published, ksEvery, nil)
	// Every message is handled or dead-lettered in the end: wait for the
	// handled ones, reading the DLQ between waits.
	deadline := time.Now().Add(60 * time.Second)
	dead := deadLetters()
	for c.distinct()+len(dead) < len(published) && time.Now().Before(deadline) {
		c.wait(len(published)-len(dead), 2*time.Second)
		dead = deadLetters()
	}
	r := account(t, published, c.counts(), dead)
	mu.Lock()
	defer mu.Unlock()
	return r, trips(t, reg), tm
}

// trips reads worker_kill_switch_trips_total (0 when not exported).
func trips(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	n, err := countTrips(reg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// countTrips sums worker_kill_switch_trips_total in reg (0 when not
// exported); safe to call from any goroutine.
func countTrips(reg *prometheus.Registry) (float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == "worker_kill_switch_trips_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n, nil
}

// TestOperatorPause: three instances of one worker under load; an
// operator pauses the worker (Redis); none of the instances handles a
// message from the moment all three beat PAUSED until the resume
// (counted); after the resume they handle everything, nothing lost.
func TestOperatorPause(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("Redis is required (REDIS_ADDR, default 127.0.0.1:6379): %v", err)
	}
	for _, be := range ksBackends() {
		t.Run(string(be.name), func(t *testing.T) {
			sub := be.sub("faults.pause." + broker.NewMessageID()[:6])
			sub.Group = "i21-pause-" + broker.NewMessageID()[:6] // its own keys in Redis
			keys := heartbeat.Keys{}
			t.Cleanup(func() {
				ctx := context.Background()
				rdb.Del(ctx, keys.Paused(sub.Group), keys.Registry(sub.Group), keys.Stopping(sub.Group))
				rdb.SRem(ctx, keys.Types(), sub.Group)
			})
			b, deadLetters := be.open(t, sub)
			var paused atomic.Bool
			var whilePaused atomic.Int64
			c := newTally()
			h := func(_ context.Context, d *broker.Delivery) error {
				if paused.Load() {
					whilePaused.Add(1)
				}
				c.add(d.ID)
				return nil
			}
			for i := range 3 {
				runWorker(t, b, sub, h, worker.Config{HeartbeatRedis: rdb, HeartbeatInterval: 100 * time.Millisecond,
					HeartbeatTTL: 2 * time.Second, PausePoll: 100 * time.Millisecond, Instance: fmt.Sprintf("%s-%d", sub.Group, i)})
			}
			before := ids("before", 100)
			publishAll(t, b, sub.Topic, before, nil)
			if !c.wait(len(before), 30*time.Second) {
				t.Fatalf("%d of %d handled before the pause", c.distinct(), len(before))
			}
			ps := heartbeat.Pauses{RDB: rdb}
			if _, err := ps.Pause(context.Background(), sub.Group, "faults", "planned maintenance"); err != nil {
				t.Fatal(err)
			}
			waitPaused(t, rdb, sub.Group, 3, true)
			paused.Store(true)
			during := ids("during", 300)
			publishPaced(t, b, sub.Topic, during, ksEvery, nil)
			// Nothing to await: the point is that nothing happens. Watch
			// for a second after the last publish.
			time.Sleep(time.Second)
			paused.Store(false)
			if _, err := ps.Resume(context.Background(), sub.Group, "faults"); err != nil {
				t.Fatal(err)
			}
			if n := whilePaused.Load(); n != 0 {
				t.Errorf("%d messages handled while the worker was paused", n)
			}
			all := append(before, during...)
			c.wait(len(all), 60*time.Second)
			waitPaused(t, rdb, sub.Group, 3, false)
			account(t, all, c.counts(), deadLetters())
		})
	}
}

// waitPaused waits until n instances of typ beat PAUSED (paused) or
// RUNNING (not paused).
func waitPaused(t *testing.T, rdb *redis.Client, typ string, n int, paused bool) {
	t.Helper()
	want := `"status":"RUNNING"`
	if paused {
		want = `"status":"PAUSED"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		insts, _ := rdb.ZRange(context.Background(), heartbeat.Keys{}.Registry(typ), 0, -1).Result()
		got := 0
		for _, inst := range insts {
			if v, _ := rdb.Get(context.Background(), heartbeat.Keys{}.Heartbeat(typ, inst)).Result(); strings.Contains(v, want) {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d instances of %s beat %s", got, n, typ, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
