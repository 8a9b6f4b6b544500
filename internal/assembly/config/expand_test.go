package config

import (
	"strings"
	"testing"
	"time"
)

func TestExpandEnv(t *testing.T) {
	vars := env(map[string]string{"A": "alpha", "EMPTY": "", "N": "5", "SPECIAL": `a: b # [c] {d} "e" 'f'`})
	tests := []struct {
		in, want string
		changed  bool
		err      string
	}{
		{in: "plain", want: "plain"},
		{in: "${A}", want: "alpha", changed: true},
		{in: "x-${A}-y", want: "x-alpha-y", changed: true},
		{in: "${A}${A}", want: "alphaalpha", changed: true},
		{in: "${UNSET}", want: "", changed: true},
		{in: "${UNSET:-def}", want: "def", changed: true},
		{in: "${EMPTY:-def}", want: "def", changed: true},
		{in: "${EMPTY}", want: "", changed: true},
		{in: "${A:-def}", want: "alpha", changed: true},
		{in: "${UNSET:-}", want: "", changed: true},
		{in: "${UNSET:-a:-b}", want: "a:-b", changed: true},
		{in: "${UNSET:-${A}}", want: "alpha", changed: true},
		{in: "${UNSET:-${ALSO_UNSET:-deep}}", want: "deep", changed: true},
		{in: "${UNSET:-amqp://guest:guest@127.0.0.1:5672/}", want: "amqp://guest:guest@127.0.0.1:5672/", changed: true},
		{in: "${SPECIAL}", want: `a: b # [c] {d} "e" 'f'`, changed: true},
		{in: "$${A}", want: "${A}", changed: true},
		{in: "pa$$word", want: "pa$$word"},
		{in: "cost $5", want: "cost $5"},
		{in: "$", want: "$"},
		{in: "${A", err: `"${A" is not closed with }`},
		{in: "${UNSET:-${A}", err: `"${UNSET:-${A}" is not closed with }`},
		{in: "${}", err: `"${}": "" is not a variable name`},
		{in: "${1A}", err: `"${1A}": "1A" is not a variable name`},
		{in: "${A-B}", err: `"${A-B}": "A-B" is not a variable name`},
		{in: "${A:?}", err: `"${A:?}": "A:?" is not a variable name`},
	}
	for _, tt := range tests {
		got, changed, err := expandEnv(tt.in, vars)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expandEnv(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || changed != tt.changed {
			t.Errorf("expandEnv(%q) = %q, %v, %v; want %q, %v", tt.in, got, changed, err, tt.want, tt.changed)
		}
	}
}

func TestParseExpandsEnvInValues(t *testing.T) {
	doc := `
broker: ${BROKER}
rabbitmq:
  url: ${URL}
  prefix: "${PREFIX:-rd}"
redis: {addr: "${REDIS_ADDR:-10.0.0.1:6380}", password: "${REDIS_PW}"}
workers:
  - name: ${NAME:-w}
    topic: t
    concurrency: "${CONC:-4}"
    queue_ttl: ${TTL}
    retry: {max_retries: "${MAX}", unlimited: "${UNLIMITED:-false}", backoff: "${BACKOFF:-2s -> 4s}"}
  - name: literal
    topic: t
    retry: {non_retriable: ["$${NOT_EXPANDED}"]}
`
	c := mustParse(t, doc, map[string]string{
		"BROKER":   "rabbitmq",
		"URL":      "amqp://u:p%23w@h:5671/v?x=1 # not: [yaml]",
		"REDIS_PW": `"quoted" 'and' {braces}: yes`,
		"MAX":      "7",
		"CONC":     "",
	})
	if c.Broker != "rabbitmq" || c.RabbitMQ.Prefix != "rd" || c.Redis.Addr != "10.0.0.1:6380" {
		t.Errorf("broker/prefix/addr = %q %q %q", c.Broker, c.RabbitMQ.Prefix, c.Redis.Addr)
	}
	if want := "amqp://u:p%23w@h:5671/v?x=1 # not: [yaml]"; c.RabbitMQ.URL != want {
		t.Errorf("url = %q, want %q (an env value is never parsed as YAML)", c.RabbitMQ.URL, want)
	}
	if want := `"quoted" 'and' {braces}: yes`; c.Redis.Password != want {
		t.Errorf("password = %q, want %q", c.Redis.Password, want)
	}
	w := c.Workers[0]
	if w.Name != "w" || w.Concurrency != 4 || *w.Retry.MaxRetries != 7 || w.Retry.Unlimited {
		t.Errorf("worker = %q concurrency %d max %d unlimited %v; want w 4 7 false", w.Name, w.Concurrency, *w.Retry.MaxRetries, w.Retry.Unlimited)
	}
	if *w.QueueTTL != Duration(DefaultQueueTTL) {
		t.Errorf("queue_ttl from an unset variable = %s, want the default %s", *w.QueueTTL, Duration(DefaultQueueTTL))
	}
	if got := w.Retry.Backoff.Delays; len(got) != 2 || got[0] != 2*time.Second || got[1] != 4*time.Second {
		t.Errorf("backoff = %v, want [2s 4s]", got)
	}
	if got := c.Workers[1].Retry.NonRetriable; len(got) != 1 || got[0] != "${NOT_EXPANDED}" {
		t.Errorf("escaped reference = %q, want ${NOT_EXPANDED}", got)
	}
}

func TestParseEnvProblems(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		vars map[string]string
		want []string
	}{
		{
			name: "unset variable leaves a required field empty",
			doc:  "broker: ${BROKER}\nworkers: [{name: \"${WORKER}\", topic: t}]",
			want: []string{"broker: required (kafka or rabbitmq)", "workers[0].name: required"},
		},
		{
			name: "unset kafka brokers",
			doc:  "broker: kafka\nkafka: {brokers: [\"${KAFKA_BROKERS}\"]}",
			want: []string{"kafka.brokers: required when broker is kafka"},
		},
		{
			name: "variable value of the wrong type",
			doc:  "broker: rabbitmq\nworkers: [{name: w, topic: t, concurrency: \"${C}\"}]",
			vars: map[string]string{"C": "many"},
			want: []string{`workers[0].concurrency: "many" is not an integer`},
		},
		{
			name: "unclosed reference",
			doc:  "broker: rabbitmq\nrabbitmq: {url: \"${URL\"}",
			want: []string{`rabbitmq.url: "${URL" is not closed with }`},
		},
		{
			name: "bad variable name",
			doc:  "broker: \"${1BROKER}\"",
			want: []string{`broker: "${1BROKER}": "1BROKER" is not a variable name (letters, digits and _, not starting with a digit)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse([]byte(tt.doc), env(tt.vars))
			assertLines(t, err, tt.want...)
		})
	}
}

func TestParseUsesProcessEnvironment(t *testing.T) {
	t.Setenv("REDRIVE_TEST_BROKER", "kafka")
	t.Setenv("REDRIVE_TEST_KAFKA", "k1:9092, k2:9092,,")
	c, err := Parse([]byte("broker: ${REDRIVE_TEST_BROKER}\nkafka: {brokers: [\"${REDRIVE_TEST_KAFKA}\", k3:9092]}"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Kafka.Brokers, " "); c.Broker != "kafka" || got != "k1:9092 k2:9092 k3:9092" {
		t.Errorf("broker %q brokers %q; want kafka, k1:9092 k2:9092 k3:9092", c.Broker, got)
	}
}
