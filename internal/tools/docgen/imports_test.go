package docgen

import (
	"context"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The seam between redrive and its backends (broker/driver), checked on
// the real import graph (go list with the default build tags), so that
// it cannot erode again: what the backends depend on, who imports a
// broker client, what package broker exports, and the architecture
// page's diagram.

var (
	listOnce sync.Once
	listed   []Package
	listErr  error
)

// packages lists the module's packages once per test binary.
func packages(t *testing.T) map[string]Package {
	t.Helper()
	listOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		listed, listErr = ListPackages(ctx, root)
	})
	if listErr != nil {
		t.Fatal(listErr)
	}
	out := make(map[string]Package, len(listed))
	for _, p := range listed {
		out[p.Path] = p
	}
	return out
}

// builtIn are the backends the module has had from the start: if the
// rule of backendsOf stopped finding them, it no longer finds backends.
var builtIn = []string{"broker/kafka", "broker/rabbit"}

// backendsOf returns the module's backends: each one folder right under
// broker/ whose code imports the seam (broker/driver), so that a new
// backend is checked as soon as its folder exists, without being listed
// here.
func backendsOf(t *testing.T, pkgs map[string]Package) []string {
	t.Helper()
	var out []string
	for path, p := range pkgs {
		name, ok := strings.CutPrefix(path, "broker/")
		if ok && name != "driver" && !strings.Contains(name, "/") && slices.Contains(p.Imports, Module+"/broker/driver") {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	for _, b := range builtIn {
		if !slices.Contains(out, b) {
			t.Fatalf("backends found %v, without %s: the rule no longer finds backends", out, b)
		}
	}
	return out
}

// A backend depends on the seam, not on redrive's configuration layer,
// its YAML parser, its DLQ operations or its assembly: go list -deps of
// each backend holds none of them.
func TestBackendsDependOnTheSeamOnly(t *testing.T) {
	pkgs := packages(t)
	backends := backendsOf(t, pkgs)
	forbidden := []string{
		Module + "/internal/assembly/config", Module + "/internal/assembly", Module + "/dlq", Module + "/lag",
		Module + "/worker", Module + "/heartbeat",
	}
	for _, b := range backends {
		p, ok := pkgs[b]
		if !ok {
			t.Fatalf("go list has no %s", b)
		}
		if !slices.Contains(p.Deps, Module+"/broker/driver") {
			t.Errorf("%s does not depend on broker/driver: is it still a backend?", b)
		}
		for _, d := range p.Deps {
			if slices.Contains(forbidden, d) || strings.HasPrefix(d, Module+"/dlq/") || strings.Contains(d, "yaml") {
				t.Errorf("%s depends on %s (go list -deps ./%s)", b, d, b)
			}
		}
	}
}

// clientAllowed are the packages outside broker/<backend> whose non-test
// code may import a broker client: the bench's raw baselines (it measures
// redrive against the clients) and test support (imported by tests and
// the end-to-end suites only). Tests may import the clients anywhere: they
// publish what other producers send.
var clientAllowed = []string{"internal/tools/bench", "internal/testsupport/testenv", "internal/testsupport/rabbitfixture"}

// TestBrokerClientImports: no package outside broker/<backend> imports
// amqp091-go or franz-go, but those of clientAllowed.
func TestBrokerClientImports(t *testing.T) {
	clients := []string{"github.com/rabbitmq/amqp091-go", "github.com/twmb/franz-go/"}
	pkgs := packages(t)
	backends := backendsOf(t, pkgs)
	for path, p := range pkgs {
		if slices.ContainsFunc(backends, func(b string) bool { return path == b || strings.HasPrefix(path, b+"/") }) ||
			slices.Contains(clientAllowed, path) {
			continue
		}
		for _, imp := range p.Imports {
			if slices.ContainsFunc(clients, func(c string) bool { return strings.HasPrefix(imp, c) }) {
				t.Errorf("%s imports %s: only broker/<backend> may (or %v)", path, imp, clientAllowed)
			}
		}
	}
}

// The packages that must not know which backend runs: they reach it
// through broker/driver and internal/assembly only.
var backendBlind = []string{
	"dlq", "dlq/keeper", "dlq/operate", "dlq/jobs", "dlq/access", "dlq/admin", "dlq/console", "dlq/memstore", "dlq/pgstore",
	"dlq/storetest", "exactlyonce",
	"lag", "heartbeat", "relay", "worker", "internal/assembly/exporter", "internal/assembly/daemon", "cmd/redrive",
}

// TestBackendBlindPackages: dlq, lag, the exporter, the daemon, the CLI
// and the runtime import no backend package (the assembly links the
// built-in ones), and their code names no backend: no "kafka" or
// "rabbitmq" literal outside comments, help texts and tests.
func TestBackendBlindPackages(t *testing.T) {
	pkgs := packages(t)
	backends := backendsOf(t, pkgs)
	for _, path := range backendBlind {
		p, ok := pkgs[path]
		if !ok {
			t.Errorf("go list has no %s", path)
			continue
		}
		for _, imp := range Internal(p.Imports) {
			if slices.Contains(backends, imp) {
				t.Errorf("%s imports %s", path, imp)
			}
		}
		dir := filepath.Join(root, filepath.FromSlash(path))
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			checkNoBackendLiteral(t, f)
		}
	}
}

// checkNoBackendLiteral fails on a "kafka" or "rabbitmq" string literal
// in file (a backend's name compared or assigned in code).
func checkNoBackendLiteral(t *testing.T, file string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, lit := range stringLiterals(f) {
		switch strings.Trim(lit.Value, "\"`") {
		case "kafka", "rabbitmq":
			t.Errorf("%s: the literal %s names a backend: reach it through broker/driver", rel(fset.Position(lit.Pos()).String()), lit.Value)
		}
	}
}

// maxBrokerNames bounds the functions and types package broker lists
// (go doc -short ./broker | grep -c '^func\|^type'): only what an
// application uses.
const maxBrokerNames = 22

// backendOnly are names a backend uses and an application does not: they
// are broker/driver's, never broker's.
var backendOnly = []string{"Hold", "Holds", "HeaderReader", "AppendMessageID", "Backend", "Reason", "DefaultInstance",
	"Pipeline", "Decision", "Descriptor"}

// TestBrokerIsTheApplicationsAPI: go doc ./broker lists at most
// maxBrokerNames functions and types, and none of backendOnly.
func TestBrokerIsTheApplicationsAPI(t *testing.T) {
	fset := token.NewFileSet()
	dir := filepath.Join(root, "broker")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, Module+"/broker")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range p.Funcs {
		names = append(names, "func "+f.Name)
	}
	for _, ty := range p.Types {
		names = append(names, "type "+ty.Name)
	}
	if len(names) > maxBrokerNames {
		t.Errorf("go doc ./broker lists %d functions and types, more than %d: %v", len(names), maxBrokerNames, names)
	}
	for _, n := range names {
		_, name, _ := strings.Cut(n, " ")
		if slices.Contains(backendOnly, name) {
			t.Errorf("package broker exports %s, which only backends use: it is broker/driver's", name)
		}
	}
	if len(names) < 10 {
		t.Fatalf("only %d names in package broker: the test no longer reads it", len(names))
	}
}

// TestImportDiagram: the diagram of docs/architecture.md ("Who may import
// whom") is the import graph go list reports. Regenerate it with go
// generate ./internal/tools/docgen.
func TestImportDiagram(t *testing.T) {
	pkgs := packages(t)
	page, err := os.ReadFile(filepath.Join(root, ImportsFile))
	if err != nil {
		t.Fatal(err)
	}
	got, err := UpdateImports(page, listed)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(page) {
		t.Errorf("the import diagram of %s is stale: run go generate ./internal/tools/docgen\nwant:\n%s", ImportsFile, ImportDiagram(listed))
	}
	// The seam's own place in the graph: the driver imports the
	// application's contract and the wire form, nothing above them.
	if deps := Internal(pkgs["broker/driver"].Imports); !slices.Equal(withoutInternalOf(deps, "broker/"), []string{"broker", "broker/wire", "retrypolicy"}) {
		t.Errorf("broker/driver imports %v, want broker, broker/wire and retrypolicy (and broker's internal packages)", deps)
	}
}

// withoutInternalOf drops the internal packages under prefix from deps.
func withoutInternalOf(deps []string, prefix string) []string {
	var out []string
	for _, d := range deps {
		if !strings.HasPrefix(d, prefix+"internal/") {
			out = append(out, d)
		}
	}
	return out
}

// stringLiterals returns the string literals of f.
func stringLiterals(f *ast.File) []*ast.BasicLit {
	var out []*ast.BasicLit
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			out = append(out, lit)
		}
		return true
	})
	return out
}
