package admin_test

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/dlq/admin"
)

// Tokens of TestNamedOperatorsAndProxy.
const (
	aliceToken  = "alice-token-0123456789-abcdefghijkl"
	victorToken = "victor-token-0123456789-abcdefghijk"
	proxyAddr   = "10.9.0.5:40000"
)

// accessFixture is the API with named credentials (kept as hashes) and an
// authenticating proxy at 10.9.0.0/24.
func accessFixture(t *testing.T, s dlq.Store) *fixture {
	t.Helper()
	acc, err := access.New(access.Config{
		Credentials: []access.Credential{
			{Name: "alice", Role: access.Operator, Hash: access.HashToken(aliceToken)},
			{Name: "victor", Role: access.Viewer, Hash: access.HashToken(victorToken)},
		},
		Proxy: &access.Proxy{
			Addresses:  []netip.Prefix{netip.MustParsePrefix("10.9.0.0/24")},
			UserHeader: "X-Forwarded-Email", GroupsHeader: "X-Forwarded-Groups", Role: access.NoRole,
			OperatorGroups: []string{"payments-oncall"}, ViewerGroups: []string{"staff"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return newFixtureWith(t, s, func(c *admin.Config) { c.Tokens, c.Access = nil, acc })
}

// Two named operators (a token's, and a person the proxy vouches for)
// replay and discard; each audit row names its operator. A viewer reads
// and changes nothing; the proxy's header from any other address, or
// holding what is not one name, is refused and changes nothing. Counted:
// every entry is replayed, discarded or still pending, and the audit
// holds one row per change, by its operator.
func TestNamedOperatorsAndProxy(t *testing.T) {
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			f := accessFixture(t, st.Open(t))
			const name = "auth.dlq"
			recs := f.insert(name, 6, nil)
			replay := func(id string) string { return `{"topic":"` + name + `","id":"` + id + `"}` }
			discard := func(id string) string { return "/internal/v1/dlq/" + name + "/" + id + "?reason=dup" }
			alice := []string{"Authorization", "Bearer " + aliceToken}
			victor := []string{"Authorization", "Bearer " + victorToken}
			proxied := func(email, groups string) []string {
				return []string{"Authorization", "", "RemoteAddr", proxyAddr, "X-Forwarded-Email", email, "X-Forwarded-Groups", groups}
			}
			carol := proxied("carol@example.com", "staff, payments-oncall")
			dave := proxied("dave@example.com", "staff")

			// Changes, each by its operator.
			expect(t, f.do("POST", "/internal/v1/dlq/replay", replay(recs[0].ID), alice...), http.StatusOK, "")
			expect(t, f.do("DELETE", discard(recs[1].ID), "", alice...), http.StatusOK, "")
			expect(t, f.do("POST", "/internal/v1/dlq/replay", replay(recs[2].ID), carol...), http.StatusOK, "")
			expect(t, f.do("DELETE", discard(recs[3].ID), "", carol...), http.StatusOK, "")
			want := map[string]struct {
				status dlq.Status
				actor  string
			}{
				recs[0].ID: {dlq.StatusReplayed, "alice"}, recs[1].ID: {dlq.StatusDiscarded, "alice"},
				recs[2].ID: {dlq.StatusReplayed, "carol@example.com"}, recs[3].ID: {dlq.StatusDiscarded, "carol@example.com"},
				recs[4].ID: {dlq.StatusPending, ""}, recs[5].ID: {dlq.StatusPending, ""},
			}

			// Viewers read and change nothing.
			for _, as := range [][]string{victor, dave} {
				expect(t, f.do("GET", "/internal/v1/dlq/"+name, "", as...), http.StatusOK, "")
				for _, w := range []struct{ method, target, body string }{
					{"POST", "/internal/v1/dlq/replay", replay(recs[4].ID)},
					{"DELETE", discard(recs[4].ID), ""},
					{"POST", "/internal/v1/dlq/replay-all?topic=" + name, ""},
					{"POST", "/internal/v1/dlq/discard-all?topic=" + name + "&reason=x", ""},
					{"POST", "/internal/v1/dlq/jobs/01aaaaaaaaaaaaaaaaaaaaaaaa/cancel", ""},
					{"POST", "/internal/v1/workers/billing/pause", `{"reason":"x"}`},
				} {
					if m := expect(t, f.do(w.method, w.target, w.body, as...), http.StatusForbidden, ""); m["code"] != admin.CodeReadOnly {
						t.Errorf("%s %s by a viewer: %v, want code read_only", w.method, w.target, m)
					}
				}
			}

			// The proxy's header from elsewhere is refused, even with a
			// valid token beside it; hostile values from the proxy too.
			refused := [][]string{
				append(append([]string{}, alice...), "X-Forwarded-Email", "alice", "X-Forwarded-Groups", "payments-oncall"),
				{"RemoteAddr", "10.9.1.5:1", "X-Forwarded-Email", "carol@example.com", "X-Forwarded-Groups", "payments-oncall"},
				{"RemoteAddr", "192.0.2.1:1", "X-Forwarded-For", "10.9.0.5", "X-Forwarded-Email", "carol@example.com", "X-Forwarded-Groups", "payments-oncall"},
				proxied("erin@example.com", "interns"), // in no group
			}
			for _, v := range []string{" carol", "carol\x1b[2J", "ca\u202erol", "ca\u200brol", "carol\x00", strings.Repeat("c", 4000),
				"\xff\xfe", "carol (as alice)", "redrive-reconciler", "<script>alert(1)</script>\u0085"} {
				refused = append(refused, proxied(v, "payments-oncall"))
			}
			for _, as := range refused {
				for _, w := range []struct{ method, target, body string }{
					{"GET", "/internal/v1/dlq", ""},
					{"DELETE", discard(recs[5].ID), ""},
				} {
					resp := f.do(w.method, w.target, w.body, as...)
					m := expect(t, resp, http.StatusForbidden, "")
					if m["code"] != admin.CodeIdentityRefused || strings.Contains(resp.Body.String(), "carol") || strings.Contains(resp.Body.String(), "erin") {
						t.Errorf("%s %s with %q: %s, want identity_refused without the value", w.method, w.target, as, resp.Body)
					}
				}
			}
			// From the proxy without its header: the token decides.
			expect(t, f.do("GET", "/internal/v1/dlq", "", "Authorization", "", "RemoteAddr", proxyAddr), http.StatusUnauthorized, "")
			expect(t, f.do("GET", "/internal/v1/dlq", "", "Authorization", "Bearer "+victorToken, "RemoteAddr", proxyAddr), http.StatusOK, "")

			for _, tc := range []struct {
				as                   []string
				name, role, via, act string
			}{
				{alice, "alice", "operator", "token", "alice"},
				{victor, "victor", "viewer", "token", "victor"},
				{carol, "carol@example.com", "operator", "proxy", "carol@example.com"},
				{append(append([]string{}, dave...), "X-Redrive-Actor", "alice"), "dave@example.com", "viewer", "proxy", "dave@example.com (as alice)"},
			} {
				m := expect(t, f.do("GET", "/internal/v1/whoami", "", tc.as...), http.StatusOK, "")
				if m["name"] != tc.name || m["role"] != tc.role || m["via"] != tc.via || m["actor"] != tc.act {
					t.Errorf("whoami = %v, want %s %s %s %q", m, tc.name, tc.role, tc.via, tc.act)
				}
			}

			// Counted: every entry as its operator left it, one audit row per
			// change (a replay: replaying, then replayed), by its operator.
			rows := 0
			for id, w := range want {
				got, err := f.store.Get(context.Background(), name, id)
				if err != nil || got.Status != w.status {
					t.Errorf("entry %s: %s, %v; want %s", id, got.Status, err, w.status)
				}
				trail, err := f.store.Audit(context.Background(), name, id)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range trail {
					if a.Actor != w.actor {
						t.Errorf("entry %s: audit row %+v, want actor %q", id, a, w.actor)
					}
				}
				rows += len(trail)
			}
			if rows != 4 || f.pub.count() != 2 {
				t.Errorf("%d audit rows, %d replays published; want 4 and 2", rows, f.pub.count())
			}
		})
	}
}
