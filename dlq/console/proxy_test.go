package console_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/dlq/console"
)

// The authenticating proxy of these tests connects from 127.0.0.2 (a
// loopback address of its own on Linux); everyone else from 127.0.0.1.
const proxyIP = "127.0.0.2"

// proxyFixture is a console behind an authenticating proxy at proxyIP
// that names people in X-Forwarded-Email and their groups in
// X-Forwarded-Groups, beside the token logins of alice (operator) and
// victor (viewer).
func proxyFixture(t *testing.T, s dlq.Store) *fixture {
	t.Helper()
	acc, err := access.New(access.Config{
		Credentials: []access.Credential{
			{Name: "alice", Role: access.Operator, Hash: access.HashToken(opToken)},
			{Name: "victor", Role: access.Viewer, Hash: access.HashToken(viewerToken)},
		},
		Proxy: &access.Proxy{
			Addresses:  []netip.Prefix{netip.MustParsePrefix(proxyIP + "/32")},
			UserHeader: "X-Forwarded-Email", GroupsHeader: "X-Forwarded-Groups", Role: access.NoRole,
			OperatorGroups: []string{"payments-oncall"}, ViewerGroups: []string{"staff"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return newFixture(t, s, func(c *console.Config) { c.Users, c.Access = nil, acc })
}

// via is a client connecting from address from that sends the proxy's
// headers on every request (a nil header: none).
func (f *fixture) via(from string, header http.Header) *client {
	c := f.client()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	c.http.Transport = headerSetter{header: header, next: &http.Transport{DialContext: d.DialContext}}
	return c
}

// headerSetter adds its header to every request, as a proxy does.
type headerSetter struct {
	header http.Header
	next   http.RoundTripper
}

func (h headerSetter) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.header {
		r.Header[k] = vs
	}
	return h.next.RoundTrip(r)
}

// rawGet sends GET target from address from with extra header lines as
// they are, and returns the status and body.
func rawGet(t *testing.T, from, target, extra string) (int, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	conn, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n" + extra + "\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s by hand: %v", target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// person is the header the proxy sends for email in groups.
func person(email string, groups ...string) http.Header {
	h := http.Header{"X-Forwarded-Email": {email}}
	if len(groups) > 0 {
		h["X-Forwarded-Groups"] = []string{strings.Join(groups, ",")}
	}
	return h
}

// Behind the proxy, its people use the console without a login: an
// operator group's member replays and discards (the audit rows name
// them), a viewer group's member reads; the same header from another
// address, or holding what is not one name, is refused, whatever
// cookie comes with it, and changes nothing. Token logins work beside
// it. Counted: every entry ends as its operator left it, with one audit
// row per change by that operator.
func TestProxyIdentity(t *testing.T) {
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			f := proxyFixture(t, st.Open(t))
			recs := f.insert(6, nil)
			page := func(i int) string { return "/dlq/" + f.dlq + "/" + recs[i].ID }

			carol := f.via(proxyIP, person("carol@example.com", "staff", "payments-oncall"))
			expect(t, "carol's list", carol.get("/"), http.StatusOK, "carol@example.com", `id="sso"`)
			carol.get(page(0))
			expect(t, "carol's replay", carol.post(page(0)+"/replay", nil), http.StatusSeeOther)
			expect(t, "carol's discard", carol.post(page(1)+"/discard", url.Values{"reason": {"duplicate"}}), http.StatusSeeOther)
			expect(t, "carol's logout", carol.post("/logout", nil), http.StatusConflict, "single sign-on")
			expect(t, "carol's login page", carol.get("/login"), http.StatusSeeOther)

			alice := f.client().login(opToken)
			expect(t, "alice's discard", alice.post(page(2)+"/discard", url.Values{"reason": {"duplicate"}}), http.StatusSeeOther)

			dave := f.via(proxyIP, person("dave@example.com", "staff"))
			expect(t, "dave's list", dave.get(page(3)), http.StatusOK, "dave@example.com", "read-only")
			expect(t, "dave's replay", dave.post(page(3)+"/replay", nil), http.StatusForbidden, "read-only")
			expect(t, "dave's replay with carol's form token", dave.post(page(3)+"/replay", url.Values{"csrf": {carol.csrf}}), http.StatusForbidden, "csrf")
			if carol.csrf == "" || carol.csrf == dave.csrf {
				t.Errorf("carol's and dave's form tokens: %q, %q", carol.csrf, dave.csrf)
			}

			// Refused: the header from 127.0.0.1 (with alice's session
			// cookie too), from the proxy for someone in no group, and
			// hostile values from the proxy.
			refused := map[string]*client{
				"from another address":                f.via("127.0.0.1", person("carol@example.com", "payments-oncall")),
				"from another address, logged in":     alice,
				"from the proxy, in no group":         f.via(proxyIP, person("erin@example.com", "interns")),
				"from the proxy, two people":          f.via(proxyIP, http.Header{"X-Forwarded-Email": {"carol@example.com", "dave@example.com"}, "X-Forwarded-Groups": {"payments-oncall"}}),
				"from the proxy, nobody":              f.via(proxyIP, person("", "payments-oncall")),
				"from the proxy, bidi":                f.via(proxyIP, person("lorac\u202e@example.com", "payments-oncall")),
				"from the proxy, zero width":          f.via(proxyIP, person("car\u200bol@example.com", "payments-oncall")),
				"from the proxy, invalid UTF-8":       f.via(proxyIP, person("car\xffol", "payments-oncall")),
				"from the proxy, too long":            f.via(proxyIP, person(strings.Repeat("c", 5000), "payments-oncall")),
				"from the proxy, markup":              f.via(proxyIP, person("<b>carol</b>(x)", "payments-oncall")),
				"from the proxy, a system actor":      f.via(proxyIP, person("redrive-archiver", "payments-oncall")),
				"from the proxy, an actor with claim": f.via(proxyIP, person("carol (as alice)", "payments-oncall")),
			}
			alice.http.Transport = headerSetter{header: person("carol@example.com", "payments-oncall"), next: http.DefaultTransport}
			for what, c := range refused {
				r := c.get(page(4))
				expect(t, what+": the entry page", r, http.StatusForbidden, "identity refused")
				if strings.Contains(r.body, "carol") || strings.Contains(r.body, "<b>") || strings.Contains(r.body, "\x1b") {
					t.Errorf("%s: the refusal shows the header's value:\n%s", what, clip(r.body))
				}
				expect(t, what+": a replay", c.post(page(4)+"/replay", url.Values{"csrf": {carol.csrf}}), http.StatusForbidden, "identity refused")
			}

			// Bytes Go's client will not send, written by hand from the
			// proxy's address: refused (by net/http itself, 400, or by
			// the console, 403), never a page.
			for _, v := range []string{"carol\x1b]52;c;ZXZpbA==\x07", "carol\x00", "carol\rX-Forwarded-Email: alice", "\x7f"} {
				status, body := rawGet(t, proxyIP, f.web.URL+page(4), "X-Forwarded-Email: "+v+"\r\nX-Forwarded-Groups: payments-oncall")
				if status != http.StatusBadRequest && status != http.StatusForbidden || strings.Contains(body, "carol") {
					t.Errorf("X-Forwarded-Email %q by hand: %d\n%s", v, status, clip(body))
				}
			}

			want := map[int]struct {
				status dlq.Status
				actor  string
			}{
				0: {dlq.StatusReplayed, "carol@example.com"}, 1: {dlq.StatusDiscarded, "carol@example.com"},
				2: {dlq.StatusDiscarded, "alice"}, 3: {dlq.StatusPending, ""}, 4: {dlq.StatusPending, ""}, 5: {dlq.StatusPending, ""},
			}
			rows := 0
			for i, w := range want {
				got, err := f.store.Get(context.Background(), f.dlq, recs[i].ID)
				if err != nil || got.Status != w.status {
					t.Errorf("entry %d: %s, %v; want %s", i, got.Status, err, w.status)
				}
				trail, err := f.store.Audit(context.Background(), f.dlq, recs[i].ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range trail {
					if a.Actor != w.actor {
						t.Errorf("entry %d: audit row %+v, want actor %q", i, a, w.actor)
					}
				}
				rows += len(trail)
			}
			if rows != 3 {
				t.Errorf("%d audit rows, want 3 (one replay, two discards)", rows)
			}
		})
	}
}
