#!/usr/bin/env bash
# make demo: real payments between blepay's daemons in the virtual BLE rig, each daemon's events printed as they
# happen. First two machines (the ledger and a customer on host a, a business on host b; scripts/rig-payment.sh):
# a payment with a tip, partly refunded by the business, a request the business cancels and, after bluetoothd
# restarted on b, one the customer declines; then both daemons restart. Then one machine with three adapters
# (scripts/rig-broadcast.sh): one request shown to two customers, one pays and the other gets otherPaid; again after
# bluetoothd restarts, and again after two adapters power-cycle; then alice's daemon and the business's stop
# (SIGTERM) with a request open, which each cancels as it stops. Last, two machines again (scripts/rig-offline.sh):
# with the business cut off from the ledger the customer executes the payment; with the customer cut off the
# business does; with both cut off the customer pays under a voucher, both finish it pending settlement, and once
# the business's link is back it settles it. It ends with the business's day report and the customer's history from
# the first two machines, as each daemon showed them after its restart.
# It installs only what the rig needs and builds first. Every line starts with the time since the demo started;
# what apt and the compiler print goes to .build/demo-*.log. Usage: demo.sh (as root; `make demo`)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
work=$(mktemp -d /tmp/blepay-demo.XXXXXX)
followers=()
trap 'kill "${followers[@]}" 2>/dev/null || true' EXIT
STEPS_NAME=demo STEPS_LOGS=$root/.build
source "$here/steps.sh"
start=$steps_start

build() {
  local product
  for product in blepayd blepayctl blepay-ledger blepay-loopback; do
    swift build --package-path "$root" --product "$product" || return 1
  done
}

# follow LABEL FILE: prints each event the daemon writes to FILE (blepayctl watch --json), labelled, as it comes.
follow() {
  tail -n +1 -F "$2" 2>/dev/null | python3 -u "$here/demo-follow.py" events "$1" "$start" &
  followers+=($!)
}

# scenario TITLE OUT HOSTS RIG-ARGUMENTS…: runs the rig with its console in OUT.rig.log, saying what it waits for
# while the VMs (HOSTS, e.g. "a b") boot; fails loudly if it fails.
scenario() {
  local title=$1 out=$2 hosts=$3 rig progress began=$SECONDS
  shift 3
  echo
  say "== $title"
  : > "$out.rig.log"
  tail -n +1 -F "$out.rig.log" 2>/dev/null | python3 -u "$here/demo-follow.py" rig "$hosts" "$start" &
  progress=$!
  "$here/rig.sh" --out "$out" --timeout 600 "$@" >> "$out.rig.log" 2>&1 && rig=0 || rig=$?
  sleep 1
  kill "$progress" 2>/dev/null || true
  if ((rig != 0)); then
    echo "demo: the scenario failed; the rig's output is in $out.rig.log" >&2
    exit 1
  fi
  say "scenario done in $((SECONDS - began)) s"
}

step "installing the packages the rig needs, virtme-ng and its virtual controller" demo-deps.log \
  bash "$here/install-deps.sh" --demo
step "building blepayd, blepayctl, blepay-ledger and blepay-loopback" demo-build.log build
bin=$(swift build --package-path "$root" --show-bin-path)

mkdir -p "$work/two" "$work/one"
follow "host b · business" "$work/two/b.events.jsonl"
follow "host a · customer" "$work/two/a.events.jsonl"
scenario "Two machines: pay 25.50 USD with a 1.00 tip, refund 10.00 of it, then a cancellation by each side" "$work/two" \
  "a b" two-hosts --host-a "bash $here/rig-payment.sh $bin" --host-b "bash $here/rig-payment.sh $bin"
python3 - "$work/two" <<'PY'
import json, sys
out = sys.argv[1]
before = json.load(open(out + "/instruments.before.json"))["available"]["USD"]
after = json.load(open(out + "/instruments.after.json"))["available"]["USD"]
refunded = json.load(open(out + "/instruments.refunded.json"))["available"]["USD"]
print("  ledger: the customer's card went from %.2f to %.2f USD, and back to %.2f with the refund" % (
    before / 100, after / 100, refunded / 100))
PY

follow "business (hci0)" "$work/one/business.events.jsonl"
follow "alice (hci1)" "$work/one/alice.events.jsonl"
follow "bob (hci2)" "$work/one/bob.events.jsonl"
scenario "One machine, two customers: alice pays, bob gets otherPaid; a hostile central storms a customer; bluetoothd restarts; bob pays; two adapters power-cycle; alice pays; alice and the business stop with a request open" \
  "$work/one" one one-host --controllers 4 -- "bash $here/rig-broadcast.sh $bin"
mkdir -p "$work/offline"
follow "host b · business" "$work/offline/b.events.jsonl"
follow "host a · customer" "$work/offline/a.events.jsonl"
scenario "Two machines cut off from the ledger: the business (the customer executes), the customer (the business does), both (a voucher; settled once back)" \
  "$work/offline" "a b" two-hosts --host-a "bash $here/rig-offline.sh $bin" --host-b "bash $here/rig-offline.sh $bin"
python3 - "$work/offline" <<'PY'
import json, sys
out = sys.argv[1]
offline = json.load(open(out + "/settlement.offline.json"))
after = json.load(open(out + "/settlement.after.json"))
merchant = json.load(open(out + "/merchant.after.json"))
posted = next(b["posted"] for b in merchant["balances"] if b["currency"] == "USD")
print("  business, both cut off: %d payment waiting (%.2f USD), ledger reachable: %s" % (
    offline["waiting"], offline["totals"].get("USD", 0) / 100, offline["ledger_reachable"]))
print("  business, link back: %d waiting; ledger: the merchant was credited %.2f USD in all" % (after["waiting"], posted / 100))
PY
echo
say "== The business's day (blepayctl report), after its restart"
sed 's/^/  /' "$work/two/b.report.txt"
echo
say "== The customer's history (blepayctl payments), after its restart"
sed 's/^/  /' "$work/two/a.history.txt"
echo
say "demo: done (everything the daemons wrote is in $work)"
