package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Peer clients: the libraries a user might pick instead of redrive,
// measured with Config.Peers in a child process built from the peers
// module (PeersModuleDir), so that redrive's module never requires them.
const (
	ClientWatermillAMQP  = "watermill-amqp"  // ThreeDotsLabs/watermill-amqp/v3 on RabbitMQ
	ClientWatermillKafka = "watermill-kafka" // ThreeDotsLabs/watermill-kafka/v3 (IBM/sarama) on Kafka
	ClientKafkaGo        = "kafka-go"        // segmentio/kafka-go on Kafka: publish and consume only
)

// PeerScenarios are the scenarios the peers run.
var PeerScenarios = []string{ScenarioPublish, ScenarioConsume, ScenarioRetry, ScenarioDLQ}

// PeersModuleDir is the peers module's directory in redrive's source tree.
const PeersModuleDir = "internal/tools/bench/peers"

// isPeer reports whether client is a peer library.
func isPeer(client string) bool {
	return client == ClientWatermillAMQP || client == ClientWatermillKafka || client == ClientKafkaGo
}

// FindPeersDir returns PeersModuleDir of the redrive source tree that
// holds the working directory.
func FindPeersDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("peers: %w", err)
	}
	for d := wd; ; {
		dir := filepath.Join(d, PeersModuleDir)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("%w: peers: no %s/go.mod in %s or above: run in a clone of redrive or name the peers directory", ErrInvalidConfig, PeersModuleDir, wd)
		}
		d = parent
	}
}

// peerRequest is the peers module's Request (internal/tools/bench/peers,
// protocol.go): the one JSON line a peer reads from its stdin.
type peerRequest struct {
	Peer        string   `json:"peer"`
	Scenario    string   `json:"scenario"`
	URL         string   `json:"url,omitempty"`
	Exchange    string   `json:"exchange,omitempty"`
	Queue       string   `json:"queue,omitempty"`
	QueueType   string   `json:"queue_type,omitempty"`
	Brokers     []string `json:"brokers,omitempty"`
	Topic       string   `json:"topic"`
	PoisonTopic string   `json:"poison_topic,omitempty"`
	Group       string   `json:"group,omitempty"`
	Messages    int      `json:"messages"`
	Size        int      `json:"size"`
	Batch       int      `json:"batch"`
	Concurrency int      `json:"concurrency"`
	Prefetch    int      `json:"prefetch"`
	TimeoutMS   int64    `json:"timeout_ms"`
}

// peerEvent is the peers module's Event: one JSON line of a peer's stdout.
type peerEvent struct {
	Event     string `json:"event"`
	Messages  int    `json:"messages"`
	ElapsedNS int64  `json:"elapsed_ns"`
	FirstNS   int64  `json:"first_ns"`
	CPUNS     int64  `json:"cpu_ns"`
	Mallocs   uint64 `json:"mallocs"`
	P50NS     int64  `json:"p50_ns"`
	P99NS     int64  `json:"p99_ns"`
	MaxNS     int64  `json:"max_ns"`
	Note      string `json:"note"`
	Error     string `json:"error"`
}

// peerRunner runs peer measurements from a binary built of the peers
// module.
type peerRunner struct {
	tmp    string
	bin    string
	logger *slog.Logger
}

// buildPeers builds the peers module in dir with the go command.
func buildPeers(ctx context.Context, dir string, logger *slog.Logger) (*peerRunner, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("peers: the go command builds the peers module: %w", err)
	}
	tmp, err := os.MkdirTemp("", "redrive-bench-peers-")
	if err != nil {
		return nil, fmt.Errorf("peers: %w", err)
	}
	p := &peerRunner{tmp: tmp, bin: filepath.Join(tmp, "peers"), logger: logger}
	logger.Info("bench: building the peers module", "dir", dir)
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", p.bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		p.close()
		return nil, fmt.Errorf("peers: go build in %s: %w: %s", dir, err, tail(out, 2000))
	}
	return p, nil
}

// close removes the built binary.
func (p *peerRunner) close() { _ = os.RemoveAll(p.tmp) }

// run runs one measurement of req in a child process and returns its row:
// the child's time, CPU and allocations over its measured interval plus
// this process's CPU and allocations over the same interval (an
// in-process kfake serves the Kafka peers; on RabbitMQ this process only
// waits).
func (p *peerRunner) run(ctx context.Context, req peerRequest, brokerName string) (Row, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return Row{}, err
	}
	cmd := exec.CommandContext(ctx, p.bin)
	cmd.Stdin = bytes.NewReader(append(line, '\n'))
	var stderr tailWriter
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Row{}, err
	}
	if err := cmd.Start(); err != nil {
		return Row{}, fmt.Errorf("%s: start: %w", req.Peer, err)
	}
	var (
		m       meter
		started bool
		res     *peerEvent
		parent  usage
		perr    error
	)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		var ev peerEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			perr = fmt.Errorf("bad event line %.200q: %w", sc.Bytes(), err)
			break
		}
		switch {
		case ev.Event == "start" && !started:
			started, m = true, startMeter()
		case ev.Event == "result" && started && res == nil:
			_, parent = m.stop()
			res = &ev
		case ev.Event == "error":
			perr = errors.New(ev.Error)
		default:
			perr = fmt.Errorf("unexpected event %q", ev.Event)
		}
		if perr != nil {
			break
		}
	}
	if err := sc.Err(); err != nil && perr == nil {
		perr = fmt.Errorf("read events: %w", err)
	}
	_, _ = io.Copy(io.Discard, stdout) // every read ends before Wait
	werr := cmd.Wait()
	switch {
	case perr != nil:
		return Row{}, fmt.Errorf("%s: %w%s", req.Peer, perr, stderr.suffix())
	case werr != nil && ctx.Err() != nil:
		return Row{}, fmt.Errorf("%s: stopped (%w): %w; raise --timeout%s", req.Peer, ctx.Err(), werr, stderr.suffix())
	case werr != nil:
		return Row{}, fmt.Errorf("%s: %w%s", req.Peer, werr, stderr.suffix())
	case res == nil:
		return Row{}, fmt.Errorf("%s: exited without a result%s", req.Peer, stderr.suffix())
	case res.Messages != req.Messages:
		return Row{}, fmt.Errorf("%s: result of %d messages, want %d", req.Peer, res.Messages, req.Messages)
	}
	// The child's CPU over its measured interval is part of what the
	// kernel counted for its whole life (wait4's rusage).
	if life := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(); cpuMeasured && time.Duration(res.CPUNS) > life+time.Millisecond {
		return Row{}, fmt.Errorf("%s: reported %s of CPU in its measured interval, more than its whole life's %s", req.Peer, time.Duration(res.CPUNS), life)
	}
	u := usage{cpu: time.Duration(res.CPUNS), mallocs: res.Mallocs}.add(parent)
	r := row(req.Scenario, brokerName, req.Peer, res.Messages, time.Duration(res.ElapsedNS), u)
	r.P50, r.P99, r.Max = time.Duration(res.P50NS), time.Duration(res.P99NS), time.Duration(res.MaxNS)
	r.Note = res.Note
	if req.Scenario != ScenarioPublish {
		r.Note += "; first after " + dur(time.Duration(res.FirstNS))
	}
	return r, nil
}

// comparePeers sets each redrive row's VsPeer against the fastest peer
// row of the same scenario and broker.
func comparePeers(rows []Row) {
	for i := range rows {
		r := &rows[i]
		if r.Client != ClientRedrive || r.Rate <= 0 {
			continue
		}
		for _, p := range rows {
			if isPeer(p.Client) && p.Scenario == r.Scenario && p.Broker == r.Broker && p.Rate > 0 &&
				(r.BestPeer == "" || r.Rate/p.Rate < r.VsPeer) {
				r.VsPeer, r.BestPeer = r.Rate/p.Rate, p.Client
			}
		}
	}
}

// runsPeers reports whether scenario has peer rows.
func runsPeers(scenario string) bool { return slices.Contains(PeerScenarios, scenario) }

// poisonWant is how many of n messages the dlq scenario's handlers fail
// for good (every 100th, from 0); the retry scenario's all succeed on a
// retry.
func poisonWant(scenario string, n int) int64 {
	if scenario == ScenarioDLQ {
		return int64((n + 99) / 100)
	}
	return 0
}

// checkCount compares what a peer left on the broker with what it should
// have: fewer is an error (lost), more is reported in the returned note
// (duplicates).
func checkCount(what string, got, want int64) (string, error) {
	switch {
	case got < want:
		return "", fmt.Errorf("%s holds %d messages, want %d: %d lost", what, got, want, want-got)
	case got > want:
		return fmt.Sprintf("; %d duplicates in %s", got-want, what), nil
	}
	return "", nil
}

// tailWriter keeps the last 4 KiB written to it.
type tailWriter struct{ b []byte }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = append(t.b[:0], t.b[len(t.b)-4096:]...)
	}
	return len(p), nil
}

// suffix is ": <stderr tail>" or "" when nothing was written.
func (t *tailWriter) suffix() string {
	if s := strings.TrimSpace(string(t.b)); s != "" {
		return ": stderr: " + s
	}
	return ""
}

// tail returns the last n bytes of b as a trimmed string.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
