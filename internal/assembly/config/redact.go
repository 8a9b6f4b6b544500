package config

import (
	"maps"
	"slices"

	"github.com/redrive/redrive/internal/redact"
)

// Mask replaces secrets in Redacted output.
const Mask = redact.Mask

// Clone returns a deep copy of c.
func (c *Config) Clone() *Config {
	out := *c
	out.Kafka.Brokers = slices.Clone(c.Kafka.Brokers)
	out.Kafka.ForeignDLQs = slices.Clone(c.Kafka.ForeignDLQs)
	out.RabbitMQ.URLs = slices.Clone(c.RabbitMQ.URLs)
	if c.RabbitMQ.ForeignDLQs != nil {
		out.RabbitMQ.ForeignDLQs = make([]ForeignQueue, len(c.RabbitMQ.ForeignDLQs))
		for i, q := range c.RabbitMQ.ForeignDLQs {
			q.ReplayTo.XDeathExchanges = slices.Clone(q.ReplayTo.XDeathExchanges)
			out.RabbitMQ.ForeignDLQs[i] = q
		}
	}
	out.Lag.Thresholds = maps.Clone(c.Lag.Thresholds)
	out.Admin.AllowedHosts = slices.Clone(c.Admin.AllowedHosts)
	out.Admin.TrustedProxies = slices.Clone(c.Admin.TrustedProxies)
	out.Admin.Operators = slices.Clone(c.Admin.Operators)
	if pa := c.Admin.ProxyAuth; pa != nil {
		cp := *pa
		cp.Proxies, cp.OperatorGroups, cp.ViewerGroups = slices.Clone(pa.Proxies), slices.Clone(pa.OperatorGroups), slices.Clone(pa.ViewerGroups)
		out.Admin.ProxyAuth = &cp
	}
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
	w.Endpoint = w.Endpoint.clone()
	return w
}

// Redacted returns a deep copy of c fit for printing: every URL-ish value
// (rabbitmq.url and urls, postgres.url, exactly_once.url, kafka.brokers, redis.addr, the
// listen addresses) goes through the masking of shown, whatever it parses to, and
// admin.token, admin.viewer_token, redis.password, kafka.sasl.password and
// each workers[].endpoint.bearer_token are replaced with Mask when set; an
// endpoint URL's query keeps its names, every value masked (a function
// key travels there: ?code=…).
func (c *Config) Redacted() *Config {
	out := c.Clone()
	for _, p := range []*string{&out.RabbitMQ.URL, &out.Postgres.URL, &out.ExactlyOnce.URL, &out.Redis.Addr, &out.Admin.Listen, &out.Exporter.Listen} {
		*p = redact.URL(*p)
	}
	for i, u := range out.RabbitMQ.URLs {
		out.RabbitMQ.URLs[i] = redact.URL(u)
	}
	for i, b := range out.Kafka.Brokers {
		out.Kafka.Brokers[i] = redact.URL(b)
	}
	for _, p := range []*string{&out.Admin.Token, &out.Admin.ViewerToken, &out.Admin.SessionSecret, &out.Redis.Password} {
		if *p != "" {
			*p = Mask
		}
	}
	if out.Kafka.SASL != nil && out.Kafka.SASL.Password != "" {
		out.Kafka.SASL.Password = Mask
	}
	out.Relay.Listen = redact.URL(out.Relay.Listen)
	for _, w := range out.Workers {
		if w.Endpoint != nil {
			w.Endpoint.URL = endpointURL(w.Endpoint.URL)
			if w.Endpoint.BearerToken != "" {
				w.Endpoint.BearerToken = Mask
			}
		}
	}
	return out
}

// shown is a value for an error message: masked like a URL, shortened.
func shown(s string) string { return abbreviate(redact.URL(s)) }
