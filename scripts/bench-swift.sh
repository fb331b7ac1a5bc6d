#!/usr/bin/env bash
# Runs the Benchmarks package (ordo-one/benchmark, release build) and prints its results as 'bench:' lines:
# operations per second from the p90 wall clock (and the broadcast's p90 time itself), custom metrics (bytes,
# packets) as they are, the codec-to-JSON ratios the protocol's goals are stated in, and the p50/p99 of a business
# taking a both-offline acceptance.
# Usage: scripts/bench-swift.sh [FILTER_REGEX]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d /tmp/blepay-swift-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

swift package --package-path "$root/Benchmarks" --allow-writing-to-package-directory benchmark \
  --filter "${1:-.*}" --skip offline-accept-keep --format metricP90AbsoluteThresholds --path "$out" --no-progress \
  >"$out/run.log" 2>&1 || {
  echo "bench: the Swift benchmarks failed:" >&2
  cat "$out/run.log" >&2
  exit 1
}

# The business's both-offline work is judged at p99: that benchmark runs on its own, its percentiles exported.
swift package --package-path "$root/Benchmarks" --allow-writing-to-package-directory benchmark \
  --filter offline-accept-keep --format histogramPercentiles --path "$out/percentiles" --no-progress \
  >"$out/percentiles.log" 2>&1 || {
  echo "bench: the offline-accept-keep percentiles failed:" >&2
  cat "$out/percentiles.log" >&2
  exit 1
}

python3 - "$out" <<'PY'
import glob, json, os, re, sys
results = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.p90.json"))):
    name = os.path.basename(path).split(".", 1)[1].rsplit(".p90.json", 1)[0]
    results[name] = json.load(open(path))
# Timed benchmarks run 1,000 operations per iteration (scaling factor kilo) unless named below.
operations = {"online-payment-session": 1, "business-broadcast-20": 1}
for name, metrics in results.items():
    if name == "business-broadcast-20":
        print(f"bench: {name} {metrics['wallClock'] / 1e3:.1f} us")
    if "wallClock" in metrics:
        per_second = operations.get(name, 1000) * 1e9 / metrics["wallClock"]
        print(f"bench: {name}-ops {per_second:.0f} ops/s")
        if "mallocCountTotal" in metrics:
            print(f"bench: {name}-mallocs {metrics['mallocCountTotal'] / operations.get(name, 1000):.1f} count/op")
    else:
        for metric, value in metrics.items():
            unit = "packets" if "packets" in metric else "bytes"
            print(f"bench: {metric} {value} {unit}")
for baseline in ("json", "json-compact"):
    for message in ("payment-request", "payment-acceptance"):
        codec, other = results.get(f"codec-{message}"), results.get(f"{baseline}-{message}")
        if codec and other:
            print(f"bench: codec-vs-{baseline}-{message}-speed {other['wallClock'] / codec['wallClock']:.1f} x")
        codec, other = results.get(f"codec-{message}-bytes"), results.get(f"{baseline}-{message}-bytes")
        if codec and other:
            ratio = codec[f"codec-{message}-bytes"] / other[f"{baseline}-{message}-bytes"]
            print(f"bench: codec-vs-{baseline}-{message}-size {ratio:.2f} ratio")
for path in glob.glob(os.path.join(sys.argv[1], "percentiles", "*offline-accept-keep*.percentiles.tsv")):
    lines = open(path).read().split("\n")
    # The header names the unit the values are scaled to, e.g. "Time (wall clock) (μs) *".
    unit = re.findall(r"\((ns|μs|us|ms|s)\)", lines[0])[-1]
    to_ms = {"ns": 1e-6, "μs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
    values = {int(p): float(v) * to_ms for p, v in (line.split("\t") for line in lines[1:] if line)}
    print(f"bench: offline-accept-keep p50 {values[50]:.2f} ms p99 {values[99]:.2f} ms")
PY
