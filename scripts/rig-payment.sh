#!/usr/bin/env bash
# A real payment between two machines, run on each host of the rig's two-hosts topology (rig.sh; the hosts share
# only the BLE air and a point-to-point IPv6 link). Host a runs the ledger and the customer daemon, host b the
# business daemon (rig-lib.sh).
#   b: blepayctl request 25.50 USD --reference order-123    a: blepayctl accept <id> --tip 1.00
#   b: blepayctl refund <id> 10.00 --reason 'returned item'     a: learns of it from the ledger (refunded)
#   then a request the business cancels, and, after b's bluetoothd restarted, one the customer declines; then each
#   daemon restarts and shows its history: the payment, its refund and their ledger-signed receipts, verified.
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
  touch "$out/pay1.finished"

  # The business refunds part of it; the customer learns of it at its next contact with the ledger.
  await "seen refunded $id" 120 || fail "the refund of $id never reached the customer"
  blepayctl instruments --json > "$out/instruments.refunded.json"
  admin GET "/v1/accounts/$(cat "$out/merchant.id")" > "$out/merchant.refunded.json"

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

  await "[ -f '$out/b.done' ]" 240 || fail "host b did not finish"
  stop customer
  # Restarted, the daemon still knows the payment, its refund and their receipts.
  start customer-restarted customer "$(ready_check org.blepay.Customer hci0 ActiveInstances)"
  await "blepayctl show $(cat "$out/pay1.id") --customer" 60 || fail "the restarted customer daemon does not show payment 1"
  blepayctl show "$(cat "$out/pay1.id")" --customer --json > "$out/a.show.json"
  blepayctl payments --customer --json > "$out/a.history.jsonl"
  blepayctl payments --customer > "$out/a.history.txt"
  stop customer-restarted
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
  await "[ -f '$out/pay1.finished' ]" 120 || fail "host a did not see payment $id finish"
  blepayctl refund "$id" 10.00 --reason "returned item" --json > "$out/refund.json" || fail "the refund failed"
  await "seen refunded $id" 30 || fail "the refund was not signalled"

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
  stop business
  # Restarted, the daemon still knows its payments; the day's report comes from the ledger.
  start business-restarted business "$(ready_check org.blepay.Business hci0 Discovering)"
  await "blepayctl show $(cat "$out/pay1.id") --business" 60 || fail "the restarted business daemon does not show payment 1"
  blepayctl show "$(cat "$out/pay1.id")" --business --json > "$out/b.show.json"
  blepayctl report --json > "$out/b.report.json"
  blepayctl report > "$out/b.report.txt"
  touch "$out/b.done"
  stop business-restarted
  ;;
esac
log "done"
