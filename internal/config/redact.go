package config

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces secrets in Redacted output.
const Mask = "***"

// Clone returns a deep copy of c.
func (c *Config) Clone() *Config {
	out := *c
	out.Kafka.Brokers = slices.Clone(c.Kafka.Brokers)
	out.RabbitMQ.URLs = slices.Clone(c.RabbitMQ.URLs)
	out.Lag.Thresholds = maps.Clone(c.Lag.Thresholds)
	out.RabbitMQ.TLS = clonePtr(c.RabbitMQ.TLS)
	out.Kafka.TLS = clonePtr(c.Kafka.TLS)
	out.Kafka.SASL = clonePtr(c.Kafka.SASL)
	if c.Workers != nil {
		out.Workers = make([]Worker, len(c.Workers))
		for i, w := range c.Workers {
			out.Workers[i] = w.clone()
		}
	}
	return &out
}

// clonePtr returns a copy of *p, nil for nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// clone returns a deep copy of w.
func (w Worker) clone() Worker {
	if w.QueueTTL != nil {
		v := *w.QueueTTL
		w.QueueTTL = &v
	}
	if w.MaxClaims != nil {
		v := *w.MaxClaims
		w.MaxClaims = &v
	}
	if w.Retry.MaxRetries != nil {
		v := *w.Retry.MaxRetries
		w.Retry.MaxRetries = &v
	}
	if w.Retry.RepeatLast != nil {
		v := *w.Retry.RepeatLast
		w.Retry.RepeatLast = &v
	}
	w.Retry.NonRetriable = slices.Clone(w.Retry.NonRetriable)
	w.Retry.Backoff = w.Retry.Backoff.clone()
	return w
}

// Redacted returns a deep copy of c fit for printing: the passwords inside
// URLs (rabbitmq.url and urls, postgres.url, kafka.brokers) and secret query
// parameters are replaced with Mask, and so are admin.token,
// redis.password and kafka.sasl.password when set.
func (c *Config) Redacted() *Config {
	out := c.Clone()
	out.RabbitMQ.URL = redactURL(out.RabbitMQ.URL)
	for i, u := range out.RabbitMQ.URLs {
		out.RabbitMQ.URLs[i] = redactURL(u)
	}
	out.Postgres.URL = redactURL(out.Postgres.URL)
	for i, b := range out.Kafka.Brokers {
		out.Kafka.Brokers[i] = redactURL(b)
	}
	if out.Admin.Token != "" {
		out.Admin.Token = Mask
	}
	if out.Admin.ViewerToken != "" {
		out.Admin.ViewerToken = Mask
	}
	if out.Redis.Password != "" {
		out.Redis.Password = Mask
	}
	if out.Kafka.SASL != nil && out.Kafka.SASL.Password != "" {
		out.Kafka.SASL.Password = Mask
	}
	return out
}

// secretParams are URL query parameters and DSN keys whose values are
// masked.
var secretParams = []string{"password", "passwd", "pass", "pwd", "secret", "token", "sslpassword", "access_key", "secret_key"}

// dsnPassword matches a secret in a key=value DSN (Postgres style).
var dsnPassword = regexp.MustCompile(`(?i)\b(` + strings.Join(secretParams, "|") + `)(\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)`)

// redactURL masks the password of a URL, its secret query parameters and
// the secrets of a key=value DSN. When s does not parse, everything between
// "://" and the last "@" is masked.
func redactURL(s string) string {
	if s == "" {
		return s
	}
	if !strings.Contains(s, "://") {
		if strings.ContainsAny(s, "= \t") {
			return dsnPassword.ReplaceAllString(s, "${1}${2}"+Mask)
		}
		if i := strings.LastIndex(s, "@"); i >= 0 {
			return Mask + s[i:] // user:password@host:port
		}
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		scheme, rest, _ := strings.Cut(s, "://")
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			return scheme + "://" + Mask + rest[i:]
		}
		return s
	}
	masked := false
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "MASKED")
			masked = true
		}
	}
	q := u.Query()
	changed := false
	for k := range q {
		if slices.Contains(secretParams, strings.ToLower(k)) {
			q.Set(k, Mask)
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	out := u.String()
	if masked {
		out = strings.Replace(out, ":MASKED@", ":"+Mask+"@", 1)
	}
	if changed {
		out = strings.ReplaceAll(out, "=%2A%2A%2A", "="+Mask)
	}
	return out
}
