package docgen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConfigStyle checks the configuration style of the public packages
// (docs/architecture.md, "Configuration style"): a component is configured
// by a struct named Config or <Thing>Config whose every field has a doc
// comment (saying its default) and which has a Validate() error method; no
// package exports functional options (a func type taking a pointer to one
// of the package's types, or a type named Option or Options). Packages
// under internal/, cmd/ and e2e/ are not public and are not checked.
func TestConfigStyle(t *testing.T) {
	pkgs := map[string][]*ast.File{}
	notPublic := func(path string) bool {
		name := filepath.Base(path)
		return name == "internal" || filepath.Dir(path) == root && (name == "cmd" || name == "e2e")
	}
	parseGoFiles(t, notPublic, func(path string, f *ast.File) {
		if f.Name.Name != "main" {
			pkgs[filepath.Dir(path)] = append(pkgs[filepath.Dir(path)], f)
		}
	})
	if len(pkgs) < 10 {
		t.Fatalf("only %d public packages found: is root %s the module?", len(pkgs), root)
	}
	configs := 0
	for _, dir := range slices.Sorted(maps.Keys(pkgs)) {
		problems, n := configProblems(pkgs[dir])
		configs += n
		for _, p := range problems {
			t.Errorf("%s: %s", rel(dir), p)
		}
	}
	if configs < 10 {
		t.Fatalf("only %d Config structs found: is the walk right?", configs)
	}
}

// TestConfigStyleCatchesDrift: configProblems finds each kind of drift in
// a package written for the purpose, and nothing in one that follows the
// style.
func TestConfigStyleCatchesDrift(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // substrings of the problems, in order
	}{
		{"follows the style", `package p
// Config configures a Thing.
type Config struct {
	// TTL is how long. Default 1m.
	TTL int
}
// Validate reports the first bad field.
func (c Config) Validate() error { return nil }
// ReplayConfig configures a replay.
type ReplayConfig struct {
	// Rate is the rate. Default 10.
	Rate float64
}
// Validate reports the first bad field.
func (c *ReplayConfig) Validate() error { return nil }
`, nil},
		{"functional option", `package p
// Thing is a thing.
type Thing struct{ ttl int }
// Setting sets a Thing.
type Setting func(*Thing)
`, []string{"functional option type Setting"}},
		{"named Option", `package p
// Option is an option.
type Option struct{}
`, []string{"type Option"}},
		{"named Options", `package p
// Options are options.
type Options struct{}
`, []string{"type Options"}},
		{"no Validate", `package p
// SamplerConfig configures a sampler.
type SamplerConfig struct {
	// Interval between samples. Default 1s.
	Interval int
}
`, []string{"SamplerConfig has no Validate() error method"}},
		{"Validate of the wrong shape", `package p
// Config configures.
type Config struct{}
// Validate checks.
func (c Config) Validate() bool { return true }
`, []string{"Config has no Validate() error method"}},
		{"undocumented field", `package p
// Config configures.
type Config struct {
	// Documented. Default 1.
	A int
	B, C int
}
// Validate checks.
func (c Config) Validate() error { return nil }
`, []string{"Config.B has no doc comment", "Config.C has no doc comment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), "p.go", tt.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := configProblems([]*ast.File{f})
			if len(got) != len(tt.want) {
				t.Fatalf("problems = %q, want %d naming %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to name %q", i, got[i], w)
				}
			}
		})
	}
}

// configProblems returns how the files of one package depart from the
// configuration style, and how many Config structs they declare.
func configProblems(files []*ast.File) (problems []string, configs int) {
	types := map[string]bool{}
	validates := map[string]bool{} // receiver type names with Validate() error
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if s, ok := spec.(*ast.TypeSpec); ok {
						types[s.Name.Name] = true
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) > 0 && d.Name.Name == "Validate" && returnsOnlyError(d.Type) {
					validates[recvName(d.Recv.List[0].Type)] = true
				}
			}
		}
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			d, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range d.Specs {
				s, ok := spec.(*ast.TypeSpec)
				if !ok || !s.Name.IsExported() {
					continue
				}
				name := s.Name.Name
				if name == "Option" || name == "Options" {
					problems = append(problems, "type "+name+": configure with a Config struct, not options")
					continue
				}
				if ft, ok := s.Type.(*ast.FuncType); ok && configuresOwnType(ft, types) {
					problems = append(problems, "functional option type "+name+": configure with a Config struct")
					continue
				}
				st, ok := s.Type.(*ast.StructType)
				if !ok || !strings.HasSuffix(name, "Config") {
					continue
				}
				configs++
				if !validates[name] {
					problems = append(problems, name+" has no Validate() error method")
				}
				for _, field := range st.Fields.List {
					if field.Doc != nil || field.Comment != nil {
						continue
					}
					for _, n := range field.Names {
						if n.IsExported() {
							problems = append(problems, name+"."+n.Name+" has no doc comment (say its default)")
						}
					}
				}
			}
		}
	}
	return problems, configs
}

// returnsOnlyError reports whether ft takes nothing and returns one error.
func returnsOnlyError(ft *ast.FuncType) bool {
	if ft.Params != nil && len(ft.Params.List) > 0 {
		return false
	}
	if ft.Results == nil || len(ft.Results.List) != 1 || len(ft.Results.List[0].Names) > 1 {
		return false
	}
	id, ok := ft.Results.List[0].Type.(*ast.Ident)
	return ok && id.Name == "error"
}

// configuresOwnType reports whether ft has the shape of a functional
// option: it takes a pointer to a type of the package and returns nothing
// or an error.
func configuresOwnType(ft *ast.FuncType, types map[string]bool) bool {
	if ft.Params == nil || len(ft.Params.List) != 1 {
		return false
	}
	star, ok := ft.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	if !ok || !types[id.Name] {
		return false
	}
	return ft.Results == nil || len(ft.Results.List) == 0 || returnsOnlyError(&ast.FuncType{Results: ft.Results})
}
