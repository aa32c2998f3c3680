#!/usr/bin/env python3
"""Several replicas of the release binary behind nginx on loopback (Python standard library).

`make cluster`      : starts N replicas (CLUSTER_REPLICAS, default 3) on one shared data folder
                      and nginx in front of them (CLUSTER_PORT, default 8090), until Ctrl-C.
`make cluster-test` : the same on free ports, then checks and exits non-zero on any failure:
  1. every replica gives the same answer (ignoring the per-request id and timestamp), the same
     ETag and the same X-Dataset-Version, directly and through nginx; a tag from one replica is
     answered 304 by another;
  2. a new export renamed over the shared file converges on every replica (X-Dataset-Version
     equal on all and new);
  3. SIGTERM to one replica under load through nginx costs zero failed requests, and the replica
     exits with status 0.

Everything lives under target/cluster: the shared data folder, the credentials file, the
generated nginx configuration and nginx's pid, log and temporary paths. nginx runs as the
current user (no system paths are written); it must be installed (the Makefile installs the
Debian package when missing) — without it this fails, it never skips.
"""

import argparse
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY, SECRET = "demo-key", "demo-secret"
AUTH = {"X-API-Key": KEY, "X-API-Secret": SECRET}
ROWS = 12000
SEEDS = (2026, 2027)
VOLATILE = {"request_id", "generated_at", "timestamp"}


def log(*args):
    print("cluster:", *args, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, path, method="GET", headers=None, body=None, conn=None):
    own = conn is None
    if own:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        res = conn.getresponse()
        data = res.read()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, data
    finally:
        if own:
            conn.close()


def strip_volatile(value):
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


class Replica:
    def __init__(self, binary, index, data, creds, work, port=0):
        self.index = index
        self.log_path = os.path.join(work, f"replica-{index}.log")
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--bind", f"127.0.0.1:{port}", "--data", data, "--credentials", creds,
             "--queries", os.path.join(REPO, "queries"), "--reload-interval-ms", "200", "--log", "info"],
            stdout=subprocess.PIPE, stderr=self.log_file, stdin=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"listening on http://127\.0\.0\.1:(\d+)", line.strip())
        if not m:
            self.stop()
            raise RuntimeError(f"replica {index} did not start: {line!r}; see {self.log_path}")
        self.port = int(m.group(1))
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def version(self):
        status, _, body = request(self.port, "/readyz")
        return json.loads(body)["dataset"]["version"] if status == 200 else None

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_file.close()
        return self.proc.returncode


class Nginx:
    def __init__(self, work, port, upstreams):
        self.port = port
        self.prefix = os.path.join(work, "nginx")
        for sub in ("", "client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(self.prefix, sub), exist_ok=True)
        self.conf = os.path.join(self.prefix, "nginx.conf")
        # Same upstream and proxy settings as deploy/nginx.conf, with paths under target/cluster.
        servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=2 fail_timeout=5s;" for p in upstreams)
        user = "user root;\n" if os.geteuid() == 0 else ""
        p = self.prefix
        with open(self.conf, "w") as f:
            f.write(f"""{user}worker_processes 1;
pid {p}/nginx.pid;
error_log {p}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log {p}/access.log;
    client_body_temp_path {p}/client_body;
    proxy_temp_path {p}/proxy;
    fastcgi_temp_path {p}/fastcgi;
    uwsgi_temp_path {p}/uwsgi;
    scgi_temp_path {p}/scgi;
    upstream eco_insights {{
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://eco_insights;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_next_upstream error timeout http_503 non_idempotent;
            proxy_next_upstream_tries 3;
            proxy_connect_timeout 2s;
            proxy_read_timeout 30s;
        }}
    }}
}}
""")
        nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
        if nginx is None:
            raise RuntimeError("nginx is not installed (apt-get install -y nginx)")
        check = subprocess.run([nginx, "-t", "-q", "-p", p, "-e", f"{p}/error.log", "-c", self.conf],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"nginx refused the configuration:\n{check.stderr}")
        self.proc = subprocess.Popen([nginx, "-p", p, "-e", f"{p}/error.log", "-c", self.conf, "-g", "daemon off;"],
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while True:
            try:
                if request(port, "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not start; see {p}/error.log")
            time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def generate(binary, cache, seed):
    out = os.path.join(cache, f"catalog-{ROWS}-{seed}.parquet")
    if not os.path.exists(out):
        tmp = out + ".tmp"
        subprocess.run([binary, "generate", "--rows", str(ROWS), "--seed", str(seed), "--out", tmp],
                       check=True, stdout=subprocess.DEVNULL)
        os.replace(tmp, out)
    return out


def swap_in(export, data):
    """Copies `export` next to the shared file and renames it over (what a deployment does)."""
    tmp = os.path.join(os.path.dirname(data), ".catalog.parquet.tmp")
    shutil.copyfile(export, tmp)
    os.replace(tmp, data)


# --------------------------------------------------------------------------- checks


def check_same_answers(replicas, nginx):
    _, _, body = request(replicas[0].port, "/catalog/vehicles?page_size=1", headers=AUTH)
    vehicle = json.loads(body)["data"]["data"]["items"][0]["id"]
    paths = [
        "/catalog/vehicles?page_size=5&page=2&combustivel=flex",
        "/rankings/most-economical",
        "/rankings/custom?metric=eco_score&top=5&ano_min=2020",
        "/insights/summary?marca=Fiat",
        "/aggregations/by-brand",
        f"/vehicles/{vehicle}/summary",
    ]
    for path in paths:
        answers = []
        for r in replicas:
            status, headers, body = request(r.port, path, headers=AUTH)
            if status != 200:
                raise AssertionError(f"replica {r.index} {path}: {status} {body[:200]!r}")
            answers.append((strip_volatile(json.loads(body)), headers.get("etag"), headers.get("x-dataset-version")))
        first = answers[0]
        for r, a in zip(replicas, answers):
            if a != first:
                raise AssertionError(f"replica {r.index} answers {path} differently (ETag {a[1]} vs {first[1]})")
        status, headers, body = request(nginx.port, path, headers=AUTH)
        if status != 200 or headers.get("etag") != first[1] or strip_volatile(json.loads(body)) != first[0]:
            raise AssertionError(f"nginx answers {path} differently: {status} {headers.get('etag')}")
        # A tag from one replica is valid on every other one.
        for r in replicas[1:]:
            status, _, _ = request(r.port, path, headers={**AUTH, "If-None-Match": first[1]})
            if status != 304:
                raise AssertionError(f"replica {r.index} answered {status} to the ETag of replica 0 on {path}")
    log(f"1. same answer, ETag and version from {len(replicas)} replicas and nginx on {len(paths)} paths; "
        f"cross-replica If-None-Match answers 304")


def check_swap_converges(replicas, nginx, export, data):
    old = {r.version() for r in replicas}
    if len(old) != 1:
        raise AssertionError(f"replicas disagree before the swap: {old}")
    old = old.pop()
    started = time.monotonic()
    swap_in(export, data)
    while True:
        versions = [r.version() for r in replicas]
        if len(set(versions)) == 1 and versions[0] not in (None, old):
            break
        if time.monotonic() - started > 60:
            raise AssertionError(f"no convergence within 60 s: {versions} (old {old})")
        time.sleep(0.1)
    new = versions[0]
    _, headers, _ = request(nginx.port, "/rankings/most-economical", headers=AUTH)
    if headers.get("x-dataset-version") != new:
        raise AssertionError(f"nginx still serves {headers.get('x-dataset-version')} after the swap to {new}")
    log(f"2. swap {old} -> {new} converged on every replica in {time.monotonic() - started:.1f} s")


def check_sigterm_under_load(replicas, nginx):
    stop = threading.Event()
    lock = threading.Lock()
    counts = {"ok": 0, "failed": 0, "after_kill": 0}
    failures = []
    killed = threading.Event()
    paths = ["/rankings/most-economical", "/insights/summary", "/catalog/vehicles?page_size=20&page=2",
             "/aggregations/by-brand"]

    def client(offset):
        conn = http.client.HTTPConnection("127.0.0.1", nginx.port, timeout=30)
        i = offset
        while not stop.is_set():
            path = paths[i % len(paths)]
            i += 1
            try:
                status, _, body = request(nginx.port, path, headers=AUTH, conn=conn)
                ok = status == 200
                detail = f"{path}: {status} {body[:120]!r}"
            except (OSError, http.client.HTTPException) as e:
                ok, detail = False, f"{path}: {type(e).__name__}: {e}"
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", nginx.port, timeout=30)
            with lock:
                counts["ok" if ok else "failed"] += 1
                if ok and killed.is_set():
                    counts["after_kill"] += 1
                if not ok and len(failures) < 10:
                    failures.append(detail)
        conn.close()

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(6)]
    for t in threads:
        t.start()
    time.sleep(2)
    victim = replicas[1]
    victim.proc.send_signal(signal.SIGTERM)
    killed.set()
    code = victim.proc.wait(30)
    time.sleep(3)
    stop.set()
    for t in threads:
        t.join(35)
    log(f"3. SIGTERM to replica {victim.index} under load: {counts['ok']} ok, {counts['failed']} failed "
        f"({counts['after_kill']} ok after the signal); the replica exited with status {code}")
    if counts["failed"]:
        raise AssertionError("failed requests through nginx:\n  " + "\n  ".join(failures))
    if code != 0:
        raise AssertionError(f"replica {victim.index} exited with status {code}")
    if counts["after_kill"] == 0:
        raise AssertionError("no request was served after the signal")


# --------------------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["serve", "test"])
    p.add_argument("--binary", default=os.path.join(REPO, "target/release/eco-insights"))
    p.add_argument("--replicas", type=int, default=int(os.environ.get("CLUSTER_REPLICAS", "3")))
    p.add_argument("--port", type=int, default=int(os.environ.get("CLUSTER_PORT", "8090")),
                   help="nginx port of `serve` (the test picks a free one)")
    p.add_argument("--work", default=os.path.join(REPO, "target/cluster"))
    args = p.parse_args()
    if args.replicas < 2:
        p.error("--replicas must be at least 2")

    cache = os.path.join(args.work, "cache")
    run = os.path.join(args.work, "run")
    shutil.rmtree(run, ignore_errors=True)
    shared = os.path.join(run, "data")
    os.makedirs(shared)
    os.makedirs(cache, exist_ok=True)
    exports = [generate(args.binary, cache, s) for s in SEEDS]
    data = os.path.join(shared, "catalog.parquet")
    shutil.copyfile(exports[0], data)
    creds = os.path.join(run, "credentials.json")
    with open(creds, "w") as f:
        json.dump({"credentials": [{"key": KEY, "name": "cluster (demo pair, loopback only)",
                                    "secret_sha256": hashlib.sha256(SECRET.encode()).hexdigest(),
                                    "quota_per_minute": None}]}, f)

    replicas, nginx = [], None
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        for i in range(args.replicas):
            replicas.append(Replica(args.binary, i, data, creds, run))
        port = free_port() if args.mode == "test" else args.port
        nginx = Nginx(run, port, [r.port for r in replicas])
        log(f"nginx on http://127.0.0.1:{port} in front of replicas on ports "
            f"{', '.join(str(r.port) for r in replicas)}; shared data {data}")
        if args.mode == "serve":
            log("replace the shared file to swap every replica; Ctrl-C stops everything")
            try:
                while not stopping.is_set():
                    time.sleep(0.5)
            except KeyboardInterrupt:
                pass
            return 0
        check_same_answers(replicas, nginx)
        check_swap_converges(replicas, nginx, exports[1], data)
        check_sigterm_under_load(replicas, nginx)
        log("PASS")
        return 0
    except (AssertionError, RuntimeError, OSError, subprocess.CalledProcessError) as e:
        log(f"FAIL: {e}")
        log(f"logs under {run}")
        return 1
    finally:
        if nginx is not None:
            nginx.stop()
        for r in replicas:
            r.stop()


if __name__ == "__main__":
    sys.exit(main())
