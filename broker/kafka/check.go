package kafka

import (
	"fmt"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// MaxTopicLen is the longest topic name Kafka takes.
const MaxTopicLen = 249

// ForeignDLQ is another application's dead-letter topic the keeper
// reads (the configuration's kafka.foreign_dlqs), as CheckNames sees it.
type ForeignDLQ struct {
	// Topic is the dead-letter topic; ReplayTo the topic its replays go
	// to.
	Topic, ReplayTo string
}

// CheckNames computes every topic `topology apply` would create for subs
// (each worker's topic, "<topic>.dlq" and "<topic>.retry.<name>", as this
// package names them), without connecting, and reports, naming the
// setting to change (a Problem's Worker indexes subs), a topic over MaxTopicLen characters and a topic
// that two workers would use for different things: a retry topic of two
// workers (worker "retry.b" of topic "a" and worker "b" of topic
// "a.retry.retry"…), or a retry or dead-letter topic that is another
// worker's topic; and a foreign dead-letter topic (foreign) that is one
// of those topics, or that replays to a dead-letter topic.
func CheckNames(subs []broker.Subscription, foreign []ForeignDLQ) []driver.Problem {
	var out []driver.Problem
	add := func(worker int, field, format string, args ...any) {
		out = append(out, driver.Problem{Worker: worker, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	type use struct {
		role  TopicRole
		owner int // the worker, for retry topics
		desc  string
	}
	uses := map[string]use{}
	for i, s := range subs {
		sp, err := specs([]broker.Subscription{s}, 0)
		if err != nil {
			add(i, "", "%v", err)
			continue
		}
		for _, t := range sp {
			field := "name"
			if t.role != RoleRetry {
				field = "topic"
			}
			if len(t.name) > MaxTopicLen {
				add(i, field, "its %s %q is %d characters, over Kafka's %d", roleName(t.role), driver.ClipName(t.name), len(t.name), MaxTopicLen)
				continue
			}
			u := use{role: t.role, owner: i, desc: fmt.Sprintf("the %s of workers[%d] (topic %q, name %q)", roleName(t.role), i, driver.ClipName(s.Topic), driver.ClipName(s.Group))}
			prev, dup := uses[t.name]
			switch {
			case !dup:
				uses[t.name] = u
			case prev.role != t.role || t.role == RoleRetry && prev.owner != i:
				add(i, field, "its %s %q is also %s: rename one of the workers", roleName(t.role), driver.ClipName(t.name), prev.desc)
			}
		}
	}
	for i, f := range foreign {
		path := fmt.Sprintf("foreign_dlqs[%d]", i)
		if u, ok := uses[f.Topic]; ok {
			add(-1, path+".topic", "%q is also %s: a foreign dead-letter topic is another application's, not redrive's", driver.ClipName(f.Topic), u.desc)
		}
		if u, ok := uses[f.ReplayTo]; ok && u.role == RoleDLQ {
			add(-1, path+".replay_to", "%q is %s: replays must go to a topic consumers read", driver.ClipName(f.ReplayTo), u.desc)
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
