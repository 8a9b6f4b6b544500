package quickstart

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// The walk follows the README, with what must differ per run (so that
// runs side by side, the tests and a user's own Quick Start never share
// anything) changed in the same way on every line:
//   - RabbitMQ names: the topic gets a prefix of the run's own
//     ("qs-xxxxxx.escrow.commands", hence its queues and DLQ), and so do the
//     exchanges and delay queues (rabbitmq.prefix); everything is deleted at
//     the end;
//   - Kafka: the embedded cluster of `redrive dev --no-samples` is the
//     run's own, on free ports (--kafka-port 0) that KAFKA_BROKERS names,
//     as the README's ${KAFKA_BROKERS:-127.0.0.1:9092} reads it;
//   - serve listens on free ports (admin.listen, exporter.listen added);
//   - `make build && export PATH=…` is the walk's own build of the CLI, put
//     first on PATH; the working directory is a directory of the run's own
//     inside the module (testdata/), so that `./quickstart` builds against
//     this checkout;
//   - "ID" in `redrive dlq replay` is the ID `redrive dlq ls` printed.

// TestQuickStartRabbitMQ walks the Quick start on RabbitMQ.
func TestQuickStartRabbitMQ(t *testing.T) {
	g := readGuide(t)
	run := "qs-" + strings.ToLower(broker.NewMessageID()[:6])
	names := func(s string) string { return strings.ReplaceAll(s, "escrow.commands", run+".escrow.commands") }
	w := newWalk(t, g)
	yaml := regexp.MustCompile(`(?m)^rabbitmq: \{url: (".*?")\}`).ReplaceAllString(names(g.rabbitYAML), "rabbitmq: {url: $1, prefix: "+run+"}")
	if !strings.Contains(yaml, "prefix: "+run) {
		t.Fatalf("README Quick start: the RabbitMQ configuration has no line `rabbitmq: {url: \"…\"}` to give the run's prefix:\n%s", g.rabbitYAML)
	}
	w.writeConfig(yaml)
	t.Cleanup(func() { w.teardownRabbitMQ() })
	var sh []string
	for _, l := range g.rabbitSh {
		sh = append(sh, names(l))
	}
	w.walk(sh, names(g.rabbitDLQ))
}

// TestQuickStartKafka walks the Quick start on Kafka: `redrive dev
// --no-samples`, the Kafka configuration, and the RabbitMQ section's
// commands with the Kafka DLQ.
func TestQuickStartKafka(t *testing.T) {
	g := readGuide(t)
	w := newWalk(t, g)
	w.writeConfig(g.kafkaYAML)
	var sh []string
	sh = append(sh, g.kafkaDevSh...)
	for _, l := range g.rabbitSh {
		sh = append(sh, strings.ReplaceAll(l, g.rabbitDLQ, g.kafkaDLQ))
	}
	w.walk(sh, g.kafkaDLQ)
}

// walk is one run through the guide: a working directory, an environment
// and the background jobs.
type walk struct {
	t    *testing.T
	g    guide
	dir  string
	env  map[string]string
	jobs []*job
	// admin and metrics are the free addresses serve gets.
	admin, metrics string
}

// job is a command started with & in the README.
type job struct {
	line string
	cmd  *exec.Cmd
	out  *testenv.Buffer
	done chan struct{}
	err  error
}

// newWalk builds the CLI, makes the run's working directory inside the
// module and saves the program there as the README says.
func newWalk(t *testing.T, g guide) *walk {
	t.Helper()
	root := repoRoot(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "redrive"), "./cmd/redrive")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the CLI: %v\n%s", err, out)
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("testdata", "walk-")
	if err != nil {
		t.Fatal(err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	w := &walk{t: t, g: g, dir: dir, env: map[string]string{}, admin: freeAddr(t), metrics: freeAddr(t)}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "REDRIVE_CONFIG", "REDRIVE_ADMIN_TOKEN", "KAFKA_BROKERS":
		default:
			w.env[k] = v
		}
	}
	w.env["PATH"] = bin + string(os.PathListSeparator) + os.Getenv("PATH")
	w.writeFile(filepath.Join("quickstart", "main.go"), g.program)
	t.Cleanup(w.stopAll)
	return w
}

// writeConfig saves the README's configuration as redrive.yaml, serve on
// the run's ports.
func (w *walk) writeConfig(yaml string) {
	w.t.Helper()
	if !strings.Contains(yaml, "\nadmin: {token:") {
		w.t.Fatalf("README Quick start: the configuration has no `admin: {token: …}` line:\n%s", yaml)
	}
	yaml = strings.Replace(yaml, "\nadmin: {token:", fmt.Sprintf("\nadmin: {listen: %q, token:", w.admin), 1)
	yaml += fmt.Sprintf("exporter: {listen: %q}\n", w.metrics)
	w.writeFile("redrive.yaml", yaml)
}

func (w *walk) writeFile(name, text string) {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// teardownRabbitMQ deletes every exchange and queue of the run's
// configuration.
func (w *walk) teardownRabbitMQ() {
	c, err := config.Load(filepath.Join(w.dir, "redrive.yaml"))
	if err != nil {
		w.t.Errorf("teardown: %v", err)
		return
	}
	rc, err := assembly.RabbitConfig(c, slog.New(slog.DiscardHandler))
	if err == nil {
		_, err = rabbit.Teardown(context.Background(), rc, c.Subscriptions()...)
	}
	if err != nil {
		w.t.Errorf("teardown: %v", err)
	}
}

// environ is the walk's environment for a command.
func (w *walk) environ() []string {
	out := make([]string, 0, len(w.env))
	for k, v := range w.env {
		out = append(out, k+"="+v)
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs line in the background, in a process group of its own.
func (w *walk) start(line string) *job {
	w.t.Helper()
	j := &job{line: line, out: &testenv.Buffer{}, done: make(chan struct{})}
	j.cmd = exec.Command("bash", "-c", "exec "+line) // the job is the command itself, as `jobs -p` lists it
	j.cmd.Dir, j.cmd.Env, j.cmd.Stdout, j.cmd.Stderr = w.dir, w.environ(), j.out, j.out
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := j.cmd.Start(); err != nil {
		w.t.Fatalf("%s: %v", line, err)
	}
	go func() { j.err = j.cmd.Wait(); close(j.done) }()
	w.jobs = append(w.jobs, j)
	return j
}

// stop ends j as `kill` does (SIGTERM) and waits.
func (j *job) stop() error {
	_ = j.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-j.done:
		return j.err
	case <-time.After(60 * time.Second):
		_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		<-j.done
		return fmt.Errorf("did not stop within 60s of SIGTERM")
	}
}

// stopAll kills what is still running when the test ends early.
func (w *walk) stopAll() {
	for _, j := range w.jobs {
		select {
		case <-j.done:
		default:
			_ = j.stop()
		}
	}
}

// running fails the test when a background job ended.
func (w *walk) running() {
	w.t.Helper()
	for _, j := range w.jobs {
		select {
		case <-j.done:
			w.t.Fatalf("%q ended (%v):\n%s", j.line, j.err, j.out)
		default:
		}
	}
}

// exec runs line in the foreground and returns its exit status and output.
func (w *walk) exec(line string) (int, string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = w.dir, w.environ()
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		w.t.Fatalf("%s: %v", line, err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// eventually runs line until ok accepts its exit status and output, for
// at most 90 s.
func (w *walk) eventually(line string, ok func(code int, out string) bool) string {
	w.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		w.running()
		code, out := w.exec(line)
		if ok(code, out) {
			return out
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s: not as expected within 90s; exit %d:\n%s\n%s", line, code, out, w.jobLogs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jobLogs is the output of every background job, for failure messages.
func (w *walk) jobLogs() string {
	var b strings.Builder
	for _, j := range w.jobs {
		fmt.Fprintf(&b, "--- %s\n%s", j.line, j.out)
	}
	return b.String()
}
