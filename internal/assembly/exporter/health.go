package exporter

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/lag"
)

// Status is the overall health, or a component's.
type Status string

// Statuses. UNKNOWN is only a component's: a source not sampled yet.
const (
	StatusUp       Status = "UP"
	StatusDegraded Status = "DEGRADED"
	StatusDown     Status = "DOWN"
	StatusUnknown  Status = "UNKNOWN"
)

// Group is one configured worker: its consumer group on a topic. On a
// backend measured by queue depth, its group queue is the depth of role
// lag.RoleGroup that names it.
type Group struct {
	Group string
	Topic string
}

// Snapshot is what the samplers last saw, the input of Evaluate.
type Snapshot struct {
	// At is when the snapshot was taken.
	At time.Time
	// Broker is the backend's name ("rabbitmq", "kafka").
	Broker string
	// GroupLag and Depths are the last lag samples of the configured
	// broker, as its monitor measures it (consumer-group lag: Kafka;
	// queue depth: RabbitMQ); both nil when no lag sampler is configured.
	GroupLag *GroupLagSample
	Depths   *DepthSample
	// Workers is the last heartbeat sample; nil when not configured.
	Workers *WorkersSample
	// DLQ is the last DLQ sample; nil when not configured.
	DLQ *DLQSample
	// Groups are the configured workers (with queue depths, their group
	// queues are graded as their group's lag).
	Groups []Group
	// Thresholds grade group queue depth by topic (group lag reports come
	// graded by their lag.Tracker).
	Thresholds lag.Thresholds
}

// GroupLagSample is a lag.Sampler's last group lag report.
type GroupLagSample struct {
	Report lag.GroupReport
	Err    error
	// Sampled is false before the first sample.
	Sampled bool
}

// DepthSample is a lag.Sampler's last queue depths. Messages in a queue
// of role lag.RoleUnroutable degrade the health.
type DepthSample struct {
	Depths []lag.QueueDepth
	At     time.Time
	Err    error
}

// WorkersSample is a heartbeat.Sampler's last table.
type WorkersSample struct {
	Rows []heartbeat.WorkerStatus
	At   time.Time
	Err  error
	// Dropped is what the sample left out (heartbeat.max_instances).
	Dropped heartbeat.Dropped
}

// DLQSample is a DLQSampler's last counts.
type DLQSample struct {
	Pending map[string]int64
	At      time.Time
	Err     error
}

// Health is the /healthz report.
type Health struct {
	Status    Status    `json:"status"`
	CheckedAt time.Time `json:"checked_at"`
	// Reasons says, one line each, why the status is not UP.
	Reasons    []string   `json:"reasons,omitempty"`
	Components Components `json:"components"`
}

// Components are the parts of the report; a component that is not
// configured is left out.
type Components struct {
	Broker  *BrokerHealth  `json:"broker,omitempty"`
	Lag     *LagHealth     `json:"lag,omitempty"`
	Workers []WorkerHealth `json:"workers,omitzero"`
	// WorkersLeftOut says how many worker instances the table leaves
	// out, when it leaves any out.
	WorkersLeftOut *WorkersLeftOut  `json:"workers_left_out,omitempty"`
	DLQ            map[string]int64 `json:"dlq,omitzero"`
}

// WorkersLeftOut is what the workers table leaves out: instances beyond
// the limit (heartbeat.max_instances) and names no worker can have.
type WorkersLeftOut struct {
	OverLimit int `json:"over_limit"`
	Limit     int `json:"limit"`
	BadNames  int `json:"bad_names"`
}

// BrokerHealth says whether the broker answered the last lag sample.
type BrokerHealth struct {
	Status    Status     `json:"status"`
	Broker    string     `json:"broker"`
	SampledAt *time.Time `json:"sampled_at,omitempty"`
	Error     string     `json:"error,omitempty"`
}

// LagHealth is the lag of every consumer group (Kafka) or group queue
// (RabbitMQ), and, measured by queue depth, the depth of every measured
// queue.
type LagHealth struct {
	Status    Status        `json:"status"`
	SampledAt *time.Time    `json:"sampled_at,omitempty"`
	Error     string        `json:"error,omitempty"`
	Groups    []GroupHealth `json:"groups"`
	Queues    []QueueHealth `json:"queues,omitempty"`
}

// GroupHealth is one group's lag on one topic.
type GroupHealth struct {
	Group string `json:"group"`
	Topic string `json:"topic"`
	// Queue is the RabbitMQ group queue.
	Queue string `json:"queue,omitempty"`
	// Lag is in records (Kafka) or messages ready (RabbitMQ).
	Lag int64 `json:"lag"`
	// LagSeconds is the age of the oldest unconsumed record (Kafka, when
	// known).
	LagSeconds *float64 `json:"lag_seconds,omitempty"`
	// Consumers is the number of group members (Kafka) or queue consumers
	// (RabbitMQ).
	Consumers int `json:"consumers"`
	// Level is OK, WARNING or CRITICAL against the topic's thresholds.
	Level string `json:"level"`
	// Status is OK, WARN, STALL, STOP or REWIND (see package lag), or
	// MISSING for a RabbitMQ group queue that does not exist.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Health is UP or DEGRADED.
	Health Status `json:"health"`
}

// QueueHealth is one RabbitMQ queue's depth.
type QueueHealth struct {
	Queue     string `json:"queue"`
	Exists    bool   `json:"exists"`
	Ready     int    `json:"ready"`
	Consumers int    `json:"consumers"`
}

// WorkerHealth is one worker instance's heartbeat status.
type WorkerHealth struct {
	Type          string     `json:"type"`
	Instance      string     `json:"instance"`
	Status        string     `json:"status"`
	Severity      string     `json:"severity"`
	Conditions    []string   `json:"conditions"`
	LastSeen      *time.Time `json:"last_seen,omitempty"`
	LastMessageAt *time.Time `json:"last_message_at,omitempty"`
	Lag           int64      `json:"lag"`
	Reason        string     `json:"reason,omitempty"`
}

// HTTPStatus is the /healthz response code of h: 503 when DOWN, else 200.
func (h Health) HTTPStatus() int {
	if h.Status == StatusDown {
		return 503
	}
	return 200
}

// Evaluate grades a snapshot (see the package documentation for the
// rules). It is pure: the same snapshot gives the same report.
func Evaluate(s Snapshot) Health {
	e := &evaluation{h: Health{Status: StatusUp, CheckedAt: s.At.UTC()}}
	switch {
	case s.GroupLag != nil:
		e.groupLag(s)
	case s.Depths != nil:
		e.depths(s)
	}
	if s.Workers != nil {
		e.workers(*s.Workers)
	}
	if s.DLQ != nil {
		e.dlq(*s.DLQ)
	}
	return e.h
}

// evaluation accumulates a report.
type evaluation struct{ h Health }

// degrade records a reason and lowers the status to DEGRADED (never
// raising DOWN).
func (e *evaluation) degrade(format string, args ...any) {
	e.h.Reasons = append(e.h.Reasons, fmt.Sprintf(format, args...))
	if e.h.Status == StatusUp {
		e.h.Status = StatusDegraded
	}
}

// down records a reason and sets the status to DOWN.
func (e *evaluation) down(format string, args ...any) {
	e.h.Reasons = append(e.h.Reasons, fmt.Sprintf(format, args...))
	e.h.Status = StatusDown
}

// broker sets the broker and lag components from a sample's outcome and
// reports whether the sample can be graded.
func (e *evaluation) broker(kind string, sampled bool, at time.Time, err error) bool {
	b := &BrokerHealth{Status: StatusUp, Broker: kind, SampledAt: timePtr(at)}
	l := &LagHealth{Status: StatusUp, SampledAt: b.SampledAt, Groups: []GroupHealth{}}
	e.h.Components.Broker, e.h.Components.Lag = b, l
	switch {
	case !sampled:
		b.Status, l.Status = StatusUnknown, StatusUnknown
		e.degrade("broker %s: not sampled yet", kind)
		return false
	case err != nil:
		b.Status, b.Error = StatusDown, err.Error()
		l.Status, l.Error = StatusUnknown, err.Error()
		e.down("broker %s: unreachable: %v", kind, err)
		return false
	}
	return true
}

func (e *evaluation) groupLag(s Snapshot) {
	k := s.GroupLag
	if !e.broker(s.Broker, k.Sampled, k.Report.At, k.Err) {
		return
	}
	l := e.h.Components.Lag
	for _, t := range k.Report.Topics {
		g := GroupHealth{Group: t.Group, Topic: t.Topic, Lag: t.Lag, Consumers: t.Members,
			Level: string(t.Level), Status: string(t.Status), Reason: t.Reason, Health: StatusUp}
		if t.TimeLagKnown {
			secs := t.TimeLag.Seconds()
			g.LagSeconds = &secs
		}
		switch {
		case t.Errors == t.Partitions && t.Partitions > 0:
			g.Health = StatusDegraded
			e.degrade("lag %s/%s: no partition could be measured", t.Group, t.Topic)
		case t.Level != lag.LevelOK || t.Status == lag.StatusStop || t.Status == lag.StatusStall || t.Status == lag.StatusWarn:
			g.Health = StatusDegraded
			e.degrade("lag %s/%s: %d behind, level %s, status %s%s", t.Group, t.Topic, t.Lag, t.Level, t.Status, suffix(t.Reason))
		}
		l.Groups = append(l.Groups, g)
	}
	for _, grp := range slices.Sorted(maps.Keys(k.Report.GroupErrors)) {
		l.Groups = append(l.Groups, GroupHealth{Group: grp, Status: string(StatusUnknown), Level: string(StatusUnknown),
			Reason: k.Report.GroupErrors[grp].Error(), Health: StatusDegraded})
		e.degrade("lag %s: not measured: %v", grp, k.Report.GroupErrors[grp])
	}
	e.lagStatus()
}

func (e *evaluation) depths(s Snapshot) {
	r := s.Depths
	if !e.broker(s.Broker, !r.At.IsZero() || r.Err != nil, r.At, r.Err) {
		return
	}
	l := e.h.Components.Lag
	type worker struct{ group, topic string }
	groupQueues := make(map[worker]lag.QueueDepth, len(s.Groups))
	parked := 0
	var parkedIn []string
	for _, d := range r.Depths {
		l.Queues = append(l.Queues, QueueHealth{Queue: d.Queue, Exists: d.Exists, Ready: d.Messages, Consumers: d.Consumers})
		switch d.Role {
		case lag.RoleGroup:
			groupQueues[worker{d.Group, d.Topic}] = d
		case lag.RoleUnroutable:
			if d.Messages > 0 {
				parked += d.Messages
				parkedIn = append(parkedIn, d.Queue)
			}
		}
	}
	for _, grp := range s.Groups {
		d, measured := groupQueues[worker{grp.Group, grp.Topic}]
		g := GroupHealth{Group: grp.Group, Topic: grp.Topic, Queue: d.Queue, Lag: int64(d.Messages), Consumers: d.Consumers,
			Level: string(s.Thresholds.Level(grp.Topic, int64(d.Messages))), Status: string(lag.StatusOK), Health: StatusUp}
		switch {
		case !measured:
			g.Level, g.Status, g.Reason, g.Health = string(StatusUnknown), string(StatusUnknown), "not measured", StatusDegraded
			e.degrade("lag %s/%s: its group queue not measured", grp.Group, grp.Topic)
		case !d.Exists:
			g.Status, g.Reason, g.Health = "MISSING", "the group queue does not exist (run redrive topology apply)", StatusDegraded
			e.degrade("lag %s/%s: queue %s does not exist", grp.Group, grp.Topic, d.Queue)
		default:
			if d.Messages > 0 && d.Consumers == 0 {
				g.Status, g.Reason = string(lag.StatusStop), "messages ready and no consumer"
			}
			if g.Level != string(lag.LevelOK) || g.Status != string(lag.StatusOK) {
				g.Health = StatusDegraded
				e.degrade("lag %s/%s: %d ready in %s, %d consumers, level %s, status %s",
					grp.Group, grp.Topic, d.Messages, d.Queue, d.Consumers, g.Level, g.Status)
			}
		}
		l.Groups = append(l.Groups, g)
	}
	if parked > 0 {
		e.degrade("%s: %d messages parked in %s (a retry or dead letter lost its queue)", s.Broker, parked, strings.Join(parkedIn, ", "))
	}
	e.lagStatus()
}

// lagStatus sets the lag component DEGRADED when a group is.
func (e *evaluation) lagStatus() {
	l := e.h.Components.Lag
	for _, g := range l.Groups {
		if g.Health != StatusUp {
			l.Status = StatusDegraded
			return
		}
	}
}

func (e *evaluation) workers(w WorkersSample) {
	out := make([]WorkerHealth, 0, len(w.Rows))
	if w.At.IsZero() && w.Err == nil {
		e.degrade("workers: heartbeats not sampled yet")
	}
	unknown := false
	for _, r := range w.Rows {
		conds := make([]string, len(r.Conditions))
		for i, c := range r.Conditions {
			conds[i] = string(c)
		}
		out = append(out, WorkerHealth{
			Type: r.Type, Instance: r.Instance, Status: string(r.Status), Severity: string(r.Severity), Conditions: conds,
			LastSeen: timePtr(r.LastSeen), LastMessageAt: timePtr(r.LastMessageAt), Lag: r.Lag, Reason: r.Reason,
		})
		switch r.Severity {
		case heartbeat.SeverityOK:
		case heartbeat.SeverityUnknown:
			unknown = true
		default:
			e.degrade("worker %s/%s: %s: %s", r.Type, r.Instance, r.Severity, r.Reason)
		}
	}
	if unknown || (w.Err != nil && len(w.Rows) == 0) {
		e.degrade("workers: heartbeats cannot be read: %v", w.Err)
	}
	slices.SortFunc(out, func(a, b WorkerHealth) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Instance, b.Instance))
	})
	e.h.Components.Workers = out
	if d := w.Dropped; d.Total() > 0 {
		e.h.Components.WorkersLeftOut = &WorkersLeftOut{OverLimit: d.OverLimit, Limit: d.Limit, BadNames: d.BadNames}
		e.degrade("workers: %d instance(s) left out: %d beyond heartbeat.max_instances (%d), %d with a name no worker can have",
			d.Total(), d.OverLimit, d.Limit, d.BadNames)
	}
}

func (e *evaluation) dlq(d DLQSample) {
	e.h.Components.DLQ = map[string]int64{}
	switch {
	case d.Err != nil:
		e.degrade("dlq: pending counts cannot be read: %v", d.Err)
		return
	case d.At.IsZero():
		e.degrade("dlq: not sampled yet")
		return
	}
	maps.Copy(e.h.Components.DLQ, d.Pending)
	for _, name := range slices.Sorted(maps.Keys(d.Pending)) {
		if n := d.Pending[name]; n > 0 {
			e.degrade("dlq %s: %d pending", name, n)
		}
	}
}

// Ready reports whether s is fit to serve traffic: every configured source
// was sampled at least once and the broker answered its last sample. When
// it is not, reason says why.
func Ready(s Snapshot) (ok bool, reason string) {
	switch {
	case s.GroupLag != nil && !s.GroupLag.Sampled:
		return false, s.Broker + " lag not sampled yet"
	case s.GroupLag != nil && s.GroupLag.Err != nil:
		return false, s.Broker + " unreachable: " + s.GroupLag.Err.Error()
	case s.Depths != nil && s.Depths.At.IsZero() && s.Depths.Err == nil:
		return false, s.Broker + " depth not sampled yet"
	case s.Depths != nil && s.Depths.Err != nil:
		return false, s.Broker + " unreachable: " + s.Depths.Err.Error()
	case s.Workers != nil && s.Workers.At.IsZero():
		return false, "heartbeats not sampled yet"
	case s.DLQ != nil && s.DLQ.At.IsZero() && s.DLQ.Err == nil:
		return false, "dlq pending counts not sampled yet"
	}
	return true, ""
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}
