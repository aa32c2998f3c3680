#!/usr/bin/env python3
"""`make soak`: a bounded soak test of the release binary (Python standard library only).

Starts the service on a generated 100k-row catalog (cached under target/soak), keeps a steady
load on loopback from a pool of keep-alive clients, and swaps the data file every few seconds
(a new export with another seed is written to a temporary file in the same folder and renamed
over the served one). Prints, every few seconds, the request rate, the failures and the
service's RSS. Exits 1 when any request failed (anything but 200, or a connection error), when
no swap reached the clients, or when the RSS grew more than the allowed fraction after the
warm-up (median of the last samples against the median of the first samples after warm-up).
"""

import argparse
import hashlib
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY, SECRET = "demo-key", "demo-secret"
PATHS = [
    "/catalog/vehicles?page_size=20&page=3",
    "/catalog/vehicles?combustivel=flex&page_size=50",
    "/rankings/most-economical",
    "/rankings/custom?metric=eco_score&top=10&ano_min=2020",
    "/rankings/by-brand",
    "/insights/summary",
    "/insights/summary?marca=Fiat",
    "/insights/emissions",
    "/aggregations/by-brand",
]
SEEDS = [2026, 2027, 2028]


def log(*args):
    print(*args, flush=True)


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def generate(binary, rows, seed, out):
    if not os.path.exists(out):
        tmp = out + ".tmp"
        subprocess.run([binary, "generate", "--rows", str(rows), "--seed", str(seed), "--out", tmp],
                       check=True, stdout=subprocess.DEVNULL)
        os.replace(tmp, out)
    return out


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = 0
        self.failures = 0
        self.examples = []
        self.versions = set()

    def record(self, status, version, detail):
        with self.lock:
            if status == 200:
                self.ok += 1
                if version:
                    self.versions.add(version)
            else:
                self.failures += 1
                if len(self.examples) < 10:
                    self.examples.append(detail)


def client(host, port, stop, stats, offset):
    conn = None
    i = offset
    while not stop.is_set():
        path = PATHS[i % len(PATHS)]
        i += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection(host, port, timeout=30)
            conn.request("GET", path, headers={"X-API-Key": KEY, "X-API-Secret": SECRET})
            res = conn.getresponse()
            body = res.read()
            stats.record(res.status, res.getheader("X-Dataset-Version"),
                         f"{path}: {res.status} {body[:200]!r}")
            if res.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except Exception as e:  # noqa: BLE001 - every failure counts
            stats.record(0, None, f"{path}: {type(e).__name__}: {e}")
            if conn is not None:
                conn.close()
            conn = None
    if conn is not None:
        conn.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=os.path.join(REPO, "target/release/eco-insights"))
    p.add_argument("--seconds", type=int, default=int(os.environ.get("SOAK_SECONDS", "60")))
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--swap-every", type=float, default=5.0, help="seconds between data swaps")
    p.add_argument("--max-rss-growth", type=float, default=0.15)
    p.add_argument("--work", default=os.path.join(REPO, "target/soak"))
    args = p.parse_args()

    os.makedirs(args.work, exist_ok=True)
    exports = [generate(args.binary, args.rows, s, os.path.join(args.work, f"catalog-{args.rows}-{s}.parquet"))
               for s in SEEDS]
    run = tempfile.mkdtemp(prefix="run-", dir=args.work)
    data = os.path.join(run, "catalog.parquet")
    shutil.copyfile(exports[0], data)
    creds = os.path.join(run, "credentials.json")
    with open(creds, "w") as f:
        json.dump({"credentials": [{"key": KEY, "name": "soak", "secret_sha256": hashlib.sha256(SECRET.encode()).hexdigest(),
                                    "quota_per_minute": None}]}, f)
    server_log = open(os.path.join(run, "server.log"), "w")
    proc = subprocess.Popen(
        [args.binary, "serve", "--bind", "127.0.0.1:0", "--data", data, "--credentials", creds,
         "--queries", os.path.join(REPO, "queries"), "--log", "warn"],
        stdout=subprocess.PIPE, stderr=server_log, stdin=subprocess.DEVNULL, text=True)
    stop = threading.Event()
    threads = []
    status = 1
    try:
        line = proc.stdout.readline()
        m = re.match(r"listening on http://([\d.]+):(\d+)", line.strip())
        if not m:
            log(f"soak: the service did not start: {line!r}")
            return 1
        host, port = m.group(1), int(m.group(2))
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        log(f"soak: {args.rows} rows, {args.clients} clients, swap every {args.swap_every:g} s, "
            f"{args.seconds} s, pid {proc.pid}")

        stats = Stats()
        for c in range(args.clients):
            t = threading.Thread(target=client, args=(host, port, stop, stats, c), daemon=True)
            t.start()
            threads.append(t)

        started = time.monotonic()
        warmup = max(10.0, args.seconds * 0.2)
        samples = []  # (elapsed, rss KiB)
        next_swap = started + args.swap_every
        next_report = started + 5
        swaps = 0
        last_ok = 0
        last_t = started
        while True:
            now = time.monotonic()
            if now - started >= args.seconds:
                break
            if proc.poll() is not None:
                log(f"soak: the service exited with status {proc.returncode}")
                return 1
            if now >= next_swap:
                swaps += 1
                tmp = os.path.join(run, ".catalog.parquet.tmp")
                shutil.copyfile(exports[swaps % len(exports)], tmp)
                os.replace(tmp, data)
                next_swap = now + args.swap_every
            rss = rss_kib(proc.pid)
            if rss is not None:
                samples.append((now - started, rss))
            if now >= next_report:
                with stats.lock:
                    ok, failed, versions = stats.ok, stats.failures, len(stats.versions)
                rate = (ok - last_ok) / (now - last_t)
                last_ok, last_t = ok, now
                log(f"  t={now - started:5.0f}s  {rate:7.0f} req/s  ok={ok}  failures={failed}  "
                    f"swaps={swaps}  versions seen={versions}  rss={rss / 1024 if rss else float('nan'):.0f} MiB")
                next_report = now + 5
            time.sleep(0.5)

        stop.set()
        for t in threads:
            t.join(35)
        after = [r for (t, r) in samples if t >= warmup]
        first = [r for (t, r) in samples if warmup <= t < warmup + 10]
        last = [r for (t, r) in samples if t >= args.seconds - 10]
        base = statistics.median(first) if first else None
        end = statistics.median(last) if last else None
        growth = (end - base) / base if base and end else None
        elapsed = time.monotonic() - started
        log(f"soak: {stats.ok} ok, {stats.failures} failures in {elapsed:.0f} s ({stats.ok / elapsed:.0f} req/s), "
            f"{swaps} swaps, {len(stats.versions)} dataset versions served")
        if after:
            log(f"soak: RSS after warm-up {base / 1024:.0f} MiB, at the end {end / 1024:.0f} MiB "
                f"(growth {growth * 100:+.1f} %), peak {max(after) / 1024:.0f} MiB")
        problems = []
        if stats.failures:
            problems.append(f"{stats.failures} failed requests, e.g.:\n    " + "\n    ".join(stats.examples))
        if swaps and len(stats.versions) < 2:
            problems.append("no swap reached the clients")
        if growth is None:
            problems.append("not enough RSS samples (run longer than the warm-up)")
        elif growth > args.max_rss_growth:
            problems.append(f"RSS grew {growth * 100:.1f} % after warm-up (limit {args.max_rss_growth * 100:.0f} %)")
        for problem in problems:
            log(f"soak: FAIL: {problem}")
        status = 1 if problems else 0
        if not problems:
            log("soak: PASS")
        return status
    finally:
        stop.set()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        server_log.close()
        if status == 0:
            shutil.rmtree(run, ignore_errors=True)
        else:
            log(f"soak: service log kept in {run}/server.log")


if __name__ == "__main__":
    sys.exit(main())
