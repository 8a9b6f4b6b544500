package relay

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/heartbeat"
)

// Defaults of EndpointConfig.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultContentType    = "application/octet-stream"
	DefaultMaxHeaderBytes = 16 << 10
	DefaultMaxRetryAfter  = 5 * time.Minute
	// MaxRedirects bounds EndpointConfig.MaxRedirects.
	MaxRedirects = 10
)

// DefaultPermanentStatuses are the statuses that dead-letter a message
// at once unless EndpointConfig.PermanentStatuses says otherwise.
var DefaultPermanentStatuses = []int{400, 404, 410, 422}

// EndpointConfig configures an Endpoint. Worker, Topic and URL are
// required; every other field's zero value is its default.
type EndpointConfig struct {
	// Worker is the worker (consumer group) whose messages the endpoint
	// gets: the redrive-worker header and the worker label of the
	// metrics. Required.
	Worker string
	// Topic is the worker's topic: the ce-source of its POSTs is
	// "/redrive/<topic>". Required.
	Topic string
	// URL is where every message is POSTed: http:// or https://, with a
	// host and no user information. Required.
	URL string
	// Timeout bounds one POST, from the request to the end of the answer
	// read. Default DefaultTimeout; >= 0.
	Timeout time.Duration
	// Concurrency is the most POSTs the worker has in flight at once (its
	// handler concurrency): the connections kept open to the endpoint.
	// Default 1; >= 0.
	Concurrency int
	// PermanentStatuses are the statuses that dead-letter the message at
	// once, each 400 to 599 but 429. Default DefaultPermanentStatuses.
	PermanentStatuses []int
	// MaxRedirects is how many redirects a POST follows (307 and 308
	// only, never from https to http). Default 0: none; 0 to
	// MaxRedirects.
	MaxRedirects int
	// ContentType is the Content-Type of the POSTs. Default
	// DefaultContentType.
	ContentType string
	// MaxHeaderBytes bounds the HTTP headers a message becomes; a message
	// that needs more is dead-lettered (HeadersError). Default
	// DefaultMaxHeaderBytes; >= 0.
	MaxHeaderBytes int
	// MaxRetryAfter caps the delay a Retry-After asks for. Default
	// DefaultMaxRetryAfter (relay.Load gives the worker's longest back-off
	// delay); >= 0.
	MaxRetryAfter time.Duration
	// BearerToken, when set, is sent as "Authorization: Bearer <token>".
	// Default "": no Authorization header.
	BearerToken string
	// TLS configures https:// (CAs, client certificate); the server's
	// certificate is always verified. Default nil: the system roots.
	TLS *tls.Config
	// Registerer exports the endpoint's metrics
	// (redrive_relay_requests_total, redrive_relay_request_duration_seconds).
	// Default nil: none (Stats counts anyway). The endpoint logs nothing:
	// the worker runtime logs each failure and what became of it.
	Registerer prometheus.Registerer
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c EndpointConfig) Validate() error {
	switch {
	case c.Worker == "":
		return errors.New("relay: EndpointConfig.Worker: required")
	case c.Topic == "":
		return errors.New("relay: EndpointConfig.Topic: required")
	case c.Timeout < 0:
		return fmt.Errorf("relay: EndpointConfig.Timeout: must be >= 0, got %s", c.Timeout)
	case c.Concurrency < 0:
		return fmt.Errorf("relay: EndpointConfig.Concurrency: must be >= 0, got %d", c.Concurrency)
	case c.MaxRedirects < 0 || c.MaxRedirects > MaxRedirects:
		return fmt.Errorf("relay: EndpointConfig.MaxRedirects: must be 0 to %d, got %d", MaxRedirects, c.MaxRedirects)
	case c.MaxHeaderBytes < 0:
		return fmt.Errorf("relay: EndpointConfig.MaxHeaderBytes: must be >= 0, got %d", c.MaxHeaderBytes)
	case c.MaxRetryAfter < 0:
		return fmt.Errorf("relay: EndpointConfig.MaxRetryAfter: must be >= 0, got %s", c.MaxRetryAfter)
	case c.TLS != nil && c.TLS.InsecureSkipVerify:
		return errors.New("relay: EndpointConfig.TLS: InsecureSkipVerify: the endpoint's certificate is always verified (give its CA)")
	}
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return errors.New("relay: EndpointConfig.URL: required")
	case err != nil:
		return errors.New("relay: EndpointConfig.URL: not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("relay: EndpointConfig.URL: scheme %q is not http or https", u.Scheme)
	case u.Host == "":
		return errors.New("relay: EndpointConfig.URL: no host")
	case u.User != nil:
		return errors.New("relay: EndpointConfig.URL: holds user information (give BearerToken)")
	}
	for i, s := range c.PermanentStatuses {
		if s < 400 || s > 599 || s == http.StatusTooManyRequests {
			return fmt.Errorf("relay: EndpointConfig.PermanentStatuses[%d]: %d is not 400 to 599 but 429", i, s)
		}
	}
	if strings.ContainsAny(c.BearerToken, " \t\r\n") {
		return errors.New("relay: EndpointConfig.BearerToken: holds whitespace")
	}
	return nil
}

// Endpoint delivers messages to one HTTP endpoint: its Handle is a
// broker.Handler. It is safe for concurrent use.
type Endpoint struct {
	cfg           EndpointConfig
	url           string // cfg.URL, parsed and printed once
	shown         string // the URL without user, query or fragment: logs, errors, metrics
	source        string // the ce-source of every POST
	client        *http.Client
	transport     *http.Transport
	permanent     map[int]bool
	maxRetryAfter time.Duration
	contentType   []string
	auth          []string
	stats         *stats
}

// NewEndpoint returns the endpoint cfg describes (defaults applied), or
// cfg's Validate error.
func NewEndpoint(cfg EndpointConfig) (*Endpoint, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.Concurrency = max(cfg.Concurrency, 1)
	cfg.ContentType = cmp.Or(cfg.ContentType, DefaultContentType)
	cfg.MaxHeaderBytes = cmp.Or(cfg.MaxHeaderBytes, DefaultMaxHeaderBytes)
	cfg.MaxRetryAfter = cmp.Or(cfg.MaxRetryAfter, DefaultMaxRetryAfter)
	if len(cfg.PermanentStatuses) == 0 {
		cfg.PermanentStatuses = DefaultPermanentStatuses
	}
	u, _ := url.Parse(cfg.URL) // Validate parsed it
	e := &Endpoint{cfg: cfg, url: u.String(), shown: Shown(u), source: Source(cfg.Topic), permanent: map[int]bool{},
		maxRetryAfter: cfg.MaxRetryAfter, contentType: []string{cfg.ContentType}}
	for _, s := range cfg.PermanentStatuses {
		e.permanent[s] = true
	}
	if cfg.BearerToken != "" {
		e.auth = []string{"Bearer " + cfg.BearerToken}
	}
	st, err := newStats(e.shown, cfg.Worker, cfg.Registerer)
	if err != nil {
		return nil, err
	}
	e.stats = st
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLS != nil {
		tlsConfig = cfg.TLS.Clone()
	}
	e.transport = &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:        tlsConfig,
		TLSHandshakeTimeout:    cfg.Timeout,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           cfg.Concurrency,
		MaxIdleConnsPerHost:    cfg.Concurrency,
		MaxConnsPerHost:        cfg.Concurrency,
		IdleConnTimeout:        90 * time.Second,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	e.client = &http.Client{Transport: e.transport, CheckRedirect: e.checkRedirect}
	return e, nil
}

// Shown is u as logs, errors and metric labels show it: scheme, host and
// path, without user information, query or fragment (where secrets go).
func Shown(u *url.URL) string {
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return v.String()
}

// URL returns the endpoint's address as Shown prints it.
func (e *Endpoint) URL() string { return e.shown }

// checkRedirect follows up to MaxRedirects redirects that keep the
// method and body (307, 308), never from https to http; otherwise the
// redirect is the answer (a failure, retried).
func (e *Endpoint) checkRedirect(req *http.Request, via []*http.Request) error {
	switch {
	case len(via) > e.cfg.MaxRedirects:
		return http.ErrUseLastResponse
	case req.Response == nil || (req.Response.StatusCode != http.StatusTemporaryRedirect && req.Response.StatusCode != http.StatusPermanentRedirect):
		return http.ErrUseLastResponse
	case via[0].URL.Scheme == "https" && req.URL.Scheme != "https":
		return http.ErrUseLastResponse
	}
	return nil
}

// Handle POSTs d to the endpoint and returns what its answer means to the
// worker: nil (2xx), broker.Permanent (a permanent status, a DROP body,
// headers that do not fit), broker.RetryAfter (429 or 503 with
// Retry-After), broker.Requeue (ctx ended: the relay stops) or a plain
// error (anything else: retried by the worker's schedule, and transient
// to its kill switch). It is a broker.Handler.
func (e *Endpoint) Handle(ctx context.Context, d *broker.Delivery) error {
	start := time.Now()
	outcome, err := e.post(ctx, d)
	e.stats.observe(outcome, time.Since(start))
	return err
}

func (e *Endpoint) post(ctx context.Context, d *broker.Delivery) (Outcome, error) {
	pctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodPost, e.url, bytes.NewReader(d.Value))
	if err != nil {
		return OutcomeUnreachable, fmt.Errorf("relay: POST %s: %w", e.shown, err)
	}
	req.Header = make(http.Header, 16)
	if err := headers(req.Header, d, e.cfg.Worker, e.source, e.cfg.MaxHeaderBytes, traceCarrier{trace.SpanContextFromContext(ctx)}); err != nil {
		return OutcomePermanent, broker.Permanent(&HeadersError{Err: err})
	}
	req.Header["Content-Type"] = e.contentType
	if e.auth != nil {
		req.Header["Authorization"] = e.auth
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return e.transportError(ctx, pctx, err)
	}
	body, err := readBody(resp)
	if err != nil {
		return e.transportError(ctx, pctx, err)
	}
	return e.judge(resp, body, time.Now())
}

// readBody reads up to MaxResponseBytes of resp's body and closes it; a
// body read whole lets the connection be reused. An empty body (the
// usual success) costs no buffer.
func readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength == 0 {
		return nil, nil
	}
	size := int64(512)
	if resp.ContentLength > 0 {
		size = min(resp.ContentLength+1, MaxResponseBytes)
	}
	b := bytes.NewBuffer(make([]byte, 0, size))
	_, err := b.ReadFrom(io.LimitReader(resp.Body, MaxResponseBytes))
	return b.Bytes(), err
}

// transportError classifies a POST that got no whole answer: the relay
// stopping (ctx ended) hands the message back; a timeout or a connection
// failure is a transient failure.
func (e *Endpoint) transportError(ctx, pctx context.Context, err error) (Outcome, error) {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text holds the whole URL, query included
	}
	switch {
	case ctx.Err() != nil:
		return OutcomeCanceled, broker.Requeue(fmt.Errorf("relay: POST %s: %w", e.shown, ctx.Err()))
	case pctx.Err() != nil || isTimeout(err):
		return OutcomeTimeout, &TransportError{Timeout: true,
			Err: fmt.Errorf("POST %s: no answer within %s", e.shown, e.cfg.Timeout)}
	}
	return OutcomeUnreachable, &TransportError{Err: fmt.Errorf("POST %s: %w", e.shown, err)}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Stats returns what the endpoint's heartbeats say: its URL, its POSTs by
// outcome since it was created and their latency quantiles.
func (e *Endpoint) Stats() *heartbeat.Endpoint { return e.stats.snapshot() }

// Close closes the endpoint's idle connections.
func (e *Endpoint) Close() { e.transport.CloseIdleConnections() }
