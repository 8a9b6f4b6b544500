package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHardeningRules covers what a careless operator writes: numbers the
// broker or the process cannot take, tokens nobody could log in with, two
// servers on one address, URLs a parser reads another way.
func TestHardeningRules(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		// Numbers: reported as written, checked against what runs.
		{"concurrency beyond int64", "broker: rabbitmq\nworkers: [{name: w, topic: t, concurrency: 99999999999999999999}]",
			[]string{"workers[0].concurrency: 99999999999999999999 is out of range"}},
		{"concurrency whose default prefetch overflows", "broker: rabbitmq\nworkers: [{name: w, topic: t, concurrency: 9223372036854775807}]",
			[]string{"workers[0].concurrency: 9223372036854775807 is over 10000 handlers per worker (run more instances instead)"}},
		{"concurrency at the limit", "broker: rabbitmq\nworkers: [{name: w, topic: t, concurrency: 10000}]", nil},
		{"prefetch over RabbitMQ's limit", "broker: rabbitmq\nworkers: [{name: w, topic: t, prefetch: 65536}]",
			[]string{"workers[0].prefetch: 65536 is over 65535, RabbitMQ's largest prefetch"}},
		{"hex beyond int64", "broker: rabbitmq\nworkers: [{name: w, topic: t, prefetch: 0xffffffffffffffffff}]",
			[]string{"workers[0].prefetch: 0xffffffffffffffffff is out of range"}},

		// Tokens that nobody could present (presented tokens are trimmed).
		{"blank token", "broker: rabbitmq\nadmin: {token: \"          \"}", []string{"admin.token: blank (only white space): nobody could log in"}},
		{"token with spaces", "broker: rabbitmq\nadmin: {token: \" t0k3n-long \"}",
			[]string{"admin.token: has white space at its start or end: presented tokens are trimmed, so nobody could log in (remove it; check the variable it comes from)"}},
		{"token with a newline", "broker: rabbitmq\nadmin: {token: t0k3n-long, viewer_token: \"v1ewer-token\\n\"}",
			[]string{"admin.viewer_token: has white space at its start or end: presented tokens are trimmed, so nobody could log in (remove it; check the variable it comes from)"}},

		// Two servers, one address.
		{"same listen address", "broker: rabbitmq\nadmin: {listen: \"127.0.0.1:9000\"}\nexporter: {listen: \"127.0.0.1:9000\"}",
			[]string{`exporter.listen: "127.0.0.1:9000" is admin.listen's address too ("127.0.0.1:9000"): they need different ports`}},
		{"all interfaces and loopback", "broker: rabbitmq\nadmin: {listen: \":9000\", token: t0k3n-long}\nexporter: {listen: \"127.0.0.1:9000\"}",
			[]string{`exporter.listen: "127.0.0.1:9000" is admin.listen's address too (":9000"): they need different ports`}},
		{"localhost and 127.0.0.1", "broker: rabbitmq\nadmin: {listen: \"localhost:9000\"}\nexporter: {listen: \"127.0.0.1:9000\"}",
			[]string{`exporter.listen: "127.0.0.1:9000" is admin.listen's address too ("localhost:9000"): they need different ports`}},
		{"different ports", "broker: rabbitmq\nadmin: {listen: \"127.0.0.1:9000\"}\nexporter: {listen: \"127.0.0.1:9001\"}", nil},
		{"port 0 twice", "broker: rabbitmq\nadmin: {listen: \"127.0.0.1:0\"}\nexporter: {listen: \"127.0.0.1:0\"}", nil},
		{"health probes on the exporter's address", "broker: rabbitmq\nexporter: {listen: \"127.0.0.1:9000\"}\nhealth: {listen: \"0.0.0.0:9000\"}",
			[]string{`health.listen: "0.0.0.0:9000" is exporter.listen's address too ("127.0.0.1:9000"): they need different ports`}},
		{"two addresses", "broker: rabbitmq\nadmin: {listen: \"10.0.0.1:9000\", token: t0k3n-long}\nexporter: {listen: \"10.0.0.2:9000\"}", nil},

		// Broker URLs a parser reads another way.
		{"password with a slash (parses as host guest, port 12)", "broker: rabbitmq\nrabbitmq: {url: \"amqp://guest:12/S3cr3t@host/\"}",
			[]string{`rabbitmq.url: "amqp://***" has an "@" after the host: a password with "/", "?", "#" or "@" must be percent-encoded (%2F %3F %23 %40)`}},
		{"password with a slash, no @", "broker: rabbitmq\nrabbitmq: {url: \"amqp://guest:S3cr3t/host\"}",
			[]string{`rabbitmq.url: "amqp://***" is not a valid URL (a password with "/", "?", "#" or "@" must be percent-encoded (%2F %3F %23 %40))`}},
		{"password with a question mark", "broker: rabbitmq\nrabbitmq: {url: \"amqp://guest@host?S3cr3t@host/\"}",
			[]string{`rabbitmq.url: "amqp://***" has an "@" after the host: a password with "/", "?", "#" or "@" must be percent-encoded (%2F %3F %23 %40)`}},
		{"percent-encoded password", "broker: rabbitmq\nrabbitmq: {url: \"amqp://guest:12%2FS3cr3t@host/\"}", nil},
		{"port out of range", "broker: rabbitmq\nrabbitmq: {url: \"amqp://h:99999/\"}", []string{`rabbitmq.url: "amqp://h:99999/": port "99999" is not from 1 to 65535`}},
		{"postgres password with a slash", "broker: rabbitmq\npostgres: {url: \"postgres://u:12/S3cr3t@db/redrive\"}",
			[]string{`postgres.url: "postgres://***" has an "@" after the host: a password with "/", "?", "#" or "@" must be percent-encoded (%2F %3F %23 %40)`}},
		{"redis addr as a URL", "broker: rabbitmq\nredis: {addr: \"redis://:S3cr3t@h:6379/0\"}",
			[]string{`redis.addr: "redis://:***@h:6379/0" is a URL: give host:port, and the password in redis.password`}},
		{"redis addr with a password", "broker: rabbitmq\nredis: {addr: \"S3cr3t@h:6379\"}", []string{`redis.addr: "***@h:6379" is not host:port`}},
		{"kafka broker with a password", "broker: kafka\nkafka: {brokers: [\"u:S3cr3t@k:9092\", \"SASL_SSL://k:9093\"]}",
			[]string{`kafka.brokers[0]: "***@k:9092" is not host:port (no scheme, user or path)`, `kafka.brokers[1]: "SASL_SSL://***" is not host:port (no scheme, user or path)`}},
		{"kafka brokers fine", "broker: kafka\nkafka: {brokers: [\"k1:9092,k2\", \"[::1]:9092\"]}", nil},

		// Proxies and names.
		{"allowed hosts and proxies", "broker: rabbitmq\nadmin: {allowed_hosts: [redrive.example.com, 10.0.0.5], trusted_proxies: [10.0.0.0/8, \"::1\"], cookie_secure: true}", nil},
		{"bad allowed host and proxy", "broker: rabbitmq\nadmin: {allowed_hosts: [\"https://redrive.example.com\", \"h:8080\"], trusted_proxies: [10.0.0.0/33, proxy.example]}",
			[]string{
				`admin.allowed_hosts[0]: "https://redrive.example.com" is not a host name or IP address (no scheme, port or path)`,
				`admin.allowed_hosts[1]: "h:8080" is not a host name or IP address (no scheme, port or path)`,
				`admin.trusted_proxies[0]: "10.0.0.0/33" is not a CIDR such as 10.0.0.0/8`,
				`admin.trusted_proxies[1]: "proxy.example" is not an IP address or a CIDR such as 10.0.0.0/8`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse([]byte(tt.doc), noEnv)
			if err != nil && strings.Contains(err.Error(), "S3cr3t") {
				t.Errorf("the error shows the secret: %v", err)
			}
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected problems:\n%v", err)
				}
				if c.Workers != nil && c.Workers[0].Prefetch > 65535 {
					t.Errorf("default prefetch %d", c.Workers[0].Prefetch)
				}
				return
			}
			assertLines(t, err, tt.want...)
		})
	}
}

// TestLoadBounded: a file that is not a configuration is neither read
// without limit nor echoed.
func TestLoadBounded(t *testing.T) {
	start := time.Now()
	if _, err := Load("/dev/zero"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("Load(/dev/zero) = %v, want larger than 4 MiB", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Load(/dev/zero) took %s", d)
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("broker: rabbitmq\n# "+strings.Repeat("x", MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("Load(5 MiB) = %v", err)
	}
	if _, err := LoadWorkers(big); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("LoadWorkers(5 MiB) = %v", err)
	}
	at := filepath.Join(dir, "limit.yaml")
	doc := "broker: rabbitmq\n"
	if err := os.WriteFile(at, []byte(doc+"#"+strings.Repeat("x", MaxFileBytes-len(doc)-2)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(at); err != nil {
		t.Errorf("Load of exactly 4 MiB = %v", err)
	}

	// Files that are not redrive's: only key names are shown, never values,
	// and only names that look like keys.
	for name, doc := range map[string]string{
		"shadow":         "root:$y$j9T$S3cr3tHash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n",
		"shadow-ish":     "root: $y$j9T$S3cr3tHash\nbroker: rabbitmq\n",
		"unknown nested": "broker: rabbitmq\nadmin: {tokn: S3cr3t-token}\n",
		"secret as key":  "broker: rabbitmq\n\"S3cr3t password here\": 1\n",
		"url as section": "broker: rabbitmq\nrabbitmq: amqp://u:S3cr3t@h/\n",
		"scalar file":    "just S3cr3t text\n",
		"twice":          "broker: rabbitmq\n\"S3cr3t x\": 1\n\"S3cr3t x\": 2\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Load = %v, want invalid", name, err)
			continue
		}
		if strings.Contains(err.Error(), "S3cr3t") {
			t.Errorf("%s: the error shows the file's content:\n%v", name, err)
		}
	}
	_, err := Parse([]byte("broker: rabbitmq\nadmin: {tokn: x}\n"))
	assertLines(t, err, `admin.tokn: unknown key (line 2); did you mean "token"?`)
}
