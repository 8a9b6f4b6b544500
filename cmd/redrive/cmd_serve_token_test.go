package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// A configuration of before named operators (one admin.token, one
// admin.viewer_token) keeps working: the CLI takes the token from the
// configuration and is audited as "admin", a claim (--actor) beside it;
// the console logs both tokens in; the viewer token reads the API (it
// was refused there before) and changes nothing. Counted: 3 dead letters
// = 1 replayed + 1 discarded + 1 pending.
func TestServeSingleToken(t *testing.T) {
	id := strings.ToLower(broker.NewMessageID()[:8])
	topic, worker := "tok."+id, "billing-"+id
	e := &opsEnv{worker: worker, queue: rabbit.Queue(topic, worker)}
	e.dlqName = rabbit.DLQ(e.queue)
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	e.admin = "http://" + adminAddr
	e.path = writeConfig(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: %q, prefix: tok-%s, delay: {resolution: 100ms, factor: 2, levels: 2}}
redis: {addr: %q}
workers:
  - {name: %s, topic: %s, retry: {max_retries: 0, backoff: 100ms}}
admin: {listen: %q, token: old-shared-token, viewer_token: old-viewer-token}
exporter: {listen: %q}
`, testenv.RabbitMQ.URL(), id, testenv.Redis.URL(), worker, topic, adminAddr, metricsAddr))
	teardownAfter(t, e.path)
	d := startDaemon(t, "serve", "--config", e.path, "--sample-interval", "100ms")
	dlq := func(args ...string) (int, string, string) {
		return cli(t, append(append([]string{"dlq"}, args...), "--config", e.path)...)
	}
	eventually(t, "serve answers", func() bool {
		if _, done := d.exited(); done {
			t.Fatalf("serve exited early:\n%s", d.stderr)
		}
		code, _, _ := dlq("ls")
		return code == exitOK
	}, d.stderr.String)

	e.deadLetterRaw(t, testenv.AMQP(t), 3)
	ids := e.pendingIDs(t, d, "Bearer old-viewer-token", 3)

	if code, out, errOut := dlq("replay", e.dlqName, ids[0]); code != exitOK {
		t.Fatalf("dlq replay with admin.token: %d %s%s", code, out, errOut)
	}
	if code, out, errOut := dlq("discard", e.dlqName, ids[1], "--reason", "dup", "--actor", "bob"); code != exitOK {
		t.Fatalf("dlq discard --actor bob: %d %s%s", code, out, errOut)
	}
	if code, out, _ := cli(t, "admin", "whoami", "--config", e.path); code != exitOK || out != "admin (operator, by token); audited as admin\n" {
		t.Errorf("admin whoami: %d %q", code, out)
	}
	if code, m := e.api(t, "DELETE", "/internal/v1/dlq/"+e.dlqName+"/"+ids[2]+"?reason=x", "", "Bearer old-viewer-token"); code != http.StatusForbidden || m["code"] != "read_only" {
		t.Errorf("the viewer token's discard: %d %v", code, m)
	}

	// The console logs both tokens in; the viewer may not replay.
	for _, tc := range []struct {
		token  string
		replay int
	}{{"old-viewer-token", http.StatusForbidden}, {"old-shared-token", http.StatusSeeOther}} {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		post := func(path string, form url.Values) int {
			req, _ := http.NewRequest("POST", e.admin+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := post("/login", url.Values{"token": {tc.token}, "next": {"/"}}); code != http.StatusSeeOther {
			t.Fatalf("console login with %s: %d", tc.token, code)
		}
		b := &browser{t: t, base: e.admin}
		resp, err := c.Get(e.admin + "/dlq/" + e.dlqName + "/" + ids[2])
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := csrfField.FindSubmatch(page); m != nil {
			b.csrf = string(m[1])
		}
		if tc.replay == http.StatusForbidden {
			if code := post("/dlq/"+e.dlqName+"/"+ids[2]+"/replay", url.Values{"csrf": {b.csrf}}); code != tc.replay {
				t.Errorf("the viewer's console replay: %d, want %d", code, tc.replay)
			}
		}
	}

	rows := e.audited(t, "Bearer old-shared-token", ids, []entryState{{"replayed", "admin"}, {"discarded", "admin (as bob)"}, {"pending", ""}})
	if rows != 2 {
		t.Errorf("%d audit rows, want 2", rows)
	}
}
