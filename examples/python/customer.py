#!/usr/bin/env python3
"""A customer app on blepay's control API (docs/control-api.md), in Python with jeepney (Debian's python3-jeepney,
or `pip install jeepney`).

It registers for payments (StartReceiving), prints every PaymentEvent, accepts each request of at most --limit
minor units with --instrument and declines the others; it stops receiving on Ctrl-C, or once --payments payments
have ended. A refusal of the daemon is printed with its stable code (docs/errors.md).

    examples/python/customer.py --instrument ins_... --limit 2000
"""
import argparse
import sys

from jeepney import DBusAddress, MatchRule, new_method_call
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import DBusErrorResponse, unwrap_msg

ENDED = {"finishedPayment", "cancelled", "error", "otherPaid"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bus", default="SYSTEM", help="SYSTEM, or a D-Bus address")
    parser.add_argument("--instance", help="the daemon's instance, when several share the host")
    parser.add_argument("--instrument", required=True, help="the instrument to pay with (blepayctl instruments)")
    parser.add_argument("--limit", type=int, default=5000, help="accept requests of at most this many minor units")
    parser.add_argument("--payments", type=int, default=0, help="stop after this many payments ended (0: never)")
    args = parser.parse_args()

    name = "org.blepay.Customer" + (f".{args.instance}" if args.instance else "")
    customer = DBusAddress("/org/blepay/Customer", bus_name=name, interface="org.blepay.Customer1")
    connection = open_dbus_connection(bus=args.bus)
    # The bus matches a sender by its unique name only; the path and interface name the daemon well enough.
    rule = MatchRule(type="signal", interface="org.blepay.Customer1", member="PaymentEvent", path="/org/blepay/Customer")
    connection.send_and_get_reply(message_bus.AddMatch(rule))

    ended = 0
    with connection.filter(rule) as events:
        call(connection, customer, "StartReceiving")
        print("receiving payment requests", flush=True)
        try:
            while not args.payments or ended < args.payments:
                kind, payment_id, details = connection.recv_until_filtered(events).body
                fields = {key: value for key, (_, value) in details.items()}
                print(kind, payment_id, " ".join(f"{k}={v}" for k, v in sorted(fields.items())), flush=True)
                if kind == "receivedPayment":
                    answer(connection, customer, payment_id, fields, args)
                elif kind in ENDED:
                    ended += 1
        except KeyboardInterrupt:
            pass
        finally:
            call(connection, customer, "StopReceiving")
            print("stopped receiving", flush=True)


def answer(connection, customer, payment_id, fields, args):
    """Accepts a request within the limit (its own amount and currency, no tip), declines the others."""
    try:
        if fields["amount"] <= args.limit:
            call(connection, customer, "AcceptPayment", "sttssb",
                 (payment_id, fields["amount"], 0, fields["currency"], args.instrument, False))
        else:
            call(connection, customer, "CancelPayment", "s", (payment_id,))
    except DBusErrorResponse as refusal:
        # org.blepay.Error.<Code>, the stable code first in its message: "insufficient-funds: ..."
        print("refused", payment_id, refusal.data[0] if refusal.data else refusal.name, file=sys.stderr, flush=True)


def call(connection, address, method, signature=None, body=()):
    return unwrap_msg(connection.send_and_get_reply(new_method_call(address, method, signature, body)))


if __name__ == "__main__":
    main()
