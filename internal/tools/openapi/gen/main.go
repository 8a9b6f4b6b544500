// Command gen writes the JSON copy of configs/openapi.yaml that dlq/admin
// embeds and serves. Run it through go generate ./dlq/admin.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/redrive/redrive/internal/tools/openapi"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	out := flag.String("out", "openapi.json", "the JSON file to write")
	flag.Parse()
	doc, err := os.ReadFile(filepath.Join(*root, openapi.Source))
	if err == nil {
		doc, err = openapi.JSON(doc)
	}
	if err == nil {
		err = os.WriteFile(*out, doc, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}
