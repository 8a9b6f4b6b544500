package docgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// regenerate is what a failure tells the reader to run.
const regenerate = "run `go generate ./internal/tools/docgen` from the repository root and commit the result"

// TestConfigurationReference fails when a configuration key has no doc
// comment, or when docs/configuration.md is not what the generator writes.
func TestConfigurationReference(t *testing.T) {
	want, err := ConfigReference(root)
	if err != nil {
		t.Fatal(err) // names the keys without a doc comment
	}
	got, err := os.ReadFile(filepath.Join(root, ConfigFile))
	if err != nil {
		t.Fatalf("%v: %s", err, regenerate)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale (first difference: %s): %s", ConfigFile, firstDiff(got, want), regenerate)
	}
}

// TestConfigKeys checks the walk itself on keys whose shape is known.
func TestConfigKeys(t *testing.T) {
	keys, err := ConfigKeys(root)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]Key{}
	for _, k := range keys {
		if k.Doc == "" {
			t.Errorf("%s: no doc", k.Path)
		}
		byPath[k.Path] = k
	}
	for path, want := range map[string]Key{
		"broker":                          {Type: "string", Default: "empty"},
		"rabbitmq.delay.resolution":       {Type: "duration", Default: "`1s`"},
		"kafka.brokers":                   {Type: "list of strings", Default: "empty"},
		"kafka.sasl":                      {Type: "section, optional", Default: "—"},
		"workers[]":                       {Type: "list", Default: "—"},
		"workers[].queue_ttl":             {Type: "duration", Default: "`5m`"},
		"workers[].retry.backoff":         {Type: "back-off", Default: "`\"1s -> 5s -> 30s -> 5m -> 30m\"`"},
		"workers[].retry.repeat_last":     {Type: "bool", Default: "`true`"},
		"workers[].dlq.retention":         {Type: "retention", Default: "`30d`"},
		"lag.thresholds.<topic>.critical": {Type: "int", Default: "`0`"},
	} {
		got, ok := byPath[path]
		if !ok {
			t.Errorf("%s: missing", path)
			continue
		}
		if got.Type != want.Type || got.Default != want.Default {
			t.Errorf("%s: type %q default %q, want %q %q", path, got.Type, got.Default, want.Type, want.Default)
		}
	}
	if d := byPath["rabbitmq.url"].Doc; !strings.HasPrefix(d, "`url` is ") {
		t.Errorf("rabbitmq.url: doc %q does not start with its key", d)
	}
}

// TestConfigUndocumented checks that a field without a doc comment is
// reported by its key.
func TestConfigUndocumented(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(root, "internal", "assembly", "config", "types.go"))
	if err != nil {
		t.Fatal(err)
	}
	// Drop the comment of workers[].topic.
	s := strings.Replace(string(src), "// Topic is the topic the worker reads; required, a legal topic name.\n", "", 1)
	if s == string(src) {
		t.Fatal("the comment of Worker.Topic moved: update this test")
	}
	if err := os.MkdirAll(filepath.Join(dir, "internal", "assembly", "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "internal", "assembly", "config", "types.go"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ConfigKeys(dir)
	if err == nil || !strings.Contains(err.Error(), "workers[].topic") {
		t.Fatalf("ConfigKeys without the doc of workers[].topic: %v, want an error naming it", err)
	}
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: has %q, generated %q", i+1, gl, wl)
		}
	}
	return "none"
}
