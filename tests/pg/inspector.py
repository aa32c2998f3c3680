#!/usr/bin/env python3
"""SQLAlchemy 2.x reflection against a running PostgreSQL door (it starts nothing).

    python tests/pg/inspector.py --pg-port 55433 [--host H --user U --password P --dbname D]
                                 [--driver auto|psycopg|psycopg2] [--echo]

Every inspector method a notebook, pandas or a BI tool calls (get_table_names, get_view_names,
get_columns, get_pk_constraint, get_foreign_keys, get_indexes, get_unique_constraints,
get_check_constraints, get_table_comment, get_view_definition, get_schema_names, has_table, the
get_multi_* family with kind TABLE, VIEW and ANY), MetaData.reflect(views=True), Table(...,
autoload_with=...) and pandas.read_sql_table, on `catalog` and every view `queries/` creates.

The expected answers come from the door itself, never from the catalog emulation: each
relation's columns (names, order, wire types) from a plain `SELECT * FROM t LIMIT 0`'s cursor
description, its row count from `SELECT count(*)`, whether a column holds NULLs from
`count(*) - count(col)`. What a PostgreSQL database without keys, indexes, constraints or
comments answers (PostgreSQL 15/16 checked): no primary key (name None, no columns), no foreign
keys, indexes, unique or check constraints, a comment that is None or text, a view's definition
as SELECT text, get_view_definition of a table raising NoSuchTableError, view columns nullable.

One line per check (`inspector: ok NAME` / `inspector: FAILED NAME: detail`, the failure with the
last SQL statement sent and the server's SQLSTATE), a closing `N passed, N failed`; exit 1 on any
failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import traceback
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event, inspect
from sqlalchemy.engine.reflection import ObjectKind

ROOT = Path(__file__).resolve().parents[2]
TABLES = ["catalog"]
# The views queries/ creates, in the order it creates them (the fallback when the folder is absent).
FALLBACK_VIEWS = ["vw_metrics", "vw_eco_score_raw", "vw_eco_score_published", "vw_eco_score"]

# Wire type oid -> the type SQLAlchemy's PostgreSQL dialect should reflect (compiled).
EXPECTED_TYPE = {
    16: "BOOLEAN", 20: "BIGINT", 21: "SMALLINT", 23: "INTEGER", 25: "TEXT", 700: "REAL",
    701: "DOUBLE PRECISION", 1043: "VARCHAR", 1082: "DATE", 1083: "TIME WITHOUT TIME ZONE",
    1114: "TIMESTAMP WITHOUT TIME ZONE", 1184: "TIMESTAMP WITH TIME ZONE", 1700: "NUMERIC",
    17: "BYTEA", 114: "JSON", 3802: "JSONB", 2950: "UUID",
}

passed = 0
failed = 0


def view_names() -> list[str]:
    """The views queries/*.sql creates (`CREATE TABLE name AS ...`), in file order."""
    names: list[str] = []
    for path in sorted((ROOT / "queries").glob("*.sql")):
        for m in re.finditer(r"(?im)^\s*create\s+table\s+\"?(\w+)\"?", path.read_text()):
            name = m.group(1).lower()
            if name != "catalog" and name not in names:
                names.append(name)
    return names or list(FALLBACK_VIEWS)


class Recorder:
    """The statements an engine sent, so a failure shows the last one."""

    def __init__(self, engine: sa.Engine):
        self.last: tuple[str, object] | None = None
        event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, parameters, context, executemany):
        self.last = (statement, parameters)


def check(label: str, ok: bool, detail: str = "") -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f"inspector: ok {label}", flush=True)
    else:
        failed += 1
        print(f"inspector: FAILED {label}: {detail}", flush=True)


def error_detail(e: BaseException, rec: Recorder) -> str:
    orig = getattr(e, "orig", None)
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    out = f"{type(e).__name__}: {first}"
    if state:
        out += f" [SQLSTATE {state}]"
    if rec.last is not None:
        out += f"\n    last SQL: {' '.join(rec.last[0].split())}\n    parameters: {rec.last[1]!r}"
    return out


def attempt(label: str, rec: Recorder, fn, verify, expect_error: type | None = None):
    """Runs fn(); verify(result) -> (ok, detail). With expect_error, fn must raise exactly that."""
    rec.last = None
    try:
        result = fn()
    except Exception as e:  # noqa: BLE001 - every failure is a check's detail
        if expect_error is not None and isinstance(e, expect_error):
            check(label, True)
            return None
        check(label, False, error_detail(e, rec))
        return None
    if expect_error is not None:
        check(label, False, f"expected {expect_error.__name__}, got {result!r:.300}")
        return result
    try:
        ok, detail = verify(result)
    except Exception:  # noqa: BLE001
        ok, detail = False, "verification raised:\n" + traceback.format_exc(limit=3)
    check(label, ok, detail if not ok else "")
    return result


def truth(engine: sa.Engine, names: list[str]) -> dict:
    """Each relation's columns (name, wire type oid), row count and columns holding NULLs, from
    plain queries."""
    out = {}
    with engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        for name in names:
            cur = raw.cursor()
            cur.execute(f'SELECT * FROM "{name}" LIMIT 0')
            cols = [(d[0], d[1]) for d in cur.description]
            cur.execute(f'SELECT count(*) FROM "{name}"')
            count = cur.fetchone()[0]
            nulls = set()
            if cols:
                probes = ", ".join(f'count(*) - count("{c}")' for c, _ in cols)
                cur.execute(f'SELECT {probes} FROM "{name}"')
                nulls = {c for (c, _), n in zip(cols, cur.fetchone()) if n}
            cur.close()
            out[name] = {"columns": cols, "count": count, "nulls": nulls}
        raw.rollback()
    return out


def run(url: str, driver: str, echo: bool) -> None:
    engine = sa.create_engine(url, echo=echo)
    rec = Recorder(engine)
    tables, views = list(TABLES), view_names()
    names = tables + views
    p = f"[{driver}] "
    try:
        expected = truth(engine, names)
    except Exception as e:  # noqa: BLE001
        check(p + "plain SELECT * LIMIT 0 / count(*) on every relation", False, error_detail(e, rec))
        engine.dispose()
        return
    check(p + "plain SELECT * LIMIT 0 / count(*) on every relation", True)
    dialect = engine.dialect
    key = lambda n: (None, n)  # noqa: E731 - get_multi_* keys for the default schema

    def columns_ok(name: str, got: list[dict]) -> tuple[bool, str]:
        want = expected[name]["columns"]
        problems = []
        if [c["name"] for c in got] != [c for c, _ in want]:
            problems.append(f"names {[c['name'] for c in got]} vs cursor {[c for c, _ in want]}")
        for c, (wname, oid) in zip(got, want):
            if not isinstance(c.get("nullable"), bool):
                problems.append(f"{wname}: nullable {c.get('nullable')!r} is no bool")
            elif not c["nullable"] and (wname in expected[name]["nulls"] or name in views):
                problems.append(f"{wname}: reflected NOT NULL but {'it holds NULLs' if name not in views else 'a view'}")
            want_type = EXPECTED_TYPE.get(oid)
            got_type = c["type"].compile(dialect=dialect) if not isinstance(c["type"], sa.types.NullType) else "NULL"
            if want_type is not None and got_type != want_type:
                problems.append(f"{wname}: type {got_type} vs wire oid {oid} ({want_type})")
            if c.get("default") is not None:
                problems.append(f"{wname}: default {c['default']!r}")
            if c.get("autoincrement") not in (False, "auto", None):
                problems.append(f"{wname}: autoincrement {c.get('autoincrement')!r}")
            if c.get("comment") is not None and not isinstance(c["comment"], str):
                problems.append(f"{wname}: comment {c['comment']!r}")
            if "identity" in c or "computed" in c:
                problems.append(f"{wname}: identity/computed {c.get('identity') or c.get('computed')!r}")
        return not problems, "; ".join(problems[:6])

    def no_pk(r) -> tuple[bool, str]:
        return (isinstance(r, dict) and r.get("constrained_columns") == [] and r.get("name") is None, repr(r))

    def empty(r) -> tuple[bool, str]:
        return r == [], repr(r)[:300]

    def comment_ok(r) -> tuple[bool, str]:
        return isinstance(r, dict) and (r.get("text") is None or isinstance(r.get("text"), str)), repr(r)

    # Names.
    attempt(p + "get_schema_names lists public", rec, lambda: inspect(engine).get_schema_names(),
            lambda r: ("public" in r and "pg_catalog" not in r, repr(r)))
    attempt(p + "get_table_names is the tables", rec, lambda: inspect(engine).get_table_names(),
            lambda r: (sorted(r) == sorted(tables), f"{r} vs {tables}"))
    attempt(p + "get_view_names is the views of queries/", rec, lambda: inspect(engine).get_view_names(),
            lambda r: (sorted(r) == sorted(views), f"{r} vs {views}"))
    attempt(p + "has_table of an unknown name is False", rec, lambda: inspect(engine).has_table("no_such_relation"),
            lambda r: (r is False, repr(r)))

    # One relation at a time.
    for name in names:
        is_view = name in views
        attempt(p + f"has_table({name})", rec, lambda: inspect(engine).has_table(name), lambda r: (r is True, repr(r)))
        attempt(p + f"get_columns({name}): the cursor's columns, types and nullability", rec,
                lambda: inspect(engine).get_columns(name), lambda r: columns_ok(name, r))
        attempt(p + f"get_pk_constraint({name}) is none", rec, lambda: inspect(engine).get_pk_constraint(name), no_pk)
        attempt(p + f"get_foreign_keys({name}) is []", rec, lambda: inspect(engine).get_foreign_keys(name), empty)
        attempt(p + f"get_indexes({name}) is []", rec, lambda: inspect(engine).get_indexes(name), empty)
        attempt(p + f"get_unique_constraints({name}) is []", rec,
                lambda: inspect(engine).get_unique_constraints(name), empty)
        attempt(p + f"get_check_constraints({name}) is []", rec,
                lambda: inspect(engine).get_check_constraints(name), empty)
        attempt(p + f"get_table_comment({name}) is None or text", rec,
                lambda: inspect(engine).get_table_comment(name), comment_ok)
        if is_view:
            attempt(p + f"get_view_definition({name}) is its SELECT", rec,
                    lambda: inspect(engine).get_view_definition(name),
                    lambda r: (isinstance(r, str) and "select" in r.lower(), repr(r)[:300]))
        else:
            # PostgreSQL: a table has no view definition (pg_class.relkind filter, no row).
            attempt(p + f"get_view_definition({name}) of a table raises NoSuchTableError", rec,
                    lambda: inspect(engine).get_view_definition(name), None, expect_error=sa.exc.NoSuchTableError)

    # The get_multi_* family, per kind.
    kinds = {ObjectKind.TABLE: tables, ObjectKind.VIEW: views, ObjectKind.ANY: names}
    multi = [
        ("get_multi_columns", lambda n, v: columns_ok(n, v)),
        ("get_multi_pk_constraint", lambda n, v: no_pk(v)),
        ("get_multi_foreign_keys", lambda n, v: empty(v)),
        ("get_multi_indexes", lambda n, v: empty(v)),
        ("get_multi_unique_constraints", lambda n, v: empty(v)),
        ("get_multi_check_constraints", lambda n, v: empty(v)),
        ("get_multi_table_comment", lambda n, v: comment_ok(v)),
    ]
    for method, each in multi:
        for kind, members in kinds.items():
            def verify(r, members=members, each=each):
                if not isinstance(r, dict) or set(r) != {key(n) for n in members}:
                    return False, f"keys {sorted(r) if isinstance(r, dict) else r!r} vs {[key(n) for n in members]}"
                bad = [(n, d) for n in members for ok, d in [each(n, r[key(n)])] if not ok]
                return not bad, "; ".join(f"{n}: {d}" for n, d in bad[:3])
            attempt(p + f"{method}(kind={kind.name})", rec,
                    lambda: getattr(inspect(engine), method)(kind=kind), verify)

    # MetaData.reflect and Table(autoload_with=...).
    def reflected_ok(md: sa.MetaData) -> tuple[bool, str]:
        problems = []
        if set(md.tables) != set(names):
            problems.append(f"tables {sorted(md.tables)} vs {sorted(names)}")
        for name in names:
            t = md.tables.get(name)
            if t is None:
                continue
            want = [c for c, _ in expected[name]["columns"]]
            if [c.name for c in t.columns] != want:
                problems.append(f"{name}: columns {[c.name for c in t.columns][:5]}... vs {want[:5]}...")
            if list(t.primary_key.columns) or t.foreign_keys or t.indexes:
                problems.append(f"{name}: pk {list(t.primary_key.columns)} fks {t.foreign_keys} indexes {t.indexes}")
            others = [c for c in t.constraints if not isinstance(c, sa.PrimaryKeyConstraint)]
            if others:
                problems.append(f"{name}: constraints {others}")
        return not problems, "; ".join(problems[:5])

    def reflect():
        md = sa.MetaData()
        md.reflect(engine, views=True)
        return md
    attempt(p + "MetaData().reflect(views=True): every relation, its columns, no keys or constraints", rec,
            reflect, reflected_ok)
    for name in names:
        attempt(p + f"Table({name}, autoload_with=engine)", rec,
                lambda: sa.Table(name, sa.MetaData(), autoload_with=engine),
                lambda t: ([c.name for c in t.columns] == [c for c, _ in expected[name]["columns"]],
                           str([c.name for c in t.columns][:6])))

    # pandas.
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is None:
        check(p + "pandas is installed", False, "import pandas failed")
    else:
        for name in names:
            attempt(p + f"pandas.read_sql_table({name}): its columns and count(*) rows", rec,
                    lambda: pd.read_sql_table(name, engine),
                    lambda df: (list(df.columns) == [c for c, _ in expected[name]["columns"]]
                                and len(df) == expected[name]["count"],
                                f"{len(df)} rows vs count(*) {expected[name]['count']}; "
                                f"columns {list(df.columns)[:5]}..."))
    engine.dispose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg-port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--user", default="demo-key")
    ap.add_argument("--password", default="demo-secret")
    ap.add_argument("--dbname", default="eco")
    ap.add_argument("--driver", choices=["auto", "psycopg", "psycopg2"], default="auto",
                    help="auto: psycopg, and psycopg2 too when it is installed")
    ap.add_argument("--echo", action="store_true", help="SQLAlchemy's echo: every statement sent")
    args = ap.parse_args()
    drivers = [args.driver] if args.driver != "auto" else \
        ["psycopg"] + (["psycopg2"] if importlib.util.find_spec("psycopg2") else [])
    for driver in drivers:
        url = sa.engine.URL.create(f"postgresql+{driver}", username=args.user, password=args.password or None,
                                   host=args.host, port=args.pg_port, database=args.dbname,
                                   query={"sslmode": "disable"} if args.host in ("127.0.0.1", "localhost") else {})
        run(url, driver, args.echo)
    print(f"inspector: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
