package admin

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redrive/redrive/internal/tools/openapi"
)

// The statuses every response of the package's tests had, by operation
// ("GET /internal/v1/dlq/{topic}"): TestMain checks each against the
// operation's responses in the OpenAPI document, so a handler cannot
// answer a status the document does not list for it.
var (
	seenMu sync.Mutex
	seen   = map[string]map[int]bool{}
)

func TestMain(m *testing.M) {
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.HandleFunc(rt.pattern, func(http.ResponseWriter, *http.Request) {})
	}
	observeStatus = func(r *http.Request, status int) {
		_, pattern := mux.Handler(r)
		if pattern == "" {
			return // no operation: the UI, an unknown route or method
		}
		if pattern == "GET /internal/v1/dlq/{topic}/{id}" && strings.HasSuffix(r.URL.EscapedPath(), "/groups") {
			pattern = groupsRoute
		}
		seenMu.Lock()
		defer seenMu.Unlock()
		if seen[pattern] == nil {
			seen[pattern] = map[int]bool{}
		}
		seen[pattern][status] = true
	}
	code := m.Run()
	if code == 0 {
		code = checkObserved()
	}
	os.Exit(code)
}

// checkObserved reports the statuses seen that the document does not list
// for their operation; with the whole package run (no -run), also the
// operations no test called.
func checkObserved() int {
	doc, err := parseOpenAPI(openAPIJSON)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	failed := false
	for _, op := range sortedKeys(seen) {
		for _, st := range sortedKeys(seen[op]) {
			if !doc.responds(op, st) {
				fmt.Fprintf(os.Stderr, "FAIL: %s answered %d, which configs/openapi.yaml does not list for it\n", op, st)
				failed = true
			}
		}
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" {
		for _, p := range servedPatterns() {
			if seen[p] == nil {
				fmt.Fprintf(os.Stderr, "FAIL: no test called %s\n", p)
				failed = true
			}
		}
	}
	if failed {
		return 1
	}
	return 0
}

// servedPatterns are the operations served: the routes' patterns and
// groupsRoute.
func servedPatterns() []string {
	out := []string{groupsRoute}
	for _, rt := range routes {
		out = append(out, rt.pattern)
	}
	sort.Strings(out)
	return out
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// apiDoc is what the tests read of the OpenAPI document: its operations'
// response codes by pattern ("GET /internal/v1/dlq").
type apiDoc struct {
	version string
	ops     map[string][]string
}

func (d apiDoc) responds(op string, status int) bool {
	return slices.Contains(d.ops[op], strconv.Itoa(status))
}

func parseOpenAPI(data []byte) (apiDoc, error) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return apiDoc{}, fmt.Errorf("openapi.json: %w", err)
	}
	out := apiDoc{version: doc.OpenAPI, ops: map[string][]string{}}
	for p, ops := range doc.Paths {
		for method, raw := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete", "head", "options":
			default:
				continue // parameters, summary…
			}
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return apiDoc{}, fmt.Errorf("openapi.json: %s %s: %w", method, p, err)
			}
			if len(op.Responses) == 0 {
				return apiDoc{}, fmt.Errorf("openapi.json: %s %s has no responses", method, p)
			}
			out.ops[strings.ToUpper(method)+" "+p] = sortedKeys(op.Responses)
		}
	}
	return out, nil
}

// TestOpenAPIIsFresh: the embedded JSON is configs/openapi.yaml as it is.
func TestOpenAPIIsFresh(t *testing.T) {
	src, err := os.ReadFile("../../" + openapi.Source)
	if err != nil {
		t.Fatal(err)
	}
	want, err := openapi.JSON(src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, openAPIJSON) {
		t.Error("dlq/admin/openapi.json is stale: run go generate ./dlq/admin")
	}
}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc, err := parseOpenAPI(openAPIJSON)
	if err != nil {
		t.Fatal(err)
	}
	if doc.version != "3.1.0" {
		t.Errorf("openapi version %q, want 3.1.0", doc.version)
	}
	documented := sortedKeys(doc.ops)
	served := servedPatterns()
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
		want := p
		if p == groupsRoute {
			want = "GET /internal/v1/dlq/{topic}/{id}"
		}
		if _, pattern := mux.Handler(req); pattern != want {
			t.Errorf("%s %s is routed to %q, want %q", method, samples.Replace(path), pattern, p)
		}
	}
}
