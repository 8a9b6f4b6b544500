package lag

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const dashboardPath = "../configs/grafana/redrive.json"

// collectQueries walks a decoded JSON document and returns every PromQL
// expression in it: the "expr" of panel targets and the "query" of
// template variables (label_values(metric, label) is reduced to metric).
func collectQueries(v any, path string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			p := path + "." + k
			if s, ok := c.(string); ok && (k == "expr" || k == "query" && strings.Contains(path, "templating")) {
				if m := labelValues.FindStringSubmatch(s); m != nil {
					s = m[1]
				}
				if s != "prometheus" { // the data source variable's plugin type
					out[p] = s
				}
				continue
			}
			collectQueries(c, p, out)
		}
	case []any:
		for i, c := range x {
			collectQueries(c, path+"["+strconv.Itoa(i)+"]", out)
		}
	}
}

var labelValues = regexp.MustCompile(`^label_values\(\s*([^,()]+?)\s*,`)

// The dashboard parses, every panel queries something, every expression
// names only exported metrics, and every exported metric is on it.
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s is not JSON: %v", dashboardPath, err)
	}
	if dash["title"] != "redrive" || dash["uid"] == "" {
		t.Errorf("title %v, uid %v", dash["title"], dash["uid"])
	}
	panels, _ := dash["panels"].([]any)
	if len(panels) == 0 {
		t.Fatal("no panels")
	}
	ids := map[float64]bool{}
	for _, p := range panels {
		pm := p.(map[string]any)
		id, _ := pm["id"].(float64)
		if ids[id] {
			t.Errorf("panel id %v used twice", id)
		}
		ids[id] = true
		if pm["type"] == "row" {
			continue
		}
		targets, _ := pm["targets"].([]any)
		if len(targets) == 0 {
			t.Errorf("panel %q has no query", pm["title"])
		}
		if d, _ := pm["description"].(string); d == "" {
			t.Errorf("panel %q has no description", pm["title"])
		}
	}

	// Worker series carry worker_instance; instance is the scrape target.
	if strings.Contains(string(data), "{{instance}}") {
		t.Error("a legend names {{instance}}, the scrape target; worker series carry {{worker_instance}}")
	}

	queries := map[string]string{}
	collectQueries(dash, "", queries)
	used := map[string]bool{}
	for path, q := range queries {
		names := metricNames(q)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", path, q)
		}
		for _, n := range names {
			if !knownMetric(n) {
				t.Errorf("%s: %q names %q, which redrive does not export", path, q, n)
			}
			used[strings.TrimSuffix(n, "_bucket")] = true
		}
	}
	for _, m := range exportedMetrics {
		if !used[m] {
			t.Errorf("metric %s is on no panel", m)
		}
	}
	if !slices.Contains(exportedMetrics, "worker_handler_duration_seconds") || len(queries) < len(exportedMetrics) {
		t.Errorf("only %d queries", len(queries))
	}
}
