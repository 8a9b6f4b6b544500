package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/lag"
)

// Config configures a Server. Every source is optional.
type Config struct {
	// Listen is the host:port ListenAndServe binds.
	Listen string
	// Broker is the backend's name ("rabbitmq", "kafka"), which the
	// health report names. Required with Lag.
	Broker string
	// Lag samples consumer lag (Kafka) or queue depth (RabbitMQ), as the
	// backend's monitor measures it; nil = no broker and no lag
	// component.
	Lag *lag.Sampler
	// Groups are the configured workers; measured by queue depth, their
	// group queues are graded as their lag.
	Groups []Group
	// Thresholds grade group queue depth by topic.
	Thresholds lag.Thresholds
	// Heartbeats samples worker heartbeats; nil = no workers component.
	Heartbeats *heartbeat.Sampler
	// DLQ samples pending dead letters; nil = no dlq component. It is not
	// registered as a collector: add it to Collectors where nothing else
	// exports redrive_dlq_pending.
	DLQ *DLQSampler
	// Collectors are registered on the server's registry too.
	Collectors []prometheus.Collector
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the health report; default time.Now.
	Now func() time.Time
}

// Server serves /metrics, /healthz and /readyz from the samplers' caches.
type Server struct {
	cfg      Config
	log      *slog.Logger
	reg      *prometheus.Registry
	gatherer prometheus.Gatherer // reg and the lag sampler
	handler  http.Handler
}

// New checks cfg, registers the samplers (and Go and process metrics) on a
// registry of the server's own and returns the server.
func New(cfg Config) (*Server, error) {
	if cfg.Lag != nil && cfg.Broker == "" {
		return nil, errors.New("exporter: Config.Broker: required with Config.Lag")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Logger, reg: prometheus.NewRegistry()}
	cs := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	if cfg.Heartbeats != nil {
		cs = append(cs, cfg.Heartbeats)
	}
	for _, c := range cfg.Collectors {
		// The lag sampler is served as a Gatherer (below), not collected.
		if l, ok := c.(*lag.Sampler); !ok || l != cfg.Lag {
			cs = append(cs, c)
		}
	}
	for _, c := range cs {
		if err := s.reg.Register(c); err != nil {
			return nil, fmt.Errorf("exporter: register metrics: %w", err)
		}
	}
	s.gatherer = s.reg
	if cfg.Lag != nil {
		// The lag families are built once per sample (see lag.Sampler):
		// served next to the registry, not registered on it.
		s.gatherer = prometheus.Gatherers{s.reg, cfg.Lag}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.InstrumentMetricHandler(s.reg, newMetricsHandler(s.reg, cfg.Lag, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          s.reg,
		EnableOpenMetrics: true,
	})))
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.HandleFunc("GET /readyz", s.serveReady)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "redrive exporter\n\n/metrics  Prometheus metrics\n/healthz  health report (JSON)\n/readyz   readiness\n")
	})
	s.handler = mux
	return s, nil
}

// Registerer is the server's registry, for the metrics of other parts of
// the process (the DLQ keeper, operate.Ops).
func (s *Server) Registerer() prometheus.Registerer { return s.reg }

// Gatherer is what /metrics serves: the server's registry and the lag
// sampler's families.
func (s *Server) Gatherer() prometheus.Gatherer { return s.gatherer }

// Handler serves /metrics, /healthz and /readyz.
func (s *Server) Handler() http.Handler { return s.handler }

// Snapshot collects the samplers' last samples.
func (s *Server) Snapshot() Snapshot {
	snap := Snapshot{At: s.cfg.Now(), Broker: s.cfg.Broker, Groups: s.cfg.Groups, Thresholds: s.cfg.Thresholds}
	if l := s.cfg.Lag; l != nil {
		if l.Groups() {
			rep, err := l.LastGroups()
			snap.GroupLag = &GroupLagSample{Report: rep, Err: err, Sampled: err != nil || !rep.At.IsZero()}
		}
		if l.Depths() {
			depths, at, err := l.LastDepths()
			snap.Depths = &DepthSample{Depths: depths, At: at, Err: err}
		}
	}
	if s.cfg.Heartbeats != nil {
		rows, at, err := s.cfg.Heartbeats.Last()
		snap.Workers = &WorkersSample{Rows: rows, At: at, Err: err, Dropped: s.cfg.Heartbeats.Dropped()}
	}
	if s.cfg.DLQ != nil {
		pending, at, err := s.cfg.DLQ.Last()
		snap.DLQ = &DLQSample{Pending: pending, At: at, Err: err}
	}
	return snap
}

// Health evaluates the last samples (see Evaluate).
func (s *Server) Health() Health { return Evaluate(s.Snapshot()) }

func (s *Server) serveHealth(w http.ResponseWriter, _ *http.Request) {
	h := s.Health()
	writeJSON(w, h.HTTPStatus(), h)
}

func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	ok, reason := Ready(s.Snapshot())
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, struct {
		Ready  bool   `json:"ready"`
		Reason string `json:"reason,omitempty"`
	}{ok, reason})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"encoding the response failed"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// RunSamplers runs every configured sampler until ctx ends (each samples
// at once, then on its interval), and returns when all have stopped.
func (s *Server) RunSamplers(ctx context.Context) {
	var wg sync.WaitGroup
	for _, run := range s.samplers() {
		wg.Go(func() { _ = run(ctx) })
	}
	wg.Wait()
}

func (s *Server) samplers() []func(context.Context) error {
	var out []func(context.Context) error
	if s.cfg.Lag != nil {
		out = append(out, s.cfg.Lag.Run)
	}
	if s.cfg.Heartbeats != nil {
		out = append(out, s.cfg.Heartbeats.Run)
	}
	if s.cfg.DLQ != nil {
		out = append(out, s.cfg.DLQ.Run)
	}
	return out
}

// ListenAndServe binds cfg.Listen and serves (see Serve).
func (s *Server) ListenAndServe(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("exporter: listen on %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve runs the samplers and serves HTTP on ln until ctx ends, then shuts
// down gracefully (5 s) and returns nil once the samplers have stopped.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	sctx, stopSamplers := context.WithCancel(ctx)
	defer stopSamplers()
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s.RunSamplers(sctx)
	}()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("exporter: serving", "addr", ln.Addr().String(), "paths", "/metrics /healthz /readyz")
	var err error
	select {
	case err = <-errc:
		err = fmt.Errorf("exporter: serve: %w", err)
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if serr := srv.Shutdown(shut); serr != nil {
			err = fmt.Errorf("exporter: shutdown: %w", serr)
		}
	}
	stopSamplers()
	<-sampled
	return err
}
