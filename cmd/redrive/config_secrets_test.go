package main

import (
	"strings"
	"testing"
)

// TestConfigCheckHidesSASLPassword greps config check's output, valid and
// invalid configuration alike, for the Kafka SASL password and the URL
// password of an amqps:// RabbitMQ with TLS.
func TestConfigCheckHidesSASLPassword(t *testing.T) {
	clearEnv(t)
	t.Setenv("SASL_PW", "env-sasl-S3CRET")
	secrets := []string{"sasl-S3CRET", "env-sasl-S3CRET", "amqps-S3CRET"}
	docs := map[string]string{
		"kafka valid": `
broker: kafka
kafka:
  brokers: [k:9093]
  tls: {server_name: kafka}
  sasl: {mechanism: SCRAM-SHA-512, username: redrive, password: "${SASL_PW}"}
workers: [{name: w, topic: t}]
`,
		"kafka invalid": `
broker: kafka
kafka:
  brokers: [k:9093]
  tls: {ca_file: /nonexistent/ca.pem}
  sasl: {mechanism: KERBEROS, username: redrive, password: sasl-S3CRET}
`,
		"rabbitmq valid": `
broker: rabbitmq
rabbitmq: {url: "amqps://redrive:amqps-S3CRET@rabbit:5671/", tls: {server_name: rabbit}}
workers: [{name: w, topic: t}]
`,
		"rabbitmq invalid": `
broker: rabbitmq
rabbitmq: {url: "amqp://redrive:amqps-S3CRET@rabbit:5672/", tls: {key_file: /nonexistent/key.pem}}
`,
	}
	for name, doc := range docs {
		code, out, errOut := cli(t, "config", "check", "--config", writeConfig(t, doc))
		valid := strings.HasSuffix(name, " valid")
		if valid && code != exitOK || !valid && code != exitUsage {
			t.Errorf("%s: exit %d: %s", name, code, errOut)
		}
		if valid && !strings.Contains(out, "***") {
			t.Errorf("%s: no masked secret in the output:\n%s", name, out)
		}
		for _, s := range secrets {
			if strings.Contains(out+errOut, s) {
				t.Errorf("%s: output contains %q:\n%s%s", name, s, out, errOut)
			}
		}
	}
}
