package devstack

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"text/template"

	"github.com/alicebob/miniredis/v2"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

// Defaults of Config.
const (
	DefaultRabbitMQURL   = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultPrefix        = "redrive-dev"
	DefaultAdminListen   = "127.0.0.1:8080"
	DefaultMetricsListen = "127.0.0.1:9477"
	// DefaultKafkaPort is the port of the first embedded Kafka broker
	// where a program outside the process must find it (`redrive dev
	// --no-samples`): Kafka's usual port.
	DefaultKafkaPort = 9092
	// KafkaBrokers is the number of embedded Kafka brokers (the Kafka
	// backend's dev server).
	KafkaBrokers = kafka.DevBrokers
)

var (
	//go:embed config.yaml.tmpl
	configTemplate string
	//go:embed program.yaml.tmpl
	programTemplate string

	tmpl        = template.Must(template.New("config").Parse(configTemplate))
	programTmpl = template.Must(template.New("program").Parse(programTemplate))
)

// Config configures Start.
type Config struct {
	// Broker is "kafka" (default: the Kafka backend's dev server, an
	// embedded three-broker cluster), "rabbitmq" (the server at
	// RabbitMQURL), or another linked backend with a dev server (one of
	// Brokers: "memory", the in-memory broker, runs in the process).
	Broker string
	// RabbitMQURL is used with "rabbitmq"; default DefaultRabbitMQURL.
	RabbitMQURL string
	// Prefix starts every name the stack declares on RabbitMQ: its
	// exchanges and delay queues (rabbitmq.prefix) and its sample topics
	// ("<prefix>.escrow.commands"), hence their group queues and DLQs, so
	// that nothing it declares can clash with a user's or a test's
	// topology. Default DefaultPrefix. On Kafka the cluster is the
	// stack's own and topics are not prefixed.
	Prefix string
	// KafkaPort is the port of the first embedded Kafka broker, the
	// others following it; 0 = random free ports.
	KafkaPort int
	// AdminListen and MetricsListen are the addresses of the admin API
	// (with the console) and of the exporter; defaults DefaultAdminListen
	// and DefaultMetricsListen.
	AdminListen, MetricsListen string
	// Token is the operator's console and API token. Required.
	Token string
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Validate reports the first problem of c, naming the field.
func (c Config) Validate() error {
	switch {
	case c.Broker != "" && !slices.Contains(Brokers(), c.Broker):
		return fmt.Errorf("devstack: broker %q is not %s", c.Broker, strings.Join(Brokers(), " or "))
	case c.Token == "":
		return errors.New("devstack: token: required")
	case c.KafkaPort < 0 || c.KafkaPort > 65535-KafkaBrokers+1:
		return fmt.Errorf("devstack: kafka port %d is not in [0, %d]", c.KafkaPort, 65535-KafkaBrokers+1)
	case c.Prefix != "" && !ValidPrefix(c.Prefix):
		return fmt.Errorf("devstack: prefix %q is not 1 to 100 characters of [a-zA-Z0-9_-]", c.Prefix)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Broker == "" {
		c.Broker = kafka.Name
	}
	if c.RabbitMQURL == "" {
		c.RabbitMQURL = DefaultRabbitMQURL
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.AdminListen == "" {
		c.AdminListen = DefaultAdminListen
	}
	if c.MetricsListen == "" {
		c.MetricsListen = DefaultMetricsListen
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Stack is a running dev environment: the embedded servers and the
// configuration that points at them.
type Stack struct {
	// Config is the configuration redrive runs with: the embedded Kafka
	// (or RabbitMQ), the embedded Redis, the sample workers, short
	// heartbeat intervals and demo-length back-offs.
	Config *config.Config
	// YAML is Config as text, for showing.
	YAML []byte

	cfg   Config
	kafka driver.DevServer // nil on RabbitMQ
	redis *miniredis.Miniredis
}

// Start starts the embedded servers on 127.0.0.1 (random ports) and
// builds the configuration. Close stops them.
func Start(cfg Config) (*Stack, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Stack{cfg: cfg, redis: miniredis.NewMiniRedis()}
	// miniredis keeps TTLs still unless told to follow the clock; heartbeats
	// must expire for a stopped worker to read missing.
	s.redis.ClockTTL(true)
	if err := s.redis.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("devstack: start embedded redis: %w", err)
	}
	if d, ok := driver.Lookup(cfg.Broker); ok && d.DevServer != nil {
		srv, err := d.DevServer(driver.DevServerConfig{Port: cfg.KafkaPort})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("devstack: %w", err)
		}
		s.kafka = srv
	}
	var err error
	if s.YAML, err = s.render(tmpl); err != nil {
		s.Close()
		return nil, err
	}
	if s.Config, err = config.Parse(s.YAML); err != nil {
		s.Close()
		return nil, fmt.Errorf("devstack: configuration: %w", err)
	}
	return s, nil
}

// render executes t with the stack's addresses and settings.
func (s *Stack) render(t *template.Template) ([]byte, error) {
	var buf bytes.Buffer
	err := t.Execute(&buf, map[string]any{
		"Broker": s.cfg.Broker, "RabbitMQURL": s.cfg.RabbitMQURL, "KafkaBrokers": s.KafkaBrokers(),
		"RedisAddr": s.redis.Addr(), "AdminListen": s.cfg.AdminListen, "MetricsListen": s.cfg.MetricsListen,
		"Token": s.cfg.Token, "Prefix": s.cfg.Prefix, "TopicPrefix": s.topicPrefix(),
	})
	if err != nil {
		return nil, fmt.Errorf("devstack: render %s: %w", t.Name(), err)
	}
	return buf.Bytes(), nil
}

// topicPrefix starts the sample topics: "<prefix>." on RabbitMQ, none on
// the stack's own Kafka.
func (s *Stack) topicPrefix() string {
	if s.cfg.Broker == rabbit.Name {
		return s.cfg.Prefix + "."
	}
	return ""
}

// Prefix returns the prefix of every name the stack declares on RabbitMQ.
func (s *Stack) Prefix() string { return s.cfg.Prefix }

// ProgramYAML is a configuration for the user's own program on this
// stack: its broker and Redis, the admin token read from
// $REDRIVE_ADMIN_TOKEN, and a worker to rename. It is what `redrive dev
// --no-samples` prints.
func (s *Stack) ProgramYAML() []byte {
	b, err := s.render(programTmpl)
	if err != nil {
		panic(err) // the template is embedded and tested
	}
	return b
}

// ValidPrefix reports whether p can start the stack's names: it is used
// as a RabbitMQ prefix and as the first label of topic names.
func ValidPrefix(p string) bool {
	if len(p) > 100 {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return p != ""
}

// KafkaBrokers returns the embedded cluster's addresses (none on RabbitMQ).
func (s *Stack) KafkaBrokers() []string {
	if s.kafka == nil {
		return nil
	}
	return s.kafka.Addrs()
}

// RedisAddr returns the embedded Redis server's address.
func (s *Stack) RedisAddr() string { return s.redis.Addr() }

// Close stops the embedded servers. Their data is gone.
func (s *Stack) Close() {
	if s.kafka != nil {
		s.kafka.Close()
	}
	s.redis.Close()
}

// DefaultBroker is the broker `redrive dev` runs on by default: the one
// whose server runs inside the process.
const DefaultBroker = kafka.Name

// Brokers lists the brokers the stack runs on, sorted: RabbitMQ (a server
// of the user's) and every linked backend with a dev server (Kafka's
// embedded cluster, the in-memory broker), which need no section of the
// configuration templates beyond Kafka's.
func Brokers() []string {
	out := []string{rabbit.Name}
	for _, n := range driver.Names() {
		if n != rabbit.Name && Embedded(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// BrokerName names the stack's broker for people ("Kafka", "RabbitMQ").
func (s *Stack) BrokerName() string { return driver.WordsOf(s.cfg.Broker).Display }

// Reachable reports whether programs outside the process reach the
// stack's broker: a server of the user's, or a dev server with
// addresses (not one that lives in the process, as the in-memory
// broker).
func (s *Stack) Reachable() bool { return !Embedded(s.cfg.Broker) || len(s.KafkaBrokers()) > 0 }

// Embedded reports whether the stack runs broker's server inside the
// process (its backend has a dev server); otherwise it uses a server of
// the user's, on which every name it declares is prefixed and torn down.
func Embedded(broker string) bool {
	d, ok := driver.Lookup(broker)
	return ok && d.DevServer != nil
}

// Where names the stack's broker for people: the embedded server and its
// addresses, or the user's server (secrets masked).
func (s *Stack) Where() string {
	name := driver.WordsOf(s.cfg.Broker).Display
	if addrs := s.KafkaBrokers(); len(addrs) > 0 {
		return "embedded " + name + " (kfake) at " + strings.Join(addrs, ",")
	}
	if Embedded(s.cfg.Broker) {
		return "embedded " + name + ", in this process"
	}
	return name + " at " + assembly.Address(s.Config)
}
