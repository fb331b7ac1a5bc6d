#!/usr/bin/env bash
# make test: all three tiers, one line per step with the time since it started. What a step prints (apt, the
# compiler, each test) goes to .build/test-logs/STEP.log; a tier's line gives its count and any failed test, and a
# failing step shows the end of its log. Each tier of `swift test` runs under a time limit (scripts/test-tier.sh).
# Ends with the line counting every test of all tiers.
# Usage: test.sh (as root). TEST_WIDTH: the most tests one test process runs at once; FUZZ_SECONDS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cd "$root"
STEPS_NAME=test STEPS_LOGS=.build/test-logs STEPS_TAIL=60
source "$here/steps.sh"
width=${TEST_WIDTH:?}
results=.build/test-output.log

step "installing the packages, virtme-ng and the rig's kernel" deps.log make --no-print-directory deps
step "building blepay and its tests (debug)" build.log swift build --build-tests
bin=$(swift build --show-bin-path)
rm -f "$results" .build/test-hangs.txt
# The release build behind the packages (some 20 minutes) runs beside the tiers up to the rig's, which spend most of
# their time waiting (the crash tests sleep until each kill, the contract on HTTP round trips); at nice 19 it only
# takes the CPU they leave. The rig's tests need the packages and all of the CPU, so they wait for it.
say "building the Debian packages (release) beside the tests below (output in $STEPS_LOGS/deb.log)"
setsid nice -n 19 make --no-print-directory deb > "$STEPS_LOGS/deb.log" 2>&1 < /dev/null &
deb=$!
trap 'kill -- -$deb 2>/dev/null || true' EXIT

# tier NAME LIMIT_SECONDS ARGUMENTS…: `swift test --skip-build ARGUMENTS…` as one step; then its closing line and
# every failed test. A failed tier ends with each issue its tests recorded (swift-testing's "✘ Test … recorded an
# issue", XCTest's "error: …"), after the end of its log.
tier() {
  local name=$1 limit=$2 status=0
  shift 2
  attempt "the $name tests" "$name.log" bash "$here/test-tier.sh" "$name" "$limit" "$results" \
    swift test --skip-build "$@" || status=$?
  grep -aE '^(✔|✘) Test run with|^✘ Test ' "$STEPS_LOGS/$name.log" | cut -c1-300 | head -n 40 | sed 's/^/  /' || true
  if grep -qs "^$name:" .build/test-hangs.txt; then
    echo "  the $name tests hung (their stacks were kept) and ran again:"
    grep "^$name:" .build/test-hangs.txt | sed 's/^/  /'
  fi
  ((status == 0)) || failed "$name.log" '^✘ Test .*recorded an issue|^ *↳ |^[^ ]*: error: |^✘ Test .*failed after'
}

# The pure and real-D-Bus tests; the BLE link layer against the stand-in bluetoothd and the crash tests each on
# their own (the ledgers, PostgreSQL and the thousand crashed processes of the others would starve its bounded waits
# on a 2-core machine); then real BlueZ in the virtual BLE rig, both topologies, the two-hosts payment on the
# packages just built, installed where no toolchain is visible.
tier unit 600 $width --skip RigTests --skip CrashTests --skip BlepayBLETests
tier ble 300 --filter BlepayBLETests
tier crash 1200 $width --filter CrashTests
step "the ledger's HTTP API against its OpenAPI document" contract.log bash "$here/contract.sh" "$bin/blepay-ledger"
tail -n 3 "$STEPS_LOGS/contract.log" | sed 's/^/  /'
step "the systemd units" units.log bash "$here/check-units.sh" "$bin"
attempt "waiting for the Debian packages" deb-wait.log wait "$deb" || failed deb.log
# The rig's tests one at a time: each boots one or two VMs under emulation, and two at once on two cores slowed the
# packaged payment past its 540 s.
BLEPAY_LOOPBACK=$bin/blepay-loopback tier rig 2700 --no-parallel --filter RigTests
step "fuzzing the protocol decoders for ${FUZZ_SECONDS:-60} s" fuzz.log bash "$here/fuzz.sh" "${FUZZ_SECONDS:-60}"
tail -n 2 "$STEPS_LOGS/fuzz.log" | sed 's/^/  /'
bash "$here/test-summary.sh" "$results"
