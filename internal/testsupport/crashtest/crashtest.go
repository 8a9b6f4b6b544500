// Package crashtest runs a worker in a child process that the handler may
// kill, restarting it until the test is satisfied: the harness of the
// poison-pill tests. The child is the test binary itself, re-executed with
// EnvChild set; it reports handler starts and ends on stdout.
package crashtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvChild is set in the environment of a child process.
const EnvChild = "REDRIVE_CRASHTEST_CHILD"

// CrashCode is the exit code of a child killed by its handler.
const CrashCode = 3

// IsChild reports whether this process is a child.
func IsChild() bool { return os.Getenv(EnvChild) != "" }

// Started reports, from a child, that the handler of id started.
func Started(id string) { fmt.Fprintf(os.Stdout, "crashtest start %s\n", id) }

// Done reports, from a child, that the handler of id returned.
func Done(id string) { fmt.Fprintf(os.Stdout, "crashtest done %s\n", id) }

// Crash ends a child the way a poison pill does: at once, nothing flushed
// or acknowledged.
func Crash() { os.Exit(CrashCode) }

// Supervisor runs children one after the other, restarting one that
// crashes, and counts what they report.
type Supervisor struct {
	t    testing.TB
	test string
	env  []string

	mu      sync.Mutex
	starts  map[string]int
	done    map[string]int
	runs    int
	changed chan struct{}
	err     error
}

// Supervise starts a child that runs the test named test (a -test.run
// pattern) with env added, and restarts it each time it exits with
// CrashCode, until ctx ends: the running child then gets SIGTERM and
// Supervise waits for it. A child that exits otherwise ends the
// supervision with an error (Err).
func Supervise(ctx context.Context, t testing.TB, test string, env ...string) (*Supervisor, <-chan struct{}) {
	s := &Supervisor{t: t, test: test, env: env, starts: map[string]int{}, done: map[string]int{}, changed: make(chan struct{})}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for ctx.Err() == nil {
			code, err := s.runOnce(ctx)
			if err != nil || (code != CrashCode && ctx.Err() == nil) {
				s.fail(fmt.Errorf("child run %d: exit code %d: %v", s.Runs(), code, err))
				return
			}
		}
	}()
	return s, finished
}

func (s *Supervisor) runOnce(ctx context.Context) (int, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+s.test+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), EnvChild+"=1"), s.env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return -1, fmt.Errorf("stdout pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("start: %w", err)
	}
	s.mu.Lock()
	s.runs++
	s.mu.Unlock()
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.line(sc.Text())
		}
	}()
	exited := make(chan error, 1)
	go func() {
		<-read // Wait closes the pipe; read it all first
		exited <- cmd.Wait()
	}()
	select {
	case err = <-exited:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			err = <-exited
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

func (s *Supervisor) line(l string) {
	f := strings.Fields(l)
	if len(f) != 3 || f[0] != "crashtest" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch f[1] {
	case "start":
		s.starts[f[2]]++
	case "done":
		s.done[f[2]]++
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Supervisor) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
	close(s.changed)
	s.changed = make(chan struct{})
}

// Err is the error that ended the supervision early, if any.
func (s *Supervisor) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Runs is the number of children started so far.
func (s *Supervisor) Runs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs
}

// Starts returns how many times each id's handler started.
func (s *Supervisor) Starts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.starts))
	for k, v := range s.starts {
		out[k] = v
	}
	return out
}

// Done returns how many times each id's handler returned.
func (s *Supervisor) Done() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.done))
	for k, v := range s.done {
		out[k] = v
	}
	return out
}

// WaitDone waits until the handler of every id returned at least once,
// failing t after timeout or when the supervision ended with an error.
func (s *Supervisor) WaitDone(timeout time.Duration, ids ...string) {
	s.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		missing := 0
		for _, id := range ids {
			if s.done[id] == 0 {
				missing++
			}
		}
		ch, err := s.changed, s.err
		s.mu.Unlock()
		if err != nil {
			s.t.Fatalf("crashtest: %v", err)
		}
		if missing == 0 {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			s.t.Fatalf("crashtest: %d of %d messages not handled after %s (%d runs)", missing, len(ids), timeout, s.Runs())
		}
	}
}
