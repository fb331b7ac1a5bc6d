#!/usr/bin/env bash
# A payment made while the business cannot reach the ledger, run on each host of the rig's two-hosts topology
# (rig.sh). Host a runs the ledger and the customer daemon, which holds a voucher; host b runs the business daemon
# and takes its point-to-point link, its only way to the ledger, down:
#   b: link down, then blepayctl request 12.00 USD        a: blepayctl accept <id> --tip 0.50
#   both sides finish it pending settlement; b: link up; the business settles it; a: the ledger's books say so.
# Both hosts record their daemon's events and what the ledger and the business's queue say into $BLEPAY_RIG_OUT.
# Usage (inside the rig): rig-offline.sh BIN_DIR
set -euo pipefail
source "$(dirname "$0")/rig-lib.sh"
install_blepay "$1"

case $host in
a)
  start_ledger
  merchant=$(account merchant "Café Zürich")
  customer=$(account customer Alice)
  echo "$merchant" | json '["id"]' | put merchant.id
  echo "$merchant" | json '["enrollmentToken"]' | put merchant.token
  configure /etc/blepay/customer.toml customer "http://[::1]:8480" "$(echo "$customer" | json '["enrollmentToken"]')"
  start customer customer "$(ready_check org.blepay.Customer hci0 ActiveInstances)"
  await "blepayctl payments --customer" 60 || fail "the customer daemon did not start"
  blepayctl watch --customer --json > "$out/a.events.jsonl" &
  fund_card
  blepayctl voucher obtain 40.00 USD --hours 2 --json > "$out/voucher.json"
  touch "$out/a.ready"

  await "[ -f '$out/pay.id' ]" 300 || fail "no payment request from b"
  id=$(cat "$out/pay.id")
  await "seen receivedPayment $id" 120 || fail "payment $id was never shown"
  blepayctl accept "$id" --tip 0.50 > "$out/accept.txt"
  await "seen finishedPayment $id" 120 || fail "payment $id did not finish"

  await "[ -f '$out/b.done' ]" 300 || fail "host b did not finish"
  blepayctl instruments --json > "$out/instruments.after.json"
  blepayctl voucher --json > "$out/vouchers.after.json"
  admin GET "/v1/accounts/$(cat "$out/merchant.id")" > "$out/merchant.after.json"
  stop customer
  blepay-ledger audit --config /etc/blepay/ledger.toml > "$out/audit.txt" 2>&1 || true
  stop ledger
  ;;
b)
  link=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
  await "[ -f '$out/merchant.token' ]" 240 || fail "no ledger on host a"
  configure /etc/blepay/business.toml business "http://[$BLEPAY_RIG_PEER_ADDR]:8480" "$(cat "$out/merchant.token")"
  printf '[offline]\ncurrency = "USD"\nsettle_interval_seconds = 2\n' >> /etc/blepay/business.toml
  start business business "$(ready_check org.blepay.Business hci0 Discovering)"
  await "blepayctl payments --business" 120 || fail "the business daemon did not start"
  blepayctl watch --business --json > "$out/b.events.jsonl" &
  await "[ -f '$out/a.ready' ]" 300 || fail "host a is not ready"

  log "taking $link, the way to the ledger, down"
  ip link set "$link" down
  await "blepayctl settlement --json | grep -q '\"ledger_reachable\":false'" 120 \
    || fail "the business never found the ledger gone"
  id=$(blepayctl request 12.00 USD --reference order-201)
  echo "$id" | put pay.id
  await "seen finished $id" 180 || fail "payment $id did not finish offline"
  blepayctl settlement --json > "$out/settlement.offline.json"

  log "bringing $link back"
  ip link set "$link" up
  ip -6 addr replace "fd00:b1e::b/64" dev "$link" nodad
  await "seen settled $id" 180 || fail "payment $id was not settled"
  blepayctl settlement --now --json > "$out/settlement.after.json"
  touch "$out/b.done"
  stop business
  ;;
esac
log "done"
