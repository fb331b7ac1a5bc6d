#!/usr/bin/env bash
# One request, two customers: run in the rig's one-host topology with four controllers (rig.sh one-host
# --controllers 4). The ledger, a business daemon on hci0 and two customer daemons on one host, the customers as
# instances `alice` (hci1) and `bob` (hci2) with bus names of their own (rig-lib.sh installs and starts them). Alice
# offers an L2CAP channel and her sessions run over it; bob's configuration says `l2cap = false`, so his run over GATT.
#   blepayctl request 12.00 USD: both customers are shown it; alice accepts; she sees finishedPayment, bob otherPaid,
#   and bob's late acceptance is refused;
#   then, while the business's adapter is off, a hostile central on hci3 (blepay-loopback storm) connects to a
#   customer 10 times, writing malformed records until hung up each time: bluetoothd must outlive it;
#   then bluetoothd restarts, every daemon recovers by itself, and a second request is paid by bob (alice: otherPaid);
#   then alice's and the business's adapters are powered off and on, and a third request is paid by alice again;
#   then a fourth request is open when alice's daemon and then the business's are stopped (SIGTERM).
# Every daemon's events (blepayctl watch --json) and what the ledger says go to $BLEPAY_RIG_OUT for the test to check.
# Usage (inside the rig): rig-broadcast.sh BIN_DIR
set -euo pipefail
source "$(dirname "$0")/rig-lib.sh"
bin=$1
install_blepay "$bin"
ledger=$ledger_url
customers=(alice bob)

start_ledger
# The longest merchant name allowed, in 4-byte characters: handshake 3 (its certificate) is a record over 512 bytes.
merchant=$(account merchant "$(printf '🥐%.0s' {1..64})")
echo "$merchant" | json '["id"]' | put merchant.id
configure /etc/blepay/business.toml business "$ledger" "$(echo "$merchant" | json '["enrollmentToken"]')" hci0
start business business "$(ready_check org.blepay.Business hci0 Discovering)"
adapter=1
for name in "${customers[@]}"; do
  token=$(account customer "$name" | json '["enrollmentToken"]')
  configure "/etc/blepay/customer-$name.toml" customer "$ledger" "$token" "hci$adapter" "$name"
  [[ $name == bob ]] && sed -i '/^adapter = /a l2cap = false' "/etc/blepay/customer-$name.toml"
  start "$name" customer "$(ready_check "org.blepay.Customer.$name" "hci$adapter" ActiveInstances)" \
    "/etc/blepay/customer-$name.toml"
  adapter=$((adapter + 1))
done
await "blepayctl payments --business" 120 || fail "the business daemon did not start"
blepayctl watch --business --json > "$out/business.events.jsonl" &
for name in "${customers[@]}"; do
  await "blepayctl payments --customer --instance $name" 120 || fail "customer $name did not start"
  blepayctl watch --customer --instance "$name" --json > "$out/$name.events.jsonl" &
  fund_card --instance "$name"
done

# request AMOUNT REFERENCE PAYER OTHER: both customers are shown it, PAYER accepts, OTHER is told another paid.
request() {
  local id
  id=$(blepayctl request "$1" USD --reference "$2")
  echo "$id" > "$out/$2.id"
  for name in "${customers[@]}"; do
    await "seen receivedPayment $id $name" 240 || fail "$name was never shown $2"
  done
  blepayctl accept "$id" --instance "$3" > "$out/$2.accept.txt"
  await "seen finishedPayment $id $3" 120 || fail "$2 did not finish for $3"
  await "seen otherPaid $id $4" 60 || fail "$4 was not told another customer paid $2"
  await "seen finished $id business" 60 || fail "$2 did not finish for the business"
  local rc=0
  blepayctl accept "$id" --instance "$4" > "$out/$2.late.txt" 2>&1 || rc=$?
  echo "$rc" > "$out/$2.late.exit"
}

request 12.00 order-1 alice bob
for name in "${customers[@]}"; do blepayctl instruments --instance "$name" --json > "$out/$name.instruments.json"; done

# A hostile central on hci3: connection after connection to a customer, writing a record of an unknown type back to
# back until hung up (every write answered first: BlueZ 5.66 was seen to crash on one left in flight as the link
# closed). A customer serves one central at a time, so the business's adapter is off meanwhile. bluetoothd and every
# daemon outlive the storm, and the next request is shown to both customers as before.
storm() {
  "$bin/blepay-loopback" storm --adapter hci3 --service 6e2d1000-5b1a-4c8e-9d4a-b1e9a7000001 \
    --characteristic 6e2d1001-5b1a-4c8e-9d4a-b1e9a7000001 --connections 10 --timeout 120 --report "$out/storm.json" \
    > "$out/storm.log" 2>&1 || fail "the storm failed: $(tail -n 3 "$out/storm.log")"
}
bluetoothd=$(pgrep -x bluetoothd)
power_cycle hci0 storm
[[ $(pgrep -x bluetoothd) == "$bluetoothd" ]] || fail "bluetoothd did not outlive the storm"

restart_bluetoothd
request 3.00 order-2 bob alice
for name in "${customers[@]}"; do blepayctl instruments --instance "$name" --json > "$out/$name.instruments.after.json"; done

# Alice's adapter first, then the business's. The other way round, the business reconnects to alice between the
# two, and under the emulated controllers powering hci1 off leaves that link up on hci0's side (no supervision
# timeout): its ATT exchanges time out 30 s later and every LE connection to alice fails after (seen 2026-11-27, the
# business retrying for minutes while alice advertised). This way hci0's power cycle drops what hci1's left behind.
power_cycle hci1
power_cycle hci0
request 2.00 order-3 alice bob
blepayctl instruments --instance alice --json > "$out/alice.instruments.last.json"

# SIGTERM with a request open: alice's daemon declines it as it stops (the business hears it), then the business's
# cancels it as it stops (bob hears it). Nothing is charged.
id=$(blepayctl request 1.00 USD --reference order-4)
echo "$id" > "$out/order-4.id"
for name in "${customers[@]}"; do await "seen receivedPayment $id $name" 240 || fail "$name was never shown order-4"; done
stop alice
await "seen declined $id business" 60 || fail "the business did not hear alice decline order-4 as she stopped"
stop business
await "seen cancelled $id bob" 60 || fail "bob was not told order-4 was cancelled as the business stopped"
blepayctl instruments --instance bob --json > "$out/bob.instruments.last.json"
stop bob
admin GET "/v1/accounts/$(cat "$out/merchant.id")" > "$out/merchant.after.json"
blepay-ledger audit --config /etc/blepay/ledger.toml > "$out/audit.txt" 2>&1 || true
stop ledger
log "done"
