package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// ErrRemoveRefused is wrapped by Remove's error when it left a topic in
// place because records wait in it: RemoveRequest.Force deletes those too.
var ErrRemoveRefused = driver.NewError("kafka: removal refused", driver.ErrRemoveRefused)

// RemoveRequest says whose topics Remove deletes.
type RemoveRequest struct {
	// Remove are the subscriptions whose retry topics go, and their DLQ
	// topic when no subscription of Keep shares its topic. The topics
	// applications publish to (<topic>) are never removed: redrive may
	// not have created them; Topics names them explicitly.
	Remove []broker.Subscription
	// Keep are the subscriptions that stay: no topic they need is removed.
	Keep []broker.Subscription
	// Topics are more topics to delete, named by the operator (an
	// application topic redrive created, a stray retry topic).
	Topics []string
	// Force deletes topics in which records wait.
	Force bool
	// DryRun looks everything up and changes nothing.
	DryRun bool
}

// TopicRemoval is one topic of Remove's plan and what became of it.
type TopicRemoval struct {
	Topic string
	Role  TopicRole
	// Action: "delete" (a dry run), "deleted", "refused" or "absent".
	Action string
	// Waiting is how many records the group that reads the topic has not
	// committed: the worker's group for its retry topic, the keeper's
	// (Config.KeeperGroup) for a DLQ; every retained record for a topic
	// named in Topics.
	Waiting int64
	// Group is the group Waiting is counted for ("" for named topics).
	Group string
	// Reason explains a refusal.
	Reason string
}

// String renders r as one line of `redrive topology delete`.
func (r TopicRemoval) String() string {
	s := fmt.Sprintf("%-8s topic %s (%s)", r.Action, r.Topic, r.Role)
	if r.Action != "absent" {
		if r.Group != "" {
			s += fmt.Sprintf(" [%d records waiting for group %s]", r.Waiting, r.Group)
		} else {
			s += fmt.Sprintf(" [%d records]", r.Waiting)
		}
	}
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	return s
}

// Remove deletes the retry and dead-letter topics of req.Remove that
// req.Keep does not need, and the topics req.Topics names: `redrive
// topology delete`. A topic in which records wait for their group is
// refused unless req.Force; Remove then returns the removals with an
// error wrapping ErrRemoveRefused. The application topics (<topic>) are
// left alone unless named, and so are the consumer groups.
func (b *Broker) Remove(ctx context.Context, req RemoveRequest) ([]TopicRemoval, error) {
	if b.isClosed() {
		return nil, broker.ErrClosed
	}
	keep, err := specs(req.Keep, b.cfg.MaxMessageBytes)
	if err != nil {
		return nil, err
	}
	drop, err := specs(req.Remove, b.cfg.MaxMessageBytes)
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, s := range keep {
		kept[s.name] = true
	}
	groupOf := map[string]string{} // retry topic -> its group
	for _, s := range req.Remove {
		groupOf[RetryTopic(s.Topic, s.Group)] = s.Group
	}
	var out []TopicRemoval
	for _, s := range drop {
		if s.role == RoleTopic || kept[s.name] {
			continue
		}
		r := TopicRemoval{Topic: s.name, Role: s.role, Group: groupOf[s.name]}
		if s.role == RoleDLQ {
			r.Group = b.cfg.KeeperGroup
		}
		out = append(out, r)
	}
	for _, t := range req.Topics {
		if !slices.ContainsFunc(out, func(r TopicRemoval) bool { return r.Topic == t }) {
			out = append(out, TopicRemoval{Topic: t, Role: roleOf(t)})
		}
	}
	if err := b.countWaiting(ctx, out); err != nil {
		return out, err
	}
	var doomed []string
	refused := 0
	for i := range out {
		r := &out[i]
		switch {
		case r.Action == "absent":
		case r.Waiting > 0 && !req.Force:
			r.Action, r.Reason = "refused", "records wait (let the group consume them, or --force)"
			refused++
		case req.DryRun:
			r.Action = "delete"
		default:
			doomed = append(doomed, r.Topic)
		}
	}
	if len(doomed) > 0 {
		resps, err := b.adm.DeleteTopics(ctx, doomed...)
		if err != nil {
			return out, fmt.Errorf("kafka: delete topics: %w", err)
		}
		for i := range out {
			r := &out[i]
			resp, ok := resps[r.Topic]
			if !ok || !slices.Contains(doomed, r.Topic) {
				continue
			}
			if resp.Err != nil && !errors.Is(resp.Err, kerr.UnknownTopicOrPartition) {
				return out, fmt.Errorf("kafka: delete topic %q: %w", r.Topic, resp.Err)
			}
			r.Action = "deleted"
			b.forget(r.Topic)
			b.log.Info("kafka: topic deleted", "topic", r.Topic, "role", r.Role, "waiting", r.Waiting, "forced", req.Force)
		}
	}
	if refused > 0 {
		return out, fmt.Errorf("%w: %d topics left in place (records wait; --force deletes them)", ErrRemoveRefused, refused)
	}
	return out, nil
}

// roleOf guesses the role of a topic named by the operator.
func roleOf(t string) TopicRole {
	switch {
	case strings.HasSuffix(t, dlqSuffix):
		return RoleDLQ
	case strings.Contains(t, ".retry."):
		return RoleRetry
	}
	return RoleTopic
}

// countWaiting sets Waiting (and absent) for each removal: the records
// between each partition's start (or the group's committed offset, when
// later) and its end.
func (b *Broker) countWaiting(ctx context.Context, rs []TopicRemoval) error {
	if len(rs) == 0 {
		return nil
	}
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Topic
	}
	details, err := b.describeTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("kafka: list topics (brokers %s): %w", b.brokerList(), err)
	}
	var present []string
	for i := range rs {
		if d, ok := details[rs[i].Topic]; !ok || d.Err != nil {
			rs[i].Action = "absent"
			continue
		}
		present = append(present, rs[i].Topic)
	}
	if len(present) == 0 {
		return nil
	}
	starts, err := b.adm.ListStartOffsets(ctx, present...)
	if err != nil {
		return fmt.Errorf("kafka: list start offsets: %w", err)
	}
	ends, err := b.adm.ListEndOffsets(ctx, present...)
	if err != nil {
		return fmt.Errorf("kafka: list end offsets: %w", err)
	}
	committed := map[string]map[string]map[int32]int64{} // group -> topic -> partition -> offset
	for _, r := range rs {
		if r.Group == "" || committed[r.Group] != nil {
			continue
		}
		offs, err := b.adm.FetchOffsets(ctx, r.Group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			committed[r.Group] = map[string]map[int32]int64{} // no commits: every record waits
			continue
		}
		if err != nil {
			return fmt.Errorf("kafka: fetch offsets of group %q: %w", r.Group, err)
		}
		m := map[string]map[int32]int64{}
		for t, ps := range offs {
			m[t] = map[int32]int64{}
			for p, o := range ps {
				if o.Err == nil {
					m[t][p] = o.At
				}
			}
		}
		committed[r.Group] = m
	}
	for i := range rs {
		r := &rs[i]
		if r.Action == "absent" {
			continue
		}
		for _, p := range slices.Sorted(maps.Keys(ends[r.Topic])) {
			end := ends[r.Topic][p]
			if end.Err != nil {
				return fmt.Errorf("kafka: end offset of %s/%d: %w", r.Topic, p, end.Err)
			}
			from := int64(0)
			if s, ok := starts.Lookup(r.Topic, p); ok && s.Err == nil {
				from = s.Offset
			}
			if at, ok := committed[r.Group][r.Topic][p]; ok && at > from {
				from = at
			}
			r.Waiting += max(0, end.Offset-from)
		}
	}
	return nil
}

// forget drops topic from the topics this Broker knows exist.
func (b *Broker) forget(topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.known, topic)
}

// Strays lists the topics on the cluster that are shaped like redrive's
// retry and dead-letter topics (<topic>.retry.<group>, <topic>.dlq) but
// that subs do not need: what `redrive topology plan` reports as no
// longer named by the configuration (a retired worker's, another
// configuration's sharing the cluster, or a foreign DLQ's). It never
// deletes anything.
func (b *Broker) Strays(ctx context.Context, subs ...broker.Subscription) ([]string, error) {
	if b.isClosed() {
		return nil, broker.ErrClosed
	}
	sp, err := specs(subs, b.cfg.MaxMessageBytes)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, s := range sp {
		named[s.name] = true
	}
	topics, err := b.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: list topics (brokers %s): %w", b.brokerList(), err)
	}
	var out []string
	for _, t := range topics.Names() {
		if !named[t] && roleOf(t) != RoleTopic {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}
