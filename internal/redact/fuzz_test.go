package redact

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzURL puts a secret where a careless operator puts one (the password
// of a URL, raw or escaped; a secret query parameter; a DSN; a
// user:password@host address) and checks the property: the secret never
// appears in the output, whatever the URL parses to.
func FuzzURL(f *testing.F) {
	for _, seed := range []struct{ scheme, user, secret, host, rest string }{
		{"amqp", "guest", "S3cr3t", "rabbit:5672", "/vhost"},
		{"amqp", "guest", "12/S3cr3t", "host", "/"},
		{"amqps", "u", "p@ss#w?rd", "h", ""},
		{"postgres", "u", "hunter2!", "db:5432", "/redrive?sslmode=disable"},
		{"redis", "", "S3cr3t", "h:6379", "/0"},
		{"SASL_SSL", "u", "k3y", "k:9093", ""},
		{"amqp", "guest", "a:b:c", "h", "/%2F"},
	} {
		f.Add(seed.scheme, seed.user, seed.secret, seed.host, seed.rest)
	}
	f.Fuzz(func(t *testing.T, scheme, user, secret, host, rest string) {
		if len(secret) < 6 || strings.TrimSpace(secret) != secret || strings.Contains(secret, Mask) {
			return // a short or padded "secret" is found by chance elsewhere
		}
		inputs := map[string]func(secret string) string{
			"password":         func(s string) string { return scheme + "://" + user + ":" + s + "@" + host + rest },
			"escaped password": func(s string) string { return scheme + "://" + user + ":" + url.PathEscape(s) + "@" + host + rest },
			"query":            func(s string) string { return scheme + "://" + host + rest + "?x=1&password=" + url.QueryEscape(s) },
			"raw query":        func(s string) string { return scheme + "://" + host + "/db?password=" + s },
			"dsn":              func(s string) string { return "host=" + host + " user=" + user + " password=" + s },
			"quoted dsn":       func(s string) string { return "host=" + host + " password='" + strings.ReplaceAll(s, "'", `\'`) + "'" },
			"address":          func(s string) string { return user + ":" + s + "@" + host },
		}
		for what, build := range inputs {
			in, without := build(secret), build("")
			out := URL(in)
			for _, form := range []string{secret, url.PathEscape(secret), url.QueryEscape(secret)} {
				// The secret shows only if the rest of the input does not
				// hold it by itself.
				if strings.Contains(out, form) && !strings.Contains(without, form) && !strings.Contains(without+Mask, form) {
					t.Fatalf("%s: URL(%q) = %q shows the secret %q", what, in, out, form)
				}
			}
		}
	})
}
