# Plain `make test` runs the fake mode only (ZK_SERVERS unset, so the
# real-ensemble tests skip). `make test-ensemble` runs the same tests against
# a 3-node ZooKeeper ensemble on 127.0.0.1 (see .ci/ensemble).

SHELL := bash
GO ?= go
ENSEMBLE := .ci/ensemble

.PHONY: all test fmt-check vet race ensemble-up ensemble-down ensemble-status test-ensemble fuzz

all: test

test: fmt-check vet race

fmt-check:
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt needed on:"; echo "$$unformatted"; exit 1; \
	fi

vet:
	$(GO) vet ./...

race:
	$(GO) test -race ./...

ensemble-up:
	@$(ENSEMBLE) up

ensemble-down:
	@$(ENSEMBLE) down

ensemble-status:
	@$(ENSEMBLE) status

# Uses an ensemble that already serves; otherwise starts one and stops it
# again afterwards, whether the tests pass or not. A degraded ensemble that
# someone else started is repaired but left running.
#
# -p 1 runs one package at a time: scenarios check that each write takes
# exactly the next zxid, which holds only while nothing else writes to the
# ensemble. For the same reason nothing else should use it meanwhile.
test-ensemble:
	@set -u; status=0; $(ENSEMBLE) status >/dev/null || status=$$?; \
	if [ "$$status" -eq 3 ]; then \
		trap '$(ENSEMBLE) down' EXIT; \
	fi; \
	servers=$$($(ENSEMBLE) up) || exit 1; \
	echo "ZK_SERVERS=$$servers $(GO) test -race -count=1 -p 1 ./..."; \
	ZK_SERVERS=$$servers $(GO) test -race -count=1 -p 1 ./...

fuzz:
	$(GO) run ./cmd/zkfuzz

# `make bench` benchmarks the fake and, when ZK_SERVERS names an ensemble
# (ZK_SERVERS=$(.ci/ensemble up) make bench), the same workloads on it, and
# prints one Markdown table of the two side by side on stdout (cmd/zkbench;
# go test's own output goes to stderr). BENCHFLAGS passes flags to it, e.g.
# BENCHFLAGS='-count 1 -bench Lock'.
#
# When ZK_SERVERS is the ensemble .ci/ensemble runs, the table's heading also
# says how it runs (`.ci/ensemble settings`: fsync and compiler), which its
# four-letter words do not report. ZKSIM_ENSEMBLE_DURABLE=1 .ci/ensemble up
# starts one that runs as production does, fsync included.
.PHONY: bench
bench:
	@settings=; \
	if [ -n "$${ZK_SERVERS:-}" ] && [ "$$ZK_SERVERS" = "$$($(ENSEMBLE) servers)" ] && $(ENSEMBLE) status >/dev/null 2>&1; then \
		settings=$$($(ENSEMBLE) settings); \
	fi; \
	$(GO) run ./cmd/zkbench -go $(GO) -real-settings "$$settings" $(BENCHFLAGS)

# Records a real ensemble's answers to the differential corpus (testdata/diff,
# replayed on the fake by zkfake/difftest on every `make test`). Uses an
# ensemble that already serves; otherwise starts one and stops it afterwards.
.PHONY: record
record:
	@set -u; status=0; $(ENSEMBLE) status >/dev/null || status=$$?; \
	if [ "$$status" -eq 3 ]; then \
		trap '$(ENSEMBLE) down' EXIT; \
	fi; \
	servers=$$($(ENSEMBLE) up) || exit 1; \
	echo "$(GO) run ./cmd/zkrecord -servers $$servers -out testdata/diff"; \
	$(GO) run ./cmd/zkrecord -servers "$$servers" -out testdata/diff
