# blepay build, test and benchmark entry points. `make test` is the one command CI runs.
SWIFT ?= swift
BIN_PATH = $(shell $(SWIFT) build --show-bin-path)
# What ships: optimized, the Swift runtime and Foundation linked in (no toolchain on the target, no dynamic
# relocation of the runtime at each start), unused code stripped by the linker. Built in a folder of its own, so that
# `swift test` on the debug build (which waits for any build in its folder) runs while it builds (make test). Each
# function, Swift or C, the dependencies' too, in a section of its own: the link lays out what a program runs at start
# together (Package.swift, `programLinking`).
RELEASE = -c release --static-swift-stdlib --scratch-path .build-release \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections
RELEASE_BIN_PATH = $(shell $(SWIFT) build $(RELEASE) --show-bin-path)
LOOPBACK = $(BIN_PATH)/blepay-loopback
BENCH_ROUND_TRIPS ?= 200
LEDGER_BENCH_PAYMENTS ?= 8000
LEDGER_BENCH_SETTLEMENTS ?= 4000
DAEMON_BENCH_PAYMENTS ?= 50
DAEMON_BENCH_OFFLINE ?= 20
FUZZ_SECONDS ?= 60
# At most 16 tests at once in one test process. Unbounded, the pure and D-Bus tier peaked at 922 threads and 1,701
# open files (a dbus-daemon and several connections per test), and Foundation's `Process.run`, which reads every
# entry of /proc/self/fd, crashed the whole run past about 1,360 (and froze it for minutes while it printed the
# backtrace). Bounded, it peaks at 314 files and runs faster.
TEST_WIDTH = --experimental-maximum-parallelization-width 16
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c

.PHONY: all deps build test unit-test contract rig-test fuzz bench demo install programs deb clean

all: build

# Debian packages, virtme-ng, the kernel the rig boots, and a running PostgreSQL (idempotent; needs root).
deps:
	bash scripts/install-deps.sh
	bash scripts/postgres.sh

build:
	$(SWIFT) build --build-tests

# All three tiers (scripts/test.sh): the packages, the builds, then the pure and real-D-Bus tests; the BLE link
# layer against the stand-in bluetoothd, and the crash tests, each on their own; the ledger's API contract; then real
# BlueZ in the virtual BLE rig (both topologies; the two-hosts payment runs on `make deb`'s packages, installed where
# no toolchain is visible); fuzzing. One line per step, each step's output in .build/test-logs; ends with one line
# counting every test of all tiers.
test:
	TEST_WIDTH="$(TEST_WIDTH)" FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/test.sh

# Every tier but the rig (no VMs), split as `test` splits them.
unit-test: build
	$(SWIFT) test --skip-build $(TEST_WIDTH) --skip RigTests --skip CrashTests --skip BlepayBLETests
	$(SWIFT) test --skip-build --filter BlepayBLETests
	$(SWIFT) test --skip-build $(TEST_WIDTH) --filter CrashTests

# The ledger's HTTP API against docs/ledger-openapi.yaml (schemathesis), then its audit.
contract: build
	bash scripts/contract.sh $(BIN_PATH)/blepay-ledger

# Real payments between the daemons in the virtual BLE rig, each side's events printed as they happen (needs root);
# installs only what the rig needs and builds first, one line per step.
demo:
	bash scripts/demo.sh

# Only the real-BlueZ tier (it installs `make deb`'s packages), one test at a time as `make test` runs it.
rig-test: deps build deb
	BLEPAY_LOOPBACK=$(LOOPBACK) $(SWIFT) test --skip-build --no-parallel --filter RigTests

# Coverage-guided fuzzing of the protocol decoders and reassembler for FUZZ_SECONDS; fails on any crash.
fuzz:
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

# The Benchmarks package (codec against JSON, a payment's air use, payment sessions); the ledger's durable
# payments/s and latency over HTTP on SQLite and on PostgreSQL (two processes) beside the disk's raw SQLite
# transactions/s; then in the one-host topology: discovery, connection and GATT round-trip timings, and the
# peripheral's peak RSS; and the daemons with six adapters: discovery to the first request, request and accept
# latency over DAEMON_BENCH_PAYMENTS payments, one request to five customers, idle CPU and peak RSS, and with the ledger
# stopped the accept latency of DAEMON_BENCH_OFFLINE payments made under a voucher.
bench: deps
	bash scripts/bench-swift.sh
	$(SWIFT) build $(RELEASE) --product blepay-ledger
	bash scripts/bench-ledger.sh $(RELEASE_BIN_PATH)/blepay-ledger $(LEDGER_BENCH_PAYMENTS) 32 \
	  $(LEDGER_BENCH_SETTLEMENTS)
	$(SWIFT) build $(RELEASE) --product blepay-loopback
	bash scripts/bench.sh $(RELEASE_BIN_PATH)/blepay-loopback $(BENCH_ROUND_TRIPS)
	$(SWIFT) build $(RELEASE) --product blepayd
	$(SWIFT) build $(RELEASE) --product blepayctl
	bash scripts/bench-daemons.sh $(RELEASE_BIN_PATH) $(DAEMON_BENCH_PAYMENTS) "10 20" \
	  $(DAEMON_BENCH_OFFLINE)

# Release binaries, systemd units, sysusers, the D-Bus policy, sample configuration (kept if present), completions and
# docs; DESTDIR=/some/dir installs below it without touching the running system.
install: programs
	bash scripts/install.sh $(RELEASE_BIN_PATH)

# The release programs, product by product: a plain `swift build` builds every dependency's products as well, and
# GRDB's dynamic library does not link with the Swift runtime linked in statically.
programs:
	$(SWIFT) build $(RELEASE) --product blepayd
	$(SWIFT) build $(RELEASE) --product blepayctl
	$(SWIFT) build $(RELEASE) --product blepay-ledger

# Debian packages in .build/deb: blepay-ledger and blepay, the Swift runtime linked in (no toolchain on the host),
# then checked (scripts/check-deb.sh).
deb: programs
	bash scripts/deb.sh $(RELEASE_BIN_PATH) .build/deb
	bash scripts/check-deb.sh .build/deb

clean:
	rm -rf .build .build-release .build-fuzz Benchmarks/.build .rig-logs
