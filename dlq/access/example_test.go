package access_test

import (
	"fmt"
	"log"
	"net/http/httptest"
	"net/netip"

	"github.com/redrive/redrive/dlq/access"
)

// Example: two named credentials kept as hashes and an authenticating
// proxy; who a token and a proxied request are, and what the audit log
// records when a request claims another name. Give the Authenticator to
// admin.Config.Access and console.Config.Access.
func Example() {
	aliceToken := "alice-token-0123456789-abcdefghijkl" // access.NewToken() makes one
	a, err := access.New(access.Config{
		Credentials: []access.Credential{
			{Name: "alice", Role: access.Operator, Hash: access.HashToken(aliceToken)},
			{Name: "victor", Role: access.Viewer, Hash: "sha256:" + "0000000000000000000000000000000000000000000000000000000000000000"},
		},
		Proxy: &access.Proxy{
			Addresses:    []netip.Prefix{netip.MustParsePrefix("10.0.2.10/32")},
			UserHeader:   "X-Forwarded-Email",
			GroupsHeader: "X-Forwarded-Groups", OperatorGroups: []string{"payments-oncall"},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	alice, _ := a.Token(aliceToken)
	fmt.Println(alice.Name, alice.Role, alice.Actor("bob"))

	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.2.10:51234" // the proxy's connection
	r.Header.Set("X-Forwarded-Email", "carol@example.com")
	r.Header.Set("X-Forwarded-Groups", "staff,payments-oncall")
	carol, err := a.Proxied(r)
	fmt.Println(carol.Name, carol.Role, err)

	r.RemoteAddr = "192.0.2.7:40000" // anyone else
	_, err = a.Proxied(r)
	fmt.Println(err)
	// Output:
	// alice operator alice (as bob)
	// carol@example.com operator <nil>
	// an identity header from an address that is not the authenticating proxy's: X-Forwarded-Email from 192.0.2.7:40000
}
