package main

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestDevBadInput(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--broker", "nats"}, `--broker "nats" is not kafka or rabbitmq`},
		{[]string{"--rate", "0"}, "--rate 0 is not in (0, 10000] messages per second"},
		{[]string{"--rate", "NaN"}, "--rate NaN is not in (0, 10000]"},
		{[]string{"--crash-every", "-1s"}, "--crash-every -1s is negative"},
		{[]string{"--crash-every", "soon"}, `"soon" is not a duration`},
		{[]string{"--stall-every", "-1s"}, "--stall-every -1s is negative"},
		{[]string{"--token", "short"}, "--token is shorter than 8 characters"},
		{[]string{"--listen", "8080"}, `--listen "8080" is not host:port`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := cli(t, append([]string{"dev"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 || out != "" {
				t.Fatalf("dev %v: exit %d, stderr %q, stdout %q; want exit 2 and one line with %q", tt.args, code, errOut, out, tt.want)
			}
		})
	}
}

// `redrive dev` on the embedded Kafka: the tour is printed, the sample
// workers produce retries and dead letters that the keeper stores and the
// API lists, the console answers, the crashing worker reads missing and
// the stalling one stuck, the CLI works on the printed configuration, and
// Ctrl-C stops everything cleanly and removes the configuration file.
func TestDevKafka(t *testing.T) {
	clearEnv(t)
	adminAddr, metricsAddr := freeAddr(t), freeAddr(t)
	const token = "dev-test-token"
	d := startDaemon(t, "dev", "--listen", adminAddr, "--metrics-listen", metricsAddr, "--token", token,
		"--rate", "40", "--crash-every", "2s", "--stall-every", "1s")
	var cfgFile string
	eventually(t, "dev prints its tour", func() bool {
		if code, done := d.exited(); done {
			t.Fatalf("dev exited with %d:\n%s", code, d.stderr)
		}
		m := regexp.MustCompile(`config +(\S+)`).FindStringSubmatch(d.stdout.String())
		if m != nil {
			cfgFile = m[1]
		}
		return m != nil && strings.Contains(d.stdout.String(), "http://"+adminAddr+"/")
	}, func() string { return d.stdout.String() + d.stderr.String() })

	// Dead letters reach the API.
	var body string
	eventually(t, "dead letters are pending", func() bool {
		req, _ := http.NewRequest(http.MethodGet, "http://"+adminAddr+"/internal/v1/dlq", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var got struct {
			DLQs []struct {
				DLQ     string `json:"dlq"`
				Pending int    `json:"pending"`
			} `json:"dlqs"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&got) != nil {
			return false
		}
		pending := 0
		for _, q := range got.DLQs {
			pending += q.Pending
		}
		body = strings.TrimSpace(strings.Join(strings.Fields(string(mustJSON(got))), " "))
		return pending > 0
	}, func() string { return body + "\n" + d.stderr.String() })

	// Retries are counted; the console answers.
	eventually(t, "retries are exported", func() bool {
		code, out := httpGet("http://" + metricsAddr + "/metrics")
		return code == http.StatusOK && regexp.MustCompile(`(?m)^worker_retry_total\{[^}]*\} [1-9]`).MatchString(out)
	}, func() string { _, out := httpGet("http://" + metricsAddr + "/metrics"); return out })
	if code, page := httpGet("http://" + adminAddr + "/login"); code != http.StatusOK || !strings.Contains(page, "<form") {
		t.Errorf("GET /login = %d, want the login form:\n%.300s", code, page)
	}

	// The crashing worker reads missing, and the CLI reads the printed
	// configuration.
	var out, errOut string
	eventually(t, "reconciliation-worker reads missing", func() bool {
		_, out, errOut = cli(t, "workers", "--config", cfgFile)
		row := fields(out, "reconciliation-worker ")
		return len(row) > 3 && row[2] == "MISSING" && row[3] == "CRITICAL"
	}, func() string { return out + errOut })
	if row := fields(out, "payout-executor "); len(row) < 3 || row[2] != "RUNNING" {
		t.Errorf("workers: payout-executor is not RUNNING:\n%s", out)
	}
	// The stalling worker reads stuck next to it, with its lag.
	eventually(t, "deal-timeout-worker reads stuck", func() bool {
		_, out, errOut = cli(t, "workers", "--config", cfgFile)
		row := fields(out, "deal-timeout-worker ")
		return len(row) > 3 && row[2] == "RUNNING" && row[3] == "WARNING" && strings.Contains(out, "while lag is")
	}, func() string { return out + errOut })

	if code := d.stop(t); code != exitOK {
		t.Fatalf("dev exit status %d after Ctrl-C, want 0:\n%s", code, d.stderr)
	}
	if !strings.Contains(d.stdout.String(), "redrive dev: stopped after publishing") {
		t.Errorf("no goodbye line:\n%s", d.stdout)
	}
	if _, err := os.Stat(cfgFile); !os.IsNotExist(err) {
		t.Errorf("the configuration file %s is still there after the stop (err %v)", cfgFile, err)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// `redrive dev --broker rabbitmq` runs the same on the RabbitMQ at
// $RABBITMQ_URL: dead letters reach the API, and Ctrl-C stops cleanly.
func TestDevRabbitMQ(t *testing.T) {
	url := rabbitURL() // before clearEnv, which unsets RABBITMQ_URL
	clearEnv(t)
	t.Setenv("RABBITMQ_URL", url)
	adminAddr, metricsAddr := freeAddr(t), freeAddr(t)
	const token = "dev-test-token"
	d := startDaemon(t, "dev", "--broker", "rabbitmq", "--listen", adminAddr, "--metrics-listen", metricsAddr,
		"--token", token, "--rate", "40", "--crash-every", "0")
	eventually(t, "dev prints its tour on RabbitMQ", func() bool {
		if code, done := d.exited(); done {
			t.Fatalf("dev exited with %d:\n%s", code, d.stderr)
		}
		return strings.Contains(d.stdout.String(), "broker      RabbitMQ at ")
	}, func() string { return d.stdout.String() + d.stderr.String() })
	var out, errOut string
	eventually(t, "dead letters are pending", func() bool {
		_, out, errOut = cli(t, "dlq", "ls", "--server", "http://"+adminAddr, "--token", token)
		for _, q := range []string{"escrow.commands.payout-executor.dlq ", "deal.deadlines.deal-timeout-worker.dlq "} {
			if row := fields(out, q); len(row) > 2 && row[2] != "0" {
				return true
			}
		}
		return false
	}, func() string { return out + errOut + d.stderr.String() })
	if code := d.stop(t); code != exitOK {
		t.Fatalf("dev exit status %d after Ctrl-C, want 0:\n%s", code, d.stderr)
	}
}
