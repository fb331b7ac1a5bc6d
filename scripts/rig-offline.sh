#!/usr/bin/env bash
# Payments while one side, the other or both cannot reach the ledger, on each host of the rig's two-hosts topology
# (rig.sh). Host a runs the ledger and the customer daemon, which holds a voucher and reaches the ledger through
# an interface of its own (ledger0); host b runs the business daemon, whose only way to the ledger is its
# point-to-point link; it opens no L2CAP channel, so its sessions run over GATT through bluetoothd's sockets. One
# request per case, each accepted on a:
#   1. b's link down: the customer executes the payment (after the business's go-ahead); settled at once;
#   2. a's ledger0 down, b's link up: the business executes it, as online;
#   3. both down: it rides on the voucher, both sides finish it pending; b's link up: the business settles it.
# Both hosts record their daemon's events and what the ledger and the business's queue say into $BLEPAY_RIG_OUT.
# Usage (inside the rig): rig-offline.sh BIN_DIR
set -euo pipefail
source "$(dirname "$0")/rig-lib.sh"
install_blepay "$1"

# Waits for payment $2 to be shown, accepts it with tip $3 and waits for its end on this customer ($1: a label).
pay() {
  local id
  await "[ -f '$out/$1.id' ]" 300 || fail "no request $1 from b"
  id=$(cat "$out/$1.id")
  await "seen receivedPayment $id" 120 || fail "payment $1 ($id) was never shown"
  blepayctl accept "$id" --tip "$2" > "$out/$1.accept.txt" || fail "accepting payment $1 failed"
  await "seen finishedPayment $id" 120 || fail "payment $1 ($id) did not finish"
}

# Opens a request of $2 USD named $1 on this business, publishes its id and waits until it has finished.
request() {
  local id
  id=$(blepayctl request "$2" USD --reference "$1")
  echo "$id" | put "$1.id"
  await "seen finished $id" 180 || fail "payment $1 ($id) did not finish"
}

case $host in
a)
  # The customer's own way to the ledger, which it can lose without touching b's link.
  modprobe dummy 2>/dev/null || true
  ip link add ledger0 type dummy || fail "no dummy interface for the customer's ledger link"
  ip link set ledger0 up
  ip -6 addr add fd00:1ed::1/128 dev ledger0 nodad
  start_ledger
  merchant=$(account merchant "Café Zürich")
  customer=$(account customer Alice)
  echo "$merchant" | json '["id"]' | put merchant.id
  echo "$merchant" | json '["enrollmentToken"]' | put merchant.token
  configure /etc/blepay/customer.toml customer "https://[fd00:1ed::1]:8480" \
    "$(echo "$customer" | json '["enrollmentToken"]')"
  sed -i 's/^\[ledger\]$/[ledger]\nprobe_interval_seconds = 2/' /etc/blepay/customer.toml
  start customer customer "$(ready_check org.blepay.Customer hci0 ActiveInstances)"
  await "blepayctl payments --customer" 60 || fail "the customer daemon did not start"
  blepayctl watch --customer --json > "$out/a.events.jsonl" &
  fund_card
  blepayctl voucher obtain 40.00 USD --hours 2 --json > "$out/voucher.json"
  touch "$out/a.ready"

  pay business-offline 0.50

  log "taking ledger0, the customer's way to the ledger, down"
  ip link set ledger0 down
  await "grep -q 'the ledger is unreachable' '$out/a.customer.log'" 60 || fail "the customer never found the ledger gone"
  touch "$out/a.cut"
  pay customer-offline 0
  pay both-offline 0.50

  await "[ -f '$out/b.done' ]" 300 || fail "host b did not finish"
  ip link set ledger0 up
  ip -6 addr replace fd00:1ed::1/128 dev ledger0 nodad
  # Until the customer finds the ledger again it shows the instruments as the ledger last listed them.
  await "grep -q 'the ledger is reachable' '$out/a.customer.log'" 60 || fail "the customer never found the ledger back"
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
  configure /etc/blepay/business.toml business "https://[$BLEPAY_RIG_PEER_ADDR]:8480" "$(cat "$out/merchant.token")"
  printf '[offline]\ncurrency = "USD"\nsettle_interval_seconds = 2\n' >> /etc/blepay/business.toml
  # GATT here (the two-hosts payment runs over L2CAP): the sessions go through bluetoothd's GATT sockets.
  sed -i '/^adapter = /a l2cap = false' /etc/blepay/business.toml
  start business business "$(ready_check org.blepay.Business hci0 Discovering)"
  await "blepayctl payments --business" 120 || fail "the business daemon did not start"
  blepayctl watch --business --json > "$out/b.events.jsonl" &
  await "[ -f '$out/a.ready' ]" 300 || fail "host a is not ready"
  reachable() { blepayctl settlement --json | grep -q "\"ledger_reachable\":$1"; }
  link_up() {
    ip link set "$link" up
    ip -6 addr replace "fd00:b1e::b/64" dev "$link" nodad
  }

  log "taking $link, the business's way to the ledger, down"
  ip link set "$link" down
  await "reachable false" 120 || fail "the business never found the ledger gone"
  request business-offline 12.00

  link_up
  await "reachable true" 120 || fail "the business never found the ledger back"
  await "[ -f '$out/a.cut' ]" 120 || fail "host a did not cut its ledger link"
  request customer-offline 8.00

  log "taking $link down again: neither side reaches the ledger"
  ip link set "$link" down
  await "reachable false" 120 || fail "the business never found the ledger gone"
  request both-offline 12.00
  blepayctl settlement --json > "$out/settlement.offline.json"

  log "bringing $link back"
  link_up
  id=$(cat "$out/both-offline.id")
  await "seen settled $id" 180 || fail "payment $id was not settled"
  blepayctl settlement --now --json > "$out/settlement.after.json"
  touch "$out/b.done"
  stop business
  ;;
esac
log "done"
