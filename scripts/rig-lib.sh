# Helpers for the scenarios that run blepay's daemons inside the rig (rig-payment.sh, rig-broadcast.sh,
# rig-bench.sh); sourced. Each host installs blepay with `make install`'s script or `make deb`'s packages and starts
# each daemon with its installed unit's ExecStart line. Sets $root (the checkout), $out ($BLEPAY_RIG_OUT) and $host ($BLEPAY_RIG_HOST).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$BLEPAY_RIG_OUT
host=$BLEPAY_RIG_HOST
log() { echo "rig[$host]: $*" >&2; }
fail() { log "$*"; stacks; touch "$out/$host.failed"; exit 1; }

# stacks: every thread's stack of each daemon this host started and is still running, in $out/HOST.NAME.stacks.txt,
# so that a daemon that stopped answering says where it waits.
stacks() {
  local file name pid
  for file in /run/blepay-*.pid; do
    [[ -f $file ]] || continue
    name=${file#/run/blepay-}
    name=${name%.pid}
    pid=$(cat "$file")
    kill -0 "$pid" 2>/dev/null || continue
    log "the stacks of $name (pid $pid) are in $host.$name.stacks.txt"
    timeout 120 gdb -p "$pid" -batch -ex "thread apply all bt 40" > "$out/$host.$name.stacks.txt" 2>&1 || true
  done
}

# Waits up to $2 seconds until the command in $1 succeeds (tried five times a second, which the emulated CPU
# stretches); gives up early when another host failed, and at twice $2 by the clock: a try that waits (a blepayctl
# call to a daemon that does not answer takes its D-Bus timeout) must not stretch the wait without end.
await() {
  local i deadline=$((SECONDS + 2 * $2))
  for ((i = 0; i < $2 * 5 && SECONDS < deadline; i++)); do
    eval "$1" >/dev/null 2>&1 && return 0
    compgen -G "$out/*.failed" > /dev/null && fail "another host failed"
    sleep 0.2
  done
  return 1
}

# Writes standard input to $out/$1 whole: another host polls for the file and must never see it half-written.
put() { cat > "$out/$1.tmp" && mv "$out/$1.tmp" "$out/$1"; }

# Whether the event of `kind` $1 for payment $2 is in the event log $3 (default: this host's).
seen() { grep -q "\"event\":\"$1\".*\"payment_id\":\"$2\"" "$out/${3:-$host}.events.jsonl"; }

# install_blepay DIR: `make install` with the binaries in DIR or, when DIR holds `make deb`'s packages, those
# packages on a host that has no Swift toolchain (the guest's /etc, /usr and /var are its own overlays).
install_blepay() {
  if compgen -G "$1/*.deb" > /dev/null; then install_packages "$1"; return; fi
  bash "$root/scripts/install.sh" "$1" > "$out/$host.install.log" 2>&1 || fail "installing failed"
}

# Hides the Swift toolchain under an empty folder, installs the packages with dpkg, and records what dpkg and the
# binaries say about their version (for the test to compare with VERSION).
install_packages() {
  local swift toolchain
  if swift=$(command -v swift); then
    toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$swift")")")")
    mount -t tmpfs -o ro,size=4k blepay-no-toolchain "$toolchain" || fail "could not hide the toolchain at $toolchain"
  fi
  hash -r
  ! command -v swift > /dev/null || fail "the Swift toolchain is still visible"
  dpkg -i "$1"/*.deb > "$out/$host.install.log" 2>&1 || fail "dpkg could not install the packages"
  {
    dpkg-query -W -f '${Package} ${Version} ${Status}\n' blepay blepay-ledger
    for program in /usr/bin/blepayd /usr/bin/blepayctl /usr/bin/blepay-ledger; do
      echo "$program $("$program" --version)"
      ldd "$program" | sed "s/^/  /"
    done
  } > "$out/$host.packages.txt" 2>&1 || fail "the installed programs do not run"
}

# The installed unit of daemon $1: the package's (/lib) or `make install`'s (/etc).
unit_file() {
  local file
  for file in /etc/systemd/system/blepay-$1.service /lib/systemd/system/blepay-$1.service; do
    [[ -f $file ]] && { echo "$file"; return; }
  done
  fail "no unit blepay-$1 is installed"
}
unit_exec() { sed -n 's/^ExecStart=//p' "$(unit_file "$1")"; }

# start NAME UNIT CHECK [CONFIG]: starts the daemon as unit UNIT would (reading CONFIG instead of the unit's file,
# for a second daemon of a role), logging (at debug level unless BLEPAY_LOG_LEVEL says otherwise) into the output
# directory. Like systemd for a Type=notify unit, it hands the daemon a notify socket and the unit's watchdog
# interval; notify-listener.py records what the daemon says there, and runs the shell command CHECK when it says
# READY=1 (ready_check builds one).
start() {
  local name=$1 unit=$2 check=$3 command watchdog socket=/run/blepay-$1.notify
  command=$(unit_exec "$unit")
  [[ -n ${4:-} ]] && command=${command/\/etc\/blepay\/$unit.toml/$4}
  watchdog=$(sed -n 's/^WatchdogSec=//p' "$(unit_file "$unit")")
  python3 "$root/scripts/notify-listener.py" "$socket" "$out/$host.$name.notify.jsonl" "$check" \
    > "$out/$host.$name.notify.log" 2>&1 &
  await "[ -S $socket ]" 10 || fail "no notify socket for $name"
  log "starting $command"
  env BLEPAY_LOG_LEVEL="${BLEPAY_LOG_LEVEL:-debug}" NOTIFY_SOCKET="$socket" \
    ${watchdog:+WATCHDOG_USEC=$((watchdog * 1000000))} $command > "$out/$host.$name.log" 2>&1 &
  echo $! > "/run/blepay-$name.pid"
}

# ready_check BUS_NAME [ADAPTER PROPERTY]: a command that succeeds when BUS_NAME has an owner and, if given, the
# adapter's BlueZ property is set (ActiveInstances for a customer's advertisement, Discovering for a business) or a
# device is there already: a customer withdraws its advertisement while it serves a business, and a business
# stops discovery while it connects to a customer it found. The command runs in its own /bin/sh
# (notify-listener.py): it can call none of these functions, and with no pipefail there a `grep -q` that stops
# reading early is harmless.
ready_check() {
  local check="dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus"
  check+=" org.freedesktop.DBus.GetNameOwner string:$1"
  local interface set
  case ${3:-} in
    Discovering) interface=Adapter1 set='boolean true' ;;
    ActiveInstances) interface=LEAdvertisingManager1 set='byte 1' ;;
  esac
  if [[ -n ${interface:-} ]]; then
    local tree="dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects"
    check+=" && ($(bluez_property "$2" "$interface" "$3") | grep -q '$set' || $tree | grep -q '/org/bluez/$2/dev_')"
  fi
  echo "$check"
}
# Whether bluetoothd's object tree has a path containing $1. Read whole: with many adapters the tree is longer than a
# pipe holds, and a `grep -q` that stops reading early would fail the pipeline under pipefail.
bluez_has() {
  local tree
  tree=$(dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects) &&
    [[ $tree == *"$1"* ]]
}
bluez_property() {
  echo "dbus-send --system --print-reply --dest=org.bluez /org/bluez/$1 org.freedesktop.DBus.Properties.Get" \
    "string:org.bluez.$2 string:$3"
}

# Stops daemon NAME with SIGTERM, as systemd would, and records how it exited.
stop() {
  local pid rc=0
  pid=$(cat "/run/blepay-$1.pid")
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  echo "$rc" > "$out/$host.$1.exit"
}

# configure FILE ROLE URL TOKEN [ADAPTER] [INSTANCE]: a daemon's configuration with the ledger at URL and its key,
# and its enrollment token; an instance gets a state directory of its own. An https:// ledger is trusted through the
# rig's CA ($out/ledger-ca.crt, published by start_ledger), copied into the state directory.
configure() {
  local file=$1 role=$2 url=$3 token=$4 adapter=${5:-hci0} instance=${6:-}
  local state=/var/lib/blepay-$role${instance:+-$instance}
  mkdir -p "$state"
  printf '[bluetooth]\nadapter = "%s"\n[ledger]\nurl = "%s"\npublic_key = "%s"\n' \
    "$adapter" "$url" "$(cat "$out/ledger.key")" > "$file"
  if [[ $url == https://* ]]; then
    cp "$out/ledger-ca.crt" "$state/ledger-ca.crt"
    printf 'ca_file = "ledger-ca.crt"\n' >> "$file"
  fi
  printf '[device]\nstate_directory = "%s"\n' "$state" >> "$file"
  [[ -n $instance ]] && printf '[control]\ninstance = "%s"\n' "$instance" >> "$file"
  (umask 077; printf '%s' "$token" > "$state/enrollment.token")
}

# The ledger's HTTPS API as the daemons reach it on host a; its certificate names every address they use: ::1,
# fd00:1ed::1 (host a's ledger0, rig-offline.sh) and fd00:b1e::a (across the link, from host b).
ledger_url="https://[::1]:8480"
ledger_tls=/var/lib/blepay-ledger/tls

# curl to the ledger, trusting the rig's CA: ledger_curl PATH [CURL OPTIONS].
ledger_curl() { curl -sf --cacert "$ledger_tls/ca.crt" "${@:2}" "$ledger_url$1"; }

# Starts the ledger over HTTPS on all addresses, with a certificate from a CA made for the run; publishes the CA as
# $out/ledger-ca.crt and the ledger's key as $out/ledger.key.
start_ledger() {
  install -d -m 0700 /var/lib/blepay-ledger
  bash "$root/scripts/tls-certificate.sh" "$ledger_tls" ledger DNS:localhost IP:::1 IP:fd00:1ed::1 IP:fd00:b1e::a ||
    fail "no certificate for the ledger"
  put ledger-ca.crt < "$ledger_tls/ca.crt"
  printf '[server]\nhost = "::"\nport = 8480\n[tls]\ncertificate_file = "tls/ledger.crt"\nkey_file = "tls/ledger.key"\n' \
    > /etc/blepay/ledger.toml
  start ledger ledger "curl -sf --cacert $ledger_tls/ca.crt $ledger_url/v1/ledger-key"
  await "ledger_curl /v1/ledger-key" 60 || fail "the ledger did not start"
  ledger_curl /v1/ledger-key | json '["publicKey"]' | put ledger.key
}

admin() {  # METHOD PATH [JSON]
  ledger_curl "$2" -X "$1" -H "Authorization: Bearer $(cat /var/lib/blepay-ledger/admin.token)" \
    -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" -H 'Content-Type: application/json' ${3:+-d "$3"}
}
json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

# An account of kind $1 named $2 at the ledger: prints its JSON.
account() { admin POST /v1/accounts "{\"kind\":\"$1\",\"name\":\"$2\"}"; }

# fund_card [BLEPAYCTL OPTIONS]: adds a card through the customer daemon and deposits 100.00 USD on it.
fund_card() {
  local card
  card=$(printf '4242424242424242\n123\n' | blepayctl add-card "$@" --expiry "12/$(( $(date +%Y) + 3 ))")
  admin POST "/v1/instruments/$card/deposits" '{"amount":10000,"currency":"USD"}' > /dev/null
}

# Restarts this host's bluetoothd, as a crash and systemd's restart would; its debug log goes to the output.
restart_bluetoothd() {
  log "restarting bluetoothd"
  pkill -x bluetoothd
  await "! pgrep -x bluetoothd" 30 || fail "bluetoothd did not stop"
  /usr/libexec/bluetooth/bluetoothd -n -d > "$out/$host.bluetoothd-restarted.log" 2>&1 &
  await "dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects" 30 \
    || fail "bluetoothd did not come back"
}

# Powers adapter NAME (hciN) off and on again through BlueZ, as a user toggling Bluetooth would; runs COMMAND (the
# second argument), if given, while it is off.
power_cycle() {
  local state
  log "powering $1 off and on"
  for state in false true; do
    dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" org.freedesktop.DBus.Properties.Set \
      string:org.bluez.Adapter1 string:Powered "variant:boolean:$state" > /dev/null || fail "powering $1 $state failed"
    sleep 2
    if [[ $state == false && -n ${2:-} ]]; then eval "$2"; fi
  done
}
