package driver

import (
	"context"
	"errors"
	"time"
)

// Monitor measures how far a backend's consumers are behind, without
// consuming anything (Descriptor.Monitor opens it for the configured
// workers). It is a GroupLagMonitor (offsets: Kafka), a DepthMonitor
// (queues: RabbitMQ) or both; package lag samples it, grades it and
// exports it to Prometheus.
type Monitor interface {
	// Close releases the monitor's connections.
	Close() error
}

// GroupLagMonitor measures consumer-group lag: how many records each
// group has not consumed yet on each partition, and how old the oldest
// of them is.
type GroupLagMonitor interface {
	Monitor
	// MeasureGroups takes one sample of the workers' groups (and of any
	// group of the backend's own, such as its DLQ keeper's). It fails
	// (wrapping ErrUnavailable) only when the cluster cannot be asked at
	// all; a group or a partition that cannot be measured is reported in
	// the sample.
	MeasureGroups(ctx context.Context) (GroupSample, error)
}

// DepthMonitor measures queue depth: the messages waiting in each queue
// of the workers' topology and its consumers.
type DepthMonitor interface {
	Monitor
	// MeasureDepth returns the depth of each queue: every group queue
	// and DLQ of the workers, and the backend's own queues (delays,
	// parking), each with its Role. A queue that does not exist reads
	// Exists false. It fails (wrapping ErrUnavailable) when the broker
	// cannot be reached or ctx ends.
	MeasureDepth(ctx context.Context) ([]QueueDepth, error)
}

// ErrUnavailable is wrapped by a Monitor's errors when the broker cannot
// be asked at all.
var ErrUnavailable = errors.New("lag: broker unavailable")

// GroupSample is one measurement of every measured consumer group.
type GroupSample struct {
	// At is when the sample was taken.
	At time.Time
	// Partitions holds one entry per (group, topic, partition), sorted.
	Partitions []PartitionLag
	// GroupErrors holds the groups that could not be described or whose
	// offsets could not be fetched.
	GroupErrors map[string]error
}

// PartitionLag is one partition's lag for one group.
type PartitionLag struct {
	Group     string
	Topic     string
	Partition int32
	// Committed is the group's committed offset (the next record it will
	// consume); -1 when it never committed.
	Committed int64
	// End is the partition's end offset (high watermark).
	End int64
	// Lag is End − Committed in records (End − log start without a
	// commit), 0 at least; -1 when unknown (see Err).
	Lag int64
	// TimeLag is the age of the oldest unconsumed record at the sample's
	// time; meaningful when TimeLagKnown. 0 when Lag is 0.
	TimeLag      time.Duration
	TimeLagKnown bool
	// Member is the client id of the group member assigned the partition
	// (of a share group: the first of those assigned); empty when none is
	// (the group is empty or rebalancing).
	Member string
	// Share is set for a share group's partition (Kafka, KIP-932):
	// Committed is then the share-partition start offset, the first
	// record not yet finished, and Lag the records from there to End not
	// yet acknowledged, those a member holds included.
	Share bool
	// Err is why the lag is unknown.
	Err error
}

// Assigned reports whether a group member is assigned the partition.
func (p PartitionLag) Assigned() bool { return p.Member != "" }

// QueueDepth is one queue's depth.
type QueueDepth struct {
	Queue string
	// Exists is false when the queue is not declared; the counts are then 0.
	Exists bool
	// Messages is the number of messages ready for delivery (RabbitMQ:
	// messages delivered but not acknowledged are not counted; see
	// package lag).
	Messages int
	// Consumers is the number of consumers.
	Consumers int
	// Role says what the queue is for, hence whether it should have a
	// consumer: group queues and DLQs should, delay and unroutable queues
	// never have one. Empty when unknown.
	Role QueueRole
	// Topic and Group are the worker whose group queue (RoleGroup) or
	// DLQ (RoleDLQ) this is; empty for the other roles.
	Topic, Group string
}

// QueueRole is what a queue is for.
type QueueRole string

// Queue roles.
const (
	RoleGroup      QueueRole = "group"      // <topic>.<group>: its worker consumes it
	RoleDLQ        QueueRole = "dlq"        // <topic>.<group>.dlq: the keeper (redrive serve) consumes it
	RoleDelay      QueueRole = "delay"      // delay tiers or route levels: messages wait out a TTL, no consumer by design
	RoleUnroutable QueueRole = "unroutable" // parked messages wait for an operator, no consumer by design
)

// ExpectsConsumer reports whether a queue of role r should have a
// consumer (an unknown role is assumed to).
func (r QueueRole) ExpectsConsumer() bool { return r != RoleDelay && r != RoleUnroutable }
