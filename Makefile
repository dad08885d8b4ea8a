# zkgroup: make test runs every check CI runs; make demo runs the daemon
# against a local cluster. See README.md.

SHELL    := /bin/bash
GO        ?= go
GOFLAGS   ?=
# Packages of integration tests each start one shared 3-broker cluster; two
# packages at a time keep a 2-core machine busy without starving the JVMs.
TEST_P    ?= 2
TEST_ARGS ?=
# The modules of go.work but bench/ (benchmarks, run by hand): the library
# (./...: a nested go.mod ends it), the daemon, the kazoo-go check.
PKGS      := ./... ./cmd/zkgroup/... ./internal/kazoocompat/...
ZKCLUSTER := $(GO) run ./internal/testcluster/cmd/zkcluster

.PHONY: test fmt-check vet unit fetch cluster-up cluster-down cluster-status demo demo-kafka4 bench build

## test: gofmt check, go vet, and go test -race over every package, integration tests included
test: fmt-check vet fetch
	@set -o pipefail; $(GO) test -race -count=1 -p $(TEST_P) -timeout 20m -json $(TEST_ARGS) $(PKGS) | $(GO) run ./internal/testreport

fmt-check:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed in:"; echo "$$out"; exit 1; fi; echo "gofmt: ok"

vet:
	$(GO) vet $(PKGS)

## unit: the tests that need no cluster (fast)
unit:
	$(GO) test -short -race -count=1 $(PKGS)

## fetch: download Kafka, ZooKeeper and Kafka 0.11's old consumer from Maven Central into the cache (once)
fetch:
	@$(ZKCLUSTER) fetch

## cluster-up / cluster-down: a local 3-broker cluster for trying zkgroup
## (KAFKA=4: Kafka 4 in KRaft mode and a ZooKeeper for zkgroup alone;
## ZOOKEEPERS=3: a ZooKeeper ensemble of three servers)
cluster-up:
	@$(ZKCLUSTER) up -brokers $${BROKERS:-3} -zookeepers $${ZOOKEEPERS:-1} -kafka $${KAFKA:-3}

cluster-down:
	@$(ZKCLUSTER) down

cluster-status:
	@$(ZKCLUSTER) status

build:
	$(GO) build $(PKGS)

## demo: three daemons on a local cluster (KAFKA=4 make demo: on Kafka 4 / KRaft)
demo:
	@./scripts/demo.sh

## demo-kafka4: the demo on Kafka 4 in KRaft mode
demo-kafka4:
	@KAFKA=4 ./scripts/demo.sh
