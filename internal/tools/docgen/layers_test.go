package docgen

import (
	"slices"
	"strings"
	"testing"
)

// The layers of the module (docs/architecture.md, "Layers"), read from a
// package's path: internal/ is grouped under parents named for the layer,
// and a package directly under internal/ is a utility.
const (
	layerLibrary     = "library"     // the public packages users import
	layerUtility     = "utility"     // internal/<name>, <pkg>/internal/...: small, one job
	layerAssembly    = "assembly"    // internal/assembly/...: configuration turned into running parts
	layerTestSupport = "testsupport" // internal/testsupport/...: what the tests share
	layerTools       = "tools"       // internal/tools/...: what backs redrive bench, redrive dev, the generators
	layerCommand     = "command"     // cmd/...
	layerE2E         = "e2e"         // e2e/...: the end-to-end suites
)

// layerOf returns the layer of the package at path (relative to the module).
func layerOf(path string) string {
	switch {
	case path == "." || path == "e2e" || strings.HasPrefix(path, "e2e/"):
		return layerE2E
	case strings.HasPrefix(path, "cmd/"):
		return layerCommand
	case path == "internal/assembly" || strings.HasPrefix(path, "internal/assembly/"):
		return layerAssembly
	case strings.HasPrefix(path, "internal/testsupport/"):
		return layerTestSupport
	case strings.HasPrefix(path, "internal/tools/"):
		return layerTools
	case strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/"):
		return layerUtility
	}
	return layerLibrary
}

// mayImport is the layering rule for non-test imports: which layers each
// layer may import. Test support and tools are never imported by code
// that ships in the library or the daemon (tests may import them); a
// utility imports no layer above the library.
var mayImport = map[string][]string{
	layerLibrary:     {layerLibrary, layerUtility, layerAssembly},
	layerUtility:     {layerLibrary, layerUtility},
	layerAssembly:    {layerLibrary, layerUtility, layerAssembly},
	layerTestSupport: {layerLibrary, layerUtility, layerAssembly, layerTestSupport},
	layerTools:       {layerLibrary, layerUtility, layerAssembly, layerTools},
	layerCommand:     {layerLibrary, layerUtility, layerAssembly, layerTools},
	layerE2E:         {layerLibrary, layerUtility, layerAssembly, layerTestSupport, layerTools, layerCommand, layerE2E},
}

// internalParents are the directories allowed directly under internal/
// that are layers rather than utilities.
var internalParents = []string{"internal/assembly", "internal/testsupport", "internal/tools"}

// TestLayers: every non-test import of the module follows mayImport, and
// the parents of internal/ are the layers (a utility has no sub-package:
// a group of packages is a layer, named for it).
func TestLayers(t *testing.T) {
	pkgs := packages(t)
	checked := 0
	for path, p := range pkgs {
		from := layerOf(path)
		for _, imp := range Internal(p.Imports) {
			to := layerOf(imp)
			checked++
			if !slices.Contains(mayImport[from], to) {
				t.Errorf("%s (%s) imports %s (%s): a %s package may import only %v", path, from, imp, to, from, mayImport[from])
			}
		}
		if rest, ok := strings.CutPrefix(path, "internal/"); ok && strings.Contains(rest, "/") {
			parent := "internal/" + rest[:strings.Index(rest, "/")]
			if !slices.Contains(internalParents, parent) {
				t.Errorf("%s: %s is neither a layer (%v) nor a utility (a utility is one package directly under internal/)", path, parent, internalParents)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d imports checked: the test no longer reads the module", checked)
	}
	// The rule is the one the page states: each layer is where the page says.
	for path, want := range map[string]string{
		"dlq": layerLibrary, "internal/promshare": layerUtility, "broker/internal/msgid": layerUtility,
		"internal/assembly/config": layerAssembly, "internal/testsupport/testenv": layerTestSupport,
		"internal/tools/bench": layerTools, "cmd/redrive": layerCommand, "e2e": layerE2E,
	} {
		if _, ok := pkgs[path]; !ok {
			t.Errorf("go list has no %s: update TestLayers", path)
		}
		if got := layerOf(path); got != want {
			t.Errorf("layerOf(%s) = %s, want %s", path, got, want)
		}
	}
}
