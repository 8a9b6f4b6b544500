package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/relay"
)

// Clients of the relay scenario's rows besides ClientRedrive.
const (
	// ClientHTTP is a plain net/http client POSTing the bodies to the
	// endpoint, no broker: the endpoint's ceiling.
	ClientHTTP = "net/http client"
	// ClientRawHTTP is the raw broker client's drain with each message
	// POSTed by the plain client before its ack or commit: a relay
	// written by hand, the baseline.
	ClientRawHTTP = "raw + net/http"
)

// relayTarget is the target for the relay: ≥ 0.8 × a plain Go
// HTTP client posting the same messages.
const relayTarget = 0.8

// relayRounds is how many rounds the relay scenario splits its messages
// into, the clients in turn in each: single runs of 20,000 swung from 0.5
// to 1.25 × on this shared 2-core machine.
const relayRounds = 5

// relayScenario measures redrive relay (package relay's Endpoint on
// Consume, as `redrive relay` runs it) draining a pre-filled queue or
// topic into an HTTP endpoint in this process, against a relay written
// by hand: the raw client's drain of the same number of messages, each
// POSTed by a plain net/http client with the headers the relay writes
// (the same message on the wire) before its ack or commit, with as many
// in flight (RabbitMQ: Concurrency handlers; Kafka: a partition
// each). A third row, the plain client POSTing the bodies with no broker
// at all, is the endpoint's ceiling. Every row's CPU includes the
// endpoint's. relayRounds rounds, the three in turn, each on a queue or
// topic of its own; rows are median rounds, the ratio the median of the
// rounds' ratios.
func relayScenario(ctx context.Context, d relayDrainer) ([]Row, error) {
	e := d.env()
	per := (e.cfg.RelayMessages + relayRounds - 1) / relayRounds
	ep, err := startBenchEndpoint()
	if err != nil {
		return nil, err
	}
	defer ep.close()
	var alones, raws, rds []Row
	for i := range relayRounds {
		s, err := d.sub(ctx, fmt.Sprintf("%s-%d", ScenarioRelay, i))
		if err != nil {
			return nil, err
		}
		plain := newPlainClient(ep.url, s.Concurrency)
		e.progress(ScenarioRelay, ClientHTTP)
		alone, err := plain.posts(ctx, per, body(e.cfg.Size), s.Topic)
		if err != nil {
			plain.close()
			return nil, fmt.Errorf("plain client: %w", err)
		}
		alone.Broker, alone.Note = e.broker, fmt.Sprintf("no broker: the endpoint's ceiling; %d in flight", s.Concurrency)

		e.progress(ScenarioRelay, ClientRawHTTP)
		raw, err := d.rawRelay(ctx, fmt.Sprintf("%s-%d", ScenarioRelay, i), per, func(m relayMsg) error { return plain.post(ctx, m) })
		plain.close()
		if err != nil {
			return nil, fmt.Errorf("raw relay: %w", err)
		}
		raw.Client = ClientRawHTTP
		raw.Note = fmt.Sprintf("%d in flight; %s", s.Concurrency, raw.Note)

		e.progress(ScenarioRelay, ClientRedrive)
		if err := d.fill(ctx, s.Topic, per); err != nil {
			return nil, err
		}
		before := ep.requests.Load()
		rd, err := relayDrain(ctx, e, s, ep.url, per)
		if err != nil {
			return nil, err
		}
		if got := ep.requests.Load() - before; got < int64(per) {
			return nil, fmt.Errorf("the endpoint got %d POSTs of the relay, want %d", got, per)
		}
		alones, raws, rds = append(alones, alone), append(raws, raw), append(rds, rd)
	}
	alone, raw, rd := medianRow(alones), medianRow(raws), medianRow(rds)
	compareRounds(&rd, rds, raws, ClientRawHTTP, relayTarget)
	if x, _, ok := medianRatio(rds, alones); ok {
		rd.Note = fmt.Sprintf("%.2f × the plain client alone; %s", x, rd.Note)
	}
	return []Row{alone, raw, rd}, nil
}

// relayDrainer is a broker's run as the relay scenario uses it.
type relayDrainer interface {
	drainer
	// rawRelay drains n messages pre-filled into a raw queue or topic of
	// name through the raw client, each handed to post before its ack or
	// commit.
	rawRelay(ctx context.Context, name string, n int, post func(relayMsg) error) (Row, error)
}

// relayMsg is what a relay by hand POSTs of a message: its body and the
// values of the headers the relay writes.
type relayMsg struct {
	id, topic, seq string
	at             time.Time
	body           []byte
}

// relayDrain drains n messages of s through an Endpoint posting to url
// and returns the measured row.
func relayDrain(ctx context.Context, e *base, s broker.Subscription, url string, n int) (Row, error) {
	ep, err := relay.NewEndpoint(relay.EndpointConfig{Worker: s.Group, Topic: s.Topic, URL: url, Concurrency: s.Concurrency})
	if err != nil {
		return Row{}, err
	}
	defer ep.Close()
	r, err := consumeWith(ctx, e.redrive, s, n, ScenarioRelay, e.broker, e.cfg.Timeout, func(dr *drain) broker.Handler {
		return func(ctx context.Context, d *broker.Delivery) error {
			err := ep.Handle(ctx, d)
			if err == nil {
				dr.hit()
			}
			return err
		}
	})
	if err != nil {
		return Row{}, err
	}
	r.Note = fmt.Sprintf("%d in flight; ", s.Concurrency) + r.Note
	return r, nil
}

// plainClient is a net/http client whose transport keeps conc
// connections open to the endpoint.
type plainClient struct {
	url    string
	conc   int
	tr     *http.Transport
	client *http.Client
}

func newPlainClient(url string, conc int) *plainClient {
	tr := &http.Transport{MaxIdleConns: conc, MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc, IdleConnTimeout: time.Minute}
	return &plainClient{url: url, conc: conc, tr: tr, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (p *plainClient) close() { p.tr.CloseIdleConnections() }

// post POSTs m with the headers redrive relay writes for a first
// delivery of it (the same names and values: the same message on the
// wire, as a relay by hand in CloudEvents binary mode sends it) and reads
// the answer, which must be 200.
func (p *plainClient) post(ctx context.Context, m relayMsg) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(m.body))
	if err != nil {
		return err
	}
	h := make(http.Header, 12)
	h["Content-Type"] = []string{"application/octet-stream"}
	h["ce-specversion"] = []string{"1.0"}
	h["ce-id"] = []string{m.id}
	h["ce-source"] = []string{"/redrive/" + m.topic}
	h["ce-type"] = []string{"redrive.message"}
	h["ce-time"] = []string{m.at.UTC().Format(time.RFC3339Nano)}
	h["redrive-worker"] = []string{ScenarioRelay}
	h["redrive-attempt"] = []string{"1"}
	h["redrive-header-bench-seq"] = []string{m.seq}
	req.Header = h
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST: %s", resp.Status)
	}
	return nil
}

// posts POSTs n messages of body to topic, conc at a time, and times
// them.
func (p *plainClient) posts(ctx context.Context, n int, body []byte, topic string) (Row, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, p.conc)
	m := startMeter()
	for range p.conc {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				seq := strconv.FormatInt(i, 10)
				if err := p.post(ctx, relayMsg{id: broker.NewMessageID(), topic: topic, seq: seq, at: time.Now(), body: body}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed, u := m.stop()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return Row{}, err
	}
	return row(ScenarioRelay, "", ClientHTTP, n, elapsed, u), nil
}

// benchEndpoint is the HTTP endpoint of the relay scenario: it reads each
// body whole and answers 200.
type benchEndpoint struct {
	url      string
	srv      *http.Server
	requests atomic.Int64
}

func startBenchEndpoint() (*benchEndpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("relay endpoint: %w", err)
	}
	ep := &benchEndpoint{url: "http://" + ln.Addr().String() + "/events"}
	ep.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ep.requests.Add(1)
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = ep.srv.Serve(ln) }()
	return ep, nil
}

func (ep *benchEndpoint) close() { _ = ep.srv.Close() }
