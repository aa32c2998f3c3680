#!/usr/bin/env python3
"""Alternating cold starts of two or more builds on one export, to tell a change from the machine.

    python3 bench/alternate.py EXPORT ROUNDS BUILD [BUILD ...]

Each round starts every build once, in turn, on EXPORT (`serve` with the demo credentials and
`--log eco_insights=debug,info`), times it to its first answer and reads the load's log: the
phases and their fresh pages (`dataset built`) and the table build's steps. Prints, per build,
the median of each measure over the rounds. The speed of a shared virtual machine drifts within
minutes: only builds alternated on the same file compare.
"""
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HEADERS = {"X-API-Key": "demo-key", "X-API-Secret": "demo-secret"}
PHASES = ("read_ms", "check_ms", "views_ms", "snapshot_ms", "total_ms", "views_faults", "snapshot_faults")
STEPS = ("id ranks", "catalog text ranks", "catalog keys sorted", "catalog permutation", "key orders",
         "catalog order", "text index", "positions")


def start(build, export):
    """One cold start: wall ms to the first answer, cores busy meanwhile, and the logged measures."""
    log = tempfile.TemporaryFile("w+")
    began = time.perf_counter()
    argv = [build, "serve", "--bind", "127.0.0.1:0", "--data", export,
            "--log", "eco_insights=debug,info", "--log-format", "json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        listening = re.match(r"listening on http://([\d.]+):(\d+)", proc.stdout.readline().strip())
        if not listening:
            raise RuntimeError(f"{build} did not start on {export}")
        host, port = listening.group(1), int(listening.group(2))
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        while True:
            try:
                conn = http.client.HTTPConnection(host, port, timeout=5)
                conn.request("GET", "/catalog/vehicles?page_size=1", headers=HEADERS)
                response = conn.getresponse()
                response.read()
                if response.status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.02)
        wall = time.perf_counter() - began
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    finally:
        proc.terminate()
        proc.wait()
    measures = {"wall_ms": wall * 1000, "busy": cpu / wall}
    log.seek(0)
    for line in log:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        fields = event.get("fields", event)
        message = fields.get("message")
        if message == "dataset built":
            measures.update({k: fields[k] for k in PHASES if k in fields})
        elif message in STEPS and "ms" in fields:
            measures[message] = fields["ms"]
    return measures


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    export, rounds, builds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    runs = {build: [] for build in builds}
    for _ in range(rounds):
        for build in builds:
            runs[build].append(start(build, export))
    page = os.sysconf("SC_PAGE_SIZE")
    for build in builds:
        print(build)
        for key in runs[build][0]:
            values = [r[key] for r in runs[build] if key in r]
            median = statistics.median(values)
            if key.endswith("_faults"):
                print(f"  {key:<22} median {median * page / 2**20:8.0f} MB fresh")
            elif key == "busy":
                print(f"  {key:<22} median {median:8.2f}   each: " + " ".join(f"{v:.2f}" for v in values))
            else:
                print(f"  {key:<22} median {median:8.0f}   each: " + " ".join(f"{v:.0f}" for v in values))


if __name__ == "__main__":
    main()
