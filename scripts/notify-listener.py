#!/usr/bin/env python3
"""Plays systemd's side of sd_notify(3) for a daemon the rig starts: listens on SOCKET, appends each message to LOG
as a JSON line with its time, and when READY=1 arrives runs CHECK (a shell command) at once and records its exit
status, so a test can see that what the daemon must have done before it is ready was done. Ends after STOPPING=1.
Usage: notify-listener.py SOCKET LOG CHECK"""
import json
import os
import socket
import subprocess
import sys
import time

path, log, check = sys.argv[1:4]
if os.path.exists(path):
    os.unlink(path)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
with open(log, "a") as out:
    while True:
        lines = sock.recv(4096).decode(errors="replace").split("\n")
        entry = {"time": time.time(), "message": lines}
        if "READY=1" in lines:
            result = subprocess.run(check, shell=True, capture_output=True, text=True)
            entry["check"] = result.returncode
        out.write(json.dumps(entry) + "\n")
        out.flush()
        if "STOPPING=1" in lines:
            break
