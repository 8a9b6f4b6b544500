package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/internal/termtext"
)

// authenticator returns Access, or the Authenticator of Tokens (nil
// without either): operators named by their Name (default "admin").
// Errors name the token by its index (Credentials[i] is Tokens[i]).
func (c Config) authenticator() (*access.Authenticator, error) {
	if c.Access != nil || len(c.Tokens) == 0 {
		return c.Access, nil
	}
	creds := make([]access.Credential, len(c.Tokens))
	for i, t := range c.Tokens {
		creds[i] = access.Credential{Name: cmp.Or(t.Name, DefaultActor), Role: access.Operator, Token: t.Secret}
	}
	a, err := access.New(access.Config{Credentials: creds})
	if err != nil {
		return nil, fmt.Errorf("admin: Config.Tokens: %w", err)
	}
	return a, nil
}

// identityKey carries the request's identity and actor in its context.
type identityKey struct{}

// who is a request's identity and the audit log's actor for it.
type who struct {
	id    access.Identity
	actor string
}

// actor returns the audit log's actor of r (set by authenticate).
func actor(r *http.Request) string {
	if w, ok := r.Context().Value(identityKey{}).(who); ok {
		return w.actor
	}
	return DefaultActor
}

// identity returns the identity of r (set by authenticate).
func identity(r *http.Request) access.Identity {
	if w, ok := r.Context().Value(identityKey{}).(who); ok {
		return w.id
	}
	return access.Identity{Name: DefaultActor, Role: access.Operator, Via: access.ViaNone}
}

// authenticate finds who sends the request, refuses what they may not
// do, and sets the audit log's actor:
//
//  1. a request that carries the authenticating proxy's header is its
//     person's, if it comes from the proxy's address; from anywhere
//     else, or with a value that is not a name, it is refused (403
//     identity_refused) whatever else it carries;
//  2. otherwise the bearer token names its credential (401 without a
//     known one), unless nothing is configured and InsecureNoAuth serves
//     everyone as the operator "admin";
//  3. a viewer may only read (403 read_only on every other method);
//  4. X-Redrive-Actor is a claim: recorded beside the authenticated name
//     when it differs ("alice (as bob)"), never instead of it.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := s.identify(w, r)
		if !ok {
			return
		}
		if !id.Role.CanChange() && r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, http.StatusForbidden, CodeReadOnly, "", fmt.Sprintf("read-only: %s is a viewer and may not change anything", id.Name))
			return
		}
		claim := ""
		if h := r.Header.Get("X-Redrive-Actor"); h != "" {
			a, ok := cleanActor(h)
			if !ok {
				writeError(w, http.StatusBadRequest, CodeInvalidRequest, "X-Redrive-Actor", "X-Redrive-Actor must be 1 to 128 printable characters")
				return
			}
			claim = a
		}
		ctx := context.WithValue(r.Context(), identityKey{}, who{id: id, actor: id.Actor(claim)})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// identify returns the identity of r, or answers the refusal.
func (s *Server) identify(w http.ResponseWriter, r *http.Request) (access.Identity, bool) {
	id, err := s.auth.Proxied(r)
	switch {
	case err == nil:
		return id, true
	case !errors.Is(err, access.ErrNoIdentity):
		s.log.Warn("admin: identity refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		writeError(w, http.StatusForbidden, CodeIdentityRefused, "", refusal(err))
		return id, false
	case s.auth.Empty():
		return access.Identity{Name: DefaultActor, Role: access.Operator, Via: access.ViaNone}, true // InsecureNoAuth (New checked)
	}
	if id, ok := s.auth.Token(bearer(r.Header.Get("Authorization"))); ok {
		return id, true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="redrive"`)
	msg := "missing or wrong bearer token"
	if !s.auth.HasTokens() {
		msg = "sign in through the authenticating proxy: this server takes no tokens"
	}
	writeError(w, http.StatusUnauthorized, CodeUnauthorized, "", msg)
	return id, false
}

// refusal is the message of a refused proxy identity: what was wrong,
// never the header's value.
func refusal(err error) string {
	switch {
	case errors.Is(err, access.ErrUntrustedPeer):
		return "identity refused: an identity header is accepted from the authenticating proxy's addresses only (admin.proxy_auth.proxies)"
	case errors.Is(err, access.ErrNoRole):
		return "identity refused: the proxy vouches for you, but you are in no group that grants a role (admin.proxy_auth)"
	}
	return "identity refused: the proxy's identity header does not hold one name the audit log can record"
}

// bearer returns the token of an Authorization header value, "" when it
// is not a bearer token.
func bearer(h string) string {
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(secret)
}

// cleanActor validates an X-Redrive-Actor value: 1 to 128 bytes of
// UTF-8 without control or bidirectional characters (termtext's rule:
// the claim is shown in the console and printed by the CLI).
func cleanActor(h string) (string, bool) {
	h = strings.TrimSpace(h)
	if h == "" || len(h) > 128 || !utf8.ValidString(h) || strings.ContainsRune(h, utf8.RuneError) || !termtext.IsPrintable(h) {
		return "", false
	}
	return h, true
}

// Whoami is the answer of GET /internal/v1/whoami.
type Whoami struct {
	// Name is the authenticated name: a credential's, the proxy's
	// person, or "admin" on a server without authentication.
	Name string `json:"name"`
	// Role is "operator" or "viewer".
	Role string `json:"role"`
	// Via is how: "token", "proxy" or "none".
	Via string `json:"via"`
	// Actor is what the audit log would record for this request (with
	// its X-Redrive-Actor claim beside the name when they differ).
	Actor string `json:"actor"`
}

// whoami serves GET /internal/v1/whoami: who the server takes the caller
// for, so that a token, a proxy's header or a claim can be checked
// before anything is changed.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	if err := readParams(r).err; err != nil {
		s.reject(w, r, err)
		return
	}
	id := identity(r)
	writeJSON(w, http.StatusOK, Whoami{Name: id.Name, Role: string(id.Role), Via: string(id.Via), Actor: actor(r)})
}
