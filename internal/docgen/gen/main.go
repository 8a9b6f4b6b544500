// Command gen regenerates the generated parts of the documentation:
// docs/configuration.md and the metrics list of docs/monitoring.md. Run it
// through go generate ./internal/docgen.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redrive/redrive/internal/docgen"
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
	return os.WriteFile(page, updated, 0o644)
}
