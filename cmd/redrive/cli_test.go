package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// completions runs cobra's hidden __complete command and returns the
// candidates (without descriptions) and the directive line.
func completions(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, errOut := cli(t, append([]string{"__complete"}, args...)...)
	if code != exitOK {
		t.Fatalf("__complete %q: exit %d: %s", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, ":") {
		t.Fatalf("__complete %q: no directive line:\n%s", args, out)
	}
	var got []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		got = append(got, name)
	}
	return got, last
}

// TestComplete: the DLQ arguments of the dlq commands complete with the
// DLQs the configuration names (the workers' as the backend's router
// names them, and kafka.foreign_dlqs), the WORKER and TYPE arguments of
// the workers commands with the configured workers, flags with their
// values; nothing completes from a configuration that does not load, and
// no file names are offered where a name is expected.
func TestComplete(t *testing.T) {
	clearEnv(t)
	kafka := writeConfig(t, `
broker: kafka
kafka:
  brokers: [127.0.0.1:9092] # never dialled: completion only reads the names
  foreign_dlqs: [{topic: orders.DLT, replay_to: orders}]
workers:
  - {name: billing, topic: payments}
  - {name: refunds, topic: payments}
  - {name: shipper, topic: orders}
`)
	rabbit := writeConfig(t, `
broker: rabbitmq
workers:
  - {name: payout-executor, topic: escrow.commands}
  - {name: -dash, topic: escrow.commands}
`)
	noDirective := ":4" // cobra.ShellCompDirectiveNoFileComp
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"dlq list, kafka", []string{"dlq", "list", "--config", kafka, ""}, []string{"orders.DLT", "orders.dlq", "payments.dlq"}},
		{"dlq ls, prefix", []string{"dlq", "ls", "--config", kafka, "or"}, []string{"orders.DLT", "orders.dlq"}},
		{"dlq show", []string{"dlq", "show", "--config", kafka, ""}, []string{"orders.DLT", "orders.dlq", "payments.dlq"}},
		{"dlq show ID", []string{"dlq", "show", "--config", kafka, "orders.dlq", ""}, nil},
		{"dlq replay", []string{"dlq", "replay", "--config", kafka, "pay"}, []string{"payments.dlq"}},
		{"dlq replay-all", []string{"dlq", "replay-all", "--config", kafka, "pay"}, []string{"payments.dlq"}},
		{"dlq discard", []string{"dlq", "discard", "--config", kafka, "pay"}, []string{"payments.dlq"}},
		{"dlq discard-all", []string{"dlq", "discard-all", "--config", kafka, "pay"}, []string{"payments.dlq"}},
		{"dlq groups", []string{"dlq", "groups", "--config", kafka, "pay"}, []string{"payments.dlq"}},
		{"dlq ls, rabbitmq", []string{"dlq", "ls", "--config", rabbit, "escrow.commands."}, []string{"escrow.commands.-dash.dlq", "escrow.commands.payout-executor.dlq"}},
		{"workers pause", []string{"workers", "pause", "--config", kafka, ""}, []string{"billing", "refunds", "shipper"}},
		{"workers resume, prefix", []string{"workers", "resume", "--config", kafka, "r"}, []string{"refunds"}},
		{"workers retire TYPE", []string{"workers", "retire", "--config", kafka, ""}, []string{"billing", "refunds", "shipper"}},
		{"workers retire INSTANCE", []string{"workers", "retire", "--config", kafka, "billing", ""}, nil},
		{"workers pause, rabbitmq (no flag-like names)", []string{"workers", "pause", "--config", rabbit, ""}, []string{"payout-executor"}},
		{"no configuration", []string{"workers", "pause", "--config", filepath.Join(t.TempDir(), "missing.yaml"), ""}, nil},
		{"--output", []string{"dlq", "ls", "--output", ""}, []string{"table", "json"}},
		{"--status (the shell filters)", []string{"dlq", "ls", "--status", "re"}, []string{"pending", "replaying", "replayed", "discarded", "archived"}},
		{"publish --topic", []string{"publish", "--config", kafka, "--topic", ""}, []string{"orders", "payments"}},
		{"help", []string{"help", "dlq", "re"}, []string{"replay", "replay-all"}},
		{"subcommands", []string{"dlq", "re"}, []string{"replay", "replay-all"}},
		{"no file arguments", []string{"config", "check", ""}, nil},
		{"completion SHELL", []string{"completion", ""}, []string{"bash", "fish", "zsh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, directive := completions(t, tt.args...)
			if !slices.Equal(got, tt.want) || directive != noDirective {
				t.Errorf("__complete %q = %q %s; want %q %s", tt.args, got, directive, tt.want, noDirective)
			}
		})
	}
	t.Run("$REDRIVE_CONFIG", func(t *testing.T) {
		t.Setenv("REDRIVE_CONFIG", kafka)
		if got, _ := completions(t, "workers", "pause", "s"); !slices.Equal(got, []string{"shipper"}) {
			t.Errorf("workers pause with $REDRIVE_CONFIG: %q", got)
		}
		if got, _ := completions(t, "dlq", "list", ""); !slices.Equal(got, []string{"orders.DLT", "orders.dlq", "payments.dlq"}) {
			t.Errorf("dlq list with $REDRIVE_CONFIG: %q", got)
		}
	})
	t.Run("--config completes YAML files", func(t *testing.T) {
		got, directive := completions(t, "dlq", "ls", "--config", "")
		if !slices.Equal(got, []string{"yaml", "yml"}) || directive != ":8" { // ShellCompDirectiveFilterFileExt
			t.Errorf("--config: %q %s", got, directive)
		}
	})
}

// TestCompletable: a configured name is offered only when a shell can
// take it as one word: the configuration is another team's text.
func TestCompletable(t *testing.T) {
	for name, want := range map[string]bool{
		"orders.dlq": true, "escrow.commands.payout-executor.dlq": true, "a_b-c.1": true, "ü-worker": true, "we$ird": true,
		"": false, "-dash": false, "--output": false, "odd name": false, "tab\tname": false, "new\nline": false,
		"esc\x1b[31m": false, "nul\x00": false, "bad\xffutf8": false, "cr\r": false, "nbsp\u00a0x": false,
	} {
		if got := completable(name); got != want {
			t.Errorf("completable(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestCompletionScripts: redrive completion writes a script for each
// shell that the shell (when installed) parses; any other shell is bad
// input.
func TestCompletionScripts(t *testing.T) {
	for _, tt := range []struct{ shell, want string }{
		{"bash", "__start_redrive"},
		{"zsh", "#compdef redrive"},
		{"fish", "complete -c redrive"},
	} {
		code, out, errOut := cli(t, "completion", tt.shell)
		if code != exitOK || errOut != "" || !strings.Contains(out, tt.want) || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: %d %q, script lacks %q or __complete:\n%.300s", tt.shell, code, errOut, tt.want, out)
			continue
		}
		sh, err := exec.LookPath(tt.shell)
		if err != nil {
			t.Logf("%s is not installed: the script is not parsed", tt.shell)
			continue
		}
		script := filepath.Join(t.TempDir(), "redrive."+tt.shell)
		if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		if msg, err := exec.Command(sh, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("%s -n on the completion script: %v\n%s", tt.shell, err, msg)
		}
	}
	for _, args := range [][]string{{"completion", "ksh"}, {"completion"}, {"completion", "bash", "zsh"}} {
		if code, out, errOut := cli(t, args...); code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: %d %q %q; want exit 2 and one line", args, code, out, errOut)
		}
	}
	if _, errOut := cli2(t, "completion", "ksh"); errOut != "redrive: completion: unknown shell \"ksh\" (bash, zsh or fish)\n" {
		t.Errorf("completion ksh: %q", errOut)
	}
}

// cli2 is cli without the exit status.
func cli2(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	_, stdout, stderr = cli(t, args...)
	return stdout, stderr
}

// listingCommands are the commands with --output, each with what it lists
// from, run against the services a test starts. TestOutputFlag fails when
// a command with --output is missing here.
func listingCommands(t *testing.T) map[string][][]string {
	t.Helper()
	clearEnv(t)
	t.Setenv("REDRIVE_ADMIN_TOKEN", "env-token")
	_, url := newFakeAdmin(t, func(r *http.Request) (int, string) {
		switch r.URL.Path {
		case "/internal/v1/dlq":
			return 200, `{"dlqs":[{"dlq":"orders.dlq","severity":"critical","pending":3,"replayed":1,"retention":"forever"}]}`
		case "/internal/v1/dlq/orders.dlq":
			return 200, `{"dlq":"orders.dlq","entries":[{"id":"e1","status":"pending","received_at":"2025-01-15T10:30:00Z","error_class":"db.Timeout","error_message":"timeout"}],"next_cursor":""}`
		case "/internal/v1/dlq/orders.dlq/e1":
			return 200, `{"id":"e1","status":"pending","payload":{"a":1},"payload_encoding":"json","audit":[]}`
		case "/internal/v1/dlq/orders.dlq/groups":
			return 200, `{"groups":[{"fingerprint":"fp1","count":2,"pending":2,"first_seen":"2025-01-15T10:30:00Z","last_seen":"2025-01-15T10:31:00Z","hourly":[0,1],"worker":"billing","error_class":"db.Timeout","message":"timeout","sample_id":"e1"}]}`
		case "/internal/v1/dlq/jobs":
			return 200, `{"jobs":[{"id":"j1","dlq":"orders.dlq","state":"done","started_at":"2025-01-15T10:30:00Z","actor":"alice","progress":{"total":1,"replayed":1}}]}`
		case "/internal/v1/whoami":
			return 200, `{"name":"alice","role":"operator","via":"token","actor":"alice"}`
		}
		return 404, `{"error":"no such path"}`
	})
	cfg := kafkaConfig(t, kafkaCluster(t), "")
	return map[string][][]string{
		"dlq ls":       {{"dlq", "ls", "--server", url}, {"dlq", "ls", "orders.dlq", "--server", url}},
		"dlq show":     {{"dlq", "show", "orders.dlq", "e1", "--server", url}},
		"dlq groups":   {{"dlq", "groups", "orders.dlq", "--server", url}},
		"dlq jobs":     {{"dlq", "jobs", "--server", url}},
		"admin whoami": {{"admin", "whoami", "--server", url}},
		"workers":      {{"workers", "--config", cfg}, {"workers", "--retired", "3", "--config", cfg}},
		"lag":          {{"lag", "--config", cfg}},
	}
}

// TestOutputFlag: every command that has --output (the listings) prints
// valid JSON with --output json and with the deprecated --json, a table
// with --output table (the default), and refuses any other format with
// one line naming the flag and the value, exit status 2.
func TestOutputFlag(t *testing.T) {
	cmds := listingCommands(t)
	var withOutput []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("output") != nil {
			withOutput = append(withOutput, commandName(c))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	for _, name := range withOutput {
		if _, ok := cmds[name]; !ok {
			t.Errorf("%s has --output but TestOutputFlag does not run it", name)
		}
	}
	for name, runs := range cmds {
		if !slices.Contains(withOutput, name) {
			t.Errorf("%s lists but has no --output", name)
		}
		for _, args := range runs {
			// workers exits 3 or 4 by the health of what it lists.
			ok := func(code int) bool { return code == exitOK || name == "workers" && code >= exitWarning }
			code, table, errOut := cli(t, args...)
			header, _, _ := strings.Cut(table, "\n")
			if !ok(code) || header == "" || json.Valid([]byte(table)) {
				t.Errorf("%q (table by default): %d %q\n%s", args, code, errOut, table)
			}
			if code, out, errOut := cli(t, append(args, "--output", "table")...); !ok(code) || !strings.HasPrefix(out, header+"\n") {
				t.Errorf("%q --output table: %d %q; differs from the default:\n%s", args, code, errOut, out)
			}
			for _, flags := range [][]string{{"--output", "json"}, {"--output=json"}, {"--json"}} {
				code, out, errOut := cli(t, append(args, flags...)...)
				if !ok(code) || !json.Valid([]byte(out)) || !strings.HasPrefix(out, "{") {
					t.Errorf("%q %q: %d %q; want JSON:\n%s", args, flags, code, errOut, out)
				}
			}
			code, out, errOut := cli(t, append(args, "--output", "yaml")...)
			want := "redrive: " + name + ": invalid value \"yaml\" for flag --output: table or json (run 'redrive " + name + " --help')\n"
			if code != exitUsage || out != "" || errOut != want {
				t.Errorf("%q --output yaml: %d %q %q; want exit 2 and %q", args, code, out, errOut, want)
			}
		}
	}
}

// TestFlagsAnywhere: flags may come before, between or after the
// positional arguments, and -- ends the flags (pflag's rules, the same on
// every command).
func TestFlagsAnywhere(t *testing.T) {
	clearEnv(t)
	t.Setenv("REDRIVE_ADMIN_TOKEN", "env-token")
	f, url := newFakeAdmin(t, func(*http.Request) (int, string) { return 200, `{"entry":{"id":"e1","status":"discarded"}}` })
	for _, args := range [][]string{
		{"dlq", "discard", "--server", url, "--reason", "dup", "orders.dlq", "e1"},
		{"dlq", "discard", "orders.dlq", "--server", url, "e1", "--reason", "dup"},
		{"dlq", "discard", "orders.dlq", "e1", "--server=" + url, "--reason=dup"},
		{"dlq", "discard", "--server", url, "--reason", "dup", "--", "orders.dlq", "e1"},
	} {
		code, out, errOut := cli(t, args...)
		r, body := f.last()
		if code != exitOK || out != "discarded orders.dlq/e1 (status discarded)\n" || r.URL.Path != "/internal/v1/dlq/orders.dlq/e1" || !strings.Contains(body, `"reason":"dup"`) {
			t.Errorf("%q: %d %q %q; request %s %s", args, code, out, errOut, r.URL.Path, body)
		}
	}
	// A long flag written with one dash, as Go's flag package took it.
	if code, _, errOut := cli(t, "dlq", "ls", "-json"); code != exitUsage || errOut != "redrive: dlq ls: -json: long flags take two dashes: --json (run 'redrive dlq ls --help')\n" {
		t.Errorf("-json: %d %q", code, errOut)
	}
}

// TestEveryCommandHelp: every command's --help and 'redrive help ...'
// print the same usage, with a summary and every flag's value named
// (FILE, N, DURATION: never pflag's type names).
func TestEveryCommandHelp(t *testing.T) {
	clearEnv(t)
	for _, c := range leafCommands(newRootCmd()) {
		name := strings.Fields(commandName(c))
		code, out, errOut := cli(t, append(name, "--help")...)
		if code != exitOK || errOut != "" || !strings.HasPrefix(out, "Usage:\n  redrive "+strings.Join(name, " ")) || !strings.Contains(out, "-h, --help") {
			t.Errorf("%q --help: %d %q\n%s", name, code, errOut, out)
			continue
		}
		if _, viaHelp, _ := cli(t, append([]string{"help"}, name...)...); viaHelp != out {
			t.Errorf("redrive help %q differs from --help:\n%s\n---\n%s", name, viaHelp, out)
		}
		_, flags, _ := strings.Cut(out, "\nFlags:\n")
		for _, typ := range []string{" string ", " int ", " float ", " func ", " duration ", " value "} {
			if strings.Contains(flags, typ) {
				t.Errorf("%q --help names a value by its type (%q):\n%s", name, strings.TrimSpace(typ), flags)
			}
		}
	}
}
