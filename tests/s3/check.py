#!/usr/bin/env python3
"""`make s3-test`: exports pulled from a real S3-API server (moto's server mode, started here on
loopback; no network) by replicas started with `--data s3://BUCKET/KEY`.

Checked, each against the server's own behaviour (row counts from the generator, versions from a
replica serving the same bytes from a local file):
- a replica starts on an object and serves it (with the AWS variables, with a profile of the
  shared AWS files, and as a plain `http://` source of the same object);
- an unchanged object costs conditional requests only (polls counted `unchanged`);
- a new object swapped in under load with zero failed requests;
- a broken (truncated) object and a deleted object are refused while the previous dataset serves;
- the store stopped: serving continues, `/readyz` and the metrics say since when the source is
  unreachable; restarted: the next object is picked up;
- a replica restarted while the store is down serves the dataset kept in its `--state-dir`;
- three replicas on one bucket converge to the same version and ETags.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parents[2]
AUTH = {"X-API-Key": "demo-key", "X-API-Secret": "demo-secret"}
BUCKET, KEY = "exports", "eficiencia/catalog.parquet"
VOLATILE = {"request_id", "generated_at", "timestamp"}

passed = 0
failed = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f"s3: {name}: ok", flush=True)
    else:
        failed += 1
        print(f"s3: FAILED {name}: {detail}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port: int, path: str, headers=None, conn=None):
    own = conn is None
    if own:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        res = conn.getresponse()
        body = res.read()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, body
    finally:
        if own:
            conn.close()


def strip_volatile(value):
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


def wait_for(what: str, predicate, timeout: float = 30.0, step: float = 0.1):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except (OSError, http.client.HTTPException, ValueError, KeyError) as e:
            last = e
            last = None
        if last:
            return last
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


class Moto:
    """moto's S3-API server on a fixed loopback port (in memory: a restart starts empty)."""

    def __init__(self, venv_bin: Path, port: int, work: Path):
        self.port = port
        self.log = open(work / f"moto-{port}.log", "a")
        self.proc = subprocess.Popen([str(venv_bin / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_for("moto to listen", lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close() or True,
                 timeout=60)
        self.s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                               aws_access_key_id="testing", aws_secret_access_key="testing")
        self.s3.create_bucket(Bucket=BUCKET)

    def put(self, body: bytes) -> None:
        # Public-read, so the same object is also a plain HTTP source.
        self.s3.put_object(Bucket=BUCKET, Key=KEY, Body=body, ACL="public-read")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Replica:
    def __init__(self, binary: str, name: str, data: str, work: Path, env: dict, state: Path | None = None):
        self.log_path = work / f"{name}.log"
        self.log = open(self.log_path, "a")
        cmd = [binary, "serve", "--bind", "127.0.0.1:0", "--data", data, "--poll-interval-ms", "200",
               "--reload-interval-ms", "200", "--credentials", str(ROOT / "config/credentials.json"),
               "--queries", str(ROOT / "queries")]
        if state is not None:
            cmd += ["--state-dir", str(state)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL,
                                     text=True, env=env)
        line = self.proc.stdout.readline()
        m = re.match(r"listening on http://127\.0\.0\.1:(\d+)", line.strip())
        if not m:
            self.stop()
            raise RuntimeError(f"{name} did not start: {line!r}; see {self.log_path}")
        self.port = int(m.group(1))
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def ready(self) -> dict:
        status, _, body = request(self.port, "/readyz")
        doc = json.loads(body)
        doc["_status"] = status
        return doc

    def version(self):
        doc = self.ready()
        return doc["dataset"]["version"] if doc["_status"] == 200 else None

    def metric(self, name: str) -> float:
        _, _, body = request(self.port, "/metrics")
        for line in body.decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                if line.split(" ")[0] == name or name.endswith("}"):
                    return float(line.split(" ")[-1])
        return float("nan")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def generate(binary: str, rows: int, seed: int, out: Path) -> bytes:
    subprocess.run([binary, "generate", "--rows", str(rows), "--seed", str(seed), "--out", str(out)],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    return out.read_bytes()


def local_version(binary: str, path: Path, work: Path) -> str:
    """The version a replica serving the same bytes from a local file reports."""
    r = Replica(binary, f"local-{path.stem}", str(path), work, dict(os.environ))
    try:
        return wait_for("the local replica", r.version)
    finally:
        r.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    binary = args.binary
    venv_bin = Path(sys.executable).parent
    work = Path(tempfile.mkdtemp(prefix="eco-s3-"))
    exports = {}
    for name, rows, seed in [("a", 3000, 11), ("b", 3500, 12), ("c", 2500, 13), ("d", 2800, 14), ("e", 3200, 15)]:
        path = work / f"{name}.parquet"
        exports[name] = (generate(binary, rows, seed, path), rows, local_version(binary, path, work))
    broken = exports["b"][0][: len(exports["b"][0]) * 2 // 3]

    port = free_port()
    env = dict(os.environ)
    env.update({
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ALLOW_HTTP": "true",
        # No shared AWS files of the machine running the test.
        "HOME": str(work), "AWS_CONFIG_FILE": str(work / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(work / "none"),
    })
    source = f"s3://{BUCKET}/{KEY}"
    moto = Moto(venv_bin, port, work)
    replicas: list[Replica] = []
    try:
        moto.put(exports["a"][0])
        r = Replica(binary, "replica-0", source, work, env, state=work / "state-0")
        replicas.append(r)
        doc = wait_for("the first object to serve", lambda: (d := r.ready())["_status"] == 200 and d)
        check("starts on the object", doc["dataset"]["rows"] == exports["a"][1]
              and doc["dataset"]["version"] == exports["a"][2], json.dumps(doc))
        check("readyz names the source without its bucket", doc.get("source", {}).get("kind") == "s3"
              and doc["source"]["object"] == "catalog.parquet" and doc["source"]["reachable"] is True
              and BUCKET not in json.dumps(doc["source"]), json.dumps(doc))
        status, _, body = request(r.port, "/catalog/vehicles?page_size=1", AUTH)
        check("answers from the object", status == 200
              and json.loads(body)["data"]["meta"]["pagination"]["total"] == exports["a"][1], f"{status} {body[:300]!r}")

        # An unchanged object costs conditional requests only.
        time.sleep(1.5)
        unchanged = r.metric('eco_source_polls_total{result="unchanged"}')
        downloaded = r.metric('eco_source_polls_total{result="downloaded"}')
        check("an unchanged object is not downloaded again", unchanged >= 3 and downloaded == 1,
              f"unchanged={unchanged} downloaded={downloaded}")

        # Credentials, region and endpoint from a profile of the shared AWS files instead.
        (work / "aws-config").write_text(f"[default]\nregion = eu-west-1\n\n[profile ana]\nregion = us-east-1\n"
                                         f"endpoint_url = http://127.0.0.1:{port}\n")
        (work / "aws-credentials").write_text("[ana]\naws_access_key_id = testing\naws_secret_access_key = testing\n")
        profile_env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
        profile_env.update({"AWS_PROFILE": "ana", "AWS_CONFIG_FILE": str(work / "aws-config"),
                            "AWS_SHARED_CREDENTIALS_FILE": str(work / "aws-credentials"), "AWS_ALLOW_HTTP": "true"})
        p = Replica(binary, "profile-source", source, work, profile_env)
        try:
            v = wait_for("the profile's replica", p.version)
            check("credentials, region and endpoint from an AWS profile", v == exports["a"][2], f"{v}")
        finally:
            p.stop()

        # A plain HTTP source of the same object (moto serves it without signatures).
        h = Replica(binary, "http-source", f"http://127.0.0.1:{port}/{BUCKET}/{KEY}", work, env)
        try:
            v = wait_for("the http source", h.version)
            check("an http:// source serves the same version", v == exports["a"][2], f"{v}")
        finally:
            h.stop()

        # Swap under load: zero failed requests.
        failures, answered = [], [0]
        stop = threading.Event()

        def load():
            conn = http.client.HTTPConnection("127.0.0.1", r.port, timeout=30)
            paths = ["/insights/summary", "/rankings/most-economical", "/catalog/vehicles?page=3"]
            i = 0
            while not stop.is_set():
                try:
                    status, _, _ = request(r.port, paths[i % len(paths)], AUTH, conn=conn)
                    answered[0] += 1
                    if status != 200:
                        failures.append(status)
                except (OSError, http.client.HTTPException) as e:
                    failures.append(repr(e))
                    conn = http.client.HTTPConnection("127.0.0.1", r.port, timeout=30)
                i += 1

        threads = [threading.Thread(target=load) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        moto.put(exports["b"][0])
        swapped = wait_for("the swap", lambda: r.version() == exports["b"][2], timeout=30)
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join()
        check("a new object swaps in under load with zero failed requests", swapped and not failures
              and answered[0] > 50, f"failures={failures[:5]} answered={answered[0]}")

        # A broken object never wins.
        moto.put(broken)
        doc = wait_for("the broken object's refusal",
                       lambda: (d := r.ready()).get("last_reload", {}).get("result") == "refused" and d)
        check("a broken object is refused, the previous dataset serves",
              doc["dataset"]["version"] == exports["b"][2] and "catalog.parquet" in doc["last_reload"]["reason"],
              json.dumps(doc))
        moto.s3.delete_object(Bucket=BUCKET, Key=KEY)
        doc = wait_for("the deleted object", lambda: (d := r.ready())["source"]["reachable"] is False and d)
        check("a deleted object keeps the dataset serving", doc["_status"] == 200
              and doc["dataset"]["version"] == exports["b"][2] and "exist" in (doc["source"]["reason"] or ""),
              json.dumps(doc))
        moto.put(exports["c"][0])
        wait_for("object c", lambda: r.version() == exports["c"][2], timeout=30)
        check("the object put back is picked up", True)

        # The store stops: serving continues, readiness and the metrics say since when.
        moto.stop()
        stopped_at = time.time()
        doc = wait_for("readiness to see the outage", lambda: (d := r.ready())["source"]["reachable"] is False and d)
        since = doc["source"]["unreachable_since"]
        status, _, _ = request(r.port, "/rankings/most-economical", AUTH)
        check("the store down: serving continues", status == 200 and doc["_status"] == 200
              and doc["dataset"]["version"] == exports["c"][2] and since is not None
              and "127.0.0.1" not in json.dumps(doc["source"]), json.dumps(doc))
        reach = r.metric("eco_source_reachable")
        since_metric = r.metric("eco_source_unreachable_since_timestamp_seconds")
        check("the metrics say since when", reach == 0 and abs(since_metric - stopped_at) < 10,
              f"reachable={reach} since={since_metric} stopped={stopped_at}")

        # A replica restarted while the store is down serves what its state folder kept.
        r.stop()
        replicas.remove(r)
        r = Replica(binary, "replica-0-again", source, work, env, state=work / "state-0")
        replicas.append(r)
        doc = wait_for("the restart on the kept dataset", lambda: (d := r.ready())["_status"] == 200 and d)
        check("restarted with the store down, it serves the kept dataset",
              doc["dataset"]["version"] == exports["c"][2] and doc["dataset"]["origin"] == "state"
              and doc["source"]["reachable"] is False and doc["last_reload"]["result"] == "refused", json.dumps(doc))

        # The store comes back (empty: moto keeps objects in memory); the next object is picked up.
        moto = Moto(venv_bin, port, work)
        moto.put(exports["d"][0])
        wait_for("object d after the outage", lambda: r.version() == exports["d"][2], timeout=60)
        doc = r.ready()
        check("after the outage the next object is picked up", doc["source"]["reachable"] is True
              and doc["source"]["unreachable_since"] is None and doc["dataset"]["origin"] == "export", json.dumps(doc))

        # Three replicas on one bucket converge to the same version and ETags.
        others = [Replica(binary, f"replica-{i}", source, work, env) for i in (1, 2)]
        replicas.extend(others)
        trio = [r] + others
        wait_for("three replicas on d", lambda: all(x.version() == exports["d"][2] for x in trio), timeout=60)
        moto.put(exports["e"][0])
        t0 = time.monotonic()
        wait_for("three replicas on e", lambda: all(x.version() == exports["e"][2] for x in trio), timeout=60)
        converged = time.monotonic() - t0
        same = True
        detail = ""
        for path in ["/insights/summary", "/rankings/custom?metric=co2&top=5&ano_min=2020",
                     "/catalog/vehicles?page=2&page_size=10"]:
            answers = []
            for x in trio:
                status, headers, body = request(x.port, path, AUTH)
                answers.append((status, headers.get("etag"), headers.get("x-dataset-version"),
                                strip_volatile(json.loads(body))))
            if any(a != answers[0] for a in answers) or answers[0][0] != 200 or not answers[0][1]:
                same = False
                detail = f"{path}: {[a[:3] for a in answers]}"
        check(f"three replicas converge to one version and ETags (in {converged:.1f} s)", same, detail)
    finally:
        for x in replicas:
            x.stop()
        try:
            moto.stop()
        except Exception:
            pass
    print(f"s3: {passed} passed, {failed} failed (logs in {work})")
    if failed == 0:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
