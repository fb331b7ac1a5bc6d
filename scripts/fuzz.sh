#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer + AddressSanitizer) of blepay's protocol decoders and reassembler.
#   scripts/fuzz.sh [SECONDS]   (default 60)
# Builds into .build-fuzz/, seeds the corpus from the committed vectors, and exits non-zero on any crash, leak or
# timeout; the crashing input is left in .build-fuzz/ (its path is printed).
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.build-fuzz
mkdir -p "$out/corpus"

# The linker's notes about ASan's local symbols are noise; show the log only if the build fails.
swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name FuzzProtocol \
  "$root"/Sources/BlepayProtocol/Model/*.swift "$root"/Sources/BlepayProtocol/Codec/*.swift \
  "$root"/Sources/BlepayProtocol/Framing/*.swift "$root"/Fuzz/FuzzProtocol.swift -o "$out/fuzz-protocol" \
  >"$out/build.log" 2>&1 || { cat "$out/build.log" >&2; exit 1; }

# Seeds: every vector message (selector 0) and record fragments (selector 3), from the committed vectors.
python3 - "$root/Tests/BlepayProtocolTests/Vectors" "$out/corpus" <<'PY'
import json, sys, pathlib
vectors, corpus = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for name, hexed in json.loads((vectors / "messages.json").read_text()).items():
    (corpus / f"message-{name}").write_bytes(bytes([0]) + bytes.fromhex(hexed))
fragments = json.loads((vectors / "fragments.json").read_text())
for mtu, frags in fragments["fragments"].items():
    data = bytearray([3])
    for f in frags:
        b = bytes.fromhex(f)
        data += bytes([len(b)]) + b
    (corpus / f"fragments-{mtu}").write_bytes(bytes(data))
(corpus / "record").write_bytes(bytes([1]) + bytes.fromhex(fragments["record"]))
PY

cd "$out"
status=0
./fuzz-protocol -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 corpus \
  >fuzz.log 2>&1 || status=$?
grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|==[0-9]+==ERROR|SUMMARY|Fatal error|artifact_prefix|Test unit written)" \
  fuzz.log || true
if ((status != 0)); then
  echo "fuzz: FAILED (exit $status); see $out/fuzz.log and the crash-* file above" >&2
  exit 1
fi
echo "fuzz: no crash in ${seconds}s"
