"""Credentials for schemathesis' requests to the ledger (scripts/contract.sh): the operator's bearer token, an
enrollment token, or the device HMAC signature over the exact bytes and path that are sent."""
import base64
import hashlib
import hmac
import json
import os
import time
import uuid

import requests
import schemathesis

FIXTURES = json.load(open(os.environ["BLEPAY_CONTRACT_FIXTURES"]))
ADMIN = {"/v1/accounts", "/v1/accounts/{id}", "/v1/instruments/{id}/deposits", "/v1/instruments/{id}/block",
         "/v1/instruments/{id}/unblock"}


@schemathesis.hook
def process_call_kwargs(context, case, kwargs):
    route = case.operation.path
    headers = dict(case.headers or {})
    if case.method.upper() == "POST":
        headers["Idempotency-Key"] = str(uuid.uuid4())
    if route in ADMIN:
        headers["Authorization"] = f"Bearer {FIXTURES['adminToken']}"
    elif route == "/v1/devices":
        headers["Authorization"] = f"Bearer {FIXTURES['enrollmentToken']}"
    elif route not in ("/v1/health", "/v1/ledger-key"):
        device = FIXTURES["merchant" if route == "/v1/payments" else "customer"]
        # Sign exactly what goes on the wire: the body's bytes and the path with its encoded query.
        sent = case.as_requests_kwargs(base_url=os.environ["BLEPAY_CONTRACT_URL"])
        body = b""
        if sent.get("json") is not None:
            body = json.dumps(sent["json"]).encode()
            kwargs["data"] = body
        elif isinstance(sent.get("data"), (bytes, str)):
            body = sent["data"].encode() if isinstance(sent["data"], str) else sent["data"]
        prepared = requests.Request(case.method.upper(), sent["url"], params=sent.get("params")).prepare()
        timestamp, nonce = str(int(time.time())), uuid.uuid4().hex
        canonical = "\n".join(["blepay-ledger/1", case.method.upper(), prepared.path_url, timestamp, nonce,
                               hashlib.sha256(body).hexdigest()]).encode()
        secret = base64.b64decode(device["secret"])
        headers.update({
            "Blepay-Device": device["id"], "Blepay-Timestamp": timestamp, "Blepay-Nonce": nonce,
            "Blepay-Signature": hmac.new(secret, canonical, hashlib.sha256).hexdigest(),
        })
    case.headers = headers
