package e2e

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/relay"
)

// The HTTP endpoints of the relay scenarios: one in Go, one in Python
// (docs/relay.md's example, run by python3), both answering by each
// message's "behaviour" header and reporting every request they get.

// relayRequest is one POST an endpoint received, and how it answered.
type relayRequest struct {
	at             time.Time
	id, caseID     string
	attempt        int
	key            []byte // nil: the message has no key
	body           []byte
	headers        map[string]string
	replayedFrom   string
	lastErrorClass string
	redelivered    bool
	// answer is ok, fail, permanent, retry-after, hang or drop.
	answer string
}

// relayEndpoint is an endpoint the test can take down and bring back on
// the same address.
type relayEndpoint interface {
	URL() string
	// Down makes the endpoint refuse connections (the Go server closes,
	// the Python process is killed); Up brings it back.
	Down(t testing.TB)
	Up(t testing.TB)
	Requests() *testenv.Recorder[relayRequest]
}

// endpointKind starts an endpoint whose "hang" lasts hang.
type endpointKind struct {
	name  string
	start func(t testing.TB, hang time.Duration) relayEndpoint
}

var endpointKinds = []endpointKind{{"Go", startGoEndpoint}, {"Python", startPythonEndpoint}}

// behave is what an endpoint answers a message of behaviour at attempt
// (replayed: the message is a replay); see e2e/testdata/relay_harness.py.
func behave(behaviour string, attempt int, replayed bool) string {
	name, arg, _ := strings.Cut(behaviour, ":")
	n, _ := strconv.Atoi(arg)
	switch name {
	case "fail":
		if attempt <= n {
			return "fail"
		}
	case "always":
		return "fail"
	case "permanent", "drop":
		return name
	case "permanent-once":
		if !replayed {
			return "permanent"
		}
	case "retry-after":
		if attempt == 1 {
			return "retry-after"
		}
	case "hang-once":
		if attempt == 1 {
			return "hang"
		}
	}
	return "ok"
}

// goEndpoint is the Go endpoint: relay.ReadRequest, then the behaviour.
type goEndpoint struct {
	addr string
	hang time.Duration
	rec  testenv.Recorder[relayRequest]

	mu  sync.Mutex
	srv *http.Server
}

func startGoEndpoint(t testing.TB, hang time.Duration) relayEndpoint {
	e := &goEndpoint{addr: testenv.ClosedAddr(t), hang: hang}
	e.Up(t)
	t.Cleanup(func() { e.Down(t) })
	return e
}

func (e *goEndpoint) URL() string                               { return "http://" + e.addr + "/events" }
func (e *goEndpoint) Requests() *testenv.Recorder[relayRequest] { return &e.rec }

func (e *goEndpoint) Up(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		t.Fatalf("go endpoint: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(e.serve), ReadHeaderTimeout: 10 * time.Second}
	e.mu.Lock()
	e.srv = srv
	e.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

func (e *goEndpoint) Down(testing.TB) {
	e.mu.Lock()
	srv := e.srv
	e.srv = nil
	e.mu.Unlock()
	if srv != nil {
		_ = srv.Close() // the listener and every connection, at once
	}
}

func (e *goEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	m, err := relay.ReadRequest(r, 64<<20)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	answer := behave(m.Headers["behaviour"], m.Attempt, m.ReplayedFrom != "")
	e.rec.Add(relayRequest{at: time.Now(), id: m.ID, caseID: m.Headers["case"], attempt: m.Attempt, key: m.Key, body: m.Body,
		headers: m.Headers, replayedFrom: m.ReplayedFrom, lastErrorClass: m.LastErrorClass, redelivered: m.Redelivered, answer: answer})
	switch answer {
	case "fail":
		http.Error(w, fmt.Sprintf("downstream failed on attempt %d", m.Attempt), http.StatusInternalServerError)
	case "permanent":
		http.Error(w, "invalid payout "+m.ID, http.StatusUnprocessableEntity)
	case "drop":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status": "DROP", "why": "duplicate payout"}`)
	case "retry-after":
		_, s, _ := strings.Cut(m.Headers["behaviour"], ":")
		w.Header().Set("Retry-After", s)
		w.WriteHeader(http.StatusTooManyRequests)
	case "hang":
		select {
		case <-time.After(e.hang):
		case <-r.Context().Done():
		}
	}
}

// pyEndpoint is docs/relay.md's Python example run by python3 with
// e2e/testdata/relay_harness.py.
type pyEndpoint struct {
	dir, addr string
	hang      time.Duration
	rec       testenv.Recorder[relayRequest]

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

func startPythonEndpoint(t testing.TB, hang time.Duration) relayEndpoint {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("the Python endpoint needs python3 on PATH (the relay's non-Go endpoint): %v", err)
	}
	e := &pyEndpoint{dir: t.TempDir(), addr: testenv.ClosedAddr(t), hang: hang}
	if err := os.WriteFile(filepath.Join(e.dir, "endpoint.py"), pythonExample(t), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Up(t)
	t.Cleanup(func() { e.Down(t) })
	return e
}

// suiteDir is the directory of package e2e's sources, so that the suite
// finds its test data and the docs it runs from the tests of any package
// (a backend's, in its own folder), not only from e2e's.
func suiteDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("e2e: cannot locate the suite's sources")
	}
	return filepath.Dir(file)
}

// pythonExample is the Python endpoint of docs/relay.md: the fenced block
// after its "relay-endpoint.py" marker.
func pythonExample(t testing.TB) []byte {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(suiteDir(t), "..", "docs", "relay.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "<!-- relay-endpoint.py")
	if ok {
		_, rest, ok = strings.Cut(rest, "```python\n")
	}
	code, _, closed := strings.Cut(rest, "\n```")
	if !ok || !closed {
		t.Fatal("docs/relay.md has no ```python block after its relay-endpoint.py marker")
	}
	return []byte(code + "\n")
}

func (e *pyEndpoint) URL() string                               { return "http://" + e.addr + "/events" }
func (e *pyEndpoint) Requests() *testenv.Recorder[relayRequest] { return &e.rec }

func (e *pyEndpoint) Up(t testing.TB) {
	t.Helper()
	_, port, _ := net.SplitHostPort(e.addr)
	cmd := exec.Command("python3", filepath.Join(suiteDir(t), "testdata", "relay_harness.py"), e.dir, port,
		strconv.FormatFloat(e.hang.Seconds(), 'f', 3, 64))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("python endpoint: %v", err)
	}
	listening := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "listening on ") {
				once.Do(func() { close(listening) })
				continue
			}
			if r, err := parseReport(line); err == nil {
				e.rec.Add(r)
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case <-listening:
	case <-exited:
		t.Fatal("the python endpoint exited before listening")
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the python endpoint did not listen within 20s")
	}
	e.mu.Lock()
	e.cmd, e.exited = cmd, exited
	e.mu.Unlock()
}

func (e *pyEndpoint) Down(testing.TB) {
	e.mu.Lock()
	cmd, exited := e.cmd, e.exited
	e.cmd = nil
	e.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill() // SIGKILL: the process dies mid-request
	<-exited
}

// parseReport reads a request the Python endpoint reported.
func parseReport(line string) (relayRequest, error) {
	var v struct {
		ID, Case, Body, Answer string
		Attempt                int
		Key                    *string
		Headers                map[string]string
		ReplayedFrom           string `json:"replayed_from"`
		LastErrorClass         string `json:"last_error_class"`
		Redelivered            bool
	}
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		return relayRequest{}, err
	}
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			panic(err)
		}
		return b
	}
	r := relayRequest{at: time.Now(), id: v.ID, caseID: v.Case, attempt: v.Attempt, body: unhex(v.Body), headers: map[string]string{},
		replayedFrom: v.ReplayedFrom, lastErrorClass: v.LastErrorClass, redelivered: v.Redelivered, answer: v.Answer}
	if v.Key != nil {
		r.key = unhex(*v.Key)
	}
	for k, val := range v.Headers {
		r.headers[string(unhex(k))] = string(unhex(val))
	}
	if r.answer == "" {
		return r, errors.New("no answer")
	}
	return r, nil
}

// requestsOf returns the requests of one case, in order.
func requestsOf(reqs []relayRequest, caseID string) []relayRequest {
	var out []relayRequest
	for _, r := range reqs {
		if r.caseID == caseID {
			out = append(out, r)
		}
	}
	return out
}
