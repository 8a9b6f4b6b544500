package admin_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq/memstore"
)

// An unknown query parameter is answered with the ones the endpoint
// takes, or with the fact that it takes none: never an empty list.
func TestUnknownParameterNamesTheAllowedOnes(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	f := newFixture(t, s)
	for _, tt := range []struct{ target, want string }{
		{"/internal/v1/dlq?limit=5", "unknown parameter: this endpoint takes no query parameters"},
		{"/internal/v1/dlq/orders.dlq?colour=red", "unknown parameter (allowed: "},
	} {
		m := expect(t, f.do(http.MethodGet, tt.target, ""), http.StatusBadRequest, strings.SplitN(strings.SplitN(tt.target, "?", 2)[1], "=", 2)[0])
		if e, _ := m["error"].(string); !strings.Contains(e, tt.want) || strings.HasSuffix(e, "allowed: )") {
			t.Errorf("%s: error %q, want %q", tt.target, e, tt.want)
		}
	}
}
