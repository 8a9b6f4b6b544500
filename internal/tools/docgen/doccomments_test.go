package docgen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportedNamesDocumented checks that every exported name of the
// module's non-test Go files has a doc comment: functions, methods of
// exported types, types, and constants and variables (a comment on the
// name, on its line, or on the group it belongs to).
func TestExportedNamesDocumented(t *testing.T) {
	checked := 0
	parseGoFiles(t, nil, func(path string, f *ast.File) {
		if f.Name.Name == "main" {
			return
		}
		for _, missing := range undocumented(f) {
			t.Errorf("%s: exported %s has no doc comment", rel(path), missing)
		}
		checked++
	})
	if checked < 100 {
		t.Fatalf("only %d files checked: is root %s the module?", checked, root)
	}
}

// parseGoFiles parses every non-test Go file of the module and calls f
// with it, skipping hidden folders, testdata, peers (a module of its own)
// and the folders skip returns true for (skip may be nil).
func parseGoFiles(t *testing.T, skip func(path string) bool, f func(path string, file *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "peers" || skip != nil && skip(path)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		f(path, file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// undocumented returns the exported names of f without a doc comment.
func undocumented(f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				recv := recvName(d.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue
				}
				name = recv + "." + name
			}
			out = append(out, name)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
						out = append(out, s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// recvName is the type name of a method receiver.
func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// maxLines is how long a Go file may grow before its top comment must say
// why it stays one file.
const maxLines = 450

// TestLongFilesSayWhy checks that every Go file of the module over
// maxLines lines has, above its package clause, a comment saying why it
// stays one file ("one file").
func TestLongFilesSayWhy(t *testing.T) {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "peers") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(data)
		if strings.Count(src, "\n") <= maxLines {
			return nil
		}
		top, _, found := strings.Cut(src, "\npackage ")
		if !found {
			top = "" // the package clause is the first line
		}
		if !strings.Contains(strings.ToLower(top), "one file") {
			t.Errorf("%s: %d lines (over %d) and no top comment saying why it stays one file: split it, or say why", rel(path), strings.Count(src, "\n"), maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
