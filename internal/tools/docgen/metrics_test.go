package docgen

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsList fails when the metrics list of docs/monitoring.md is not
// what the registered collectors describe.
func TestMetricsList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	page, err := os.ReadFile(filepath.Join(root, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	want, err := UpdateMetrics(ctx, page)
	if err != nil {
		t.Fatalf("%v; then %s", err, regenerate)
	}
	if !bytes.Equal(page, want) {
		t.Errorf("the metrics list of %s is stale (first difference: %s): %s", MetricsFile, firstDiff(page, want), regenerate)
	}
}

// TestMetrics checks the collected metrics against what is known of them:
// every const-built metric is still described, and a few known shapes.
func TestMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ms, err := Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Metric{}
	for _, m := range ms {
		if m.Help == "" {
			t.Errorf("%s: no help", m.Name)
		}
		byName[m.Name] = m
	}
	for name := range constTypes {
		if _, ok := byName[name]; !ok {
			t.Errorf("constTypes has %s, which no collector describes any more: remove it", name)
		}
	}
	for name, want := range map[string]Metric{
		"worker_handler_duration_seconds":  {Type: "histogram", Labels: []string{"worker"}, By: []string{"worker runtime"}},
		"worker_retry_total":               {Type: "counter", Labels: []string{"worker", "error_class"}, By: []string{"worker runtime"}},
		"redrive_claims_unavailable_total": {Type: "counter", By: []string{"worker runtime"}},
		"worker_dlq_messages_total":        {Type: "counter", Labels: []string{"dlq", "severity"}, By: []string{"DLQ keeper"}},
		"redrive_dlq_pending":              {Type: "gauge", Labels: []string{"dlq", "severity"}, By: []string{"operate.Ops", "exporter"}},
		"worker_dlq_processing_seconds":    {Type: "histogram", Labels: []string{"dlq", "severity"}, By: []string{"DLQ keeper"}},
		"redrive_worker_status":            {Type: "gauge", Labels: []string{"type", "worker_instance", "condition", "severity"}, By: []string{"exporter"}},
		"redrive_worker_running_instances": {Type: "gauge", Labels: []string{"type", "dlq_severity"}, By: []string{"exporter"}},
		"kafka_consumer_lag":               {Type: "gauge", Labels: []string{"group", "topic"}, By: []string{"exporter"}},
	} {
		got, ok := byName[name]
		if !ok {
			t.Errorf("%s: not found", name)
			continue
		}
		if got.Type != want.Type || !slices.Equal(got.Labels, want.Labels) || !slices.Equal(got.By, want.By) {
			t.Errorf("%s: %+v, want type %s labels %v by %v", name, got, want.Type, want.Labels, want.By)
		}
	}
}

func TestParseDesc(t *testing.T) {
	d := prometheus.NewDesc("x_total", `a "quoted" help, {with} braces`, []string{"a", "b"}, prometheus.Labels{"c": "d"})
	name, help, labels, err := parseDesc(d)
	if err != nil {
		t.Fatal(err)
	}
	if name != "x_total" || help != `a "quoted" help, {with} braces` || !slices.Equal(labels, []string{"a", "b"}) {
		t.Fatalf("parseDesc = %q %q %v", name, help, labels)
	}
}

func TestReplaceSection(t *testing.T) {
	page := []byte("a\n" + MetricsBegin + "\nold\n" + MetricsEnd + "\nb\n")
	got, err := replaceSection(page, []byte("new\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n" + MetricsBegin + "\nnew\n" + MetricsEnd + "\nb\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := replaceSection([]byte("no markers"), nil); err == nil {
		t.Fatal("no error without markers")
	}
}

// notListed are metrics constructed in redrive's code that the list leaves
// out on purpose.
var notListed = map[string]string{
	"promhttp_metric_handler_errors_total": "promhttp's own, shared by the exporter's handler",
}

// TestEveryMetricListed is the safety net of the metrics list: every
// metric constructed in redrive's non-test code (prometheus.NewDesc and
// prometheus.New{Counter,Gauge,Histogram,Summary}[Vec] with a constant
// name) must be in it. A metric of a component Metrics does not build yet
// fails here: build that component in Metrics (internal/tools/docgen/metrics.go).
func TestEveryMetricListed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ms, err := Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range ms {
		listed[m.Name] = true
	}
	found, err := constructedMetrics(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < len(ms)/2 {
		t.Fatalf("found only %d metric constructors in the code: the scan is broken", len(found))
	}
	for name, where := range found {
		if !listed[name] && notListed[name] == "" {
			t.Errorf("metric %s (constructed in %s) is not in the metrics list: build its component in Metrics (internal/tools/docgen/metrics.go), then %s", name, where, regenerate)
		}
	}
}

// constructedMetrics returns the metric names constructed in the non-test
// Go files under root (internal/tools/bench and internal/tools/docgen excepted), with
// where each is constructed.
func constructedMetrics(root string) (map[string]string, error) {
	ctors := map[string]bool{"NewDesc": true}
	for _, k := range []string{"Counter", "Gauge", "Histogram", "Summary"} {
		ctors["New"+k] = true
		ctors["New"+k+"Vec"] = true
	}
	type site struct {
		pkg, where string
		expr       ast.Expr
	}
	consts := map[string]string{} // "pkg.Name" → value
	var sites []site
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r := rel(path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != root || r == "internal/tools/bench" || r == "internal/tools/docgen" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, _ := strconv.Unquote(lit.Value)
							consts[pkg+"."+n.Name] = v
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !ctors[sel.Sel.Name] {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" {
				return true
			}
			where := fmt.Sprintf("%s:%d", r, fset.Position(call.Pos()).Line)
			arg := call.Args[0]
			if sel.Sel.Name != "NewDesc" {
				arg = nil
				if cl, ok := call.Args[0].(*ast.CompositeLit); ok {
					for _, e := range cl.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
								arg = kv.Value
							}
						}
					}
				}
			}
			sites = append(sites, site{pkg: pkg, where: where, expr: arg})
			return true
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var unresolved []string
	for _, s := range sites {
		var name string
		switch e := s.expr.(type) {
		case *ast.BasicLit:
			name, _ = strconv.Unquote(e.Value)
		case *ast.Ident:
			name = consts[s.pkg+"."+e.Name]
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok {
				name = consts[x.Name+"."+e.Sel.Name]
			}
		}
		if name == "" {
			unresolved = append(unresolved, s.where)
			continue
		}
		out[name] = s.where
	}
	if len(unresolved) > 0 {
		return nil, fmt.Errorf("metric names that are not a string constant (write them as one): %s", strings.Join(unresolved, ", "))
	}
	return out, nil
}
