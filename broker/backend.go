package broker

// Backend names a broker backend: the configuration's broker key, the
// broker a dead letter comes from, the broker a health report and the
// console speak of.
type Backend string

// Backends.
const (
	RabbitMQ Backend = "rabbitmq"
	Kafka    Backend = "kafka"
)

// Valid reports whether b is RabbitMQ or Kafka.
func (b Backend) Valid() bool { return b == RabbitMQ || b == Kafka }
