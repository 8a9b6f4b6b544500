package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/worker/killswitch"
)

// Limits of the brokers that names and tiers must respect.
const (
	maxTopicLen   = 249                                       // Kafka topic names
	maxQueueLen   = 255                                       // AMQP short strings
	maxMessageTTL = time.Duration(1<<32-1) * time.Millisecond // RabbitMQ x-message-ttl
)

// Validate checks c with its defaults applied (c itself is not changed) and
// reports every problem, joined with errors.Join; each is a *FieldError
// naming the field path, e.g.
//
//	workers[0].retry.max_retries: -1 is negative (unlimited retries must be explicit: set unlimited: true)
//
// It returns nil when c is valid.
func (c *Config) Validate() error {
	v := c.Clone()
	v.ApplyDefaults()
	var p problems
	v.validate(&p)
	return p.err()
}

// validate checks a config whose defaults are applied.
func (c *Config) validate(p *problems) {
	switch _, ok := driver.Lookup(c.Broker); {
	case c.Broker == "":
		p.add("broker", "required ("+linkedBackends()+")")
	case !ok:
		p.add("broker", fmt.Sprintf("%q is not %s", c.Broker, linkedBackends()))
	}
	switch c.Broker {
	case BrokerRabbitMQ:
		c.RabbitMQ.validate(p)
	case BrokerKafka:
		c.Kafka.validate(p)
	}
	if c.Broker != BrokerKafka && len(c.Kafka.ForeignDLQs) > 0 {
		p.add("kafka.foreign_dlqs", fmt.Sprintf("set, but broker is %q (foreign dead-letter topics are Kafka topics)", c.Broker))
	}
	if c.Broker != BrokerRabbitMQ && len(c.RabbitMQ.ForeignDLQs) > 0 {
		p.add("rabbitmq.foreign_dlqs", fmt.Sprintf("set, but broker is %q (foreign dead-letter queues are RabbitMQ queues)", c.Broker))
	}
	c.Redis.validate(p)
	c.Postgres.validate(p)
	c.Heartbeat.validate(p)
	validateWorkers(p, c.Workers)
	if c.Broker == BrokerRabbitMQ {
		c.validateDelays(p)
		for i, w := range c.Workers {
			if w.Retry.Mode == string(broker.Share) {
				p.add(fmt.Sprintf("workers[%d].retry.mode", i), "share is a Kafka mode (share groups); on rabbitmq retries never block: use non_blocking or leave it unset")
			}
		}
	}
	c.Lag.validate(p)
	if c.DLQ.MaxPayloadPreview < 0 {
		p.add("dlq.max_payload_preview", fmt.Sprintf("%d is negative (bytes of a payload shown inline)", c.DLQ.MaxPayloadPreview))
	}
	if c.DLQ.JobLease != 0 && time.Duration(c.DLQ.JobLease) < time.Second {
		p.add("dlq.job_lease", fmt.Sprintf("%s is shorter than 1s", time.Duration(c.DLQ.JobLease)))
	}
	if r := c.DLQ.Replica; len(r) > 200 || strings.IndexFunc(r, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }) >= 0 {
		p.add("dlq.replica", fmt.Sprintf("%.40q is longer than 200 characters or holds whitespace or control characters", r))
	}
	c.Admin.validate(p)
	c.Console.validate(p)
	c.Tracing.validate(p)
	c.ExactlyOnce.validate(p, c.Postgres.URL)
	checkListen(p, "exporter.listen", c.Exporter.Listen)
	checkListen(p, "relay.listen", c.Relay.Listen)
	if c.Health.Listen != "" {
		checkListen(p, "health.listen", c.Health.Listen)
	}
	checkListenConflicts(p, []listener{{"admin.listen", c.Admin.Listen}, {"exporter.listen", c.Exporter.Listen},
		{"health.listen", c.Health.Listen}, {"relay.listen", c.Relay.Listen}})
}

func (r RabbitMQ) validate(p *problems) {
	if r.URL != "" && len(r.URLs) > 0 {
		p.add("rabbitmq.urls", "set, and so is rabbitmq.url (url is the one-URL form of urls: keep one)")
	}
	for i, raw := range r.Endpoints() {
		path := "rabbitmq.url"
		if len(r.URLs) > 0 {
			path = fmt.Sprintf("rabbitmq.urls[%d]", i)
		}
		if u := checkURL(p, path, raw, "amqp", "amqps"); u != nil && r.TLS != nil && u.Scheme != "amqps" {
			p.add("rabbitmq.tls", fmt.Sprintf("set, but %s is not amqps://", path))
		}
	}
	if !legalName(r.Prefix, maxQueueLen-64, ":") {
		p.add("rabbitmq.prefix", fmt.Sprintf("%q is not a legal name (1-191 of a-z A-Z 0-9 . _ - :)", r.Prefix))
	}
	if r.QueueType != "classic" && r.QueueType != "quorum" {
		p.add("rabbitmq.queue_type", fmt.Sprintf("%q is not classic or quorum", r.QueueType))
	}
	if r.MaxLength < 0 {
		p.add("rabbitmq.max_length", fmt.Sprintf("%d is negative", r.MaxLength))
	}
	if r.DeliveryLimit < -1 {
		p.add("rabbitmq.delivery_limit", fmt.Sprintf("%d is below -1 (-1 = no limit)", r.DeliveryLimit))
	}
	if r.KeeperBatch < 0 || r.KeeperBatch > 10_000 {
		p.add("rabbitmq.keeper_batch", fmt.Sprintf("%d is not between 1 and 10000", r.KeeperBatch))
	}
	if w := time.Duration(r.KeeperBatchWait); w < 0 || w > time.Second {
		p.add("rabbitmq.keeper_batch_wait", fmt.Sprintf("%s is not between 0 and 1s", w))
	}
	if r.TLS != nil {
		r.TLS.validate(p, "rabbitmq.tls")
	}
	validateForeignQueues(p, r.ForeignDLQs)
	d := r.Delay
	if d.Mode != "hops" && d.Mode != "route" {
		p.add("rabbitmq.delay.mode", fmt.Sprintf("%q is not hops or route", d.Mode))
	}
	if d.QueueType != r.QueueType && d.QueueType != "classic" && d.QueueType != "quorum" {
		p.add("rabbitmq.delay.queue_type", fmt.Sprintf("%q is not classic or quorum", d.QueueType))
	}
	res := time.Duration(d.Resolution)
	switch {
	case res <= 0:
		p.add("rabbitmq.delay.resolution", fmt.Sprintf("%s is not positive", d.Resolution))
	case res%time.Millisecond != 0:
		p.add("rabbitmq.delay.resolution", fmt.Sprintf("%s is not a whole number of milliseconds", d.Resolution))
	}
	if d.Factor < 2 {
		p.add("rabbitmq.delay.factor", fmt.Sprintf("%d is below 2", d.Factor))
	}
	if d.Levels < 1 {
		p.add("rabbitmq.delay.levels", fmt.Sprintf("%d is below 1", d.Levels))
	}
	if d.valid() {
		if top := d.largestTier(); top > maxMessageTTL {
			p.add("rabbitmq.delay.levels", fmt.Sprintf("the largest tier, %s × %d^%d, exceeds RabbitMQ's x-message-ttl limit (%s)",
				d.Resolution, d.Factor, d.Levels-1, formatDuration(maxMessageTTL)))
		}
	}
}

func (k Kafka) validate(p *problems) {
	if len(k.Brokers) == 0 {
		p.add("kafka.brokers", "required when broker is kafka")
	}
	for i, b := range k.Brokers {
		if !validBroker(b) {
			p.add(fmt.Sprintf("kafka.brokers[%d]", i), fmt.Sprintf("%q is not host:port (no scheme, user or path)", shown(b)))
		}
	}
	k.TLS.validate(p, "kafka.tls")
	k.SASL.validate(p)
	validateForeignDLQs(p, k.ForeignDLQs)
	switch {
	case k.Partitions < 1:
		p.add("kafka.partitions", fmt.Sprintf("%d is not positive", k.Partitions))
	case k.Partitions > math.MaxInt32:
		p.add("kafka.partitions", fmt.Sprintf("%d is out of range", k.Partitions))
	}
	switch {
	case k.ReplicationFactor < -1 || k.ReplicationFactor == 0:
		p.add("kafka.replication_factor", fmt.Sprintf("%d is not -1 (the broker's default) or positive", k.ReplicationFactor))
	case k.ReplicationFactor > math.MaxInt16:
		p.add("kafka.replication_factor", fmt.Sprintf("%d is out of range", k.ReplicationFactor))
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"commit_interval", k.CommitInterval}, {"fetch_max_wait", k.FetchMaxWait}, {"heartbeat_interval", k.HeartbeatInterval},
		{"session_timeout", k.SessionTimeout}, {"rebalance_timeout", k.RebalanceTimeout}} {
		if d.v < 0 {
			p.add("kafka."+d.key, fmt.Sprintf("%s is negative", d.v))
		}
	}
	if k.Share.Members < 0 || k.Share.Members > 1000 {
		p.add("kafka.share.members", fmt.Sprintf("%d is not from 0 (2 × partitions + 1) to 1000", k.Share.Members))
	}
	if k.Share.Standby < 0 || k.Share.Standby > 1000 {
		p.add("kafka.share.standby", fmt.Sprintf("%d is not from 0 (none) to 1000", k.Share.Standby))
	}
	if k.Share.MaxHold < 0 {
		p.add("kafka.share.max_hold", fmt.Sprintf("%s is negative", k.Share.MaxHold))
	}
	if k.HeartbeatInterval > 0 && k.SessionTimeout > 0 && k.HeartbeatInterval >= k.SessionTimeout {
		p.add("kafka.heartbeat_interval", fmt.Sprintf("%s must be shorter than session_timeout (%s)", k.HeartbeatInterval, k.SessionTimeout))
	}
}

func (r Redis) validate(p *problems) {
	switch {
	case strings.Contains(r.Addr, "://"):
		p.add("redis.addr", fmt.Sprintf("%q is a URL: give host:port, and the password in redis.password", shown(r.Addr)))
	case !validHostPort(r.Addr) || strings.Contains(r.Addr, "@"):
		p.add("redis.addr", fmt.Sprintf("%q is not host:port", shown(r.Addr)))
	}
	if r.DB < 0 {
		p.add("redis.db", fmt.Sprintf("%d is negative", r.DB))
	}
	if r.Prefix != "" && !legalName(r.Prefix, maxRedisPrefixLen, ":/") {
		p.add("redis.prefix", fmt.Sprintf("%q is not a legal prefix (1-%d of a-z A-Z 0-9 . _ - : /)", r.Prefix, maxRedisPrefixLen))
	}
}

// maxRedisPrefixLen bounds redis.prefix.
const maxRedisPrefixLen = 64

func (pg Postgres) validate(p *problems) {
	if !strings.Contains(pg.URL, "://") {
		return // empty, or a key=value DSN
	}
	checkURL(p, "postgres.url", pg.URL, "postgres", "postgresql")
}

func (h Heartbeat) validate(p *problems) {
	for _, f := range []struct {
		path string
		d    Duration
	}{
		{"heartbeat.interval", h.Interval},
		{"heartbeat.ttl", h.TTL},
		{"heartbeat.missing_after", h.MissingAfter},
		{"heartbeat.idle_after", h.IdleAfter},
		{"heartbeat.shutdown_stuck_after", h.ShutdownStuckAfter},
	} {
		if f.d <= 0 {
			p.add(f.path, fmt.Sprintf("%s is not positive", f.d))
		}
	}
	if h.MaxInstances < 1 {
		p.add("heartbeat.max_instances", fmt.Sprintf("%d is not positive", h.MaxInstances))
	}
	if h.Interval > 0 && h.TTL > 0 && h.TTL <= h.Interval {
		p.add("heartbeat.ttl", fmt.Sprintf("%s must be longer than heartbeat.interval (%s)", h.TTL, h.Interval))
	}
	switch {
	case len(h.Instance) > maxInstanceLen:
		p.add("heartbeat.instance", fmt.Sprintf("%d characters, more than %d", len(h.Instance), maxInstanceLen))
	case strings.IndexFunc(h.Instance, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError }) >= 0:
		p.add("heartbeat.instance", fmt.Sprintf("%q holds whitespace, a control character or invalid UTF-8", h.Instance))
	}
}

// maxInstanceLen bounds heartbeat.instance.
const maxInstanceLen = 200

// validateWorkers checks workers whose defaults are applied. The names a
// backend derives from them (queues, topics, keys) are checked by the
// backend (internal/assembly.Check), with its own naming functions.
func validateWorkers(p *problems, workers []Worker) {
	names := map[string]int{}
	for i, w := range workers {
		path := fmt.Sprintf("workers[%d]", i)
		nameOK := checkName(p, path+".name", w.Name)
		if nameOK {
			if j, dup := names[w.Name]; dup {
				p.add(path+".name", fmt.Sprintf("%q is already the name of workers[%d]", w.Name, j))
			} else {
				names[w.Name] = i
			}
		}
		checkName(p, path+".topic", w.Topic)
		if w.QueueTTL != nil && *w.QueueTTL < 0 {
			p.add(path+".queue_ttl", fmt.Sprintf("%s is negative", *w.QueueTTL))
		}
		if w.MaxClaims != nil && *w.MaxClaims < 0 {
			p.add(path+".max_claims", fmt.Sprintf("%d is negative", *w.MaxClaims))
		}
		switch {
		case w.Concurrency < 0:
			p.add(path+".concurrency", fmt.Sprintf("%d is negative", w.Concurrency))
		case w.Concurrency > broker.MaxConcurrency:
			p.add(path+".concurrency", fmt.Sprintf("%d is over %d handlers per worker (run more instances instead)", w.Concurrency, broker.MaxConcurrency))
		}
		switch {
		case w.Prefetch < 0:
			p.add(path+".prefetch", fmt.Sprintf("%d is negative", w.Prefetch))
		case w.Prefetch > broker.MaxPrefetch:
			p.add(path+".prefetch", fmt.Sprintf("%d is over %d, RabbitMQ's largest prefetch", w.Prefetch, broker.MaxPrefetch))
		}
		w.Retry.validate(p, path+".retry")
		if err := w.KillSwitch.Config().Validate(); err != nil {
			// "killswitch: invalid config: activation -1 is below 1"
			msg := strings.TrimPrefix(err.Error(), killswitch.ErrInvalidConfig.Error()+": ")
			field, rest, _ := strings.Cut(msg, " ")
			p.add(path+".kill_switch."+field, rest)
		}
		if err := w.DLQ.Severity.Check(); err != nil {
			p.add(path+".dlq.severity", err.Error())
		}
		if !w.DLQ.Retention.Forever && w.DLQ.Retention.Duration < 0 {
			p.add(path+".dlq.retention", fmt.Sprintf("%s is negative", w.DLQ.Retention))
		}
		if w.Endpoint != nil {
			w.Endpoint.validate(p, path+".endpoint")
			if w.Foreign {
				p.add(path+".endpoint", "a foreign worker (foreign: true) is consumed by another program: it has no endpoint for redrive relay")
			}
		}
	}
}

// checkName checks a worker name or topic; it reports whether it is legal.
func checkName(p *problems, path, s string) bool {
	switch {
	case s == "":
		p.add(path, "required")
	case !legalName(s, maxTopicLen, ""):
		p.add(path, fmt.Sprintf("%q is not a legal topic name (1-249 of a-z A-Z 0-9 . _ -, not \".\" or \"..\")", abbreviate(s)))
	default:
		return true
	}
	return false
}

func (r Retry) validate(p *problems, path string) {
	if r.MaxRetries != nil && *r.MaxRetries < 0 {
		p.add(path+".max_retries", fmt.Sprintf("%d is negative (unlimited retries must be explicit: set unlimited: true)", *r.MaxRetries))
	} else if r.MaxRetries != nil && r.Unlimited {
		p.add(path+".unlimited", fmt.Sprintf("true conflicts with max_retries: %d (set one of them)", *r.MaxRetries))
	}
	r.Backoff.validate(p, path+".backoff")
	for i, c := range r.NonRetriable {
		if strings.TrimSpace(c) == "" {
			p.add(fmt.Sprintf("%s.non_retriable[%d]", path, i), "empty error class")
		}
	}
	if r.MaxElapsed < 0 {
		p.add(path+".max_elapsed", fmt.Sprintf("%s is negative", r.MaxElapsed))
	}
	if r.Mode != string(broker.Blocking) && r.Mode != string(broker.NonBlocking) && r.Mode != string(broker.Share) {
		p.add(path+".mode", fmt.Sprintf("%q is not blocking, non_blocking or share", r.Mode))
	}
}

func (b Backoff) validate(p *problems, path string) {
	if b.Exponential != nil && len(b.Delays) > 0 {
		p.add(path, "both a schedule and an exponential back-off are set")
	}
	for i, d := range b.Delays {
		if d < 0 {
			p.add(fmt.Sprintf("%s[%d]", path, i), fmt.Sprintf("%s is negative", formatDuration(d)))
		}
	}
	e := b.Exponential
	if e == nil {
		return
	}
	path += ".exponential"
	if e.Initial < 0 {
		p.add(path+".initial", fmt.Sprintf("%s is negative", formatDuration(e.Initial)))
	}
	if !(e.Multiplier >= 1) || math.IsInf(e.Multiplier, 0) {
		p.add(path+".multiplier", fmt.Sprintf("%g is not a finite number >= 1", e.Multiplier))
	}
	if e.Max < 0 {
		p.add(path+".max", fmt.Sprintf("%s is negative", formatDuration(e.Max)))
	}
	if !(e.Jitter >= 0 && e.Jitter <= 1) {
		p.add(path+".jitter", fmt.Sprintf("%g is outside [0, 1]", e.Jitter))
	}
}

// validateDelays checks that every worker's longest back-off fits in the
// RabbitMQ delay tiers.
func (c *Config) validateDelays(p *problems) {
	d := c.RabbitMQ.Delay
	if !d.valid() {
		return
	}
	limit := d.MaxDelay()
	for i, w := range c.Workers {
		if !w.Retry.valid() {
			continue
		}
		if longest := w.Policy().LongestDelay(); longest > limit {
			p.add(fmt.Sprintf("workers[%d].retry.backoff", i), fmt.Sprintf(
				"worker %q: longest delay %s exceeds %s, the longest the delay tiers express (rabbitmq.delay: %s × (%d^%d − 1))",
				w.Name, formatDuration(longest), formatDuration(limit), d.Resolution, d.Factor, d.Levels))
		}
	}
}

// valid reports whether r passes validation (quietly).
func (r Retry) valid() bool {
	var p problems
	r.validate(&p, "")
	return len(p.errs) == 0
}

func (l Lag) validate(p *problems) {
	topics := make([]string, 0, len(l.Thresholds))
	for t := range l.Thresholds {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, topic := range topics {
		th := l.Thresholds[topic]
		path := "lag.thresholds[" + strconv.Quote(topic) + "]"
		if !legalName(topic, maxTopicLen, "") {
			p.add(path, fmt.Sprintf("%q is not a legal topic name", abbreviate(topic)))
		}
		if th.Warning < 0 {
			p.add(path+".warning", fmt.Sprintf("%d is negative", th.Warning))
		}
		if th.Critical < 0 {
			p.add(path+".critical", fmt.Sprintf("%d is negative", th.Critical))
		}
		if th.Warning >= 0 && th.Critical >= 0 && th.Warning > th.Critical {
			p.add(path+".warning", fmt.Sprintf("%d is above critical (%d)", th.Warning, th.Critical))
		}
	}
}

// legalName reports whether s is 1..max characters of [a-zA-Z0-9._-] plus
// the extra characters, and not "." or "..".
func legalName(s string, max int, extra string) bool {
	if s == "" || len(s) > max || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		case strings.ContainsRune(extra, c):
		default:
			return false
		}
	}
	return true
}
