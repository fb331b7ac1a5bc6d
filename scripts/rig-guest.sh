#!/usr/bin/env bash
# Runs inside a rig VM (see rig.sh): brings up the controller(s), a system bus and bluetoothd, then runs
# this host's command and records its exit status.   Usage: rig-guest.sh ROLE WORK_DIR OUT_DIR
set -uo pipefail
role=$1 work=$2 out=$3

fail() {
  echo "rig-guest[$role]: $*" >&2
  echo 125 > "$work/$role.rc"
  touch "$work/$role.failed"  # so that the other host stops waiting for this one
  exit 1
}

# Waits (up to $2 tenths of a second) until the command in $1 succeeds.
await() {
  local i
  for ((i = 0; i < $2; i++)); do eval "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

ip link set lo up 2>/dev/null || true
mkdir -p /run/dbus
dbus-daemon --system --fork --nopidfile || fail "system dbus-daemon did not start"

# Whether the kernel has finished setting controller $1 up: bluetoothd only lists controllers that completed
# setup when it starts, and one still in setup may never be announced to it.
controller_up() { timeout 5 btmgmt --index "${1#hci}" info 2>/dev/null | grep -q 'addr '; }

# Starts the emulator ("$@") and waits for $count controllers; a controller that never finishes setup
# (seen now and then under emulation: "Opcode 0x0c03 failed: -110") gets the emulator restarted, up to three
# times. With BRIDGE=1 the emulator's server socket is bridged to the serial port (host b's controller) at once:
# setup was seen to time out while that socket had no client.
start_controllers() {
  local try a up emulator bridge=""
  for try in 1 2 3; do
    "$@" >> "$work/$role.btvirt.log" 2>&1 &
    emulator=$!
    if [[ ${BRIDGE:-0} == 1 ]]; then
      await "[ -S /tmp/bt-server-le ]" 100 || fail "btvirt did not open /tmp/bt-server-le"
      socat /dev/ttyS1,raw,echo=0 UNIX-CONNECT:/tmp/bt-server-le >> "$work/$role.socat.log" 2>&1 &
      bridge=$!
    fi
    up=1
    for a in $adapters; do
      await "controller_up $a" 150 || { up=0; break; }
    done
    ((up)) && return 0
    echo "rig-guest[$role]: controllers not up after try $try: $(ls /sys/class/bluetooth 2>/dev/null | tr '\n' ' ')" >&2
    dmesg | grep -iE 'bluetooth|hci' | tail -n 3 >&2
    kill $bridge "$emulator" 2>/dev/null
    wait $bridge "$emulator" 2>/dev/null
    rm -f /tmp/bt-server-*
  done
  return 1
}

# BlueZ 5.66's emulator with one fix (scripts/build-btvirt.sh).
btvirt=/usr/local/libexec/blepay-rig/btvirt
[[ -x $btvirt ]] || fail "no $btvirt: run scripts/install-deps.sh"

adapters=""
count=1
[[ $role == one ]] && count=$(cat "$work/controllers")
for ((i = 0; i < count; i++)); do adapters+="hci$i "; done
adapters=${adapters% }

# btvirt's LE controllers use AF_ALG crypto sockets; loading those modules on first use takes seconds under
# TCG, long enough for a new controller's HCI Reset to time out. Load them before any controller exists.
modprobe -a af_alg algif_hash algif_skcipher ecb cmac 2>/dev/null || true

case $role in
  one)
    modprobe hci_vhci || fail "no hci_vhci module"
    start_controllers "$btvirt" -L -l"$count" || fail "controllers did not come up"
    ;;
  a)
    modprobe hci_vhci || fail "no hci_vhci module"
    # -s also serves the shared air on /tmp/bt-server-le; the serial port carries host b's controller there.
    BRIDGE=1 start_controllers "$btvirt" -L -l1 -s || fail "controller did not come up"
    touch "$work/a.bridged"
    ;;
  b)
    modprobe hci_uart || fail "no hci_uart module"
    await "[ -f '$work/a.bridged' ] || [ -f '$work/a.failed' ]" 1800 || fail "host a never bridged its serial port"
    [[ -f $work/a.bridged ]] || fail "host a failed to start"
    btattach -B /dev/ttyS1 -P h4 > "$work/$role.btattach.log" 2>&1 &
    for a in $adapters; do
      await "controller_up $a" 300 || fail "controller $a did not come up"
    done
    ;;
esac

if [[ -f $work/quiet ]]; then
  /usr/libexec/bluetooth/bluetoothd -n > "$work/$role.bluetoothd.log" 2>&1 &
else
  btmon > "$work/$role.btmon.log" 2>&1 &
  /usr/libexec/bluetooth/bluetoothd -n -d > "$work/$role.bluetoothd.log" 2>&1 &
fi
# Whether bluetoothd shows adapter $1. The reply is read whole: with 17 or more adapters it is longer than a pipe
# holds, and a `grep -q` that stops reading early fails the pipeline (pipefail) however often it is tried.
shows() {
  local tree
  tree=$(dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects) &&
    [[ $tree == *"\"/org/bluez/$1\""* ]]
}
for a in $adapters; do
  # bluetoothd sets adapters up one after another: about 10 s each under emulation with many of them.
  await "shows $a" $((300 + 100 * count)) || fail "bluetoothd does not show $a"
done

peer_addr=""
if [[ $role == a || $role == b ]]; then
  # The point-to-point link is the only interface besides lo.
  link=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
  [[ -n $link ]] || fail "no point-to-point interface"
  ip link set "$link" up
  ip -6 addr add "fd00:b1e::$role/64" dev "$link" nodad
  peer=$([[ $role == a ]] && echo b || echo a)
  peer_addr="fd00:b1e::$peer"
  touch "$work/$role.ready"
  # Neither command starts alone: each host waits for the other to be ready.
  await "[ -f '$work/$peer.ready' ] || [ -f '$work/$peer.failed' ]" 1800 || fail "host $peer never became ready"
  [[ -f $work/$peer.ready ]] || fail "host $peer failed to start"
fi

echo "rig-guest[$role]: ready with $adapters"
BLEPAY_RIG_HOST=$role BLEPAY_RIG_OUT=$out BLEPAY_RIG_ADAPTERS=$adapters BLEPAY_RIG_PEER_ADDR=$peer_addr \
  bash -c "$(cat "$work/$role.cmd")"
echo $? > "$work/$role.rc"
sync
