package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The example configurations shipped in configs/.
var (
	exampleRabbitMQ = filepath.Join("..", "..", "configs", "redrive.yaml")
	exampleKafka    = filepath.Join("..", "..", "configs", "kafka.yaml")
)

// cli runs redrive in-process and returns its exit status and output.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeConfig writes a configuration file and returns its path.
func writeConfig(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "redrive.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// clearEnv unsets the variables the examples and the CLI read.
func clearEnv(t *testing.T) {
	for _, v := range []string{"REDRIVE_CONFIG", "RABBITMQ_URL", "KAFKA_BROKERS", "REDIS_ADDR", "REDIS_PASSWORD", "DATABASE_URL", "REDRIVE_ADMIN_TOKEN"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
}

func TestVersion(t *testing.T) {
	code, out, errOut := cli(t, "version")
	if code != exitOK || !strings.HasPrefix(out, "redrive ") || strings.Count(out, "\n") != 1 || errOut != "" {
		t.Fatalf("version: %d %q %q", code, out, errOut)
	}
	version = "v1.2.3"
	t.Cleanup(func() { version = "" })
	if _, out, _ := cli(t, "version"); !strings.HasPrefix(out, "redrive v1.2.3 ") {
		t.Errorf("version with -ldflags: %q", out)
	}
	if code, _, errOut := cli(t, "version", "extra"); code != exitUsage || errOut != "redrive: version: unexpected argument \"extra\"\n" {
		t.Errorf("version extra: %d %q", code, errOut)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		code, out, errOut := cli(t, args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%v: %d %q", args, code, errOut)
		}
		for _, want := range []string{"Usage:", "config check", "version", "help", "--config FILE", "Exit status", "topology apply", "publish",
			"serve", "exporter", "workers", "lag", "dlq ls", "dlq show", "dlq replay", "dlq replay-all", "dlq discard", "dlq jobs", "dlq cancel", "bench", "dev "} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: usage lacks %q:\n%s", args, want, out)
			}
		}
	}
	// No arguments: usage on stderr, bad input.
	if code, out, errOut := cli(t); code != exitUsage || out != "" || !strings.Contains(errOut, "Usage:") {
		t.Errorf("no args: %d %q %q", code, out, errOut)
	}
}

func TestCommandHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"config", "check", "--help"}, []string{"redrive config check [flags]", "--config FILE", "-h, --help"}},
		{[]string{"config", "check", "-h"}, []string{"redrive config check [flags]"}},
		{[]string{"version", "--help"}, []string{"redrive version [flags]"}},
		{[]string{"help", "config", "check"}, []string{"redrive config check [flags]", "secrets masked"}},
		{[]string{"help", "config"}, []string{"redrive config <command>", "config check"}},
		{[]string{"config", "--help"}, []string{"redrive config <command>", "config check"}},
		{[]string{"help", "version"}, []string{"redrive version [flags]"}},
	}
	for _, tt := range tests {
		code, out, errOut := cli(t, tt.args...)
		if code != exitOK || errOut != "" {
			t.Errorf("%v: %d %q", tt.args, code, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tt.args, w, out)
			}
		}
	}
}

func TestBadUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `redrive: unknown command "frobnicate" (run 'redrive help')` + "\n"},
		{[]string{"config"}, "redrive: config: missing subcommand (config check)\n"},
		{[]string{"config", "chek"}, `redrive: unknown command "config chek" (config check)` + "\n"},
		{[]string{"config", "check", "--verbose"}, "redrive: config check: unknown flag --verbose (run 'redrive config check --help')\n"},
		{[]string{"config", "check", "--confg", "x.yaml"}, "redrive: config check: unknown flag --confg; did you mean --config? (run 'redrive config check --help')\n"},
		{[]string{"dev", "-no-sample"}, "redrive: dev: unknown flag --no-sample; did you mean --no-samples? (run 'redrive dev --help')\n"},
		{[]string{"dev", "--rate"}, "redrive: dev: flag needs an argument: --rate (run 'redrive dev --help')\n"},
		{[]string{"dev", "--rate", "fast"}, "redrive: dev: invalid value \"fast\" for flag --rate: parse error (run 'redrive dev --help')\n"},
		{[]string{"dlq", "ls", "q", "--limt", "5"}, "redrive: dlq ls: unknown flag --limt; did you mean --limit? (run 'redrive dlq ls --help')\n"},
		{[]string{"config", "check", "extra.yaml"}, `redrive: config check: unexpected argument "extra.yaml"` + "\n"},
		{[]string{"help", "frobnicate"}, `redrive: help: unknown command "frobnicate" (run 'redrive help')` + "\n"},
		{[]string{"help", "version", "now"}, `redrive: help: unknown command "version now" (run 'redrive help')` + "\n"},
	}
	for _, tt := range tests {
		code, out, errOut := cli(t, tt.args...)
		if code != exitUsage || out != "" || errOut != tt.want {
			t.Errorf("%v: %d %q %q; want exit 2 and %q", tt.args, code, out, errOut, tt.want)
		}
	}
}

func TestConfigCheckExamples(t *testing.T) {
	clearEnv(t)
	for _, path := range []string{exampleRabbitMQ, exampleKafka} {
		code, out, errOut := cli(t, "config", "check", "--config", path)
		if code != exitOK || errOut != "" {
			t.Fatalf("%s: exit %d, stderr %q", path, code, errOut)
		}
		for _, want := range []string{"# " + path + ": valid", "workers:", "name: payout-executor", "backoff: 1s -> 5s -> 30s -> 5m -> 30m", "retention: forever", "queue_ttl: 5m"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", path, want, out)
			}
		}
		if strings.Contains(out, "guest:guest") || strings.Contains(out, "redrive:redrive@") {
			t.Errorf("%s: a URL password is printed:\n%s", path, out)
		}
		// Effective values, not zero values: the Kafka client's defaults.
		for _, want := range []string{"client_id: redrive", "commit_interval: 1s", "session_timeout: 45s"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks the effective %q:\n%s", path, want, out)
			}
		}
	}
}

func TestConfigCheckDefaultPath(t *testing.T) {
	clearEnv(t)
	t.Setenv("REDRIVE_CONFIG", exampleKafka)
	code, out, errOut := cli(t, "config", "check")
	if code != exitOK || !strings.Contains(out, "broker: kafka") {
		t.Errorf("$REDRIVE_CONFIG: %d %q", code, errOut)
	}
	os.Unsetenv("REDRIVE_CONFIG")
	// Run from a directory without configs/redrive.yaml.
	t.Chdir(t.TempDir())
	code, _, errOut = cli(t, "config", "check")
	if code != exitUsage || !strings.HasPrefix(errOut, "redrive: config check: load config: open configs/redrive.yaml: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("default path: %d %q", code, errOut)
	}
}

func TestConfigCheckProblems(t *testing.T) {
	clearEnv(t)
	path := writeConfig(t, `broker: rabbitmq
workers:
  - name: payout-executor
    topic: escrow.commands
    retry:
      max_retries: -1
      backof: "1s -> 5s"
  - name: post-scheduler
    topic: delivery.commands
    queue_ttl: 5x
    retry: {backoff: "1s -> 5x -> -2s"}
`)
	code, out, errOut := cli(t, "config", "check", "--config", path)
	want := []string{
		"redrive: config check: workers[0].retry.max_retries: -1 is negative (unlimited retries must be explicit: set unlimited: true)",
		`redrive: config check: workers[0].retry.backof: unknown key (line 7); did you mean "backoff"?`,
		`redrive: config check: workers[1].queue_ttl: "5x" is not a duration`,
		`redrive: config check: workers[1].retry.backoff: step 2: "5x" is not a duration`,
		`redrive: config check: workers[1].retry.backoff: step 3: "-2s" is negative`,
	}
	if code != exitUsage || out != "" {
		t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
	}
	if got := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, strings.Join(want, "\n"))
	}

	path = writeConfig(t, "broker: rabbitmq\nworkers: [{name: w, topic: t\n")
	code, _, errOut = cli(t, "config", "check", "--config", path)
	if code != exitUsage || !strings.HasPrefix(errOut, "redrive: config check: "+path+": invalid configuration: yaml: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("syntax error: %d %q", code, errOut)
	}
}

func TestConfigCheckNeverPrintsSecrets(t *testing.T) {
	clearEnv(t)
	t.Setenv("RABBIT_PW", "env-S3CRET")
	secrets := []string{"url-S3CRET", "env-S3CRET", "pg-S3CRET", "token-S3CRET", "redis-S3CRET"}
	valid := writeConfig(t, `
broker: rabbitmq
rabbitmq: {url: "amqp://redrive:${RABBIT_PW}@rabbit:5672/"}
postgres: {url: "postgres://redrive:pg-S3CRET@db/redrive"}
redis: {password: redis-S3CRET}
admin: {listen: "0.0.0.0:8080", token: token-S3CRET}
workers: [{name: w, topic: t}]
`)
	invalid := writeConfig(t, `
broker: rabbitmq
rabbitmq: {url: "amqp://redrive:url-S3CRET@rabbit:notaport/"}
postgres: {url: "postgres://redrive:pg-S3CRET@db:bad/redrive"}
redis: {password: [redis-S3CRET]}
admin: {token: {value: token-S3CRET}}
`)
	for _, path := range []string{valid, invalid} {
		code, out, errOut := cli(t, "config", "check", "--config", path)
		if path == valid && code != exitOK || path == invalid && code != exitUsage {
			t.Errorf("%s: exit %d: %s", path, code, errOut)
		}
		for _, s := range secrets {
			if strings.Contains(out+errOut, s) {
				t.Errorf("output contains %q:\n%s%s", s, out, errOut)
			}
		}
	}
}

func TestExitCode(t *testing.T) {
	if exitCode(nil) != exitOK || exitCode(badInput(os.ErrNotExist)) != exitUsage || exitCode(os.ErrNotExist) != exitFailure {
		t.Error("exit codes")
	}
	if badInput(nil) != nil {
		t.Error("badInput(nil) != nil")
	}
}

func TestRuntimeFailureExitsOne(t *testing.T) {
	root := newRootCmd()
	root.AddCommand(&cobra.Command{
		Use:   "fail",
		Short: "fails at run time (test only)",
		Args:  noArgs,
		RunE:  func(*cobra.Command, []string) error { return os.ErrDeadlineExceeded },
	})
	var out, errOut bytes.Buffer
	code := execute(context.Background(), root, []string{"fail"}, &out, &errOut)
	if code != exitFailure || errOut.String() != "redrive: fail: i/o timeout\n" {
		t.Errorf("runtime failure: %d %q", code, errOut.String())
	}
}
