package console

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/httpguard"
	"github.com/redrive/redrive/lag"
)

// Jobs runs replay-all jobs; *jobs.Jobs implements it (the one the admin
// API shares).
type Jobs interface {
	StartReplayAll(ctx context.Context, q dlq.Query, actor string, rate float64) (dlq.Job, error)
	StartDiscardAll(ctx context.Context, q dlq.Query, actor, reason string, rate float64) (dlq.Job, error)
	Lookup(ctx context.Context, id string) (dlq.Job, error)
	ListJobs(ctx context.Context) ([]dlq.Job, error)
	Cancel(ctx context.Context, id, actor string) (dlq.Job, error)
}

// WorkerSource gives the last worker health table; *heartbeat.Sampler
// implements it.
type WorkerSource interface {
	Last() ([]heartbeat.WorkerStatus, time.Time, error)
}

// LagSource gives the last lag measurements, consumer-group lag or queue
// depth, as the backend's monitor measures it; *lag.Sampler implements
// it.
type LagSource interface {
	// Groups reports whether it measures group lag (LastGroups); Depths
	// whether it measures queue depth (LastDepths).
	Groups() bool
	Depths() bool
	LastGroups() (lag.GroupReport, error)
	LastDepths() ([]lag.QueueDepth, time.Time, error)
}

// User is someone who may log in: Name is the audit log's actor, Token
// the secret typed at login (held in plain: Config.Users). A ReadOnly
// user (a viewer) sees everything but may change nothing.
type User struct {
	Name, Token string
	ReadOnly    bool
}

// Config configures a Console.
type Config struct {
	// Ops does the work. Required.
	Ops *operate.Ops
	// Jobs runs replay-all; required unless every user is read-only.
	Jobs Jobs
	// Workers feeds the workers page; nil shows "not configured".
	Workers WorkerSource
	// Pauser pauses and resumes workers from the workers page (operators
	// only); nil offers no buttons.
	Pauser WorkerPauser
	// Lag feeds the lag page; nil shows "not configured".
	Lag LagSource
	// Broker is the backend's name ("rabbitmq", "kafka"), shown in the
	// header.
	Broker string
	// Access says who may use the console: the named credentials whose
	// token logs in (viewers read only), and the authenticating proxy
	// whose header names the person on every request, without a login
	// (see Console.guard). Share it with the admin API
	// (admin.Config.Access). Required unless Users or InsecureNoAuth;
	// not with Users.
	Access *access.Authenticator
	// Users are users with their tokens held in plain, the shorthand of
	// an Access with one credential each (programs and tests). Default
	// none.
	Users []User
	// InsecureNoAuth serves without login when neither Access nor Users
	// accepts anyone: everyone is the operator "local". For `redrive dev`
	// on a loopback address only.
	InsecureNoAuth bool
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// X-Forwarded-Proto headers are believed (admin.trusted_proxies): the
	// login throttle counts failures per client they name, and cookies
	// are Secure when the client used HTTPS. Empty: the TCP peer is the
	// client and the headers are ignored.
	TrustedProxies []netip.Prefix
	// CookieSecure marks the cookies Secure on every response
	// (admin.cookie_secure); otherwise only when the request came over TLS
	// (to this server, or to a trusted proxy that says so).
	CookieSecure bool
	// TraceLink links the trace id an entry page shows (from the
	// message's W3C traceparent header) to a tracing UI: a template with
	// TraceIDPlaceholder, http or https, e.g.
	// "https://tempo.example/trace/{trace_id}" (console.trace_link).
	// Empty: the trace id is shown without a link.
	TraceLink string
	// SessionSecret keys the signature of the session cookies
	// (admin.session_secret): replicas given the same secret accept each
	// other's sessions. At least 32 bytes. Empty: a random key of this
	// process (a restart logs everyone out, and a session works only on
	// the replica that created it).
	SessionSecret string
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Defaults.
const (
	// SessionTTL is how long a session lasts after login.
	SessionTTL = 12 * time.Hour
	// LocalUser is the operator of an InsecureNoAuth console.
	LocalUser = "local"
	// MinSessionSecret is the shortest Config.SessionSecret accepted.
	MinSessionSecret = 32
	// MaxFormBytes bounds a form post.
	MaxFormBytes = 64 << 10
)

// Console serves the dead-letter console.
type Console struct {
	cfg      Config
	ops      *operate.Ops
	log      *slog.Logger
	auth     *access.Authenticator
	sessions *sessions
	throttle *throttle
	proxies  httpguard.Proxies
	devices  *devices
	pages    map[string]*template.Template
	mux      *http.ServeMux
	now      func() time.Time
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c Config) Validate() error {
	if c.Ops == nil {
		return errors.New("console: Config.Ops: required")
	}
	if c.Access != nil && len(c.Users) > 0 {
		return errors.New("console: Config.Users: set Access or Users, not both (add the users to Access's credentials)")
	}
	auth, err := c.authenticator()
	if err != nil {
		return err
	}
	if auth.Empty() && !c.InsecureNoAuth {
		return errors.New("console: Config.Users: no users: configure at least one (or Access), or InsecureNoAuth")
	}
	if c.Jobs == nil && (c.InsecureNoAuth || auth.Operators()) {
		return errors.New("console: Config.Jobs: required for replay-all unless every user is read-only")
	}
	if c.SessionSecret != "" && len(c.SessionSecret) < MinSessionSecret {
		return fmt.Errorf("console: Config.SessionSecret: shorter than %d bytes", MinSessionSecret)
	}
	if c.TraceLink != "" {
		return checkTraceLink(c.TraceLink)
	}
	return nil
}

// authenticator returns Access, or the Authenticator of Users (nil
// without either). Errors name the user by its index (Credentials[i] is
// Users[i]).
func (c Config) authenticator() (*access.Authenticator, error) {
	if c.Access != nil || len(c.Users) == 0 {
		return c.Access, nil
	}
	creds := make([]access.Credential, len(c.Users))
	for i, u := range c.Users {
		role := access.Operator
		if u.ReadOnly {
			role = access.Viewer
		}
		creds[i] = access.Credential{Name: u.Name, Role: role, Token: u.Token}
	}
	a, err := access.New(access.Config{Credentials: creds})
	if err != nil {
		return nil, fmt.Errorf("console: Config.Users: %w", err)
	}
	return a, nil
}

// userOf is the console's user of an identity.
func userOf(id access.Identity) User {
	return User{Name: id.Name, ReadOnly: !id.Role.CanChange()}
}

// sessionUser returns the user name may hold a session as, with the hash
// of their token: a configured credential, or LocalUser without login.
// The role is read afresh: a credential made a viewer is one at its
// sessions' next request.
func (c *Console) sessionUser(name string) (User, [sha256.Size]byte, bool) {
	if id, sum, ok := c.auth.Lookup(name); ok {
		return userOf(id), sum, true
	}
	if c.cfg.InsecureNoAuth && c.auth.Empty() && name == LocalUser {
		return User{Name: LocalUser}, sha256.Sum256(nil), true
	}
	return User{}, [sha256.Size]byte{}, false
}

// New checks cfg and returns the console.
func New(cfg Config) (*Console, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	auth, err := cfg.authenticator()
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, ops: cfg.Ops, log: cfg.Logger, now: time.Now, auth: auth}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c.pages = pages
	c.sessions = newSessions(SessionTTL, c.now, cfg.SessionSecret, c.sessionUser)
	c.throttle = newThrottle(c.now)
	c.proxies = httpguard.Proxies(cfg.TrustedProxies)
	c.devices = newDevices()
	c.mux = http.NewServeMux()
	c.routes()
	return c, nil
}

// Handler returns the console's handler. It serves every path outside
// /internal/ (mount it with admin.Config.UI).
func (c *Console) Handler() http.Handler {
	return c.recoverPanics(c.secure(http.HandlerFunc(c.dispatch)))
}
