package access_test

import (
	"errors"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/heartbeat"
)

const (
	aliceToken = "alice-token-0123456789-abcdefghijkl"
	bobToken   = "bob-token-0123456789-abcdefghijklmn"
)

func mustNew(t *testing.T, cfg access.Config) *access.Authenticator {
	t.Helper()
	a, err := access.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Names from anyone: what a proxy's header or a configuration may hold.
func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"alice", true},
		{"alice@example.com", true},
		{"Zoë Müller", true},
		{"山田", true},
		{"o'brien+ops", true},
		{strings.Repeat("a", access.MaxNameLen), true},
		{"", false},
		{" ", false},
		{" alice", false},
		{"alice ", false},
		{strings.Repeat("a", access.MaxNameLen+1), false},
		{"al\x00ice", false},
		{"al\x1b[31mice", false},
		{"\x1b]52;c;ZXZpbA==\x07", false},
		{"ali\tce", false},
		{"alice\nbob", false},
		{"ali\u202ece", false},    // bidi override
		{"ali\u200bce", false},    // zero width space: looks like alice
		{"ali\u00a0ce", false},    // no-break space
		{"alice\u2028", false},    // line separator
		{"ali\ufeffce", false},    // BOM
		{"\xff\xfe", false},       // invalid UTF-8
		{"ali\x85ce", false},      // C1 as a byte: invalid UTF-8
		{"ali\u0085ce", false},    // C1 as a rune
		{"alice (as bob)", false}, // would read as a claim
		{"redrive-reconciler", false},
		{"Redrive-Archiver", false},
		{"\ue000private", false}, // private use
	} {
		err := access.CheckName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, access.ErrBadName) {
			t.Errorf("CheckName(%q) = %v, not ErrBadName", tc.name, err)
		}
	}
}

// The authenticated name comes first; a different claim is kept beside
// it, cut to fit.
func TestActor(t *testing.T) {
	alice := access.Identity{Name: "alice", Role: access.Operator}
	for _, tc := range []struct{ claim, want string }{
		{"", "alice"},
		{"alice", "alice"},
		{"bob", "alice (as bob)"},
		{"alice (as carol)", "alice (as alice (as carol))"},
	} {
		if got := alice.Actor(tc.claim); got != tc.want {
			t.Errorf("Actor(%q) = %q, want %q", tc.claim, got, tc.want)
		}
	}
	long := access.Identity{Name: strings.Repeat("n", access.MaxNameLen)}
	got := long.Actor(strings.Repeat("é", 200))
	if len(got) > access.MaxActorLen || !strings.HasPrefix(got, long.Name+" (as é") || !strings.HasSuffix(got, "é)") {
		t.Errorf("Actor of a long claim = %q (%d bytes), want the name and the claim cut on a rune to %d bytes", got, len(got), access.MaxActorLen)
	}
}

func TestHash(t *testing.T) {
	h := access.HashToken(aliceToken)
	if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Fatalf("HashToken = %q", h)
	}
	if _, err := access.ParseHash(h); err != nil {
		t.Fatalf("ParseHash(HashToken) = %v", err)
	}
	for _, bad := range []string{"", "sha256:", "md5:" + h[7:], "sha256:" + strings.ToUpper(h[7:]), h + "0", h[:len(h)-1] + "g", " " + h} {
		if _, err := access.ParseHash(bad); err == nil {
			t.Errorf("ParseHash(%q) accepted", bad)
		}
	}
	if _, err := access.HashTokenChecked("short-but-8"); err == nil {
		t.Error("HashTokenChecked took a token shorter than MinHashedTokenLen")
	}
	if _, err := access.HashTokenChecked(" " + aliceToken); err == nil {
		t.Error("HashTokenChecked took a token with white space")
	}
	tok := access.NewToken()
	if got, err := access.HashTokenChecked(tok); err != nil || got != access.HashToken(tok) {
		t.Errorf("HashTokenChecked(NewToken()) = %q, %v", got, err)
	}
	if access.NewToken() == tok {
		t.Error("NewToken twice gave the same token")
	}
}

func TestConfigValidate(t *testing.T) {
	ok := access.Credential{Name: "alice", Role: access.Operator, Hash: access.HashToken(aliceToken)}
	for _, tc := range []struct {
		cfg  access.Config
		want string
	}{
		{access.Config{Credentials: []access.Credential{{Role: access.Operator, Token: aliceToken}}}, "Credentials[0].Name"},
		{access.Config{Credentials: []access.Credential{{Name: "a\x1bb", Role: access.Operator, Token: aliceToken}}}, "Credentials[0].Name"},
		{access.Config{Credentials: []access.Credential{{Name: "alice", Token: aliceToken}}}, "Credentials[0].Role"},
		{access.Config{Credentials: []access.Credential{{Name: "alice", Role: "admin", Token: aliceToken}}}, "Credentials[0].Role"},
		{access.Config{Credentials: []access.Credential{{Name: "alice", Role: access.Viewer}}}, "Credentials[0].Token: required"},
		{access.Config{Credentials: []access.Credential{{Name: "alice", Role: access.Viewer, Hash: "x"}}}, "Credentials[0].Hash"},
		{access.Config{Credentials: []access.Credential{{Name: "alice", Role: access.Viewer, Token: "short"}}}, "Credentials[0].Token"},
		{access.Config{Credentials: []access.Credential{{Name: "alice", Role: access.Viewer, Token: aliceToken, Hash: ok.Hash}}}, "set with Token"},
		{access.Config{Credentials: []access.Credential{ok, {Name: "alice", Role: access.Viewer, Token: bobToken}}}, "Credentials[1].Name"},
		{access.Config{Credentials: []access.Credential{ok, {Name: "bob", Role: access.Viewer, Token: aliceToken}}}, "Credentials[1]: the same token"},
		{access.Config{Proxy: &access.Proxy{}}, "Proxy.Addresses"},
		{access.Config{Proxy: &access.Proxy{Addresses: loopback, UserHeader: "Authorization"}}, "Proxy.UserHeader"},
		{access.Config{Proxy: &access.Proxy{Addresses: loopback, UserHeader: "X User"}}, "Proxy.UserHeader"},
		{access.Config{Proxy: &access.Proxy{Addresses: loopback, GroupsHeader: "x-forwarded-user"}}, "Proxy.GroupsHeader"},
		{access.Config{Proxy: &access.Proxy{Addresses: loopback, Role: "root"}}, "Proxy.Role"},
		{access.Config{Proxy: &access.Proxy{Addresses: loopback, OperatorGroups: []string{"ops"}}}, "Proxy.OperatorGroups"},
		{access.Config{Proxy: &access.Proxy{Addresses: loopback, GroupsHeader: "X-Forwarded-Groups", ViewerGroups: []string{"a,b"}}}, "Proxy.ViewerGroups[0]"},
		{access.Config{Proxy: &access.Proxy{Addresses: loopback, Role: access.NoRole}}, "lets nobody in"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", tc.cfg, err, tc.want)
		}
	}
	if err := (access.Config{Credentials: []access.Credential{ok}, Proxy: &access.Proxy{Addresses: loopback}}).Validate(); err != nil {
		t.Errorf("Validate of a good config = %v", err)
	}
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// A token is its credential's, by hash or in plain; nothing else is
// anyone's.
func TestToken(t *testing.T) {
	a := mustNew(t, access.Config{Credentials: []access.Credential{
		{Name: "alice", Role: access.Operator, Hash: access.HashToken(aliceToken)},
		{Name: "victor", Role: access.Viewer, Token: bobToken},
	}})
	for tok, want := range map[string]access.Identity{
		aliceToken: {Name: "alice", Role: access.Operator, Via: access.ViaToken},
		bobToken:   {Name: "victor", Role: access.Viewer, Via: access.ViaToken},
	} {
		if got, ok := a.Token(tok); !ok || got != want {
			t.Errorf("Token(%q) = %+v, %v; want %+v", tok, got, ok, want)
		}
	}
	for _, tok := range []string{"", aliceToken + " ", access.HashToken(aliceToken), "nope-nope"} {
		if got, ok := a.Token(tok); ok {
			t.Errorf("Token(%q) = %+v", tok, got)
		}
	}
	if id, sum, ok := a.Lookup("alice"); !ok || id.Name != "alice" || access.HashToken(aliceToken) != "sha256:"+hexOf(sum[:]) {
		t.Errorf("Lookup(alice) = %+v, %x, %v", id, sum, ok)
	}
	if _, _, ok := a.Lookup("mallory"); ok {
		t.Error("Lookup found mallory")
	}
	var none *access.Authenticator
	if !none.Empty() || none.HasTokens() || none.HasProxy() {
		t.Error("a nil Authenticator is not empty")
	}
	if _, ok := none.Token(aliceToken); ok {
		t.Error("a nil Authenticator took a token")
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// The proxy's header: believed from its addresses only, one value, a name
// CheckName takes; groups map to roles.
func TestProxied(t *testing.T) {
	a := mustNew(t, access.Config{Proxy: &access.Proxy{
		Addresses:      []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("::1/128")},
		UserHeader:     "X-Auth-Request-Email",
		GroupsHeader:   "X-Auth-Request-Groups",
		Role:           access.NoRole,
		OperatorGroups: []string{"payments-oncall"}, ViewerGroups: []string{"payments"},
	}})
	for _, tc := range []struct {
		name   string
		remote string
		header map[string][]string
		want   access.Identity
		err    error
	}{
		{"no header", "10.1.2.3:5555", nil, access.Identity{}, access.ErrNoIdentity},
		{"operator group", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"alice@example.com"}, "X-Auth-Request-Groups": {"staff,payments-oncall"}},
			access.Identity{Name: "alice@example.com", Role: access.Operator, Via: access.ViaProxy}, nil},
		{"groups one header each", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"carol@example.com"}, "X-Auth-Request-Groups": {"staff", " payments "}},
			access.Identity{Name: "carol@example.com", Role: access.Viewer, Via: access.ViaProxy}, nil},
		{"ipv6 peer", "[::1]:5555", map[string][]string{"X-Auth-Request-Email": {"bob@example.com"}, "X-Auth-Request-Groups": {"payments-oncall"}},
			access.Identity{Name: "bob@example.com", Role: access.Operator, Via: access.ViaProxy}, nil},
		{"v4-mapped peer", "[::ffff:10.1.9.9]:5555", map[string][]string{"X-Auth-Request-Email": {"bob@example.com"}, "X-Auth-Request-Groups": {"payments"}},
			access.Identity{Name: "bob@example.com", Role: access.Viewer, Via: access.ViaProxy}, nil},
		{"no group", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"dave@example.com"}, "X-Auth-Request-Groups": {"staff"}}, access.Identity{}, access.ErrNoRole},
		{"no groups header", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"dave@example.com"}}, access.Identity{}, access.ErrNoRole},
		{"group case differs", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"dave@example.com"}, "X-Auth-Request-Groups": {"Payments-Oncall"}}, access.Identity{}, access.ErrNoRole},
		{"untrusted peer", "10.2.0.1:5555", map[string][]string{"X-Auth-Request-Email": {"alice@example.com"}, "X-Auth-Request-Groups": {"payments-oncall"}}, access.Identity{}, access.ErrUntrustedPeer},
		{"untrusted peer, forwarded for the proxy", "10.2.0.1:5555", map[string][]string{"X-Auth-Request-Email": {"alice@example.com"}, "X-Forwarded-For": {"10.1.2.3"}}, access.Identity{}, access.ErrUntrustedPeer},
		{"untrusted peer, empty value", "192.0.2.1:5555", map[string][]string{"X-Auth-Request-Email": {""}}, access.Identity{}, access.ErrUntrustedPeer},
		{"two values", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"alice@example.com", "bob@example.com"}}, access.Identity{}, access.ErrBadIdentity},
		{"empty", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {""}}, access.Identity{}, access.ErrBadIdentity},
		{"escape", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"\x1b[2Jalice"}}, access.Identity{}, access.ErrBadIdentity},
		{"bidi", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"alice\u202e@example.com"}}, access.Identity{}, access.ErrBadIdentity},
		{"invalid utf-8", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"al\xffice"}}, access.Identity{}, access.ErrBadIdentity},
		{"too long", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {strings.Repeat("a", 4096)}}, access.Identity{}, access.ErrBadIdentity},
		{"system actor", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"redrive-reconciler"}}, access.Identity{}, access.ErrBadIdentity},
		{"claims a claim", "10.1.2.3:5555", map[string][]string{"X-Auth-Request-Email": {"alice (as bob)"}}, access.Identity{}, access.ErrBadIdentity},
		{"unparseable peer", "pipe", map[string][]string{"X-Auth-Request-Email": {"alice"}}, access.Identity{}, access.ErrUntrustedPeer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for k, vs := range tc.header {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			got, err := a.Proxied(r)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Errorf("Proxied = %+v, %v; want %+v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// Without groups, the proxy's Role is everyone's; thousands of groups
// are not all read.
func TestProxyRole(t *testing.T) {
	a := mustNew(t, access.Config{Proxy: &access.Proxy{Addresses: loopback}})
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set(access.DefaultUserHeader, "alice")
	if id, err := a.Proxied(r); err != nil || id.Role != access.Viewer {
		t.Errorf("default role: %+v, %v; want a viewer", id, err)
	}
	b := mustNew(t, access.Config{Proxy: &access.Proxy{Addresses: loopback, GroupsHeader: "X-Forwarded-Groups", Role: access.NoRole, OperatorGroups: []string{"ops"}}})
	r.Header.Set("X-Forwarded-Groups", strings.Repeat("x,", 5000)+"ops")
	if _, err := b.Proxied(r); !errors.Is(err, access.ErrNoRole) {
		t.Errorf("a group after 5000 others: %v; want ErrNoRole (only the first 1000 are read)", err)
	}
}

// The audit logs keep what Actor returns whole.
func TestActorFitsTheAuditLogs(t *testing.T) {
	for name, n := range map[string]int{"dlq.MaxActorLen": dlq.MaxActorLen, "heartbeat.MaxActorLen": heartbeat.MaxActorLen} {
		if n < access.MaxActorLen {
			t.Errorf("%s is %d, below access.MaxActorLen %d: an actor would be cut", name, n, access.MaxActorLen)
		}
	}
}
