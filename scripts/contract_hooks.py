"""schemathesis hooks for scripts/contract.sh.

- Credentials for each request: the operator's bearer token on the operator's routes, a fresh enrollment token on
  `POST /v1/devices` (one enrolls one device), and on the device routes the `Blepay-*` headers with an HMAC over the exact body bytes and the
  path and query that go on the wire (the hook serializes the body itself and sends those bytes). The merchant's
  device creates, cancels and reads payments; the customer's device makes every other device request. Every
  request gets a fresh nonce and every POST an Idempotency-Key of its own (but see replays below).
- Every other generated case of an operation is pointed at the resources scripts/contract_fixtures.py made (real
  ids). Those with valid (positive) data also get bodies that random data would practically never produce: a valid
  card or bank account, payment requests and acceptances signed by the right keys (and some by the wrong key, or
  for the wrong amount), pre-authorizations within and beyond the funds, an offline payment already settled. So the
  answers checked against the contract include the ledger's resources and its rule-based refusals, not only its
  input validation; invalid (negative) data reaches the real resources unchanged.
- Generated extra headers whose name or value has a control character are left out: that is not HTTP (RFC 9110
  §5.5), and the server's HTTP layer answers it with a bare 400 before the API sees the request.
- A POST byte for byte like an earlier one reuses its Idempotency-Key, and must get the first answer again with
  `Idempotent-Replayed: true` (an enrollment token in it withheld).
- The answers' statuses per operation, for scripts/contract.sh to check that every operation succeeded at least
  once and that no request was refused for its credentials (either would make the check pass vacuously), and the
  replays that were not the first answer.
"""
import atexit
import datetime
import json
import os
import re
import zlib

import requests
import schemathesis
from schemathesis.types import NotSet

from contract_fixtures import (b64, device_headers, encode_json, payment_acceptance, payment_request,
                               private_key)

FIXTURES = json.load(open(os.environ["BLEPAY_CONTRACT_FIXTURES"]))
BASE_URL = os.environ["BLEPAY_CONTRACT_URL"]
STATS = os.environ.get("BLEPAY_CONTRACT_STATS")

ADMIN = {"/v1/accounts", "/v1/accounts/{id}", "/v1/instruments/{id}/deposits", "/v1/instruments/{id}/block",
         "/v1/instruments/{id}/unblock", "/v1/double-spends", "/v1/accounts/{id}/enrollment-tokens",
         "/v1/accounts/{id}/devices", "/v1/accounts/{id}/block", "/v1/accounts/{id}/unblock",
         "/v1/devices/{id}/revoke"}
PUBLIC = {"/v1/health", "/v1/ledger-key", "/v1/ledger-keys"}
# The merchant's device creates and cancels payments and reads them (it is a party to every one of them), and
# renews its certificate.
MERCHANT = {("POST", "/v1/payments"), ("GET", "/v1/payments"), ("POST", "/v1/payments/{id}/cancel"), ("GET", "/v1/payments/{id}"),
            ("POST", "/v1/device/certificate"), ("POST", "/v1/payments/{id}/refunds"), ("GET", "/v1/refunds"),
            ("GET", "/v1/reports/daily")}
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
CREDENTIAL_HEADERS = {"authorization", "blepay-device", "blepay-timestamp", "blepay-nonce", "blepay-signature",
                      "idempotency-key"}

PAYMENTS = list(FIXTURES["payments"].values())
IDS = {
    "/v1/accounts/{id}": [FIXTURES["customer"]["account"], FIXTURES["merchant"]["account"]],
    "/v1/accounts/{id}/enrollment-tokens": [FIXTURES["customer"]["account"], FIXTURES["merchant"]["account"]],
    "/v1/accounts/{id}/devices": [FIXTURES["customer"]["account"], FIXTURES["merchant"]["account"]],
    # Blocking and revoking the accounts and devices the other requests use would stop them: spare ones.
    "/v1/accounts/{id}/block": [FIXTURES["spare"]["account"]],
    "/v1/accounts/{id}/unblock": [FIXTURES["spare"]["account"]],
    "/v1/devices/{id}/revoke": [FIXTURES["spare"]["device"]],
    "/v1/instruments/{id}": FIXTURES["instruments"],
    "/v1/instruments/{id}/deposits": FIXTURES["instruments"],
    "/v1/instruments/{id}/block": FIXTURES["instruments"],
    "/v1/instruments/{id}/unblock": FIXTURES["instruments"],
    "/v1/payments/{id}": PAYMENTS,
    "/v1/payments/{id}/acceptance": PAYMENTS,
    "/v1/payments/{id}/cancel": PAYMENTS,
    "/v1/payments/{id}/refunds": PAYMENTS,
    "/v1/pre-authorizations/{id}": FIXTURES["preAuthorizations"],
    "/v1/pre-authorizations/{id}/void": FIXTURES["preAuthorizations"],
}
CUSTOMER_KEY = private_key(FIXTURES, "customer")
MERCHANT_KEY = private_key(FIXTURES, "merchant")
YEAR = datetime.datetime.now(datetime.timezone.utc).year

generated = {}  # cases generated per operation
keys = {}  # Idempotency-Key by (method, path, body)
answers = {}  # (status, body) by Idempotency-Key
calls = {"cases": 0, "negative": 0, "statuses": {}, "unauthenticated": [], "replays": 0, "replayMismatches": []}


def _valid_instrument(seed):
    kind = seed % 3
    if kind == 0:
        return {"type": "card", "card": {"number": "4000 0566 5566 5556", "expiryMonth": 1 + seed % 12,
                                         "expiryYear": YEAR + 1 + seed % 5, "cvc": "123"}}
    if kind == 1:
        return {"type": "bank_account", "bankAccount": {
            "firstName": "Alice", "lastName": "Smith", "routingNumber": "011000015",
            "accountNumber": str(10_000 + seed % 1_000_000), "accountType": ("checking", "savings")[seed % 2]}}
    return {"type": "delegated", "delegated": {"provider": "wallet", "reference": f"ref-{seed}"}}


def _signed_request(amount, key=MERCHANT_KEY, **options):
    merchant = FIXTURES["merchant"]
    return payment_request(key, merchant["account"], merchant["name"], amount, **options)


@schemathesis.hook
def map_case(context, case):
    """Points every other case of an operation at real resources, with valid bodies or bodies the ledger's rules
    refuse (see the module's description)."""
    route, method = case.operation.path, case.method.upper()
    count = generated[case.operation.verbose_name] = generated.get(case.operation.verbose_name, 0) + 1
    if count % 2:
        return case
    seed = zlib.crc32(repr((count, case.path_parameters, case.query, case.body)).encode())
    ids = IDS.get(route)
    if ids and case.path_parameters is not None and "id" in case.path_parameters:
        case.path_parameters["id"] = ids[seed % len(ids)]
    if route == "/v1/payments/{id}" and case.query and "wait" in case.query:
        case.query["wait"] = 0.1  # a real payment's long poll would hold the answer for up to `wait` seconds
    if case.data_generation_method is not None and case.data_generation_method.is_negative:
        return case
    variant = count // 2 % 4
    amount = 1 + seed % 5000
    card = FIXTURES["instruments"][seed % len(FIXTURES["instruments"])]
    if (method, route) == ("POST", "/v1/instruments/{id}/deposits"):
        case.body = {"amount": amount, "currency": ("USD", "EUR", "JPY", "USD")[variant]}
    elif (method, route) == ("POST", "/v1/instruments"):
        case.body = _valid_instrument(seed)
    elif (method, route) == ("POST", "/v1/payments"):
        # Variant 0: signed with a key that is not the device's (422 ledger.invalid-signature).
        key = CUSTOMER_KEY if variant == 0 else MERCHANT_KEY
        _, request = _signed_request(amount, key=key, reference=f"order {seed % 1000}" if seed % 3 else None)
        case.body = {"request": b64(request)}
    elif (method, route) == ("POST", "/v1/payments/{id}/acceptance"):
        if variant == 0:
            case.path_parameters["id"] = FIXTURES["payments"]["settled"]
            case.body = {"acceptance": FIXTURES["settledAcceptance"]}
        else:
            # A customer executing for a business that never reached the ledger: the request comes along.
            # Variant 1 accepts another amount than requested (422 ledger.amount-mismatch); variant 2 asks more than
            # the card holds (422 ledger.insufficient-funds).
            if variant == 2:
                amount = 10**12
            payment_id, request = _signed_request(amount, business_online=False)
            accepted = amount + 1 if variant == 1 else amount
            acceptance = payment_acceptance(CUSTOMER_KEY, request, accepted, card, tip=seed % 100)
            case.path_parameters["id"] = payment_id
            case.body = {"acceptance": b64(acceptance), "request": b64(request)}
    elif (method, route) == ("POST", "/v1/pre-authorizations"):
        # Variant 0: more than the card holds (422 ledger.insufficient-funds).
        limit = 10**15 if variant == 0 else amount
        case.body = {"instrumentId": card, "amount": limit, "currency": "USD", "lifetimeSeconds": 60 + seed % 86400}
    elif (method, route) == ("POST", "/v1/settlements"):
        case.body = {"items": [FIXTURES["offlineItem"]]}
    elif (method, route) == ("POST", "/v1/payments/{id}/refunds"):
        # Small amounts, so that the settled payment has some left for many; variant 0 keeps the payment drawn
        # (open and cancelled ones are 409 `ledger.payment-not-settled`).
        if variant:
            case.path_parameters["id"] = FIXTURES["payments"]["settled"]
        case.body = {"amount": 1 + seed % 5, "reason": f"refund {seed % 1000}"}
    elif (method, route) == ("GET", "/v1/reports/daily"):
        case.query = {"date": datetime.date.today().isoformat(), "timeZone": ("UTC", "Europe/Lisbon")[variant % 2]}
    elif (method, route) == ("GET", "/v1/payments") and case.query:
        # The merchant's device lists its own payments: the operator's filters and a made-up cursor are 400s.
        for name in ("merchant", "account", "cursor"):
            case.query.pop(name, None)
    return case


@schemathesis.hook
def process_call_kwargs(context, case, kwargs):
    """Sets the credentials of the request that is about to be sent."""
    route, method = case.operation.path, case.method.upper()
    headers = {name: value for name, value in (case.headers or {}).items()
               if name.lower() not in CREDENTIAL_HEADERS and not CONTROL.search(f"{name}{value}")}
    body = b""
    if not isinstance(case.body, NotSet):
        # Serialize the body here and send exactly these bytes, so that the MAC covers what goes on the wire.
        body = encode_json(case.body)
        kwargs["data"] = body
        kwargs["json"] = None
    sent = case.as_transport_kwargs(base_url=BASE_URL)
    path = requests.Request(method, sent["url"], params=sent.get("params")).prepare().path_url
    if method == "POST":
        # A request byte for byte like an earlier one (generation repeats small examples) reuses its key: the
        # ledger must replay the first answer (checked in after_call).
        headers["Idempotency-Key"] = keys.setdefault((method, path, body), os.urandom(16).hex())
    if route in ADMIN:
        headers["Authorization"] = f"Bearer {FIXTURES['adminToken']}"
    elif route == "/v1/devices":
        # A token enrolls one device: each case gets a fresh one.
        business = isinstance(case.body, dict) and "noiseKey" in case.body
        account = FIXTURES["merchant" if business else "customer"]["account"]
        issued = requests.post(f"{BASE_URL}/v1/accounts/{account}/enrollment-tokens", timeout=20,
                               headers={"Authorization": f"Bearer {FIXTURES['adminToken']}",
                                        "Idempotency-Key": os.urandom(16).hex()})
        headers["Authorization"] = f"Bearer {issued.json()['token']}"
    elif route not in PUBLIC:
        device = FIXTURES["merchant" if (method, route) in MERCHANT else "customer"]["device"]
        headers.update(device_headers(device, method, path, body, headers.get("Idempotency-Key")))
    case.headers = headers


def _replays(first, answer):
    """Whether `answer` is `first` again. An enrollment token is shown once: its replay withholds it."""
    if answer == first:
        return True
    try:
        expected, replayed = json.loads(first[1]), json.loads(answer[1])
    except ValueError:
        return False
    if isinstance(expected, dict):
        if expected.pop("enrollmentToken", None) is not None:
            expected["enrollmentTokenWithheld"] = True
        if expected.pop("token", None) is not None:
            expected["withheld"] = True
    return answer[0] == first[0] and replayed == expected


@schemathesis.hook
def after_call(context, case, response):
    """Counts the answers; a 401 means this file's credentials are wrong, not the request, so it is kept. A POST
    with an Idempotency-Key used before must get the first answer again, marked `Idempotent-Replayed: true`."""
    calls["cases"] += 1
    if case.data_generation_method is not None and case.data_generation_method.is_negative:
        calls["negative"] += 1
    statuses = calls["statuses"].setdefault(case.operation.verbose_name, {})
    statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
    if response.status_code == 401:
        request = response.request
        calls["unauthenticated"].append(f"{request.method} {request.path_url} {request.body!r:.200}: {response.text}")
    key = response.request.headers.get("Idempotency-Key")
    if key is None:
        return
    answer = (response.status_code, response.content)
    first = answers.get(key)
    if first is None:
        # 401, 413 and 5xx answers are not kept: the request is carried out when it comes again.
        if response.status_code not in (401, 413) and response.status_code < 500:
            answers[key] = answer
    else:
        calls["replays"] += 1
        if not _replays(first, answer) or response.headers.get("Idempotent-Replayed") != "true":
            calls["replayMismatches"].append(
                f"{response.request.method} {response.request.path_url} {response.request.body!r:.200}: first "
                f"{first[0]} {first[1]!r:.300}, then {answer[0]} {answer[1]!r:.300} "
                f"(Idempotent-Replayed: {response.headers.get('Idempotent-Replayed')})")


@atexit.register
def _write_stats():
    if STATS:
        with open(STATS, "w") as file:
            json.dump(calls, file, indent=1)
