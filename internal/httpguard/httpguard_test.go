package httpguard

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestHosts(t *testing.T) {
	for _, tc := range []struct {
		listen  string
		names   []string
		allowed []string
		refused []string
	}{
		{"127.0.0.1:8080", nil,
			[]string{"127.0.0.1:8080", "127.0.0.1", "127.0.0.1:9999", "localhost:8080", "LOCALHOST", "[::1]:8080", "127.1.2.3"},
			[]string{"evil.example:8080", "evil.example", "10.0.0.1:8080", "", "localhost.evil.example", "127.0.0.1.nip.io:8080"}},
		{"localhost:8080", nil,
			[]string{"localhost:8080", "127.0.0.1:8080", "[::1]:8080"},
			[]string{"evil.example:8080", "10.0.0.1"}},
		{"0.0.0.0:8080", nil,
			[]string{"10.1.2.3:8080", "[2001:db8::1]:8080", "127.0.0.1:8080", "localhost:8080"},
			[]string{"evil.example:8080", "myhost:8080"}},
		{":8080", []string{"Redrive.Example.com."},
			[]string{"10.1.2.3:8080", "redrive.example.com", "REDRIVE.example.com:443", "redrive.example.com.:8080"},
			[]string{"evil.example", "example.com"}},
		{"10.0.0.5:8080", []string{"redrive.example.com"},
			[]string{"10.0.0.5:8080", "10.0.0.5", "redrive.example.com:8080"},
			[]string{"10.0.0.6:8080", "127.0.0.1:8080", "localhost:8080", "evil.example"}},
		{"admin.internal:8080", nil,
			[]string{"admin.internal:8080", "ADMIN.internal"},
			[]string{"evil.example", "127.0.0.1:8080", "10.0.0.5:8080"}},
	} {
		h := NewHosts(tc.listen, tc.names)
		for _, host := range tc.allowed {
			if !h.Allowed(host) {
				t.Errorf("listen %s, names %v: Host %q refused", tc.listen, tc.names, host)
			}
		}
		for _, host := range tc.refused {
			if h.Allowed(host) {
				t.Errorf("listen %s, names %v: Host %q allowed", tc.listen, tc.names, host)
			}
		}
	}
	// The bound address of a listener configured by name is accepted.
	h := NewHosts("admin.internal:8080", nil).WithAddr(&net.TCPAddr{IP: net.ParseIP("10.0.0.5"), Port: 8080})
	if !h.Allowed("10.0.0.5:8080") || !h.Allowed("admin.internal") || h.Allowed("10.0.0.6") {
		t.Error("WithAddr did not add the bound address alone")
	}
}

func TestCrossOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin, referer string
		cross           bool
	}{
		{"", "", false},
		{"http://console.example:8080", "", false},
		{"https://CONSOLE.example:8080", "", false},
		{"", "http://console.example:8080/dlq/x", false},
		{"http://evil.example", "", true},
		{"http://console.example:9090", "", true},
		{"null", "", true},
		{"", "http://evil.example/x", true},
		{"http://evil.example", "http://console.example:8080/", true},
		{"%zz", "", true},
	} {
		r := httptest.NewRequest(http.MethodPost, "http://console.example:8080/login", nil)
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.referer != "" {
			r.Header.Set("Referer", tc.referer)
		}
		if got := CrossOrigin(r); got != tc.cross {
			t.Errorf("Origin %q, Referer %q: CrossOrigin = %v, want %v", tc.origin, tc.referer, got, tc.cross)
		}
	}
}

func TestParsePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.0/8": "10.0.0.0/8", "10.1.2.3/8": "10.0.0.0/8", "192.0.2.7": "192.0.2.7/32", "::1": "::1/128",
		"::ffff:10.0.0.1": "10.0.0.1/32", " 2001:db8::/32 ": "2001:db8::/32",
	} {
		if p, err := ParsePrefix(in); err != nil || p.String() != want {
			t.Errorf("ParsePrefix(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, in := range []string{"", "10.0.0.0/33", "proxy.example", "10.0.0", "fe80::1%eth0", "10.0.0.0/8/8"} {
		if p, err := ParsePrefix(in); err == nil {
			t.Errorf("ParsePrefix(%q) = %v, want an error", in, p)
		}
	}
}

func TestProxies(t *testing.T) {
	proxies := Proxies{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")}
	for _, tc := range []struct {
		name, remote string
		xff          []string
		proto        string
		tls          bool
		client       string
		secure       bool
	}{
		{"direct client", "203.0.113.9:5000", nil, "", false, "203.0.113.9", false},
		{"direct client forging headers", "203.0.113.9:5000", []string{"1.2.3.4"}, "https", false, "203.0.113.9", false},
		{"through one proxy", "10.0.0.2:4000", []string{"203.0.113.9"}, "https", false, "203.0.113.9", true},
		{"the client forged a hop", "10.0.0.2:4000", []string{"6.6.6.6, 203.0.113.9"}, "http", false, "203.0.113.9", false},
		{"two proxies, two headers", "10.0.0.2:4000", []string{"6.6.6.6, 203.0.113.9", "192.0.2.7"}, "http, https", false, "203.0.113.9", true},
		{"only proxies", "10.0.0.2:4000", []string{"10.0.0.9, 10.0.0.8"}, "", false, "10.0.0.9", false},
		{"no header", "10.0.0.2:4000", nil, "", false, "10.0.0.2", false},
		{"malformed hop", "10.0.0.2:4000", []string{"203.0.113.9, junk"}, "", false, "10.0.0.2", false},
		{"hop with a port", "10.0.0.2:4000", []string{"[2001:db8::5]:443"}, "", false, "2001:db8::5", false},
		{"IPv6 peer, mapped", "[::ffff:10.0.0.2]:4000", []string{"203.0.113.9"}, "", false, "203.0.113.9", false},
		{"TLS to the server itself", "203.0.113.9:5000", nil, "", true, "203.0.113.9", true},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if tc.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		}
		if got := proxies.ClientIP(r); got != tc.client {
			t.Errorf("%s: ClientIP = %q, want %q", tc.name, got, tc.client)
		}
		if got := proxies.TLS(r); got != tc.secure {
			t.Errorf("%s: TLS = %v, want %v", tc.name, got, tc.secure)
		}
		if got := Proxies(nil).ClientIP(r); got != hostOf(tc.remote) && got != "10.0.0.2" {
			t.Errorf("%s: without trusted proxies ClientIP = %q, want the peer", tc.name, got)
		}
	}
}
