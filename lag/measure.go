package lag

import "github.com/redrive/redrive/broker/driver"

// What a backend's monitor measures is broker/driver's (each backend
// measures itself: Kafka's group lag with kadm, RabbitMQ's queue depth
// over AMQP); lag names it too, for its Tracker, Sampler and tables.
type (
	// GroupSample is one measurement of every measured consumer group
	// (driver.GroupSample).
	GroupSample = driver.GroupSample
	// PartitionLag is one partition's lag for one group
	// (driver.PartitionLag).
	PartitionLag = driver.PartitionLag
	// QueueDepth is one queue's depth (driver.QueueDepth).
	QueueDepth = driver.QueueDepth
	// QueueRole is what a queue is for (driver.QueueRole).
	QueueRole = driver.QueueRole
)

// Queue roles (driver's).
const (
	RoleGroup      = driver.RoleGroup
	RoleDLQ        = driver.RoleDLQ
	RoleDelay      = driver.RoleDelay
	RoleUnroutable = driver.RoleUnroutable
)

// ErrUnavailable is wrapped by a monitor's errors when the broker cannot
// be asked at all (driver.ErrUnavailable).
var ErrUnavailable = driver.ErrUnavailable
