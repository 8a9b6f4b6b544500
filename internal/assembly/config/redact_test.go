package config

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRedactedNeverLeaks(t *testing.T) {
	secrets := []string{"rabbit-S3CRET", "node2-S3CRET", "node3-S3CRET", "pg-S3CRET", "dsn-S3CRET", "token-S3CRET", "viewer-S3CRET", "redis-S3CRET", "query-S3CRET", "kafka-S3CRET"}
	docs := []string{
		`
broker: rabbitmq
rabbitmq: {url: "amqp://redrive:rabbit-S3CRET@rabbit:5672/prod"}
postgres: {url: "postgres://redrive:pg-S3CRET@db:5432/redrive?password=query-S3CRET"}
redis: {addr: "redis:6379", password: "redis-S3CRET"}
admin: {listen: "0.0.0.0:8080", token: "token-S3CRET", viewer_token: "viewer-S3CRET"}
kafka: {brokers: ["u:kafka-S3CRET@k:9092"]}
workers: [{name: w, topic: t}]
`,
		`
broker: rabbitmq
postgres: {url: "host=db user=u password=dsn-S3CRET"}
workers: [{name: w, topic: t}]
`,
		`
broker: rabbitmq
rabbitmq: {urls: ["amqp://redrive:node2-S3CRET@rabbit-2:5672/prod", "amqps://redrive:node3-S3CRET@rabbit-3/prod?password=query-S3CRET"]}
workers: [{name: w, topic: t}]
`,
	}
	for _, doc := range docs {
		c := mustParse(t, doc, nil)
		r := c.Redacted()
		var out bytes.Buffer
		if err := r.WriteYAML(&out); err != nil {
			t.Fatal(err)
		}
		printed := out.String() + fmt.Sprintf("%+v %v", *r, r.Workers)
		for _, s := range secrets {
			if strings.Contains(printed, s) {
				t.Errorf("redacted output contains %q:\n%s", s, printed)
			}
		}
		if !strings.Contains(out.String(), Mask) {
			t.Errorf("no mask in output:\n%s", out.String())
		}
	}
	// Redacted is a copy: the original keeps its secrets.
	c := mustParse(t, docs[0], nil)
	_ = c.Redacted()
	if c.Admin.Token != "token-S3CRET" || !strings.Contains(c.RabbitMQ.URL, "rabbit-S3CRET") {
		t.Error("Redacted changed the original")
	}
	// Empty secrets stay empty (nothing to hide, nothing invented).
	r := mustParse(t, minimal, nil).Redacted()
	if r.Admin.Token != "" || r.Redis.Password != "" {
		t.Errorf("empty secrets masked: %q %q", r.Admin.Token, r.Redis.Password)
	}
}

func TestValidationErrorsNeverLeak(t *testing.T) {
	_, err := parse([]byte(`
broker: rabbitmq
rabbitmq: {url: "amqp://u:hunter2-S3CRET@host:notaport/"}
postgres: {url: "postgres://u:pg-S3CRET@db:bad/x"}
`), noEnv)
	if err == nil {
		t.Fatal("no error")
	}
	_, err2 := parse([]byte(`
broker: rabbitmq
rabbitmq: {urls: ["amqp://u:node1-S3CRET@h1/", "amqp://u:node2-S3CRET@host:notaport/", "ftp://u:node3-S3CRET@h3/"]}
`), noEnv)
	if err2 == nil {
		t.Fatal("no error for bad urls")
	}
	err = errors.Join(err, err2)
	for _, s := range []string{"hunter2-S3CRET", "pg-S3CRET", "node1-S3CRET", "node2-S3CRET", "node3-S3CRET"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error contains %q: %v", s, err)
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := mustParse(t, `
broker: kafka
kafka: {brokers: [a:1]}
lag: {thresholds: {t: {warning: 1, critical: 2}}}
workers: [{name: w, topic: t, retry: {non_retriable: [x], backoff: {exponential: {initial: 1s}}}}]
`, nil)
	d := c.Clone()
	d.Kafka.Brokers[0] = "changed"
	c.RabbitMQ.URLs = []string{"amqp://a/"}
	d = c.Clone()
	d.RabbitMQ.URLs[0] = "changed"
	d.Lag.Thresholds["t"] = Threshold{}
	d.Workers[0].Name = "changed"
	*d.Workers[0].QueueTTL = 0
	*d.Workers[0].Retry.MaxRetries = 0
	*d.Workers[0].Retry.RepeatLast = false
	d.Workers[0].Retry.NonRetriable[0] = "changed"
	d.Workers[0].Retry.Backoff.Exponential.Initial = 0
	w := c.Workers[0]
	if c.Kafka.Brokers[0] != "a:1" || c.RabbitMQ.URLs[0] != "amqp://a/" || c.Lag.Thresholds["t"].Critical != 2 || w.Name != "w" || *w.QueueTTL == 0 ||
		*w.Retry.MaxRetries == 0 || !*w.Retry.RepeatLast || w.Retry.NonRetriable[0] != "x" || w.Retry.Backoff.Exponential.Initial == 0 {
		t.Errorf("Clone shares state: %+v", c)
	}
}
