package httpguard

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the reverse proxies (admin.trusted_proxies) whose
// X-Forwarded-For and X-Forwarded-Proto headers are believed. The zero
// value trusts nobody: the client is the TCP peer.
type Proxies []netip.Prefix

// ParsePrefix reads one trusted proxy: a CIDR ("10.0.0.0/8") or a single
// address ("192.0.2.7", "::1").
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or a CIDR such as 10.0.0.0/8", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// trusts reports whether a is one of the proxies.
func (p Proxies) trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, n := range p {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// peer returns the address of r's TCP peer.
func peer(r *http.Request) (netip.Addr, bool) {
	a, err := netip.ParseAddr(hostOf(r.RemoteAddr))
	return a.Unmap().WithZone(""), err == nil
}

// PeerTrusted reports whether r's TCP peer (never a forwarded address)
// is one of the proxies.
func (p Proxies) PeerTrusted(r *http.Request) bool {
	a, ok := peer(r)
	return ok && p.trusts(a)
}

// ClientIP returns the address of the client that sent r: the TCP peer,
// unless the peer is a trusted proxy; then X-Forwarded-For is read from
// right to left, skipping trusted proxies, and the first other address is
// the client (every proxy appends the address it received from, so only
// the part the trusted proxies wrote is believed). A malformed entry ends
// the walk at the last address believed.
func (p Proxies) ClientIP(r *http.Request) string {
	cur, ok := peer(r)
	if !ok {
		return hostOf(r.RemoteAddr)
	}
	if !p.trusts(cur) {
		return cur.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h := strings.TrimSpace(hops[i])
		if h == "" {
			continue
		}
		a, err := netip.ParseAddr(hostOf(h))
		if err != nil {
			break
		}
		cur = a.Unmap().WithZone("")
		if !p.trusts(cur) {
			break
		}
	}
	return cur.String()
}

// TLS reports whether the client reached r over TLS: the connection
// itself, or, from a trusted proxy, X-Forwarded-Proto https (the value
// the nearest proxy wrote).
func (p Proxies) TLS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	a, ok := peer(r)
	if !ok || !p.trusts(a) {
		return false
	}
	vs := strings.Split(strings.Join(r.Header.Values("X-Forwarded-Proto"), ","), ",")
	return strings.EqualFold(strings.TrimSpace(vs[len(vs)-1]), "https")
}
