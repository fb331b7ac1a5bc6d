#!/usr/bin/env python3
"""What `make demo` prints while a scenario runs, each line after the time since the demo started (START, epoch s).

  demo-follow.py events LABEL START   a daemon's events (`blepayctl watch --json` lines on stdin), labelled, with the
                                      line of text the control API's contract gives each
  demo-follow.py rig HOSTS START      the rig's console (stdin): each host coming up and what its script does to the
                                      daemons and bluetoothd; until every host is up, every 15 s what it still waits for
"""
import json
import os
import re
import select
import sys
import time

mode, label, start = sys.argv[1], sys.argv[2], float(sys.argv[3])


def say(text):
    elapsed = int(time.time() - start)
    print("[%d:%02d] %s" % (elapsed // 60, elapsed % 60, text), flush=True)


def events():
    for line in sys.stdin:
        try:
            say("  %-20s %s" % (label, json.loads(line)["text"]))
        except (ValueError, KeyError):
            continue


# A host is up once its rig-guest says so; then what the console says each host does, as the demo tells it.
UP = re.compile(r"rig-guest\[(\w+)\]: ready with (.*)")
MILESTONES = [
    (UP, "host {0} is up: its kernel, system bus and bluetoothd with {1}"),
    (re.compile(r"rig\[(\w+)\]: starting \S*/(blepay-ledger|blepayd \w+)"), "host {0}: starting {1}"),
    (re.compile(r"rig\[(\w+)\]: (restarting bluetoothd|powering \w+ off and on)"), "host {0}: {1}"),
    (re.compile(r"rig-guest\[(\w+)\]: (.*)"), "host {0}: {1}"),
]


def rig():
    waiting = set(label.split())
    booted = time.time()
    said = booted
    pending = b""
    say("booting %s (Linux under QEMU without KVM, virtual Bluetooth controllers)" % (
        "two VMs" if len(waiting) > 1 else "one VM"))
    while True:
        if waiting and time.time() - said >= 15:
            say("still waiting for %s %s to boot and bring up bluetoothd (%d s)" % (
                "hosts" if len(waiting) > 1 else "host", " and ".join(sorted(waiting)), time.time() - booted))
            said = time.time()
        # Unbuffered reads: select() knows nothing of what a buffered reader holds.
        if not select.select([0], [], [], 1)[0]:
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            return
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            said = milestone(line.decode("utf-8", "replace"), waiting) or said


def milestone(line, waiting):
    """Says what the console line means, if anything; returns when it said it."""
    for pattern, text in MILESTONES:
        match = pattern.search(line)
        if match:
            if pattern is UP:
                waiting.discard(match.group(1))
            say(text.format(*match.groups()))
            return time.time()
    return None


events() if mode == "events" else rig()
