package lag

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redrive/redrive/heartbeat"
)

// exportedMetrics are the only metrics the alert rules and the dashboard
// may name: this package's, the heartbeat package's, and those the DLQ
// keeper and the workers produce (DESIGN.md, "Metrics"), and the
// exactly-once store's that serve exports with exactly_once enabled.
var exportedMetrics = []string{
	heartbeat.MetricHeartbeatTimestamp,
	heartbeat.MetricWorkerStatus,
	heartbeat.MetricRunningInstances,
	heartbeat.MetricWorkerPaused,
	"worker_kill_switch_trips_total",
	MetricKafkaLag,
	MetricKafkaLagPartition,
	MetricKafkaLagSeconds,
	MetricConsumerStatus,
	MetricQueueDepth,
	MetricQueueConsumers,
	MetricUp,
	"worker_dlq_messages_total",
	"worker_dlq_replayed_total",
	"worker_retry_total",
	"redrive_dlq_pending",
	"worker_handler_duration_seconds",
	"worker_dlq_processing_seconds",
	"redrive_outbox_oldest_unsent_seconds",
	"redrive_outbox_stalled",
	"redrive_outbox_up",
	"redrive_outbox_unsent",
	"redrive_outbox_published_total",
	"redrive_inbox_duplicates_total",
}

// histograms are the exported histograms: their series are name_bucket
// (with le), name_sum and name_count.
var histograms = []string{"worker_handler_duration_seconds", "worker_dlq_processing_seconds"}

// knownMetric reports whether name is an exported metric or a series of
// the handler latency histogram.
func knownMetric(name string) bool {
	if slices.Contains(exportedMetrics, name) {
		return true
	}
	_, ok := baseMetric(name)
	return ok
}

// baseMetric returns the exported metric a series name belongs to (a
// histogram's for its _bucket, _sum and _count series) and whether it is
// one.
func baseMetric(name string) (string, bool) {
	if slices.Contains(exportedMetrics, name) {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(histograms, base) {
			return base, true
		}
	}
	return "", false
}

var (
	promqlStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlMatchers = regexp.MustCompile(`\{[^{}]*\}|\[[^\[\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan", "atan2"}
)

// metricNames returns the metric names a PromQL expression selects: every
// identifier that is not a function, a keyword, a label, a duration or a
// number. It is not a parser, but enough for the expressions we ship.
func metricNames(expr string) []string {
	s := promqlStrings.ReplaceAllString(expr, `""`)
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promqlIdent.FindAllStringIndex(s, -1) {
		id := s[loc[0]:loc[1]]
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.' || s[loc[0]-1] == '$') {
			continue // a number's exponent, a duration unit, a Grafana variable
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function
		}
		if slices.Contains(promqlKeywords, strings.ToLower(id)) {
			continue
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`kafka_consumer_lag`, []string{"kafka_consumer_lag"}},
		{`histogram_quantile(0.95, sum by (worker, le) (rate(worker_handler_duration_seconds_bucket{worker=~"$type"}[5m])))`, []string{"worker_handler_duration_seconds_bucket"}},
		{"(time() - a_b > 60)\nunless on (type, instance)\n(c{condition=~\"x|y\"} == 1)", []string{"a_b", "c"}},
		{`x and on (group, topic) (y{level="critical"} == 1)`, []string{"x", "y"}},
		{`sum by (dlq) (rate(d{s!="a{b}"}[5m] offset 1h)) * 60 > 1e3`, []string{"d"}},
		{`label_replace(up, "a", "$1", "b", "(.*)")`, []string{"up"}},
		{`m1 / ignoring(le) group_left m2`, []string{"m1", "m2"}},
	}
	for _, tt := range tests {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%q) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}
