// Command gen regenerates the generated parts of the documentation:
// docs/configuration.md, the metrics list of docs/monitoring.md and the
// import diagram of docs/architecture.md. Run it through go generate
// ./internal/tools/docgen.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redrive/redrive/internal/tools/docgen"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, err)
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	page := filepath.Join(root, docgen.MetricsFile)
	old, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	updated, err := docgen.UpdateMetrics(ctx, old)
	if err != nil {
		return err
	}
	if err := os.WriteFile(page, updated, 0o644); err != nil {
		return err
	}
	pkgs, err := docgen.ListPackages(ctx, root)
	if err != nil {
		return err
	}
	arch := filepath.Join(root, docgen.ImportsFile)
	if old, err = os.ReadFile(arch); err != nil {
		return err
	}
	if updated, err = docgen.UpdateImports(old, pkgs); err != nil {
		return err
	}
	return os.WriteFile(arch, updated, 0o644)
}
