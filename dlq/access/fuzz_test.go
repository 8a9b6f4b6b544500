package access_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/internal/termtext"
)

// FuzzProxied: whatever a proxy's headers hold, the identity it gives is
// a name an audit log and a terminal can take whole, or a refusal; the
// actor of any claim beside it stays within MaxActorLen.
func FuzzProxied(f *testing.F) {
	for _, s := range []string{"alice", "", "a\x1bb", "ali\u202ece", "carol (as bob)", "redrive-x", "\xff", strings.Repeat("z", 200)} {
		f.Add(s, "ops,staff", "bob")
	}
	a, err := access.New(access.Config{Proxy: &access.Proxy{Addresses: loopback, GroupsHeader: "X-Forwarded-Groups",
		Role: access.NoRole, OperatorGroups: []string{"ops"}, ViewerGroups: []string{"staff"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, user, groups, claim string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "127.0.0.1:1"
		r.Header[access.DefaultUserHeader] = []string{user}
		r.Header["X-Forwarded-Groups"] = []string{groups}
		id, err := a.Proxied(r)
		if err != nil {
			return
		}
		if id.Name != user || len(user) > access.MaxNameLen || !utf8.ValidString(user) || !termtext.IsPrintable(user) ||
			strings.ContainsAny(user, "()") || strings.TrimSpace(user) != user || access.CheckName(user) != nil {
			t.Fatalf("Proxied took %q", user)
		}
		if id.Role != access.Operator && id.Role != access.Viewer {
			t.Fatalf("role %q", id.Role)
		}
		if act := id.Actor(claim); len(act) > access.MaxActorLen || !strings.HasPrefix(act, id.Name) {
			t.Fatalf("Actor(%q) = %q", claim, act)
		}
	})
}
