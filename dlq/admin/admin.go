// Package admin serves the DLQ admin HTTP API on top of operate.Ops: JSON in
// and out, the routes of routes.go (documented in configs/openapi.yaml
// and docs/operations.md; where the package sits in
// docs/architecture.md). Who may call it is Config.Access's
// (dlq/access): named bearer tokens with a role, or the person an
// authenticating proxy vouches for; the audit log records that name, an
// X-Redrive-Actor claim beside it (Server.authenticate).
//
// A DLQ is addressed by its name, as GET /internal/v1/dlq lists it:
// "<topic>.<group>.dlq" for a RabbitMQ worker's dead-letter queue,
// "<topic>.dlq" for a Kafka topic's. Entry ids are Kafka coordinates
// "{partition}-{offset}" or the store's ids (RabbitMQ).
//
// Replay-all runs as a background job: POST /internal/v1/dlq/replay-all
// answers 202 with the job, whose progress GET /internal/v1/dlq/jobs/{id}
// reports; GET /internal/v1/dlq/jobs lists the jobs and POST
// /internal/v1/dlq/jobs/{id}/cancel stops one. The jobs are a jobs.Jobs
// (Config.Jobs, shared with the console); they live in memory and a
// restart forgets them (entries a job left replaying are reconciled by
// operate.Ops.Run).
//
// Errors are {"error": message, "code": one of the Code constants,
// "param": field}. Writes need Content-Type: application/json; requests
// from another site's pages (Origin, else Referer) and for a Host that is
// not the server's (Config.AllowedHosts) are refused.
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/dlq/jobs"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/httpguard"
)

// ErrNoToken is returned by New when no token is configured and the
// server is not explicitly allowed to run without one on a loopback
// address.
var ErrNoToken = errors.New("admin: no token configured: set one, or InsecureNoAuth with a loopback listen address")

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 64 << 10
	DefaultActor        = jobs.DefaultActor
)

// Token is an operator's bearer token held in plain, for programs and
// tests (Config.Tokens); a configuration's named operators, kept as
// hashes, and an authenticating proxy come through Config.Access.
type Token struct {
	Name   string // the audit log's actor; default "admin"
	Secret string
}

// Config configures a Server.
type Config struct {
	// Ops does the work. Required.
	Ops *operate.Ops
	// Listen is the address Serve's caller binds (ListenAndServe binds
	// it): with InsecureNoAuth it must be a loopback address.
	Listen string
	// Access says who may use the API and as whom the audit log records
	// them: named tokens with a role (a viewer may only read) and an
	// authenticating proxy's header (see Server.authenticate). Share it
	// with the console (console.Config.Access). Required unless Tokens
	// or InsecureNoAuth; not with Tokens.
	Access *access.Authenticator
	// Tokens are operators' tokens held in plain, the shorthand of an
	// Access with one operator credential each (programs and tests).
	// Default none.
	Tokens []Token
	// InsecureNoAuth serves without authentication, every request as the
	// operator "admin", when neither Access nor Tokens accepts anyone.
	// Only allowed on a loopback address (127.0.0.0/8, ::1, localhost).
	InsecureNoAuth bool
	// MaxBodyBytes bounds request bodies (413 beyond); default 64 KiB.
	MaxBodyBytes int64
	// Jobs runs the replay-all jobs (shared with the console); default a
	// jobs.Jobs of Ops with its defaults. Close closes it.
	Jobs *jobs.Jobs
	// Logger; default slog.Default().
	Logger *slog.Logger
	// UI, when set, serves every request whose path is not under
	// /internal/ (e.g. the dead-letter console of dlq/console), outside
	// the bearer-token check: it does its own authentication. The JSON
	// API is unchanged.
	UI http.Handler
	// AllowedHosts are the names (Host header values, without the port)
	// the server answers to besides its own addresses: the name a reverse
	// proxy forwards, or a DNS name of the host. Every other Host is
	// refused (421), API and UI alike, so that a DNS-rebinding page cannot
	// talk to the server from an operator's browser. The listen address
	// decides what the own addresses are (see httpguard.Hosts): a loopback
	// listener answers to the loopback addresses and "localhost", a
	// listener on all interfaces to any IP address and "localhost".
	AllowedHosts []string
	// Workers pauses and resumes workers (POST
	// /internal/v1/workers/{worker}/pause|resume); nil = those routes
	// answer 503.
	Workers WorkerPauser
}

// Server is the admin API.
type Server struct {
	cfg     Config
	ops     *operate.Ops
	log     *slog.Logger
	auth    *access.Authenticator
	handler http.Handler
	mux     *http.ServeMux
	jobs    *jobs.Jobs
	hosts   atomic.Pointer[httpguard.Hosts]
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not. Without a credential or a proxy it is ErrNoToken
// unless InsecureNoAuth is set and Listen is a loopback address.
func (c Config) Validate() error {
	if c.Ops == nil {
		return errors.New("admin: Config.Ops: required")
	}
	if c.Access != nil && len(c.Tokens) > 0 {
		return errors.New("admin: Config.Tokens: set Access or Tokens, not both (add the tokens to Access's credentials)")
	}
	for i, t := range c.Tokens {
		if t.Secret == "" {
			return fmt.Errorf("admin: Config.Tokens[%d]: token %q has an empty secret", i, t.Name)
		}
	}
	if _, err := c.authenticator(); err != nil {
		return err
	}
	if c.Access.Empty() && len(c.Tokens) == 0 {
		if !c.InsecureNoAuth {
			return fmt.Errorf("admin: Config.Tokens: %w", ErrNoToken)
		}
		if !IsLoopback(c.Listen) {
			return fmt.Errorf("admin: Config.Listen: %w (InsecureNoAuth is set, but %q is not a loopback address)", ErrNoToken, c.Listen)
		}
	}
	return nil
}

// New checks cfg and returns the server. Without a token it refuses
// (ErrNoToken) unless cfg.InsecureNoAuth is set and cfg.Listen is a
// loopback address.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	auth, err := cfg.authenticator()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ops: cfg.Ops, log: cfg.Logger, jobs: cfg.Jobs, auth: auth}
	s.hosts.Store(httpguard.NewHosts(cfg.Listen, cfg.AllowedHosts))
	if s.jobs == nil {
		if s.jobs, err = jobs.New(jobs.Config{Ops: cfg.Ops, Logger: cfg.Logger}); err != nil {
			return nil, fmt.Errorf("admin: %w", err)
		}
	}
	s.mux = http.NewServeMux()
	for _, rt := range routes {
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rt.handler(s, w, r) })
		if method, _, _ := strings.Cut(rt.pattern, " "); method != http.MethodGet {
			h = requireJSON(h)
		}
		s.mux.Handle(rt.pattern, h)
	}
	api := s.refuseCrossOrigin(s.limitBody(s.authenticate(s.route())))
	s.handler = observed(s.recoverPanics(s.checkHost(splitUI(api, cfg.UI))))
	return s, nil
}

// splitUI sends /internal and everything under /internal/ to api, the rest
// to ui (to api as well without a UI).
func splitUI(api, ui http.Handler) http.Handler {
	if ui == nil {
		return api
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/internal" || strings.HasPrefix(p, "/internal/") {
			api.ServeHTTP(w, r)
			return
		}
		ui.ServeHTTP(w, r)
	})
}

// Handler returns the server's handler (for tests and for mounting): the
// API, and Config.UI when set.
func (s *Server) Handler() http.Handler { return s.handler }

// IsLoopback reports whether the host of addr ("host:port" or a host) is a
// loopback address or "localhost". An empty host (all interfaces) is not.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ListenAndServe binds cfg.Listen and serves until ctx ends (see Serve).
func (s *Server) ListenAndServe(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("admin: listen on %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves the API on ln until ctx ends, then shuts down gracefully
// (10 s), stops the running replay-all jobs and returns nil. Without a
// token, ln must be a loopback address.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.auth.Empty() && !IsLoopback(ln.Addr().String()) {
		_ = ln.Close()
		return fmt.Errorf("%w (%s is not a loopback address)", ErrNoToken, ln.Addr())
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.hosts.Store(s.hosts.Load().WithAddr(ln.Addr()))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("admin: serving", "addr", ln.Addr().String(), "tokens", s.auth.HasTokens(), "proxy", s.auth.HasProxy())
	select {
	case err := <-errc:
		s.Close()
		return fmt.Errorf("admin: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	s.Close()
	if err != nil {
		return fmt.Errorf("admin: shutdown: %w", err)
	}
	return nil
}

// Close stops the running replay-all jobs and waits for them. Entries
// they were replaying are finished first (the broker's answer is
// recorded); the rest stay pending.
func (s *Server) Close() { s.jobs.Close() }

// Jobs returns the server's replay-all jobs (Config.Jobs).
func (s *Server) Jobs() *jobs.Jobs { return s.jobs }

// limitBody refuses bodies over the limit: 413 at once when the length is
// announced, else when a handler reads past it.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.cfg.MaxBodyBytes {
			writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, "", fmt.Sprintf("request body over %d bytes", s.cfg.MaxBodyBytes))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// recoverPanics turns a handler panic into a 500, logged.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("admin: handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeError(w, http.StatusInternalServerError, CodeInternal, "", msgInternal)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// checkHost refuses (421) a request whose Host is neither an address of
// the server nor one of Config.AllowedHosts: a page on another site that
// rebinds its name to this server's address sends its own name.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.Load().Allowed(r.Host) {
			s.log.Warn("admin: request for another host refused", "host", r.Host, "path", r.URL.Path, "remote", r.RemoteAddr)
			writeError(w, http.StatusMisdirectedRequest, CodeHostNotAllowed, "",
				fmt.Sprintf("Host %.80q is not an address of this server (list the names it is reached by in admin.allowed_hosts)", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuseCrossOrigin refuses (403) an API request that a page of another
// site sent: its Origin, else its Referer, names another host.
func (s *Server) refuseCrossOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpguard.CrossOrigin(r) {
			s.log.Warn("admin: cross-origin request refused", "method", r.Method, "path", r.URL.Path, "origin", r.Header.Get("Origin"), "referer", r.Header.Get("Referer"))
			writeError(w, http.StatusForbidden, CodeCrossOrigin, "Origin", "cross-origin requests are refused: this API is not for web pages of other sites")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireJSON refuses (415) a write whose Content-Type is not
// application/json, with or without a body: a web page can send a
// cross-origin form (urlencoded, multipart, text/plain) without asking,
// but not JSON.
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "Content-Type",
				"Content-Type: application/json is required on "+r.Method+" (even without a body)")
			return
		}
		next.ServeHTTP(w, r)
	})
}
