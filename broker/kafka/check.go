package kafka

import (
	"fmt"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
)

// MaxTopicLen is the longest topic name Kafka takes.
const MaxTopicLen = 249

func init() { backend.RegisterChecker(broker.Kafka, checkNames) }

// checkNames computes every topic `topology apply` would create for a
// valid configuration (each worker's topic, "<topic>.dlq" and
// "<topic>.retry.<name>", as this package names them) and reports, naming
// the field to change, a topic over MaxTopicLen characters and a topic
// that two workers would use for different things: a retry topic of two
// workers (worker "retry.b" of topic "a" and worker "b" of topic
// "a.retry.retry"…), or a retry or dead-letter topic that is another
// worker's topic; and a foreign dead-letter topic (kafka.foreign_dlqs) that
// is one of those topics, or that replays to a dead-letter topic.
func checkNames(c *config.Config) []*config.FieldError {
	var out []*config.FieldError
	add := func(path, format string, args ...any) {
		out = append(out, &config.FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	type use struct {
		role  TopicRole
		owner int // the worker, for retry topics
		desc  string
	}
	uses := map[string]use{}
	for i, s := range c.Subscriptions() {
		sp, err := specs([]broker.Subscription{s}, 0)
		if err != nil {
			add(fmt.Sprintf("workers[%d]", i), "%v", err)
			continue
		}
		for _, t := range sp {
			field := fmt.Sprintf("workers[%d].name", i)
			if t.role != RoleRetry {
				field = fmt.Sprintf("workers[%d].topic", i)
			}
			if len(t.name) > MaxTopicLen {
				add(field, "its %s %q is %d characters, over Kafka's %d", roleName(t.role), backend.Clip(t.name), len(t.name), MaxTopicLen)
				continue
			}
			u := use{role: t.role, owner: i, desc: fmt.Sprintf("the %s of workers[%d] (topic %q, name %q)", roleName(t.role), i, backend.Clip(s.Topic), backend.Clip(s.Group))}
			prev, dup := uses[t.name]
			switch {
			case !dup:
				uses[t.name] = u
			case prev.role != t.role || t.role == RoleRetry && prev.owner != i:
				add(field, "its %s %q is also %s: rename one of the workers", roleName(t.role), backend.Clip(t.name), prev.desc)
			}
		}
	}
	for i, f := range c.Kafka.ForeignDLQs {
		path := fmt.Sprintf("kafka.foreign_dlqs[%d]", i)
		if u, ok := uses[f.Topic]; ok {
			add(path+".topic", "%q is also %s: a foreign dead-letter topic is another application's, not redrive's", backend.Clip(f.Topic), u.desc)
		}
		if u, ok := uses[f.ReplayTo]; ok && u.role == RoleDLQ {
			add(path+".replay_to", "%q is %s: replays must go to a topic consumers read", backend.Clip(f.ReplayTo), u.desc)
		}
	}
	return out
}

// roleName names a topic role in messages.
func roleName(r TopicRole) string {
	switch r {
	case RoleDLQ:
		return "dead-letter topic"
	case RoleRetry:
		return "retry topic"
	}
	return "topic"
}
