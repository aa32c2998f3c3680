"""`make pg-test`, catalog browsing: what psql's \\d family, SQLAlchemy's inspector, pgjdbc's
DatabaseMetaData, asyncpg and the ADBC driver read from the PostgreSQL door, compared with what
they read from a real PostgreSQL server (Debian's `postgresql`, tests/sql/pgserver.py) holding the
same export as table `catalog` (with the service's columns and types, as the SQL corpus test
loads it). The door also lists the views `queries/` creates; their names are
read from the queries' own files."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sql"))
from against_postgres import CATALOG, catalog_table  # noqa: E402
from pgserver import PgServer, load_table  # noqa: E402


def view_names() -> list[str]:
    """The views the queries folder creates (`CREATE TABLE name AS …`), besides `catalog`."""
    names = []
    for path in sorted((ROOT / "queries").glob("*.sql")):
        for m in re.finditer(r"(?im)^\s*create\s+table\s+\"?(\w+)\"?", path.read_text()):
            if m.group(1).lower() != "catalog":
                names.append(m.group(1).lower())
    return sorted(set(names))


def psql(conninfo: str, command: str, env: dict) -> tuple[int, list[list[str]], str]:
    out = subprocess.run(["psql", "-X", "-A", "-t", "-F", "|", conninfo, "-c", command],
                         capture_output=True, text=True, timeout=60, env=env)
    rows = [line.split("|") for line in out.stdout.splitlines() if line]
    return out.returncode, rows, out.stderr


def catalog_checks(check, ours: dict, data: Path, work: Path) -> None:
    """`ours`: host, port, user, password of the door."""
    table = catalog_table(data)
    views = view_names()
    door = f"host={ours['host']} port={ours['port']} user={ours['user']} dbname=eco sslmode=disable"
    env = dict(os.environ, PGPASSWORD=ours["password"], PGCONNECT_TIMEOUT="10")
    with PgServer() as pg:
        with pg.connect() as conn:
            conn.execute("CREATE DATABASE eco")
        with pg.connect("eco") as conn:
            load_table(conn, "catalog", table, CATALOG)
        oracle = pg.conninfo("eco")

        # psql: \dt, \dv, \d catalog, \l, \dn.
        _, dt_ours, err = psql(door, r"\dt", env)
        _, dt_pg, _ = psql(oracle, r"\dt", env)
        check(r"psql \dt lists catalog as PostgreSQL does", [r[:3] for r in dt_ours] == [r[:3] for r in dt_pg],
              f"{dt_ours} vs {dt_pg} {err}")
        _, dv_ours, err = psql(door, r"\dv", env)
        check(r"psql \dv lists every view of queries/", sorted(r[1] for r in dv_ours) == views
              and all(r[0] == "public" and r[2] == "view" for r in dv_ours), f"{dv_ours} vs {views} {err}")
        _, d_ours, err = psql(door, r"\d catalog", env)
        _, d_pg, _ = psql(oracle, r"\d catalog", env)
        check(r"psql \d catalog: PostgreSQL's columns, types, collations, nullability", d_ours == d_pg and len(d_pg) > 10,
              f"{d_ours[:4]} vs {d_pg[:4]} {err}")
        for view in views[:2]:
            code, d_view, err = psql(door, rf"\d {view}", env)
            check(rf"psql \d {view} describes its columns", code == 0 and len(d_view) > 1, err)
        _, l_ours, err = psql(door, r"\l", env)
        check(r"psql \l lists database eco in UTF8", any(r[0] == "eco" and r[2] == "UTF8" for r in l_ours),
              f"{l_ours} {err}")
        _, dn_ours, _ = psql(door, r"\dn", env)
        _, dn_pg, _ = psql(oracle, r"\dn", env)
        check(r"psql \dn lists public as PostgreSQL does", [r[0] for r in dn_ours] == [r[0] for r in dn_pg],
              f"{dn_ours} vs {dn_pg}")

        # SQLAlchemy's inspector: names and column types, as from PostgreSQL.
        import sqlalchemy as sa
        url = f"postgresql+psycopg://{ours['user']}:{ours['password']}@{ours['host']}:{ours['port']}/eco?sslmode=disable"
        ours_engine = sa.create_engine(url)
        pg_engine = sa.create_engine(f"postgresql+psycopg://postgres@127.0.0.1:{pg.port}/eco")
        try:
            mine, theirs = sa.inspect(ours_engine), sa.inspect(pg_engine)
            check("SQLAlchemy inspector: table names", mine.get_table_names() == theirs.get_table_names(),
                  f"{mine.get_table_names()} vs {theirs.get_table_names()}")
            check("SQLAlchemy inspector: view names are the views of queries/",
                  sorted(mine.get_view_names()) == views, str(mine.get_view_names()))
            cols = lambda i: [(c["name"], str(c["type"]), c["nullable"]) for c in i.get_columns("catalog")]  # noqa: E731
            check("SQLAlchemy inspector: catalog's columns and types", cols(mine) == cols(theirs),
                  f"{cols(mine)[:5]} vs {cols(theirs)[:5]}")
            check("SQLAlchemy inspector: no primary key, indexes or foreign keys",
                  mine.get_pk_constraint("catalog")["constrained_columns"] == []
                  and mine.get_indexes("catalog") == [] and mine.get_foreign_keys("catalog") == [], "")
            check("SQLAlchemy inspector: a view's columns", len(mine.get_columns(views[0])) > 1, views[0])
            check("SQLAlchemy has_table", mine.has_table("catalog") and not mine.has_table("nothing"), "")
        finally:
            ours_engine.dispose()
            pg_engine.dispose()

        # pgjdbc's DatabaseMetaData.
        jar = "/usr/share/java/postgresql.jar"
        build = subprocess.run(["javac", "-cp", jar, "-d", str(work), str(ROOT / "tests" / "pg" / "JdbcMeta.java")],
                               capture_output=True, text=True, timeout=300)
        if build.returncode != 0:
            check("pgjdbc metadata check compiles", False, build.stderr)
        else:
            def meta(url: str, user: str, password: str) -> list[str]:
                out = subprocess.run(["java", "-cp", f"{work}:{jar}", "JdbcMeta", url, user, password],
                                     capture_output=True, text=True, timeout=120)
                return out.stdout.splitlines() + ([f"error {out.stderr[-400:]}"] if out.returncode else [])
            got = meta(f"jdbc:postgresql://{ours['host']}:{ours['port']}/eco", ours["user"], ours["password"])
            want = meta(f"jdbc:postgresql://127.0.0.1:{pg.port}/eco", "postgres", "")
            view_lines = {f"table {v} VIEW" for v in views}
            check("pgjdbc getTables: catalog as TABLE and every view as VIEW",
                  {line for line in got if line.startswith("table ")}
                  == {line for line in want if line.startswith("table ")} | view_lines, f"{got[:8]}")
            check("pgjdbc getColumns and getPrimaryKeys as from PostgreSQL",
                  [x for x in got if x.startswith(("column ", "primary"))]
                  == [x for x in want if x.startswith(("column ", "primary"))],
                  f"{[x for x in got if not x.startswith('table')][:5]} vs {want[:5]}")
            check("pgjdbc getSchemas lists public", "schema public" in got, str(got[-4:]))

        # asyncpg: untyped parameters (described, then bound in binary), as from PostgreSQL.
        import asyncpg

        async def asyncpg_answers(dsn: str):
            c = await asyncpg.connect(dsn)
            try:
                a = await c.fetch("SELECT marca, count(*) AS n FROM catalog WHERE ano >= $1 AND marca <> $2 "
                                  "GROUP BY marca ORDER BY n DESC, marca LIMIT 5", 2018, "Fiat")
                ps = await c.prepare("SELECT id, ano FROM catalog WHERE ano BETWEEN $1 AND $2 ORDER BY id LIMIT 3")
                b = await ps.fetch(2015, 2020)
                types = [t.name for t in ps.get_parameters()]
                return [tuple(r) for r in a], [tuple(r) for r in b], types
            finally:
                await c.close()
        got = asyncio.run(asyncpg_answers(
            f"postgresql://{ours['user']}:{ours['password']}@{ours['host']}:{ours['port']}/eco?sslmode=disable"))
        want = asyncio.run(asyncpg_answers(f"postgresql://postgres@127.0.0.1:{pg.port}/eco"))
        check("asyncpg: untyped parameters, answers as from PostgreSQL", got[:2] == want[:2] and len(got[0]) > 0,
              f"{got[:2]} vs {want[:2]}")
        check("asyncpg: parameter types described as PostgreSQL infers them", got[2] == want[2], f"{got[2]} vs {want[2]}")

        # The ADBC driver: Arrow answers through COPY binary, the table's schema, the objects.
        import adbc_driver_postgresql.dbapi as adbc

        def adbc_read(uri: str):
            with adbc.connect(uri) as c:
                cur = c.cursor()
                cur.execute("SELECT marca, count(*) AS n, avg(ano)::float8 AS a FROM catalog GROUP BY marca "
                            "ORDER BY marca")
                t = cur.fetch_arrow_table()
                cur.execute("SELECT id, ano FROM catalog WHERE ano > $1 ORDER BY id LIMIT 4", parameters=(2016,))
                p = cur.fetch_arrow_table()
                schema = c.adbc_get_table_schema("catalog")
                objects = c.adbc_get_objects(depth="tables", db_schema_filter="public").read_all().to_pylist()
                tables = sorted(t["table_name"] for o in objects for s in o["catalog_db_schemas"] or []
                                for t in s["db_schema_tables"] or [])
                cur.close()
                return t.to_pylist(), p.to_pylist(), [(f.name, str(f.type)) for f in schema], tables
        got = adbc_read(f"postgresql://{ours['user']}:{ours['password']}@{ours['host']}:{ours['port']}/eco?sslmode=disable")
        want = adbc_read(f"postgresql://postgres@127.0.0.1:{pg.port}/eco")
        check("ADBC: Arrow answers as from PostgreSQL", got[0] == want[0] and got[1] == want[1] and len(got[0]) > 0,
              f"{got[0][:2]} vs {want[0][:2]}")
        check("ADBC: catalog's Arrow schema as from PostgreSQL", got[2] == want[2], f"{got[2][:4]} vs {want[2][:4]}")
        check("ADBC: get_objects lists catalog and the views", got[3] == sorted(["catalog"] + views), str(got[3]))
