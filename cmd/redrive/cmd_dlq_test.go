package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// fakeAdmin is an admin API that answers from a table and records the
// requests.
type fakeAdmin struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
	answer   func(r *http.Request) (int, string)
}

func newFakeAdmin(t *testing.T, answer func(r *http.Request) (int, string)) (*fakeAdmin, string) {
	t.Helper()
	f := &fakeAdmin{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := r.Body.Read(buf)
			body.Write(buf[:n])
			if err != nil {
				break
			}
		}
		f.mu.Lock()
		f.requests = append(f.requests, r)
		f.bodies = append(f.bodies, body.String())
		f.mu.Unlock()
		code, out := f.answer(r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(out))
	}))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeAdmin) last() (*http.Request, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1], f.bodies[len(f.bodies)-1]
}

// The client's side of the contract: where it sends what, with which
// token and actor, flags after the arguments, and how answers map to exit
// statuses (4xx → 2 with the server's message, 5xx and unreachable → 1).
func TestDLQClient(t *testing.T) {
	clearEnv(t)
	t.Setenv("REDRIVE_ADMIN_TOKEN", "env-token")
	f, url := newFakeAdmin(t, func(r *http.Request) (int, string) {
		switch {
		case r.URL.Path == "/internal/v1/dlq/orders.billing.dlq/boom":
			return 500, `{"error":"internal error"}`
		case r.URL.Path == "/internal/v1/dlq/orders.billing.dlq/gone":
			return 404, `{"error":"no such entry"}`
		case r.Method == http.MethodDelete:
			return 200, `{"entry":{"id":"e1","status":"discarded"}}`
		case r.URL.Path == "/internal/v1/dlq/replay":
			return 409, "{\"error\":\"dead letter is not pending:\\nstatus replayed\"}"
		case r.URL.Path == "/internal/v1/dlq/orders.billing.dlq":
			return 200, `{"dlq":"orders.billing.dlq","entries":[{"id":"e1","status":"pending","received_at":"2025-01-15T10:30:00Z","reason":"permanent","retry_count":2,"error_class":"db.Timeout","error_message":"timeout\nafter 5s"}],"next_cursor":"YzFkMg"}`
		}
		return 200, `{"dlqs":[{"dlq":"orders.billing.dlq","severity":"critical","pending":3,"replayed":1,"retention":"forever"}]}`
	})
	dlq := func(args ...string) (int, string, string) {
		return cli(t, append([]string{"dlq"}, args...)...)
	}

	code, out, errOut := dlq("ls", "--server", url, "--actor", "bob")
	if row := fields(out, "orders.billing.dlq "); code != exitOK || len(row) != 9 || row[1] != "critical" || row[2] != "3" || row[8] != "forever" {
		t.Errorf("dlq ls: %d %q %q", code, out, errOut)
	}
	r, _ := f.last()
	if r.URL.Path != "/internal/v1/dlq" || r.Header.Get("Authorization") != "Bearer env-token" || r.Header.Get("X-Redrive-Actor") != "bob" {
		t.Errorf("dlq ls sent %s %s, auth %q, actor %q", r.Method, r.URL, r.Header.Get("Authorization"), r.Header.Get("X-Redrive-Actor"))
	}

	// Flags after the argument; the query carries the filters.
	code, out, _ = dlq("ls", "orders.billing.dlq", "--server", url, "--status", "pending", "--error-class", "db.Timeout", "--q", "time out", "--limit", "1", "--token", "flag-token")
	r, _ = f.last()
	if q := r.URL.Query(); q.Get("status") != "pending" || q.Get("error_class") != "db.Timeout" || q.Get("q") != "time out" || q.Get("limit") != "1" || r.Header.Get("Authorization") != "Bearer flag-token" {
		t.Errorf("dlq ls DLQ sent %s, auth %q", r.URL, r.Header.Get("Authorization"))
	}
	// Without --actor, no claim: the token names its holder ($USER is
	// nobody's credential).
	if v := r.Header.Values("X-Redrive-Actor"); v != nil {
		t.Errorf("dlq ls without --actor sent X-Redrive-Actor %q", v)
	}
	if row := fields(out, "e1 "); code != exitOK || len(row) < 7 || row[1] != "pending" || row[4] != "2" || !strings.Contains(out, "timeout after 5s") || !strings.Contains(out, "--cursor YzFkMg") {
		t.Errorf("dlq ls DLQ: %d\n%s", code, out)
	}
	if code, out, _ := dlq("ls", "orders.billing.dlq", "--server", url, "--json"); code != exitOK || !json.Valid([]byte(out)) || !strings.Contains(out, `"next_cursor": "YzFkMg"`) {
		t.Errorf("dlq ls --json: %d %s", code, out)
	}

	if code, out, _ := dlq("discard", "orders.billing.dlq", "e1", "--server", url, "--reason", "duplicate"); code != exitOK || !strings.Contains(out, "discarded orders.billing.dlq/e1") {
		t.Errorf("discard: %d %s", code, out)
	}
	r, body := f.last()
	if r.Method != http.MethodDelete || r.URL.Path != "/internal/v1/dlq/orders.billing.dlq/e1" || body != `{"reason":"duplicate"}` {
		t.Errorf("discard sent %s %s %s", r.Method, r.URL.Path, body)
	}

	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"replay", "orders.billing.dlq", "e1"}, exitUsage, "redrive: dlq replay: dead letter is not pending: status replayed (HTTP 409 Conflict)\n"},
		{[]string{"show", "orders.billing.dlq", "gone"}, exitUsage, "redrive: dlq show: no such entry (HTTP 404 Not Found)\n"},
		{[]string{"show", "orders.billing.dlq", "boom"}, exitFailure, "redrive: dlq show: internal error (HTTP 500 Internal Server Error)\n"},
		{[]string{"show", "orders.billing.dlq"}, exitUsage, "redrive: dlq show: usage: redrive dlq show [flags] DLQ ID (run 'redrive dlq show --help')\n"},
		{[]string{"discard", "orders.billing.dlq", "e1", "--reason", "  "}, exitUsage, "redrive: dlq discard: --reason is required: say why the entry is discarded (it goes to the audit log)\n"},
		{[]string{"ls", "--status", "pending"}, exitUsage, "redrive: dlq ls: --status, --error-class, --q, --group, --limit and --cursor list the entries of one DLQ: redrive dlq ls DLQ [flags]\n"},
		{[]string{"ls", "orders.billing.dlq", "--frob"}, exitUsage, "redrive: dlq ls: unknown flag --frob (run 'redrive dlq ls --help')\n"},
	} {
		code, out, errOut := dlq(append(tt.args, "--server", url)...)
		if code != tt.code || out != "" || errOut != tt.want {
			t.Errorf("dlq %v = %d %q %q, want %d %q", tt.args, code, out, errOut, tt.code, tt.want)
		}
	}

	// Nothing listens: a runtime failure, on one line.
	code, _, errOut = dlq("ls", "--server", "http://"+testenv.ClosedAddr(t))
	if code != exitFailure || !strings.Contains(errOut, "unreachable") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("unreachable server: %d %q", code, errOut)
	}
	// Help after the arguments.
	if code, out, _ := dlq("discard", "q", "id", "--help"); code != exitOK || !strings.Contains(out, "redrive dlq discard [flags] DLQ ID --reason TEXT") {
		t.Errorf("discard q id --help: %d %s", code, out)
	}
}

// The default server and token come from the configuration.
func TestDLQClientFromConfig(t *testing.T) {
	clearEnv(t)
	f, url := newFakeAdmin(t, func(*http.Request) (int, string) { return 200, `{"dlqs":[]}` })
	path := writeConfig(t, "broker: rabbitmq\nadmin: {listen: \""+strings.TrimPrefix(url, "http://")+"\", token: cfg-token}\n")
	if code, out, errOut := cli(t, "dlq", "ls", "--config", path); code != exitOK || !strings.HasPrefix(out, "DLQ ") {
		t.Fatalf("dlq ls: %d %q %q", code, out, errOut)
	}
	if r, _ := f.last(); r.Header.Get("Authorization") != "Bearer cfg-token" {
		t.Errorf("token = %q, want the configuration's", r.Header.Get("Authorization"))
	}
	if got := dialable("0.0.0.0:8080"); got != "127.0.0.1:8080" {
		t.Errorf("dialable(0.0.0.0:8080) = %s", got)
	}
	if got := dialable("[::]:8080"); got != "[::1]:8080" {
		t.Errorf("dialable([::]:8080) = %s", got)
	}
}

// Without a token anywhere, a server that asks for one is answered with
// what to set, not with its 401; a token that is refused keeps the
// server's message.
func TestDLQClientWithoutToken(t *testing.T) {
	clearEnv(t)
	_, url := newFakeAdmin(t, func(r *http.Request) (int, string) {
		return http.StatusUnauthorized, `{"error":"missing or invalid bearer token"}`
	})
	path := writeConfig(t, "broker: rabbitmq\nadmin: {listen: \""+strings.TrimPrefix(url, "http://")+"\"}\n")
	code, out, errOut := cli(t, "dlq", "ls", "--config", path)
	if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "redrive: dlq ls: no token configured: set REDRIVE_ADMIN_TOKEN or --token") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("dlq ls without a token: %d %q %q", code, out, errOut)
	}
	code, _, errOut = cli(t, "dlq", "ls", "--config", path, "--token", "wrong-token")
	if code != exitUsage || !strings.Contains(errOut, "missing or invalid bearer token (HTTP 401") {
		t.Errorf("dlq ls with a wrong token: %d %q", code, errOut)
	}
}

// Replay-all follows the job to its end; a failed job exits 1 with its
// error, after the progress lines.
func TestDLQReplayAllFails(t *testing.T) {
	clearEnv(t)
	polls := 0
	var mu sync.Mutex
	_, url := newFakeAdmin(t, func(r *http.Request) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPost {
			return 202, `{"job":{"id":"j1","dlq":"q.dlq","state":"running","progress":{"total":4}}}`
		}
		polls++
		if polls < 3 {
			return 200, `{"job":{"id":"j1","dlq":"q.dlq","state":"running","progress":{"total":4,"replayed":2}}}`
		}
		return 200, `{"job":{"id":"j1","dlq":"q.dlq","state":"failed","error":"the broker did not take the replay","progress":{"total":4,"replayed":2,"failed":1}}}`
	})
	code, out, errOut := cli(t, "dlq", "replay-all", "q.dlq", "--server", url, "--rate", "10", "--poll", "1ms")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != exitFailure || len(lines) != 4 ||
		lines[0] != "[------------------------------] 0/4   0%  replayed 0, skipped 0, failed 0, mismatched 0" ||
		lines[1] != "[###############---------------] 2/4  50%  replayed 2, skipped 0, failed 0, mismatched 0" ||
		lines[2] != "[######################--------] 3/4  75%  replayed 2, skipped 0, failed 1, mismatched 0" ||
		lines[3] != "redrive: dlq replay-all: replay-all job j1 failed: the broker did not take the replay" ||
		out != "replay-all of q.dlq failed: 2 replayed, 0 skipped, 1 failed, 0 mismatched of 4 (job j1)\n" {
		t.Errorf("replay-all: %d\nstdout %q\nstderr:\n%s", code, out, errOut)
	}
	if code, _, errOut := cli(t, "dlq", "replay-all", "q.dlq", "--server", url, "--rate", "fast"); code != exitUsage || !strings.Contains(errOut, `"fast" is not 0 (as fast as the broker confirms)`) {
		t.Errorf("--rate fast: %d %q", code, errOut)
	}
}

func TestProgressLine(t *testing.T) {
	var j dlq.Job
	j.State = "running"
	if got := progressLine(j); got != "[------------------------------] 0/?  replayed 0, skipped 0, failed 0, mismatched 0" {
		t.Errorf("counting: %q", got)
	}
	j.State = "done"
	if got := progressLine(j); got != "[##############################] 0/0 100%  replayed 0, skipped 0, failed 0, mismatched 0" {
		t.Errorf("nothing to do: %q", got)
	}
	var w strings.Builder
	b := &progressBar{w: &w, tty: true}
	j.State, j.Progress.Total, j.Progress.Replayed = "running", 10, 10
	b.update(j)
	b.update(j) // unchanged: not redrawn
	b.done()
	if got := w.String(); got != "\r[##############################] 10/10 100%  replayed 10, skipped 0, failed 0, mismatched 0\n" {
		t.Errorf("terminal output %q", got)
	}
}
