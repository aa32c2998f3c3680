#!/usr/bin/env python3
"""`make pg-test`: the PostgreSQL front door (`--pg-bind`) with the clients analysts use.

The service serves a generated export over HTTP and the PostgreSQL protocol; psycopg 3 (the
extended protocol, with parameters) and `psql -c` (the simple protocol) ask it analysts' queries,
and DuckDB in-process answers the same queries on the same file. Also checked: credentials
(user = key, password = secret; a wrong pair is 28P01), the column types a client sees, and the
SQLSTATE of each refusal (syntax 42601, unknown table 42P01, forbidden 42501, a limit 57014).
The door's security (`tls_checks`): SCRAM-SHA-256 logins (the exchange spoken here by hand too,
so the SQLSTATEs, messages and the mock exchange of an unknown key are seen), TLS with a CA and
certificate the test makes (`openssl`), verify-full, require_auth, channel binding, keys without
a verifier, and the start-up refusals of a door beyond loopback without TLS or with bad files.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import math
import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import psycopg

ROOT = Path(__file__).resolve().parents[2]
KEY, SECRET = "pg-check", "pg-check-secret"
# A key written before SCRAM verifiers existed: only its secret's SHA-256.
OLD_KEY, OLD_SECRET = "pg-old", "pg-old-secret"
# The PostgreSQL door's limits in this test: connections at once, and the time to authenticate.
MAX_CONNECTIONS, STARTUP_MS = 64, 1500

passed = 0
failed = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f"pg: {name}: ok")
    else:
        failed += 1
        print(f"pg: FAILED {name}: {detail}", file=sys.stderr)


def same_rows(got, want) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if len(g) != len(w):
            return False
        for x, y in zip(g, w):
            if isinstance(x, float) or isinstance(y, float):
                if x is None or y is None or not math.isclose(float(x), float(y), rel_tol=0, abs_tol=1e-9):
                    if not (x is None and y is None):
                        return False
            elif x != y:
                return False
    return True


def sqlstate(conn_str: str, sql: str, params=None) -> str | None:
    try:
        with psycopg.connect(conn_str, autocommit=True) as conn:
            conn.execute(sql, params)
    except psycopg.Error as e:
        return e.sqlstate
    return None


def scram_verifier(secret: str, salt: bytes | None = None, iterations: int = 4096) -> str:
    """PostgreSQL's SCRAM-SHA-256 verifier of an ASCII secret (RFC 5802/7677), computed here
    independently of the service."""
    salt = salt if salt is not None else os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", secret.encode(), salt, iterations)
    stored = hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
    server = hmac.new(salted, b"Server Key", "sha256").digest()
    b64 = lambda b: base64.b64encode(b).decode()
    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored)}:{b64(server)}"


def credentials_entry(key: str, secret: str, verifier: bool = True, **extra) -> dict:
    entry = {"key": key, "name": f"{key} entry", "secret_sha256": hashlib.sha256(secret.encode()).hexdigest(), **extra}
    if verifier:
        entry["scram_verifier"] = scram_verifier(secret)
    return entry


def raw_login(host: str, port: int, user: str, secret: str, tls: ssl.SSLContext | None = None,
              server_hostname: str = "localhost", keep_open: bool = False) -> dict:
    """A login spoken by hand (protocol v3, SCRAM-SHA-256 without channel binding, or a clear-text
    password when asked): what the server offered and answered. Keys: `mechanisms`, `salt`,
    `iterations`, `cleartext`, `server_signature_ok`, `ok` (AuthenticationOk), `error` (the
    ErrorResponse's fields by code letter), `tls_version`. With `keep_open`, a successful login
    reads on to ReadyForQuery and leaves the connection open in `socket` (the caller closes it)."""
    out: dict = {"mechanisms": None, "cleartext": False, "ok": False, "error": None}
    sock = socket.create_connection((host, port), timeout=10)
    try:
        if tls is not None:
            sock.sendall(struct.pack("!ii", 8, 80877103))
            if sock.recv(1) != b"S":
                out["error"] = {"M": "SSLRequest refused"}
                return out
            sock = tls.wrap_socket(sock, server_hostname=server_hostname)
            out["tls_version"] = sock.version()

        def exact(n: int) -> bytes:
            data = b""
            while len(data) < n:
                chunk = sock.recv(n - len(data))
                if not chunk:
                    raise ConnectionError("closed")
                data += chunk
            return data

        def send(kind: bytes, body: bytes) -> None:
            sock.sendall(kind + struct.pack("!i", len(body) + 4) + body)

        params = b"user\0" + user.encode() + b"\0database\0eco\0\0"
        sock.sendall(struct.pack("!ii", len(params) + 8, 196608) + params)
        nonce = base64.b64encode(os.urandom(18)).decode()
        first_bare = f"n=,r={nonce}"
        state: dict = {}
        while True:
            head = exact(5)
            body = exact(struct.unpack("!i", head[1:])[0] - 4)
            if head[:1] == b"E":
                out["error"] = {chr(f[0]): f[1:].decode() for f in body.split(b"\0") if f}
                return out
            if head[:1] != b"R":
                continue
            code = struct.unpack("!i", body[:4])[0]
            if code == 0:
                out["ok"] = True
                while keep_open:
                    head = exact(5)
                    exact(struct.unpack("!i", head[1:])[0] - 4)
                    if head[:1] == b"Z":
                        out["socket"] = sock
                        break
                return out
            if code == 3:
                out["cleartext"] = True
                send(b"p", secret.encode() + b"\0")
            elif code == 10:
                out["mechanisms"] = [m.decode() for m in body[4:].split(b"\0") if m]
                first = ("n,," + first_bare).encode()
                send(b"p", b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first)
            elif code == 11:
                server_first = body[4:].decode()
                attrs = dict(a.split("=", 1) for a in server_first.split(","))
                salt, iterations = base64.b64decode(attrs["s"]), int(attrs["i"])
                out["salt"], out["iterations"] = salt, iterations
                salted = hashlib.pbkdf2_hmac("sha256", secret.encode(), salt, iterations)
                client_key = hmac.new(salted, b"Client Key", "sha256").digest()
                without_proof = f"c=biws,r={attrs['r']}"
                auth_message = f"{first_bare},{server_first},{without_proof}".encode()
                signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
                proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
                send(b"p", f"{without_proof},p={proof}".encode())
                server_key = hmac.new(salted, b"Server Key", "sha256").digest()
                state["expected"] = base64.b64encode(hmac.new(server_key, auth_message, "sha256").digest()).decode()
            elif code == 12:
                out["server_signature_ok"] = body[4:].decode() == "v=" + state.get("expected", "")
    finally:
        if "socket" not in out:
            sock.close()


def connect_error(dsn: str) -> str | None:
    """None when `dsn` connects (and answers a query), else the error's text."""
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute("SELECT 1").fetchone()
    except psycopg.Error as e:
        return str(e)
    return None


def refusal(out: dict, user: str) -> tuple | None:
    """A refused login's severity, SQLSTATE and message with the user's name taken out."""
    e = out.get("error")
    return (e.get("S"), e.get("C"), e.get("M", "").replace(f'"{user}"', '"USER"')) if e else None


def start_service(binary: str, args: list[str], log: Path):
    """Starts `serve`; (process, HTTP line, postgres line)."""
    proc = subprocess.Popen([binary, "serve", *args], stdout=subprocess.PIPE, stderr=open(log, "w"),
                            stdin=subprocess.DEVNULL, text=True)
    http = proc.stdout.readline()
    pg = proc.stdout.readline()
    return proc, http, pg


def refused_start(binary: str, args: list[str]) -> tuple[int | None, str]:
    """`serve` with `args` expected to refuse to start: its exit status and standard error."""
    try:
        out = subprocess.run([binary, "serve", *args], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, "still running after 60 s"
    return out.returncode, out.stderr


def make_certificates(work: Path) -> dict:
    """A CA and a server certificate for `localhost` it signed (ECDSA P-256), a second CA that
    signed nothing, with `openssl`."""
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "other-ca"):
        run("req", "-x509", *ec, "-keyout", str(work / f"{ca}.key"), "-out", str(work / f"{ca}.crt"), "-days", "2",
            "-subj", f"/CN=eco pg-test {ca}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", *ec, "-keyout", str(work / "server.key"), "-out", str(work / "server.csr"), "-subj", "/CN=localhost")
    (work / "server.ext").write_text("subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n"
                                     "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", str(work / "server.csr"), "-CA", str(work / "ca.crt"), "-CAkey", str(work / "ca.key"),
        "-CAcreateserial", "-out", str(work / "server.crt"), "-days", "2", "-extfile", str(work / "server.ext"))
    return {name: work / f"{name}" for name in ("ca.crt", "ca.key", "other-ca.crt", "server.crt", "server.key")}


def tls_checks(binary: str, data: Path, work: Path) -> None:
    """The door's security: SCRAM-SHA-256 and the mock exchange of unknown keys, TLS with
    verify-full against a CA made here, require_auth, channel binding, keys without a verifier
    (refused over plain TCP, accepted over TLS), a key made by `credentials add`, an older entry
    given a verifier by `credentials scram`, quotas and revocation, and the start-up refusals."""
    work = work / "tls"
    work.mkdir()
    certs = make_certificates(work)
    creds = work / "credentials.json"
    creds.write_text(json.dumps({"credentials": [
        credentials_entry(KEY, SECRET), credentials_entry(OLD_KEY, OLD_SECRET, verifier=False),
        credentials_entry("pg-quota", "pg-quota-secret", quota_per_minute=1)]}))
    common = ["--bind", "127.0.0.1:0", "--data", str(data), "--credentials", str(creds), "--queries",
              str(ROOT / "queries"), "--reload-interval-ms", "200", "--log", "warn"]
    tls_args = ["--pg-tls-cert", str(certs["server.crt"]), "--pg-tls-key", str(certs["server.key"])]
    proc, http, pg = start_service(binary, [*common, "--pg-bind", "127.0.0.1:0", *tls_args], work / "server.log")
    try:
        if not pg.startswith("postgres listening on "):
            check("the service starts with --pg-tls-cert and --pg-tls-key", False,
                  f"{http!r} {pg!r} {(work / 'server.log').read_text()[-1000:]}")
            return
        port = int(pg.strip().rsplit(":", 1)[1])
        ca = str(certs["ca.crt"])
        base = f"host=localhost port={port} dbname=eco"
        verified = f"{base} sslmode=verify-full sslrootcert={ca}"
        libpq = psycopg.pq.version()
        check(f"psycopg's libpq is 16 or later (require_auth): {libpq}", libpq >= 160000, str(libpq))

        # TLS: verify-full against the CA made here, with the host name localhost.
        with psycopg.connect(f"{verified} user={KEY} password={SECRET}", autocommit=True) as conn:
            n = conn.execute("SELECT count(*) FROM catalog").fetchone()[0]
            check("sslmode=verify-full (CA and certificate for localhost made by the test)",
                  conn.pgconn.ssl_in_use and n == 4000, str(n))
        err = connect_error(f"{base} sslmode=verify-full sslrootcert={certs['other-ca.crt']} user={KEY} password={SECRET}")
        check("verify-full against another CA is refused by the client", err is not None and "certificate" in err.lower(),
              str(err))
        with psycopg.connect(f"{base} sslmode=require user={KEY} password={SECRET}", autocommit=True) as conn:
            check("sslmode=require", conn.pgconn.ssl_in_use and conn.execute("SELECT 1").fetchone()[0] == 1)
        with psycopg.connect(f"{base} sslmode=disable user={KEY} password={SECRET}", autocommit=True) as conn:
            check("the TLS door still takes plain TCP (sslmode=disable)", not conn.pgconn.ssl_in_use)
        # SCRAM-SHA-256: required by the client, over TLS and over plain TCP; with channel binding
        # (SCRAM-SHA-256-PLUS) over TLS. A clear-text password is never asked of a key with a verifier.
        for mode in ("verify-full", "disable"):
            dsn = (verified if mode == "verify-full" else f"{base} sslmode=disable") + f" user={KEY} password={SECRET}"
            err = connect_error(f"{dsn} require_auth=scram-sha-256")
            check(f"require_auth=scram-sha-256, sslmode={mode}", err is None, str(err))
            err = connect_error(f"{dsn} require_auth=password")
            check(f"require_auth=password refused by the client (SCRAM asked), sslmode={mode}",
                  err is not None and "SASL" in err, str(err))
        err = connect_error(f"{verified} user={KEY} password={SECRET} channel_binding=require")
        check("channel_binding=require over TLS (SCRAM-SHA-256-PLUS)", err is None, str(err))
        if libpq >= 170000:
            err = connect_error(f"{verified} user={KEY} password={SECRET} sslnegotiation=direct")
            check("direct TLS (sslnegotiation=direct, ALPN postgresql)", err is None, str(err))
        env = {**os.environ, "PGPASSWORD": SECRET, "PGSSLMODE": "verify-full", "PGSSLROOTCERT": ca,
               "PGCHANNELBINDING": "require"}
        out = subprocess.run(["psql", "-h", "localhost", "-p", str(port), "-U", KEY, "-d", "eco", "-At", "-c",
                              "SELECT count(*) FROM catalog"], capture_output=True, text=True, env=env, timeout=60)
        check("psql (system libpq) with verify-full and channel binding", out.returncode == 0
              and out.stdout.strip() == "4000", out.stderr)

        # The exchange by hand: SCRAM's mechanisms, salt and iterations, the server's signature,
        # and one refusal whatever was wrong.
        plain = raw_login("127.0.0.1", port, KEY, SECRET)
        check("SCRAM-SHA-256 by hand: AuthenticationOk and the server's signature verified",
              plain["ok"] and plain.get("server_signature_ok") is True and plain["mechanisms"] == ["SCRAM-SHA-256"]
              and plain["iterations"] == 4096 and len(plain["salt"]) == 16, str(plain))
        tls_ctx = ssl.create_default_context(cafile=ca)
        over_tls = raw_login("127.0.0.1", port, KEY, SECRET, tls=tls_ctx)
        check("over TLS (1.3) the door also offers SCRAM-SHA-256-PLUS, not over plain TCP",
              over_tls["ok"] and over_tls["mechanisms"] == ["SCRAM-SHA-256", "SCRAM-SHA-256-PLUS"]
              and over_tls.get("tls_version") == "TLSv1.3", str(over_tls))
        wrong = raw_login("127.0.0.1", port, KEY, "wrong-secret")
        unknown = raw_login("127.0.0.1", port, "eco_0123456789abcdef0123456789abcdef", SECRET)
        unknown_again = raw_login("127.0.0.1", port, "eco_0123456789abcdef0123456789abcdef", "x")
        old_plain = raw_login("127.0.0.1", port, OLD_KEY, OLD_SECRET)
        wrong_tls = raw_login("127.0.0.1", port, KEY, "wrong-secret", tls=tls_ctx)
        unknown_tls = raw_login("127.0.0.1", port, "nobody", SECRET, tls=tls_ctx)
        expected = ("FATAL", "28P01", 'password authentication failed for user "USER" (chave ou segredo inválidos)')
        got = {"wrong secret": refusal(wrong, KEY), "unknown key": refusal(unknown, "eco_0123456789abcdef0123456789abcdef"),
               "older key, plain TCP": refusal(old_plain, OLD_KEY), "wrong secret, TLS": refusal(wrong_tls, KEY),
               "unknown key, TLS": refusal(unknown_tls, "nobody")}
        check("a wrong secret, an unknown key, an older key over plain TCP: one 28P01, one message",
              all(v == expected for v in got.values()), str(got))
        check("an unknown key goes through a SCRAM exchange like a known one (same mechanisms, 4096 "
              "iterations, a 16-byte salt, the same salt each time)",
              unknown["mechanisms"] == plain["mechanisms"] and unknown.get("iterations") == 4096
              and len(unknown.get("salt", b"")) == 16 and unknown.get("salt") == unknown_again.get("salt")
              and unknown.get("salt") != plain["salt"] and not unknown["ok"], f"{unknown} {unknown_again}")
        check("an older key over plain TCP meets the same SCRAM exchange, never a clear-text request",
              old_plain["mechanisms"] == ["SCRAM-SHA-256"] and not old_plain["cleartext"] and not old_plain["ok"],
              str(old_plain))
        old_tls = raw_login("127.0.0.1", port, OLD_KEY, OLD_SECRET, tls=tls_ctx)
        old_tls_wrong = raw_login("127.0.0.1", port, OLD_KEY, "wrong", tls=tls_ctx)
        check("an older key (no verifier) over TLS: its secret in clear text inside TLS, accepted",
              old_tls["cleartext"] and old_tls["ok"], str(old_tls))
        check("an older key over TLS with a wrong secret: the same 28P01", refusal(old_tls_wrong, OLD_KEY) == expected,
              str(old_tls_wrong))
        err_plain = connect_error(f"{base} sslmode=disable user={OLD_KEY} password={OLD_SECRET}")
        err_tls = connect_error(f"{verified} user={OLD_KEY} password={OLD_SECRET}")
        check("psycopg: an older key is refused over plain TCP and connects over TLS",
              err_plain is not None and "password authentication failed" in err_plain and err_tls is None,
              f"{err_plain} / {err_tls}")

        # Quotas and revocation still hold: a key with 1 request per minute logs in once, then 53400.
        first = raw_login("127.0.0.1", port, "pg-quota", "pg-quota-secret")
        second = raw_login("127.0.0.1", port, "pg-quota", "pg-quota-secret")
        check("a login takes the key's quota (53400 past it)", first["ok"] and (second["error"] or {}).get("C") == "53400",
              f"{first} {second}")

        # A key made by `credentials add` logs in with SCRAM (the file is reloaded while serving).
        added = subprocess.run([binary, "credentials", "add", "--file", str(creds), "--name", "added by the test"],
                               capture_output=True, text=True, timeout=60)
        pair = json.loads(added.stdout) if added.returncode == 0 else {}
        stored = json.loads(creds.read_text())["credentials"]
        check("credentials add writes a SCRAM verifier", any(e.get("key") == pair.get("key")
              and e.get("scram_verifier", "").startswith("SCRAM-SHA-256$4096:") for e in stored), added.stderr)
        deadline, err = time.monotonic() + 15, "not tried"
        while time.monotonic() < deadline:
            err = connect_error(f"{base} sslmode=disable user={pair.get('key')} password={pair.get('secret')} "
                                "require_auth=scram-sha-256")
            if err is None:
                break
            time.sleep(0.2)
        check("a key from credentials add connects with require_auth=scram-sha-256", err is None, str(err))
        err = connect_error(f"{verified} user={pair.get('key')} password={pair.get('secret')} channel_binding=require")
        check("... and with channel binding over TLS", err is None, str(err))
        # `credentials scram`: the older entry gets a verifier of its secret (a wrong one is refused),
        # then logs in over plain TCP too.
        bad = subprocess.run([binary, "credentials", "scram", "--file", str(creds), OLD_KEY], input="not-it\n",
                             capture_output=True, text=True, timeout=60)
        check("credentials scram with a wrong secret exits 1", bad.returncode == 1 and "not the secret" in bad.stderr,
              bad.stderr)
        good = subprocess.run([binary, "credentials", "scram", "--file", str(creds), OLD_KEY], input=OLD_SECRET + "\n",
                              capture_output=True, text=True, timeout=60)
        deadline, err = time.monotonic() + 15, "not tried"
        while good.returncode == 0 and time.monotonic() < deadline:
            err = connect_error(f"{base} sslmode=disable user={OLD_KEY} password={OLD_SECRET} require_auth=scram-sha-256")
            if err is None:
                break
            time.sleep(0.2)
        check("an older key given a verifier by credentials scram connects over plain TCP", good.returncode == 0
              and err is None, f"{good.stderr} {err}")
        revoked = subprocess.run([binary, "credentials", "revoke", "--file", str(creds), pair.get("key", "?")],
                                 capture_output=True, text=True, timeout=60)
        deadline, err = time.monotonic() + 15, None
        while revoked.returncode == 0 and time.monotonic() < deadline:
            err = connect_error(f"{base} sslmode=disable user={pair.get('key')} password={pair.get('secret')}")
            if err is not None:
                break
            time.sleep(0.2)
        check("a revoked key is refused", revoked.returncode == 0 and err is not None
              and "password authentication failed" in err, f"{revoked.stderr} {err}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    # Start-up refusals (exit 1, saying why) and their overrides.
    code, err = refused_start(binary, [*common, "--pg-bind", "0.0.0.0:0"])
    check("--pg-bind 0.0.0.0 without TLS refuses to start (exit 1, saying why)",
          code == 1 and "not a loopback address" in err and "--pg-allow-plaintext" in err, f"{code} {err[-500:]}")
    for flag, args in [("--pg-allow-plaintext", ["--pg-allow-plaintext"]), ("TLS", tls_args)]:
        proc, http, pg = start_service(binary, [*common, "--pg-bind", "0.0.0.0:0", *args], work / "public.log")
        try:
            port = pg.strip().rsplit(":", 1)[-1]
            mode = "sslmode=disable" if flag != "TLS" else f"sslmode=verify-full sslrootcert={certs['ca.crt']}"
            err = connect_error(f"host=localhost port={port} dbname=eco user={KEY} password={SECRET} {mode}") \
                if pg.startswith("postgres listening on 0.0.0.0:") else f"did not start: {pg!r}"
            check(f"--pg-bind 0.0.0.0 with {flag} starts and answers", err is None, str(err))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    env_public = {**os.environ, "ECO_PG_ALLOW_PLAINTEXT": "true"}
    proc = subprocess.Popen([binary, "serve", *common, "--pg-bind", "0.0.0.0:0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True, env=env_public)
    try:
        proc.stdout.readline()
        check("ECO_PG_ALLOW_PLAINTEXT=true does the same", proc.stdout.readline().startswith("postgres listening on 0.0.0.0:"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    garbage = work / "garbage.pem"
    garbage.write_text("not a certificate\n")
    for name, args, reason in [
        ("a certificate file that does not exist", ["--pg-tls-cert", str(work / "missing.crt"), "--pg-tls-key",
                                                    str(certs["server.key"])], "cannot read the TLS certificate"),
        ("a file without a certificate", ["--pg-tls-cert", str(garbage), "--pg-tls-key", str(certs["server.key"])],
         "no certificate"),
        ("a file without a key", ["--pg-tls-cert", str(certs["server.crt"]), "--pg-tls-key", str(garbage)],
         "no usable private key"),
        ("a key that is not the certificate's", ["--pg-tls-cert", str(certs["server.crt"]), "--pg-tls-key",
                                                 str(certs["ca.key"])], "cannot be used together"),
        ("--pg-tls-cert without --pg-tls-key", ["--pg-tls-cert", str(certs["server.crt"])], "give both or neither"),
    ]:
        code, err = refused_start(binary, [*common, "--pg-bind", "127.0.0.1:0", *args])
        check(f"{name} refuses to start (exit 1, saying why)", code == 1 and reason in err, f"{code} {err[-500:]}")
    code, err = refused_start(binary, ["--bind", "127.0.0.1:0", "--pg-bind", "0.0.0.0:0", *tls_args, "--data", str(data),
                                       "--credentials", str(ROOT / "config" / "credentials.json"), "--queries",
                                       str(ROOT / "queries")])
    check("the demo pair with --pg-bind 0.0.0.0 refuses to start", code == 1 and "demo" in err and "--pg-bind" in err,
          f"{code} {err[-500:]}")


def jdbc_check(host: str, port: str, work: Path, con) -> None:
    """pgjdbc connects (its start-up SETs included), queries and runs a prepared statement with
    typed parameters; its answers are DuckDB's on the same export."""
    jar = "/usr/share/java/postgresql.jar"
    build = subprocess.run(["javac", "-cp", jar, "-d", str(work), str(ROOT / "tests" / "pg" / "JdbcCheck.java")],
                           capture_output=True, text=True, timeout=300)
    if build.returncode != 0:
        check("pgjdbc check compiles", False, build.stderr)
        return
    out = subprocess.run(["java", "-cp", f"{work}:{jar}", "JdbcCheck", f"jdbc:postgresql://{host}:{port}/eco", KEY, SECRET],
                         capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    count = con.execute("SELECT count(*) FROM catalog WHERE ano >= 2020").fetchone()[0]
    fiat = con.execute("SELECT marca, count(*) FROM catalog WHERE ano >= 2018 AND marca = 'Fiat' GROUP BY marca").fetchall()
    want = ["product PostgreSQL 16.0", f"count {count}"] + [f"prepared {m} {n}" for m, n in fiat]
    check("pgjdbc: connect, query, prepared statement", out.returncode == 0 and lines == want,
          f"{lines} vs {want}: {out.stderr[-500:]}")


def half_open(host: str, port: int, base: str, pid: int, env: dict, dsn: str) -> None:
    """1,500 connections that never send their start-up: while they are open, psql connects and is
    answered at once (connections that have not signed in have places of their own, the oldest
    closed to make room), HTTP is answered, every half-open connection is closed within the
    start-up deadline, and the service holds no more sockets than before. Past
    --pg-max-connections signed-in connections, one more login is answered 53300."""
    import resource
    import socket
    import urllib.request
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    fds_before = len(os.listdir(f"/proc/{pid}/fd"))
    started = time.monotonic()
    sockets = [socket.create_connection((host, port), timeout=5) for _ in range(1500)]
    opened = time.monotonic() - started
    # A real client among them: connected and answered at once, the flood still open.
    asked = time.monotonic()
    out = subprocess.run(["psql", "-h", host, "-p", str(port), "-U", KEY, "-d", "eco", "-At", "-c", "SELECT 1"],
                         capture_output=True, text=True, env=env, timeout=60)
    took = time.monotonic() - asked
    check(f"psql answered while 1,500 connections are half-open ({took:.2f} s)",
          out.returncode == 0 and out.stdout.strip() == "1" and took < STARTUP_MS / 1000, out.stderr)
    with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
        check("HTTP answered while 1,500 PostgreSQL connections are half-open", r.status == 200)
    closed, held, answered = 0, 0, 0
    deadline = started + opened + STARTUP_MS / 1000 * 1.25 + 2.0
    for s in sockets:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            data = s.recv(4096)
            if data == b"":
                closed += 1
            else:
                answered += 1
        except (socket.timeout, TimeoutError):
            held += 1
        except ConnectionResetError:
            closed += 1
        s.close()
    check(f"every half-open connection closed within the start-up deadline ({closed} closed)",
          closed == 1500, f"closed {closed}, held {held}, answered {answered}")
    # Signed-in places are apart: MAX_CONNECTIONS sessions open, one more login is refused 53300.
    sessions = [psycopg.connect(dsn, autocommit=True) for _ in range(MAX_CONNECTIONS)]
    try:
        psycopg.connect(dsn).close()
        check("a login past --pg-max-connections signed-in connections: 53300", False, "connected")
    except psycopg.OperationalError as e:
        check("a login past --pg-max-connections signed-in connections: 53300", "too many clients" in str(e), str(e))
    finally:
        for c in sessions:
            c.close()
    time.sleep(0.5)
    out = subprocess.run(["psql", "-h", host, "-p", str(port), "-U", KEY, "-d", "eco", "-At", "-c", "SELECT 1"],
                         capture_output=True, text=True, env=env, timeout=60)
    check("psql connects once the signed-in sessions are closed", out.returncode == 0 and out.stdout.strip() == "1",
          out.stderr)
    time.sleep(0.5)
    fds_after = len(os.listdir(f"/proc/{pid}/fd"))
    check("no socket left open by the half-open connections", fds_after <= fds_before + 2, f"{fds_before} -> {fds_after}")


def cancel_check(binary: str, data: Path, creds: Path) -> None:
    """A CancelRequest (psycopg's cancel, over BackendKeyData) stops the connection's running
    query at once with 57014, long before its time limit, and the connection goes on."""
    import threading
    proc = subprocess.Popen([binary, "serve", "--bind", "127.0.0.1:0", "--pg-bind", "127.0.0.1:0", "--data", str(data),
                             "--credentials", str(creds), "--queries", str(ROOT / "queries"),
                             "--sql-timeout-ms", "60000", "--log", "warn"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    try:
        proc.stdout.readline()
        host, port = proc.stdout.readline().strip().removeprefix("postgres listening on ").rsplit(":", 1)
        dsn = f"host={host} port={port} user={KEY} password={SECRET} dbname=eco sslmode=disable"
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT count(*) FROM catalog").fetchone()  # the tables are prepared
            pid = conn.info.backend_pid
            outcome = {}

            def long_query():
                started = time.monotonic()
                try:
                    # Some 16M regular-expression matches over long texts: seconds of CPU, little memory.
                    conn.execute("SELECT count(*) FROM catalog a CROSS JOIN catalog b "
                                 "WHERE regexp_like(repeat(a.versao, 50) || b.modelo, 'x[0-9]+y$')").fetchone()
                    outcome["state"] = "answered"
                except psycopg.Error as e:
                    outcome["state"] = e.sqlstate
                outcome["took"] = time.monotonic() - started

            worker = threading.Thread(target=long_query)
            worker.start()
            time.sleep(1.0)
            conn.cancel_safe()
            worker.join(timeout=30)
            check("a cancel request stops the running query (57014)", outcome.get("state") == "57014"
                  and outcome.get("took", 99) < 5 and pid != 0, str(outcome))
            again = conn.execute("SELECT count(*) FROM catalog").fetchone()[0]
            check("the connection answers after a cancel", again == 4000, str(again))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def free_port() -> int:
    """A TCP port free on loopback now (the service's address must be known before it says it
    listens)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def early_check(binary: str, work: Path, creds: Path) -> None:
    """On a first start, the door answers from the moment the load has accepted the export
    (checked, its views computed), while the API still answers 503; before, it says that no
    dataset is loaded yet (55000); a transaction begun on the accepted version reads on once the
    API serves it."""
    import urllib.error
    import urllib.request
    rows = 2_000_000
    data = work / "early.parquet"
    subprocess.run([binary, "generate", "--rows", str(rows), "--seed", "8", "--out", str(data)],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    http_port, pg_port = free_port(), free_port()
    proc = subprocess.Popen([binary, "serve", "--bind", f"127.0.0.1:{http_port}", "--pg-bind", f"127.0.0.1:{pg_port}",
                             "--data", str(data), "--credentials", str(creds), "--queries", str(ROOT / "queries"),
                             "--log", "warn"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)

    def ready() -> int:
        try:
            return urllib.request.urlopen(f"http://127.0.0.1:{http_port}/readyz", timeout=30).status
        except urllib.error.HTTPError as e:
            return e.code

    dsn = f"host=127.0.0.1 port={pg_port} user={KEY} password={SECRET} dbname=eco sslmode=disable"
    try:
        deadline = time.monotonic() + 120
        conn = None
        while conn is None:
            try:
                conn = psycopg.connect(dsn, connect_timeout=10)
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        with conn:
            states, first = set(), None
            while first is None and time.monotonic() < deadline:
                try:
                    first = conn.execute("SELECT count(*) FROM catalog").fetchone()[0]
                except psycopg.Error as e:
                    states.add(e.sqlstate)
                    conn.rollback()
                    time.sleep(0.02)
            api_then = ready()
            check("before the export is accepted, the door says no dataset is loaded yet (55000)",
                  states <= {"55000"}, str(states))
            check("the door answers the accepted export while the API does not serve yet",
                  first == rows and api_then == 503, f"count {first}, /readyz {api_then}")
            conn.commit()
            # A transaction begun now reads the accepted version (when the API still does not
            # serve), and reads on once the API serves it.
            pinned = conn.execute("SELECT count(*) FROM catalog").fetchone()[0]
            pinned_early = ready() == 503
            while ready() != 200 and time.monotonic() < deadline:
                time.sleep(0.05)
            after = conn.execute("SELECT count(*) FROM catalog").fetchone()[0]
            conn.commit()
            check("a transaction begun before the API served reads on once it serves",
                  (pinned, after) == (rows, rows), f"{pinned}, {after} (begun before: {pinned_early})")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="eco-pg-"))
    data = work / "catalog.parquet"
    subprocess.run([args.binary, "generate", "--rows", "4000", "--seed", "5", "--out", str(data)],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    original = work / "original.parquet"
    import shutil
    shutil.copyfile(data, original)
    creds = work / "credentials.json"
    # The pair the clients use has a SCRAM verifier computed here (PostgreSQL's format).
    creds.write_text(json.dumps({"credentials": [credentials_entry(KEY, SECRET),
                                                 credentials_entry(OLD_KEY, OLD_SECRET, verifier=False)]}))
    log = open(work / "server.log", "w")
    proc = subprocess.Popen([args.binary, "serve", "--bind", "127.0.0.1:0", "--pg-bind", "127.0.0.1:0",
                             "--data", str(data), "--credentials", str(creds), "--queries", str(ROOT / "queries"),
                             "--sql-timeout-ms", "400", "--reload-interval-ms", "200",
                             "--pg-max-connections", str(MAX_CONNECTIONS), "--header-timeout-ms", str(STARTUP_MS),
                             "--log", "warn"],
                            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True)
    try:
        http = proc.stdout.readline()
        pg = proc.stdout.readline()
        if not http.startswith("listening on ") or not pg.startswith("postgres listening on "):
            raise SystemExit(f"pg: the service did not start: {http!r} {pg!r}")
        host, port = pg.strip().removeprefix("postgres listening on ").rsplit(":", 1)
        dsn = f"host={host} port={port} user={KEY} password={SECRET} dbname=eco sslmode=disable"
        con = duckdb.connect()
        con.execute(f"CREATE TABLE catalog AS SELECT * FROM read_parquet('{data}')")

        with psycopg.connect(dsn, autocommit=True) as conn:
            # Parameters (extended protocol), compared with DuckDB.
            for sql, params in [
                ("SELECT marca, COUNT(*) AS n FROM catalog WHERE ano >= %s GROUP BY marca ORDER BY n DESC, marca",
                 (2018,)),
                ("SELECT id, ano, co2_fossil_g_km FROM catalog WHERE marca = %s AND ano BETWEEN %s AND %s ORDER BY id",
                 ("Fiat", 2016, 2020)),
                ("SELECT combustivel_tipo, AVG(consumo_energetico_mj_km) AS c FROM catalog GROUP BY combustivel_tipo "
                 "ORDER BY combustivel_tipo", None),
                ("WITH r AS (SELECT * FROM catalog WHERE tipo_propulsao = %s) SELECT COUNT(*) AS n FROM r",
                 ("Elétrico",)),
            ]:
                got = conn.execute(sql, params).fetchall()
                duck = sql.replace("%s", "?")
                want = con.execute(duck, list(params or ())).fetchall()
                check(f"psycopg {sql[:50]}…", same_rows(got, want), f"{got[:3]} vs {want[:3]}")
            # The column types a client sees.
            # The column types a client sees: PostgreSQL's for the same columns (`ano` an integer,
            # a count a bigint).
            cur = conn.execute("SELECT ano, co2_fossil_g_km, marca, ar_condicionado, count(*) OVER () AS n "
                               "FROM catalog LIMIT 1")
            types = [c.type_code for c in cur.description]
            names = [psycopg.adapters.types.get(t).name if psycopg.adapters.types.get(t) else t for t in types]
            check("column types int4, float8, text, bool, int8", names == ["int4", "float8", "text", "bool", "int8"],
                  str(names))
            # A join with the eco score view answers.
            n = conn.execute("SELECT COUNT(*) FROM catalog c JOIN vw_eco_score e ON c.id = e.id").fetchone()[0]
            check("join with vw_eco_score", n == 4000, str(n))

        # psycopg in its default mode: a transaction (BEGIN sent by the driver) around the
        # queries, over one dataset version, ended by commit and rollback.
        with psycopg.connect(dsn) as conn:
            want = con.execute("SELECT COUNT(*) FROM catalog WHERE ano >= 2020").fetchone()[0]
            got = conn.execute("SELECT COUNT(*) FROM catalog WHERE ano >= %s", (2020,)).fetchone()[0]
            check("psycopg default mode: BEGIN then a query", got == want
                  and conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS, f"{got} vs {want}")
            conn.commit()
            check("psycopg commit ends the transaction",
                  conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE, str(conn.info.transaction_status))
            conn.execute("SELECT 1")
            conn.rollback()
            # Session settings: pgjdbc's, psql's and BI tools' SET, SHOW and RESET, unknown ones kept.
            conn.autocommit = True
            conn.execute("SET extra_float_digits = 3")
            conn.execute("SET application_name TO 'eco check'")
            conn.execute("SET my.option = 'kept'")
            shown = [conn.execute(f"SHOW {n}").fetchone()[0] for n in
                     ("extra_float_digits", "application_name", "my.option", "TimeZone", "server_version",
                      "standard_conforming_strings", "transaction isolation level")]
            check("SET then SHOW", shown == ["3", "eco check", "kept", "UTC", "16.0", "on", "read committed"], str(shown))
            conn.execute("RESET ALL")
            check("RESET ALL", conn.execute("SHOW extra_float_digits").fetchone()[0] == "1")
            try:
                conn.execute("SHOW never.set")
                check("SHOW of an unknown setting is 42704", False, "answered")
            except psycopg.Error as e:
                check("SHOW of an unknown setting is 42704", e.sqlstate == "42704", str(e.sqlstate))
            all_rows = conn.execute("SHOW ALL").fetchall()
            check("SHOW ALL", any(r[0] == "DateStyle" and r[1] == "ISO, MDY" for r in all_rows), str(all_rows[:3]))
            # Each statement's effect on the transaction status the server reports.
            states = []
            for sql in ("DISCARD ALL", "DEALLOCATE ALL", "START TRANSACTION READ ONLY", "END", "BEGIN", "ROLLBACK"):
                conn.execute(sql)
                states.append(conn.info.transaction_status.name)
            check("DISCARD, DEALLOCATE, START TRANSACTION, END, BEGIN, ROLLBACK",
                  states == ["IDLE", "IDLE", "INTRANS", "IDLE", "INTRANS", "IDLE"], str(states))
            version = conn.execute("SELECT version(), current_database(), current_schema()").fetchone()
            check("version() in PostgreSQL's form", version[0].startswith("PostgreSQL 16.0") and version[1:] == ("eco", "public"),
                  str(version))
            check("server_version parameter", conn.info.parameter_status("server_version") == "16.0"
                  and conn.info.server_version == 160000, str(conn.info.parameter_status("server_version")))
        # SQLAlchemy (its dialect asks pg_catalog.version(), current_schema() and SHOW at connect) and
        # pandas.read_sql, both in their default (transactional) modes.
        import pandas
        import sqlalchemy
        # (`use_native_hstore=False`: the dialect's hstore probe reads pg_type, which this door does
        # not offer yet.)
        engine = sqlalchemy.create_engine(f"postgresql+psycopg://{KEY}:{SECRET}@{host}:{port}/eco",
                                          use_native_hstore=False)
        frame = pandas.read_sql(sqlalchemy.text(
            "SELECT marca, count(*) AS n FROM catalog WHERE ano >= :ano GROUP BY marca ORDER BY n DESC, marca"),
            engine, params={"ano": 2018})
        want = con.execute("SELECT marca, count(*) AS n FROM catalog WHERE ano >= 2018 GROUP BY marca "
                           "ORDER BY n DESC, marca").fetchall()
        check("pandas.read_sql through SQLAlchemy", [tuple(r) for r in frame.itertuples(index=False)] == want,
              f"{frame.head(3)} vs {want[:3]}")

        # SQLAlchemy's reflection (inspector, MetaData.reflect, pandas.read_sql_table) on every table
        # and view, with both of its PostgreSQL drivers: tests/pg/inspector.py, one line per check.
        out = subprocess.run([sys.executable, str(Path(__file__).with_name("inspector.py")), "--host", host,
                              "--pg-port", port, "--user", KEY, "--password", SECRET],
                             capture_output=True, text=True, timeout=600)
        print(out.stdout, end="")
        summary = (out.stdout.strip().splitlines() or [""])[-1]
        check("SQLAlchemy reflection, psycopg and psycopg2 (tests/pg/inspector.py)",
              out.returncode == 0 and "psycopg2" in out.stdout and " 0 failed" in summary,
              f"exit {out.returncode}: {summary} {out.stderr[-600:]}")

        # Credentials and SQLSTATEs.
        bad = f"host={host} port={port} user={KEY} password=wrong dbname=eco sslmode=disable"
        try:
            psycopg.connect(bad).close()
            check("wrong password refused (28P01)", False, "connected")
        except psycopg.OperationalError as e:
            check("wrong password refused (28P01)", "password authentication failed" in str(e), str(e))
        err = connect_error(f"host={host} port={port} user={OLD_KEY} password={OLD_SECRET} dbname=eco sslmode=disable")
        check("a key without a SCRAM verifier is refused over plain TCP", err is not None
              and "password authentication failed" in err, str(err))
        for sql, code in [
            ("SELEC 1", "42601"),
            ("SELECT * FROM secrets", "42P01"),
            ("DROP TABLE catalog", "42501"),
            ("SELECT * FROM read_parquet('/etc/passwd')", "42501"),
            ("SELECT COUNT(*) FROM catalog a CROSS JOIN catalog b CROSS JOIN (SELECT ano FROM catalog LIMIT 200) c "
             "WHERE a.modelo < b.modelo", "57014"),
        ]:
            got = sqlstate(dsn, sql)
            check(f"{sql[:40]}… answers {code}", got == code, f"got {got}")

        # psql, the simple protocol.
        env = {**os.environ, "PGPASSWORD": SECRET}
        out = subprocess.run(["psql", "-h", host, "-p", port, "-U", KEY, "-d", "eco", "-At", "-c",
                              "SELECT COUNT(*) FROM catalog WHERE ano >= 2020"],
                             capture_output=True, text=True, env=env, timeout=60)
        want = con.execute("SELECT COUNT(*) FROM catalog WHERE ano >= 2020").fetchone()[0]
        check("psql -c", out.returncode == 0 and out.stdout.strip() == str(want), f"{out.stdout!r} {out.stderr!r}")
        out = subprocess.run(["psql", "-h", host, "-p", port, "-U", KEY, "-d", "eco", "-At",
                              "-c", "SET DateStyle = 'ISO, DMY'", "-c", "SHOW DateStyle", "-c", "BEGIN",
                              "-c", "SELECT count(*) FROM catalog", "-c", "COMMIT"],
                             capture_output=True, text=True, env=env, timeout=60)
        check("psql SET, SHOW, BEGIN, COMMIT", out.returncode == 0 and "ISO, DMY" in out.stdout
              and "4000" in out.stdout, f"{out.stdout!r} {out.stderr!r}")
        # Doubles in text as PostgreSQL's float8out writes them: no ".0" on a whole number, an
        # exponent with its sign and two digits, Infinity; two aggregates of one column apart from
        # a cast (one name in DataFusion) both answered.
        total = con.execute("SELECT sum(ano) FROM catalog").fetchone()[0]
        out = subprocess.run(["psql", "-h", host, "-p", port, "-U", KEY, "-d", "eco", "-At", "-c",
                              "SELECT sum(ano::float8), 1e20::float8, 0.00001::float8, 'Infinity'::float8, "
                              "-2.5::float8, 0.1::float8, sum(ano) FROM catalog"],
                             capture_output=True, text=True, env=env, timeout=60)
        check("psql shows doubles as PostgreSQL writes them",
              out.returncode == 0 and out.stdout.strip() == f"{total}|1e+20|1e-05|Infinity|-2.5|0.1|{total}",
              f"{out.stdout!r} {out.stderr!r}")
        out = subprocess.run(["psql", "-h", host, "-p", port, "-U", KEY, "-d", "eco", "-At", "-c", "SELECT * FROM nope"],
                             capture_output=True, text=True, env=env, timeout=60)
        check("psql reports an unknown table", out.returncode != 0 and "nope" in out.stderr, out.stderr)
        jdbc_check(host, port, work, con)
        # Catalog browsing (psql's \d family, SQLAlchemy's inspector, pgjdbc's DatabaseMetaData),
        # asyncpg and ADBC, compared with a real PostgreSQL server.
        from catalog import catalog_checks
        catalog_checks(check, {"host": host, "port": port, "user": KEY, "password": SECRET}, data, work)
        # COPY … TO STDOUT: psql's \copy in CSV, psycopg's copy in text and binary, and Polars'
        # read_database_uri through connectorx (which reads with COPY … TO STDOUT WITH BINARY).
        copy_sql = "SELECT id, marca, ano, co2_fossil_g_km FROM catalog WHERE ano >= 2019 ORDER BY id LIMIT 200"
        want = con.execute(copy_sql).fetchall()
        target = work / "copied.csv"
        out = subprocess.run(["psql", "-h", host, "-p", port, "-U", KEY, "-d", "eco", "-c",
                              f"\\copy ({copy_sql}) TO '{target}' csv header"],
                             capture_output=True, text=True, env=env, timeout=60)
        import csv
        got = []
        if target.exists():
            with open(target, newline="") as f:
                lines = list(csv.reader(f))
            got = [(r[0], r[1], int(r[2]), float(r[3]) if r[3] else None) for r in lines[1:]]
            header = lines[0] if lines else []
        check("psql \\copy (query) TO file csv header", out.returncode == 0 and "COPY 200" in out.stdout
              and header == ["id", "marca", "ano", "co2_fossil_g_km"] and same_rows(got, want),
              f"{out.stdout!r} {out.stderr!r} {got[:2]} vs {want[:2]}")
        with psycopg.connect(dsn, autocommit=True) as conn:
            with conn.cursor() as cur:
                with cur.copy(f"COPY ({copy_sql}) TO STDOUT") as cp:
                    text = b"".join(bytes(b) for b in cp).decode()
                rows = [line.split("\t") for line in text.splitlines()]
                got = [(r[0], r[1], int(r[2]), None if r[3] == "\\N" else float(r[3])) for r in rows]
                check("COPY (query) TO STDOUT, text", same_rows(got, want), f"{got[:2]} vs {want[:2]}")
                with cur.copy(f"COPY ({copy_sql}) TO STDOUT (FORMAT binary)") as cp:
                    cp.set_types(["text", "text", "int4", "float8"])
                    got = list(cp.rows())
                check("COPY (query) TO STDOUT, binary", same_rows(got, want), f"{got[:2]} vs {want[:2]}")
            for sql in ("COPY catalog FROM STDIN", "COPY catalog TO '/tmp/eco.csv'", "COPY (SELECT 1) TO PROGRAM 'id'"):
                check(f"{sql} answers 42501", sqlstate(dsn, sql) == "42501", str(sqlstate(dsn, sql)))
        import polars
        frame = polars.read_database_uri(copy_sql, f"postgresql://{KEY}:{SECRET}@{host}:{port}/eco", engine="connectorx")
        check("Polars read_database_uri (connectorx, binary COPY)", same_rows(frame.rows(), want),
              f"{frame.rows()[:2]} vs {want[:2]}")
        # Server-side cursors: psycopg's named cursor (DECLARE, FETCH FORWARD n, CLOSE) and pandas'
        # chunked read_sql through SQLAlchemy's stream_results.
        cursor_sql = "SELECT id, marca, ano FROM catalog WHERE ano >= 2018 ORDER BY id"
        want = con.execute(cursor_sql).fetchall()
        with psycopg.connect(dsn) as conn:
            with conn.cursor(name="eco_chunks") as cur:
                cur.itersize = 300
                cur.execute(cursor_sql)
                got = [tuple(r) for r in cur]
            check("psycopg named cursor (DECLARE, FETCH, CLOSE)", got == [tuple(r) for r in want],
                  f"{len(got)} rows vs {len(want)}")
            cur = conn.cursor()
            cur.execute("DECLARE c CURSOR FOR " + cursor_sql)
            cur.execute("MOVE 10 IN c")
            cur.execute("FETCH 5 FROM c")
            check("MOVE then FETCH", [tuple(r) for r in cur.fetchall()] == [tuple(r) for r in want[10:15]])
            cur.execute("CLOSE c")
            conn.rollback()
        chunks = pandas.read_sql(sqlalchemy.text(cursor_sql), engine.execution_options(stream_results=True),
                                 chunksize=250)
        got = [tuple(r) for chunk in chunks for r in chunk.itertuples(index=False)]
        check("pandas.read_sql in chunks (stream_results)", got == [tuple(r) for r in want],
              f"{len(got)} rows vs {len(want)}")
        engine.dispose()
        # A transaction reads the dataset version current at BEGIN, even when a new export is
        # swapped in meanwhile; the next transaction reads the new one.
        with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as other:
            before = conn.execute("SELECT count(*) FROM catalog").fetchone()[0]
            newer = work / "newer.parquet"
            subprocess.run([args.binary, "generate", "--rows", "1500", "--seed", "6", "--out", str(newer)],
                           check=True, stdout=subprocess.DEVNULL, timeout=300)
            os.replace(newer, data)
            deadline = time.monotonic() + 60
            while other.execute("SELECT count(*) FROM catalog").fetchone()[0] != 1500:
                if time.monotonic() > deadline:
                    raise SystemExit("pg: the new export was not swapped in")
                time.sleep(0.2)
            during = conn.execute("SELECT count(*) FROM catalog").fetchone()[0]
            conn.commit()
            after = conn.execute("SELECT count(*) FROM catalog").fetchone()[0]
            check("a transaction reads one dataset version", (before, during, after) == (4000, 4000, 1500),
                  str((before, during, after)))
            conn.rollback()
        half_open(host, int(port), http.strip().removeprefix("listening on "), proc.pid, env, dsn)
        cancel_check(args.binary, original, creds)
        early_check(args.binary, work, creds)
        tls_checks(args.binary, original, work)
        # The queries are counted in the process's metrics, by result.
        import urllib.request
        metrics = urllib.request.urlopen(http.strip().removeprefix("listening on ") + "/metrics", timeout=30).read().decode()
        counts = {r: 0.0 for r in ("ok", "invalid", "refused", "stopped")}
        for line in metrics.splitlines():
            for r in counts:
                if line.startswith(f'eco_pg_queries_total{{result="{r}"}}'):
                    counts[r] = float(line.split()[-1])
        check("eco_pg_queries_total by result", counts["ok"] >= 7 and counts["refused"] >= 2 and counts["stopped"] >= 1
              and counts["invalid"] >= 2, str(counts))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
