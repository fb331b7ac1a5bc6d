#!/usr/bin/env bash
# The daemons' timings and footprint, in the rig's one-host topology with CUSTOMERS + 1 controllers (rig.sh one-host
# --controllers N): the ledger, a business on hci0 and CUSTOMERS customers (instances c1..cN on hci1..hciN).
#   discovery: c1 restarts while a request is open; from its start to the request shown (BlueZ registration,
#     advertising, discovery, connection, handshake and the request's delivery);
#   PAYMENTS payments with c1 on its open connection, made by the bench's own client (scripts/bench-client.py), which
#     stays on the bus as an app does: SendPaymentRequest call -> receivedPayment, AcceptPayment call ->
#     finishedPayment; and, on its own, blepayctl's start (`blepayctl --help`, 20 times) beside /bin/true's and
#     `bluetoothctl --version`'s;
#   broadcast: c2..cN join; the same client's SendPaymentRequest call -> the last of c1..cN shown the request, then its
#     AcceptPayment call for c1 -> the last otherPaid of every other one;
#   idle: each daemon's CPU and wake-ups (voluntary context switches of all its threads) per second over 30 s without
#     payments, from 20 s after the broadcast, and its peak RSS (VmHWM) over the whole run;
#   both offline: the ledger stops; OFFLINE payments with c1 under its voucher, by the same client: accept ->
#     finishedPayment, pending settlement (the business checks and keeps each before it answers).
# Writes $BLEPAY_RIG_OUT/daemons-bench.json. Usage (inside the rig): rig-bench.sh BIN_DIR [PAYMENTS] [CUSTOMERS]
# [OFFLINE]; the client's D-Bus library (jeepney) is in $BLEPAY_RIG_OUT/python.
set -euo pipefail
payments=${2:-50}
count=${3:-5}
offline=${4:-20}
# BLEPAY_BENCH_LOG_LEVEL=debug shows what each daemon does meanwhile (and costs the emulated CPU its writes).
export BLEPAY_LOG_LEVEL=${BLEPAY_BENCH_LOG_LEVEL:-info}
source "$(dirname "$0")/rig-lib.sh"
install_blepay "$1"
ledger=$ledger_url
customers=()
for ((i = 1; i <= count; i++)); do customers+=("c$i"); done

start_ledger
configure /etc/blepay/business.toml business "$ledger" "$(account merchant Bench | json '["enrollmentToken"]')" hci0
# Room for every customer at once: the broadcast must reach them all. Offline, it takes USD.
sed -i "/^adapter = /a maximum_connections = $count" /etc/blepay/business.toml
printf '[offline]\ncurrency = "USD"\nsettle_interval_seconds = 2\n' >> /etc/blepay/business.toml
start business business "$(ready_check org.blepay.Business hci0 Discovering)"
for ((i = 1; i <= count; i++)); do
  configure "/etc/blepay/customer-c$i.toml" customer "$ledger" "$(account customer "c$i" | json '["enrollmentToken"]')" \
    "hci$i" "c$i"
done
await "blepayctl payments --business" 120 || fail "the business daemon did not start"

# Starts customer $1 and waits for its control API; `first` also enrolls it and funds a card.
customer() {
  start "$1" customer "$(ready_check "org.blepay.Customer.$1" "hci${1#c}" ActiveInstances)" "/etc/blepay/customer-$1.toml"
  await "blepayctl payments --customer --instance $1" 120 || fail "customer $1 did not start"
}
# c1's events as a person watching would see them; the timings come from the bench's own client.
blepayctl watch --customer --instance c1 --json > "$out/c1.events.jsonl" &
customer c1
fund_card --instance c1
card=$(blepayctl instruments --instance c1 --json | head -n 1 | json '["id"]')
# The voucher the offline payments ride on: 1.00 each.
if ((offline > 0)); then blepayctl voucher obtain "$offline.00" USD --hours 2 --instance c1 > /dev/null; fi
stop c1

# Bash's own clock: a `date` process costs 50-120 ms under the rig's emulation.
now() { echo "$EPOCHREALTIME"; }
# last_of KIND ID NAME...: the latest time (each event's own stamp) any of the NAMEs saw KIND for ID, once all have;
# one process that looks twice a second, so that the bench does not take the emulated CPU from what it measures.
last_of() {
  python3 - "$out" "$@" <<'PY' || fail "not every one of ${*:3} saw $1 for $2"
import json, sys, time
from datetime import datetime
out, kind, payment, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
seen, deadline = {}, time.time() + 240
while len(seen) < len(names) and time.time() < deadline:
    for name in names:
        if name in seen:
            continue
        for line in open("%s/%s.events.jsonl" % (out, name)):
            e = json.loads(line)
            if e["event"] == kind and e["payment_id"] == payment:
                seen[name] = datetime.fromisoformat(e["time"]).timestamp()
                break
    time.sleep(0.5)
if len(seen) < len(names):
    sys.exit(1)
print(max(seen.values()))
PY
}
since() { python3 -c "import sys; print(float(sys.argv[1]) - float(sys.argv[2]))" "$1" "$2"; }
record() { echo "$1 $2" >> "$out/bench.samples"; }
# busy VAR: the emulated CPU's busy jiffies and all its jiffies so far (/proc/stat, read by bash itself), into VAR;
# two readings give the share of the CPU the rig used between them: near 1, what was timed waited for the one
# emulated CPU, not for the air.
busy() {
  local user nice system idle iowait irq softirq
  read -r _ user nice system idle iowait irq softirq _ < /proc/stat
  printf -v "$1" '%d %d' $((user + nice + system + irq + softirq)) $((user + nice + system + idle + iowait + irq + softirq))
}
# processes [PID=NAME...]: every process's CPU so far but its own, one "pid start name jiffies" line each, and
# another for its children that ended ("name:children"); a daemon is named by its pid file (business, c1, ledger...),
# a PID given by its NAME, anything else by its command (bluetoothd, btvirt, dbus-daemon, python3, kworker...).
processes() {
  python3 - "$@" <<'PY'
import glob, os, sys
named = dict(arg.split("=", 1) for arg in sys.argv[1:])
for path in glob.glob("/run/blepay-*.pid"):
    try: named[open(path).read().strip()] = os.path.basename(path)[len("blepay-"):-len(".pid")]
    except OSError: pass
for path in glob.glob("/proc/[0-9]*/stat"):
    pid = path.split("/")[2]
    if pid == str(os.getpid()): continue
    try: text = open(path).read()
    except OSError: continue  # it ended meanwhile
    comm, fields = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
    # fields[11], [12]: utime, stime; [13], [14]: those of its children that ended and were waited for; [19]: the
    # start time, which tells a reused pid apart.
    name = named.get(pid, comm.split("/")[0].replace(" ", "_"))
    print(pid, fields[19], name, int(fields[11]) + int(fields[12]))
    print(pid, fields[19] + "c", name + ":children", int(fields[13]) + int(fields[14]))
# The CPU's time in interrupts, which no process is charged with, as two more rows.
irq, softirq = open("/proc/stat").readline().split()[6:8]
print("irq 0 interrupts", irq)
print("softirq 0 softirqs", softirq)
PY
}
# script_children: the CPU of the processes this script ran that ended, so far (in $children), read by bash itself:
# the earlier reading's own process ended after it read, and is not of the span.
script_children() {
  local stat
  read -r stat < "/proc/$$/stat"
  set -- ${stat##*) }
  children=$((${14} + ${15}))
}
# cpu_shares PROCESSES BUSY CHILDREN LATER_PROCESSES LATER_BUSY: the share of the emulated CPU in use between the two
# readings ("busy") and how long that was ("seconds"), then what share each process name (and the interrupts) took,
# one "name share" line each, largest first, then "exited" (the busy time nothing still running accounts for:
# processes that ended meanwhile, not yet waited for by one still running) and "idle".
cpu_shares() {
  python3 - "$@" <<'PY'
import collections, os, sys
def table(text):
    return {(pid, start): (name, int(j)) for pid, start, name, j in (line.split() for line in text.splitlines())}
earlier, now = table(sys.argv[1]), table(sys.argv[4])
for key, (name, _) in earlier.items():
    if name == "bench-script:children": earlier[key] = (name, int(sys.argv[3]))
(busy0, all0), (busy1, all1) = (map(int, sys.argv[i].split()) for i in (2, 5))
total = max(1, all1 - all0)
print("busy", (busy1 - busy0) / total)
print("seconds", total / os.sysconf("SC_CLK_TCK"))
shares = collections.Counter()
for key, (name, jiffies) in now.items():
    shares[name] += jiffies - earlier.get(key, (name, 0))[1]
for name, j in shares.most_common():
    if j > 0: print(name, j / total)
print("exited", max(0, busy1 - busy0 - sum(shares.values())) / total)
print("idle", (total - (busy1 - busy0)) / total)
PY
}
# span_start [PID=NAME...], span_end NAME [PID=NAME...]: what used the emulated CPU in between, recorded as
# NAME_cpu_busy and NAME_cpu/<process>. The start reads `processes`, then `busy` and `script_children` (bash's own
# reads); the end `busy`, then `processes`: no reading's own process falls inside the span.
span_start() {
  span_processes=$(processes "$$=bench-script" "$@")
  busy span_busy
  script_children
}
span_end() {
  local name=$1 cpu_after processes_after
  shift
  busy cpu_after
  processes_after=$(processes "$$=bench-script" "$@")
  cpu_shares "$span_processes" "$span_busy" "$children" "$processes_after" "$cpu_after" | while read -r process n; do
    case $process in
      busy) record "${name}_cpu_busy" "$n" ;;
      seconds) record "${name}_cpu_seconds" "$n" ;;
      *) record "${name}_cpu/$process" "$n" ;;
    esac
  done
}
# The bench's client (bench-client.py MODE ...), its samples in bench.samples: `client` runs it to its end; `paced`
# starts it paced and waits until it is on the bus, `step WORD` lets it go on until it says WORD, `finish` lets it end.
client() { PYTHONPATH="$out/python" python3 "$(dirname "$0")/bench-client.py" "$out/bench.samples" "$@"; }
paced() {
  coproc bench_client {
    BENCH_CLIENT_PACED=1 PYTHONPATH="$out/python" exec python3 "$(dirname "$0")/bench-client.py" "$out/bench.samples" "$@"
  }
  client_pid=$bench_client_PID client_input=${bench_client[1]} client_output=${bench_client[0]}
  expect ready
}
expect() { local word; read -r word <&"$client_output" && [[ $word == "$1" ]] || fail "the bench client failed before '$1'"; }
step() { echo go >&"$client_input"; expect "$1"; }
finish() {
  exec {client_input}>&-
  wait "$client_pid" || fail "the bench client failed"
}

# Discovery: a request is open when c1 starts again.
id=$(blepayctl request 1.00 USD --reference discovery)
started=$(now)
customer c1
record discovery "$(since "$(last_of receivedPayment "$id" c1)" "$started")"
blepayctl cancel "$id" > /dev/null

# BLEPAY_BENCH_PROFILE=1: perf samples every process during the payments (the CPU's clock, with call graphs) into
# $out/perf.data, which `perf report --pid` reads on the host against the same binaries. perf cannot attach to a pid
# in the guest (the kernel answers ESRCH), and under emulation its start takes seconds: it starts disabled and is
# enabled once it is ready.
profiler=
profile() {
  command -v perf > /dev/null || fail "BLEPAY_BENCH_PROFILE needs perf (Debian: linux-perf)"
  mkfifo /run/blepay-perf.control /run/blepay-perf.ack
  perf record --quiet -a -F 1000 -g -e cpu-clock -D -1 --control fifo:/run/blepay-perf.control,/run/blepay-perf.ack \
    -o "$out/perf.data" > "$out/perf.log" 2>&1 &
  profiler=$!
  exec {perf_control}> /run/blepay-perf.control {perf_ack}< /run/blepay-perf.ack
  echo enable >&"$perf_control"
  read -r -u "$perf_ack" _
}
# The CPU during the payments is read once the client is on the bus and again before it exits (it is paced).
paced payments "$payments" c1 "$card"
[[ -z ${BLEPAY_BENCH_PROFILE:-} ]] || profile
span_start "$client_pid=bench-client"
step done
span_end payments "$client_pid=bench-client"
finish
if [[ -n $profiler ]]; then kill -INT "$profiler" && wait "$profiler" || true; fi
# blepayctl's start beside the rig's floor: any process at all (/bin/true), and bluetoothctl.
timed() {
  local name=$1 started
  shift
  started=$(now)
  "$@" > /dev/null
  record "$name" "$(since "$(now)" "$started")"
}
for ((i = 0; i < 20; i++)); do
  timed ctl_start blepayctl --help
  timed true_start /bin/true
  timed bluetoothctl_start bluetoothctl --version
done

for name in "${customers[@]:1}"; do
  customer "$name"
  fund_card --instance "$name"
done
# The broadcast, by the same client: the CPU is read until every customer was shown the request.
paced broadcast c1 "$card" "${customers[@]:1}"
span_start "$client_pid=bench-client"
step shown
span_end broadcast "$client_pid=bench-client"
step done
finish

# Idle: CPU and wake-ups over 30 s without payments; peak RSS over the whole run. A wake-up is a voluntary context
# switch of one of the daemon's threads: it went to sleep, so something had to wake it. A nonvoluntary switch is the
# thread preempted while it ran, which on the rig's one emulated CPU happens whenever it wakes another thread or
# process that then runs first; it is counted apart ("preempted"), not as a wake-up. Threads come and go (the
# runtime's worker pool): one that began within the 30 s counts whole, one that ended within them is not counted
# (summing the live threads' counters instead once gave a negative rate).
cpu() { awk '{ print $14 + $15 }' "/proc/$(cat "/run/blepay-$1.pid")/stat"; }
# switches DAEMON [EARLIER]: each live thread's "tid=voluntary,nonvoluntary"; with EARLIER (such a list), the
# switches since: the wake-ups, the preemptions, then "NAME WAKEUPS" for each thread name (what wakes: "blepay-dbus"
# a D-Bus connection, "NIO-…" a network event loop, the runtime's pool the rest).
switches() {
  python3 - "$(cat "/run/blepay-$1.pid")" "${2:-}" <<'PY'
import collections, glob, sys
now, names = {}, {}
for path in glob.glob("/proc/%s/task/*/status" % sys.argv[1]):
    try:
        fields = dict(line.split(":", 1) for line in open(path) if ":" in line)
    except OSError:
        continue  # the thread ended meanwhile
    tid = path.split("/")[4]
    now[tid] = (int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"]))
    names[tid] = fields["Name"].strip().replace(" ", "_")
if not sys.argv[2]:
    print(" ".join("%s=%d,%d" % (tid, *n) for tid, n in now.items()))
else:
    earlier = dict((tid, tuple(map(int, n.split(",")))) for tid, n in (item.split("=") for item in sys.argv[2].split()))
    by_name, preempted = collections.Counter(), 0
    for tid, (woken, ran) in now.items():
        was = earlier.get(tid, (0, 0))
        by_name[names[tid]] += woken - was[0]
        preempted += ran - was[1]
    print(sum(by_name.values()))
    print(preempted)
    for name, n in by_name.most_common():
        if n: print(name, n)
PY
}
# Idle starts once what the broadcast left behind has ended: the ledger closes each connection a daemon stopped using
# after its idle_timeout_seconds (15 s) with a TLS close and, a second later, the socket, which wakes both sides.
sleep 20
daemons=(business c1 ledger)
declare -A before woken
for d in "${daemons[@]}"; do
  before[$d]=$(cpu "$d")
  woken[$d]=$(switches "$d")
done
# What bluetoothd signals meanwhile, by adapter and kind: every daemon's D-Bus thread wakes for each signal it matches.
dbus-monitor --system "type='signal',sender='org.bluez'" > "$out/idle-signals.txt" 2>&1 &
monitor=$!
sleep 30
kill "$monitor" 2> /dev/null || true
wait "$monitor" 2> /dev/null || true
python3 - "$out/idle-signals.txt" <<'PY' | while read -r kind n; do record "idle_signals/$kind" "$(python3 -c "print($n / 30)")"; done
import collections, re, sys
# A signal's header names its path, interface and member; a PropertiesChanged's dict entries name its properties.
counts, kind, entry = collections.Counter(), None, False
for line in open(sys.argv[1]):
    header = re.match(r"signal .* path=([^;]+); interface=([^;]+); member=(\S+)", line)
    if header:
        if kind: counts[kind] += 1
        path, interface, member = header.groups()
        # The monitor's own name signals are not bluetoothd's.
        kind = "%s:%s" % (re.sub(r"/dev_[0-9A-F_]+", "/dev", path), member) if path.startswith("/org/bluez") else None
    elif kind and kind.endswith("PropertiesChanged") and entry:
        name = re.match(r'\s+string "(\w+)"', line)
        if name: kind += ("," if kind.count(":") > 1 else ":") + name.group(1)
    entry = "dict entry(" in line
if kind: counts[kind] += 1
for kind, n in counts.most_common(): print(kind, n)
PY
ticks=$(getconf CLK_TCK)
for d in "${daemons[@]}"; do
  record "idle_cpu_percent.$d" "$(python3 -c "import sys; print((int(sys.argv[1]) - int(sys.argv[2])) / $ticks / 30 * 100)" "$(cpu "$d")" "${before[$d]}")"
  switches "$d" "${woken[$d]}" > "$out/idle-$d.switches"
  { read -r woken_n; read -r preempted_n; } < "$out/idle-$d.switches"
  record "idle_wakeups_per_s.$d" "$(python3 -c "print($woken_n / 30)")"
  record "idle_preempted_per_s.$d" "$(python3 -c "print($preempted_n / 30)")"
  tail -n +3 "$out/idle-$d.switches" | while read -r name n; do
    record "idle_thread_wakeups_per_s/$d/$name" "$(python3 -c "print($n / 30)")"
  done
  record "peak_rss_mb.$d" "$(awk '/^VmHWM:/ { print $2 / 1024 }' "/proc/$(cat "/run/blepay-$d.pid")/status")"
  # What the resident pages are: the binary's own (file-backed, shared with the page cache) or the process's.
  record "rss_file_mb.$d" "$(awk '/^RssFile:/ { print $2 / 1024 }' "/proc/$(cat "/run/blepay-$d.pid")/status")"
  record "rss_anon_mb.$d" "$(awk '/^RssAnon:/ { print $2 / 1024 }' "/proc/$(cat "/run/blepay-$d.pid")/status")"
done

# Both offline: nothing answers at the ledger's address any more.
if ((offline > 0)); then
  stop ledger
  await "blepayctl settlement --json | grep -q '\"ledger_reachable\":false'" 60 || fail "the business never found the ledger gone"
  await "grep -q 'the ledger is unreachable' '$out/$host.c1.log'" 60 || fail "c1 never found the ledger gone"
  client payments "$offline" c1 "$card" offline_
  pending=$(grep -c '"receipt_status":"pendingSettlement"' "$out/c1.events.jsonl" || true)
  ((pending >= offline)) || fail "c1 heard $pending of $offline offline payments finished pending settlement"
fi

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
samples = {}
for line in open(f"{out}/bench.samples"):
    name, value = line.split()
    samples.setdefault(name, []).append(float(value))
def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]
result = {
    "discovery_to_first_request_s": samples["discovery"][0],
    "payments": len(samples.get("shown", [])),
    **{key: {"count": len(samples[kind]), "p50": pct(samples[kind], 50) * 1000, "p95": pct(samples[kind], 95) * 1000}
       if kind in samples else None
       for key, kind in (("request_to_received_ms", "shown"), ("call_to_finished_ms", "finished_call"), ("offline_request_to_received_ms", "offline_shown"),
                         ("offline_call_to_pending_ms", "offline_finished_call"), ("blepayctl_start_ms", "ctl_start"),
                         ("true_start_ms", "true_start"), ("bluetoothctl_start_ms", "bluetoothctl_start"))},
    # With one customer there is nobody to hear otherPaid.
    "broadcast": {"customers": len(samples.get("other_paid", [])) + 1, "other_paid": len(samples.get("other_paid", [])),
                  "cpu_busy": samples.get("broadcast_cpu_busy", [None])[0],
                  "cpu_by_process": {k.split("/", 1)[1]: v[0] for k, v in samples.items() if k.startswith("broadcast_cpu/")},
                  "request_to_all_shown_s": samples["broadcast_shown"][0],
                  "accept_to_last_other_paid_s": samples.get("broadcast_other_paid", [None])[0]},
    # p50 of each leg of the two timings, in ms (see bench-client.py).
    "payments_cpu_busy": samples.get("payments_cpu_busy", [None])[0],
    "payments_cpu_seconds": samples.get("payments_cpu_seconds", [None])[0],
    # Who took the emulated CPU meanwhile: each process name's share of it (and the interrupts', the processes' that
    # ended meanwhile, idle); the broadcast's likewise.
    "payments_cpu_by_process": {k.split("/", 1)[1]: v[0] for k, v in samples.items() if k.startswith("payments_cpu/")},
    "legs_p50_ms": {k[len("leg."):]: pct(v, 50) * 1000 for k, v in samples.items() if k.startswith("leg.")},
    "idle_cpu_percent": {k.split(".")[1]: v[0] for k, v in samples.items() if k.startswith("idle_cpu_percent.")},
    "idle_wakeups_per_s": {k.split(".")[1]: v[0] for k, v in samples.items() if k.startswith("idle_wakeups_per_s.")},
    "idle_preempted_per_s": {k.split(".")[1]: v[0] for k, v in samples.items() if k.startswith("idle_preempted_per_s.")},
    "peak_rss_mb": {k.split(".")[1]: v[0] for k, v in samples.items() if k.startswith("peak_rss_mb.")},
    "rss_file_mb": {k.split(".")[1]: v[0] for k, v in samples.items() if k.startswith("rss_file_mb.")},
    "rss_anon_mb": {k.split(".")[1]: v[0] for k, v in samples.items() if k.startswith("rss_anon_mb.")},
    "idle_signals_per_s": {k.split("/", 1)[1]: v[0] for k, v in samples.items() if k.startswith("idle_signals/")},
    "idle_thread_wakeups_per_s": {d: {k.split("/", 2)[2]: v[0] for k, v in samples.items()
                                      if k.startswith("idle_thread_wakeups_per_s/%s/" % d)} for d in ("business", "c1", "ledger")},
}
json.dump(result, open(f"{out}/daemons-bench.json", "w"), indent=2)
PY
for name in business "${customers[@]}"; do stop "$name"; done
log "done"
