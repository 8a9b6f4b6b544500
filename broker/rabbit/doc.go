// Package rabbit is redrive's RabbitMQ backend, on
// github.com/rabbitmq/amqp091-go.
//
// Topology (prefix "redrive" by default):
//
//	Publish ──► redrive.topics (topic) ──key=<topic>──► <topic>.<group>  ──► handler
//	                                                      │  x-dead-letter-exchange: redrive.dlx
//	                                                      │  x-message-ttl: queue TTL
//	          redrive.retry (direct) ──key=<topic>.<group>─┘
//	              ▲ dead-lettered on TTL expiry
//	          redrive.delay.<ms> (one queue per tier, x-message-ttl=<ms>)
//	          redrive.dlx (direct) ──key=<topic>.<group>──► <topic>.<group>.dlq
//	          redrive.retry, redrive.dlx ──alternate-exchange──► redrive.unroutable
//
// A failed message is republished, with its x-redrive-* story headers, to
// the largest delay tier that fits its back-off; the remaining delay travels
// in x-remaining-delay, and a consumer that receives a message whose
// remaining delay is positive moves it to the next tier without calling the
// handler. Tiers hold one TTL each, so no message ever waits behind a
// longer one. The failing delivery is acknowledged only after its retry or
// dead-letter copy is confirmed by the broker.
package rabbit
