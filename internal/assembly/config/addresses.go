package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/internal/httpguard"
)

// The checks of addresses: listen addresses, hosts, broker and database
// URLs, and the admin section that holds most of them.

// listener is a listen address and its field.
type listener struct{ path, addr string }

// checkListenConflicts reports a listen address that an earlier one
// already takes (SameListen).
func checkListenConflicts(p *problems, ls []listener) {
	for i, l := range ls {
		for _, prev := range ls[:i] {
			if l.addr != "" && prev.addr != "" && SameListen(prev.addr, l.addr) {
				p.add(l.path, fmt.Sprintf("%q is %s's address too (%q): they need different ports", shown(l.addr), prev.path, shown(prev.addr)))
				break
			}
		}
	}
}

func (a Admin) validate(p *problems) {
	checkListen(p, "admin.listen", a.Listen)
	if !a.HasCredentials() && validListen(a.Listen) && !isLoopback(a.Listen) {
		p.add("admin.token", fmt.Sprintf("required when admin.listen (%s) is not a loopback address: set admin.operators (or admin.proxy_auth, or the single admin.token)", shown(a.Listen)))
	}
	for _, t := range []struct{ path, tok string }{{"admin.token", a.Token}, {"admin.viewer_token", a.ViewerToken}} {
		if t.tok != "" {
			if msg := TokenProblem(t.tok); msg != "" {
				p.add(t.path, msg)
			}
		}
	}
	switch {
	case a.ViewerToken != "" && a.ViewerToken == a.Token:
		p.add("admin.viewer_token", "must differ from admin.token (a viewer would get the operator's rights)")
	case a.ViewerToken != "" && !a.hasOperator():
		p.add("admin.viewer_token", "needs an operator (admin.token, admin.operators or admin.proxy_auth): without one the console runs without login")
	}
	a.validateAccess(p)
	if a.SessionSecret != "" && len(a.SessionSecret) < MinSessionSecretLen {
		p.add("admin.session_secret", fmt.Sprintf("shorter than %d characters", MinSessionSecretLen))
	}
	for i, h := range a.AllowedHosts {
		if !validHostName(h) {
			p.add(fmt.Sprintf("admin.allowed_hosts[%d]", i), fmt.Sprintf("%q is not a host name or IP address (no scheme, port or path)", shown(h)))
		}
	}
	for i, s := range a.TrustedProxies {
		if _, err := httpguard.ParsePrefix(s); err != nil {
			p.add(fmt.Sprintf("admin.trusted_proxies[%d]", i), err.Error())
		}
	}
}

// TokenProblem says what makes tok unusable as an admin or viewer token
// (blank, white space at its ends, shorter than MinTokenLen), or "" when
// it is fine: access.TokenProblem. The configuration and every variable a
// token comes from ($REDRIVE_ADMIN_TOKEN) are checked with it.
func TokenProblem(tok string) string { return access.TokenProblem(tok) }

// checkURL checks a broker or database URL: it parses, with one of the
// schemes and a host, a port from 1 to 65535, and no "@" after the host
// (the sign of a password whose "/", "?" or "#" was not percent-encoded:
// the parser then reads part of it as the host). Messages show the URL
// masked. It returns the URL when it is fine.
func checkURL(p *problems, path, raw string, schemes ...string) *url.URL {
	const encode = `a password with "/", "?", "#" or "@" must be percent-encoded (%2F %3F %23 %40)`
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		p.add(path, fmt.Sprintf("%q is not a valid URL (%s)", shown(raw), encode))
	case !slices.Contains(schemes, u.Scheme):
		p.add(path, fmt.Sprintf("scheme %q is not %s", abbreviate(u.Scheme), strings.Join(schemes, " or ")))
	case strings.ContainsRune(u.EscapedPath()+"?"+u.RawQuery+"#"+u.Fragment, '@'):
		p.add(path, fmt.Sprintf("%q has an \"@\" after the host: %s", shown(raw), encode))
	case u.Hostname() == "":
		p.add(path, fmt.Sprintf("%q has no host", shown(raw)))
	case u.Port() != "" && !validPort(u.Port()):
		p.add(path, fmt.Sprintf("%q: port %q is not from 1 to 65535", shown(raw), u.Port()))
	default:
		return u
	}
	return nil
}

// checkListen checks a listen address.
func checkListen(p *problems, path, addr string) {
	if !validListen(addr) {
		p.add(path, fmt.Sprintf("%q is not host:port", shown(addr)))
	}
}

// SameListen reports whether two listen addresses ("host:port") cannot
// both be bound: the same port (not 0) on the same host, or on all
// interfaces and any host.
func SameListen(a, b string) bool {
	ha, pa, erra := net.SplitHostPort(a)
	hb, pb, errb := net.SplitHostPort(b)
	if erra != nil || errb != nil || pa != pb || pa == "0" {
		return false
	}
	norm := func(h string) string {
		h = strings.ToLower(h)
		switch h {
		case "", "0.0.0.0", "::":
			return ""
		case "localhost":
			return "127.0.0.1"
		}
		if ip, err := netip.ParseAddr(h); err == nil {
			return ip.Unmap().String()
		}
		return h
	}
	na, nb := norm(ha), norm(hb)
	return na == nb || na == "" || nb == ""
}

// validPort reports whether s is a port from 1 to 65535.
func validPort(s string) bool {
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && n > 0
}

// validBroker reports whether s is a Kafka seed broker: host or
// host:port, nothing else.
func validBroker(s string) bool {
	if strings.ContainsAny(s, "@/?# \t") || strings.Contains(s, "://") {
		return false
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return validHostName(s)
	}
	return validHostName(host) && validPort(port)
}

// validHostName reports whether s is a DNS name or an IP address, without
// a port.
func validHostName(s string) bool {
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return true
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// validListen reports whether addr is host:port (host may be empty, port 0
// picks a free port).
func validListen(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n <= math.MaxUint16
}

// validHostPort reports whether addr is host:port to dial.
func validHostPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && validPort(port)
}

// isLoopback reports whether the listen address binds only to loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
