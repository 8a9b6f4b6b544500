package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseDecodeProblems(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "unknown top-level key",
			doc:  "broker: rabbitmq\nbrokers: [x]",
			want: []string{`brokers: unknown key (line 2); did you mean "broker"?`},
		},
		{
			name: "unknown nested key",
			doc:  "broker: rabbitmq\nrabbitmq:\n  delay: {resolutoin: 2s}",
			want: []string{`rabbitmq.delay.resolutoin: unknown key (line 3); did you mean "resolution"?`},
		},
		{
			name: "unknown key in a worker",
			doc:  "broker: rabbitmq\nworkers:\n  - {name: w, topic: t}\n  - name: v\n    topic: t\n    retry:\n      max_retrys: 3",
			want: []string{`workers[1].retry.max_retrys: unknown key (line 7); did you mean "max_retries"?`},
		},
		{
			name: "unknown key without a close match",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, colour: blue}]",
			want: []string{`workers[0].colour: unknown key (line 2)`},
		},
		{
			name: "unknown key in an exponential back-off",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: {exponential: {initial: 1s, multipler: 3}}}}]",
			want: []string{`workers[0].retry.backoff.exponential.multipler: unknown key (line 2); did you mean "multiplier"?`},
		},
		{
			name: "unknown key in a lag threshold",
			doc:  "broker: rabbitmq\nlag: {thresholds: {escrow.commands: {warn: 1}}}",
			want: []string{`lag.thresholds["escrow.commands"].warn: unknown key (line 2)`},
		},
		{
			name: "several unknown keys are all reported",
			doc:  "broker: rabbitmq\nredis: {adr: x, pasword: y}\nadmin: {tokn: z}",
			want: []string{
				`redis.adr: unknown key (line 2); did you mean "addr"?`,
				`redis.pasword: unknown key (line 2); did you mean "password"?`,
				`admin.tokn: unknown key (line 3); did you mean "token"?`,
			},
		},
		{
			name: "key given twice",
			doc:  "broker: rabbitmq\nbroker: kafka",
			want: []string{`broker: key given twice (lines 1 and 2)`},
		},
		{
			name: "not an integer",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, concurrency: lots}]",
			want: []string{`workers[0].concurrency: "lots" is not an integer`},
		},
		{
			name: "a fraction is not an integer",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {max_retries: 1.5}}]",
			want: []string{`workers[0].retry.max_retries: "1.5" is not an integer`},
		},
		{
			name: "integer out of range",
			doc:  "broker: rabbitmq\nlag: {thresholds: {t: {warning: 99999999999999999999}}}",
			want: []string{`lag.thresholds["t"].warning: 99999999999999999999 is out of range`},
		},
		{
			name: "not a boolean",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {unlimited: maybe}}]",
			want: []string{`workers[0].retry.unlimited: "maybe" is not true or false`},
		},
		{
			name: "not a number",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: {exponential: {jitter: some}}}}]",
			want: []string{`workers[0].retry.backoff.exponential.jitter: "some" is not a number`},
		},
		{
			name: "mapping where a list is expected",
			doc:  "broker: rabbitmq\nworkers: {name: w}",
			want: []string{`workers: expected a list, found a mapping`},
		},
		{
			name: "list where a string is expected",
			doc:  "broker: [rabbitmq]",
			want: []string{`broker: expected a string, found a list`},
		},
		{
			name: "scalar where a mapping is expected",
			doc:  "broker: rabbitmq\nrabbitmq: amqp://h/",
			want: []string{`rabbitmq: expected a mapping, found a string`},
		},
		{
			name: "bad duration",
			doc:  "broker: rabbitmq\nheartbeat: {interval: 10}",
			want: []string{`heartbeat.interval: "10" is not a duration`},
		},
		{
			name: "duration out of range",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, queue_ttl: 9999999d}]",
			want: []string{`workers[0].queue_ttl: "9999999d" is out of range`},
		},
		{
			name: "bad back-off",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t}, {name: v, topic: t}, {name: u, topic: t, retry: {backoff: 5x}}]",
			want: []string{`workers[2].retry.backoff: "5x" is not a duration`},
		},
		{
			name: "bad back-off step",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: \"1s -> 5x -> 30s\"}}]",
			want: []string{`workers[0].retry.backoff: step 2: "5x" is not a duration`},
		},
		{
			name: "empty back-off step",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: \"1s -> -> 30s\"}}]",
			want: []string{`workers[0].retry.backoff: step 2 is empty`},
		},
		{
			name: "bad back-off list item",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: [1s, 5x]}}]",
			want: []string{`workers[0].retry.backoff[1]: "5x" is not a duration`},
		},
		{
			name: "empty back-off list",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: []}}]",
			want: []string{`workers[0].retry.backoff: the list of delays is empty`},
		},
		{
			name: "back-off mapping without exponential",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: {exponential: }}}]",
			want: []string{`workers[0].retry.backoff: expected exponential: {initial, multiplier, max, jitter}`},
		},
		{
			name: "bad retention",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, dlq: {retention: always}}]",
			want: []string{`workers[0].dlq.retention: "always" is not a duration or "forever"`},
		},
		{
			name: "document is not a mapping",
			doc:  "- broker: rabbitmq",
			want: []string{`the document must be a mapping of keys, found a list (line 1)`},
		},
		{
			name: "alias to an undefined anchor is a syntax error",
			doc:  "broker: *nothing",
			want: nil,
		},
		{
			name: "merge of itself",
			doc:  "broker: rabbitmq\nredis: &r\n  <<: *r\n",
			want: nil, // yaml rejects the alias before its anchor is complete
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse([]byte(tt.doc), noEnv)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if tt.want != nil {
				assertLines(t, err, tt.want...)
			}
		})
	}
}

func TestUnknownKeyIsErrUnknownKey(t *testing.T) {
	_, err := parse([]byte("broker: rabbitmq\nworkers: [{name: w, topic: t, retries: 3}]"), noEnv)
	if !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("error %v is not ErrUnknownKey", err)
	}
	fe := FieldErrors(err)
	if len(fe) != 1 || fe[0].Path != "workers[0].retries" || fe[0].Line != 2 {
		t.Errorf("FieldErrors = %+v, want one at workers[0].retries line 2", fe)
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"bad indentation", "broker: rabbitmq\n  workers: x\n", "invalid configuration: yaml: line 2"},
		{"two documents", "broker: rabbitmq\n---\nbroker: kafka\n", "invalid configuration: more than one YAML document (line 2)"},
		{"tab indentation", "broker: rabbitmq\nredis:\n\taddr: x\n", "invalid configuration: yaml: line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse([]byte(tt.doc), noEnv)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error = %v, want prefix %q", err, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error is not ErrInvalid")
			}
		})
	}
}

func TestParseEmptyDocumentNeedsABroker(t *testing.T) {
	for _, doc := range []string{"", "\n", "# only a comment\n", "---\n", "~"} {
		_, err := parse([]byte(doc), noEnv)
		assertLines(t, err, "broker: required (kafka or rabbitmq)")
	}
}

func TestParseMergeKeys(t *testing.T) {
	doc := `
broker: rabbitmq
x-retry: &escrow
  max_retries: 5
  backoff: "1s -> 5s"
x-worker: &base
  topic: escrow.commands
  dlq: {severity: critical}
workers:
  - <<: *base
    name: a
    retry: *escrow
  - <<: [*base, {concurrency: 3}]
    name: b
    topic: other
`
	// x- keys are unknown: merge sources must live in known places.
	_, err := parse([]byte(doc), noEnv)
	assertLines(t, err, `x-retry: unknown key (line 3)`, `x-worker: unknown key (line 6)`)

	doc = `
broker: rabbitmq
workers:
  - &a
    name: a
    topic: escrow.commands
    concurrency: 2
    retry: &r {max_retries: 4, backoff: "1s -> 5s"}
    dlq: {severity: critical}
  - <<: *a
    name: b
    retry: {<<: *r, max_retries: 1}
  - <<: [{name: c, concurrency: 7}, *a]
    topic: other
`
	c := mustParse(t, doc, nil)
	a, b, cc := c.Workers[0], c.Workers[1], c.Workers[2]
	if b.Name != "b" || b.Topic != "escrow.commands" || b.Concurrency != 2 || b.DLQ.Severity != "critical" {
		t.Errorf("merged worker b = %+v", b)
	}
	if *b.Retry.MaxRetries != 1 || b.Retry.Backoff.String() != "1s -> 5s" || *a.Retry.MaxRetries != 4 {
		t.Errorf("b.retry = %d %q, a.retry max = %d; want 1, 1s -> 5s, 4", *b.Retry.MaxRetries, b.Retry.Backoff, *a.Retry.MaxRetries)
	}
	if cc.Name != "c" || cc.Concurrency != 7 || cc.Topic != "other" {
		t.Errorf("merged worker c = %q %d %q; want c 7 other (earlier merge sources win)", cc.Name, cc.Concurrency, cc.Topic)
	}
}

func TestParseAliasBombIsBounded(t *testing.T) {
	// Every level multiplies the work by 10 when aliases are followed.
	var b strings.Builder
	b.WriteString("broker: rabbitmq\nlag:\n  thresholds:\n    a0: &a0 {warning: 1, critical: 2}\n")
	b.WriteString("workers:\n")
	b.WriteString("  - &w0 {name: w, topic: t, retry: {non_retriable: [x, x, x, x, x, x, x, x, x, x]}}\n")
	for i := 0; i < 400; i++ {
		b.WriteString("  - *w0\n")
	}
	start := time.Now()
	_, err := parse([]byte(b.String()), noEnv)
	if err == nil {
		t.Fatal("no error (duplicate names expected)")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %s", time.Since(start))
	}

	// A document whose aliases expand past the budget fails cleanly.
	b.Reset()
	b.WriteString("broker: rabbitmq\nworkers:\n  - &w {name: w, topic: t, retry: {non_retriable: &l [")
	for i := 0; i < 1000; i++ {
		b.WriteString("x,")
	}
	b.WriteString("x]}}\n")
	for i := 0; i < 300; i++ {
		b.WriteString("  - *w\n")
	}
	_, err = parse([]byte(b.String()), noEnv)
	if err == nil || !strings.Contains(err.Error(), "document too large") {
		t.Fatalf("error = %.200v, want document too large", err)
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"name", "topic", "queue_ttl", "concurrency", "prefetch", "retry", "dlq"}
	tests := map[string]string{
		"nmae": "name", "topik": "topic", "queue-ttl": "queue_ttl", "concurency": "concurrency",
		"Prefetch": "prefetch", "retries": "", "x": "", "dql": "dlq", "severity": "",
	}
	for key, want := range tests {
		if got := Suggest(key, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", key, got, want)
		}
	}
}

func ExampleParse() {
	_, err := Parse([]byte(`
broker: rabit
workers:
  - name: payout-executor
    topic: escrow.commands
    retry: {max_retrys: 3, backoff: "1s -> 5x"}
`))
	for _, fe := range FieldErrors(err) {
		fmt.Println(fe)
	}
	// Output:
	// broker: "rabit" is not kafka or rabbitmq
	// workers[0].retry.max_retrys: unknown key (line 6); did you mean "max_retries"?
	// workers[0].retry.backoff: step 2: "5x" is not a duration
}
