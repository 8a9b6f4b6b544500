//go:build faults

// Package faults is redrive's fault-injection suite (make faults, build tag
// faults). Each case runs real traffic through a broker, injects a fault
// (a SIGKILLed worker process, a SIGKILLed redrive relay or HTTP endpoint,
// connections closed by the server, a broker
// stopped, a Kafka broker removed, Redis or PostgreSQL unreachable, a
// poison pill, a downstream outage behind a kill switch, an operator's
// pause), heals it, and then accounts for every message it published:
// each must have been handled or dead-lettered (lost = 0); duplicates are
// counted and reported. The suite prints a table of the counts at the end.
//
// It needs the services of make test: RabbitMQ (RABBITMQ_URL, with
// rabbitmqctl on PATH for that node, or the command in RABBITMQCTL, as make
// test-rabbitmq4 sets for its RabbitMQ 4 node), Redis (REDIS_ADDR),
// PostgreSQL (DATABASE_URL); Kafka
// is an in-process kfake cluster. It stops and starts the RabbitMQ
// application and closes its connections, so do not run it against a
// shared broker. Redis and PostgreSQL are only ever made unreachable
// through a TCP proxy, never stopped. The TestCluster cases run on a
// three-node RabbitMQ cluster of their own (internal/testsupport/rabbitcluster, ports
// 5681-5683, root needed), started by the first of them and deleted when
// the suite ends or is interrupted. The TestEffects cases (exactly-once
// effects, counted in a ledger) restart PostgreSQL for real only on a
// cluster of their own (pg_createcluster on a free port, root needed,
// dropped after); TestEffectsBrokerRestarted stops and starts the local
// RabbitMQ like TestRabbitRestarted, or, with FAULTS_RABBIT_OUTAGE=proxy,
// cuts a proxy in front of it instead.
package faults
