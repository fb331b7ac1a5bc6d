#!/usr/bin/env bash
# The daemons' timings and footprint in the one-host rig (scripts/rig-bench.sh: a business and five customers on
# six adapters, then both offline), then one request broadcast to 10 customers (11 adapters) and to 20 (21), printed
# as 'bench:' lines. Usage: scripts/bench-daemons.sh BIN_DIR [PAYMENTS] ['BROADCAST_CUSTOMERS ...'] [OFFLINE_PAYMENTS]
set -euo pipefail
# The air as a product has it: no btmon, no bluetoothd debug log (docs/rig.md).
export BLEPAY_RIG_QUIET=1
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "${1:?usage: bench-daemons.sh BIN_DIR [PAYMENTS]}" && pwd)
payments=${2:-50}
wide=(${3:-10 20})
offline=${4:-20}
out=$(mktemp -d /tmp/blepay-bench-daemons.XXXXXX)
# Kept when a scenario fails (each daemon's log and events are what tells why), and when profiled.
keep() {
  local status=$?
  if ((status == 0)) && [[ -z ${BLEPAY_BENCH_PROFILE:-} ]]; then rm -rf "$out"; else
    echo "bench: the daemons' logs are kept in $out" >&2
  fi
}
trap keep EXIT
# What the scenario inside the rig is told (rig-bench.sh): BLEPAY_BENCH_LOG_LEVEL, the daemons' log level; and
# BLEPAY_BENCH_PROFILE, perf samples of the payments in five/perf.data, read by `perf report -i … --symfs DIR` where
# DIR/usr/local/bin holds BIN_DIR's programs.
knobs="BLEPAY_BENCH_LOG_LEVEL=${BLEPAY_BENCH_LOG_LEVEL:-info} BLEPAY_BENCH_PROFILE=${BLEPAY_BENCH_PROFILE:-}"

# run DIR CUSTOMERS PAYMENTS OFFLINE: the scenario in the rig, its results in DIR/daemons-bench.json.
run() {
  mkdir -p "$1"
  # The bench client's D-Bus library, pure Python, where the rig's python3 finds it.
  python3 -m pip install --quiet --disable-pip-version-check --target "$1/python" jeepney==0.9.0
  "$here/rig.sh" --out "$1" --timeout 2400 --memory "$((1 + $2 / 8))G" one-host --controllers $(($2 + 1)) \
    -- "$knobs bash $here/rig-bench.sh $bin $3 $2 $4" \
    > "$1/rig.log" 2>&1 || {
    echo "bench: the daemons' scenario with $2 customers failed; rig output:" >&2
    tail -n 40 "$1/rig.log" >&2
    exit 1
  }
}
run "$out/five" 5 "$payments" "$offline"
for n in "${wide[@]}"; do run "$out/wide-$n" "$n" 0 0; done
python3 - "$out/five/daemons-bench.json" "${wide[@]/#/$out/wide-}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("bench: daemons discovery (customer start -> open request shown) %.2f s" % r["discovery_to_first_request_s"])
# From the bench client's own D-Bus calls (it stays on the bus, as an app does), each beside its goal.
for key, label, goal in (("request_to_received_ms", "SendPaymentRequest call -> receivedPayment", "goal p50 <= 40 ms"),
                         ("call_to_finished_ms", "AcceptPayment call -> finishedPayment", "goal p50 <= 80 ms"),
                         ("offline_request_to_received_ms", "both offline, SendPaymentRequest call -> receivedPayment", None),
                         ("offline_call_to_pending_ms", "both offline, AcceptPayment call -> finishedPayment (pending settlement)", None),
                         ("blepayctl_start_ms", "blepayctl start (--help)", "goal p50 <= 30 ms"),
                         ("true_start_ms", "/bin/true start (the rig's floor for any process)", None),
                         ("bluetoothctl_start_ms", "bluetoothctl start (--version)", None)):
    if r.get(key):
        print("bench: daemons %s over %d runs p50 %.1f ms p95 %.1f ms%s"
              % (label, r[key]["count"], r[key]["p50"], r[key]["p95"], "; " + goal if goal else ""))
legs = r.get("legs_p50_ms") or {}
if legs:
    print("bench: daemons request legs p50: call -> business offered %.1f ms, offered -> customer shown %.1f ms"
          % (legs["request_to_offered"], legs["offered_to_shown"]))
    print("bench: daemons accept legs p50: call -> business has the acceptance %.1f ms, -> ledger executed %.1f ms, "
          "-> customer finished %.1f ms" % (legs["accept_to_business"], legs["business_to_ledger_done"],
                                             legs["ledger_done_to_customer"]))
# Where the emulated CPU went, by process: what the timings waited for when it was busy.
def by_process(shares):
    return ", ".join("%s %.1f%%" % (name, 100 * share) for name, share in sorted(shares.items(), key=lambda item: -item[1])
                     if share >= 0.001)
if r.get("payments_cpu_busy") is not None and r.get("payments"):
    print("bench: daemons the emulated CPU was %.0f%% busy during the payments" % (100 * r["payments_cpu_busy"]))
    if r.get("payments_cpu_by_process"):
        print("bench: daemons the emulated CPU during the payments by process: %s" % by_process(r["payments_cpu_by_process"]))
    # Each process's CPU time over the payments, a payment. It is emulated time: it moves with the rig's speed as
    # the timings do, so a comparison reads it against the ledger's in the same run.
    if r.get("payments_cpu_seconds"):
        shares = r["payments_cpu_by_process"]
        print("bench: daemons emulated CPU a payment: %s" % ", ".join(
            "%s %.1f ms" % (name, 1000 * shares.get(name, 0) * r["payments_cpu_seconds"] / r["payments"])
            for name in ("business", "c1", "ledger")))
for b in [r["broadcast"]] + [json.load(open(path + "/daemons-bench.json"))["broadcast"] for path in sys.argv[2:]]:
    print("bench: daemons broadcast to %d customers: all shown %.2f s after the request (goal <= 2 s); %d otherPaid, the last %.2f s after the accept (goal <= 1 s)"
          % (b["customers"], b["request_to_all_shown_s"], b["other_paid"], b["accept_to_last_other_paid_s"]))
    if b.get("cpu_busy") is not None:
        print("bench: daemons broadcast to %d customers: the emulated CPU was %.0f%% busy until all were shown"
              % (b["customers"], 100 * b["cpu_busy"]))
    if b.get("cpu_by_process"):
        print("bench: daemons broadcast to %d customers: the emulated CPU until all were shown by process: %s"
              % (b["customers"], by_process(b["cpu_by_process"])))
# The goal while idle: at most 1 wake-up a second and 0.1% of a core (the ledger is not a blepayd).
for d in sorted(r["idle_cpu_percent"]):
    wakeups = r.get("idle_wakeups_per_s", {}).get(d)
    print("bench: daemons %s idle CPU %.2f%% of a core, %s wake-ups/s (goal <= 1/s, <= 0.1%%), peak RSS %.1f MB (goal <= 20 MB)"
          % (d, r["idle_cpu_percent"][d], "%.1f" % wakeups if wakeups is not None else "?", r["peak_rss_mb"][d]))
    if d in r.get("rss_file_mb", {}):
        print("bench: daemons %s resident after idling: %.1f MB of its binary's pages (file-backed, shared), %.1f MB its own"
              % (d, r["rss_file_mb"][d], r["rss_anon_mb"][d]))
    preempted = r.get("idle_preempted_per_s", {}).get(d)
    if preempted is not None:
        print("bench: daemons %s idle, preempted while running (not wake-ups): %.1f/s" % (d, preempted))
    threads = r.get("idle_thread_wakeups_per_s", {}).get(d, {})
    if threads:
        print("bench: daemons %s idle wake-ups/s by thread: %s" % (d, ", ".join("%s %.1f" % item for item in threads.items())))
signals = r.get("idle_signals_per_s", {})
if signals:
    print("bench: daemons idle, bluetoothd's signals/s by path and kind: %s"
          % ", ".join("%s %.2f" % item for item in sorted(signals.items(), key=lambda item: -item[1])))
PY
