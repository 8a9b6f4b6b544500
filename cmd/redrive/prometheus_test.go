package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// The shipped Prometheus files: the documented scrape config and the rules.
var (
	promConfigFile = filepath.Join("..", "..", "configs", "prometheus", "prometheus.yml")
	promRulesFile  = filepath.Join("..", "..", "configs", "prometheus", "alerts.yml")
)

// promServer is a real Prometheus (Debian's prometheus package) started for
// one test on a loopback port with a data directory of its own, stopped
// (killed if it lingers) when the test ends.
type promServer struct {
	url string
	log *testenv.Buffer
}

// shortFor is the `for:` of every rule in the live test.
const shortFor = "1s"

var forLine = regexp.MustCompile(`(?m)^(\s*for:\s*)\S+\s*$`)

// startPrometheus runs prometheus with the documented scrape config
// (prometheus.yml) pointed at target, 1 s scrape and evaluation
// intervals, and a copy of alerts.yml where only `for:` is shortened.
func startPrometheus(t *testing.T, target string) *promServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus is not on PATH: install Debian's prometheus package (apt-get install prometheus, or `make tools`): %v", err)
	}
	dir := t.TempDir()
	rules, err := os.ReadFile(promRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	short := forLine.ReplaceAll(rules, []byte("${1}"+shortFor))
	if n := len(forLine.FindAll(rules, -1)); n == 0 {
		t.Fatalf("%s: no for: to shorten", promRulesFile)
	}
	rulesPath := filepath.Join(dir, "alerts.yml")
	if err := os.WriteFile(rulesPath, short, 0o600); err != nil {
		t.Fatal(err)
	}

	raw, err := os.ReadFile(promConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%s: %v", promConfigFile, err)
	}
	cfg["global"] = map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"}
	cfg["rule_files"] = []string{rulesPath}
	scrapes, _ := cfg["scrape_configs"].([]any)
	if len(scrapes) != 1 {
		t.Fatalf("%s: want one scrape config, got %d", promConfigFile, len(scrapes))
	}
	job := scrapes[0].(map[string]any)
	statics := job["static_configs"].([]any)
	statics[0].(map[string]any)["targets"] = []string{target}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, out, 0o600); err != nil {
		t.Fatal(err)
	}

	addr := testenv.ClosedAddr(t)
	p := &promServer{url: "http://" + addr, log: &testenv.Buffer{}}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn", "--storage.tsdb.retention.time=1h")
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus log:\n%s", p.log)
		}
	})
	eventually(t, "prometheus ready", func() bool {
		select {
		case <-exited:
			t.Fatalf("prometheus exited:\n%s", p.log)
		default:
		}
		code, _ := httpGet(p.url + "/-/ready")
		return code == http.StatusOK
	}, p.log.String)
	return p
}

// promAlert is one alert of /api/v1/alerts.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	ActiveAt    time.Time         `json:"activeAt"`
	Value       string            `json:"value"`
}

func (a promAlert) String() string {
	return fmt.Sprintf("%s %v %s since %s", a.Labels["alertname"], a.Labels, a.State, a.ActiveAt.Format(time.RFC3339Nano))
}

// alerts returns the alerts Prometheus holds now, pending and firing.
func (p *promServer) alerts(t *testing.T) []promAlert {
	t.Helper()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	p.get(t, "/api/v1/alerts", &body)
	return body.Data.Alerts
}

// query evaluates expr now and returns its vector as label sets with
// their values.
func (p *promServer) query(t *testing.T, expr string) []promSample {
	t.Helper()
	var body struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	p.get(t, "/api/v1/query?query="+url.QueryEscape(expr), &body)
	out := make([]promSample, 0, len(body.Data.Result))
	for _, r := range body.Data.Result {
		v, _ := r.Value[1].(string)
		out = append(out, promSample{Labels: r.Metric, Value: v})
	}
	return out
}

type promSample struct {
	Labels map[string]string
	Value  string
}

func (p *promServer) get(t *testing.T, path string, v any) {
	t.Helper()
	code, body := httpGet(p.url + path)
	if code != http.StatusOK {
		t.Fatalf("prometheus GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("prometheus GET %s: %v: %s", path, err, body)
	}
}

// find returns the alerts named name in state ("" = any) whose labels
// include match.
func find(alerts []promAlert, name, state string, match map[string]string) []promAlert {
	var out []promAlert
next:
	for _, a := range alerts {
		if a.Labels["alertname"] != name || (state != "" && a.State != state) {
			continue
		}
		for k, v := range match {
			if a.Labels[k] != v {
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}

// waitAlert waits until alert name with labels match is firing and
// returns it.
func (p *promServer) waitAlert(t *testing.T, name string, match map[string]string) promAlert {
	t.Helper()
	var got []promAlert
	var all []promAlert
	poll(t, fmt.Sprintf("%s%v firing", name, match), func() bool {
		all = p.alerts(t)
		got = find(all, name, "firing", match)
		return len(got) == 1
	}, func() string { return describeAlerts(all) })
	return got[0]
}

// waitResolved waits until no alert name with labels match is pending or
// firing.
func (p *promServer) waitResolved(t *testing.T, name string, match map[string]string) {
	t.Helper()
	var all []promAlert
	poll(t, fmt.Sprintf("%s%v resolved", name, match), func() bool {
		all = p.alerts(t)
		return len(find(all, name, "", match)) == 0
	}, func() string { return describeAlerts(all) })
}

func describeAlerts(all []promAlert) string {
	var b strings.Builder
	b.WriteString("alerts:\n")
	for _, a := range all {
		b.WriteString("  " + a.String() + "\n")
	}
	return b.String()
}

// poll checks cond every 200 ms (a Prometheus evaluates every second)
// until it holds; the test fails after 45 s with what describe says.
func poll(t *testing.T, what string, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 45s\n%s", what, describe())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
