#!/usr/bin/env python3
"""Alternating cold starts of two or more builds on one export, to tell a change from the machine.

    python3 bench/alternate.py EXPORT ROUNDS BUILD [BUILD ...]

Each round starts every build once, in turn, on EXPORT (`serve` with the demo credentials and
`--log eco_insights=debug,info`), times it to its first answer and reads the load's log: the
phases and their fresh pages (`dataset built`), the catalog permutation's steps (each its own
time, `catalog permutation` the whole) and the table build's (times since the build began).
Prints, per build, the median of each measure over the rounds. The speed of a shared virtual machine drifts within
minutes: only builds alternated on the same file compare.
"""
import json
import os
import statistics
import sys

from procs import Server, wait_ready

PHASES = ("read_ms", "check_ms", "views_ms", "snapshot_ms", "total_ms", "views_faults", "snapshot_faults")
STEPS = ("id ranks", "catalog text ranks", "catalog keys sorted", "catalog permutation", "key orders",
         "catalog order", "text index", "positions")


def start(build, export):
    """One cold start: wall ms to the first answer, cores busy meanwhile, and the logged measures."""
    server = Server([build, "serve", "--bind", "127.0.0.1:0", "--data", os.path.abspath(export),
                     "--log", "eco_insights=debug,info", "--log-format", "json"])
    try:
        wall = wait_ready(server)
        cpu = server.cpu_seconds()
    finally:
        server.stop()
    measures = {"wall_ms": wall * 1000, "busy": cpu / wall}
    server.stderr.seek(0)
    for line in server.stderr:
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
    export, rounds, builds = sys.argv[1], int(sys.argv[2]), [os.path.abspath(b) for b in sys.argv[3:]]
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
