package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/internal/httpguard"
)

// guard wraps a page with what it needs: a session (viewer), and for
// mutations also the same origin, the CSRF token and an operator.
//
// Who it is: a request that carries the authenticating proxy's header is
// its person's, from the proxy's addresses only, on every page, without
// a login or a cookie; the header from anywhere else, or holding what is
// not one name, is refused (403) whatever cookie comes with it. Without
// the header, the session cookie of a token login.
func (c *Console) guard(need level, h func(*Console, http.ResponseWriter, *http.Request, *session)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
			if err := r.ParseForm(); err != nil {
				c.errorPage(w, r, nil, http.StatusBadRequest, "form: cannot be read (at most 64 KiB of URL-encoded fields)")
				return
			}
			if httpguard.CrossOrigin(r) {
				c.log.Warn("console: cross-origin post refused", "path", r.URL.Path, "origin", r.Header.Get("Origin"), "referer", r.Header.Get("Referer"))
				c.errorPage(w, r, nil, http.StatusForbidden, "origin: this form was not posted from the console's own pages")
				return
			}
		}
		ss, ok := c.identify(w, r)
		if !ok {
			return
		}
		if need == public {
			h(c, w, r, ss)
			return
		}
		if ss == nil && c.cfg.InsecureNoAuth && c.auth.Empty() {
			ss = c.sessions.create(User{Name: LocalUser})
			c.setCookie(w, r, ss.id, int(SessionTTL.Seconds()))
		}
		if ss == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			c.errorPage(w, r, nil, http.StatusForbidden, "session: log in first")
			return
		}
		if r.Method == http.MethodPost {
			if !validCSRF(ss, r.PostFormValue("csrf")) {
				c.log.Warn("console: post without a valid CSRF token refused", "path", r.URL.Path, "user", ss.user.Name)
				c.errorPage(w, r, ss, http.StatusForbidden, "csrf: missing or wrong form token; reload the page and try again")
				return
			}
			if need == operator && ss.user.ReadOnly {
				c.errorPage(w, r, ss, http.StatusForbidden, "read-only: "+ss.user.Name+" may look but not change anything")
				return
			}
		}
		h(c, w, r, ss)
	})
}

// identify returns the session of r: the proxy's person, else the
// session cookie's (nil without one); false when it refused r (answered).
func (c *Console) identify(w http.ResponseWriter, r *http.Request) (*session, bool) {
	id, err := c.auth.Proxied(r)
	switch {
	case err == nil:
		return c.sessions.proxySession(userOf(id)), true
	case errors.Is(err, access.ErrNoIdentity):
		return c.current(r), true
	}
	c.log.Warn("console: identity refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
	msg := "identity refused: the proxy's identity header does not hold one name"
	switch {
	case errors.Is(err, access.ErrUntrustedPeer):
		msg = "identity refused: an identity header is accepted from the authenticating proxy only; reach the console through it"
	case errors.Is(err, access.ErrNoRole):
		msg = "identity refused: you are signed in, but in no group that may use this console"
	}
	c.errorPage(w, r, nil, http.StatusForbidden, msg)
	return nil, false
}

// current returns the request's live session cookie's session, or nil.
func (c *Console) current(r *http.Request) *session {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	return c.sessions.get(ck.Value)
}

// setCookie sets (maxAge > 0) or clears (maxAge < 0) the session cookie.
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secureCookie(r),
	})
}

// loginPage serves GET /login.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request, ss *session) {
	if ss != nil || c.cfg.InsecureNoAuth && c.auth.Empty() {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.render(w, r, nil, http.StatusOK, "login", "Log in", loginView{Next: safeNext(r.URL.Query().Get("next"))})
}

type loginView struct {
	Next, Error string
}

// login serves POST /login: token → session cookie → the page asked for.
func (c *Console) login(w http.ResponseWriter, r *http.Request, ss *session) {
	next := safeNext(r.PostFormValue("next"))
	if ss != nil && ss.proxied || c.cfg.InsecureNoAuth && c.auth.Empty() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	keys, client := c.throttleKeys(r), c.proxies.ClientIP(r)
	key := keys[len(keys)-1]
	if left, blocked := c.throttle.blocked(key); blocked {
		c.log.Warn("console: login refused: too many wrong tokens", "client", client, "throttled", key)
		w.Header().Set("Retry-After", strconv.Itoa(int(left.Seconds())+1))
		c.render(w, r, nil, http.StatusTooManyRequests, "login", "Log in",
			loginView{Next: next, Error: fmt.Sprintf("token: %d wrong tokens in a row: try again in %ds", MaxLoginFailures, int(left.Seconds())+1)})
		return
	}
	u, ok := c.checkToken(strings.TrimSpace(r.PostFormValue("token")))
	if !ok {
		for _, k := range keys {
			c.throttle.fail(k)
		}
		c.log.Warn("console: login refused: wrong token", "client", client)
		c.render(w, r, nil, http.StatusUnauthorized, "login", "Log in", loginView{Next: next, Error: "token: not a valid token"})
		return
	}
	if old := c.current(r); old != nil {
		c.sessions.drop(old.id)
	}
	ss = c.sessions.create(u)
	c.setCookie(w, r, ss.id, int(SessionTTL.Seconds()))
	c.rememberDevice(w, r, u.Name)
	c.log.Info("console: login", "user", u.Name, "read_only", u.ReadOnly, "client", client)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout serves POST /logout. A person the proxy signed in signs out
// there: there is no session here to end.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, ss *session) {
	if ss.proxied {
		c.errorPage(w, r, ss, http.StatusConflict, "logout: you are signed in through your single sign-on; sign out there")
		return
	}
	c.sessions.drop(ss.id)
	c.setCookie(w, r, "", -1)
	c.log.Info("console: logout", "user", ss.user.Name)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target on this site: a path (with a query),
// never "//host", a scheme, a backslash or any byte outside printable
// ASCII. Browsers strip tabs and newlines from a Location and read a
// backslash as "/", so "/\t/evil.example" would leave the site: the target must be
// exactly what it parses to. Anything else is "/".
func safeNext(next string) string {
	if next == "" || len(next) > 2048 || next[0] != '/' {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.EscapedPath(), "/") || strings.HasPrefix(u.EscapedPath(), "//") {
		return "/"
	}
	return next
}
