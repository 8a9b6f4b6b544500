package kafka

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/wire"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{Brokers: []string{"localhost:9092"}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"no brokers", func(c *Config) { c.Brokers = nil }, "brokers"},
		{"blank broker", func(c *Config) { c.Brokers = []string{"a:1", " "} }, "brokers[1]"},
		{"negative partitions", func(c *Config) { c.Partitions = -1 }, "partitions"},
		{"replication factor", func(c *Config) { c.ReplicationFactor = -2 }, "replication_factor"},
		{"negative timeout", func(c *Config) { c.DeliveryTimeout = -time.Second }, "delivery_timeout"},
		{"heartbeat over session", func(c *Config) { c.HeartbeatInterval, c.SessionTimeout = 10*time.Second, 6*time.Second }, "heartbeat_interval"},
		{"negative max buffered", func(c *Config) { c.MaxBuffered = -1 }, "max_buffered"},
		{"share standby", func(c *Config) { c.ShareStandby = -1 }, "share.standby"},
		{"foreign format", func(c *Config) { c.ForeignDLQs = map[string]ForeignFormat{"a.DLT": "avro"} }, `foreign_dlqs["a.DLT"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("Validate = %v, want ErrInvalidConfig naming %s", err, tc.field)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{Brokers: []string{"b:1"}}.withDefaults()
	if c.Partitions != 3 || c.ReplicationFactor != -1 || c.InstanceID == "" || c.Logger == nil ||
		c.MaxMessageBytes != DefaultMaxMessageBytes || c.KeeperGroup != DefaultKeeperGroup {
		t.Errorf("defaults = %+v", c)
	}
}

func TestDueAtNeverEarly(t *testing.T) {
	now := time.Date(2025, 1, 15, 10, 30, 0, 123_456_789, time.UTC)
	for _, d := range []time.Duration{0, time.Nanosecond, 100 * time.Millisecond, 1500*time.Millisecond + 1} {
		due := dueAt(now, d)
		back := wire.ParseTime(wire.FormatTime(due))
		if back.Before(now.Add(d)) {
			t.Errorf("dueAt(now, %s) reads back as %v, before %v", d, back, now.Add(d))
		}
		if back.Sub(now.Add(d)) >= time.Millisecond {
			t.Errorf("dueAt(now, %s) = %v, a millisecond or more late", d, back)
		}
	}
}

func TestSpecs(t *testing.T) {
	subs := []broker.Subscription{
		{Topic: "t", Group: "a", DLQ: broker.DLQOptions{Retention: time.Hour}},
		{Topic: "t", Group: "b", DLQ: broker.DLQOptions{Retention: broker.Forever}},
		{Topic: "t", Group: "c", DLQ: broker.DLQOptions{Retention: 2 * time.Hour}},
		{Topic: "u", Group: "a"},
	}
	sp, err := specs(subs, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]topicSpec{}
	for _, s := range sp {
		got[s.name] = s
	}
	want := map[string]TopicRole{"t": RoleTopic, "t.dlq": RoleDLQ, "t.retry.a": RoleRetry, "t.retry.b": RoleRetry,
		"t.retry.c": RoleRetry, "u": RoleTopic, "u.dlq": RoleDLQ, "u.retry.a": RoleRetry}
	if len(got) != len(want) {
		t.Fatalf("specs = %v, want %v", sp, want)
	}
	for name, role := range want {
		if got[name].role != role {
			t.Errorf("%s: role %q, want %q", name, got[name].role, role)
		}
	}
	if r := got["t.dlq"].configs[ConfigRetention]; r != "-1" {
		t.Errorf("shared DLQ retention = %s, want -1 (forever wins)", r)
	}
	if r := got["u.dlq"].configs[ConfigRetention]; r != "2592000000" {
		t.Errorf("default DLQ retention = %s, want 30 days", r)
	}
	if m := got["t.dlq"].configs[ConfigMaxMessageBytes]; m != "67536" {
		t.Errorf("DLQ max.message.bytes = %s, want 2×1000 + 64 KiB", m)
	}
	if _, err := specs([]broker.Subscription{{Topic: "t"}}, 1000); !errors.Is(err, broker.ErrInvalidSubscription) {
		t.Errorf("specs of an invalid subscription = %v", err)
	}
}

func TestEarliestDue(t *testing.T) {
	now := time.Now()
	a := &slot{due: now.Add(time.Second)}
	b := &slot{due: now}
	c := &slot{due: now.Add(-time.Second), done: true}
	d := &slot{due: now}
	if got := earliestDue([]*slot{a, b, c, d}); got != b {
		t.Errorf("earliestDue picked %v, want the first of the earliest not done", got)
	}
	if got := earliestDue([]*slot{c}); got != nil {
		t.Errorf("earliestDue of done slots = %v, want nil", got)
	}
}
