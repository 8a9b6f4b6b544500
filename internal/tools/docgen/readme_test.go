package docgen

import (
	"os"
	"path/filepath"
	"testing"
)

// readmeMax is the README's budget in bytes: it says what redrive is,
// how to run and test it, a quick start per broker and where to read on;
// reference material belongs in docs/ (issue 13).
const readmeMax = 15_000

// TestReadmeShort fails when the README outgrows its budget.
func TestReadmeShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > readmeMax {
		t.Errorf("README.md is %d bytes, over its budget of %d: move reference material to the docs/ page a reader would look in", len(b), readmeMax)
	}
}
