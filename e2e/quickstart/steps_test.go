package quickstart

import (
	"regexp"
	"strings"
	"time"
)

// paid is what the README's program logs for the payout it handles.
const paid = `paid {"deal":"550e8400"}`

// walk runs the guide's shell lines in order, as a shell would, checking
// after each what the README says it does.
func (w *walk) walk(sh []string, dlqName string) {
	w.t.Helper()
	var id string
	var worker *job
	for _, line := range sh {
		switch {
		case strings.HasPrefix(line, "make build"):
			// The walk's own build is first on PATH (newWalk).
		case strings.HasPrefix(line, "export "):
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
			if !ok || strings.ContainsAny(v, "$`\"'") {
				w.t.Fatalf("README Quick start: the walk reads `export NAME=value` with a plain value, not %q", line)
			}
			w.env[k] = v
		case line == "kill $(jobs -p)":
			if worker == nil || !strings.Contains(worker.out.String(), paid) {
				w.t.Fatalf("README Quick start: the worker never logged %q before %q:\n%s", paid, line, w.jobLogs())
			}
			for _, j := range w.jobs {
				if err := j.stop(); err != nil {
					w.t.Errorf("%q after kill: %v (want a clean exit):\n%s", j.line, err, j.out)
				}
			}
		case strings.HasSuffix(line, "&"):
			cmd := strings.TrimSpace(strings.TrimSuffix(line, "&"))
			switch {
			case strings.HasPrefix(cmd, "redrive dev --no-samples"):
				w.kafka(w.start(cmd + " --kafka-port 0"))
			case strings.HasPrefix(cmd, "./"):
				worker = w.start(cmd)
				w.waitFor(worker, "worker: consuming", 2*time.Minute)
			default:
				w.start(cmd)
			}
		case strings.HasPrefix(line, "redrive dlq ls "+dlqName+" "):
			out := w.eventually(line, func(code int, out string) bool {
				return code == 0 && entryID(out) != ""
			})
			id = entryID(out)
		case strings.HasPrefix(line, "redrive dlq ls "):
			w.eventually(line, func(code int, out string) bool {
				row := fields(out, dlqName+" ")
				return code == 0 && len(row) > 2 && row[2] == "1"
			})
		case strings.HasPrefix(line, "redrive dlq replay "):
			if id == "" || !strings.Contains(line, " ID ") {
				w.t.Fatalf("README Quick start: %q: the walk replays the ID the listing printed, written ID", line)
			}
			line = strings.Replace(line, " ID ", " "+id+" ", 1)
			w.eventually(line, func(code int, out string) bool {
				return code == 0 && strings.HasPrefix(out, "replayed ")
			})
			w.waitFor(worker, paid, time.Minute)
		default:
			code, out := w.exec(line)
			if code != 0 {
				w.t.Fatalf("%s: exit %d:\n%s\n%s", line, code, out, w.jobLogs())
			}
			if strings.Contains(line, "--dry-run") && !strings.Contains(out, "create ") {
				w.t.Errorf("%s: nothing to create on fresh names:\n%s", line, out)
			}
		}
	}
	for _, j := range w.jobs {
		select {
		case <-j.done:
		default:
			w.t.Errorf("README Quick start: %q still runs after the last command", j.line)
		}
	}
}

// kafka waits for `redrive dev --no-samples` to print its embedded Kafka
// and points KAFKA_BROKERS at it.
func (w *walk) kafka(dev *job) {
	w.t.Helper()
	re := regexp.MustCompile(`embedded Kafka \(kfake\) at (\S+)`)
	w.waitFor(dev, "kafka: {brokers:", time.Minute)
	m := re.FindStringSubmatch(dev.out.String())
	if m == nil {
		w.t.Fatalf("redrive dev --no-samples does not say where its Kafka is:\n%s", dev.out)
	}
	w.env["KAFKA_BROKERS"] = m[1]
}

// waitFor waits until j printed s.
func (w *walk) waitFor(j *job, s string, within time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(j.out.String(), s) {
		w.running()
		if time.Now().After(deadline) {
			w.t.Fatalf("%q did not print %q within %s:\n%s", j.line, s, within, w.jobLogs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// entryID is the ID of the pending entry "payouts are on hold" in a `dlq
// ls DLQ` table.
func entryID(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "pending" && strings.Contains(l, "payouts are on hold") {
			return f[0]
		}
	}
	return ""
}

// fields returns the fields of the first line of out starting with prefix.
func fields(out, prefix string) []string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.Fields(l)
		}
	}
	return nil
}
