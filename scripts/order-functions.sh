#!/usr/bin/env bash
# Lays out the code each program runs together. Runs the release programs under callgrind through their start and
# some use, and writes the functions they ran to scripts/order/PROGRAM.ld: a linker script that the release link
# (Package.swift, `programLinking`) uses to place them ahead of the rest of .text. Start-up otherwise touches code
# all over the binary, and the kernel maps 64 KB around each page it faults in: the peak RSS is mostly that.
# Release builds put each function in a section of its own (Makefile, RELEASE), so that the linker can move it.
#
# What each program does under callgrind:
#   blepay-ledger  serve on a fresh SQLite ledger; 50 complete payments (the Benchmarks package's LedgerLoad)
#   blepayd        its process tests (DaemonProcessTests): business and customer on a private bus with the stand-in
#                  bluetoothd and a real ledger, started, called, reloaded and stopped; what only a peer over the air
#                  makes it run (the transport's data path, a payment's) is not in the profile and stays where it is
#   blepayctl      --help, --version, and its tests against daemons (BlepayctlTests, VoucherControlTests)
#
# Run it again when the code has changed much: a listed function that is gone is skipped, and a new one is laid out
# with the rest of .text. SwiftPM relinks a program when its objects change, not its linker script: the script removes
# the programs from BIN_DIR, so that the next `make programs` links them with the new profiles.
# Usage: scripts/order-functions.sh BIN_DIR (the release binaries, `make programs`)
set -euo pipefail
# The lists are sorted, and compared, byte by byte.
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:?usage: order-functions.sh BIN_DIR}" && pwd)
work=$(mktemp -d)
ledger=
cleanup() {
  [[ -z $ledger ]] || kill -TERM "$ledger" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "order-functions: $*" >&2; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is not installed"

swift build -c release --package-path "$root/Benchmarks" --scratch-path "$root/Benchmarks/.build" --product LedgerLoad \
  >"$work/build.log" 2>&1 || fail "building LedgerLoad: $(tail -5 "$work/build.log")"
load=$root/Benchmarks/.build/release/LedgerLoad

# callgrind cannot read the binaries' debug information; their symbols are enough.
for program in blepay-ledger blepayd blepayctl; do strip --strip-debug -o "$work/$program" "$bin/$program"; done
# Each run's profile goes to $work/NAME.cg (NAME may hold %p, the process's id); mangled names are what nm lists.
callgrind=(valgrind --tool=callgrind --demangle=no)
# await SECONDS COMMAND…: until COMMAND succeeds.
await() {
  local seconds=$1
  shift
  for _ in $(seq $((seconds * 2))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  return 1
}

port=$((20000 + RANDOM % 40000))
url=http://127.0.0.1:$port
"${callgrind[@]}" --callgrind-out-file="$work/ledger.cg" "$work/blepay-ledger" serve --port "$port" \
  --state-directory "$work/ledger" >"$work/ledger.log" 2>&1 &
ledger=$!
await 120 curl -sf "$url/v1/health" || fail "the ledger did not start: $(tail -5 "$work/ledger.log")"
"$load" payments --url "$url" --admin-token-file "$work/ledger/admin.token" --payments 40 --warm-up 10 \
  --concurrency 4 >"$work/load.log" 2>&1 || fail "the payments failed: $(tail -5 "$work/load.log")"
kill -TERM "$ledger"
wait "$ledger" || fail "the ledger did not stop cleanly: $(tail -5 "$work/ledger.log")"
ledger=

# The daemons and blepayctl as their process tests run them (a private bus, the stand-in bluetoothd, a real ledger:
# start, control calls, requests, a reload, stops), each run under callgrind through a wrapper the tests are given
# in place of the program. A test may fail at callgrind's pace; the profiles are what is wanted here.
swift build --package-path "$root" --build-tests >"$work/build-tests.log" 2>&1 ||
  fail "building the tests: $(tail -5 "$work/build-tests.log")"
for program in blepayd blepayctl; do
  printf '#!/bin/sh\nexec %s --log-file=%s --callgrind-out-file=%s %s "$@"\n' "${callgrind[*]}" \
    "$work/$program.%p.log" "$work/$program.%p.cg" "$work/$program" >"$work/$program.callgrind"
  chmod +x "$work/$program.callgrind"
done
(cd "$root" && BLEPAYD=$work/blepayd.callgrind swift test --skip-build --filter DaemonProcessTests) \
  >"$work/blepayd-tests.log" 2>&1 || true
(cd "$root" && BLEPAYCTL=$work/blepayctl.callgrind swift test --skip-build \
  --filter 'BlepayctlTests|VoucherControlTests') >"$work/blepayctl-tests.log" 2>&1 || true
for flag in help version; do
  "${callgrind[@]}" --callgrind-out-file="$work/blepayctl-$flag.cg" "$work/blepayctl" "--$flag" >/dev/null 2>&1
done

# write PROGRAM PROFILE…: the functions the profiles ran that the program has, as a linker script.
write() {
  local program=$1
  shift
  local out=$root/scripts/order/$program.ld
  mkdir -p "$(dirname "$out")"
  {
    echo "/* The functions $program ran at start and in use, laid out together."
    echo " * Written by scripts/order-functions.sh; used by Package.swift's programLinking. */"
    echo "SECTIONS"
    echo "{"
    echo "  .text.blepay.startup : {"
    # fn= and cfn= lines name every function that ran (the first time with an id, later by the id alone); only
    # those defined in the program itself can be placed.
    sed -En 's/^c?fn=\([0-9]+\) (.+)$/\1/p' "$@" | sort -u |
      comm -12 - <(nm --defined-only "$work/$program" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u) |
      grep -E '^[A-Za-z0-9_$.]+$' | sed 's/.*/    *(.text.&)/'
    echo "  }"
    echo "}"
    echo "INSERT BEFORE .text;"
  } >"$out"
  echo "order-functions: $program: $(grep -c '^    \*' "$out") functions in ${out#"$root"/}"
}
for program in blepayd blepayctl; do
  compgen -G "$work/$program.*.cg" >/dev/null ||
    fail "no run of $program was profiled: $(tail -20 "$work/$program-tests.log")"
done
write blepay-ledger "$work/ledger.cg"
write blepayd "$work"/blepayd.*.cg
write blepayctl "$work"/blepayctl.*.cg "$work/blepayctl-help.cg" "$work/blepayctl-version.cg"
rm -f "$bin/blepay-ledger" "$bin/blepayd" "$bin/blepayctl"
echo "order-functions: removed the programs from $bin; \`make programs\` links them with these profiles"
