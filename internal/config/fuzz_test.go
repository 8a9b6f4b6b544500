package config

import (
	"bytes"
	"os"
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics, that what it accepts is valid,
// and that the normalized output (WriteYAML) loads back to the same
// configuration. The seeds (the example configurations and broken
// documents) run in plain `go test`.
func FuzzParse(f *testing.F) {
	for _, path := range []string{exampleRabbitMQ, exampleKafka, exampleWorkers} {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		minimal,
		"",
		"broker: [",
		"broker: rabbitmq\n---\nbroker: kafka",
		"- a\n- b",
		"broker: &a [*a]",
		"broker: rabbitmq\nredis: &r {<<: *r}",
		"broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: {exponential: {multiplier: .nan, jitter: .inf}}}}]",
		"broker: rabbitmq\nworkers: [{name: w, topic: t, queue_ttl: 106752d, retry: {backoff: \"1s -> -> 5x\"}}]",
		"broker: \"${A:-${B:-${C\"\nworkers: [{<<: [*x]}]",
		"broker: kafka\nkafka: {brokers: [\"${X}\"]}\nlag: {thresholds: {\"\": {warning: -1}}}",
		"broker: rabbitmq\nrabbitmq: {delay: {factor: 9223372036854775807, levels: 9223372036854775807}}",
		"? [a]\n: b",
		"broker: !!binary cmFiYml0bXE=",
		"broker: rabbitmq\nworkers:\n  - &w {name: w, topic: t}\n  - *w\n  - <<: *w\n    name: v",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parse(data, env(map[string]string{"A": "rabbitmq", "X": "k:9092"}))
		if err != nil {
			if c != nil {
				t.Fatal("Parse returned a config with an error")
			}
			for _, fe := range FieldErrors(err) {
				if bytes.ContainsRune([]byte(fe.Error()), '\n') {
					t.Fatalf("multi-line problem %q", fe.Error())
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config Validate rejects: %v", err)
		}
		var out bytes.Buffer
		if err := c.Redacted().WriteYAML(&out); err != nil {
			t.Fatalf("WriteYAML(Redacted): %v", err)
		}
		out.Reset()
		if err := c.WriteYAML(&out); err != nil {
			t.Fatalf("WriteYAML: %v", err)
		}
		c2, err := parse(out.Bytes(), noEnv)
		if err != nil {
			t.Fatalf("output does not parse back: %v\n%s", err, out.Bytes())
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip differs:\n%+v\n%+v", c, c2)
		}
		_ = c.PolicyTable()
		_ = c.Subscriptions()
	})
}
