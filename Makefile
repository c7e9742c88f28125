# Ambar — make targets
#   make run        the default scenarios on an embedded SQLite store; prints where the report is (release build)
#                   make run and make test install the system packages they need; other targets say what is missing
#   make test       the whole test suite (installs what it needs on a fresh machine), and scripts/long-functions: no
#                   function over 120 lines unless scripts/long-functions.allow names it with a reason
#   make scenarios  every shipped scenario in Scenarios/
#   make compare    merge policies × topologies side by side (Scenarios/policy-comparison.yaml, 3 seeds), ranked; fails when Docs/choosing-a-merge-policy.md no longer matches
#   make guide      runs the comparison and rewrites the measured part of Docs/choosing-a-merge-policy.md
#   make capacity   chunk size × visible-set grid: where the main queue first misses a 60 Hz frame
#   make evidence   the published Core Data measurements (Profiles/evidence/) replayed under the shipped profiles: published, ours,
#                   ratio, within 2x, direction, for the fit entries and the checks apart, then leave-one-out (Profiles/README.md)
#   make fit        refit the device profiles to the evidence (ambar-bench fit; rewrites Profiles/<device>.yaml)
#   make published  the old name of `make evidence`, kept for one release
#   make example    builds and runs Docs/examples/custom-policy: an app's own merge policy and model through the workbench as a library
#   make ci         the regression gate against Scenarios/baselines/ci.json (exact on deterministic counters)
#   make baseline   record a new CI baseline
#   make report     rebuild Reports/index.html
#   make clean-reports  keep the last KEEP runs of each scenario in Reports/ (default 5, or $$AMBAR_KEEP_RUNS; KEEP=all keeps
#                   every run); prints what it removed and the space freed. Runs made by make also keep KEEP (Docs/workbench.md)
#   make schema     rewrite Docs/scenario.schema.json (editor completion for scenarios) from the loader's table of keys
#   make build      debug build of every target
#   make bench      ours vs raw SQLite vs GRDB, one table (Benchmarks/, its own package); make bench-quick: reduced sizes + package-benchmark thresholds
#   make crash-test kill tests: TRIALS (default 100) import/edit children killed with SIGKILL, the store checked after each;
#                   linear in TRIALS (a fresh store past 5000 items), progress every 10 trials (Docs/reliability.md)
#   make fuzz       hostile input, RUNS (default 10000) per target, a fresh seed each run (printed; FUZZ_SEED=N replays it);
#                   generated scenarios that validate are run, scaled down (Docs/reliability.md)
#   make tsan       the concurrency-heavy suites (Tests/tsan-suites.txt) under ThreadSanitizer (scratch path .build-tsan); fails on any report

SWIFT ?= swift
CONFIG ?= release
APT_PACKAGES := libsqlite3-dev libjemalloc-dev pkg-config sqlite3
BENCH := .build/$(CONFIG)/ambar-bench
# KEEP=N (or all): runs of each scenario kept in Reports/ after a run and by clean-reports; unset: the tool's default.
KEEP ?=
KEEP_FLAG := $(if $(KEEP),--keep $(KEEP))
DEFAULT_SCENARIOS := Scenarios/thousands-of-imports.yaml Scenarios/conflict-storm.yaml Scenarios/read-only-view.yaml

.PHONY: run test scenarios compare guide capacity evidence fit published example ci baseline report clean-reports schema build deps need bench-tool clean bench bench-quick crash-test fuzz tsan

# make run and make test install what they need (`deps`, through apt-get); every other target only checks
# (`need`) and says what is missing and how to install it.
MISSING = for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done

deps:
	@missing=""; $(MISSING); \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

need:
	@missing=""; $(MISSING); \
	if [ -n "$$missing" ]; then \
	  echo "missing system packages:$$missing"; \
	  echo "install them with: sudo apt-get install$$missing   (or run make run or make test, which install them)"; \
	  exit 2; \
	fi

bench-tool: need
	$(SWIFT) build -c $(CONFIG) --product ambar-bench

run: deps
	$(SWIFT) build -c $(CONFIG) --product ambar-bench
	$(BENCH) run $(DEFAULT_SCENARIOS) --progress $(KEEP_FLAG)

# Every test is Swift Testing: XCTest would only print that it ran none.
test: deps
	scripts/long-functions
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --disable-xctest

scenarios: bench-tool
	$(BENCH) run Scenarios/*.yaml --progress $(KEEP_FLAG)

compare: bench-tool
	$(BENCH) run Scenarios/policy-comparison.yaml --progress $(KEEP_FLAG)
	$(BENCH) guide --check

guide: bench-tool
	$(BENCH) run Scenarios/policy-comparison.yaml --progress $(KEEP_FLAG)
	$(BENCH) guide

schema: bench-tool
	$(BENCH) schema --out Docs/scenario.schema.json

example: need
	cd Docs/examples/custom-policy && $(SWIFT) build && AMBAR_PROFILE_PATH=$(CURDIR)/Profiles $$($(SWIFT) build --show-bin-path)/custom-policy

evidence: bench-tool
	$(BENCH) evidence --progress

fit: bench-tool
	$(BENCH) fit --progress

published: evidence
	@echo "note: make published is now make evidence (Profiles/evidence/); the old name goes in the next release"

capacity: bench-tool
	$(BENCH) run Scenarios/capacity.yaml --progress $(KEEP_FLAG)

ci: bench-tool
	$(BENCH) check --baseline ci --progress $(KEEP_FLAG)

baseline: bench-tool
	$(BENCH) baseline ci Scenarios/ci-regression.yaml --progress $(KEEP_FLAG)

report: bench-tool
	$(BENCH) report

clean-reports: bench-tool
	$(BENCH) clean-reports $(KEEP_FLAG)

build: need
	$(SWIFT) build

# Benchmarks/ is its own package (GRDB and package-benchmark never enter this one); release build, own .build.
bench: need
	cd Benchmarks && $(SWIFT) build -c release --product ambar-perf && .build/release/ambar-perf

bench-quick: need
	cd Benchmarks && $(SWIFT) build -c release --product ambar-perf && .build/release/ambar-perf --quick --reps 1
	cd Benchmarks && $(SWIFT) package benchmark thresholds check --no-progress

TRIALS ?= 100
RUNS ?= 10000
# The suites of Tests/tsan-suites.txt as one anchored filter: ^(Target\.Suite|…)[./] matches a suite's tests and
# its nested suites, never a suite whose name merely contains a listed one.
TSAN_SUITES = $(shell sed -e 's/\#.*//' -e 's/[[:space:]]//g' -e '/^$$/d' -e 's/\./\\./g' Tests/tsan-suites.txt | paste -sd'|' -)
TSAN_FILTER = ^($(TSAN_SUITES))[./]

crash-test: need
	$(SWIFT) build --product ambar-crash
	$$($(SWIFT) build --show-bin-path)/ambar-crash harness --trials $(TRIALS)
	$$($(SWIFT) build --show-bin-path)/ambar-crash migrate-harness --trials $$(( $(TRIALS) / 5 + 1 ))

# A fresh seed each run (every target prints it); FUZZ_SEED=N replays a printed one. make test keeps one fixed seed.
FUZZ_SEED ?= random
fuzz: need
	FUZZ_RUNS=$(RUNS) FUZZ_SEED=$(FUZZ_SEED) $(SWIFT) test --filter ReliabilityTests.FuzzTests

tsan: need
	AMBAR_WITHOUT_JEMALLOC=1 TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/Tests/tsan-suppressions.txt" $(SWIFT) test --scratch-path .build-tsan --sanitize=thread --filter '$(TSAN_FILTER)'

clean:
	rm -rf .build
