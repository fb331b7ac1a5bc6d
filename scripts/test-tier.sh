#!/usr/bin/env bash
# Runs one tier of `swift test` under a time limit. A run still going at the limit has hung (every tier finishes in
# a fraction of its limit): the tests it started and never ended and every thread's stack (gdb) are printed and kept
# in .build/hang-NAME-N.txt, the run's process group is killed, and the tier runs once more. Only the run that ended
# is appended to LOG, so that the closing count (test-summary.sh) counts each test once; a hang is noted in
# .build/test-hangs.txt, which make test prints under the tier's line.
# Usage: scripts/test-tier.sh NAME LIMIT_SECONDS LOG COMMAND…
set -uo pipefail
name=$1 limit=$2 log=$3
shift 3
mkdir -p .build

# descendants PID: its children, theirs, and so on (the tests' own children run in process groups of their own).
descendants() {
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}

# report ATTEMPT OUTPUT GROUP: what a hung run was doing.
report() {
  local file=.build/hang-$name-$1.txt started finished
  started=$(grep -aoE '◇ Test [^ ]+ started' "$2" | sed -E 's/^◇ Test //; s/ started$//' | sort -u)
  finished=$(grep -aoE '(✔|✘) Test [^ ]+ ' "$2" | sed -E 's/^(✔|✘) Test //; s/ $//' | sort -u)
  {
    echo "== tests started and never ended"
    comm -23 <(echo "$started") <(echo "$finished")
    for pid in $3 $(descendants "$3"); do
      command=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)
      echo "== $pid $command"
      if [[ $command == *.xctest* ]]; then
        timeout 120 gdb -p "$pid" -batch -ex "thread apply all bt 30" 2>/dev/null | grep -E '^(Thread|#)'
      fi
    done
  } > "$file"
  echo "test-tier: $name still running after ${limit}s (attempt $1); its unfinished tests and stacks are in $file:"
  sed -n '/^== tests started/,/^== /p' "$file" | head -40
  # The frames of blepay's own code, most telling first.
  grep -E '^(Thread|#.* in .*(Blepay|BlueZ|DBus|TestSupport|Tests|Test[A-Z]))' "$file" | head -80
  echo "$name: hung after ${limit}s at attempt $1 ($file)" >> .build/test-hangs.txt
}

for attempt in 1 2; do
  output=.build/tier-$name-$attempt.log
  : > "$output"
  setsid "$@" > "$output" 2>&1 &
  group=$!
  tail -n +1 -f --pid="$group" "$output" &
  follower=$!
  start=$SECONDS
  while kill -0 "$group" 2>/dev/null && ((SECONDS - start < limit)); do sleep 2; done
  if kill -0 "$group" 2>/dev/null; then
    report "$attempt" "$output" "$group"
    kill -KILL -- -"$group" $(descendants "$group") 2>/dev/null
    wait "$group" 2>/dev/null
    wait "$follower" 2>/dev/null
    continue
  fi
  wait "$group"
  status=$?
  wait "$follower" 2>/dev/null
  cat "$output" >> "$log"
  exit "$status"
done
echo "test-tier: $name hung twice" >&2
exit 1
