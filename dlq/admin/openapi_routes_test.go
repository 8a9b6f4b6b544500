package admin_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq/memstore"
)

// TestOpenAPIServed: GET /internal/v1/openapi.json is the OpenAPI 3.1
// document, and every operation it lists answers the refusals every route
// shares (no token, another site, another Host, a bad actor, a body too
// large, a write without JSON) with a status the document lists for it.
// TestMain checks the statuses of every test's responses the same way.
func TestOpenAPIServed(t *testing.T) {
	f := newFixture(t, memstore.New(memstore.Config{Logger: quiet}))
	w := f.do("GET", "/internal/v1/openapi.json", "")
	if w.Code != http.StatusOK {
		t.Fatalf("GET openapi.json = %d %s", w.Code, w.Body)
	}
	var doc struct {
		OpenAPI string                                           `json:"openapi"`
		Paths   map[string]map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || len(doc.Paths) < 10 {
		t.Fatalf("openapi %q with %d paths", doc.OpenAPI, len(doc.Paths))
	}
	samples := strings.NewReplacer("{topic}", "orders.dlq", "{id}", "0-42", "{worker}", "payout-executor")
	big := strings.Repeat("x", 70<<10)
	for path, ops := range doc.Paths {
		for method, op := range ops {
			method = strings.ToUpper(method)
			var codes map[string]json.RawMessage
			if err := json.Unmarshal(op["responses"], &codes); err != nil {
				t.Fatalf("%s %s: responses: %v", method, path, err)
			}
			target := samples.Replace(path)
			if path == "/internal/v1/dlq/replay-all" {
				target += "?topic=orders.dlq"
			}
			cases := []struct {
				name    string
				body    string
				headers []string
				status  int
			}{
				{"no token", "", []string{"Authorization", ""}, http.StatusUnauthorized},
				{"cross-origin", "", []string{"Origin", "https://evil.example"}, http.StatusForbidden},
				{"foreign host", "", []string{"Host", "evil.example"}, http.StatusMisdirectedRequest},
				{"bad actor", "", []string{"X-Redrive-Actor", "\x01"}, http.StatusBadRequest},
				{"body too large", big, nil, http.StatusRequestEntityTooLarge},
			}
			if method != http.MethodGet {
				cases = append(cases, struct {
					name    string
					body    string
					headers []string
					status  int
				}{"not JSON", "", []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType})
			}
			for _, tc := range cases {
				w := f.do(method, target, tc.body, tc.headers...)
				if w.Code != tc.status {
					t.Errorf("%s %s, %s: %d %s, want %d", method, path, tc.name, w.Code, w.Body, tc.status)
				}
				if _, ok := codes[strconv.Itoa(w.Code)]; !ok {
					t.Errorf("%s %s, %s: %d is not among its documented responses %v", method, path, tc.name, w.Code, slices.Sorted(maps.Keys(codes)))
				}
			}
		}
	}
}
