GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 5s
STATICCHECK ?= $(shell command -v staticcheck 2>/dev/null || echo $(shell $(GO) env GOPATH)/bin/staticcheck)
# PEERS: the peers module of `redrive bench --peers` (watermill, Sarama,
# kafka-go), a Go module of its own so that redrive's never requires them;
# test, vet and staticcheck run there too.
PEERS     ?= internal/tools/bench/peers

.PHONY: all build test test-containers faults cluster-up cluster-down rabbitmq4-up rabbitmq4-down test-rabbitmq4 lint fmt vet staticcheck fuzz bench run tools

all: lint test

build:
	$(GO) build -o bin/redrive ./cmd/redrive

## test: every test, with the race detector, against the real services
test: tools
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	cd $(PEERS) && $(GO) test -race -count=1 -timeout 5m ./...

## test-containers: the e2e suite against a real Kafka in a container
## (testcontainers-go; skips with one line when no Docker engine answers)
test-containers:
	E2E_CONTAINERS=1 $(GO) test -race -count=1 -tags containers -run TestKafkaContainers ./e2e/

## faults: the fault-injection suite (e2e/faults, build tag faults): killed
## workers, closed connections, a stopped RabbitMQ, a Kafka broker removed,
## Redis and PostgreSQL unreachable, poison pills; ends with the table of
## published, handled, dead-lettered, lost and duplicated messages. It stops
## and starts the local RabbitMQ application (rabbitmqctl), and runs its
## TestCluster cases on a three-node cluster it starts and deletes (see
## cluster-up; needs root).
faults:
	$(GO) test -race -count=1 -tags faults -timeout 20m -v ./e2e/faults/

## cluster-up: start the faults suite's three-node RabbitMQ cluster
## (rrc1..rrc3@localhost, AMQP 127.0.0.1:5681-5683) and leave it running;
## needs root. cluster-down stops and deletes it. The node on 5672 is
## never touched; make faults starts a fresh cluster of its own.
cluster-up:
	$(GO) run ./e2e/cluster up

cluster-down:
	$(GO) run ./e2e/cluster down

## rabbitmq4-up: a RabbitMQ 4.0 node (Debian 13's rabbitmq-server in a
## debootstrap directory cached under /var/cache/redrive/rabbitmq4, built
## on first use in a few minutes) on 127.0.0.1:5692, its own node name,
## distribution and epmd ports, deprecated features denied; needs
## root. rabbitmq4-down stops it. The node on 5672 is never touched.
RABBITMQ4 ?= .ci/rabbitmq4

rabbitmq4-up:
	$(RABBITMQ4) start

rabbitmq4-down:
	$(RABBITMQ4) stop

## test-rabbitmq4: the RabbitMQ suites against the RabbitMQ 4.0 node:
## broker/rabbit, the RabbitMQ half of e2e, and the fault cases that need
## no three-node cluster (they stop and start that node's application,
## never the one on 5672); then fails if the node logged the use of a
## deprecated feature.
## (The Kafka cases and subtests are skipped there: they ran with make faults.)
RABBITMQ4_FAULTS_SKIP ?= TestCluster|TestKafka|TestKeeperMemory|TestReplayAllMemory|/kafka

test-rabbitmq4: rabbitmq4-up
	@echo "== RabbitMQ 4.0: broker/rabbit, e2e (RabbitMQ), faults without the cluster"
	env $$($(RABBITMQ4) env) $(GO) test -race -count=1 -timeout 20m ./broker/rabbit/
	env $$($(RABBITMQ4) env) $(GO) test -race -count=1 -timeout 20m -run 'RabbitMQ|SameProgram' ./e2e/
	env $$($(RABBITMQ4) env) $(GO) test -race -count=1 -tags faults -timeout 20m -v -skip '$(RABBITMQ4_FAULTS_SKIP)' ./e2e/faults/
	$(RABBITMQ4) deprecations

vet:
	$(GO) vet $(PKGS)
	cd $(PEERS) && $(GO) vet ./...

staticcheck: tools
	$(STATICCHECK) $(PKGS)
	cd $(PEERS) && $(STATICCHECK) ./...

## fmt: fail when a tracked Go file is not gofmt-clean (fix: gofmt -w FILE)
fmt:
	@files=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$files" ]; then echo "gofmt: not formatted (run gofmt -w on them):"; echo "$$files"; exit 1; fi

lint: fmt vet staticcheck

## tools: staticcheck (Go module proxy), and promtool and prometheus from
## Debian's prometheus package: the alert tests run promtool, and a real
## Prometheus (cmd/redrive TestAlertsLive). As root with apt-get, the
## package is installed; otherwise it says what to install.
tools:
	@test -x "$(STATICCHECK)" || $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	@if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing Debian's prometheus package (promtool, prometheus)"; \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null \
			|| { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; }; \
		fi; \
	fi
	@command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || { \
		echo "make tools: promtool and prometheus are not on PATH; install Debian's prometheus package (apt-get install prometheus, 2.42 or later) or put both binaries of a Prometheus release on PATH" >&2; exit 1; }

## fuzz: run each fuzz target for FUZZTIME, then the foreign-message
## property tests of e2e (issue 40) for FOREIGN_ROUNDS random seeds per
## broker mode (make test runs seed 1 and one random seed; a failing run
## names its seed: FOREIGN_SEEDS=<seed> replays it)
FOREIGN_ROUNDS ?= 20
fuzz:
	@set -e; for pkg in $$(grep -l '^func Fuzz' $$(find . -name '*_test.go') | xargs -n1 dirname | sort -u); do \
		for fn in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== fuzz $$pkg $$fn"; \
			$(GO) test -run '^$$' -fuzz "^$${fn}\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done
	@echo "== property TestForeignRabbitMQ, TestForeignKafka: $(FOREIGN_ROUNDS) random seeds per mode"
	FOREIGN_ROUNDS=$(FOREIGN_ROUNDS) $(GO) test -race -count=1 -timeout 60m -run '^TestForeign(RabbitMQ|Kafka)$$' ./e2e/

## bench: the micro-benchmarks, then `redrive bench` (redrive vs the raw
## clients on RabbitMQ at $RABBITMQ_URL and in-process kfake) with modest
## sizes; BENCH_FLAGS overrides them (see BENCHMARKS.md for a full run;
## add --peers for watermill and kafka-go in the same run)
BENCH_FLAGS ?= --messages 20000 --delay-messages 2000 --replay-messages 2000

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	$(GO) run ./cmd/redrive bench $(BENCH_FLAGS)

## run: `redrive dev`: embedded Kafka and Redis, sample workers, the
## keeper, the console (http://127.0.0.1:8080/), the exporter; Ctrl-C stops.
## DEV_FLAGS passes flags (e.g. --broker rabbitmq, --token T).
DEV_FLAGS ?=

run: build
	./bin/redrive dev $(DEV_FLAGS)
