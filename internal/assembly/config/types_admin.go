package config

import (
	"net/netip"

	"github.com/redrive/redrive/internal/httpguard"
)

// Admin configures the admin HTTP API.
type Admin struct {
	Listen string `yaml:"listen"` // host:port of the DLQ admin API and the console
	// Token is one shared operator token of the API and the console
	// (older configurations), audited as the operator "admin"; prefer
	// admin.operators, which names each person. At least 8 characters.
	// One of token, operators or proxy_auth is required when listen is
	// not a loopback address. Secret: masked by Redacted.
	Token string `yaml:"token"`
	// ViewerToken, when set, is one shared read-only token, audited as the
	// viewer "viewer": the console and the API's reads, no replay,
	// discard, replay-all or pause. At least 8 characters; must differ
	// from Token, and needs an operator (token, operators or proxy_auth).
	// Secret: masked by Redacted.
	ViewerToken string `yaml:"viewer_token"`
	// Operators are the people (and programs) who may use the API and the
	// console, each with a token of their own, kept here only as its
	// hash: the audit log names who replayed, discarded, paused or
	// resumed. See docs/operations.md, "Operators with names". Default
	// none.
	Operators []Operator `yaml:"operators"`
	// ProxyAuth, when set, believes an authenticating proxy in front of
	// the console and the API (oauth2-proxy, a single sign-on gateway):
	// the person it names in a header of each request is the audit log's
	// actor, without a token. Default none.
	ProxyAuth *ProxyAuth `yaml:"proxy_auth"`
	// AllowedHosts are the names the admin API and the console answer to
	// besides the addresses of admin.listen: the Host header (without the port)
	// a reverse proxy forwards, or a DNS name of the host. Any other Host
	// is refused with 421, so that a web page whose name an attacker
	// rebinds to this address (DNS rebinding) cannot use an operator's
	// browser to read or change dead letters. A loopback listen answers
	// to the loopback addresses and "localhost"; a listen on all
	// interfaces to any IP address and "localhost". Default none.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// TrustedProxies are the reverse proxies, as CIDRs (10.0.0.0/8) or
	// addresses, whose X-Forwarded-For and X-Forwarded-Proto headers are
	// believed: the console's login throttle then counts the client the
	// proxy names instead of the proxy, and its cookies are Secure when
	// the client used HTTPS. Default none: the TCP peer is the client and
	// the headers are ignored.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// CookieSecure marks the console's cookies Secure (sent over HTTPS
	// only) on every response: set it when a proxy terminates TLS in front
	// of the console. Default false: Secure only when the request came
	// over TLS (to redrive, or to a trusted proxy that says so).
	CookieSecure bool `yaml:"cookie_secure"`
	// SessionSecret signs the console's session cookies. Give every
	// replica of `redrive serve` behind one load balancer the same secret
	// (e.g. "${REDRIVE_SESSION_SECRET}") so that a session works on each;
	// changing it logs everyone out. At least 32 characters. Empty: a
	// random key per process: a session works only on the replica that
	// created it, and a restart logs everyone out. Secret: masked by
	// Redacted.
	SessionSecret string `yaml:"session_secret"`
}

// Operator is one entry of admin.operators: a person's (or a program's)
// token, by its hash, with a name and a role.
type Operator struct {
	// Name is who holds the token: the audit log's actor. Required,
	// unique (also against "admin" when admin.token is set and "viewer"
	// when admin.viewer_token is); 1 to 128 bytes of letters, digits,
	// punctuation, symbols and spaces, no parenthesis, not starting with
	// "redrive-".
	Name string `yaml:"name"`
	// Role is `operator` (replay, discard, replay-all, discard-all,
	// cancel, pause, resume) or `viewer` (read only). Required.
	Role string `yaml:"role"`
	// TokenHash is the token's SHA-256 as `redrive admin hash-token`
	// prints it: "sha256:" and 64 lower-case hex digits. The token itself
	// is never in the configuration. Required; no two operators share one.
	TokenHash string `yaml:"token_hash"`
}

// ProxyAuth configures an authenticating proxy (admin.proxy_auth). Its
// header is believed only on a connection from one of proxies; the same
// header from any other address is refused (403), and so is a value
// that is not one name.
type ProxyAuth struct {
	// Proxies are the proxy's addresses, CIDRs (10.0.0.0/8) or single
	// addresses, compared with the TCP peer of each request (never with
	// X-Forwarded-For: redrive must be reached from the proxy directly).
	// Required.
	Proxies []string `yaml:"proxies"`
	// UserHeader is the header that names the person: oauth2-proxy's
	// X-Forwarded-User (default), X-Forwarded-Email, or X-Auth-Request-Email
	// behind nginx's auth_request.
	UserHeader string `yaml:"user_header"`
	// GroupsHeader is the header that lists the person's groups
	// (comma-separated or repeated; oauth2-proxy's X-Forwarded-Groups),
	// which operator_groups and viewer_groups turn into a role. Default
	// none.
	GroupsHeader string `yaml:"groups_header"`
	// Role is the role of a person in none of operator_groups and
	// viewer_groups: viewer (default), operator, or none (refused: only
	// the groups' members get in).
	Role string `yaml:"role"`
	// OperatorGroups are the groups whose members are operators; they
	// need groups_header. Default none.
	OperatorGroups []string `yaml:"operator_groups"`
	// ViewerGroups are the groups whose members are viewers (unless in an
	// operator group too); they need groups_header. Default none.
	ViewerGroups []string `yaml:"viewer_groups"`
}

// Proxies returns TrustedProxies parsed (the entries Validate refuses are
// left out).
func (a Admin) Proxies() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range a.TrustedProxies {
		if p, err := httpguard.ParsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}
