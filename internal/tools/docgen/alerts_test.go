package docgen

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

var (
	seriesSelector = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}$`)
	seriesLabel    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)
)

// TestAlertTestSeries: the promtool unit tests of the alert rules feed
// them only series as Prometheus stores them from redrive's collectors
// under the documented scrape config: a metric a collector describes
// (a histogram's _bucket, _sum or _count), exactly its label names (le on
// buckets), plus the target's job and instance. A rule tested on a label
// the exporter does not emit (say, a worker labelled instance) fails here.
func TestAlertTestSeries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ms, err := Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string][]string{}
	histogram := map[string]bool{}
	for _, m := range ms {
		labels[m.Name] = m.Labels
		histogram[m.Name] = m.Type == "histogram"
	}
	data, err := os.ReadFile(filepath.Join(root, "configs", "prometheus", "alerts_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			InputSeries []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(data, &tests); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tc := range tests.Tests {
		for _, in := range tc.InputSeries {
			n++
			m := seriesSelector.FindStringSubmatch(strings.TrimSpace(in.Series))
			if m == nil {
				t.Errorf("series %q: not name{labels}", in.Series)
				continue
			}
			name, base := m[1], m[1]
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suffix); ok && histogram[b] {
					base = b
				}
			}
			exported, ok := labels[base]
			if !ok {
				t.Errorf("series %q: %s is not a metric redrive registers", in.Series, name)
				continue
			}
			want := append(slices.Clone(exported), "job", "instance")
			if strings.HasSuffix(name, "_bucket") && base != name {
				want = append(want, "le")
			}
			var got []string
			for _, l := range seriesLabel.FindAllStringSubmatch(m[2], -1) {
				got = append(got, l[1])
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("series %q: labels %v, want %v (the collector's, plus job and instance)", in.Series, got, want)
			}
		}
	}
	if n == 0 {
		t.Fatal("no input series read from alerts_test.yml")
	}
}
