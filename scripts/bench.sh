#!/usr/bin/env bash
# Runs the GATT (over D-Bus and through bluetoothd's sockets) and L2CAP loopback in the one-host rig with timing on, and prints the 'bench:' lines.
# Usage: scripts/bench.sh LOOPBACK_BINARY [ROUND_TRIPS]
set -euo pipefail
# The air as a product has it: no btmon, no bluetoothd debug log (the goals' conditions).
export BLEPAY_RIG_QUIET=1
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: bench.sh LOOPBACK_BINARY [ROUND_TRIPS]}
trips=${2:-200}
out=$(mktemp -d /tmp/blepay-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

# Output goes to files in the shared directory, so only the bench lines reach the terminal.
"$here/rig.sh" --out "$out" --timeout 900 one-host --controllers 2 -- "
  $bin peripheral --adapter hci0 --timeout 600 --bench --l2cap-psm 129 > \"\$BLEPAY_RIG_OUT/peripheral.out\" 2>&1 & p=\$!
  sleep 2
  $bin central --adapter hci1 --timeout 300 --round-trips $trips --bench --gatt-sockets --l2cap-psm 129 > \"\$BLEPAY_RIG_OUT/central.out\" 2>&1; c=\$?
  wait \$p; s=\$?
  [ \$c -eq 0 ] && [ \$s -eq 0 ]" >"$out/rig.log" 2>&1 || {
  echo "bench: the loopback failed; rig output:" >&2
  cat "$out/rig.log" "$out"/*.out >&2 || true
  exit 1
}
# The goal for the channel: half the GATT round trip of a clean rig (20.6 ms; btmon and bluetoothd -d off).
grep -h '^bench: ' "$out/central.out" "$out/peripheral.out" |
  sed 's/^\(bench: l2cap-sdu-rtt-p50 .* ms\)$/\1; goal <= 10.3 ms (half the clean-rig GATT round trip)/'
