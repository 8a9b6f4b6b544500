GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 5s
STATICCHECK ?= $(shell command -v staticcheck 2>/dev/null || echo $(shell $(GO) env GOPATH)/bin/staticcheck)

.PHONY: all build test test-containers faults lint fmt vet staticcheck fuzz bench run tools promtool

all: lint test

build:
	$(GO) build -o bin/redrive ./cmd/redrive

## test: every test, with the race detector, against the real services
test: tools
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## test-containers: the e2e suite against a real Kafka in a container
## (testcontainers-go; skips with one line when no Docker engine answers)
test-containers:
	E2E_CONTAINERS=1 $(GO) test -race -count=1 -tags containers -run TestKafkaContainers ./e2e/

## faults: the fault-injection suite (e2e/faults, build tag faults): killed
## workers, closed connections, a stopped RabbitMQ, a Kafka broker removed,
## Redis and PostgreSQL unreachable, poison pills; ends with the table of
## published, handled, dead-lettered, lost and duplicated messages. It stops
## and starts the local RabbitMQ application (rabbitmqctl).
faults:
	$(GO) test -race -count=1 -tags faults -timeout 15m -v ./e2e/faults/

vet:
	$(GO) vet $(PKGS)

staticcheck: tools
	$(STATICCHECK) $(PKGS)

## fmt: fail when a tracked Go file is not gofmt-clean (fix: gofmt -w FILE)
fmt:
	@files=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$files" ]; then echo "gofmt: not formatted (run gofmt -w on them):"; echo "$$files"; exit 1; fi

lint: fmt vet staticcheck

PROMTOOL  ?= $(shell command -v promtool 2>/dev/null || echo $(shell $(GO) env GOPATH)/bin/promtool)

## tools: staticcheck and promtool, from the Go module proxy
tools:
	@test -x "$(STATICCHECK)" || $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	@test -x "$(PROMTOOL)" || $(MAKE) --no-print-directory promtool

# promtool: Prometheus v0.315.0 built in a throwaway module. `go install
# ...@version` refuses every release here (replace/exclude directives, or
# dependencies the proxy will not serve), so this copies upstream's own
# replace line. A cold build takes a few minutes.
promtool:
	@echo "building promtool (Prometheus v0.315.0) from the Go module proxy"
	@d=$$(mktemp -d) && cd "$$d" && $(GO) mod init promtool-build >/dev/null 2>&1 \
	 && $(GO) mod edit -replace=cloud.google.com/go=cloud.google.com/go@v0.123.0 \
	 && $(GO) get github.com/prometheus/prometheus/cmd/promtool@v0.315.0 >/dev/null 2>&1 \
	 && $(GO) build -o "$$($(GO) env GOPATH)/bin/promtool" github.com/prometheus/prometheus/cmd/promtool; \
	 rc=$$?; rm -rf "$$d"; exit $$rc

## fuzz: run each fuzz target for FUZZTIME
fuzz:
	@set -e; for pkg in $$(grep -l '^func Fuzz' $$(find . -name '*_test.go') | xargs -n1 dirname | sort -u); do \
		for fn in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== fuzz $$pkg $$fn"; \
			$(GO) test -run '^$$' -fuzz "^$${fn}\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

## bench: the micro-benchmarks, then `redrive bench` (redrive vs the raw
## clients on RabbitMQ at $RABBITMQ_URL and in-process kfake) with modest
## sizes; BENCH_FLAGS overrides them (see BENCHMARKS.md for a full run)
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
