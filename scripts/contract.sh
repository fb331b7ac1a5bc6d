#!/usr/bin/env bash
# Checks the running ledger against docs/ledger-openapi.yaml with schemathesis (PyPI): no 5xx, and every status,
# content type and body as documented. Then the books must still pass `blepay-ledger audit`.
# Usage: scripts/contract.sh BLEPAY_LEDGER_BINARY [EXAMPLES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:?usage: contract.sh BLEPAY_LEDGER_BINARY [EXAMPLES]}")
examples=${2:-25}
version=3.39.16

python3 -c "import schemathesis, sys; sys.exit(schemathesis.__version__ != '$version')" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "schemathesis==$version"

work=$(mktemp -d /tmp/blepay-contract.XXXXXX)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BLEPAY_LOG_LEVEL=warning "$bin" serve --state-directory "$work/state" --port "$port" 2>"$work/ledger.log" &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -rf "$work"' EXIT
url="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -fs "$url/v1/health" >/dev/null && break; sleep 0.1; done
curl -fs "$url/v1/health" >/dev/null || { echo "contract: the ledger did not start" >&2; cat "$work/ledger.log" >&2; exit 1; }

# A customer with a funded card and a business, enrolled through the API.
python3 - "$url" "$work/state/admin.token" >"$work/fixtures.json" <<'PY'
import datetime, json, os, sys, uuid, requests
url, token = sys.argv[1], open(sys.argv[2]).read().strip()
def post(path, body, bearer):
    r = requests.post(url + path, json=body, headers={"Authorization": f"Bearer {bearer}", "Idempotency-Key": str(uuid.uuid4())})
    r.raise_for_status()
    return r.json()
def key():  # an Ed25519 or X25519 public key's shape: 32 bytes of hex
    return os.urandom(32).hex()
customer = post("/v1/accounts", {"kind": "customer", "name": "Alice"}, token)
merchant = post("/v1/accounts", {"kind": "merchant", "name": "Cafe"}, token)
alice = post("/v1/devices", {"name": "phone", "signingKey": key()}, customer["enrollmentToken"])
cafe = post("/v1/devices", {"name": "till", "signingKey": key(), "noiseKey": key()}, merchant["enrollmentToken"])
print(json.dumps({"adminToken": token, "enrollmentToken": customer["enrollmentToken"], "customer": alice, "merchant": cafe}))
PY

cd "$work"
cp "$root/scripts/contract_hooks.py" "$work/"
if ! BLEPAY_CONTRACT_FIXTURES="$work/fixtures.json" BLEPAY_CONTRACT_URL="$url" SCHEMATHESIS_HOOKS=contract_hooks PYTHONPATH="$work" \
  schemathesis run "$root/docs/ledger-openapi.yaml" --base-url "$url" \
    --checks not_a_server_error --checks status_code_conformance --checks content_type_conformance \
    --checks response_schema_conformance --hypothesis-max-examples "$examples" --hypothesis-derandomize \
    --workers 1 --no-color >"$work/report.txt" 2>&1; then
  cat "$work/report.txt"
  echo "contract: FAILED (ledger log follows)" >&2
  cat "$work/ledger.log" >&2
  exit 1
fi
summary=$(grep -E "^=+ .*passed" "$work/report.txt" | tail -1 | tr -d "=" | xargs || true)
sed -n "/WARNINGS/,/^$/p" "$work/report.txt"
kill $server && wait $server 2>/dev/null || true
"$bin" audit --state-directory "$work/state" >"$work/audit.txt" 2>&1 || {
  echo "contract: the audit found problems after the run:" >&2
  cat "$work/audit.txt" >&2
  exit 1
}
echo "contract: docs/ledger-openapi.yaml against the running ledger: ${summary:-passed}; no server errors; audit sound"
