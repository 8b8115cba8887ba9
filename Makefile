# Two tiers of tests, both in fake mode (ZK_SERVERS unset, so the
# real-ensemble tests skip):
#   make test        the fast tier: gofmt, go vet and every package's tests
#                    with -race, in about a minute and a quarter (79 s from a
#                    fresh clone, 2026-12-04). Every detector and every
#                    built-in mutant is exercised, with fixed seeds.
#   make test-long   the long tier (-tags long): the same tests repeated over
#                    more seeds and every mutant, the mutant table over 20
#                    seeds, every known bug of the catalogue over 20 seeds,
#                    4,000 cases of each recipe; about six and a half
#                    minutes (the fuzz package's 378 s in CI, 2026-12-04).
# `make test-ensemble` runs the fast tier's tests against a 3-node ZooKeeper
# ensemble on 127.0.0.1 (see .ci/ensemble).

SHELL := bash
GO ?= go
ENSEMBLE := .ci/ensemble

.PHONY: all test test-long fmt-check vet race ensemble-up ensemble-down ensemble-status test-ensemble fuzz

all: test

test: fmt-check vet race

fmt-check:
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt needed on:"; echo "$$unformatted"; exit 1; \
	fi

vet:
	$(GO) vet ./...

# The race detector sleeps a second as each test binary exits, so that a
# race in a goroutine still running can be told (GORACE's
# atexit_sleep_ms); the tests stop what they start, and a tenth of that
# keeps the tier's seventeen binaries from idling a second each. A GORACE
# of your own is kept.
race:
	GORACE="$${GORACE:-atexit_sleep_ms=100}" $(GO) test -race -timeout 10m ./...

# The long tier, without -race (a fuzz case runs about ten times slower
# under it; the fast tier runs every test with it). -count=1: a cached pass
# of the long tier proves nothing new.
test-long:
	$(GO) test -tags long -count=1 -timeout 60m ./...

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
#
# No -race here: go-zookeeper v1.0.4 itself races on reconnect (its
# sendSetWatches reads lastZxid while the new connection's recvLoop writes
# it; go-zookeeper/zk#35, samuel/go-zookeeper#260), which real reconnects
# with watches set trigger every other run. The project's own code runs
# with -race in `make test`.
test-ensemble:
	@set -u; status=0; $(ENSEMBLE) status >/dev/null || status=$$?; \
	if [ "$$status" -eq 3 ]; then \
		trap '$(ENSEMBLE) down' EXIT; \
	fi; \
	servers=$$($(ENSEMBLE) up) || exit 1; \
	echo "ZK_SERVERS=$$servers $(GO) test -count=1 -p 1 -timeout 20m ./..."; \
	ZK_SERVERS=$$servers $(GO) test -count=1 -p 1 -timeout 20m ./...

# The main job: a campaign against each of the project's recipes — the
# lock, the leader election, the read/write lock and the semaphore — one
# after the other; the first finding fails it.
FUZZ_RECIPES := mutex election rwmutex semaphore
fuzz:
	@set -e; for recipe in $(FUZZ_RECIPES); do \
		echo "$(GO) run ./cmd/zkfuzz -recipe=$$recipe"; \
		$(GO) run ./cmd/zkfuzz -recipe=$$recipe; \
	done

# `make fuzz-coverage` measures how much of package recipe the main job
# reaches: it builds zkfuzz with coverage of recipe, runs a fixed campaign
# of each of the project's recipes (FUZZ_COVERAGE_CASES cases each, seed
# 1, run in a temporary directory and without a fail file),
# and prints go tool cover's
# per-function listing, then the statement coverage over every function
# and over the functions that matter (cmd/covfigure: String methods
# and With... option setters left out, and named). It exits 1 if the
# campaign found something, after printing the coverage all the same.
FUZZ_COVERAGE_CASES ?= 3000

.PHONY: fuzz-coverage
fuzz-coverage:
	@set -eu; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	$(GO) build -cover -coverpkg=github.com/zksim/zksim/recipe,github.com/zksim/zksim/cmd/zkfuzz -o "$$dir/zkfuzz" ./cmd/zkfuzz; \
	mkdir "$$dir/cover"; status=0; \
	for recipe in $(FUZZ_RECIPES); do \
		echo "zkfuzz -recipe=$$recipe -cases=$(FUZZ_COVERAGE_CASES) -seed=1, with coverage of recipe"; \
		(cd "$$dir" && GOCOVERDIR="$$dir/cover" ./zkfuzz -recipe=$$recipe -cases=$(FUZZ_COVERAGE_CASES) -seed=1 -quiet -nofailfile) || status=$$?; \
	done; \
	$(GO) tool covdata textfmt -pkg=github.com/zksim/zksim/recipe -i="$$dir/cover" -o="$$dir/recipe.cover"; \
	$(GO) tool cover -func="$$dir/recipe.cover"; \
	$(GO) run ./cmd/covfigure "$$dir/recipe.cover"; \
	exit $$status

# `make bench` benchmarks the fake and, when ZK_SERVERS names an ensemble
# (ZK_SERVERS=$(.ci/ensemble up) make bench), the same workloads on it, and
# writes one Markdown table of the two side by side to $(BENCH_OUT)
# (cmd/zkbench; go test's own output goes to stderr as it comes). The file
# says when and on what machine it was made (OS/architecture, CPU model and
# count, Go version) and which command made it; without ZK_SERVERS the real
# column is empty. BENCHFLAGS passes flags to zkbench, e.g.
# BENCHFLAGS='-count 1 -bench Lock'. The file is replaced only when the run
# produced a table, so an interrupted run leaves the last one in place.
#
# When ZK_SERVERS is the ensemble .ci/ensemble runs, the table's heading also
# says how it runs (`.ci/ensemble settings`: fsync and compiler), which its
# four-letter words do not report. ZKSIM_ENSEMBLE_DURABLE=1 .ci/ensemble up
# starts one that runs as production does, fsync included.
BENCH_OUT := testdata/bench.md
.PHONY: bench
bench:
	@set -u; settings=; \
	if [ -n "$${ZK_SERVERS:-}" ] && [ "$$ZK_SERVERS" = "$$($(ENSEMBLE) servers)" ] && $(ENSEMBLE) status >/dev/null 2>&1; then \
		settings=$$($(ENSEMBLE) settings); \
	fi; \
	tmp=$$(mktemp); trap 'rm -f "$$tmp"' EXIT; status=0; \
	{ echo "# zksim benchmarks: the fake against a real ZooKeeper ensemble"; echo; \
	  echo "Generated by \`make bench\` (cmd/zkbench); do not edit by hand."; \
	  if [ -z "$${ZK_SERVERS:-}" ]; then \
	    echo "This run had no ensemble: the real column and the ratios need"; \
	    echo "\`ZK_SERVERS=\$$(.ci/ensemble up) make bench\`."; \
	  fi; echo; \
	  $(GO) run ./cmd/zkbench -go $(GO) -real-settings "$$settings" $(BENCHFLAGS) || status=$$?; \
	} >"$$tmp"; \
	if grep -q '^| workload' "$$tmp"; then cp "$$tmp" $(BENCH_OUT) && echo "wrote $(BENCH_OUT)"; fi; \
	exit $$status

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

# The catalogue's track record in the README: every known bug of
# fuzz/targets hunted with each of 20 seeds on one worker
# (`zkfuzz -track-record`), its table written between the README's
# track-record markers. A few minutes on 2 cores.
.PHONY: track-record
track-record:
	@set -eu; tmp=$$(mktemp); trap 'rm -f "$$tmp"' EXIT; \
	$(GO) run ./cmd/zkfuzz -track-record -seeds=20 > "$$tmp"; \
	awk -v table="$$tmp" ' \
		/<!-- track-record begin/ { print; while ((getline line < table) > 0) print line; skip = 1; next } \
		/<!-- track-record end/ { skip = 0 } \
		!skip { print }' README.md > README.md.new; \
	mv README.md.new README.md; \
	echo "README.md: the track record of $$(grep -c '^| [^-u]' "$$tmp") known bugs"
