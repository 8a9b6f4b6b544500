//go:build faults

package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain runs the worker subprocess when this binary was started as one
// (see envChild), else the suite, and prints the table of every case.
func TestMain(m *testing.M) {
	if kind := os.Getenv(envChild); kind != "" {
		os.Exit(runChild(kind))
	}
	stopClusterOnSignal()
	code := m.Run()
	stopCluster()
	printTable(os.Stdout)
	printEffectsTable(os.Stdout)
	os.Exit(code)
}

// row is one case's accounting.
type row struct {
	name                                 string
	published, handled, dead, lost, dups int
}

// table holds the rows of the cases run so far, in the order they ended.
var table struct {
	mu   sync.Mutex
	rows []row
}

// printTable writes the table of every case to w (nothing when no case
// ran).
func printTable(w io.Writer) {
	table.mu.Lock()
	defer table.mu.Unlock()
	if len(table.rows) == 0 {
		return
	}
	const format = "%-44s %9v %9v %13v %6v %10v\n"
	fmt.Fprintln(w, "\nFAULTS")
	fmt.Fprintf(w, format, "case", "published", "handled", "dead-lettered", "lost", "duplicates")
	for _, r := range table.rows {
		fmt.Fprintf(w, format, r.name, r.published, r.handled, r.dead, r.lost, r.dups)
	}
	if s := clusterStartUp(); s != "" {
		fmt.Fprintln(w, s)
	}
}

// account checks that every published id was handled or dead-lettered,
// records the case's row in the table, logs it, and fails t when a message
// was lost. handled and dead count how many times each id was handled
// (successfully) and dead-lettered; every count above one is a duplicate.
func account(t testing.TB, published []string, handled, dead map[string]int) row {
	t.Helper()
	r := row{name: t.Name(), published: len(published)}
	var lost []string
	for _, id := range published {
		h, d := handled[id], dead[id]
		if h > 0 {
			r.handled++
		}
		if d > 0 {
			r.dead++
		}
		if h+d == 0 {
			lost = append(lost, id)
		}
		if h+d > 1 {
			r.dups += h + d - 1
		}
	}
	r.lost = len(lost)
	table.mu.Lock()
	table.rows = append(table.rows, r)
	table.mu.Unlock()
	t.Logf("%s: published %d, handled %d, dead-lettered %d, lost %d, duplicates %d",
		r.name, r.published, r.handled, r.dead, r.lost, r.dups)
	if r.lost > 0 {
		slices.Sort(lost)
		t.Errorf("lost %d of %d messages (neither handled nor dead-lettered), first: %v", r.lost, r.published, lost[:min(len(lost), 10)])
	}
	return r
}

// ids returns n message ids unique to this run.
func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}

// tally counts handler completions by message id and lets a test wait on
// them without sleeping: every change wakes the waiters.
type tally struct {
	mu      sync.Mutex
	n       map[string]int
	changed chan struct{}
}

func newTally() *tally { return &tally{n: map[string]int{}, changed: make(chan struct{})} }

func (c *tally) add(id string) {
	c.mu.Lock()
	c.n[id]++
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// counts returns a copy of the counts.
func (c *tally) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// distinct is how many ids were counted at least once.
func (c *tally) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.n)
}

// wait waits until at least want distinct ids were counted and reports
// whether they were before timeout. It does not fail the test: the caller
// accounts for what is missing.
func (c *tally) wait(want int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n, ch := len(c.n), c.changed
		c.mu.Unlock()
		if n >= want {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// envChild, when set, makes the test binary a worker subprocess of the
// kind it names (childRabbit, childKafka); the rest of its configuration is
// in the FAULTS_* variables below.
const (
	envChild   = "REDRIVE_FAULTS_CHILD"
	envTopic   = "FAULTS_TOPIC"
	envPrefix  = "FAULTS_PREFIX"
	envBrokers = "FAULTS_BROKERS"
	// envPoison names the message whose handler kills the child
	// (crashtest.Crash); with it, the child counts claims in Redis
	// (REDIS_ADDR) with max_claims poisonMaxClaims.
	envPoison = "FAULTS_POISON"
)

// child is a worker subprocess: the test binary re-executed with envChild.
// It reports each handled message as a "crashtest done <id>" line on
// stdout (the crashtest package's protocol), counted in the tally it was
// started with.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startChild starts a worker subprocess of kind with env added. The child
// is killed when t ends, and when this process dies.
func startChild(t testing.TB, c *tally, kind string, env ...string) *child {
	t.Helper()
	return startChildCounting(t, c, nil, kind, env...)
}

// startChildCounting is startChild that also counts the child's
// "crashtest start <id>" lines in starts, when not nil.
func startChildCounting(t testing.TB, c, starts *tally, kind string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envChild+"="+kind), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("child stdout: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	ch := &child{cmd: cmd, exited: make(chan struct{})}
	go func() {
		defer close(ch.exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "crashtest done "); ok {
				c.add(id)
			} else if id, ok := strings.CutPrefix(sc.Text(), "crashtest start "); ok && starts != nil {
				starts.add(id)
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(ch.kill)
	return ch
}

// kill SIGKILLs the child and waits for it to exit.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.exited
}

// stop ends the child with SIGTERM (a clean shutdown) and waits for it,
// killing it after 30 s.
func (c *child) stop(t testing.TB) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("child did not stop within 30 s of SIGTERM; killing it")
		c.kill()
	}
}

// runChild is the main of a worker subprocess.
func runChild(kind string) int {
	ctx, stop := signalContext()
	defer stop()
	var err error
	switch kind {
	case childRabbit:
		err = rabbitChild(ctx)
	case childKafka:
		err = kafkaChild(ctx)
	case childKafkaShare:
		err = kafkaShareChild(ctx)
	case childReplica:
		err = replicaChild(ctx)
	case childRelay:
		err = relayChild(ctx)
	case childEndpoint:
		err = endpointChild(ctx)
	case childEffects:
		err = effectsChild(ctx)
	default:
		err = fmt.Errorf("unknown child kind %q", kind)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "faults child %s: %v\n", kind, err)
		return 1
	}
	return 0
}

// signalContext ends on SIGTERM or SIGINT.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}
