package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestDevBadInput(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--broker", "nats"}, `--broker "nats" is not kafka or `},
		{[]string{"--rate", "-1"}, "--rate -1 is not in [0, 10000] messages per second"},
		{[]string{"--rate", "NaN"}, "--rate NaN is not in [0, 10000]"},
		{[]string{"--kafka-port", "70000"}, "--kafka-port 70000 is not in [0, 65533]"},
		{[]string{"--kafka-port", "-1"}, "--kafka-port -1 is not in [0, 65533]"},
		{[]string{"--kafka-port", "x"}, `invalid value "x" for flag --kafka-port: "x" is not a port number`},
		{[]string{"--broker", "rabbitmq", "--kafka-port", "9092"}, "--kafka-port is for the embedded Kafka"},
		{[]string{"--prefix", "a.b"}, `--prefix "a.b" is not 1 to 100 characters of [a-zA-Z0-9_-]`},
		{[]string{"--crash-every", "-1s"}, "--crash-every -1s is negative"},
		{[]string{"--crash-every", "soon"}, `"soon" is not a duration`},
		{[]string{"--stall-every", "-1s"}, "--stall-every -1s is negative"},
		{[]string{"--token", "short"}, "--token: shorter than 8 characters"},
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
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	const token = "dev-test-token"
	d := startDaemon(t, "dev", "--listen", adminAddr, "--metrics-listen", metricsAddr, "--token", token,
		"--rate", "40", "--crash-every", "2s", "--stall-every", "1s", "--outage-every", "4s")
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

	// Dead letters reach the API. The first ones come from workers that
	// the tour stalls, pauses (outage) and crashes from their first
	// seconds, after their retries: under the load of the whole suite on
	// two cores that took over a minute once (CI of 5cd9626).
	var body string
	eventuallyWithin(t, 3*time.Minute, "dead letters are pending", func() bool {
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
	if row := fields(out, "payout-executor "); len(row) < 3 || row[2] != "RUNNING" && row[2] != "PAUSED" {
		t.Errorf("workers: payout-executor is neither RUNNING nor PAUSED by its planned outage:\n%s", out)
	}
	// The stalling worker reads stuck next to it, with its lag (WARNING;
	// CRITICAL when, on a busy machine, its lag also passes the critical
	// threshold before the stuck condition is read).
	eventually(t, "deal-timeout-worker reads stuck", func() bool {
		_, out, errOut = cli(t, "workers", "--config", cfgFile)
		row := fields(out, "deal-timeout-worker ")
		return len(row) > 3 && row[2] == "RUNNING" && (row[3] == "WARNING" || row[3] == "CRITICAL") && strings.Contains(out, "while lag is")
	}, func() string { return out + errOut })
	// payout-executor's downstream is down (--outage-every): its kill
	// switch pauses it.
	eventually(t, "payout-executor reads PAUSED by its kill switch", func() bool {
		_, out, errOut = cli(t, "workers", "--config", cfgFile)
		row := fields(out, "payout-executor ")
		return len(row) > 3 && row[2] == "PAUSED" && strings.Contains(out, "paused (kill_switch:")
	}, func() string { return out + errOut })

	// The console charts the samplers' history: instances by state on
	// the workers page, lag per group in records and seconds on the lag
	// page, lines once two samples were taken.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	if resp, err := browser.PostForm("http://"+adminAddr+"/login", url.Values{"token": {token}}); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("console login: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for path, want := range map[string][]string{
		"/workers": {`id="workers-chart"`, ">instances<", ">MISSING<"},
		"/lag":     {`id="lag-records-chart"`, `id="lag-seconds-chart"`, "payout-executor"},
	} {
		var page string
		eventually(t, "the console charts "+path, func() bool {
			resp, err := browser.Get("http://" + adminAddr + path)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			page = string(b)
			ok := resp.StatusCode == http.StatusOK && strings.Contains(page, "<polyline")
			for _, w := range want {
				ok = ok && strings.Contains(page, w)
			}
			return ok
		}, func() string { return page })
	}

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
// $RABBITMQ_URL under a prefix of its own: dead letters reach the API; a
// second dev with the same prefix refuses to start; Ctrl-C stops cleanly
// and deletes every exchange and queue it declared; with --keep they stay,
// listed with their messages, and the next run takes them over.
func TestDevRabbitMQ(t *testing.T) {
	url := testenv.RabbitMQ.URL() // before clearEnv, which unsets RABBITMQ_URL
	clearEnv(t)
	t.Setenv("RABBITMQ_URL", url)
	prefix := "dev-" + broker.NewMessageID()[:6]
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	const token = "dev-test-token"
	args := []string{"dev", "--broker", "rabbitmq", "--prefix", prefix, "--listen", adminAddr, "--metrics-listen", metricsAddr,
		"--token", token, "--crash-every", "0"}
	d := startDaemon(t, append(args, "--rate", "40")...)
	var cfgFile string
	eventually(t, "dev prints its tour on RabbitMQ", func() bool {
		if code, done := d.exited(); done {
			t.Fatalf("dev exited with %d:\n%s", code, d.stderr)
		}
		if m := regexp.MustCompile(`config +(\S+)`).FindStringSubmatch(d.stdout.String()); m != nil {
			cfgFile = m[1]
		}
		return strings.Contains(d.stdout.String(), "broker      RabbitMQ at ")
	}, func() string { return d.stdout.String() + d.stderr.String() })
	c, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := assembly.RabbitConfig(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	subs := c.Subscriptions()
	t.Cleanup(func() { _, _ = rabbit.Teardown(context.Background(), rc, subs...) })
	plan, err := rabbit.Plan(rc, subs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range plan {
		if decl.Kind != "binding" && decl.Kind != "exchange-binding" && !strings.HasPrefix(decl.Name, prefix+".") {
			t.Errorf("dev declares %s %s, not under its prefix %s", decl.Kind, decl.Name, prefix)
		}
	}

	var out, errOut string
	eventually(t, "dead letters are pending", func() bool {
		_, out, errOut = cli(t, "dlq", "ls", "--server", "http://"+adminAddr, "--token", token)
		for _, q := range []string{prefix + ".escrow.commands.payout-executor.dlq ", prefix + ".deal.deadlines.deal-timeout-worker.dlq "} {
			if row := fields(out, q); len(row) > 2 && row[2] != "0" {
				return true
			}
		}
		return false
	}, func() string { return out + errOut + d.stderr.String() })

	// A second dev on the same prefix refuses to start.
	code, _, errOut := cli(t, "dev", "--broker", "rabbitmq", "--prefix", prefix, "--listen", testenv.ClosedAddr(t), "--metrics-listen", testenv.ClosedAddr(t), "--token", token)
	if code != exitFailure || !strings.Contains(errOut, "another redrive dev is running with prefix") {
		t.Errorf("a second dev with the same prefix: exit %d, %s", code, errOut)
	}

	if code := d.stop(t); code != exitOK {
		t.Fatalf("dev exit status %d after Ctrl-C, want 0:\n%s", code, d.stderr)
	}
	if !regexp.MustCompile(`deleted from RabbitMQ what it declared: \d+ queues \(holding \d+ messages\) and \d+ exchanges, all named ` + prefix + `\.\*`).MatchString(d.stdout.String()) {
		t.Errorf("no word of the clean-up:\n%s", d.stdout)
	}
	if left := existing(t, plan); len(left) > 0 {
		t.Errorf("left on RabbitMQ after the stop: %v", left)
	}

	// --keep keeps everything, says so, and the next run takes it over.
	d = startDaemon(t, append(args, "--rate", "0", "--keep")...)
	eventually(t, "dev --keep starts", func() bool {
		if code, done := d.exited(); done {
			t.Fatalf("dev exited with %d:\n%s", code, d.stderr)
		}
		return strings.Contains(d.stdout.String(), "No sample traffic (--rate 0)")
	}, func() string { return d.stdout.String() + d.stderr.String() })
	if code := d.stop(t); code != exitOK {
		t.Fatalf("dev --keep exit status %d, want 0:\n%s", code, d.stderr)
	}
	if !strings.Contains(d.stdout.String(), "kept on RabbitMQ (--keep): ") || !strings.Contains(d.stdout.String(), prefix+".escrow.commands.payout-executor.dlq (0)") {
		t.Errorf("--keep does not say what it kept:\n%s", d.stdout)
	}
	if left := existing(t, plan); len(left) == 0 {
		t.Errorf("--keep kept nothing")
	}
}

// existing returns the queues and exchanges of plan that exist.
func existing(t *testing.T, plan []rabbit.Declaration) []string {
	t.Helper()
	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	defer conn.Close()
	var out []string
	for _, d := range plan {
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		switch d.Kind {
		case "queue":
			_, err = ch.QueueDeclarePassive(d.Name, true, false, false, false, nil)
		case "exchange":
			err = ch.ExchangeDeclarePassive(d.Name, d.Type, true, false, false, false, nil)
		default:
			err = errors.New("not looked up")
		}
		if err == nil {
			out = append(out, d.Kind+" "+d.Name)
			_ = ch.Close()
		}
	}
	return out
}

// The tour's binary path runs: "redrive" only when that is what $PATH
// finds, else a path to this executable (relative below the working
// directory, else absolute).
func TestSelfPath(t *testing.T) {
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	t.Setenv("PATH", t.TempDir()) // no redrive on it
	p := selfPath()
	abs := p
	if !filepath.IsAbs(p) {
		wd, _ := os.Getwd()
		abs = filepath.Join(wd, p)
	}
	if abs != exe {
		t.Errorf("selfPath() = %q, not this executable %q", p, exe)
	}
	t.Chdir(filepath.Dir(exe))
	if got := selfPath(); got != filepath.Base(exe) {
		t.Errorf("from the executable's directory selfPath() = %q, want %q", got, filepath.Base(exe))
	}
}
