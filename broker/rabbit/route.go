package rabbit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Route mode writes a delay, in whole resolutions, as base-factor digits
// d0.d1…d(L-1) in front of the target queue's name in the routing key.
// Level k is a topic exchange that sends a message whose k-th digit is d
// to the queue of TTL d × factor^k × resolution, or, for digit 0, straight
// on to level k+1 through an exchange-to-exchange binding. Each level's
// queues dead-letter into the next level with the routing key unchanged;
// the last level delivers through the final exchange, where each group
// queue is bound with L wildcards and its own name. A message is stored at
// most once per level, and no consumer republishes it on the way.
//
// PublishDelayed routes the same way, from the publish on: its key names
// the topic behind the word routeTopicWord (d0.….d(L-1).@.<topic>). It
// enters through the RouteTopics exchange, bound to level 0 for each
// subscribed topic (a topic nobody subscribed is returned to the
// publisher), and each group queue is bound on the final exchange for its
// topic too, so the broker fans the message out to the topic's groups
// when it is due.

// routeTopicWord marks a route key that names a topic, not a queue. A
// queue's name begins with its topic, so no topic may begin with this word
// (checkTopic): the two kinds of key can never match each other's binding.
const routeTopicWord = "@"

// routeTopic is what a route key names for a delayed publish to topic.
func routeTopic(topic string) string { return routeTopicWord + "." + topic }

// checkTopic rejects a topic whose first word is routeTopicWord.
func checkTopic(topic string) error {
	if topic == routeTopicWord || strings.HasPrefix(topic, routeTopicWord+".") {
		return fmt.Errorf("rabbit: topic %q: the first word %q is reserved for delayed routing keys", topic, routeTopicWord)
	}
	return nil
}

// route is how a route delays a message for a target queue (routeKey).
type route struct {
	// key is the routing key: the delay in base-factor digits, then the
	// queue.
	key string
	// leftMS is what remains beyond the route's range, for the consumer
	// (0 unless the delay exceeds it).
	leftMS int64
	// stored is how many queues the message is stored in.
	stored int
	// expire is the per-message expiration (RabbitMQ's expiration
	// property, in milliseconds) that takes back what rounding the delay up
	// to whole resolutions added: the TTL of the first queue the message
	// is stored in, less that, so the route holds it for the delay itself,
	// not up to a resolution more. The queue dead-letters the message at
	// the lower of its TTL and the expiration, once at its head; the
	// messages before it entered earlier with the same TTL, so it leaves
	// no later than the TTL alone would let it. RabbitMQ removes the
	// property when it dead-letters a message, so the later queues keep
	// their own TTL. "" when rounding added nothing, or when the delay
	// exceeds the route (the consumer waits the rest).
	expire string
}

// routeKey returns the route that delays a message for queue by remaining
// (rounded up to whole resolutions, at most t.max()).
func (t tiers) routeKey(remaining time.Duration, queue string) route {
	var r route
	ms := ceilMS(remaining)
	units := max((ms+t.res-1)/t.res, 0)
	added := max(units*t.res-ms, 0)
	if maxUnits := t.max().Milliseconds() / t.res; units > maxUnits {
		r.leftMS = (units - maxUnits) * t.res
		units, added = maxUnits, 0 // the rounding is in what is left
	}
	var b strings.Builder
	for _, ttl := range t.ms {
		d := units % t.factor
		units /= t.factor
		if d != 0 {
			if r.stored == 0 && added > 0 {
				r.expire = strconv.FormatInt(d*ttl-added, 10)
			}
			r.stored++
		}
		b.WriteString(strconv.FormatInt(d, 10))
		b.WriteByte('.')
	}
	b.WriteString(queue)
	r.key = b.String()
	return r
}

// routeBinding is the binding key of a group queue on the final exchange
// for target: its own name, or routeTopic of its topic.
func (t tiers) routeBinding(target string) string {
	return strings.Repeat("*.", len(t.ms)) + target
}
