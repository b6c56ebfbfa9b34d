# fetchd: build, run, test, install.
# `make run` and `make test` install the Debian packages they need when they are missing.

SWIFT ?= swift
PREFIX ?= /usr/local
DESTDIR ?=
DEBIAN_PACKAGES := libcurl4-openssl-dev libsystemd-dev libsqlite3-dev pkg-config python3
# For the end-to-end tests against a real systemd (booted in a PID + mount namespace), and for
# the session usage and network condition tests: a private dbus-daemon and a fake logind or
# NetworkManager in Debian's Python
# (/usr/bin/python3 with python3-dbus and python3-gi for its GLib main loop); polkitd, to check
# the shipped rule for the planned timers. nginx-light
# serves HTTP/2 over TLS (HTTP2Tests) with a certificate made by openssl; iproute2 puts "remote"
# addresses on a test network namespace's lo (RedirectPolicyTests).
# scdoc renders the man pages (docs/man/*.scd); man-db's `man --warnings` checks them in `make test`.
MAN_PACKAGES := scdoc
TEST_PACKAGES := systemd dbus dbus-daemon polkitd python3-dbus python3-gi procps util-linux nginx-light openssl iproute2 tzdata \
	$(MAN_PACKAGES) man-db
RUN_DIR := $(CURDIR)/.fetchd
BIN_DIR = $(shell $(SWIFT) build --show-bin-path)
# The one place the version is written is Defaults.swift; the man pages' footer is made from it,
# and `make deb` refuses a debian/changelog whose newest entry is for another version.
VERSION := $(shell sed -n 's/^ *public static let version = "\(.*\)"$$/\1/p' Sources/FetchdCore/Defaults.swift)
# The release build, as installed and packaged: the Swift runtime and Foundation linked in
# (glibc's build; the static musl SDK cannot link libsystemd), so the binaries need only Debian's
# libraries and no RUNPATH into the toolchain; Debian's hardening (dpkg-buildflags) where SwiftPM
# takes it: relocations read-only after start, and the C and C++ code (the shims, toml++,
# BoringSSL) with checked string functions and stack protection. SWIFT_FOLDER_FLAGS names
# SwiftPM's cache and configuration folders when HOME is not the caller's (debian/rules).
HARDENING_C_FLAGS := -D_FORTIFY_SOURCE=2 -fstack-protector-strong
RELEASE_FLAGS := --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now \
	$(foreach flag,$(HARDENING_C_FLAGS),-Xcc $(flag) -Xcxx $(flag))
SWIFT_FOLDER_FLAGS ?=
RELEASE_BUILD = $(SWIFT) build -c release $(RELEASE_FLAGS) $(SWIFT_FOLDER_FLAGS)

.PHONY: all deps test-deps install-packages build run status man man-check deb test test-asan test-tsan bench-http bench-idle bench-dbus bench-config bench-compare bench-package bench-async-shape bench-transfer \
	bench-planner bench-learning bench-coalesce fuzz fuzz-build fuzz-config fuzz-trace fuzz-control fuzz-headers fuzz-push fuzz-json fuzz-dbus crash-states io-faults soak soak-plot torture release install uninstall clean

all: build

# Install only the missing packages, so a machine that has them needs no root and no network.
deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEBIAN_PACKAGES)"

test-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEBIAN_PACKAGES) $(TEST_PACKAGES)"

install-packages:
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing missing Debian packages:" $$missing; \
		sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

# Runs the daemon in the foreground on the shipped config, with its files under ./.fetchd/.
# In another terminal: make status   (or .build/debug/fetchctl status --socket .fetchd/run/control.sock)
run: build
	mkdir -p $(RUN_DIR)
	$(BIN_DIR)/fetchd --config config/fetchd.toml \
		--cache-dir $(RUN_DIR)/cache --state-dir $(RUN_DIR)/state --runtime-dir $(RUN_DIR)/run

status:
	$(BIN_DIR)/fetchctl status --socket $(RUN_DIR)/run/control.sock

# Four passes, by test target. Suites that time deadlines or wait for servers must not share
# Swift's cooperative pool (two threads on a 2-core machine) with CPU-bound suites, which would
# hold both threads and delay their timers.
# 1. The library targets' tests and FetchdEndToEndTests (the built fetchd and fetchctl, run as a
#    user would), together: mostly waiting on processes, they share the machine well.
# 2. FetchdHandlersTests and CurlKitTests alone: they time handlers' deadlines and libcurl's
#    transfers against loopback servers to a fraction of a second.
# 3. The CPU-bound suites apart: the planner's simulations, the limiter's contention test, and
#    the short fault runs that load the whole machine (10,000 handlers, 2,000 forked children,
#    endless output, two minutes of the soak: FaultTortureTests), and the build of examples/swift
#    against the FetchdClient product (SwiftExampleTests: about 30 s from a new clone).
# 4. FetchdSystemdTests last: fetchd under a real systemd in a namespace of its own, and the
#    Debian package (`make deb`, built once per run; FETCHD_DEB_DIR) installed, upgraded and
#    purged there by apt and dpkg.
# The passes are shared with the sanitizer runs below: $(call test-passes,BIN_DIR,SWIFT_TEST_OPTIONS,ENV).
# Tests/test_pass.sh repeats a failed pass's failures at the end of the output (CI shows the tail).
CPU_BOUND_TESTS := FetchdPlannerTests|ConcurrencyLimiterTests|FaultTortureTests|SwiftExampleTests
TIMED_TESTS := FetchdHandlersTests|CurlKitTests
define test-passes
	$(3) FETCHD_BIN_DIR=$(1) Tests/test_pass.sh $(SWIFT) test --skip-build $(2) --skip FetchdSystemdTests \
		--skip "$(TIMED_TESTS)" --skip "$(CPU_BOUND_TESTS)"
	$(3) FETCHD_BIN_DIR=$(1) Tests/test_pass.sh $(SWIFT) test --skip-build $(2) --filter "$(TIMED_TESTS)"
	$(3) FETCHD_BIN_DIR=$(1) Tests/test_pass.sh $(SWIFT) test --skip-build $(2) --filter "$(CPU_BOUND_TESTS)"
	$(3) FETCHD_BIN_DIR=$(1) Tests/test_pass.sh $(SWIFT) test --skip-build $(2) --filter FetchdSystemdTests
endef
# The man pages, rendered from their scdoc sources into .build/man (not kept in git).
MAN_SOURCES := $(wildcard docs/man/*.scd)
MAN_PAGES := $(patsubst docs/man/%.scd,.build/man/%,$(MAN_SOURCES))
man: $(MAN_PAGES)

# The pages' footer names the version (@VERSION@ in each page's first line). Rendered again
# when Defaults.swift changes, which may change the version.
.build/man/%: docs/man/%.scd Sources/FetchdCore/Defaults.swift
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(MAN_PACKAGES)"
	@mkdir -p .build/man
	sed 's/@VERSION@/$(VERSION)/g' $< | scdoc > $@.tmp && mv $@.tmp $@

# Every page renders without a warning from man or groff (a stray macro, a line that cannot be
# broken, an unknown escape); the tests check that every config key and fetchctl option is in them.
man-check: $(MAN_PAGES)
	@for page in $(MAN_PAGES); do \
		warnings=$$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l $$page 2>&1 >/dev/null); \
		if [ -n "$$warnings" ]; then echo "$$page: man --warnings:"; echo "$$warnings"; exit 1; fi; \
	done; echo "man pages render without warnings: $(notdir $(MAN_PAGES))"

test: test-deps man-check deb
	$(SWIFT) build --build-tests
	$(call test-passes,$(BIN_DIR),,FETCHD_DEB_DIR=$(CURDIR)/$(DEB_DIR))

# The same four passes with AddressSanitizer (and LeakSanitizer) or ThreadSanitizer, each in its
# own build folder (docs/reliability.md). Not part of `make test` or `make torture`: a sanitized
# build takes 8 to 16 minutes here, its run about 6 (twice the plain one). The
# end-to-end tests run the sanitized fetchd and fetchctl (FETCHD_BIN_DIR), so the daemon itself
# is checked. Every sanitized process writes its reports under <build folder>/reports (log_path)
# and exits non-zero on one, failing the test that ran it; at the end any report at all fails
# the run (one from a process no test checked too). Library findings fetchd cannot fix are
# suppressed in Tests/Sanitizers/*.supp, each with its reason. FETCHD_SANITIZER tells the tests
# (memory bounds are not checked under ASan, whose quarantine keeps freed memory resident);
# FETCHD_TEST_SLOWDOWN stretches their waits. The system linker (gold) links both; only the
# fuzzer needs lld.
SANITIZER_SLOWDOWN ?= 4
SANITIZER_ENV = FETCHD_SANITIZER=$(1) FETCHD_TEST_SLOWDOWN=$(SANITIZER_SLOWDOWN) SWIFT_BACKTRACE=enable=no
ASAN_BUILD := .build-asan
ASAN_ENV = $(call SANITIZER_ENV,address) \
	ASAN_OPTIONS=detect_leaks=1:log_path=$(CURDIR)/$(ASAN_BUILD)/reports/asan \
	LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/Sanitizers/lsan.supp:print_suppressions=0
# ThreadSanitizer cannot see Swift's Mutex synchronise when it is contended (its slow path is in
# the uninstrumented runtime): Tests/Sanitizers/tsan_mutex.c, preloaded, tells it. Built with the
# Swift toolchain's clang (Swift's calling convention; gcc has none).
CLANG ?= clang
TSAN_BUILD := .build-tsan
TSAN_MUTEX_LIB := $(CURDIR)/$(TSAN_BUILD)/libtsan_mutex.so
TSAN_ENV = $(call SANITIZER_ENV,thread) LD_PRELOAD=$(TSAN_MUTEX_LIB) \
	TSAN_OPTIONS=suppressions=$(CURDIR)/Tests/Sanitizers/tsan.supp:log_path=$(CURDIR)/$(TSAN_BUILD)/reports/tsan
# Fails, printing them, when any sanitizer report was written under $(1).
define sanitizer-reports
	@if [ -n "$$(ls -A $(1))" ]; then echo "sanitizer reports in $(1):"; cat $(1)/*; exit 1; fi
	@echo "no sanitizer reports"
endef
test-asan: test-deps
	$(SWIFT) build --build-tests --scratch-path $(ASAN_BUILD) --sanitize=address
	rm -rf $(ASAN_BUILD)/reports && mkdir -p $(ASAN_BUILD)/reports
	$(call test-passes,$(CURDIR)/$(ASAN_BUILD)/debug,--scratch-path $(ASAN_BUILD) --sanitize=address,$(ASAN_ENV))
	$(call sanitizer-reports,$(ASAN_BUILD)/reports)

test-tsan: test-deps
	$(SWIFT) build --build-tests --scratch-path $(TSAN_BUILD) --sanitize=thread
	$(CLANG) -shared -fPIC -O1 -Wall -o $(TSAN_MUTEX_LIB) Tests/Sanitizers/tsan_mutex.c -ldl
	rm -rf $(TSAN_BUILD)/reports && mkdir -p $(TSAN_BUILD)/reports
	$(call test-passes,$(CURDIR)/$(TSAN_BUILD)/debug,--scratch-path $(TSAN_BUILD) --sanitize=thread,$(TSAN_ENV))
	$(call sanitizer-reports,$(TSAN_BUILD)/reports)

# The HTTP wake benchmark: fetchd against `curl --parallel` on N files served by nginx on
# loopback (see bench/http_bench.py). BENCH_ARGS="-n 1000 --repeat 3" for a shorter run;
# BENCH_DIR=/dev/shm measures on tmpfs, without the disk's cost of creating files. It also
# compiles and runs bench/snapshot_floor.c (the file-system calls and result row of a fetch
# alone; gcc, libsqlite3).
BENCH_ARGS ?=
bench-http: deps
	@$(MAKE) --no-print-directory install-packages PACKAGES="nginx-light curl gcc libc6-dev libsqlite3-dev"
	$(RELEASE_BUILD) --product fetchd
	python3 bench/http_bench.py --bin-dir $$($(RELEASE_BUILD) --show-bin-path) \
		--json bench/results/http-$$(date +%Y%m%d).json $(BENCH_ARGS)

# What an idle fetchd costs: wake-ups per minute per thread and RSS / PSS / anonymous memory, with
# 100 http handlers not due for hours, over 10 minutes (see bench/idle_bench.py).
# BENCH_ARGS="--seconds 60" for a shorter look.
bench-idle: deps
	$(RELEASE_BUILD) --product fetchd
	python3 bench/idle_bench.py --fetchd $$($(RELEASE_BUILD) --show-bin-path)/fetchd \
		--json bench/results/idle-$$(date +%Y%m%d).json $(BENCH_ARGS)

# The D-Bus API against the control socket, call by call in one run: method round trips and the
# delay from a fetch's end to the client (FetchCompleted against a waiting `fetch`), median and
# p99 over N calls (see bench/dbus_bench.py); then the idle bench with a D-Bus client connected.
# BENCH_ARGS="-n 200" for a shorter run; BENCH_DIR=/dev/shm puts the cache on tmpfs.
bench-dbus: deps
	$(RELEASE_BUILD) --product fetchd
	/usr/bin/python3 bench/dbus_bench.py --bin-dir $$($(RELEASE_BUILD) --show-bin-path) \
		--json bench/results/dbus-$$(date +%Y%m%d).json $(BENCH_ARGS)
	/usr/bin/python3 bench/idle_bench.py --fetchd $$($(RELEASE_BUILD) --show-bin-path)/fetchd --seconds 300 \
		--dbus-client --json bench/results/idle-dbus-$$(date +%Y%m%d).json

# Two builds compared in one session, run by run in turns (bench/compare_builds.py: the http,
# config and idle benches, each against its own peer): OLD=<commit> built in a worktree under
# .build-compare, the new build from this tree. BENCH_DIR=/dev/shm for the figures quoted.
bench-compare: deps
	@test -n "$(OLD)" || { echo "make bench-compare OLD=<commit>: name the build to compare with" >&2; exit 2; }
	@$(MAKE) --no-print-directory install-packages PACKAGES="nginx-light curl gcc libc6-dev libsqlite3-dev"
	$(RELEASE_BUILD) --product fetchd
	rm -rf .build-compare && git worktree prune && git worktree add --detach .build-compare $(OLD)
	cd .build-compare && $(RELEASE_BUILD) --product fetchd
	python3 bench/compare_builds.py --old-bin $$(cd .build-compare && $(RELEASE_BUILD) --show-bin-path) \
		--new-bin $$($(RELEASE_BUILD) --show-bin-path) --old-name $$(git rev-parse --short $(OLD)) \
		--new-name $$(git rev-parse --short HEAD) --json bench/results/compare-$$(date +%Y%m%d).json $(BENCH_ARGS)
	git worktree remove --force .build-compare

# Loading a configuration of N handlers (one file each), as a start or a reload does
# (`fetchd --check-config`), against Python's tomllib parsing the same files (see bench/config_bench.py).
bench-config: deps
	$(RELEASE_BUILD) --product fetchd
	python3 bench/config_bench.py --fetchd $$($(RELEASE_BUILD) --show-bin-path)/fetchd \
		--json bench/results/config-$$(date +%Y%m%d).json $(BENCH_ARGS)

# The package's sizes, then the packaged (statically linked) fetchd against the same sources
# linked to the toolchain's shared Swift runtime (.build-dynamic), alternating: time to READY=1
# and idle memory (see bench/package_bench.py).
DYNAMIC_BUILD = $(SWIFT) build -c release --scratch-path .build-dynamic
bench-package: deb
	$(DYNAMIC_BUILD) --product fetchd
	python3 bench/package_bench.py --deb $$(ls $(DEB_DIR)/fetchd_*.deb) --dynamic $$($(DYNAMIC_BUILD) --show-bin-path) \
		--json bench/results/package-$$(date +%Y%m%d).json $(BENCH_ARGS)

# What a fetch's async shape costs with no work in it (task, actor hops, two continuations resumed
# from other threads), on libdispatch's executor and on NIO's, three alternating pairs of runs
# (bench/async_shape/Sources/async-shape/main.swift; a package of its own, so fetchd does not build it).
bench-async-shape: deps
	cd bench/async_shape && $(SWIFT) build -c release
	for run in 1 2 3; do \
		bench/async_shape/.build/release/async-shape 20000 | tail -1; \
		bench/async_shape/.build/release/async-shape 20000 nio | tail -1; \
	done

# One background transfer of a 1 GiB file served by nginx on loopback against `curl -o`
# (see bench/transfer_bench.py). BENCH_ARGS="--size-mib 256 --repeat 2" for a shorter run.
bench-transfer: deps
	@$(MAKE) --no-print-directory install-packages PACKAGES="nginx-light curl"
	$(RELEASE_BUILD) --product fetchd
	python3 bench/transfer_bench.py --bin-dir $$($(RELEASE_BUILD) --show-bin-path) \
		--json bench/results/transfer-$$(date +%Y%m%d).json $(BENCH_ARGS)

# The planner on the real usage traces (bench/traces/real) and the synthetic ones (../shared/traces),
# scored as the held-out judge scores (bench/learning_score.py; --check runs the judge's own script
# on every schedule), beside a fixed interval, the greedy hindsight daily schedule and an online
# time-of-day learner (bench/README.md quotes it), by set of the split (tuning, validation) and
# kind of source; first it checks that the split (bench/traces/real/split.tsv) and the population
# prior (Sources/FetchdPlanner/PopulationPrior.swift, from the tuning set) are current.
bench-learning: deps
	python3 bench/learning_split.py --check
	python3 bench/population_prior.py --check
	$(RELEASE_BUILD) --product fetchctl
	python3 bench/learning_bench.py $$($(RELEASE_BUILD) --show-bin-path) --check \
		--policy learned --policy time-of-day --policy profile --json bench/results/learning-$$(date +%Y%m%d).json

# The usage planner on the synthetic traces (fetchctl simulate), and planning time per decision;
# then the bound: what a policy that knows each habit's true time and jitter could reach; then a
# yardstick: per-habit chains learned online (bench/chain_policy.py).
bench-planner: deps
	$(RELEASE_BUILD) --product fetchctl
	python3 bench/planner_bench.py $$($(RELEASE_BUILD) --show-bin-path) bench/results/planner-$$(date +%Y%m%d).json
	python3 bench/planner_bound.py --check
	python3 bench/chain_policy.py

# Shared wakes: 20 handlers for 14 days through the daemon's own wake rule and usage planning
# (Tests/FetchdDaemonTests/CoalesceBenchTests.swift, a test so that it reaches the daemon's
# internal Eligibility), ten usage-planned on real traces and ten on fixed intervals, with the
# daemon's tolerance and without; scored by ../shared/scoring/staleness.py (bench/coalesce_bench.py).
bench-coalesce: deps
	$(SWIFT) build --build-tests
	python3 bench/coalesce_bench.py $(BIN_DIR) --json bench/results/coalesce-$$(date +%Y%m%d).json

# libFuzzer on every parser of bytes fetchd did not write (Sources/FetchdFuzzing): the config
# loader (FETCHD_FUZZ=config), the usage-trace parser with the planner behind it (trace), the
# control protocol's request lines (control), response headers as a server sends them (headers),
# raw requests to a real push listener on loopback (push), the JSON read back from disk,
# meta.json and the transfer resume record (json), and D-Bus method calls (dbus: each input
# built value by value into a real sd-bus message, read as the daemon reads a call, and checked
# against what fetchd-dbus(7) says it must read as); FUZZ_SECONDS each, seeded from the shipped
# config, the broken-config fixtures, the traces and Tests/Fuzz/<target> (which `make test`
# replays: FuzzSeedTests). A crash stops the run and leaves its input in .build-fuzz/crash-*;
# make it a seed (or a broken fixture) once fixed. Leak checks are off: TOMLKit and Foundation
# leak small buffers per parse (see docs/reliability.md). lld links it: gold aborts on
# libFuzzer's objects. The Swift backtracer is off so that a crash is reported by the sanitizer,
# not by a backtracer reading poisoned memory. `make fuzz` runs the targets one after the
# other, `make -j3 fuzz` three at a time (what `make torture` does: each still gets its
# FUZZ_SECONDS of wall time).
FUZZ_SECONDS ?= 60
FUZZ_BUILD := .build-fuzz
FUZZ_TARGETS := config trace control headers push json dbus
FUZZ_SEEDS_config := config Tests/FetchdConfigTests/Fixtures/broken
FUZZ_SEEDS_trace := Tests/FetchdPlannerTests/Traces
FUZZ_RUN = SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 $(FUZZ_BUILD)/debug/fetchd-fuzz -detect_leaks=0 \
	-max_len=8192 -max_total_time=$(FUZZ_SECONDS)
fuzz: $(addprefix fuzz-,$(FUZZ_TARGETS))

fuzz-build: deps
	$(SWIFT) build --product fetchd-fuzz --scratch-path $(FUZZ_BUILD) -Xswiftc -sanitize=fuzzer,address \
		-Xswiftc -DFUZZING -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld

$(addprefix fuzz-,$(FUZZ_TARGETS)): fuzz-%: fuzz-build
	mkdir -p $(FUZZ_BUILD)/corpus/$*
	FETCHD_FUZZ=$* $(FUZZ_RUN) -artifact_prefix=$(FUZZ_BUILD)/crash-$*- \
		$(FUZZ_BUILD)/corpus/$* $(or $(FUZZ_SEEDS_$*),Tests/Fuzz/$*)

# The reliability suite (docs/reliability.md): 500 SIGKILLs of a busy daemon; 100 wall-clock jumps
# and suspends (fetchd's clock stepped by the Tests/Torture/fakeclock.c preload, built with cc);
# 1,000 reloads of random valid and invalid configs; every crash state of a 10-handler wake
# (`make crash-states`); every I/O fault point of a 3-handler wake
# failing with EIO, ENOSPC and EDQUOT (Tests/Torture/iofault.c, preloaded; also `make io-faults`);
# resource exhaustion (10,000 handlers all due,
# handlers forking 1,000 children, endless output, RLIMIT_NOFILE lowered 100 times); the soak
# (200 handlers for TORTURE_SOAK_MINUTES against a loopback server, a day's schedule every 20
# minutes, its curve in bench/results/soak-DATE.json and .svg; TORTURE_SOAK_MINUTES=120 is the
# long option, held to a plateau after its first hour); then the seven fuzzers, three at a time, 10 minutes
# each (about 83 minutes in all on 2 cores). `make test` runs short versions of the kill, disk-full,
# clock, reload, exhaustion and soak runs (KillTortureTests, DiskFullTests, FaultTortureTests).
# The long soak alone, on the release build as a service runs it: SOAK_MINUTES of real time (two
# hours unless set), then its curves drawn (bench/soak_plot.py, Debian's matplotlib) beside its
# JSON in bench/results. A run of 90 minutes or more must also flatten: resident memory fitted
# after the first hour rises by at most 1 MiB an hour (Tests/Torture/soak_report.py).
SOAK_MINUTES ?= 120
soak: release
	@# The file is named once: a two-hour run may end on the next day.
	json=bench/results/soak-release-$$(date +%Y%m%d).json && \
	python3 Tests/Torture/soak_torture.py --bin-dir $$($(RELEASE_BUILD) --show-bin-path) \
		--minutes $(SOAK_MINUTES) --json $$json && \
	$(MAKE) --no-print-directory soak-plot SOAK_JSON=$$json

# Draws a soak's JSON as an SVG beside it.
soak-plot:
	@$(MAKE) --no-print-directory install-packages PACKAGES="python3-matplotlib"
	/usr/bin/python3 bench/soak_plot.py $(SOAK_JSON) $(SOAK_JSON:.json=.svg)

# Every state a power loss during a wake of 10 handlers may leave under ext4 data=ordered (as
# ALICE models it), built from the wake's recorded file-system calls (Tests/Torture/fsrecord.c,
# preloaded) and checked: complete snapshots, a sound database, nothing logged and lost, and
# fetchd started on every tenth one fetching again (Tests/Torture/crash_states.py says the
# model). Enumerated up to CRASH_STATES_CAP, sampled beyond (about 30 minutes here at 20,000).
# `make test` checks a sample of 300.
CRASH_STATES_CAP ?= 20000
crash-states: build
	python3 Tests/Torture/crash_states.py --bin-dir $(BIN_DIR) --cap $(CRASH_STATES_CAP) --start-every 10

# Only the I/O faults: each write, sync, rename, mkdir, symlink and open of the cache and the
# database in a 3-handler `fetchd --once` fails in turn, with each errno (about 2 minutes).
io-faults: build
	python3 Tests/Torture/io_fault_torture.py --bin-dir $(BIN_DIR)

TORTURE_KILLS ?= 500
TORTURE_CLOCK_EVENTS ?= 100
TORTURE_RELOADS ?= 1000
TORTURE_SOAK_MINUTES ?= 20
torture: build
	@# gdb reads the core dump of a crash in the nofile part (exhaustion_torture.py); prlimit is util-linux's.
	@$(MAKE) --no-print-directory install-packages PACKAGES="gdb util-linux procps"
	python3 Tests/Torture/kill_torture.py --bin-dir $(BIN_DIR) --kills $(TORTURE_KILLS)
	python3 Tests/Torture/clock_torture.py --bin-dir $(BIN_DIR) --events $(TORTURE_CLOCK_EVENTS)
	python3 Tests/Torture/reload_torture.py --bin-dir $(BIN_DIR) --reloads $(TORTURE_RELOADS)
	python3 Tests/Torture/io_fault_torture.py --bin-dir $(BIN_DIR)
	python3 Tests/Torture/crash_states.py --bin-dir $(BIN_DIR) --cap $(CRASH_STATES_CAP) --start-every 10
	python3 Tests/Torture/exhaustion_torture.py --bin-dir $(BIN_DIR) many --handlers 10000
	python3 Tests/Torture/exhaustion_torture.py --bin-dir $(BIN_DIR) fork --children 1000
	python3 Tests/Torture/exhaustion_torture.py --bin-dir $(BIN_DIR) spew --seconds 60
	python3 Tests/Torture/exhaustion_torture.py --bin-dir $(BIN_DIR) nofile --rounds 100
	json=bench/results/soak-$$(date +%Y%m%d).json && \
	python3 Tests/Torture/soak_torture.py --bin-dir $(BIN_DIR) --minutes $(TORTURE_SOAK_MINUTES) --json $$json && \
	$(MAKE) --no-print-directory soak-plot SOAK_JSON=$$json
	@$(MAKE) --no-print-directory -j3 --output-sync=target fuzz FUZZ_SECONDS=600

# Installs the binaries, their man pages and shell completions, the units (system and user), the
# polkit rule that lets the fetchd user start its planned timers, the default config (an existing
# config is kept) and the example handler files (to copy into /etc/fetchd/handlers.d; none is
# enabled by installing). Then: systemd-sysusers; systemctl daemon-reload;
# systemctl enable --now fetchd.target. `make deb` packages what this
# installs with PREFIX=/usr. bash sources its completion files, so the generated script's
# #!/bin/bash line is dropped.
# Units and the sysusers entry go where systemd reads them: under PREFIX, or, with PREFIX=/usr
# (a package), the folders systemd's pkg-config file names (Debian 12: /lib/systemd/system, the
# only folder its dh_installsystemd reads; later releases: /usr/lib/systemd/system).
ifeq ($(patsubst %/,%,$(PREFIX)),/usr)
SYSTEMD_PC = $(shell pkg-config --variable=$(1) systemd 2>/dev/null)
SYSTEM_UNIT_DIR ?= $(or $(call SYSTEMD_PC,systemdsystemunitdir),/usr/lib/systemd/system)
USER_UNIT_DIR ?= $(or $(call SYSTEMD_PC,systemduserunitdir),/usr/lib/systemd/user)
SYSUSERS_DIR ?= $(or $(call SYSTEMD_PC,sysusersdir),/usr/lib/sysusers.d)
else
SYSTEM_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
USER_UNIT_DIR ?= $(PREFIX)/lib/systemd/user
SYSUSERS_DIR ?= $(PREFIX)/lib/sysusers.d
endif
# fetchd-runas is started by its unit only, never by a person: a program folder, not bin.
LIBEXEC_DIR ?= $(PREFIX)/libexec/fetchd
# polkit reads rules only from /usr/share/polkit-1/rules.d and /etc/polkit-1/rules.d, whatever PREFIX.
POLKIT_RULES_DIR ?= /usr/share/polkit-1/rules.d
# polkit reads the actions its callers ask about only from here, whatever PREFIX.
POLKIT_ACTIONS_DIR ?= /usr/share/polkit-1/actions
# The optimised build, as a service should run it (`make install` installs this one).
release: deps
	$(RELEASE_BUILD) --product fetchd
	$(RELEASE_BUILD) --product fetchctl
	$(RELEASE_BUILD) --product fetchd-runas

# Shell completions, written by swift-argument-parser from the commands themselves, where each
# shell's packaged completions live.
COMPLETION_DIRS := $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	$(DESTDIR)$(PREFIX)/share/zsh/vendor-completions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d

MAN_DIR = $(DESTDIR)$(PREFIX)/share/man
# The D-Bus API's interface description, system bus policy and activation files.
DBUS_DIR = $(PREFIX)/share/dbus-1

install: release man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)/etc/fetchd/handlers.d $(DESTDIR)$(SYSTEM_UNIT_DIR) \
		$(DESTDIR)$(USER_UNIT_DIR) $(DESTDIR)$(SYSUSERS_DIR) $(DESTDIR)$(POLKIT_RULES_DIR) $(COMPLETION_DIRS)
	for page in $(MAN_PAGES); do section=$${page##*.}; \
		install -d $(MAN_DIR)/man$$section && install -m 0644 $$page $(MAN_DIR)/man$$section/ || exit 1; done
	install -m 0644 systemd/60-fetchd.rules $(DESTDIR)$(POLKIT_RULES_DIR)/60-fetchd.rules
	install -m 0644 systemd/fetchd.sysusers $(DESTDIR)$(SYSUSERS_DIR)/fetchd.conf
	release=$$($(RELEASE_BUILD) --show-bin-path) && \
	install -m 0755 $$release/fetchd $$release/fetchctl $(DESTDIR)$(PREFIX)/bin/ && \
	install -D -m 0755 $$release/fetchd-runas $(DESTDIR)$(LIBEXEC_DIR)/fetchd-runas && \
	for tool in fetchd fetchctl; do \
		$$release/$$tool --generate-completion-script bash | sed '1{/^#!/d}' \
			> $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$tool && \
		$$release/$$tool --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_$$tool && \
		$$release/$$tool --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/$$tool.fish \
		|| exit 1; \
	done
	for unit in systemd/*.service systemd/*.socket systemd/*.timer systemd/*.target; do \
		sed 's#@bindir@#$(PREFIX)/bin#g; s#@libexecdir@#$(LIBEXEC_DIR)#g' $$unit > $(DESTDIR)$(SYSTEM_UNIT_DIR)/$$(basename $$unit); done
	for unit in systemd/user/*; do \
		sed 's#@bindir@#$(PREFIX)/bin#g' $$unit > $(DESTDIR)$(USER_UNIT_DIR)/$$(basename $$unit); done
	chmod 0644 $(DESTDIR)$(SYSTEM_UNIT_DIR)/fetchd* $(DESTDIR)$(USER_UNIT_DIR)/fetchd*
	[ -e $(DESTDIR)/etc/fetchd/fetchd.toml ] || install -m 0644 config/fetchd.toml $(DESTDIR)/etc/fetchd/fetchd.toml
	install -d $(DESTDIR)$(PREFIX)/share/doc/fetchd/examples
	install -m 0644 config/handlers.d/*.toml $(DESTDIR)$(PREFIX)/share/doc/fetchd/examples/
	install -m 0644 examples/python/fetchd-client.py $(DESTDIR)$(PREFIX)/share/doc/fetchd/examples/
	install -m 0644 examples/alerts/fetchd-alert-notify examples/alerts/fetchd-alert-journal \
		$(DESTDIR)$(PREFIX)/share/doc/fetchd/examples/
	install -d $(DESTDIR)$(PREFIX)/share/doc/fetchd/examples/swift/Sources/fetchd-swift-client
	install -m 0644 examples/swift/Package.swift $(DESTDIR)$(PREFIX)/share/doc/fetchd/examples/swift/
	install -m 0644 examples/swift/Sources/fetchd-swift-client/*.swift \
		$(DESTDIR)$(PREFIX)/share/doc/fetchd/examples/swift/Sources/fetchd-swift-client/
	install -m 0644 docs/threat-model.md docs/security-notes.md docs/planned-timer.md $(DESTDIR)$(PREFIX)/share/doc/fetchd/
	install -D -m 0644 systemd/dbus/org.fetchd.Fetchd1.xml $(DESTDIR)$(DBUS_DIR)/interfaces/org.fetchd.Fetchd1.xml
	install -D -m 0644 systemd/dbus/org.fetchd.Fetchd1.conf $(DESTDIR)$(DBUS_DIR)/system.d/org.fetchd.Fetchd1.conf
	install -D -m 0644 systemd/dbus/system-services/org.fetchd.Fetchd1.service $(DESTDIR)$(DBUS_DIR)/system-services/org.fetchd.Fetchd1.service
	install -D -m 0644 systemd/dbus/services/org.fetchd.Fetchd1.service $(DESTDIR)$(DBUS_DIR)/services/org.fetchd.Fetchd1.service
	install -D -m 0644 systemd/dbus/org.fetchd.Fetchd1.policy $(DESTDIR)$(POLKIT_ACTIONS_DIR)/org.fetchd.Fetchd1.policy

# The Debian package, from this tree, offline: dpkg-buildpackage runs debian/rules, whose build
# and install steps are `make release man` and `make install DESTDIR=debian/fetchd PREFIX=/usr`;
# debhelper adds the maintainer scripts, Depends: from the binaries' libraries, and compresses
# the pages. The release build runs first, here, with the caller's HOME (SwiftPM's caches, git's
# configuration). lintian must find no error and no warning that debian/fetchd.lintian-overrides
# does not explain. Writes .build/deb/fetchd_VERSION-REVISION_ARCH.deb (and fetchd-dbgsym_*.deb).
DEB_PACKAGES := debhelper dpkg-dev lintian systemd
DEB_DIR := .build/deb
SWIFTPM_FOLDERS = --cache-path $(HOME)/.cache/org.swift.swiftpm --config-path $(HOME)/.swiftpm/configuration \
	--security-path $(HOME)/.swiftpm/security
deb: release man
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEB_PACKAGES)"
	@changelog=$$(dpkg-parsechangelog -S Version); if [ "$${changelog%-*}" != "$(VERSION)" ]; then \
		echo "debian/changelog's newest entry is $$changelog, but Defaults.swift says $(VERSION):" \
			"add an entry for $(VERSION)-1 (dch -v $(VERSION)-1)" >&2; exit 1; fi
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)
	SWIFTPM_FOLDERS="$(SWIFTPM_FOLDERS)" DEB_OUT_DIR=$(CURDIR)/$(DEB_DIR) dpkg-buildpackage --build=binary \
		--no-sign --buildinfo-option=-u$(DEB_DIR) --changes-option=-u$(DEB_DIR) \
		--buildinfo-file=$(DEB_DIR)/fetchd.buildinfo --changes-file=$(DEB_DIR)/fetchd.changes
	lintian --fail-on error,warning $(DEB_DIR)/fetchd_*.deb
	@ls -l $(DEB_DIR)/*.deb

# Removes what `make install` put in place (same DESTDIR and PREFIX). The configuration in
# /etc/fetchd, the state in /var/lib/fetchd and the snapshots in /var/cache/fetchd stay: remove
# them by hand if wanted. Stop and disable the units first:
# systemctl disable --now fetchd.target
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/fetchd $(DESTDIR)$(PREFIX)/bin/fetchctl $(DESTDIR)$(LIBEXEC_DIR)/fetchd-runas
	rmdir $(DESTDIR)$(LIBEXEC_DIR) 2>/dev/null || true
	for tool in fetchd fetchctl; do rm -f $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$tool \
		$(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_$$tool \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/$$tool.fish; done
	for unit in systemd/*.service systemd/*.socket systemd/*.timer systemd/*.target; do rm -f $(DESTDIR)$(SYSTEM_UNIT_DIR)/$$(basename $$unit); done
	for unit in systemd/user/*; do rm -f $(DESTDIR)$(USER_UNIT_DIR)/$$(basename $$unit); done
	rm -f $(DESTDIR)$(SYSUSERS_DIR)/fetchd.conf $(DESTDIR)$(POLKIT_RULES_DIR)/60-fetchd.rules \
		$(DESTDIR)$(POLKIT_ACTIONS_DIR)/org.fetchd.Fetchd1.policy
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/fetchd
	rm -f $(DESTDIR)$(DBUS_DIR)/interfaces/org.fetchd.Fetchd1.xml $(DESTDIR)$(DBUS_DIR)/system.d/org.fetchd.Fetchd1.conf \
		$(DESTDIR)$(DBUS_DIR)/system-services/org.fetchd.Fetchd1.service $(DESTDIR)$(DBUS_DIR)/services/org.fetchd.Fetchd1.service
	for page in $(MAN_PAGES); do rm -f $(MAN_DIR)/man$${page##*.}/$$(basename $$page); done

clean:
	rm -rf .build $(RUN_DIR) debian/.debhelper debian/fetchd debian/files debian/*.debhelper debian/*.debhelper.log \
		debian/*.substvars debian/debhelper-build-stamp
