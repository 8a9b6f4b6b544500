package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// hostile is what a sender can put in a dead letter: an OSC 52 sequence
// (writes the clipboard), a screen clear, a bidi override, a C1 CSI,
// invalid UTF-8 and line breaks.
const hostile = "boom \x1b]52;c;ZXZpbA==\x07 \x1b[2J\x1b[H \u202eexe.gnp \u009b31m \xff\r\nSet-Title: x"

// TestDLQOutputEscapesMessages: `dlq ls`, `dlq show`, `dlq jobs` and the
// error lines print every control character of message data escaped;
// --json prints the server's JSON exactly.
func TestDLQOutputEscapesMessages(t *testing.T) {
	clearEnv(t)
	s := func(v string) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	entry := `{"id":"e1","dlq":"orders.billing.dlq","status":"pending","received_at":"2025-01-15T10:30:00Z","reason":` + s(hostile) +
		`,"retry_count":2,"error_class":` + s(hostile) + `,"error_message":` + s(hostile) + `,"source":` + s(hostile) +
		`,"worker":` + s(hostile) + `,"message_id":` + s(hostile)
	detail := entry + `,"stack_trace":` + s(hostile+"\n\tat x") + `,"key":` + s(hostile) + `,"key_encoding":"utf8","payload":` +
		s(hostile) + `,"payload_encoding":"utf8","headers":{` + s("h"+hostile) + `:` + s(hostile) + `},"audit":[{"at":"2025-01-15T10:31:00Z","actor":` +
		s(hostile) + `,"action":"replay_failed","from":"replaying","to":"pending","reason":` + s(hostile) + `}]}`
	jsonDetail := `{"id":"e2","payload":{"note":` + s(hostile) + `},"payload_encoding":"json","audit":[]}`
	_, url := newFakeAdmin(t, func(r *http.Request) (int, string) {
		switch r.URL.Path {
		case "/internal/v1/dlq":
			return 200, `{"dlqs":[{"dlq":` + s("q"+hostile) + `,"severity":"critical","pending":1,"retention":"forever"}]}`
		case "/internal/v1/dlq/orders.billing.dlq":
			return 200, `{"dlq":"orders.billing.dlq","entries":[` + entry + `}]}`
		case "/internal/v1/dlq/orders.billing.dlq/e1":
			return 200, detail
		case "/internal/v1/dlq/orders.billing.dlq/e2":
			return 200, jsonDetail
		case "/internal/v1/dlq/jobs":
			return 200, `{"jobs":[{"id":"j1","dlq":"orders.billing.dlq","actor":` + s(hostile) + `,"state":"failed","error":` + s(hostile) + `,"started_at":"2025-01-15T10:30:00Z","progress":{}}]}`
		case "/internal/v1/dlq/replay":
			return 502, `{"error":` + s(hostile) + `,"code":"replay_failed"}`
		}
		return 404, `{"error":"no such route","code":"not_found"}`
	})
	for _, tc := range []struct {
		args []string
		want string // how the OSC 52 sequence shows
	}{
		{[]string{"ls"}, `qboom \x1b]52;c;ZXZpbA==\a`},
		{[]string{"ls", "orders.billing.dlq"}, `\x1b]52;c;ZXZpbA==\a`},
		{[]string{"show", "orders.billing.dlq", "e1"}, "\\x1b]52;c;ZXZpbA==\\a \\x1b[2J\\x1b[H \\u202eexe.gnp \\u009b31m \ufffd\\r\\nSet-Title: x"},
		{[]string{"show", "orders.billing.dlq", "e2"}, `"note": "boom \u001b]52;c;ZXZpbA==\u0007`}, // JSON shows its own escapes
		{[]string{"jobs"}, `\x1b]52;c;ZXZpbA==\a`},
		{[]string{"replay", "orders.billing.dlq", "e1"}, `\x1b]52;c;ZXZpbA==\a`},
	} {
		code, out, errOut := cli(t, append(append([]string{"dlq"}, tc.args...), "--server", url)...)
		what := "dlq " + strings.Join(tc.args, " ")
		if code == exitUsage {
			t.Errorf("%s: %d %s", what, code, errOut)
		}
		assertTerminalSafe(t, what+" stdout", out)
		assertTerminalSafe(t, what+" stderr", errOut)
		if !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%s does not show %s:\n%s%s", what, tc.want, out, errOut)
		}
	}
	// --json is the server's JSON, exact (JSON escapes control characters itself).
	code, out, _ := cli(t, "dlq", "show", "orders.billing.dlq", "e1", "--server", url, "--json")
	var got, want any
	if code != exitOK || json.Unmarshal([]byte(out), &got) != nil || json.Unmarshal([]byte(detail), &want) != nil {
		t.Fatalf("dlq show --json: %d %s", code, out)
	}
	if g, _ := json.Marshal(got); string(g) != func() string { w, _ := json.Marshal(want); return string(w) }() {
		t.Errorf("dlq show --json changed the data:\n got %s\nwant %s", g, detail)
	}
}

// TestDLQJobsAndCancel: the CLI lists and cancels replay-all and
// discard-all jobs (the outcome in the job's own terms), and
// every write it sends is JSON (the API refuses anything else).
func TestDLQJobsAndCancel(t *testing.T) {
	clearEnv(t)
	f, url := newFakeAdmin(t, func(r *http.Request) (int, string) {
		if r.Method != http.MethodGet && r.Header.Get("Content-Type") != "application/json" {
			return 415, `{"error":"Content-Type: application/json is required","code":"unsupported_media_type"}`
		}
		switch {
		case r.URL.Path == "/internal/v1/dlq/jobs":
			return 200, `{"jobs":[{"id":"j2","dlq":"a.dlq","actor":"alice","state":"running","started_at":"2025-01-15T10:30:00Z","progress":{"total":9,"replayed":3}},` +
				`{"id":"j1","dlq":"b.dlq","actor":"bob","state":"cancelled","cancelled_by":"carol","started_at":"2025-01-15T09:00:00Z","progress":{"total":2,"replayed":1}},` +
				`{"id":"j5","kind":"discard_all","dlq":"b.dlq","actor":"bob","state":"done","started_at":"2025-01-15T08:00:00Z","progress":{"total":7,"discarded":6,"skipped":1}}]}`
		case r.URL.Path == "/internal/v1/dlq/jobs/j2/cancel":
			return 200, `{"job":{"id":"j2","dlq":"a.dlq","state":"cancelled","cancelled_by":"dave","progress":{"total":9,"replayed":4}}}`
		case r.URL.Path == "/internal/v1/dlq/jobs/j4/cancel":
			return 200, `{"job":{"id":"j4","kind":"discard_all","dlq":"a.dlq","state":"cancelled","cancelled_by":"dave","progress":{"total":9,"discarded":5}}}`
		case r.URL.Path == "/internal/v1/dlq/jobs/j1/cancel":
			return 409, `{"error":"job j1 has already ended (cancelled)","code":"job_not_running"}`
		case r.URL.Path == "/internal/v1/dlq/replay-all":
			return 202, `{"job":{"id":"j3","dlq":"a.dlq","state":"done","progress":{"total":0}}}`
		}
		return 404, `{"error":"no such route","code":"not_found"}`
	})
	code, out, errOut := cli(t, "dlq", "jobs", "--server", url)
	if row := fields(out, "j2 "); code != exitOK || len(row) != 12 || row[1] != "replay-all" || row[3] != "running" || row[4] != "3" || row[5] != "0" || row[8] != "9" || row[10] != "alice" {
		t.Errorf("dlq jobs: %d %q %q", code, out, errOut)
	}
	if row := fields(out, "j1 "); len(row) != 12 || row[11] != "carol" {
		t.Errorf("dlq jobs, cancelled job: %q", out)
	}
	// A discard-all job's count is under DISCARDED, not REPLAYED.
	if row := fields(out, "j5 "); len(row) != 12 || row[1] != "discard-all" || row[4] != "0" || row[5] != "6" || row[6] != "1" || row[8] != "7" {
		t.Errorf("dlq jobs, discard-all job: %q", out)
	}
	code, out, errOut = cli(t, "dlq", "cancel", "j2", "--server", url, "--actor", "dave")
	r, body := f.last()
	if code != exitOK || out != "replay-all job j2 of a.dlq cancelled by dave: 4 replayed, 0 skipped, 0 failed, 0 mismatched of 9; the rest stay pending\n" ||
		r.Method != http.MethodPost || r.Header.Get("X-Redrive-Actor") != "dave" || body != "" {
		t.Errorf("dlq cancel: %d %q %q; sent %s %s %q", code, out, errOut, r.Method, r.URL.Path, body)
	}
	// A discard-all job says what it discarded.
	if code, out, errOut := cli(t, "dlq", "cancel", "j4", "--server", url); code != exitOK || out != "discard-all job j4 of a.dlq cancelled by dave: 5 discarded, 0 skipped, 0 failed of 9; the rest stay pending\n" {
		t.Errorf("dlq cancel of a discard-all job: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := cli(t, "dlq", "cancel", "j1", "--server", url); code != exitUsage || errOut != "redrive: dlq cancel: job j1 has already ended (cancelled) (HTTP 409 Conflict)\n" {
		t.Errorf("dlq cancel of an ended job: %d %q", code, errOut)
	}
	if code, _, errOut := cli(t, "dlq", "cancel", "--server", url); code != exitUsage || !strings.Contains(errOut, "usage: redrive dlq cancel [flags] JOB") {
		t.Errorf("dlq cancel without a job: %d %q", code, errOut)
	}
	// replay-all sends no body, but JSON all the same.
	if code, _, errOut := cli(t, "dlq", "replay-all", "a.dlq", "--server", url); code != exitOK {
		t.Errorf("dlq replay-all: %d %q", code, errOut)
	}
	for _, rate := range []string{"1e-300", "0.0001", "100001", "-1"} {
		if code, _, errOut := cli(t, "dlq", "replay-all", "a.dlq", "--server", url, "--rate", rate); code != exitUsage || !strings.Contains(errOut, "is not 0 (as fast as the broker confirms) or a number of messages per second from 0.1 to 100000") {
			t.Errorf("--rate %s: %d %q", rate, code, errOut)
		}
	}
}

// TestConfigCheckHardening: `config check` catches what `topology apply`
// or the process would trip on later, exits 2 and names the field, and
// never prints a secret or a foreign file's content.
func TestConfigCheckHardening(t *testing.T) {
	clearEnv(t)
	long := strings.Repeat("n", 243)
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"two workers, one queue", "broker: rabbitmq\nworkers: [{name: b, topic: a.x}, {name: x.b, topic: a}]",
			[]string{`workers[1].name: its group queue "a.x.b" is also the group queue of workers[0]`}},
		{"route-mode binding key", "broker: rabbitmq\nworkers: [{name: " + long + ", topic: t}]",
			[]string{"workers[0].name: the binding key", "is 261 bytes, over RabbitMQ's 255"}},
		{"kafka retry topics", "broker: kafka\nkafka: {brokers: [k:9092]}\nworkers: [{name: b.retry.c, topic: a}, {name: c, topic: a.retry.b}]",
			[]string{`workers[1].name: its retry topic "a.retry.b.retry.c" is also the retry topic of workers[0]`}},
		{"prefetch", "broker: rabbitmq\nworkers: [{name: w, topic: t, prefetch: 70000, concurrency: 99999999999999999999}]",
			[]string{"workers[0].concurrency: 99999999999999999999 is out of range", "workers[0].prefetch: 70000 is over 65535"}},
		{"tokens and addresses", "broker: rabbitmq\nadmin: {token: \" S3cr3t-token \", listen: \"127.0.0.1:9477\"}",
			[]string{"admin.token: has white space at its start or end", `exporter.listen: "127.0.0.1:9477" is admin.listen's address too`}},
		{"malformed broker URL", "broker: rabbitmq\nrabbitmq: {url: \"amqp://guest:12/S3cr3t@host/\"}\nredis: {addr: \"redis://:S3cr3t@h:6379\"}",
			[]string{`rabbitmq.url: "amqp://***" has an "@" after the host`, `redis.addr: "redis://:***@h:6379" is a URL`}},
		{"not a configuration", "root:$y$j9T$S3cr3tHash:19000:0:99999:7:::\n",
			[]string{"unknown key on line 1 (not shown: it is not a key name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cli(t, "config", "check", "--config", writeConfig(t, tc.doc))
			if code != exitUsage || out != "" {
				t.Errorf("config check = %d, stdout %q, want exit 2 and nothing printed", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(errOut, "S3cr3t") {
				t.Errorf("stderr shows a secret:\n%s", errOut)
			}
		})
	}
	if code, _, errOut := cli(t, "config", "check", "--config", "/dev/zero"); code != exitUsage || !strings.Contains(errOut, "larger than 4 MiB") {
		t.Errorf("config check --config /dev/zero: %d %q", code, errOut)
	}
}
