// Command gen regenerates the generated parts of the documentation:
// docs/configuration.md. Run it
// through go generate ./internal/docgen.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/redrive/redrive/internal/docgen"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	cfg, err := docgen.ConfigReference(root)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, docgen.ConfigFile), cfg, 0o644); err != nil {
		return err
	}
	return nil
}
