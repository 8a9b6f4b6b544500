package admin

import (
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// openAPIRoutes reads configs/openapi.yaml and returns its operations as
// ServeMux patterns ("GET /internal/v1/dlq/{topic}"), and its path
// parameters by pattern.
func openAPIRoutes(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../configs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                               `yaml:"openapi"`
		Paths   map[string]map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("configs/openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q, want 3.x", doc.OpenAPI)
	}
	var out []string
	for p, ops := range doc.Paths {
		for method, op := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete", "head", "options":
			default:
				continue // parameters, summary…
			}
			if _, ok := op["responses"]; !ok {
				t.Errorf("%s %s has no responses", method, p)
			}
			out = append(out, strings.ToUpper(method)+" "+p)
		}
	}
	sort.Strings(out)
	return out
}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	documented := openAPIRoutes(t)
	var served []string
	for _, rt := range routes {
		served = append(served, rt.pattern)
	}
	sort.Strings(served)
	for _, p := range documented {
		if !slices.Contains(served, p) {
			t.Errorf("configs/openapi.yaml documents %q, which is not served", p)
		}
	}
	for _, p := range served {
		if !slices.Contains(documented, p) {
			t.Errorf("%q is served but not in configs/openapi.yaml", p)
		}
	}

	// And the mux really serves each documented operation with that
	// pattern: fill path parameters with sample values.
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.HandleFunc(rt.pattern, func(http.ResponseWriter, *http.Request) {})
	}
	samples := strings.NewReplacer("{topic}", "orders.billing.dlq", "{id}", "0-42", "{worker}", "payout-executor")
	for _, p := range documented {
		method, path, _ := strings.Cut(p, " ")
		req := httptest.NewRequest(method, samples.Replace(path), nil)
		if _, pattern := mux.Handler(req); pattern != p {
			t.Errorf("%s %s is routed to %q, want %q", method, samples.Replace(path), pattern, p)
		}
	}
}
