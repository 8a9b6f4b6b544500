package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/testsupport/tlstest"
)

func TestTLSAndSASLValidation(t *testing.T) {
	f := tlstest.Generate(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	kafka := func(extra string) string {
		return "broker: kafka\nkafka: {brokers: [k:9092], " + extra + "}\nworkers: [{name: w, topic: t}]\n"
	}
	rabbit := func(url, tls string) string {
		return "broker: rabbitmq\nrabbitmq: {url: \"" + url + "\", tls: " + tls + "}\nworkers: [{name: w, topic: t}]\n"
	}
	tests := []struct {
		name string
		doc  string
		want []string // problems; none = valid
	}{
		{"kafka tls with all files", kafka("tls: {ca_file: " + f.CA + ", cert_file: " + f.ClientCert + ", key_file: " + f.ClientKey + ", server_name: kafka}"), nil},
		{"kafka empty tls: system roots", kafka("tls: {}"), nil},
		{"kafka ca_file missing", kafka("tls: {ca_file: " + missing + "}"), []string{"kafka.tls.ca_file: cannot be read"}},
		{"kafka ca_file not PEM", kafka("tls: {ca_file: " + garbage + "}"), []string{"kafka.tls: config: tls: ca_file " + garbage + ": no PEM certificate"}},
		{"kafka cert without key", kafka("tls: {cert_file: " + f.ClientCert + "}"), []string{"kafka.tls: cert_file and key_file go together"}},
		{"kafka key does not match cert", kafka("tls: {cert_file: " + f.ClientCert + ", key_file: " + f.ServerKey + "}"), []string{"kafka.tls: config: tls: load cert_file/key_file"}},
		{"sasl plain", kafka("sasl: {mechanism: PLAIN, username: u, password: p}"), nil},
		{"sasl scram 256", kafka("sasl: {mechanism: SCRAM-SHA-256, username: u, password: p}"), nil},
		{"sasl scram 512 with tls", kafka("tls: {ca_file: " + f.CA + "}, sasl: {mechanism: SCRAM-SHA-512, username: u, password: p}"), nil},
		{"sasl unknown mechanism", kafka("sasl: {mechanism: GSSAPI, username: u, password: p}"), []string{`kafka.sasl.mechanism: "GSSAPI" is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`}},
		{"sasl lower-case mechanism", kafka("sasl: {mechanism: plain, username: u, password: p}"), []string{`kafka.sasl.mechanism: "plain" is not`}},
		{"sasl without credentials", kafka("sasl: {mechanism: PLAIN}"), []string{"kafka.sasl.username: required with sasl", "kafka.sasl.password: required with sasl"}},
		{"rabbit amqps with tls", rabbit("amqps://u:p@rabbit:5671/", "{ca_file: "+f.CA+", cert_file: "+f.ClientCert+", key_file: "+f.ClientKey+"}"), nil},
		{"rabbit tls needs amqps", rabbit("amqp://u:p@rabbit:5672/", "{ca_file: "+f.CA+"}"), []string{"rabbitmq.tls: set, but rabbitmq.url is not amqps://"}},
		{"rabbit key_file missing", rabbit("amqps://rabbit/", "{cert_file: "+f.ClientCert+", key_file: "+missing+"}"), []string{"rabbitmq.tls.key_file: cannot be read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse: nil error, want %q", tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("problems:\n%s\nwant %d: %q", err, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("problem %d = %q, want prefix %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestTLSConfigLoadsFiles(t *testing.T) {
	f := tlstest.Generate(t)
	c, err := (&TLS{CAFile: f.CA, CertFile: f.ClientCert, KeyFile: f.ClientKey, ServerName: "kafka-1"}).Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.RootCAs == nil || len(c.Certificates) != 1 || c.ServerName != "kafka-1" || c.InsecureSkipVerify {
		t.Errorf("tls.Config = roots %v, %d certificates, server name %q, insecure %v", c.RootCAs != nil, len(c.Certificates), c.ServerName, c.InsecureSkipVerify)
	}
	if c, err := (*TLS)(nil).Config(); c != nil || err != nil {
		t.Errorf("nil TLS: %v, %v; want nil, nil", c, err)
	}
}

func TestRedactedMasksSASLPassword(t *testing.T) {
	c, err := Parse([]byte("broker: kafka\nkafka: {brokers: [k:9092], sasl: {mechanism: PLAIN, username: u, password: sasl-S3CRET}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Redacted()
	if r.Kafka.SASL.Password != Mask || r.Kafka.SASL.Username != "u" {
		t.Errorf("redacted sasl = %+v", *r.Kafka.SASL)
	}
	if c.Kafka.SASL.Password != "sasl-S3CRET" {
		t.Errorf("Redacted changed the original: %q", c.Kafka.SASL.Password)
	}
}
