package access

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/redrive/redrive/internal/httpguard"
)

// Proxy is an authenticating proxy in front of the admin API and the
// console (oauth2-proxy, a single sign-on gateway): it signs people in
// and names them in a header of every request it forwards. The header is
// believed only on a connection from one of its Addresses; the same
// header from anywhere else is refused (ErrUntrustedPeer), so that nobody
// who reaches the server directly can name himself.
type Proxy struct {
	// Addresses are the proxy's addresses (CIDRs or single addresses),
	// compared with the TCP peer of the request, never with
	// X-Forwarded-For: redrive must be reached from the proxy directly.
	// Required.
	Addresses []netip.Prefix
	// UserHeader names the person; default DefaultUserHeader
	// (oauth2-proxy's X-Forwarded-User; X-Forwarded-Email or
	// X-Auth-Request-Email are others). Its value must pass CheckName.
	UserHeader string
	// GroupsHeader, when set, lists the person's groups, comma-separated
	// or one header per group (oauth2-proxy's X-Forwarded-Groups), which
	// OperatorGroups and ViewerGroups turn into a role. Default none.
	GroupsHeader string
	// Role is the role of a person the proxy vouches for who is in no
	// group of OperatorGroups or ViewerGroups: Viewer (the default),
	// Operator, or NoRole (refused: only the groups' members get in).
	Role Role
	// OperatorGroups are the groups whose members are operators; they
	// need GroupsHeader. Default none.
	OperatorGroups []string
	// ViewerGroups are the groups whose members are viewers (unless they
	// are in an operator group too); they need GroupsHeader. Default none.
	ViewerGroups []string
}

// DefaultUserHeader is Proxy.UserHeader's default: what oauth2-proxy
// sends upstream (--pass-user-headers).
const DefaultUserHeader = "X-Forwarded-User"

// maxGroups bounds the groups of one request that are looked at.
const maxGroups = 1000

// Errors of Authenticator.Proxied; every one but ErrNoIdentity refuses
// the request.
var (
	// ErrNoIdentity: the request carries no proxy header (or no proxy is
	// configured): authenticate it otherwise.
	ErrNoIdentity = errors.New("no identity from a proxy")
	// ErrUntrustedPeer: the proxy's header came from an address that is
	// not one of Proxy.Addresses.
	ErrUntrustedPeer = errors.New("an identity header from an address that is not the authenticating proxy's")
	// ErrBadIdentity: the header's value cannot name anyone (several
	// values, or a name CheckName refuses).
	ErrBadIdentity = errors.New("the proxy's identity header is not a name")
	// ErrNoRole: the person is in no group that grants a role, and
	// Proxy.Role is NoRole.
	ErrNoRole = errors.New("no role: in none of the configured groups")
)

// reservedHeaders are headers redrive or HTTP itself reads for another
// purpose: none can carry an identity.
var reservedHeaders = []string{
	"Authorization", "Cookie", "Host", "Origin", "Referer", "Content-Type", "Content-Length",
	"Transfer-Encoding", "Connection", "Upgrade", "Te", "Trailer",
	"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Redrive-Actor",
}

// Validate returns nil when p is usable, else an error naming the first
// field that is not.
func (p Proxy) Validate() error {
	if len(p.Addresses) == 0 {
		return errors.New("access: Proxy.Addresses: required: the addresses the proxy connects from")
	}
	for i, a := range p.Addresses {
		if !a.IsValid() {
			return fmt.Errorf("access: Proxy.Addresses[%d]: not a valid prefix", i)
		}
	}
	p = p.withDefaults()
	if err := CheckHeaderName(p.UserHeader); err != nil {
		return fmt.Errorf("access: Proxy.UserHeader: %w", err)
	}
	if p.GroupsHeader != "" {
		if err := CheckHeaderName(p.GroupsHeader); err != nil {
			return fmt.Errorf("access: Proxy.GroupsHeader: %w", err)
		}
		if http.CanonicalHeaderKey(p.GroupsHeader) == http.CanonicalHeaderKey(p.UserHeader) {
			return errors.New("access: Proxy.GroupsHeader: the same header as UserHeader")
		}
	}
	switch p.Role {
	case Viewer, Operator, NoRole:
	default:
		return fmt.Errorf("access: Proxy.Role: %q is not %q, %q or %q", cut(string(p.Role), 40), Viewer, Operator, NoRole)
	}
	for _, gs := range []struct {
		field  string
		groups []string
	}{{"OperatorGroups", p.OperatorGroups}, {"ViewerGroups", p.ViewerGroups}} {
		if len(gs.groups) > 0 && p.GroupsHeader == "" {
			return fmt.Errorf("access: Proxy.%s: needs GroupsHeader (the header that lists a person's groups)", gs.field)
		}
		for i, g := range gs.groups {
			if err := CheckGroup(g); err != nil {
				return fmt.Errorf("access: Proxy.%s[%d]: %w", gs.field, i, err)
			}
		}
	}
	if p.Role == NoRole && len(p.OperatorGroups)+len(p.ViewerGroups) == 0 {
		return fmt.Errorf("access: Proxy.Role: %q with no OperatorGroups or ViewerGroups lets nobody in", NoRole)
	}
	return nil
}

// withDefaults returns p with its defaults filled in.
func (p Proxy) withDefaults() Proxy {
	if p.UserHeader == "" {
		p.UserHeader = DefaultUserHeader
	}
	if p.Role == "" {
		p.Role = Viewer
	}
	return p
}

// CheckGroup checks a group name of Proxy.OperatorGroups or
// ViewerGroups: 1 to 256 bytes, no comma (the groups header's
// separator), no white space at either end (trimmed off the header's).
func CheckGroup(g string) error {
	if g == "" || strings.TrimSpace(g) != g || strings.Contains(g, ",") || len(g) > 256 {
		return fmt.Errorf("%q is not a group name (1 to 256 bytes, no comma, no white space at either end)", cut(g, 40))
	}
	return nil
}

// CheckHeaderName checks a configured header name (Proxy.UserHeader,
// GroupsHeader): an HTTP token, not a header redrive or HTTP reads for
// something else (Authorization, Cookie, X-Forwarded-For, ...).
func CheckHeaderName(h string) error {
	if h == "" || len(h) > 128 {
		return errors.New("not a header name")
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return fmt.Errorf("%q is not a header name (letters, digits and -)", cut(h, 40))
		}
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(h, r) {
			return fmt.Errorf("%s carries something else: name the header the proxy sets the user in", r)
		}
	}
	return nil
}

// Proxied returns the identity the proxy vouches for in r: ErrNoIdentity
// when r carries no proxy header (or no proxy is configured), or the
// refusal (ErrUntrustedPeer, ErrBadIdentity, ErrNoRole, wrapped with the
// reason). A header is looked at before anything else: a request that
// carries one is judged on it alone.
func (a *Authenticator) Proxied(r *http.Request) (Identity, error) {
	if a == nil || a.proxy == nil {
		return Identity{}, ErrNoIdentity
	}
	p := a.proxy
	vals := r.Header.Values(p.UserHeader)
	if len(vals) == 0 {
		return Identity{}, ErrNoIdentity
	}
	if !httpguard.Proxies(p.Addresses).PeerTrusted(r) {
		return Identity{}, fmt.Errorf("%w: %s from %s", ErrUntrustedPeer, p.UserHeader, r.RemoteAddr)
	}
	if len(vals) > 1 {
		return Identity{}, fmt.Errorf("%w: %s sent %d times", ErrBadIdentity, p.UserHeader, len(vals))
	}
	if err := CheckName(vals[0]); err != nil {
		return Identity{}, fmt.Errorf("%w: %s: %w", ErrBadIdentity, p.UserHeader, err)
	}
	role := p.roleOf(r)
	if role == NoRole {
		return Identity{}, fmt.Errorf("%w (%s)", ErrNoRole, p.GroupsHeader)
	}
	return Identity{Name: vals[0], Role: role, Via: ViaProxy}, nil
}

// roleOf is the role p grants the person of r: an operator group's
// member is an operator, a viewer group's a viewer, anyone else p.Role.
func (p *Proxy) roleOf(r *http.Request) Role {
	if p.GroupsHeader == "" {
		return p.Role
	}
	role, seen := p.Role, 0
	for _, v := range r.Header.Values(p.GroupsHeader) {
		for g := range strings.SplitSeq(v, ",") {
			if seen++; seen > maxGroups {
				return role
			}
			g = strings.TrimSpace(g)
			switch {
			case slices.Contains(p.OperatorGroups, g):
				return Operator
			case slices.Contains(p.ViewerGroups, g):
				role = Viewer
			}
		}
	}
	return role
}
