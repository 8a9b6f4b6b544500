// Package httpguard protects redrive's HTTP servers (the admin API and the
// dead-letter console) from requests a browser can be tricked into
// sending, and finds the client behind trusted reverse proxies:
//
//   - Hosts refuses a Host header that is not an address of the server
//     or a configured name, so that a DNS-rebinding page cannot read the
//     API from the operator's browser;
//   - CrossOrigin spots a request whose Origin (or Referer) is another
//     site;
//   - Proxies believes X-Forwarded-For and X-Forwarded-Proto only from
//     the configured proxies.
package httpguard

import (
	"net"
	"net/netip"
	"strings"
)

// Hosts is the set of Host header values a server answers to. The port
// is not compared (port forwarding and proxies change it; a rebinding
// attack needs a name, not a port). A Hosts is immutable.
//
// The listen address decides which addresses are the server's own:
//
//   - a loopback address or "localhost": the loopback addresses and
//     "localhost";
//   - all interfaces ("", 0.0.0.0, ::): any IP address (a page cannot
//     rebind an address) and "localhost";
//   - another IP address: that address;
//   - a name: that name.
//
// The names given besides (admin.allowed_hosts) are always accepted.
type Hosts struct {
	names    map[string]bool
	ips      []netip.Addr
	anyIP    bool
	loopback bool
}

// NewHosts returns the Host values a server listening on listen
// ("host:port") answers to: its own addresses and names.
func NewHosts(listen string, names []string) *Hosts {
	h := &Hosts{names: map[string]bool{}}
	for _, n := range names {
		if n = normalize(n); n != "" {
			h.names[n] = true
		}
	}
	h.add(hostOf(listen))
	return h
}

// WithAddr returns h also accepting the address a listener is bound to:
// the real address when the configured one was a name or port 0.
func (h *Hosts) WithAddr(addr net.Addr) *Hosts {
	c := &Hosts{names: h.names, ips: append([]netip.Addr(nil), h.ips...), anyIP: h.anyIP, loopback: h.loopback}
	c.add(hostOf(addr.String()))
	return c
}

// add accepts the listen host lh.
func (h *Hosts) add(lh string) {
	lh = normalize(lh)
	ip, err := netip.ParseAddr(lh)
	switch {
	case lh == "":
		h.anyIP = true
	case lh == "localhost":
		h.loopback = true
	case err != nil:
		h.names[lh] = true
	case ip.IsUnspecified():
		h.anyIP = true
	case ip.IsLoopback():
		h.loopback = true
	default:
		h.ips = append(h.ips, ip.Unmap().WithZone(""))
	}
}

// Allowed reports whether the Host header value host ("name", "name:port",
// "[::1]:8080") names this server. An empty host is not allowed.
func (h *Hosts) Allowed(host string) bool {
	name := normalize(hostOf(host))
	if name == "" {
		return false
	}
	if h.names[name] {
		return true
	}
	local := h.loopback || h.anyIP
	if name == "localhost" {
		return local
	}
	ip, err := netip.ParseAddr(name)
	if err != nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	switch {
	case h.anyIP:
		return true
	case ip.IsLoopback():
		return local
	}
	for _, a := range h.ips {
		if a == ip {
			return true
		}
	}
	return false
}

// hostOf returns the host of "host:port", or s when it has no port;
// without brackets.
func hostOf(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
}

// normalize lowers a name and drops a trailing dot.
func normalize(name string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
}
