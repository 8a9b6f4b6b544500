package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// `redrive dev --broker memory` runs the whole stack on the in-memory
// broker, in the process: the sample workers' dead letters reach the
// keeper and the API, one replayed through the API is put back to its
// worker (its status turns replayed), and Ctrl-C stops cleanly;
// --no-samples is refused, since no other program reaches the broker.
func TestDevMemory(t *testing.T) {
	clearEnv(t)
	if code, _, errOut := cli(t, "dev", "--broker", "memory", "--no-samples"); code != exitUsage ||
		!strings.Contains(errOut, "--no-samples runs a broker for a program of yours, but the in-memory broker lives in this process") {
		t.Fatalf("dev --broker memory --no-samples: exit %d, stderr %q; want exit 2, refused", code, errOut)
	}
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	const token = "dev-test-token"
	d := startDaemon(t, "dev", "--broker", "memory", "--listen", adminAddr, "--metrics-listen", metricsAddr, "--token", token,
		"--rate", "40", "--crash-every", "0", "--stall-every", "0", "--outage-every", "0")
	eventually(t, "dev prints its tour", func() bool {
		if code, done := d.exited(); done {
			t.Fatalf("dev exited with %d:\n%s", code, d.stderr)
		}
		return strings.Contains(d.stdout.String(), "embedded in-memory broker, in this process") &&
			strings.Contains(d.stdout.String(), "http://"+adminAddr+"/")
	}, func() string { return d.stdout.String() + d.stderr.String() })

	api := func(method, path, body string, out any) int {
		req, _ := http.NewRequest(method, "http://"+adminAddr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		if out != nil && json.NewDecoder(resp.Body).Decode(out) != nil {
			return 0
		}
		return resp.StatusCode
	}
	const dlqName = "escrow.commands.payout-executor.dlq"
	type entries struct {
		Entries []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"entries"`
	}
	var list entries
	eventuallyWithin(t, 2*time.Minute, "payout-executor's dead letters are stored", func() bool {
		list = entries{}
		return api(http.MethodGet, "/internal/v1/dlq/"+dlqName, "", &list) == http.StatusOK && len(list.Entries) > 0
	}, func() string { return d.stderr.String() })
	id := list.Entries[0].ID
	if code := api(http.MethodPost, "/internal/v1/dlq/replay", `{"topic":"`+dlqName+`","id":"`+id+`"}`, nil); code != http.StatusOK {
		t.Fatalf("replay %s/%s: HTTP %d, want 200:\n%s", dlqName, id, code, d.stderr)
	}
	var entry struct {
		Status string `json:"status"`
	}
	if code := api(http.MethodGet, "/internal/v1/dlq/"+dlqName+"/"+id, "", &entry); code != http.StatusOK || entry.Status != "replayed" {
		t.Errorf("after the replay %s/%s reads HTTP %d, status %q; want replayed", dlqName, id, code, entry.Status)
	}
	if code := d.stop(t); code != exitOK {
		t.Fatalf("dev exit status %d after Ctrl-C, want 0:\n%s", code, d.stderr)
	}
	if out := d.stdout.String(); !strings.Contains(out, "the embedded in-memory broker, Redis and store are gone") {
		t.Errorf("goodbye line:\n%s", out)
	}
}
