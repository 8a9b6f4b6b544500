package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// Environment of a live worker process: the test binary started again by
// startLiveWorker runs liveWorkerMain instead of the tests.
const (
	envLiveWorker = "REDRIVE_LIVE_WORKER" // the configuration file to run
	envLiveDir    = "REDRIVE_LIVE_DIR"    // where release and marker files go
	envLivePod    = "LIVE_POD"            // expanded into heartbeat.instance
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envLiveWorker); path != "" {
		os.Exit(liveWorkerMain(path))
	}
	os.Exit(m.Run())
}

// liveWorkerMain is a worker program as an application writes it:
// worker.Load with heartbeats, handlers per worker, Run until SIGTERM.
// Its handlers (by worker name prefix):
//
//	pay-, mail-  "poison" fails for good (dead letter); anything else succeeds
//	stall-       "stall" blocks until the file "release" exists in the live dir
//	fleet-       "hold" writes "holding-<pod>" in the live dir and blocks forever
func liveWorkerMain(path string) int {
	dir := os.Getenv(envLiveDir)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
	defer rdb.Close()
	rt, err := worker.Load(context.Background(), path, worker.Config{HeartbeatRedis: rdb, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "live worker:", err)
		return 1
	}
	handlers := worker.Handlers{}
	for _, s := range rt.Subscriptions() {
		handlers[s.Group] = liveHandler(s.Group, dir, rt.Instance())
	}
	if err := rt.Run(context.Background(), handlers); err != nil {
		fmt.Fprintln(os.Stderr, "live worker:", err)
		return 1
	}
	return 0
}

func liveHandler(name, dir, instance string) broker.Handler {
	switch {
	case strings.HasPrefix(name, "stall-"):
		return func(ctx context.Context, d *broker.Delivery) error {
			for string(d.Value) == "stall" {
				if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			return nil
		}
	case strings.HasPrefix(name, "fleet-"):
		return func(ctx context.Context, d *broker.Delivery) error {
			if string(d.Value) == "hold" {
				_ = os.WriteFile(filepath.Join(dir, "holding-"+instance), nil, 0o600)
				select {} // a handler that never returns: the process drains until it is killed
			}
			return nil
		}
	default:
		return func(ctx context.Context, d *broker.Delivery) error {
			if string(d.Value) == "poison" {
				return broker.Permanent(errors.New("poison payload"))
			}
			return nil
		}
	}
}

// liveWorker is a worker process of the live test.
type liveWorker struct {
	name   string
	cmd    *exec.Cmd
	log    *testenv.Buffer
	exited chan struct{}
}

// startLiveWorker runs config in a new process named pod (its
// heartbeat.instance, through ${LIVE_POD}); it is killed when the test
// ends, and when the test process dies.
func startLiveWorker(t *testing.T, config, pod, dir string) *liveWorker {
	t.Helper()
	w := &liveWorker{name: pod, log: &testenv.Buffer{}, exited: make(chan struct{})}
	w.cmd = exec.Command(os.Args[0], "-test.run=^$")
	w.cmd.Env = append(os.Environ(), envLiveWorker+"="+config, envLiveDir+"="+dir, envLivePod+"="+pod)
	w.cmd.Stdout, w.cmd.Stderr = w.log, w.log
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start worker %s: %v", pod, err)
	}
	go func() { _ = w.cmd.Wait(); close(w.exited) }()
	t.Cleanup(func() {
		w.kill(t)
		if t.Failed() && w.log.String() != "" {
			t.Logf("worker %s log:\n%s", pod, w.log)
		}
	})
	return w
}

// kill sends SIGKILL and waits for the process to be gone.
func (w *liveWorker) kill(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-w.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("worker %s not gone 10s after SIGKILL", w.name)
	}
}

// term sends SIGTERM: the worker starts its graceful shutdown.
func (w *liveWorker) term(t *testing.T) {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", w.name, err)
	}
}
