package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestDlqGroups: `dlq groups` prints the table with a text sparkline, a
// message's control characters escaped, or the server's JSON with
// --output json; --group reaches the listing's query.
func TestDlqGroups(t *testing.T) {
	clearEnv(t)
	hourly := `[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1,4,8]`
	f, url := newFakeAdmin(t, func(r *http.Request) (int, string) {
		if r.URL.Path == "/internal/v1/dlq/orders.billing.dlq/groups" {
			return 200, `{"dlq":"orders.billing.dlq","hourly_since":"2025-01-14T11:00:00Z","groups":[{"fingerprint":"0123456789abcdef0123456789abcdef",
				"message":"bank rejected \u001b[31mtransfer <n>","error_class":"payout.BankError","worker":"billing","count":13,"pending":12,
				"first_seen":"2025-01-15T08:00:00Z","last_seen":"2025-01-15T10:30:00Z","sample_id":"e13","hourly":` + hourly + `}]}`
		}
		return 200, `{"dlq":"orders.billing.dlq","entries":[]}`
	})
	code, out, errOut := cli(t, "dlq", "groups", "orders.billing.dlq", "--server", url, "--limit", "5")
	row := fields(out, "0123456789abcdef0123456789abcdef ")
	if code != exitOK || len(row) < 8 || row[1] != "13" || row[2] != "12" || !strings.Contains(out, "▂▅█") || strings.Contains(out, "\x1b") ||
		!strings.Contains(out, "transfer <n>") || !strings.HasPrefix(out, "FINGERPRINT ") {
		t.Errorf("dlq groups: %d %q %q", code, out, errOut)
	}
	if r, _ := f.last(); r.URL.Query().Get("limit") != "5" {
		t.Errorf("dlq groups sent %s", r.URL)
	}
	if code, out, _ := cli(t, "dlq", "groups", "orders.billing.dlq", "--server", url, "--output", "json"); code != exitOK || !json.Valid([]byte(out)) || !strings.Contains(out, `"pending": 12`) {
		t.Errorf("dlq groups --output json: %d %s", code, out)
	}
	if code, _, errOut := cli(t, "dlq", "groups", "orders.billing.dlq", "--server", url, "--output", "yaml"); code != exitUsage || !strings.Contains(errOut, "table or json") {
		t.Errorf("--output yaml: %d %q", code, errOut)
	}
	if code, _, _ := cli(t, "dlq", "ls", "orders.billing.dlq", "--server", url, "--group", "0123456789abcdef0123456789abcdef"); code != exitOK {
		t.Errorf("dlq ls --group: %d", code)
	}
	if r, _ := f.last(); r.URL.Query().Get("group") != "0123456789abcdef0123456789abcdef" {
		t.Errorf("dlq ls --group sent %s", r.URL)
	}
}

// TestDlqDiscardAll: `dlq discard-all` needs a reason, sends it in the
// body with the group in the query, and follows the job to its end.
func TestDlqDiscardAll(t *testing.T) {
	clearEnv(t)
	var mu sync.Mutex
	polls := 0
	f, url := newFakeAdmin(t, func(r *http.Request) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPost {
			return 202, `{"job":{"id":"j2","kind":"discard_all","dlq":"q.dlq","state":"running","progress":{"total":3}}}`
		}
		if polls++; polls < 2 {
			return 200, `{"job":{"id":"j2","kind":"discard_all","dlq":"q.dlq","state":"running","progress":{"total":3,"discarded":1}}}`
		}
		return 200, `{"job":{"id":"j2","kind":"discard_all","dlq":"q.dlq","state":"done","progress":{"total":3,"discarded":3}}}`
	})
	if code, _, errOut := cli(t, "dlq", "discard-all", "q.dlq", "--server", url); code != exitUsage || !strings.Contains(errOut, "--reason is required") {
		t.Errorf("without --reason: %d %q", code, errOut)
	}
	code, out, errOut := cli(t, "dlq", "discard-all", "q.dlq", "--server", url, "--group", "0123456789abcdef0123456789abcdef", "--reason", "known bug", "--poll", "1ms")
	if code != exitOK || out != "discard-all of q.dlq done: 3 discarded, 0 skipped, 0 failed of 3 (job j2)\n" ||
		!strings.Contains(errOut, "[##########--------------------] 1/3  33%  discarded 1, skipped 0, failed 0") {
		t.Errorf("discard-all: %d\nstdout %q\nstderr:\n%s", code, out, errOut)
	}
	f.mu.Lock()
	first, body := f.requests[0], f.bodies[0]
	f.mu.Unlock()
	if first.Method != http.MethodPost || first.URL.Path != "/internal/v1/dlq/discard-all" || first.URL.Query().Get("group") != "0123456789abcdef0123456789abcdef" ||
		body != `{"reason":"known bug"}` {
		t.Errorf("discard-all sent %s %s %s", first.Method, first.URL, body)
	}
}
