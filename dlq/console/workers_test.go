package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/heartbeat"
)

// TestWorkersPageShownEscaped: a worker's type, instance, status and
// reason come from Redis, written by anyone: the page shows their control
// and bidirectional characters as escapes (html/template escapes markup,
// not U+202E), and markup stays text.
func TestWorkersPageShownEscaped(t *testing.T) {
	evil := "\x1b]52;c;ZXZpbA==\x07\u202e<script>x</script>"
	f := newFixture(t, stores[0].Open(t), func(cfg *console.Config) {
		cfg.Workers = workerSource{rows: []heartbeat.WorkerStatus{{Type: "t" + evil, Instance: "i" + evil, Status: heartbeat.Status("S" + evil),
			Severity: heartbeat.SeverityWarning, Conditions: []heartbeat.Condition{heartbeat.ConditionMalformed}, LastSeen: time.Now(), Reason: "r" + evil}}}
	})
	r := f.client().login(viewerToken).get("/workers")
	expect(t, "workers", r, http.StatusOK, `t\x1b]52;c;ZXZpbA==\a\u202e&lt;script&gt;`, `i\x1b]52`, `S\x1b]52`, `r\x1b]52`)
	if strings.ContainsAny(r.body, "\x1b\x07\u202e") || strings.Contains(r.body, "<script>x") {
		for _, l := range strings.Split(r.body, "\n") {
			if strings.ContainsAny(l, "\x1b\x07\u202e") || strings.Contains(l, "<script>x") {
				t.Errorf("the workers page holds a raw escape, bidi override or markup from Redis: %q", l)
			}
		}
	}
}
