#!/usr/bin/env bash
# A real payment between two machines, run on each host of the rig's two-hosts topology (rig.sh; the hosts share
# only the BLE air and a point-to-point IPv6 link). Host a runs the ledger and the customer daemon, host b the
# business daemon; each host installs blepay with `make install`'s script and starts each daemon with its unit's
# ExecStart line.
#   b: blepayctl request 25.50 USD --reference order-123    a: blepayctl accept <id> --tip 1.00
#   then a request the business cancels, and one the customer declines.
# Both hosts record their daemon's events (blepayctl watch --json) and what the ledger says into $BLEPAY_RIG_OUT,
# for the test to check. Usage (inside the rig): rig-payment.sh BIN_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$1
out=$BLEPAY_RIG_OUT
host=$BLEPAY_RIG_HOST
log() { echo "rig-payment[$host]: $*" >&2; }
fail() { log "$*"; touch "$out/$host.failed"; exit 1; }

# Waits up to $2 seconds until the command in $1 succeeds; gives up early when the other host failed.
await() {
  local i
  for ((i = 0; i < $2 * 5; i++)); do
    eval "$1" >/dev/null 2>&1 && return 0
    [[ -f $out/a.failed || -f $out/b.failed ]] && fail "the other host failed"
    sleep 0.2
  done
  return 1
}

# Writes standard input to $out/$1 whole: the other host polls for the file and must never see it half-written.
put() { cat > "$out/$1.tmp" && mv "$out/$1.tmp" "$out/$1"; }

# The event of `kind` for payment $2 in this host's event log.
seen() { grep -q "\"event\":\"$1\".*\"payment_id\":\"$2\"" "$out/$host.events.jsonl"; }

# `make install`, with this build's binaries (the guest's /etc, /usr and /var are its own overlays).
bash "$root/scripts/install.sh" "$bin" > "$out/$host.install.log" 2>&1 || fail "installing failed"
unit_exec() { sed -n 's/^ExecStart=//p' "$root/systemd/blepay-$1.service"; }

# Starts the daemon of unit $1 as its unit would, logging into the output directory.
start() {
  log "starting $(unit_exec "$1")"
  $(unit_exec "$1") > "$out/$host.$1.log" 2>&1 &
  echo $! > "/run/blepay-$1.pid"
}

# Stops it with SIGTERM, as systemd would, and records how it exited.
stop() {
  local pid
  pid=$(cat "/run/blepay-$1.pid")
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  echo "$rc" > "$out/$host.$1.exit"
}

# Writes a daemon's configuration: adapter hci0, the ledger at $2, its key, and the enrollment token $3.
configure() {
  local role=$1 url=$2 token=$3
  printf '[bluetooth]\nadapter = "hci0"\n[ledger]\nurl = "%s"\npublic_key = "%s"\n' "$url" "$(cat "$out/ledger.key")" \
    > "/etc/blepay/$role.toml"
  mkdir -p "/var/lib/blepay-$role"
  (umask 077; printf '%s' "$token" > "/var/lib/blepay-$role/enrollment.token")
}

admin() {  # METHOD PATH [JSON]
  curl -sf -X "$1" -H "Authorization: Bearer $(cat /var/lib/blepay-ledger/admin.token)" \
    -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" -H 'Content-Type: application/json' \
    ${3:+-d "$3"} "http://[::1]:8480$2"
}
json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

case $host in
a)
  printf '[server]\nhost = "::"\nport = 8480\n' > /etc/blepay/ledger.toml
  start ledger
  await "curl -sf http://[::1]:8480/v1/ledger-key" 60 || fail "the ledger did not start"
  curl -sf http://[::1]:8480/v1/ledger-key | json '["publicKey"]' | put ledger.key
  merchant=$(admin POST /v1/accounts '{"kind":"merchant","name":"Café Zürich"}')
  customer=$(admin POST /v1/accounts '{"kind":"customer","name":"Alice"}')
  echo "$merchant" | json '["id"]' | put merchant.id
  echo "$merchant" | json '["enrollmentToken"]' | put merchant.token

  configure customer "http://[::1]:8480" "$(echo "$customer" | json '["enrollmentToken"]')"
  start customer
  await "blepayctl payments --customer" 60 || fail "the customer daemon did not start"
  blepayctl watch --customer --json > "$out/a.events.jsonl" &
  card=$(printf '4242424242424242\n123\n' | blepayctl add-card --expiry "12/$(( $(date +%Y) + 3 ))")
  admin POST "/v1/instruments/$card/deposits" '{"amount":10000,"currency":"USD"}' > /dev/null
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
  configure business "http://[$BLEPAY_RIG_PEER_ADDR]:8480" "$(cat "$out/merchant.token")"
  start business
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

  id=$(blepayctl request 7.00 USD --reference order-125)
  echo "$id" | put pay3.id
  await "seen declined $id" 120 || fail "the third request was not declined"

  blepayctl payments --business --json > "$out/payments.json"
  touch "$out/b.done"
  stop business
  ;;
esac
log "done"
