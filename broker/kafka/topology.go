package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/broker"
)

// dlqSuffix ends the name of every dead-letter topic.
const dlqSuffix = ".dlq"

// DLQTopic returns the dead-letter topic of topic: "<topic>.dlq".
func DLQTopic(topic string) string { return topic + dlqSuffix }

// RetryTopic returns the retry topic of a group: "<topic>.retry.<group>".
// It holds the non_blocking retries of the group and the replays of its dead
// letters; there is one per group so that a retry or a replay returns only
// to the group that failed.
func RetryTopic(topic, group string) string { return topic + ".retry." + group }

// TopicRole says what a topic is for.
type TopicRole string

// Topic roles.
const (
	RoleTopic TopicRole = "topic" // <topic>: what applications publish to
	RoleDLQ   TopicRole = "dlq"   // <topic>.dlq
	RoleRetry TopicRole = "retry" // <topic>.retry.<group>: retries and replays of one group
)

// PlanAction is what Apply does to a topic.
type PlanAction string

// Plan actions.
const (
	ActionCreate PlanAction = "create" // the topic is missing
	ActionUpdate PlanAction = "update" // a config redrive manages differs
	ActionKeep   PlanAction = "keep"   // nothing to do
)

// Topic configs redrive manages on dead-letter topics.
const (
	// ConfigRetention: DLQOptions.Retention (-1 for Forever, 30 days by
	// default).
	ConfigRetention = "retention.ms"
	// ConfigMaxMessageBytes: room for the envelope of the largest message
	// Publish accepts (base64 makes binary values a third larger), see
	// dlqMaxBytes.
	ConfigMaxMessageBytes = "max.message.bytes"
)

// dlqMaxBytes is the largest dead-letter record: twice the largest
// message, plus room for the story.
func dlqMaxBytes(maxMessageBytes int) int { return 2*maxMessageBytes + 64<<10 }

// TopicPlan is what Plan found, and Apply does, for one topic.
type TopicPlan struct {
	Topic  string
	Role   TopicRole
	Action PlanAction
	// Partitions and ReplicationFactor are what the topic is created with
	// (ActionCreate) or has now. ReplicationFactor -1 is the broker default.
	Partitions        int32
	ReplicationFactor int16
	// CurrentPartitions is the partition count the topic has; 0 when missing.
	CurrentPartitions int32
	// Configs are the configs redrive manages, with the values wanted;
	// CurrentConfigs their values on the cluster (existing topics only).
	Configs        map[string]string
	CurrentConfigs map[string]string
	// Notes are differences Apply does not change: a partition count other
	// than Config.Partitions is reported, never changed, because adding
	// partitions moves keys between partitions and breaks their order.
	Notes []string
}

// String renders p as one line of `redrive topology apply --dry-run`:
// the action, the topic and its role, the partitions, the managed configs
// (with their current values when they change) and the notes.
func (p TopicPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s topic %s (%s) partitions %d", p.Action, p.Topic, p.Role, p.Partitions)
	if p.Action == ActionCreate {
		rf := "broker default"
		if p.ReplicationFactor > 0 {
			rf = strconv.Itoa(int(p.ReplicationFactor))
		}
		fmt.Fprintf(&b, ", replication %s", rf)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Configs)) {
		fmt.Fprintf(&b, " %s=%s", k, p.Configs[k])
		if have, ok := p.CurrentConfigs[k]; ok && have != p.Configs[k] {
			fmt.Fprintf(&b, " (now %s)", have)
		}
	}
	for _, n := range p.Notes {
		b.WriteString("; " + n)
	}
	return b.String()
}

// topicSpec is a topic the subscriptions need.
type topicSpec struct {
	name    string
	role    TopicRole
	configs map[string]string
}

// specs lists the topics subs need, each once, sorted by name. A DLQ shared
// by groups keeps the longest retention asked for.
func specs(subs []broker.Subscription, maxMessageBytes int) ([]topicSpec, error) {
	byName := make(map[string]*topicSpec)
	add := func(s topicSpec) *topicSpec {
		if old, ok := byName[s.name]; ok {
			return old
		}
		byName[s.name] = &s
		return &s
	}
	dlqRetention := make(map[string]time.Duration)
	for _, sub := range subs {
		if err := sub.Validate(); err != nil {
			return nil, err
		}
		sub = sub.WithDefaults()
		add(topicSpec{name: sub.Topic, role: RoleTopic})
		dlq := DLQTopic(sub.Topic)
		r := sub.DLQ.Retention
		if r == 0 {
			r = DefaultDLQRetention
		}
		if old, ok := dlqRetention[dlq]; !ok || old != broker.Forever && (r == broker.Forever || r > old) {
			dlqRetention[dlq] = r
		}
		add(topicSpec{name: dlq, role: RoleDLQ})
		add(topicSpec{name: RetryTopic(sub.Topic, sub.Group), role: RoleRetry})
	}
	for name, r := range dlqRetention {
		ms := int64(-1)
		if r != broker.Forever {
			ms = r.Milliseconds()
		}
		byName[name].configs = map[string]string{
			ConfigRetention:       strconv.FormatInt(ms, 10),
			ConfigMaxMessageBytes: strconv.Itoa(dlqMaxBytes(maxMessageBytes)),
		}
	}
	out := make([]topicSpec, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out, nil
}

// Declare creates the topics subs need when they are missing: <topic>,
// <topic>.dlq (retention from DLQOptions.Retention: Forever is
// retention.ms=-1, 0 is 30 days; max.message.bytes large enough for the
// envelope of any message Publish accepts) and <topic>.retry.<group> for
// each group.
// Existing topics are left as they are (see Apply).
func (b *Broker) Declare(ctx context.Context, subs ...broker.Subscription) error {
	if b.isClosed() {
		return broker.ErrClosed
	}
	sp, err := specs(subs, b.cfg.MaxMessageBytes)
	if err != nil {
		return err
	}
	if err := b.declareShare(ctx, subs); err != nil {
		return err
	}
	var missing []topicSpec
	for _, s := range sp {
		if !b.isKnown(s.name) {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, len(missing))
	for i, s := range missing {
		names[i] = s.name
	}
	details, err := b.describeTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("kafka: list topics (brokers %s): %w", b.brokerList(), err)
	}
	for _, s := range missing {
		if d, ok := details[s.name]; ok && d.Err == nil {
			b.markKnown(s.name)
			continue
		}
		if err := b.createTopic(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// ensureTopic creates topic (Config.Partitions, no special configs) when it
// does not exist yet.
func (b *Broker) ensureTopic(ctx context.Context, topic string) error {
	if b.isKnown(topic) {
		return nil
	}
	details, err := b.describeTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("list topic %q: %w", topic, err)
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		b.markKnown(topic)
		return nil
	}
	return b.createTopic(ctx, topicSpec{name: topic, role: RoleTopic})
}

// createTopic creates s; a topic that already exists is fine.
func (b *Broker) createTopic(ctx context.Context, s topicSpec) error {
	var configs map[string]*string
	if len(s.configs) > 0 {
		configs = make(map[string]*string, len(s.configs))
		for k, v := range s.configs {
			configs[k] = kadm.StringPtr(v)
		}
	}
	_, err := b.adm.CreateTopic(ctx, int32(b.cfg.Partitions), b.cfg.ReplicationFactor, configs, s.name)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafka: create topic %q: %w", s.name, err)
	}
	if err == nil {
		b.log.Info("created topic", "topic", s.name, "role", s.role, "partitions", b.cfg.Partitions)
	}
	b.markKnown(s.name)
	return nil
}

// topicInfo is what a metadata request says about one topic.
type topicInfo struct {
	Partitions        int32
	ReplicationFactor int16
	Err               error // UnknownTopicOrPartition when missing
}

// describeTopics asks the cluster about topics with a metadata request that
// bypasses franz-go's metadata cache (a topic created a moment ago must
// show).
func (b *Broker) describeTopics(ctx context.Context, topics ...string) (map[string]topicInfo, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, b.prod)
	if err != nil {
		return nil, err
	}
	out := make(map[string]topicInfo, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		info := topicInfo{Partitions: int32(len(t.Partitions)), Err: kerr.ErrorForCode(t.ErrorCode)}
		for _, p := range t.Partitions {
			info.ReplicationFactor = max(info.ReplicationFactor, int16(len(p.Replicas)))
		}
		out[*t.Topic] = info
	}
	return out, nil
}

func (b *Broker) isKnown(topic string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.known[topic]
}

func (b *Broker) markKnown(topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.known[topic] = true
}

// Plan compares the topics subs need with the cluster: which are missing
// (ActionCreate), which have a managed config (the DLQ's retention.ms and
// max.message.bytes) that differs (ActionUpdate), and which partition counts differ from
// Config.Partitions (Notes). It changes nothing.
func (b *Broker) Plan(ctx context.Context, subs ...broker.Subscription) ([]TopicPlan, error) {
	if b.isClosed() {
		return nil, broker.ErrClosed
	}
	sp, err := specs(subs, b.cfg.MaxMessageBytes)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(sp))
	for i, s := range sp {
		names[i] = s.name
	}
	details, err := b.describeTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("kafka: list topics (brokers %s): %w", b.brokerList(), err)
	}
	var existing []string
	for _, s := range sp {
		if d, ok := details[s.name]; ok && d.Err == nil && len(s.configs) > 0 {
			existing = append(existing, s.name)
		}
	}
	current := make(map[string]map[string]string)
	if len(existing) > 0 {
		rcs, err := b.adm.DescribeTopicConfigs(ctx, existing...)
		if err != nil {
			return nil, fmt.Errorf("kafka: describe topic configs: %w", err)
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				return nil, fmt.Errorf("kafka: describe configs of topic %q: %w", rc.Name, rc.Err)
			}
			m := make(map[string]string)
			for _, c := range rc.Configs {
				if c.Value != nil {
					m[c.Key] = *c.Value
				}
			}
			current[rc.Name] = m
		}
	}
	plans := make([]TopicPlan, 0, len(sp))
	for _, s := range sp {
		p := TopicPlan{Topic: s.name, Role: s.role, Configs: maps.Clone(s.configs)}
		if p.Configs == nil {
			p.Configs = map[string]string{}
		}
		d, ok := details[s.name]
		if !ok || d.Err != nil {
			if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("kafka: describe topic %q: %w", s.name, d.Err)
			}
			p.Action = ActionCreate
			p.Partitions = int32(b.cfg.Partitions)
			p.ReplicationFactor = b.cfg.ReplicationFactor
			plans = append(plans, p)
			continue
		}
		p.Action = ActionKeep
		p.Partitions = d.Partitions
		p.CurrentPartitions = p.Partitions
		p.ReplicationFactor = d.ReplicationFactor
		if p.Partitions != int32(b.cfg.Partitions) {
			p.Notes = append(p.Notes, fmt.Sprintf("has %d partitions, config says %d (not changed: adding partitions moves keys between partitions)",
				p.Partitions, b.cfg.Partitions))
		}
		p.CurrentConfigs = make(map[string]string, len(s.configs))
		for k, want := range s.configs {
			have := current[s.name][k]
			p.CurrentConfigs[k] = have
			if have != want {
				p.Action = ActionUpdate
			}
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// Apply carries out Plan: it creates the missing topics and sets the managed
// configs that differ. It returns the plan it carried out. Partition counts
// are never changed.
func (b *Broker) Apply(ctx context.Context, subs ...broker.Subscription) ([]TopicPlan, error) {
	plans, err := b.Plan(ctx, subs...)
	if err != nil {
		return nil, err
	}
	for _, p := range plans {
		switch p.Action {
		case ActionCreate:
			if err := b.createTopic(ctx, topicSpec{name: p.Topic, role: p.Role, configs: p.Configs}); err != nil {
				return plans, err
			}
		case ActionUpdate:
			alters := make([]kadm.AlterConfig, 0, len(p.Configs))
			for _, k := range slices.Sorted(maps.Keys(p.Configs)) {
				if p.CurrentConfigs[k] != p.Configs[k] {
					alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(p.Configs[k])})
				}
			}
			resps, err := b.adm.AlterTopicConfigs(ctx, alters, p.Topic)
			if err == nil {
				for _, r := range resps {
					if r.Err != nil {
						err = r.Err
						break
					}
				}
			}
			if err != nil {
				return plans, fmt.Errorf("kafka: alter configs of topic %q: %w", p.Topic, err)
			}
			b.log.Info("updated topic configs", "topic", p.Topic, "configs", p.Configs)
		}
	}
	return plans, nil
}
