#!/usr/bin/env bash
# A real payment between two machines, run on each host of the rig's two-hosts topology (rig.sh; the hosts share
# only the BLE air and a point-to-point IPv6 link). Host a runs the ledger and the customer daemon, host b the
# business daemon (rig-lib.sh).
#   b: blepayctl request 25.50 USD --reference order-123    a: blepayctl accept <id> --tip 1.00
#   then a request the business cancels, and, after b's bluetoothd restarted, one the customer declines.
# Host a's bluetoothd runs with Privacy and its customer daemon renews its identity every 20 s with a new address:
# the business finds it again under another address after the restart.
# Both hosts record their daemon's events (blepayctl watch --json) and what the ledger says into $BLEPAY_RIG_OUT,
# for the test to check. Usage (inside the rig): rig-payment.sh BIN_DIR
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

  configure /etc/blepay/customer.toml customer "$ledger_url" "$(echo "$customer" | json '["enrollmentToken"]')"
  sed -i '/^adapter = /a identity_lifetime_seconds = 20\nrenew_address = true' /etc/blepay/customer.toml
  printf '[General]\nPrivacy = device\n' > /etc/bluetooth/main.conf
  restart_bluetoothd
  start customer customer "$(ready_check org.blepay.Customer hci0 ActiveInstances)"
  await "blepayctl payments --customer" 60 || fail "the customer daemon did not start"
  # The identity in use when the business restarts bluetoothd is old enough to be replaced once the link drops:
  # counted from the first advertisement, which comes after the identity was made.
  await "grep -q 'serving and advertising' '$out/a.customer.log'" 60 || fail "the customer daemon never advertised"
  (sleep 25; touch "$out/a.identity-due") &
  blepayctl watch --customer --json > "$out/a.events.jsonl" &
  fund_card
  blepayctl instruments --json > "$out/instruments.before.json"
  touch "$out/a.ready"

  # The payment: shown, accepted with a tip, finished on both sides.
  await "[ -f '$out/pay1.id' ]" 240 || fail "no payment request from b"
  id=$(cat "$out/pay1.id")
  await "seen receivedPayment $id" 120 || fail "payment $id was never shown"
  blepayctl accept "$id" --tip 1.00 > "$out/accept.txt"
  await "seen finishedPayment $id" 120 || fail "payment $id did not finish"
  blepayctl instruments --json > "$out/instruments.after.json"
  admin GET "/v1/accounts/$(cat "$out/merchant.id")" > "$out/merchant.after.json"

  # A request the business cancels.
  await "[ -f '$out/pay2.id' ]" 120 || fail "no second request"
  await "seen receivedPayment $(cat "$out/pay2.id")" 120 || fail "the second request was never shown"
  touch "$out/pay2.shown"
  await "seen cancelled $(cat "$out/pay2.id")" 120 || fail "the second request was not cancelled"

  # A request the customer declines.
  await "[ -f '$out/pay3.id' ]" 120 || fail "no third request"
  await "seen receivedPayment $(cat "$out/pay3.id")" 120 || fail "the third request was never shown"
  blepayctl decline "$(cat "$out/pay3.id")"
  await "seen cancelled $(cat "$out/pay3.id")" 60 || fail "the third request was not declined"

  await "[ -f '$out/b.done' ]" 120 || fail "host b did not finish"
  stop customer
  blepay-ledger audit --config /etc/blepay/ledger.toml > "$out/audit.txt" 2>&1 || true
  stop ledger
  ;;
b)
  await "[ -f '$out/merchant.token' ]" 240 || fail "no ledger on host a"
  configure /etc/blepay/business.toml business "https://[$BLEPAY_RIG_PEER_ADDR]:8480" "$(cat "$out/merchant.token")"
  start business business "$(ready_check org.blepay.Business hci0 Discovering)"
  await "blepayctl payments --business" 120 || fail "the business daemon did not start"
  blepayctl watch --business --json > "$out/b.events.jsonl" &
  await "[ -f '$out/a.ready' ]" 240 || fail "host a is not ready"

  id=$(blepayctl request 25.50 USD --reference order-123)
  echo "$id" | put pay1.id
  await "seen finished $id" 180 || fail "payment $id did not finish"

  id=$(blepayctl request 5.00 USD --reference order-124)
  echo "$id" | put pay2.id
  await "[ -f '$out/pay2.shown' ]" 120 || fail "the second request was never shown"
  blepayctl cancel "$id"
  await "seen cancelled $id" 60 || fail "the second request was not cancelled"

  await "[ -f '$out/a.identity-due' ]" 60 || fail "host a's identity never came due"
  restart_bluetoothd
  id=$(blepayctl request 7.00 USD --reference order-125)
  echo "$id" | put pay3.id
  await "seen declined $id" 120 || fail "the third request was not declined"

  blepayctl payments --business --json > "$out/payments.json"
  touch "$out/b.done"
  stop business
  ;;
esac
log "done"
