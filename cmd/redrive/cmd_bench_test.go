package main

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestBenchBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--broker", "nats"},
		{"bench", "--scenarios", "publish,bogus"},
		{"bench", "--messages", "0"},
		{"bench", "--kafka-messages", "-5"},
		{"bench", "--resolution", "1500us"},
		{"bench", "--delay-factor", "1"},
		{"bench", "--delay-levels", "0"},
		{"bench", "--delay-span", "-1s"},
		{"bench", "--scrape-groups", "0"},
		{"bench", "--monitor-workers", "-1"},
		{"bench", "--peers", "--peers-dir", "/nonexistent/peers"},
	} {
		code, out, errOut := cli(t, args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "redrive: bench: ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: %d %q %q", args, code, out, errOut)
		}
	}
}

// TestBenchTiny runs a few scenarios with tiny sizes against the real
// RabbitMQ and kfake; it checks the table, never the figures.
func TestBenchTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("talks to RabbitMQ and kfake")
	}
	out := filepath.Join(t.TempDir(), "bench.md")
	code, stdout, errOut := cli(t, "bench", "--messages", "100", "--delay-messages", "50", "--batch", "10",
		"--replay-messages", "50", "--resolution", "50ms", "--scrape-groups", "2", "--scrape-partitions", "10",
		"--monitor-workers", "50", "--scrapes", "2", "--scenarios", "publish,consume,delay,replay,scrape,monitor", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"| scenario |", "| CPU/msg | msg/s per core | allocs/msg |", "| publish | rabbitmq | raw |", "| publish | rabbitmq | redrive |",
		"| consume | kafka | redrive |", "| delay | rabbitmq | redrive |", "| replay | rabbitmq | redrive |",
		"| scrape | kafka | redrive |", "| monitor | redis | redrive |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	// Every row has its costs: CPU/msg, what one core handles, allocs/msg
	// (columns 8-10), each a positive finite figure.
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[2:] {
		f := strings.Split(line, "|")
		if len(f) < 11 {
			t.Errorf("short row: %s", line)
			continue
		}
		cpu, cerr := time.ParseDuration(strings.TrimSpace(f[8]))
		core, perr := strconv.ParseFloat(strings.TrimSpace(f[9]), 64)
		allocs, aerr := strconv.ParseFloat(strings.TrimSpace(f[10]), 64)
		if cerr != nil || perr != nil || aerr != nil || cpu <= 0 || !(core > 0) || math.IsInf(core, 0) || !(allocs > 0) || math.IsInf(allocs, 0) {
			t.Errorf("costs %q %q %q: %s", f[8], f[9], f[10], line)
		}
	}
	if strings.Contains(stdout, "| retry |") {
		t.Errorf("--scenarios not honoured:\n%s", stdout)
	}
	file, err := os.ReadFile(out)
	if err != nil || string(file) != stdout {
		t.Errorf("--out: %v, %q", err, file)
	}
}

// TestBenchPeersTiny: --peers builds the peers module (found above the
// working directory) and adds its rows; it checks the table, never the
// figures.
func TestBenchPeersTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the peers module; talks to RabbitMQ")
	}
	code, stdout, errOut := cli(t, "bench", "--peers", "--broker", "rabbitmq", "--scenarios", "publish",
		"--messages", "100", "--batch", "10")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"| vs best peer |", "| publish | rabbitmq | watermill-amqp | 100 |", "(vs watermill-amqp)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
}

func TestBenchStoreBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "store", "--entries", "10"},
		{"bench", "store", "--batch", "20000"},
		{"bench", "store", "--samples", "-1"},
	} {
		code, out, errOut := cli(t, args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "redrive: bench store: ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: %d %q %q", args, code, out, errOut)
		}
	}
}

// TestBenchStoreTiny runs `bench store` at its smallest size against the
// real PostgreSQL; it checks the tables, never the figures.
func TestBenchStoreTiny(t *testing.T) {
	out := filepath.Join(t.TempDir(), "store.md")
	code, stdout, errOut := cli(t, "bench", "store", "--entries", "1000", "--samples", "2", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"| 1000 |", "batch insert /s", "| page: first, DLQ × pending | 2 |", "| summaries:", "| entry by id"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if file, err := os.ReadFile(out); err != nil || string(file) != stdout {
		t.Errorf("--out: %v, %q", err, file)
	}
}
