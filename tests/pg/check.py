#!/usr/bin/env python3
"""`make pg-test`: the PostgreSQL front door (`--pg-bind`) with the clients analysts use.

The service serves a generated export over HTTP and the PostgreSQL protocol; psycopg 3 (the
extended protocol, with parameters) and `psql -c` (the simple protocol) ask it analysts' queries,
and DuckDB in-process answers the same queries on the same file. Also checked: credentials
(user = key, password = secret; a wrong pair is 28P01), the column types a client sees, and the
SQLSTATE of each refusal (syntax 42601, unknown table 42P01, forbidden 42501, a limit 57014).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import psycopg

ROOT = Path(__file__).resolve().parents[2]
KEY, SECRET = "pg-check", "pg-check-secret"
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


def half_open(host: str, port: int, base: str, pid: int, env: dict) -> None:
    """Two thousand connections that never send their start-up: past --pg-max-connections they
    are answered 53300 and closed at once, the others are closed within the start-up deadline;
    HTTP clients are answered meanwhile, psql connects once they are gone, and the service holds
    no more sockets than before."""
    import resource
    import socket
    import urllib.request
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    fds_before = len(os.listdir(f"/proc/{pid}/fd"))
    started = time.monotonic()
    sockets = []
    for _ in range(2000):
        s = socket.create_connection((host, port), timeout=5)
        sockets.append(s)
    opened = time.monotonic() - started
    # HTTP is answered while the PostgreSQL door is full.
    with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
        check("HTTP answered while 2,000 PostgreSQL connections are half-open", r.status == 200)
    refused, closed, held = 0, 0, 0
    deadline = started + STARTUP_MS / 1000 * 1.25 + opened + 2.0
    for s in sockets:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            data = s.recv(4096)
            if data.startswith(b"E") and b"53300" in data:
                refused += 1
            elif data == b"":
                closed += 1
            else:
                held += 1
        except (socket.timeout, TimeoutError):
            held += 1
        except ConnectionResetError:
            closed += 1
        s.close()
    # A place freed by the deadline takes a later connection in while the 2,000 are still opening
    # (which takes seconds): at most MAX_CONNECTIONS held per deadline elapsed, the rest refused.
    rounds = 1 + int(opened / (STARTUP_MS / 1000)) + 1
    check(f"connections past --pg-max-connections answered 53300 ({refused} in {opened:.1f} s)",
          refused + closed == 2000 and closed <= MAX_CONNECTIONS * rounds,
          f"refused {refused}, closed {closed}, held {held}")
    check(f"half-open connections closed by the start-up deadline ({closed})", held == 0 and closed >= 1,
          f"refused {refused}, closed {closed}, held {held}")
    out = subprocess.run(["psql", "-h", host, "-p", str(port), "-U", KEY, "-d", "eco", "-At", "-c", "SELECT 1"],
                         capture_output=True, text=True, env=env, timeout=60)
    check("psql connects once the half-open connections are gone", out.returncode == 0 and out.stdout.strip() == "1",
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
    creds.write_text(json.dumps({"credentials": [{"key": KEY, "name": "pg check",
                                                  "secret_sha256": hashlib.sha256(SECRET.encode()).hexdigest()}]}))
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

        # Credentials and SQLSTATEs.
        bad = f"host={host} port={port} user={KEY} password=wrong dbname=eco sslmode=disable"
        try:
            psycopg.connect(bad).close()
            check("wrong password refused (28P01)", False, "connected")
        except psycopg.OperationalError as e:
            check("wrong password refused (28P01)", "28P01" in str(e) or "password" in str(e).lower(), str(e))
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
        out = subprocess.run(["psql", "-h", host, "-p", port, "-U", KEY, "-d", "eco", "-At", "-c", "SELECT * FROM nope"],
                             capture_output=True, text=True, env=env, timeout=60)
        check("psql reports an unknown table", out.returncode != 0 and "nope" in out.stderr, out.stderr)
        jdbc_check(host, port, work, con)
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
        half_open(host, int(port), http.strip().removeprefix("listening on "), proc.pid, env)
        cancel_check(args.binary, original, creds)
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
