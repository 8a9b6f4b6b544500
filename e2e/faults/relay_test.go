//go:build faults

package faults

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/crashtest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/relay"
	"github.com/redrive/redrive/worker"
	"github.com/redrive/redrive/worker/killswitch"
)

// The relay's cases (package relay, redrive relay): the relay SIGKILLed
// while a POST is in flight, and the endpoint's process SIGKILLed while
// it holds one. Neither stops RabbitMQ: each runs on queues of its own.

const (
	// childRelay runs relay.Parse(FAULTS_RELAY_CONFIG) until SIGTERM.
	childRelay = "relay"
	// childEndpoint serves an HTTP endpoint on FAULTS_ENDPOINT that
	// answers 200 and reports each message as "crashtest done <id>";
	// it SIGKILLs itself on receiving FAULTS_POISON.
	childEndpoint  = "endpoint"
	envRelayConfig = "FAULTS_RELAY_CONFIG"
	envEndpoint    = "FAULTS_ENDPOINT"
)

// relayBackend opens what a relay case needs on one broker: a broker to
// publish with, the topology of the worker sub declared, and a reader of
// its dead letters by message id. brokerYAML is the configuration's
// broker section, for the relay child.
type relayBackend struct {
	name string
	// retry is the worker's retry section: on RabbitMQ (retries never
	// block) the kill switch keeps an outage from dead-lettering; on
	// Kafka, whose retries block in place, a schedule that outlasts the
	// outage does (see e2e's relay scenarios).
	retry string
	open  func(t *testing.T, sub broker.Subscription) (b broker.Broker, brokerYAML string, dead func() map[string]int)
}

var relayBackends = []relayBackend{
	{"rabbitmq", `{max_retries: 2, backoff: "300ms -> 600ms"}`, func(t *testing.T, sub broker.Subscription) (broker.Broker, string, func() map[string]int) {
		b, prefix := newRabbit(t, sub)
		yaml := fmt.Sprintf("broker: rabbitmq\nrabbitmq: {url: %q, prefix: %s, delay: {resolution: 100ms, factor: 2, levels: 3}}\n",
			testenv.RabbitMQ.URL(), prefix)
		seen := map[string]int{} // reading drains the queue: keep the total
		return b, yaml, func() map[string]int {
			for id, n := range rabbitDeadLetters(t, sub) {
				seen[id] += n
			}
			return seen
		}
	}},
	{"kafka", `{max_retries: 3, backoff: "300ms -> 600ms -> 3s"}`, func(t *testing.T, sub broker.Subscription) (broker.Broker, string, func() map[string]int) {
		brokers := childCluster(t)
		b := kafkatest.New(t, brokers, nil)
		if err := b.Declare(context.Background(), sub); err != nil {
			t.Fatal(err)
		}
		// A killed member leaves the group after a second (childCluster).
		yaml := fmt.Sprintf("broker: kafka\nkafka: {brokers: [%q], session_timeout: 1s, rebalance_timeout: 2s, heartbeat_interval: 100ms,"+
			" commit_interval: 100ms, fetch_max_wait: 100ms}\n", strings.Join(brokers, ","))
		return b, yaml, func() map[string]int { return kafkaDeadLetters(t, brokers, sub) }
	}},
}

// relayWorker is the worker of the relay cases as YAML, with its retry
// section (be.retry; on RabbitMQ at most 700 ms, the longest the suite's
// delay tiers express) and its endpoint at url.
func relayWorker(topic, retry, url string) string {
	return fmt.Sprintf("workers:\n  - {name: g, topic: %s, queue_ttl: 0, concurrency: 4, prefetch: 16,\n"+
		"     retry: %s,\n"+
		"     kill_switch: {enabled: true, activation: 3, window: 1s, restart_after: 200ms, max_restart_after: 800ms},\n"+
		"     endpoint: {url: %q, timeout: 5s}}\n", topic, retry, url)
}

// relaySub is the subscription of relayWorker, as the configuration
// builds it (the parent declares what the child consumes).
func relaySub(t *testing.T, yaml string) broker.Subscription {
	t.Helper()
	c, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return c.Subscriptions()[0]
}

// TestRelayKilled SIGKILLs the relay process while the endpoint holds a
// POST of it (and three more are in flight), and starts another: every
// message reaches the endpoint and is answered, the one killed mid-POST
// again (redelivered); none is lost.
func TestRelayKilled(t *testing.T) {
	for _, be := range relayBackends {
		t.Run(be.name, func(t *testing.T) {
			topic := "faults.relay-killed." + broker.NewMessageID()[:6]
			published := ids(topic, 200)
			victim := published[60]
			ok := newTally()
			var (
				mu     sync.Mutex
				cur    *child
				posts  int // of the victim
				killed = make(chan struct{})
				again  []bool // the victim's later POSTs: redelivered?
			)
			srv := serveEndpoint(t, func(w http.ResponseWriter, m *relay.Message) {
				if m.ID == victim {
					mu.Lock()
					posts++
					first := posts == 1
					if !first {
						again = append(again, m.Redelivered)
					}
					c := cur
					mu.Unlock()
					if first {
						c.kill() // mid-POST: this request is never answered
						close(killed)
						return
					}
				}
				ok.add(m.ID)
			})
			yaml := func(brokerYAML string) string { return brokerYAML + relayWorker(topic, be.retry, srv) }
			sub := relaySub(t, yaml("broker: rabbitmq\n"))
			b, brokerYAML, dead := be.open(t, sub)
			env := []string{envRelayConfig + "=" + yaml(brokerYAML)}

			mu.Lock()
			cur = startChild(t, newTally(), childRelay, env...)
			mu.Unlock()
			publishPaced(t, b, topic, published, 20*time.Millisecond, nil)
			select {
			case <-killed:
			case <-time.After(time.Minute):
				t.Fatal("the endpoint never got the victim's POST")
			}
			t.Logf("SIGKILLed the relay mid-POST after %d messages were answered", ok.distinct())
			mu.Lock()
			cur = startChild(t, newTally(), childRelay, env...)
			second := cur
			mu.Unlock()
			if !ok.wait(len(published), time.Minute) {
				t.Errorf("after the restart, %d of %d messages answered in a minute", ok.distinct(), len(published))
			}
			second.stop(t)
			account(t, published, ok.counts(), dead())
			mu.Lock()
			defer mu.Unlock()
			if posts < 2 {
				t.Errorf("the victim reached the endpoint %d times, want at least 2 (killed mid-POST, then redelivered)", posts)
			}
			if be.name == "rabbitmq" && (len(again) == 0 || !again[0]) {
				t.Errorf("the victim's next POST says redelivered %v, want true", again)
			}
		})
	}
}

// TestRelayEndpointKilled runs the relay in this process and the endpoint
// in a child process that SIGKILLs itself while it holds a POST; the
// endpoint comes back half a second later on the same address. The
// relay retries (the kill switch on): every message is answered, none
// dead-lettered or lost.
func TestRelayEndpointKilled(t *testing.T) {
	for _, be := range relayBackends {
		t.Run(be.name, func(t *testing.T) {
			topic := "faults.endpoint-killed." + broker.NewMessageID()[:6]
			published := ids(topic, 300)
			addr := testenv.ClosedAddr(t)
			yaml := "broker: rabbitmq\n" + relayWorker(topic, be.retry, "http://"+addr+"/events")
			sub := relaySub(t, yaml)
			b, _, dead := be.open(t, sub)
			ok := newTally()
			endpoint := startChild(t, ok, childEndpoint, envEndpoint+"="+addr, envPoison+"="+published[100])
			waitListening(t, addr)
			ep, err := relay.NewEndpoint(relay.EndpointConfig{Worker: sub.Group, Topic: topic, URL: "http://" + addr + "/events",
				Timeout: 5 * time.Second, Concurrency: sub.Concurrency})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := config.Parse([]byte(yaml))
			runWorker(t, b, sub, ep.Handle, worker.Config{KillSwitches: map[string]killswitch.Config{sub.Group: c.Workers[0].KillSwitch.Config()}})
			publishPaced(t, b, topic, published, 20*time.Millisecond, nil)
			select {
			case <-endpoint.exited: // the poison: killed mid-POST
			case <-time.After(time.Minute):
				t.Fatal("the endpoint never got the poison message")
			}
			t.Logf("the endpoint killed itself; %d messages answered", ok.distinct())
			time.Sleep(500 * time.Millisecond) // the outage
			startChild(t, ok, childEndpoint, envEndpoint+"="+addr)
			if !ok.wait(len(published), time.Minute) {
				t.Errorf("%d of %d messages answered a minute after the endpoint came back", ok.distinct(), len(published))
			}
			r := account(t, published, ok.counts(), dead())
			if r.dead != 0 {
				t.Errorf("the endpoint's death cost %d dead letters, want 0", r.dead)
			}
		})
	}
}

// serveEndpoint serves an endpoint in this process that reads each POST
// and calls answer, then answers 200 unless answer killed the relay; it
// returns its URL.
func serveEndpoint(t *testing.T, answer func(http.ResponseWriter, *relay.Message)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, err := relay.ReadRequest(r, 1<<20)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer(w, m)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/events"
}

// waitListening waits until something accepts connections on addr.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "the endpoint to listen on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
}

// relayChild is the relay subprocess of TestRelayKilled.
func relayChild(ctx context.Context) error {
	r, err := relay.Parse(ctx, []byte(os.Getenv(envRelayConfig)), relay.Config{Runtime: worker.Config{NoSignals: true,
		Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

// endpointChild is the endpoint subprocess of TestRelayEndpointKilled.
func endpointChild(ctx context.Context) error {
	ln, err := net.Listen("tcp", os.Getenv(envEndpoint))
	if err != nil {
		return err
	}
	poison := os.Getenv(envPoison)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, err := relay.ReadRequest(r, 1<<20)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if poison != "" && m.ID == poison {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // mid-POST
		}
		crashtest.Done(m.ID)
	})}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
