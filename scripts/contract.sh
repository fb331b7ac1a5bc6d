#!/usr/bin/env bash
# Checks the running ledger against its contract, docs/ledger-openapi.yaml, with schemathesis: no server errors,
# and every status, content type, header and body as documented. Then the books must still pass
# `blepay-ledger audit`.
#
# Usage: scripts/contract.sh PATH_TO_blepay-ledger [EXAMPLES]
#   EXAMPLES: generated cases per operation (default 50; also CONTRACT_EXAMPLES). CONTRACT_VERBOSE=1 prints
#   schemathesis' report also when the run passes.
# The ledger runs over HTTPS (a certificate from a CA made for the run, which every client is given) on a free port
# with SQLite in a temporary state directory; scripts/contract_fixtures.py prepares accounts, devices, funded cards,
# a pre-authorization and payments through the API, and scripts/contract_hooks.py signs schemathesis' requests and
# points every other one at those resources. Cases are valid and invalid data (schemathesis' positive and negative
# generation), derandomized.
set -euo pipefail

schemathesis_version=3.39.16
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${1:?usage: scripts/contract.sh PATH_TO_blepay-ledger [EXAMPLES]}
binary=$(realpath "$binary")
examples=${2:-${CONTRACT_EXAMPLES:-50}}
[[ -x $binary ]] || { echo "contract: $binary is not an executable" >&2; exit 2; }

pip_install() {
  python3 -m pip install --quiet --disable-pip-version-check "$@" ||
    python3 -m pip install --quiet --disable-pip-version-check --user "$@"
}
installed=$(python3 -c 'import schemathesis; print(schemathesis.__version__)' 2>/dev/null || true)
if [[ $installed != "$schemathesis_version" ]]; then
  echo "contract: installing schemathesis $schemathesis_version"
  pip_install "schemathesis==$schemathesis_version"
fi
python3 -c 'import cryptography.hazmat.primitives.asymmetric.ed25519' 2>/dev/null || pip_install cryptography
schemathesis=(python3 -m schemathesis.cli)

work=$(mktemp -d "${TMPDIR:-/tmp}/blepay-contract.XXXXXX")
state="$work/state"
server=
stop_server() {
  [[ -n $server ]] || return 0
  kill "$server" 2>/dev/null || true
  for _ in $(seq 100); do
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=
}
trap 'stop_server; rm -rf "$work"' EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="https://127.0.0.1:$port"
start=$SECONDS
bash "$root/scripts/tls-certificate.sh" "$work/tls" ledger IP:127.0.0.1 DNS:localhost
ca="$work/tls/ca.crt"
printf '[tls]\ncertificate_file = "%s"\nkey_file = "%s"\n' "$work/tls/ledger.crt" "$work/tls/ledger.key" >"$work/ledger.toml"
BLEPAY_LOG_LEVEL=${BLEPAY_LOG_LEVEL:-warning} "$binary" serve --config "$work/ledger.toml" --state-directory "$state" \
  --port "$port" 2>"$work/ledger.log" &
server=$!
up=
for _ in $(seq 300); do
  if python3 -c 'import ssl, sys, urllib.request
context = ssl.create_default_context(cafile=sys.argv[2])
sys.exit(urllib.request.urlopen(sys.argv[1], timeout=1, context=context).status != 200)' "$url/v1/health" "$ca" 2>/dev/null; then
    up=1
    break
  fi
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if [[ -z $up ]]; then
  echo "contract: the ledger did not answer GET /v1/health on $url; its log:" >&2
  cat "$work/ledger.log" >&2
  exit 1
fi

export PYTHONPATH="$root/scripts${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1
if ! REQUESTS_CA_BUNDLE="$ca" python3 "$root/scripts/contract_fixtures.py" "$url" "$state" >"$work/fixtures.json"; then
  echo "contract: preparing the fixtures failed; the ledger's log:" >&2
  cat "$work/ledger.log" >&2
  exit 1
fi

set +e
(
  cd "$work"
  # The hooks' own requests (a fresh enrollment token per case) trust the same CA.
  BLEPAY_CONTRACT_FIXTURES="$work/fixtures.json" BLEPAY_CONTRACT_URL="$url" BLEPAY_CONTRACT_STATS="$work/stats.json" \
    REQUESTS_CA_BUNDLE="$ca" SCHEMATHESIS_HOOKS=contract_hooks SCHEMATHESIS_TELEMETRY=false \
    "${schemathesis[@]}" run "$root/docs/ledger-openapi.yaml" --base-url "$url" --request-tls-verify "$ca" \
    --checks not_a_server_error --checks status_code_conformance --checks content_type_conformance \
    --checks response_schema_conformance --checks response_headers_conformance \
    --hypothesis-max-examples "$examples" --hypothesis-derandomize --hypothesis-suppress-health-check all \
    --data-generation-method all --workers 1 --request-timeout 20000 --no-color --show-trace
) >"$work/report.txt" 2>&1
status=$?
set -e

if ! kill -0 "$server" 2>/dev/null; then
  cat "$work/report.txt"
  echo "contract: FAILED: the ledger exited during the run; its log:" >&2
  tail -n 200 "$work/ledger.log" >&2
  exit 1
fi
stop_server
if [[ -n ${CONTRACT_VERBOSE:-} ]]; then cat "$work/report.txt"; fi
if [[ $status != 0 ]]; then
  cat "$work/report.txt"
  echo "contract: FAILED: responses that do not match docs/ledger-openapi.yaml (report above); the ledger's log:" >&2
  tail -n 200 "$work/ledger.log" >&2
  exit 1
fi
if ! "$binary" audit --state-directory "$state" >"$work/audit.txt" 2>&1; then
  cat "$work/audit.txt" >&2
  echo "contract: FAILED: the audit found the books unsound after the run" >&2
  exit 1
fi

# Guard against a vacuous pass: every documented operation must have been tested and must have succeeded at least
# once, and no request may have been refused for its credentials (a 401 is documented, but here it would mean that
# the hooks signed wrongly). And every replayed POST must have been answered as the first time.
if ! summary=$(python3 - "$work/stats.json" "$root/docs/ledger-openapi.yaml" <<'PY'
import json, os, sys
import yaml
stats = json.load(open(sys.argv[1]))
documented = {f"{method.upper()} {path}" for path, item in yaml.safe_load(open(sys.argv[2]))["paths"].items()
              for method in item if method in ("get", "put", "post", "delete", "patch", "head", "options")}
problems = [f"{operation} was not tested" for operation in sorted(documented - set(stats["statuses"]))]
problems += [f"{operation} never succeeded (statuses: {statuses})"
            for operation, statuses in sorted(stats["statuses"].items())
            if not any(200 <= int(status) < 300 for status in statuses)]
problems += [f"refused for its credentials: {request}" for request in stats["unauthenticated"]]
problems += [f"a replay is not the first answer: {replay}" for replay in stats["replayMismatches"]]
for problem in problems:
    print(f"contract: {problem}", file=sys.stderr)
if os.environ.get("CONTRACT_VERBOSE"):
    for operation, statuses in sorted(stats["statuses"].items()):
        print(f"contract: {operation:40} {dict(sorted(statuses.items()))}", file=sys.stderr)
print(len(stats["statuses"]), stats["cases"], stats["negative"], stats["replays"])
sys.exit(1 if problems else 0)
PY
); then
  echo "contract: FAILED: the run did not exercise the API as intended" >&2
  exit 1
fi
read -r operations cases negative replays <<<"$summary"
echo "contract: $cases cases ($negative with invalid data, $replays idempotent replays); $(tail -n 1 "$work/audit.txt"); $((SECONDS - start)) s"
echo "contract: $operations operations, $cases cases, no server errors, every response matches docs/ledger-openapi.yaml"
