package docgen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureNames checks that every Go name docs/architecture.md
// cites with its file — "`consumer.process` ([consume.go](../broker/rabbit/consume.go))"
// — is declared in that file: a function, a method (Recv.Method), a type,
// or an interface method.
func TestArchitectureNames(t *testing.T) {
	page := filepath.Join(root, "docs", "architecture.md")
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	token := regexp.MustCompile("`([^`]+)`|\\[[^\\]]*\\]\\(([^)]+\\.go)\\)")
	ident := regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$`)
	decls := map[string]map[string]bool{}
	checked := 0
	for i, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		for _, cell := range strings.Split(line, "|") {
			var pending []string
			for _, m := range token.FindAllStringSubmatch(cell, -1) {
				if m[1] != "" {
					if ident.MatchString(m[1]) {
						pending = append(pending, m[1])
					}
					continue
				}
				file := filepath.Join(filepath.Dir(page), filepath.FromSlash(m[2]))
				d, ok := decls[file]
				if !ok {
					if d, err = declared(file); err != nil {
						t.Errorf("architecture.md:%d: %v", i+1, err)
						pending = nil
						continue
					}
					decls[file] = d
				}
				for _, name := range pending {
					if !d[name] {
						t.Errorf("architecture.md:%d: %s is not declared in %s", i+1, name, rel(file))
					}
					checked++
				}
				pending = nil
			}
		}
	}
	if checked < 40 {
		t.Fatalf("only %d names checked: the journey tables changed shape; update this test", checked)
	}
}

// declared returns the names a Go file declares: functions, Recv.Method,
// types, Iface.Method, and each of those qualified by the package name.
func declared(path string) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	add := func(name string) {
		out[name] = true
		out[f.Name.Name+"."+name] = true
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				add(d.Name.Name)
				continue
			}
			typ := d.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if ix, ok := typ.(*ast.IndexExpr); ok {
				typ = ix.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				add(id.Name + "." + d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok {
					continue
				}
				add(ts.Name.Name)
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					for _, m := range it.Methods.List {
						for _, n := range m.Names {
							add(ts.Name.Name + "." + n.Name)
						}
					}
				}
			}
		}
	}
	return out, nil
}
