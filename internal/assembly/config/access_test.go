package config

import (
	"net/http/httptest"
	"testing"

	"github.com/redrive/redrive/dlq/access"
)

// The admin section becomes one access.Config: the single tokens of
// older configurations as "admin" and "viewer", the named operators by
// their hashes, the proxy with its defaults; copies do not share lists.
func TestAdminAccess(t *testing.T) {
	const aliceToken = "alice-token-0123456789-abcdefghijkl"
	c, err := parse([]byte(`
broker: rabbitmq
admin:
  token: old-shared-token
  viewer_token: old-viewer-token
  operators:
    - {name: alice, role: operator, token_hash: "`+access.HashToken(aliceToken)+`"}
  proxy_auth: {proxies: [10.0.0.5], groups_header: X-Forwarded-Groups, operator_groups: [ops]}
`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if pa := c.Admin.ProxyAuth; pa.UserHeader != access.DefaultUserHeader || pa.Role != "viewer" {
		t.Errorf("proxy_auth defaults: %+v", pa)
	}
	a, err := access.New(c.Admin.Access())
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]access.Identity{
		"old-shared-token": {Name: TokenOperator, Role: access.Operator, Via: access.ViaToken},
		"old-viewer-token": {Name: TokenViewer, Role: access.Viewer, Via: access.ViaToken},
		aliceToken:         {Name: "alice", Role: access.Operator, Via: access.ViaToken},
	} {
		if got, ok := a.Token(tok); !ok || got != want {
			t.Errorf("Token(%q) = %+v, %v; want %+v", tok, got, ok, want)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.5:1"
	r.Header.Set("X-Forwarded-User", "carol")
	r.Header.Set("X-Forwarded-Groups", "ops")
	if id, err := a.Proxied(r); err != nil || id.Name != "carol" || id.Role != access.Operator {
		t.Errorf("Proxied = %+v, %v", id, err)
	}

	cp := c.Clone()
	cp.Admin.Operators[0].Name = "mallory"
	cp.Admin.ProxyAuth.Proxies[0] = "0.0.0.0/0"
	cp.Admin.ProxyAuth.OperatorGroups[0] = "everyone"
	if c.Admin.Operators[0].Name != "alice" || c.Admin.ProxyAuth.Proxies[0] != "10.0.0.5" || c.Admin.ProxyAuth.OperatorGroups[0] != "ops" {
		t.Errorf("a clone shares the admin lists: %+v %+v", c.Admin.Operators, c.Admin.ProxyAuth)
	}
	if red := c.Redacted(); red.Admin.Token != Mask || red.Admin.ViewerToken != Mask || red.Admin.Operators[0].TokenHash != c.Admin.Operators[0].TokenHash {
		t.Errorf("Redacted admin: %+v (tokens masked, hashes kept: they are not secrets)", red.Admin)
	}
}
