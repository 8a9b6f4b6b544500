package config

import (
	"bytes"
	"net/url"
	"os"
	"reflect"
	"strings"
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
		c2.Redis.set = c.Redis.set // WriteYAML writes every section, redis: too
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip differs:\n%+v\n%+v", c, c2)
		}
		for _, w := range c.Workers {
			_ = w.Policy()
		}
		_ = c.Subscriptions()
	})
}

// FuzzSecretsNeverPrinted puts a secret in every field that holds one,
// written as a careless operator writes it (a raw password in a URL, a
// Redis URL as redis.addr, user:password@ in a Kafka broker, the token in
// the wrong field's spot), and checks the property: neither the validation
// errors nor `config check`'s output (Redacted, as YAML) show it.
func FuzzSecretsNeverPrinted(f *testing.F) {
	for _, s := range []string{"S3cr3t-pw", "12/S3cr3t", "p@ss#w?rd", "a:b@c/d", "%41%42%43%44", "${HOME}xx", " padded "} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, secret string, kafka bool) {
		if len(strings.TrimSpace(secret)) < 6 || strings.ContainsAny(secret, "\x00") {
			return
		}
		c := &Config{
			Broker:   "rabbitmq",
			RabbitMQ: RabbitMQ{URL: "amqp://guest:" + secret + "@rabbit:5672/"},
			Kafka:    Kafka{Brokers: []string{"u:" + secret + "@k:9092"}, SASL: &SASL{Mechanism: SASLPlain, Username: "u", Password: secret}},
			Redis:    Redis{Addr: "redis://:" + secret + "@h:6379", Password: secret},
			Postgres: Postgres{URL: "postgres://u:" + secret + "@db/redrive?password=" + secret},
			Admin:    Admin{Token: secret, ViewerToken: secret + "-viewer", Listen: "127.0.0.1:8080"},
			Workers:  []Worker{{Name: "w", Topic: "t"}},
		}
		if kafka {
			c.Broker = "kafka"
			c.RabbitMQ.URLs = []string{"amqps://u:" + secret + "@r1/", "amqps://r2/?password=" + secret}
		}
		without := c.Clone()
		for _, p := range []*string{&without.RabbitMQ.URL, &without.Kafka.Brokers[0], &without.Redis.Addr, &without.Postgres.URL} {
			*p = strings.ReplaceAll(*p, secret, "")
		}
		for i := range without.RabbitMQ.URLs {
			p := &without.RabbitMQ.URLs[i]
			*p = strings.ReplaceAll(*p, secret, "")
		}
		var printed strings.Builder
		if err := c.Validate(); err != nil {
			printed.WriteString(err.Error())
		}
		if err := c.Redacted().WriteYAML(&printed); err != nil {
			t.Fatal(err)
		}
		// The same through a YAML document, as config check reads it.
		var doc bytes.Buffer
		if err := c.WriteYAML(&doc); err != nil {
			t.Fatal(err)
		}
		if _, err := parse(doc.Bytes(), nil); err != nil {
			printed.WriteString(err.Error())
		}
		out := printed.String()
		var noSecret strings.Builder
		_ = without.Redacted().WriteYAML(&noSecret)
		for _, form := range []string{secret, strings.TrimSpace(secret), url.PathEscape(secret), url.QueryEscape(secret)} {
			if len(form) >= 6 && strings.Contains(out, form) && !strings.Contains(noSecret.String(), form) {
				t.Fatalf("the secret %q shows:\n%s", form, out)
			}
		}
	})
}
