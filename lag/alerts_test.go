package lag

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const rulesDir = "../configs/prometheus"

// requiredAlerts are the alerts the design asks for; alerts.yml may hold
// more.
var requiredAlerts = []string{
	"WorkerHeartbeatMissing", "WorkerStuckProcessing", "WorkerShutdownStuck", "NoActiveWorkers",
	"DLQFinancial", "DLQNonFinancial", "DLQNotKept", "DLQProcessingSlow",
	"ConsumerLagCritical", "ConsumerLagWarning", "DLQHighRate", "DLQBacklog",
}

// promtool finds promtool on PATH (Debian's prometheus package, see `make
// tools`); the test fails (it does not skip) when it is missing.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not on PATH: install Debian's prometheus package (apt-get install prometheus, or `make tools`): %v", err)
	}
	return p
}

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = rulesDir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}

// TestAlertRulesPromtool checks the rules and runs their unit tests
// (series in, expected alerts out) with promtool.
func TestAlertRulesPromtool(t *testing.T) {
	runPromtool(t, "check", "rules", "alerts.yml")
	runPromtool(t, "test", "rules", "alerts_test.yml")
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type ruleTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string           `yaml:"alertname"`
			ExpAlerts []map[string]any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rulesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// prometheusSeries are the series Prometheus writes itself that a rule may
// read: ALERTS, an alert's own firing history (DLQFinancial counts only
// the arrivals it has not fired for).
var prometheusSeries = []string{"ALERTS"}

// TestAlertRulesShape holds what promtool does not: the required alerts
// exist, each has a severity and summary/description/runbook annotations,
// names only exported metrics, and has a unit test in which it fires.
func TestAlertRulesShape(t *testing.T) {
	var rules ruleFile
	readYAML(t, "alerts.yml", &rules)
	var tests ruleTests
	readYAML(t, "alerts_test.yml", &tests)

	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			if sev := r.Labels["severity"]; sev != "critical" && sev != "warning" {
				t.Errorf("%s: severity label %q, want critical or warning", r.Alert, sev)
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			names := metricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: expression %q names no metric", r.Alert, r.Expr)
			}
			for _, n := range names {
				if !knownMetric(n) && !slices.Contains(prometheusSeries, n) {
					t.Errorf("%s: expression names %q, which redrive does not export", r.Alert, n)
				}
			}
			if !fires[r.Alert] {
				t.Errorf("%s: no unit test in alerts_test.yml expects it to fire", r.Alert)
			}
		}
	}
	for _, want := range requiredAlerts {
		if !slices.Contains(alerts, want) {
			t.Errorf("alerts.yml lacks %s", want)
		}
	}
}
