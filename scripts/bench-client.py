#!/usr/bin/env python3
"""The daemons' bench client: one process that stays on the system bus, as an app does, and times payments from its
own D-Bus calls to the PaymentEvent signals it receives (each stamped by a receiver thread when it arrives).

Usage: bench-client.py SAMPLES MODE ..., where MODE is one of
  payments PAYMENTS CUSTOMER INSTRUMENT [PREFIX]: for each payment, the business's SendPaymentRequest -> the
    customer's receivedPayment ("<prefix>shown"), then the customer's AcceptPayment -> its finishedPayment
    ("<prefix>finished_call"); the business's `finished` is awaited before the next. Both timings are split into legs
    by the business's own events (offered; accepted, finished).
  broadcast WINNER INSTRUMENT OTHER...: one SendPaymentRequest -> the last receivedPayment among WINNER and
    every OTHER ("broadcast_shown"), then WINNER's AcceptPayment -> the last OTHER's otherPaid
    ("broadcast_other_paid", and one "other_paid 1" for each OTHER told).
Samples (seconds) are appended to SAMPLES as "name value" lines.

With BENCH_CLIENT_PACED=1 it says "ready" on stdout once on the bus and waits for a line on stdin before it starts;
a broadcast then says "shown" once all were shown and waits for another line before the accept; at the end it says
"done" and waits for a line or for stdin to close before it exits. So whoever measures the CPU in between measures
the payments, not the client's start, and finds the client still running.
"""
import os
import queue
import sys
import time

from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
from jeepney.io.threading import Proxy, open_dbus_router
from jeepney.low_level import HeaderFields, MessageType

TIMEOUT = 240
BUSINESS = DBusAddress("/org/blepay/Business", "org.blepay.Business", "org.blepay.Business1")


def customer(instance: str) -> DBusAddress:
    return DBusAddress("/org/blepay/Customer", f"org.blepay.Customer.{instance}", "org.blepay.Customer1")


class Stamped(queue.Queue):
    """Keeps each message with the moment the receiver thread handed it over."""

    def put(self, item, block=True, timeout=None):
        super().put((time.monotonic(), item), block, timeout)


class Bus:
    """The client's connection: its calls, and the PaymentEvent signals of the daemons it was opened for."""

    def __init__(self, router, addresses):
        bus = Proxy(message_bus, router)
        self.router, self.seen = router, {}
        self.owners = {bus.GetNameOwner(address.bus_name)[0]: address for address in addresses}
        self.rule = MatchRule(type="signal", member="PaymentEvent")
        bus.AddMatch(self.rule)

    def wait(self, events, address: DBusAddress, kind: str, payment: str) -> float:
        """When `address`'s daemon signalled `kind` for `payment`."""
        deadline = time.monotonic() + TIMEOUT
        while (address.bus_name, kind, payment) not in self.seen:
            at, message = events.get(timeout=max(0.0, deadline - time.monotonic()))
            sender = self.owners.get(message.header.fields.get(HeaderFields.sender))
            if sender is not None:
                self.seen.setdefault((sender.bus_name, message.body[0], message.body[1]), at)
        return self.seen[(address.bus_name, kind, payment)]

    def call(self, address: DBusAddress, method: str, signature: str, *arguments):
        reply = self.router.send_and_get_reply(new_method_call(address, method, signature, arguments), timeout=TIMEOUT)
        if reply.header.message_type == MessageType.error:
            sys.exit(f"{method} was refused: {reply.body}")
        return reply.body


def pause(word: str) -> None:
    """Paced: tells the measurer where the client is, and waits for its word to go on (or for stdin to close)."""
    if os.environ.get("BENCH_CLIENT_PACED") == "1":
        print(word, flush=True)
        sys.stdin.readline()


def payments(bus: Bus, events, out, count: str, instance: str, instrument: str, prefix: str = "") -> None:
    payer = customer(instance)
    for i in range(int(count)):
        asked = time.monotonic()
        (payment,) = bus.call(BUSINESS, "SendPaymentRequest", "tss", 100, "USD", f"{prefix}bench-{i}")
        shown = bus.wait(events, payer, "receivedPayment", payment)
        out.write(f"{prefix}shown {shown - asked}\n")
        accepted = time.monotonic()
        bus.call(payer, "AcceptPayment", "sttssb", payment, 100, 0, "USD", instrument, False)
        finished = bus.wait(events, payer, "finishedPayment", payment)
        out.write(f"{prefix}finished_call {finished - accepted}\n")
        # Where the time goes: the business's own events split both timings into legs.
        offered = bus.wait(events, BUSINESS, "offered", payment)
        taken, executed = bus.wait(events, BUSINESS, "accepted", payment), bus.wait(events, BUSINESS, "finished", payment)
        for leg, seconds in (("request_to_offered", offered - asked), ("offered_to_shown", shown - offered),
                             ("accept_to_business", taken - accepted), ("business_to_ledger_done", executed - taken),
                             ("ledger_done_to_customer", finished - executed)):
            out.write(f"{prefix}leg.{leg} {seconds}\n")


def broadcast(bus: Bus, events, out, winner: str, instrument: str, *others: str) -> None:
    payer, told = customer(winner), [customer(name) for name in others]
    asked = time.monotonic()
    (payment,) = bus.call(BUSINESS, "SendPaymentRequest", "tss", 200, "USD", "broadcast")
    out.write(f"broadcast_shown {max(bus.wait(events, c, 'receivedPayment', payment) for c in [payer] + told) - asked}\n")
    out.flush()
    pause("shown")
    accepted = time.monotonic()
    bus.call(payer, "AcceptPayment", "sttssb", payment, 200, 0, "USD", instrument, False)
    if told:
        out.write(f"broadcast_other_paid {max(bus.wait(events, c, 'otherPaid', payment) for c in told) - accepted}\n")
        out.write("other_paid 1\n" * len(told))


def main() -> None:
    samples, mode, arguments = sys.argv[1], sys.argv[2], sys.argv[3:]
    # Each mode and the customers whose events it awaits.
    run, instances = {"payments": (payments, arguments[1:2]), "broadcast": (broadcast, arguments[:1] + arguments[2:])}[mode]
    with open_dbus_router(bus="SYSTEM") as router:
        bus = Bus(router, [BUSINESS] + [customer(name) for name in instances])
        with router.filter(bus.rule, queue=Stamped()) as events, open(samples, "a") as out:
            pause("ready")
            run(bus, events, out, *arguments)
            out.flush()
            pause("done")


if __name__ == "__main__":
    main()
