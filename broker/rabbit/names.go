package rabbit

import "strconv"

// Names derives every name on the wire from the prefix.
type Names struct{ Prefix string }

// Topics is the topic exchange Publish routes to with key = topic.
func (n Names) Topics() string { return n.Prefix + ".topics" }

// Retry is the direct exchange each group queue is bound to with its own
// name, so a retry reaches only that queue.
func (n Names) Retry() string { return n.Prefix + ".retry" }

// DLX is the direct exchange that routes dead letters to "<queue>.dlq".
func (n Names) DLX() string { return n.Prefix + ".dlx" }

// Unroutable names both the fanout exchange that is the alternate exchange
// of Retry and DLX, and the queue that parks what it receives.
func (n Names) Unroutable() string { return n.Prefix + ".unroutable" }

// Tier names the delay tier of ms milliseconds (queue and its exchange).
func (n Names) Tier(ms int64) string { return n.Prefix + ".delay." + strconv.FormatInt(ms, 10) }

// RouteLevel names the topic exchange of route-mode level k.
func (n Names) RouteLevel(k int) string { return n.Prefix + ".route." + strconv.Itoa(k) }

// RouteQueue names the route-mode queue of level k for digit d.
func (n Names) RouteQueue(k, d int) string { return n.RouteLevel(k) + "." + strconv.Itoa(d) }

// RouteFinal names the topic exchange the last route level delivers
// through; group queues are bound to it.
func (n Names) RouteFinal() string { return n.Prefix + ".route.final" }

// RouteTopics names the topic exchange PublishDelayed enters the route
// through in route mode: each subscription binds it to level 0 for its
// topic, and it has no alternate exchange, so a topic nobody consumes is
// returned to the publisher.
func (n Names) RouteTopics() string { return n.Prefix + ".route.topics" }

// Queue is the group queue of (topic, group).
func Queue(topic, group string) string { return topic + "." + group }

// DLQ is the dead-letter queue of a group queue.
func DLQ(queue string) string { return queue + ".dlq" }
