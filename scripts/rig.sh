#!/usr/bin/env bash
# The virtual BLE rig: boots real Linux kernels with virtual Bluetooth controllers in small VMs (virtme-ng,
# QEMU under TCG), starts a system bus and bluetoothd in each, and runs commands there.
#
#   rig.sh [options] one-host [--controllers N] -- 'COMMAND'
#   rig.sh [options] two-hosts --host-a 'COMMAND' --host-b 'COMMAND'
#
# Options:
#   --out DIR        directory shared read-write with the guests; commands find it as $BLEPAY_RIG_OUT
#   --logs DIR       keep bluetoothd, btmon and console logs here (kept always when given)
#   --timeout SECS   give up after this long (default 600); exit 124
#   --memory SIZE    each guest's memory (default 1G; twenty daemons need more)
#
# one-host: one VM, `btvirt -L -lN` (default N=2), one bluetoothd with adapters hci0..hciN-1.
# two-hosts: VM a (`btvirt -L -l1 -s`, bridged to a serial port) and VM b (`btattach` on that serial port):
#   two kernels, two system buses, two bluetoothds, one virtual air; plus one point-to-point IPv6 link,
#   a = fd00:b1e::a, b = fd00:b1e::b, and no other network.
# Commands get BLEPAY_RIG_HOST (one|a|b), BLEPAY_RIG_OUT, BLEPAY_RIG_ADAPTERS and, on two hosts,
# BLEPAY_RIG_PEER_ADDR. The exit status is 0 when every command exited 0, else the first failure's status.
# Logs, and what the commands wrote to --out, are kept (and their folder printed) when anything fails.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out="" logs="" timeout=600 memory=1G controllers=2 topology="" cmd_one="" cmd_a="" cmd_b=""

die() { echo "rig: $*" >&2; exit 2; }

while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --logs) logs=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    one-host|two-hosts) topology=$1; shift; break ;;
    *) die "unknown option '$1' (see the header of $0)" ;;
  esac
done
case $topology in
  one-host)
    while (($#)); do
      case $1 in
        --controllers) controllers=$2; shift 2 ;;
        --) shift; cmd_one=${1:-}; shift || true ;;
        *) die "one-host: unexpected '$1'" ;;
      esac
    done
    [[ -n $cmd_one ]] || die "one-host needs -- 'COMMAND'"
    [[ $controllers =~ ^[1-9][0-9]*$ ]] || die "--controllers takes a positive number" ;;
  two-hosts)
    while (($#)); do
      case $1 in
        --host-a) cmd_a=$2; shift 2 ;;
        --host-b) cmd_b=$2; shift 2 ;;
        *) die "two-hosts: unexpected '$1'" ;;
      esac
    done
    [[ -n $cmd_a && -n $cmd_b ]] || die "two-hosts needs --host-a 'COMMAND' and --host-b 'COMMAND'" ;;
  *) die "name a topology: one-host or two-hosts" ;;
esac
[[ $(id -u) -eq 0 ]] || die "must run as root (the guests need root on the host's file system)"
command -v vng >/dev/null || die "virtme-ng is missing: run scripts/install-deps.sh"

# Debian's kernel has Bluetooth as modules; the machine's own kernel may not.
kernel=$(ls -1 /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1)
[[ -n $kernel ]] || die "no Debian kernel in /boot: run scripts/install-deps.sh"

work=$(mktemp -d /tmp/blepay-rig.XXXXXX)
# Benchmarks run the air as a product does: no btmon, bluetoothd without its debug log.
[[ -z ${BLEPAY_RIG_QUIET:-} ]] || touch "$work/quiet"
[[ -n $out ]] || out=$work/out
mkdir -p "$out"
out=$(cd "$out" && pwd)
keep_logs=${BLEPAY_RIG_KEEP_LOGS:-0}
if [[ -n $logs ]]; then keep_logs=1; else logs=$root/.rig-logs/$(date +%Y%m%d-%H%M%S)-$topology; fi

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Boots one guest in its own process group, its console prefixed on our stdout and kept in the work dir.
boot() {
  local role=$1 qemu_opts=$2
  setsid bash -c '
    vng --run "$1" --user root $4 --memory "$8" --cpus "${BLEPAY_RIG_CPUS:-1}" \
        --rwdir "$2" --rwdir "$3" --qemu-opts="$5" \
        --exec "$6/rig-guest.sh $7 $2 $3" 2>&1 | sed -u "s/^/[$7] /" | tee "$2/$7.console.log"
  ' rig "$kernel" "$work" "$out" "$([[ -n ${BLEPAY_RIG_KVM:-} ]] || echo --disable-kvm)" "$qemu_opts" "$here" "$role" "$memory" &
  pids+=($!)
}

start=$SECONDS
case $topology in
  one-host)
    printf '%s\n' "$cmd_one" > "$work/one.cmd"
    echo "$controllers" > "$work/controllers"
    boot one "" ;;
  two-hosts)
    printf '%s\n' "$cmd_a" > "$work/a.cmd"
    printf '%s\n' "$cmd_b" > "$work/b.cmd"
    boot a "-chardev socket,id=bt,path=$work/bt.sock,server=on,wait=off -device isa-serial,chardev=bt \
-netdev stream,id=p2p,server=on,addr.type=unix,addr.path=$work/p2p.sock -device virtio-net-pci,netdev=p2p"
    # b's serial port and link connect to sockets a's QEMU listens on.
    for _ in $(seq 300); do [[ -S $work/bt.sock && -S $work/p2p.sock ]] && break; sleep 0.1; done
    [[ -S $work/bt.sock && -S $work/p2p.sock ]] || die "host a's QEMU did not open its sockets"
    boot b "-chardev socket,id=bt,path=$work/bt.sock -device isa-serial,chardev=bt \
-netdev stream,id=p2p,server=off,addr.type=unix,addr.path=$work/p2p.sock -device virtio-net-pci,netdev=p2p" ;;
esac

status=0
deadline=$((SECONDS + timeout))
for pid in "${pids[@]}"; do
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "rig: timed out after ${timeout}s" >&2
    status=124
    break
  fi
done

if ((status == 0)); then
  for role in $( [[ $topology == one-host ]] && echo one || echo a b ); do
    if [[ ! -f $work/$role.rc ]]; then
      echo "rig: host $role did not finish its command (see its console log)" >&2
      status=1
      break
    fi
    rc=$(cat "$work/$role.rc")
    echo "rig: host $role command exited $rc"
    if ((rc != 0 && status == 0)); then status=$rc; fi
  done
fi
echo "rig: $topology finished in $((SECONDS - start))s"

if ((status != 0 || keep_logs)); then
  mkdir -p "$logs"
  cp "$work"/*.log "$logs"/ 2>/dev/null || true
  # What the commands wrote (the daemons' own logs among it) goes with them.
  cp -r "$out" "$logs/out" 2>/dev/null || true
  echo "rig: logs kept in $logs" >&2
  if ((status != 0)); then
    for log in "$logs"/*bluetoothd.log; do
      [[ -f $log ]] || continue
      echo "rig: last lines of $(basename "$log"):" >&2
      tail -n 15 "$log" | sed 's/^/rig:   /' >&2
    done
  fi
fi
exit "$status"
