"""What scripts/contract.sh needs besides schemathesis: a client for the ledger's API (the operator's bearer token,
enrollment, device requests signed with HMAC as docs/ledger.md specifies) and the signed protocol messages
(docs/protocol.md) behind payments, acceptances and offline settlement, so that the contract check reaches real
resources and not only refusals.

`python3 contract_fixtures.py URL STATE_DIRECTORY` prepares, through the API: a customer and a merchant account, a
device for each (real Ed25519 and X25519 keys), two cards on the customer with money deposited, a pre-authorization,
payments that are open, settled, cancelled and settled offline. It prints them as JSON for scripts/contract_hooks.py.
"""
import base64
import datetime
import hashlib
import hmac
import json
import os
import sys
import time
import uuid

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

RAW = (serialization.Encoding.Raw, serialization.PublicFormat.Raw)
CURRENCY_EXPONENTS = {"USD": 2, "EUR": 2, "JPY": 0}


# Device requests (docs/ledger.md, Security).

def canonical(method, path, timestamp, nonce, idempotency_key, body):
    """The bytes a device MACs: the method, the path with its query as sent, the time, the nonce, the idempotency key
    (empty when none is sent), the body's hash."""
    return "\n".join(["blepay-ledger/2", method.upper(), path, str(timestamp), nonce, idempotency_key or "",
                      hashlib.sha256(body).hexdigest()]).encode()


def device_headers(device, method, path, body, idempotency_key=None):
    """The four `Blepay-*` headers of one request by `device` (`{"id", "secret"}` as enrollment answered)."""
    timestamp, nonce = int(time.time()), uuid.uuid4().hex
    data = canonical(method, path, timestamp, nonce, idempotency_key, body)
    mac = hmac.new(base64.b64decode(device["secret"]), data, hashlib.sha256)
    return {"Blepay-Device": device["id"], "Blepay-Timestamp": str(timestamp), "Blepay-Nonce": nonce,
            "Blepay-Signature": mac.hexdigest()}


def encode_json(value):
    return json.dumps(value, separators=(",", ":")).encode()


class Ledger:
    def __init__(self, url):
        self.url = url.rstrip("/")
        self.session = requests.Session()

    def call(self, method, path, body=None, bearer=None, device=None, expect=(200, 201)):
        data = b"" if body is None else encode_json(body)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if method == "POST":
            headers["Idempotency-Key"] = str(uuid.uuid4())
        if bearer is not None:
            headers["Authorization"] = f"Bearer {bearer}"
        if device is not None:
            headers.update(device_headers(device, method, path, data, headers.get("Idempotency-Key")))
        response = self.session.request(method, self.url + path, data=data, headers=headers, timeout=30)
        if response.status_code not in expect:
            raise SystemExit(f"contract fixtures: {method} {path} answered {response.status_code}: {response.text}")
        return response.json()


# Protocol messages (docs/protocol.md §5, §6): canonical TLV fields, Ed25519 over context + unsigned fields.

def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(tag, value):
    return bytes([tag]) + varint(len(value)) + value


def uint(tag, value):
    return field(tag, varint(value))


def money(tag, minor_units, currency):
    return uint(tag, minor_units) + field(tag + 1, currency.encode() + bytes([CURRENCY_EXPONENTS[currency]]))


def signed(context, unsigned_fields, key):
    return unsigned_fields + field(100, key.sign(context + unsigned_fields))


def now_ms():
    return int(time.time() * 1000)


def payment_request(merchant_key, merchant_id, merchant_name, amount, currency="USD", reference=None,
                    business_online=True, lifetime_ms=10 * 60 * 1000, payment_id=None):
    """A merchant-signed PaymentRequest: (payment id hex, encoding)."""
    payment_id = payment_id or os.urandom(16)
    created = now_ms()
    fields = field(1, payment_id) + money(2, amount, currency)
    if reference is not None:
        fields += field(4, reference.encode())
    fields += (field(5, merchant_id.encode()) + field(6, merchant_name.encode()) + uint(7, created)
               + uint(8, created + lifetime_ms) + field(9, bytes([1 if business_online else 0])))
    return payment_id.hex(), signed(b"blepay/1 payment-request\0", fields, merchant_key)


def payment_acceptance(customer_key, request, amount, instrument_id, tip=0, currency="USD", voucher=None,
                       sequence=1, spent_before=0):
    """The customer-signed PaymentAcceptance of `request` (its encoding); with `voucher` (a voucher's encoding), an
    offline acceptance presenting it."""
    fields = (field(1, request[2:18]) + money(2, amount, currency) + uint(4, tip) + field(5, instrument_id.encode())
              + field(6, b"\0") + uint(7, now_ms()) + field(8, hashlib.sha256(request).digest())
              + field(9, os.urandom(32)) + field(10, public(customer_key)))
    if voucher is not None:
        fields += field(11, field(1, voucher) + uint(2, sequence) + uint(3, spent_before))
    return signed(b"blepay/1 payment-acceptance\0", fields, customer_key)


def public(key):
    return key.public_key().public_bytes(*RAW)


def private_hex(key):
    return key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                             serialization.NoEncryption()).hex()


def b64(data):
    return base64.b64encode(data).decode()


def prepare(url, state_directory):
    ledger = Ledger(url)
    with open(os.path.join(state_directory, "admin.token")) as file:
        admin = file.read().strip()
    customer_key, merchant_key = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    noise_key = X25519PrivateKey.generate()

    customer = ledger.call("POST", "/v1/accounts", {"kind": "customer", "name": "Alice"}, bearer=admin)
    merchant = ledger.call("POST", "/v1/accounts", {"kind": "merchant", "name": "Corner Cafe"}, bearer=admin)
    phone = ledger.call("POST", "/v1/devices", {"name": "Alice's phone", "signingKey": public(customer_key).hex()},
                        bearer=customer["enrollmentToken"])
    till = ledger.call("POST", "/v1/devices", {"name": "till 1", "signingKey": public(merchant_key).hex(),
                                               "noiseKey": public(noise_key).hex()},
                       bearer=merchant["enrollmentToken"])

    # An account and a device for the operator's block, unblock and revoke, which would stop the others' requests.
    spare = ledger.call("POST", "/v1/accounts", {"kind": "customer", "name": "Bob"}, bearer=admin)
    spare_device = ledger.call("POST", "/v1/devices", {"name": "Bob's phone",
                                                       "signingKey": public(Ed25519PrivateKey.generate()).hex()},
                               bearer=spare["enrollmentToken"])

    year = datetime.datetime.now(datetime.timezone.utc).year
    cards = []
    for number in ("4242424242424242", "5555555555554444"):
        card = {"number": number, "expiryMonth": 12, "expiryYear": year + 3, "cvc": "123"}
        instrument = ledger.call("POST", "/v1/instruments", {"type": "card", "card": card}, device=phone)
        ledger.call("POST", f"/v1/instruments/{instrument['id']}/deposits", {"amount": 100_000_000, "currency": "USD"},
                    bearer=admin)
        cards.append(instrument["id"])

    pre_authorization = ledger.call("POST", "/v1/pre-authorizations", {
        "instrumentId": cards[0], "amount": 50_000, "currency": "USD", "lifetimeSeconds": 3600}, device=phone)

    def create_payment(amount, reference=None):
        payment_id, request = payment_request(merchant_key, merchant["id"], merchant["name"], amount, reference=reference)
        ledger.call("POST", "/v1/payments", {"request": b64(request)}, device=till)
        return payment_id, request

    open_id, _ = create_payment(1250, reference="table 4")
    settled_id, settled_request = create_payment(480)
    acceptance = payment_acceptance(customer_key, settled_request, 480, cards[0], tip=50)
    paid = ledger.call("POST", f"/v1/payments/{settled_id}/acceptance", {"acceptance": b64(acceptance)}, device=phone)
    assert paid["status"] == "settled", paid
    cancelled_id, _ = create_payment(999)
    ledger.call("POST", f"/v1/payments/{cancelled_id}/cancel", device=till)

    _, offline_request = payment_request(merchant_key, merchant["id"], merchant["name"], 700, business_online=False)
    offline_acceptance = payment_acceptance(customer_key, offline_request, 700, cards[0],
                                            voucher=base64.b64decode(pre_authorization["voucher"]))
    offline_item = {"request": b64(offline_request), "acceptance": b64(offline_acceptance)}
    settled = ledger.call("POST", "/v1/settlements", {"items": [offline_item]}, device=phone)
    assert settled["results"][0]["result"] == "settled", settled

    return {
        "adminToken": admin,
        "customer": {"account": customer["id"], "name": customer["name"], "enrollmentToken": customer["enrollmentToken"],
                     "device": phone, "key": private_hex(customer_key)},
        "merchant": {"account": merchant["id"], "name": merchant["name"], "enrollmentToken": merchant["enrollmentToken"],
                     "device": till, "key": private_hex(merchant_key)},
        "spare": {"account": spare["id"], "device": spare_device["id"]},
        "instruments": cards,
        "preAuthorizations": [pre_authorization["id"]],
        "payments": {"open": open_id, "settled": settled_id, "cancelled": cancelled_id},
        "settledAcceptance": b64(acceptance),
        "offlineItem": offline_item,
    }


def private_key(fixtures, party):
    return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(fixtures[party]["key"]))


if __name__ == "__main__":
    json.dump(prepare(sys.argv[1], sys.argv[2]), sys.stdout, indent=1)
    print()
