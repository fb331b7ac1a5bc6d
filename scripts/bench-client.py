#!/usr/bin/env python3
"""The daemons' bench client: one process that stays on the system bus, as an app does, and times payments from its
own D-Bus calls to the PaymentEvent signals it receives (each stamped by a receiver thread when it arrives), and
splits both timings into legs by the business's own events (offered; accepted, finished).

For each of PAYMENTS payments: the business's SendPaymentRequest -> the customer's receivedPayment ("<prefix>shown"),
then the customer's AcceptPayment -> its finishedPayment ("<prefix>finished_call"); the business's `finished` is
awaited before the next. Samples (seconds) are appended to SAMPLES as "name value" lines.

With BENCH_CLIENT_PACED=1 it says "ready" on stdout once on the bus and waits for a line on stdin before the first
payment, then says "done" and waits for stdin to close before it exits: whoever measures the CPU meanwhile measures
the payments, not the client's start, and finds it still running.

Usage: bench-client.py PAYMENTS CUSTOMER_INSTANCE INSTRUMENT_ID SAMPLES [PREFIX]
"""
import os
import queue
import sys
import time

from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
from jeepney.io.threading import Proxy, open_dbus_router
from jeepney.low_level import HeaderFields, MessageType

TIMEOUT = 240


class Stamped(queue.Queue):
    """Keeps each message with the moment the receiver thread handed it over."""

    def put(self, item, block=True, timeout=None):
        super().put((time.monotonic(), item), block, timeout)


def main() -> None:
    payments, instance, instrument, samples = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    prefix = sys.argv[5] if len(sys.argv) > 5 else ""
    business = DBusAddress("/org/blepay/Business", "org.blepay.Business", "org.blepay.Business1")
    customer = DBusAddress("/org/blepay/Customer", f"org.blepay.Customer.{instance}", "org.blepay.Customer1")
    with open_dbus_router(bus="SYSTEM") as router:
        bus = Proxy(message_bus, router)
        owners = {bus.GetNameOwner(address.bus_name)[0]: address for address in (business, customer)}
        rule = MatchRule(type="signal", member="PaymentEvent")
        bus.AddMatch(rule)
        seen = {}
        with router.filter(rule, queue=Stamped()) as events:

            def wait(address: DBusAddress, kind: str, payment: str) -> float:
                """When `address`'s daemon signalled `kind` for `payment`."""
                deadline = time.monotonic() + TIMEOUT
                while (address.bus_name, kind, payment) not in seen:
                    at, message = events.get(timeout=max(0.0, deadline - time.monotonic()))
                    sender = owners.get(message.header.fields.get(HeaderFields.sender))
                    if sender is not None:
                        seen.setdefault((sender.bus_name, message.body[0], message.body[1]), at)
                return seen[(address.bus_name, kind, payment)]

            def call(address: DBusAddress, method: str, signature: str, *arguments):
                reply = router.send_and_get_reply(
                    new_method_call(address, method, signature, arguments), timeout=TIMEOUT)
                if reply.header.message_type == MessageType.error:
                    sys.exit(f"{method} was refused: {reply.body}")
                return reply.body

            paced = os.environ.get("BENCH_CLIENT_PACED") == "1"
            if paced:
                print("ready", flush=True)
                sys.stdin.readline()
            with open(samples, "a") as out:
                for i in range(payments):
                    asked = time.monotonic()
                    (payment,) = call(business, "SendPaymentRequest", "tss", 100, "USD", f"{prefix}bench-{i}")
                    shown = wait(customer, "receivedPayment", payment)
                    out.write(f"{prefix}shown {shown - asked}\n")
                    accepted = time.monotonic()
                    call(customer, "AcceptPayment", "sttssb", payment, 100, 0, "USD", instrument, False)
                    finished = wait(customer, "finishedPayment", payment)
                    out.write(f"{prefix}finished_call {finished - accepted}\n")
                    # Where the time goes: each daemon's own events split both timings into legs.
                    offered = wait(business, "offered", payment)
                    taken, executed = wait(business, "accepted", payment), wait(business, "finished", payment)
                    for leg, seconds in (("request_to_offered", offered - asked), ("offered_to_shown", shown - offered),
                                         ("accept_to_business", taken - accepted), ("business_to_ledger_done", executed - taken),
                                         ("ledger_done_to_customer", finished - executed)):
                        out.write(f"{prefix}leg.{leg} {seconds}\n")
            if paced:
                print("done", flush=True)
                sys.stdin.read()


if __name__ == "__main__":
    main()
