#!/usr/bin/env python3
"""`make flight-test`: the Arrow Flight SQL door (`--flight-bind`) with the ADBC Flight SQL driver.

The service serves a generated export (the sql-test's: 6000 rows, seed 11) over HTTP and Flight
SQL; a real PostgreSQL server (tests/sql/pgserver.py) holds the same export and the contract's
views, and answers the SQL corpus of tests/sql/against_postgres.py. Checked with
`adbc_driver_flightsql` (the driver ADBC, Polars and pandas use):

- sign-in (basic-auth handshake → bearer token), a wrong secret or an unknown key refused
  (UNAUTHENTICATED), a revoked key's session refused after the credentials file is reloaded;
- the corpus' queries answered over Flight as Arrow tables equal to PostgreSQL's answers (names,
  row count, every value; numbers within the corpus' tolerance);
- a prepared statement with a parameter (bound as Arrow), run twice with different values;
- `adbc_get_objects`: catalog `eco`, schema `public`, the table `catalog` and every view, with
  their columns; table types; GetSqlInfo (server name, read-only);
- Polars' `pl.read_database(query, connection)` and pandas through `cursor.fetch_df()`;
- refusals and their gRPC codes: syntax and unknown names INVALID_ARGUMENT, a statement that
  writes or a function that reads a file PERMISSION_DENIED (the message names no path);
- a hostile query (a self cross join of the catalog) stopped at the time limit:
  DEADLINE_EXCEEDED, with the HTTP 422's message; the service answers at once afterwards;
- TLS with a certificate the test makes (`openssl`), the client trusting it
  (`adbc.flight.sql.client_option.tls_root_certs`), and the start-up refusal of a door beyond
  loopback without TLS.

    tests/flight/check.py --binary target/release/eco-insights
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sql"))
from against_postgres import CORPUS, ask_postgres, catalog_table, check_export, load_database, sort_key  # noqa: E402
from pgserver import PgServer  # noqa: E402

KEY, SECRET = "flight-check", "flight-check-secret"
OTHER_KEY, OTHER_SECRET = "flight-other", "flight-other-secret"
# Queries of the corpus compared here (those PostgreSQL and the service answer alike over HTTP;
# `known` differences are left to make sql-test).
ABS_TOL = 1e-9

passed = 0
failed = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f"flight: {name}: ok")
    else:
        failed += 1
        print(f"flight: FAILED {name}: {detail}", file=sys.stderr)


def entry(key: str, secret: str) -> dict:
    return {"key": key, "name": f"{key} entry", "secret_sha256": hashlib.sha256(secret.encode()).hexdigest()}


def start(binary: str, args: list[str], log: Path) -> tuple[subprocess.Popen, str]:
    """The service with `args`; its Flight address (`host:port`)."""
    proc = subprocess.Popen([binary, "serve", *args], stdout=subprocess.PIPE, stderr=open(log, "w"),
                            stdin=subprocess.DEVNULL, text=True)
    lines = []
    while True:
        line = proc.stdout.readline()
        if not line:
            proc.kill()
            raise SystemExit(f"flight: the service did not start: {lines!r} {log.read_text()[-2000:]}")
        lines.append(line)
        if line.startswith("flight listening on "):
            return proc, line.strip().removeprefix("flight listening on ")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def connect(uri: str, key: str = KEY, secret: str = SECRET, **options):
    return flight_sql.connect(uri, db_kwargs={"username": key, "password": secret, **options}, autocommit=True)


def error_of(fn) -> Exception | None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the driver's error is what is checked
        return e
    return None


def grpc_code(e: Exception | None) -> str:
    """The gRPC code the ADBC driver reports in its message ('... (DeadlineExceeded; ...)')."""
    return str(e) if e is not None else ""


def query(conn, sql: str, parameters=None) -> pa.Table:
    with conn.cursor() as cur:
        cur.execute(sql, parameters)
        return cur.fetch_arrow_table()


def same(want, got, tol: float) -> bool:
    if want is None or got is None:
        return want is None and got is None
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is bool and type(got) is bool and want == got
    if isinstance(want, (int, float, Decimal)):
        if not isinstance(got, (int, float, Decimal)) or isinstance(got, bool):
            return False
        if isinstance(want, int) and isinstance(got, int):
            return want == got
        if isinstance(want, float) and isinstance(got, float) and math.isnan(want) and math.isnan(got):
            return True
        return math.isclose(float(want), float(got), rel_tol=tol, abs_tol=ABS_TOL)
    if isinstance(want, (datetime.date, datetime.time)):
        return want == got
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(same(w, g, tol) for w, g in zip(want, got))
    return want == got


def compare(q, conn_pg, conn_flight) -> str | None:
    """How the Flight answer differs from PostgreSQL's (None when alike; 'skip' when PostgreSQL
    or the service refuses it, which make sql-test judges)."""
    try:
        want = ask_postgres(conn_pg, q.sql)
    except Exception as e:  # noqa: BLE001
        return f"skip: PostgreSQL refuses it: {e}"
    try:
        table = query(conn_flight, q.sql)
    except Exception as e:  # noqa: BLE001
        return f"skip: refused over Flight: {str(e)[:200]}" if q.known else f"refused over Flight: {str(e)[:300]}"
    if table.column_names != want.names:
        return f"columns {table.column_names}, PostgreSQL {want.names}"
    # By position: an answer may repeat a column name, as PostgreSQL's may.
    got_rows = list(zip(*[column.to_pylist() for column in table.columns])) if table.num_columns else []
    want_rows = want.rows
    if len(got_rows) != len(want_rows):
        return f"{len(got_rows)} rows, PostgreSQL {len(want_rows)}"
    if q.unordered:
        got_rows, want_rows = sorted(got_rows, key=sort_key), sorted(want_rows, key=sort_key)
    for i, (g, w) in enumerate(zip(got_rows, want_rows)):
        if not all(same(wv, gv, q.tol) for wv, gv in zip(w, g)):
            return f"row {i}: {g!r:.300} PostgreSQL {w!r:.300}"
    return None


def make_certificate(work: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1 (ECDSA P-256), with `openssl`."""
    cert, key = work / "flight.crt", work / "flight.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-addext", "basicConstraints=critical,CA:FALSE"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="the service's binary (target/release/eco-insights)")
    parser.add_argument("--keep", action="store_true", help="leave the temporary folder (export, logs, cluster)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix="eco-flight-"))
        if args.keep:
            stack.callback(print, f"flight: kept {work}")
        else:
            stack.callback(shutil.rmtree, work, ignore_errors=True)
        export = work / "catalog.parquet"
        subprocess.run([args.binary, "generate", "--rows", "6000", "--seed", "11", "--out", str(export)],
                       check=True, stdout=subprocess.DEVNULL, timeout=300)
        table = catalog_table(export)
        check_export(table)
        creds = work / "credentials.json"
        creds.write_text(json.dumps({"credentials": [entry(KEY, SECRET), entry(OTHER_KEY, OTHER_SECRET)]}))
        common = ["--bind", "127.0.0.1:0", "--data", str(export), "--credentials", str(creds),
                  "--queries", str(ROOT / "queries"), "--reload-interval-ms", "200", "--log", "warn"]

        # The start-up refusal: beyond loopback without TLS (exit 1, the flags named).
        out = subprocess.run([args.binary, "serve", *common, "--flight-bind", "0.0.0.0:0"], capture_output=True,
                             text=True, timeout=120, stdin=subprocess.DEVNULL)
        check("--flight-bind 0.0.0.0 without TLS refuses to start (exit 1, names --flight-tls-cert)",
              out.returncode == 1 and "--flight-tls-cert" in out.stderr and "--flight-allow-plaintext" in out.stderr,
              f"{out.returncode} {out.stderr[-500:]}")

        pg = stack.enter_context(PgServer(keep=args.keep))
        load_database(pg, "eco", table)
        conn_pg = stack.enter_context(pg.connect("eco"))
        print(f"flight: PostgreSQL {pg.version().split()[0]} with the export ({table.num_rows} rows) and the views "
              f"({time.monotonic() - started:.1f} s)")

        proc, addr = start(args.binary, [*common, "--flight-bind", "127.0.0.1:0", "--sql-timeout-ms", "60000",
                                         "--sql-max-rows", "100000"], work / "server.log")
        stack.callback(stop, proc)
        uri = f"grpc://{addr}"

        # Sign-in, and a wrong pair refused.
        conn = stack.enter_context(connect(uri))
        n = query(conn, "SELECT count(*) AS n FROM catalog").column("n").to_pylist()
        check("sign-in (key and secret) and a first query", n == [table.num_rows], str(n))
        for label, key, secret in [("a wrong secret", KEY, "wrong"), ("an unknown key", "nobody", SECRET)]:
            err = error_of(lambda: query(connect(uri, key, secret), "SELECT 1"))
            check(f"{label} is refused (UNAUTHENTICATED)", err is not None and "Unauthenticated" in str(err),
                  grpc_code(err))

        # The corpus, against PostgreSQL.
        compared, skipped, differing = 0, [], []
        for q in CORPUS:
            diff = compare(q, conn_pg, conn)
            if diff is None:
                compared += 1
            elif diff.startswith("skip: "):
                skipped.append(f"{q.name} ({diff})")
            else:
                differing.append(f"{q.name}: {diff}")
        check(f"corpus over Flight equal to PostgreSQL: {compared} queries alike, {len(skipped)} left to sql-test",
              not differing and compared >= len(CORPUS) // 2, "\n  " + "\n  ".join(differing + skipped[:5]))

        # The star query's Arrow table, column by column, against PostgreSQL's.
        star = query(conn, "SELECT * FROM catalog ORDER BY id LIMIT 25")
        types = {f.name: f.type for f in star.schema}
        check("Arrow types: ano int32, co2 float64, marca utf8, ar_condicionado bool",
              pa.types.is_integer(types["ano"]) and pa.types.is_floating(types["co2_fossil_g_km"])
              and (pa.types.is_string(types["marca"]) or pa.types.is_large_string(types["marca"]))
              and pa.types.is_boolean(types["ar_condicionado"]), str(types))

        # Large answers: over the 8 MB a worker sends through its pipe, it writes them to a file
        # the service maps and forwards as they are; past --sql-max-rows they are cut. Row for row
        # the export's, whatever way they took.
        want = table.sort_by("id").to_pydict()
        for copies, expect in ((8, 8 * table.num_rows), (20, 100_000)):
            values = ", ".join(f"({i})" for i in range(copies))
            big = query(conn, f"SELECT c.*, g.k FROM catalog c CROSS JOIN (VALUES {values}) AS g(k) ORDER BY g.k, c.id")
            got = big.to_pydict()
            alike = big.num_rows == expect and all(
                got[name][k * table.num_rows:(k + 1) * table.num_rows] == want[name][:expect - k * table.num_rows]
                for name in table.column_names for k in (0, expect // table.num_rows - 1))
            check(f"a large answer ({big.nbytes / 2**20:.0f} MB, {copies} copies of the catalog) is the export's rows"
                  f"{', cut at --sql-max-rows' if expect < copies * table.num_rows else ''}",
                  alike and big.nbytes > 8 * 2**20 and got["k"][-1] == (expect - 1) // table.num_rows,
                  f"{big.num_rows} rows, {big.nbytes} bytes")

        # Answers are streamed as the worker computes them: one left after its first batch gives
        # its worker back. More abandoned answers than the service has workers (2), then a query
        # still answers (a slot kept by an abandoned stream would answer UNAVAILABLE for good).
        values = ", ".join(f"({i})" for i in range(8))
        for _ in range(3):
            with conn.cursor() as cur:
                cur.execute(f"SELECT c.*, g.k FROM catalog c CROSS JOIN (VALUES {values}) AS g(k)")
                first = cur.fetch_record_batch().read_next_batch()
        deadline, answered, last = time.monotonic() + 5, None, None
        while answered is None and time.monotonic() < deadline:
            try:
                answered = query(conn, "SELECT count(*) AS n FROM catalog").column("n").to_pylist()
            except Exception as e:  # noqa: BLE001
                last = e
                time.sleep(0.1)
        check("answers left after their first batch give their worker back (3 abandoned, then a query answers)",
              first.num_rows > 0 and answered == [table.num_rows], f"{answered} {str(last)[:300]}")

        # A prepared statement with a parameter (bound as Arrow), run with two values.
        sql = "SELECT marca, count(*) AS n FROM catalog WHERE ano >= $1 GROUP BY marca ORDER BY n DESC, marca"
        for year in (2018, 2022):
            got = query(conn, sql, (year,)).to_pylist()
            want = conn_pg.execute(sql.replace("$1", "%s"), (year,)).fetchall()
            check(f"prepared statement with a parameter (ano >= {year})",
                  [(r["marca"], r["n"]) for r in got] == [tuple(r) for r in want], f"{got[:3]} vs {want[:3]}")
        with conn.cursor() as cur:
            cur.adbc_prepare("SELECT id, marca FROM catalog WHERE marca = $1 ORDER BY id LIMIT 3")
            cur.execute("SELECT id, marca FROM catalog WHERE marca = $1 ORDER BY id LIMIT 3", ("Fiat",))
            rows = cur.fetch_arrow_table().to_pylist()
            want = conn_pg.execute("SELECT id, marca FROM catalog WHERE marca = %s ORDER BY id LIMIT 3",
                                   ("Fiat",)).fetchall()
            check("explicitly prepared statement, text parameter", [(r["id"], r["marca"]) for r in rows]
                  == [tuple(r) for r in want], f"{rows} vs {want}")

        # ADBC's DB-API declares the `?` parameter style: the same statements written with `?`.
        from adbc_driver_flightsql import dbapi as flight_dbapi
        check("the driver declares paramstyle qmark", flight_dbapi.paramstyle == "qmark", flight_dbapi.paramstyle)
        sql = ("SELECT marca, count(*) AS n FROM catalog WHERE ano >= ? AND combustivel_tipo <> ? "
               "AND modelo <> '?' GROUP BY marca ORDER BY n DESC, marca")
        got = query(conn, sql, (2020, "Diesel")).to_pylist()
        want = conn_pg.execute(sql.replace("?", "%s").replace("'%s'", "'?'"), (2020, "Diesel")).fetchall()
        check("? placeholders: a statement with two parameters (a quoted '?' left alone)",
              [(r["marca"], r["n"]) for r in got] == [tuple(r) for r in want] and len(want) > 0,
              f"{got[:3]} vs {want[:3]}")
        with conn.cursor() as cur:
            cur.adbc_prepare("SELECT id, marca FROM catalog WHERE marca = ? ORDER BY id LIMIT 3")
            cur.execute("SELECT id, marca FROM catalog WHERE marca = ? ORDER BY id LIMIT 3", ("Fiat",))
            rows = cur.fetch_arrow_table().to_pylist()
            want = conn_pg.execute("SELECT id, marca FROM catalog WHERE marca = %s ORDER BY id LIMIT 3",
                                   ("Fiat",)).fetchall()
            check("? placeholders: an explicitly prepared statement", [(r["id"], r["marca"]) for r in rows]
                  == [tuple(r) for r in want] and len(rows) == 3, f"{rows} vs {want}")
        e = error_of(lambda: query(conn, "SELECT id FROM catalog WHERE marca = ?"))
        check("? placeholders without values: refused, naming the missing values", e is not None, str(e)[:200])

        # Catalog metadata, as ADBC's adbc_get_objects asks it.
        objects = conn.adbc_get_objects(depth="all").read_all().to_pylist()
        catalogs = {c["catalog_name"]: c for c in objects}
        schemas = {s["db_schema_name"]: s for s in (catalogs.get("eco") or {}).get("catalog_db_schemas") or []}
        tables = {t["table_name"]: t for t in (schemas.get("public") or {}).get("db_schema_tables") or []}
        views = [name for name in tables if name != "catalog"]
        catalog_columns = [c["column_name"] for c in (tables.get("catalog") or {}).get("table_columns") or []]
        check("adbc_get_objects: catalog eco, schema public, the table catalog and the views",
              "catalog" in tables and {"vw_metrics", "vw_eco_score"} <= set(views)
              and tables["catalog"]["table_type"] == "TABLE" and all(tables[v]["table_type"] == "VIEW" for v in views),
              f"{list(catalogs)} {list(schemas)} {[(t, tables[t]['table_type']) for t in tables]}")
        check("adbc_get_objects: the columns of catalog in order",
              catalog_columns == list(table.column_names), f"{catalog_columns} vs {table.column_names}")
        check("adbc_get_objects: every view has its columns",
              all((tables[v].get("table_columns") or []) for v in views), str(views))
        table_types = conn.adbc_get_table_types()
        check("table types TABLE and VIEW", sorted(table_types) == ["TABLE", "VIEW"], str(table_types))
        info = conn.adbc_get_info()
        check("GetSqlInfo: the server's name and version", info.get("vendor_name") == "eco-insights"
              and bool(info.get("vendor_version")), str(info))
        schema = conn.adbc_get_table_schema("vw_eco_score")
        check("adbc_get_table_schema(vw_eco_score) has eco_score", "eco_score" in schema.names, str(schema.names))

        # Polars and pandas.
        import polars as pl
        frame = pl.read_database("SELECT marca, count(*) AS n FROM catalog GROUP BY marca ORDER BY marca",
                                 connection=conn)
        want = conn_pg.execute("SELECT marca, count(*) AS n FROM catalog GROUP BY marca ORDER BY marca").fetchall()
        check("Polars read_database(query, connection)", frame.rows() == [tuple(r) for r in want],
              f"{frame.rows()[:3]} vs {want[:3]}")
        with conn.cursor() as cur:
            cur.execute("SELECT ano, avg(co2_fossil_g_km) AS co2 FROM catalog GROUP BY ano ORDER BY ano")
            df = cur.fetch_df()
        want = conn_pg.execute("SELECT ano, avg(co2_fossil_g_km) AS co2 FROM catalog GROUP BY ano ORDER BY ano") \
            .fetchall()
        check("pandas through cursor.fetch_df()", len(df) == len(want) and all(
            int(a) == w[0] and same(w[1], None if b != b else float(b), 1e-9)
            for a, b, w in zip(df["ano"], df["co2"], want)), f"{df.head(3)} vs {want[:3]}")

        # Refusals and their codes.
        for label, sql, code in [
            ("a syntax error", "SELEC 1", "InvalidArgument"),
            ("an unknown table", "SELECT * FROM nowhere", "InvalidArgument"),
            ("an unknown column", "SELECT nothing FROM catalog", "InvalidArgument"),
            ("a statement that writes", "DELETE FROM catalog", "PermissionDenied"),
            ("a function that reads a file", "SELECT pg_read_file('/etc/passwd')", "PermissionDenied"),
        ]:
            err = error_of(lambda: query(conn, sql))
            check(f"{label} is {code}", err is not None and code in str(err) and "/etc" not in str(err).replace(
                "'/etc/passwd'", ""), grpc_code(err))

        # A revoked key: its session stops at the next reload of the credentials file.
        other = stack.enter_context(connect(uri, OTHER_KEY, OTHER_SECRET))
        first = query(other, "SELECT 1 AS one").column("one").to_pylist()
        creds.write_text(json.dumps({"credentials": [entry(KEY, SECRET)]}))
        time.sleep(1.5)
        err = error_of(lambda: query(other, "SELECT 1 AS one"))
        check("a revoked key's token stops working after the reload", first == [1] and err is not None
              and "Unauthenticated" in str(err), f"{first} {grpc_code(err)}")
        stop(proc)

        # TLS, and a hostile query stopped at a short time limit.
        cert, key = make_certificate(work)
        proc, addr = start(args.binary, [*common, "--flight-bind", "127.0.0.1:0", "--sql-timeout-ms", "1500",
                                         "--flight-tls-cert", str(cert), "--flight-tls-key", str(key)],
                           work / "server-tls.log")
        stack.callback(stop, proc)
        port = addr.rsplit(":", 1)[1]
        tls_uri = f"grpc+tls://localhost:{port}"
        root = adbc_driver_flightsql.DatabaseOptions.TLS_ROOT_CERTS.value
        with connect(tls_uri, **{root: cert.read_text()}) as secure:
            n = query(secure, "SELECT count(*) AS n FROM catalog").column("n").to_pylist()
            check("TLS (grpc+tls, the test's certificate trusted)", n == [table.num_rows], str(n))
            hostile = ("SELECT count(*) FROM catalog a CROSS JOIN catalog b CROSS JOIN "
                       "(SELECT ano FROM catalog LIMIT 200) c WHERE a.modelo < b.modelo")
            t0 = time.monotonic()
            err = error_of(lambda: query(secure, hostile))
            took = time.monotonic() - t0
            message = str(err)
            check("a hostile query is stopped: DEADLINE_EXCEEDED with the HTTP 422's message",
                  err is not None and ("DeadlineExceeded" in message or "ResourceExhausted" in message)
                  and "Consulta interrompida: a consulta excedeu" in message and took < 30,
                  f"{took:.1f} s {message[:400]}")
            t0 = time.monotonic()
            n = query(secure, "SELECT count(*) AS n FROM catalog").column("n").to_pylist()
            check("the service answers at once after the stopped query", n == [table.num_rows]
                  and time.monotonic() - t0 < 10, f"{n} {time.monotonic() - t0:.1f} s")
        err = error_of(lambda: query(connect(f"grpc://127.0.0.1:{port}"), "SELECT 1"))
        check("plain gRPC to the TLS door fails", err is not None, "answered")
        err = error_of(lambda: query(connect(tls_uri), "SELECT 1"))
        check("a client that does not trust the certificate fails", err is not None, "answered")

    print(f"\nflight: {time.monotonic() - started:.0f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
