package kafka

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/redrive/redrive/broker/driver"
)

// ErrInvalidConfig is wrapped by every Config.Validate error.
var ErrInvalidConfig = driver.NewError("kafka: invalid config", driver.ErrInvalidConfig)

// Defaults applied to a zero Config field.
const (
	DefaultPartitions        = 3
	DefaultReplicationFactor = -1 // the broker's default.replication.factor
	DefaultClientID          = "redrive"
	DefaultConnectTimeout    = 10 * time.Second
	DefaultDeliveryTimeout   = 30 * time.Second
	DefaultMaxMessageBytes   = 1_000_000
	DefaultCommitInterval    = time.Second
	DefaultFetchMaxWait      = 500 * time.Millisecond
	DefaultHeartbeatInterval = 3 * time.Second
	DefaultSessionTimeout    = 45 * time.Second
	DefaultRebalanceTimeout  = 60 * time.Second
	DefaultWriteRetryBackoff = 100 * time.Millisecond
	DefaultMaxWriteBackoff   = 5 * time.Second
	// DefaultMaxBuffered and DefaultMaxBufferedBytes bound the records a
	// partition buffers for its worker: 4 fetches' worth at franz-go's
	// default 1 MiB per partition, in records of 1 KiB.
	DefaultMaxBuffered      = 4096
	DefaultMaxBufferedBytes = 4 << 20
	DefaultKeeperGroup      = "redrive-dlq-keeper"
	// MaxShareMembers bounds the default of Config.ShareMembers.
	MaxShareMembers = 16
	// DefaultDLQRetention is how long <topic>.dlq keeps dead letters when the
	// subscription does not say (DLQOptions.Retention = 0).
	DefaultDLQRetention = 30 * 24 * time.Hour
)

// Config configures a Broker. Only Brokers is required.
type Config struct {
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string
	// Partitions is the partition count of the topics redrive creates
	// (<topic>, <topic>.dlq, <topic>.retry.<group>). Default 3.
	Partitions int
	// ReplicationFactor of the topics redrive creates. Default -1: the
	// broker's default.replication.factor.
	ReplicationFactor int16
	// ClientID names the clients to the brokers. Default "redrive".
	ClientID string
	// InstanceID names this worker process in dead-letter envelopes
	// (worker_instance). Default "<hostname>-<pid>".
	InstanceID string
	// Logger receives the backend's logs (and franz-go's, at Warn and
	// above). Default slog.Default().
	Logger *slog.Logger

	// ConnectTimeout bounds how long New waits to reach the cluster.
	// Default 10 s.
	ConnectTimeout time.Duration
	// DeliveryTimeout bounds a Publish call (and each attempt to write a
	// retry or dead-letter copy) when its context has no earlier deadline,
	// so that publishing to a cluster that went away fails instead of
	// hanging. A record given up after it was sent may still have been
	// written: publishing it again is at least once. Default 30 s.
	DeliveryTimeout time.Duration
	// MaxMessageBytes is the largest record Publish accepts (key, value and
	// headers); larger ones fail with broker.ErrTooLarge before anything is
	// sent. Default 1,000,000 (Kafka's default max.message.bytes is
	// 1,048,588).
	MaxMessageBytes int

	// CommitInterval is how often a consumer commits the offsets of done
	// records. Offsets are also committed when partitions are revoked and on
	// shutdown. Default 1 s.
	CommitInterval time.Duration
	// FetchMaxWait bounds how long a fetch waits on the broker for data.
	// Default 500 ms.
	FetchMaxWait time.Duration
	// HeartbeatInterval is how often a group member tells the group
	// coordinator it is alive. Default 3 s.
	HeartbeatInterval time.Duration
	// SessionTimeout is how long the coordinator waits for a member's
	// heartbeat before it evicts the member. Default 45 s.
	SessionTimeout time.Duration
	// RebalanceTimeout bounds how long a rebalance waits for the members
	// to rejoin. Default 60 s.
	RebalanceTimeout time.Duration
	// WriteRetryBackoff is the first wait before a consumer tries again to
	// write a retry or dead-letter copy the broker refused; it doubles up to
	// 5 s. The source offset is not committed meanwhile. Default 100 ms.
	WriteRetryBackoff time.Duration
	// MaxBuffered and MaxBufferedBytes bound what a partition buffers for
	// its worker: once it holds MaxBuffered records or MaxBufferedBytes
	// (keys, values and headers), no more is fetched for it until it
	// drained to half. Meanwhile the poll loop waits for it (up to 50 ms),
	// or, for a worker slower than that, fetching its partition pauses.
	// One poll can overshoot the bound by the records of one fetch
	// (franz-go's FetchMaxPartitionBytes, 1 MiB by default), so a
	// partition holds at most about MaxBufferedBytes plus one fetch; on
	// top of that franz-go buffers at most one fetch response per broker
	// (FetchMaxBytes, 50 MiB by default). Default 4,096 records.
	MaxBuffered int
	// MaxBufferedBytes is MaxBuffered's bound in bytes. Default 4 MiB.
	MaxBufferedBytes int

	// ShareMembers is how many members of its share group each Consume
	// in share mode (broker.Share) runs: each is a client of its own that
	// takes up to Subscription.Prefetch records per poll and polls again
	// only once every record it took is settled (franz-go accepts, on the
	// next poll, what the last one left unsettled), so a member that holds
	// a record in a back-off or a slow handler fetches nothing meanwhile
	// while the others go on. The broker's assignor shares a partition
	// among members only when they outnumber the partitions, and a
	// partition whose members all hold records waits with them. Default:
	// twice the topic's partition count + 1, from 3 to MaxShareMembers,
	// so that every partition has three members in the process and two
	// held ones leave it fetched.
	ShareMembers int
	// ShareStandby is how many members more each share-mode Consume runs
	// that poll only in the place of members waiting out back-offs: a
	// member whose records are all settled but those it holds in
	// back-offs (ShareMaxHold) gives its turn to poll to a standby one,
	// so that held back-offs do not delay the polls; ShareMembers members
	// poll at once. The price: more members in the share group (the
	// broker's assignor shares the partitions among all of them), and a
	// member with a turn whose partitions have nothing for it gives the
	// turn on after 50 ms. Ignored with ShareFetchAhead (a standby member
	// would fetch ahead, and leave locked, records it does not poll).
	// Default 0: none (BENCHMARKS.md: on a busy 2-core machine the
	// standby members' own cost outweighed what they saved).
	ShareStandby int
	// ShareMaxHold is the longest back-off a share-mode Consume waits out
	// holding the record under its acquisition lock (renewed as needed;
	// the handler is free meanwhile); a longer one goes through the
	// group's retry topic, as in non_blocking mode, and the record is
	// acknowledged once the copy is. Default 0: the lock duration the
	// broker reports (group.share.record.lock.duration.ms, 30 s by
	// default), so that a held record comes back within one lock period
	// after a crash. See docs/kafka.md for why there is a boundary.
	ShareMaxHold time.Duration
	// ShareFetchAhead lets each member of a share group fetch ahead while
	// it handles what it took (franz-go's default: one fetch of up to
	// Subscription.Prefetch records per broker, buffered until the next
	// poll), which is faster. The price: what was fetched ahead is locked
	// for the member, waits while it holds a record, and counts a
	// delivery if the member stops or crashes before polling it (a record
	// caught so max_claims times is dead-lettered as a poison pill).
	// Default false: a member fetches only while it polls, so that only
	// what it handles is locked for it.
	ShareFetchAhead bool

	// KeeperGroup is the consumer group ConsumeDeadLetters reads the DLQ
	// topics as. Default "redrive-dlq-keeper".
	KeeperGroup string
	// ForeignDLQs maps the dead-letter topics of other applications that
	// ConsumeDeadLetters may be asked to read to the format of their
	// records' headers (FormatSpring, FormatConnect, FormatAuto). Their
	// records are read as those tools write them, never as redrive
	// envelopes. Default none.
	ForeignDLQs map[string]ForeignFormat

	// TLS, when set, makes every client the Broker creates dial with it.
	// Default nil: plain TCP.
	TLS *tls.Config
	// SASL, when set, authenticates every client the Broker creates.
	// Default nil: none.
	SASL *SASL

	// ClientOptions are extra franz-go options applied last to every
	// client the Broker creates, after TLS and SASL.
	ClientOptions []kgo.Opt
}

// SASL mechanisms of SASL.Mechanism.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASL is how the Broker's clients authenticate.
type SASL struct {
	// Mechanism is SASLPlain, SASLScramSHA256 or SASLScramSHA512.
	Mechanism string
	// Username and Password are the credentials.
	Username, Password string
}

// mechanism is the franz-go mechanism of s.
func (s SASL) mechanism() (sasl.Mechanism, error) {
	switch s.Mechanism {
	case SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil
	case SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism(), nil
	case SASLScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("%w: sasl.mechanism %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", ErrInvalidConfig, s.Mechanism)
}

// clientOptions are the options of TLS, SASL and ClientOptions, in this
// order.
func (c Config) clientOptions() []kgo.Opt {
	var opts []kgo.Opt
	if c.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(c.TLS))
	}
	if c.SASL != nil {
		if m, err := c.SASL.mechanism(); err == nil { // Validate refused the others
			opts = append(opts, kgo.SASL(m))
		}
	}
	return append(opts, c.ClientOptions...)
}

// Validate reports the first problem, naming the field.
func (c Config) Validate() error {
	switch {
	case len(c.Brokers) == 0:
		return fmt.Errorf("%w: brokers: none given", ErrInvalidConfig)
	case c.Partitions < 0:
		return fmt.Errorf("%w: partitions: %d is negative", ErrInvalidConfig, c.Partitions)
	case c.ReplicationFactor < -1:
		return fmt.Errorf("%w: replication_factor: %d is below -1", ErrInvalidConfig, c.ReplicationFactor)
	case c.MaxMessageBytes < 0:
		return fmt.Errorf("%w: max_message_bytes: %d is negative", ErrInvalidConfig, c.MaxMessageBytes)
	case c.MaxBuffered < 0:
		return fmt.Errorf("%w: max_buffered: %d is negative", ErrInvalidConfig, c.MaxBuffered)
	case c.MaxBufferedBytes < 0:
		return fmt.Errorf("%w: max_buffered_bytes: %d is negative", ErrInvalidConfig, c.MaxBufferedBytes)
	case c.ShareMembers < 0 || c.ShareMembers > 1000:
		return fmt.Errorf("%w: share.members: %d is not from 0 (the default) to 1000", ErrInvalidConfig, c.ShareMembers)
	case c.ShareStandby < 0 || c.ShareStandby > 1000:
		return fmt.Errorf("%w: share.standby: %d is not from 0 (none, the default) to 1000", ErrInvalidConfig, c.ShareStandby)
	}
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" {
			return fmt.Errorf("%w: brokers[%d]: empty address", ErrInvalidConfig, i)
		}
	}
	if c.SASL != nil {
		if err := c.SASL.Validate(); err != nil {
			return err
		}
	}
	for topic, f := range c.ForeignDLQs {
		if !f.valid() {
			return fmt.Errorf("%w: foreign_dlqs[%q]: format %q is not spring, connect or auto", ErrInvalidConfig, topic, f)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"connect_timeout", c.ConnectTimeout},
		{"delivery_timeout", c.DeliveryTimeout},
		{"commit_interval", c.CommitInterval},
		{"fetch_max_wait", c.FetchMaxWait},
		{"heartbeat_interval", c.HeartbeatInterval},
		{"session_timeout", c.SessionTimeout},
		{"rebalance_timeout", c.RebalanceTimeout},
		{"write_retry_backoff", c.WriteRetryBackoff},
		{"share.max_hold", c.ShareMaxHold},
	} {
		if d.v < 0 {
			return fmt.Errorf("%w: %s: %s is negative", ErrInvalidConfig, d.name, d.v)
		}
	}
	c = c.withDefaults()
	if c.HeartbeatInterval >= c.SessionTimeout {
		return fmt.Errorf("%w: heartbeat_interval: %s is not below session_timeout %s", ErrInvalidConfig, c.HeartbeatInterval, c.SessionTimeout)
	}
	return nil
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = DefaultReplicationFactor
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.InstanceID == "" {
		c.InstanceID = driver.DefaultInstance()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = DefaultDeliveryTimeout
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = DefaultCommitInterval
	}
	if c.FetchMaxWait == 0 {
		c.FetchMaxWait = DefaultFetchMaxWait
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.RebalanceTimeout == 0 {
		c.RebalanceTimeout = DefaultRebalanceTimeout
	}
	if c.WriteRetryBackoff == 0 {
		c.WriteRetryBackoff = DefaultWriteRetryBackoff
	}
	if c.MaxBuffered == 0 {
		c.MaxBuffered = DefaultMaxBuffered
	}
	if c.MaxBufferedBytes == 0 {
		c.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if c.KeeperGroup == "" {
		c.KeeperGroup = DefaultKeeperGroup
	}
	return c
}

// Validate reports whether s names a mechanism this package supports.
func (s SASL) Validate() error {
	_, err := s.mechanism()
	return err
}
