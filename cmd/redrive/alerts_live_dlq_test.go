package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/rabbit"
)

// TestAlertsLiveDLQResolves (issue 41) runs DLQFinancial in a real
// Prometheus scraping a fresh `redrive serve` while a real worker process
// dead-letters into a critical DLQ:
//
//   - the dead letter fires DLQFinancial; once the operator discarded it
//     (`redrive dlq discard`), the alert resolves at the next evaluations,
//     not five minutes after the arrival as the arrival term of the
//     earlier rule held it (poll gives up after 45 s);
//   - a second dead letter, discarded as soon as it is stored, before any
//     evaluation saw it pending and within five minutes of the first
//     firing, still fires once (Prometheus's ALERTS history holds a firing
//     sample after it), then resolves.
func TestAlertsLiveDLQResolves(t *testing.T) {
	d := newLiveDeployment(t)
	if code, out, errOut := cli(t, "topology", "apply", "--config", d.serveConfig); code != exitOK {
		t.Fatalf("topology apply: %d %s%s", code, out, errOut)
	}
	startDaemon(t, "serve", "--config", d.serveConfig, "--insecure-no-auth", "--sample-interval", "500ms")
	prom := startPrometheus(t, d.metrics)
	startLiveWorker(t, d.payMail, "p-"+d.id, d.dir)
	payDLQ := rabbit.DLQ(rabbit.Queue("live.pay."+d.id, d.pay))
	match := map[string]string{"dlq": payDLQ}
	poll(t, "the critical DLQ's counter scraped at 0", func() bool {
		s := prom.query(t, fmt.Sprintf(`worker_dlq_messages_total{dlq=%q}`, payDLQ))
		return len(s) == 1 && s[0].Value == "0"
	}, func() string { return "" })

	// One dead letter: fires; discarded: resolves.
	d.publish(t, "live.pay."+d.id, "poison")
	prom.waitAlert(t, "DLQFinancial", match)
	first := pendingEntry(t, d, payDLQ)
	discard(t, d, payDLQ, first)
	discarded := time.Now()
	prom.waitResolved(t, "DLQFinancial", match)
	t.Logf("DLQFinancial resolved %s after the discard", time.Since(discarded).Round(10*time.Millisecond))

	// Another, discarded as soon as it is stored. The first firing's
	// ALERTS samples are older than resolved: the window below, from
	// resolved to now, sees only a firing for the second.
	resolved := time.Now()
	d.publish(t, "live.pay."+d.id, "poison")
	second := pendingEntry(t, d, payDLQ)
	discard(t, d, payDLQ, second)
	var fired string
	poll(t, "DLQFinancial fired for a dead letter discarded at once", func() bool {
		fired = fmt.Sprintf(`max_over_time(ALERTS{alertname="DLQFinancial",alertstate="firing",dlq=%q}[%dms])`, payDLQ, time.Since(resolved).Milliseconds())
		return len(prom.query(t, fired)) == 1
	}, func() string { return fired + "\n" + describeAlerts(prom.alerts(t)) })
	prom.waitResolved(t, "DLQFinancial", match)
}

// pendingEntry waits until dlqName holds one pending entry and returns its
// id.
func pendingEntry(t *testing.T, d *liveDeployment, dlqName string) string {
	t.Helper()
	var id, body string
	eventually(t, "a pending entry in "+dlqName, func() bool {
		var code int
		code, body = httpGet("http://" + d.admin + "/internal/v1/dlq/" + dlqName + "?status=pending")
		var page struct {
			Entries []struct {
				ID string `json:"id"`
			} `json:"entries"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Entries) != 1 {
			return false
		}
		id = page.Entries[0].ID
		return true
	}, func() string { return body })
	return id
}

// discard discards entry id of dlqName as an operator does.
func discard(t *testing.T, d *liveDeployment, dlqName, id string) {
	t.Helper()
	code, out, errOut := cli(t, "dlq", "discard", dlqName, id, "--config", d.serveConfig, "--reason", "resolved by the operator")
	if code != exitOK || !strings.Contains(out, "discarded") {
		t.Fatalf("dlq discard %s %s: %d %s%s", dlqName, id, code, out, errOut)
	}
}
