// Package access says who may use the admin API (dlq/admin) and the
// console (dlq/console), with which role, and under which name the audit
// log records them: named credentials (bearer tokens kept as hashes, each
// with a role), and the person an authenticating proxy (oauth2-proxy, a
// single sign-on gateway) vouches for in a header, believed only from the
// proxy's own addresses. One Authenticator serves both, so a token, a
// role and a proxy mean the same on each.
//
// A name is the audit log's "who": CheckName says which names can be
// recorded. What a request claims besides (the X-Redrive-Actor header of
// the API) never replaces the authenticated name: Identity.Actor records
// both.
package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
)

// Role is what an identity may do.
type Role string

// The roles.
const (
	// Viewer sees everything and changes nothing.
	Viewer Role = "viewer"
	// Operator also replays, discards, starts and cancels jobs, pauses
	// and resumes workers.
	Operator Role = "operator"
	// NoRole is Proxy.Role for "only the members of the configured
	// groups": a vouched user in none of them is refused.
	NoRole Role = "none"
)

// CanChange reports whether r may change anything.
func (r Role) CanChange() bool { return r == Operator }

// Via says how an identity was established.
type Via string

// The ways in.
const (
	ViaToken Via = "token" // a bearer token or the console's token login
	ViaProxy Via = "proxy" // the authenticating proxy's header
	ViaNone  Via = "none"  // a server without authentication (loopback only)
)

// Identity is who a request comes from.
type Identity struct {
	// Name is the audit log's actor (CheckName holds).
	Name string
	Role Role
	Via  Via
}

// Actor is what the audit log records for a request of id that claims to
// act as claim (the API's X-Redrive-Actor, the CLI's --actor): the
// authenticated name, and the claim beside it when it differs, as
// "alice (as bob)". The authenticated name always comes first and holds
// no parenthesis (CheckName), so the part before " (as " is the one the
// server vouches for. The claim is cut so that the whole is at most
// MaxActorLen bytes.
func (id Identity) Actor(claim string) string {
	if claim == "" || claim == id.Name {
		return id.Name
	}
	const open, end = " (as ", ")"
	room := MaxActorLen - len(id.Name) - len(open) - len(end)
	if room <= 0 {
		return id.Name
	}
	return id.Name + open + cut(claim, room) + end
}

// Credential is a bearer token with a name and a role. The token is kept
// as its hash (HashToken); Token, the token itself, is for programs and
// tests that hold it, and for the single token of older configurations
// (admin.token).
type Credential struct {
	// Name is who holds the token: the audit log's actor. Required
	// (CheckName), unique.
	Name string
	// Role is operator or viewer. Required.
	Role Role
	// Hash is the token's HashToken: "sha256:" and 64 hex digits.
	// Exactly one of Hash and Token.
	Hash string
	// Token is the token itself, at least MinTokenLen characters without
	// white space at either end. Exactly one of Hash and Token.
	Token string
}

// MinTokenLen is the shortest Credential.Token accepted (and the
// configuration's admin.token).
const MinTokenLen = 8

// Config configures an Authenticator.
type Config struct {
	// Credentials are the accepted tokens. Default none.
	Credentials []Credential
	// Proxy, when set, believes an authenticating proxy's header. Default
	// nil: no proxy.
	Proxy *Proxy
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c Config) Validate() error {
	names := map[string]int{}
	sums := map[[sha256.Size]byte]int{}
	for i, cr := range c.Credentials {
		field := fmt.Sprintf("access: Config.Credentials[%d]", i)
		if err := CheckName(cr.Name); err != nil {
			return fmt.Errorf("%s.Name: %w", field, err)
		}
		if j, dup := names[cr.Name]; dup {
			return fmt.Errorf("%s.Name: %q is Credentials[%d]'s name too", field, cr.Name, j)
		}
		names[cr.Name] = i
		if cr.Role != Operator && cr.Role != Viewer {
			return fmt.Errorf("%s.Role: %q is not %q or %q", field, cut(string(cr.Role), 40), Operator, Viewer)
		}
		sum, at, err := cr.sum()
		if err != nil {
			return fmt.Errorf("%s.%s: %w", field, at, err)
		}
		if j, dup := sums[sum]; dup {
			return fmt.Errorf("%s: the same token as Credentials[%d] (%s): a token must name one holder", field, j, c.Credentials[j].Name)
		}
		sums[sum] = i
	}
	if c.Proxy != nil {
		if err := c.Proxy.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// sum returns the SHA-256 of the credential's token, else the field at
// fault and why.
func (cr Credential) sum() ([sha256.Size]byte, string, error) {
	var none [sha256.Size]byte
	switch {
	case cr.Hash != "" && cr.Token != "":
		return none, "Hash", errors.New("set with Token: give one")
	case cr.Hash != "":
		sum, err := ParseHash(cr.Hash)
		return sum, "Hash", err
	case cr.Token == "":
		return none, "Token", errors.New("required (or Hash)")
	}
	if msg := TokenProblem(cr.Token); msg != "" {
		return none, "Token", errors.New(msg)
	}
	return sha256.Sum256([]byte(cr.Token)), "", nil
}

// Authenticator tells who a request comes from. It is safe for
// concurrent use.
type Authenticator struct {
	creds []credential
	proxy *Proxy
}

// credential is a Credential with its hash decoded.
type credential struct {
	id  Identity
	sum [sha256.Size]byte
}

// New checks cfg and returns its Authenticator.
func New(cfg Config) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{}
	for _, cr := range cfg.Credentials {
		sum, _, _ := cr.sum() // checked by Validate
		a.creds = append(a.creds, credential{id: Identity{Name: cr.Name, Role: cr.Role, Via: ViaToken}, sum: sum})
	}
	if cfg.Proxy != nil {
		p := cfg.Proxy.withDefaults()
		a.proxy = &p
	}
	return a, nil
}

// Empty reports whether a accepts nobody: no credential and no proxy. A
// nil Authenticator is empty.
func (a *Authenticator) Empty() bool {
	return a == nil || len(a.creds) == 0 && a.proxy == nil
}

// HasTokens reports whether a accepts tokens.
func (a *Authenticator) HasTokens() bool { return a != nil && len(a.creds) > 0 }

// HasProxy reports whether a believes an authenticating proxy.
func (a *Authenticator) HasProxy() bool { return a != nil && a.proxy != nil }

// Token returns the identity of the credential whose token is tok. Every
// credential's hash is compared, in constant time, whatever matches.
func (a *Authenticator) Token(tok string) (Identity, bool) {
	if a == nil {
		return Identity{}, false
	}
	sum := sha256.Sum256([]byte(tok))
	var found Identity
	ok := 0
	for _, c := range a.creds {
		if subtle.ConstantTimeCompare(sum[:], c.sum[:]) == 1 {
			found, ok = c.id, 1
		}
	}
	return found, ok == 1
}

// Lookup returns the credential named name, with its token's SHA-256 (the
// console signs sessions with it, so that a new token ends the old
// token's sessions, and reads the role afresh on every request).
func (a *Authenticator) Lookup(name string) (Identity, [sha256.Size]byte, bool) {
	if a == nil {
		return Identity{}, [sha256.Size]byte{}, false
	}
	for _, c := range a.creds {
		if c.id.Name == name {
			return c.id, c.sum, true
		}
	}
	return Identity{}, [sha256.Size]byte{}, false
}

// Operators reports whether a can let an operator in: an operator's
// credential, or a proxy that grants the role.
func (a *Authenticator) Operators() bool {
	if a == nil {
		return false
	}
	for _, c := range a.creds {
		if c.id.Role == Operator {
			return true
		}
	}
	return a.proxy != nil && (a.proxy.Role == Operator || len(a.proxy.OperatorGroups) > 0)
}
