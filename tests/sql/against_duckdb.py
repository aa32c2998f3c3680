#!/usr/bin/env python3
"""`make sql-test`: analysts' queries answered by the service (`POST /sql`) and by DuckDB
in-process on the same export, compared row by row.

The export is a generated catalog with its ids written in (so both sides read the same `id`
column). `catalog` queries run as they are in DuckDB over the Parquet file. Queries over the eco
score compare against DuckDB computing the score from the contract's formulas (API-CONTRACT §2),
written here independently of the service's views: the published score is rounded half to even,
DuckDB's ROUND is half away from zero, so scores are compared within 0.05.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import duckdb
import polars as pl

ROOT = Path(__file__).resolve().parents[2]
KEY, SECRET = "sql-check", "sql-check-secret"

# The eco score of the contract, in DuckDB (clamps written with CASE: a missing index stays
# missing).
ECO = """
CREATE VIEW eco AS
WITH i AS (
  SELECT id, marca, ano, combustivel_tipo,
    CASE WHEN consumo_energetico_mj_km IS NULL THEN NULL
         ELSE LEAST(100.0, GREATEST(0.0, 100.0 * (3.0 - consumo_energetico_mj_km) / 2.7)) END AS e,
    CASE WHEN co2_fossil_g_km IS NULL THEN NULL
         ELSE LEAST(100.0, GREATEST(0.0, 100.0 * (250.0 - co2_fossil_g_km) / 250.0)) END AS c,
    CASE WHEN nmhc_g_km IS NULL OR co_g_km IS NULL OR nox_g_km IS NULL THEN NULL
         ELSE LEAST(100.0, GREATEST(0.0, 100.0 * (1.0 - (nmhc_g_km / 0.05 + co_g_km / 1.3 + nox_g_km / 0.08) / 3.0))) END AS p
  FROM catalog)
SELECT *, CASE WHEN e IS NULL AND c IS NULL THEN NULL ELSE
  (0.45 * COALESCE(e, 0) + 0.35 * COALESCE(c, 0) + 0.20 * COALESCE(p, 0))
  / ((CASE WHEN e IS NULL THEN 0 ELSE 0.45 END) + (CASE WHEN c IS NULL THEN 0 ELSE 0.35 END)
     + (CASE WHEN p IS NULL THEN 0 ELSE 0.20 END)) END AS eco_score
FROM i
"""

# (name, service SQL, DuckDB SQL or None for the same text, tolerance)
QUERIES = [
    ("filter and order",
     "SELECT id, marca, ano FROM catalog WHERE ano >= 2020 AND marca = 'Fiat' ORDER BY ano DESC, id", None, 0),
    ("group by",
     "SELECT combustivel_tipo, COUNT(*) AS n, AVG(co2_fossil_g_km) AS co2 FROM catalog "
     "GROUP BY combustivel_tipo ORDER BY combustivel_tipo", None, 1e-9),
    ("mean CO2 by fuel and year since 2015",
     "SELECT combustivel_tipo, ano, AVG(co2_fossil_g_km) AS co2 FROM catalog WHERE ano >= 2015 "
     "GROUP BY combustivel_tipo, ano ORDER BY combustivel_tipo, ano", None, 1e-9),
    ("having",
     "SELECT marca, COUNT(*) AS n FROM catalog GROUP BY marca HAVING COUNT(*) > 300 ORDER BY n DESC, marca",
     None, 0),
    ("cte",
     "WITH recent AS (SELECT * FROM catalog WHERE ano >= 2022) "
     "SELECT categoria, MIN(consumo_energetico_mj_km) AS best FROM recent GROUP BY categoria ORDER BY categoria",
     None, 1e-12),
    ("subquery",
     "SELECT COUNT(*) AS n FROM catalog WHERE ano IN (SELECT ano FROM catalog WHERE combustivel_tipo = 'Elétrico')",
     None, 0),
    ("distinct and union",
     "SELECT tipo_propulsao AS v FROM catalog UNION SELECT combustivel_tipo AS v FROM catalog ORDER BY v",
     None, 0),
    ("case and cast",
     "SELECT CASE WHEN ano < 2018 THEN 'antigo' ELSE 'novo' END AS idade, CAST(COUNT(*) AS DOUBLE) AS n "
     "FROM catalog GROUP BY CASE WHEN ano < 2018 THEN 'antigo' ELSE 'novo' END ORDER BY idade", None, 0),
    ("join with the eco score view",
     "SELECT c.marca, COUNT(*) AS n, MAX(e.eco_score) AS top FROM catalog c JOIN vw_eco_score e ON c.id = e.id "
     "WHERE e.eco_score IS NOT NULL GROUP BY c.marca ORDER BY c.marca",
     "SELECT c.marca, COUNT(*) AS n, MAX(e.eco_score) AS top FROM catalog c JOIN eco e ON c.id = e.id "
     "WHERE e.eco_score IS NOT NULL GROUP BY c.marca ORDER BY c.marca", 0.05),
    ("text functions on the brand and category",
     "SELECT LOWER(marca) AS m, UPPER(categoria) AS c, LENGTH(modelo) AS l, COUNT(*) AS n FROM catalog "
     "WHERE marca LIKE 'F%' OR categoria ILIKE '%esportivo%' GROUP BY LOWER(marca), UPPER(categoria), LENGTH(modelo) "
     "ORDER BY m, c, l", None, 0),
    ("ordering and comparing text",
     "SELECT marca, MIN(modelo) AS primeiro, MAX(modelo) AS ultimo FROM catalog WHERE marca > 'G' AND "
     "categoria IN ('Médio', 'Picape') GROUP BY marca ORDER BY marca DESC", None, 0),
    ("brands whose best model beats their worst by 30 points",
     "WITH m AS (SELECT marca, modelo, AVG(eco_score) AS s FROM vw_eco_score WHERE eco_score IS NOT NULL "
     "GROUP BY marca, modelo) SELECT marca FROM m GROUP BY marca HAVING MAX(s) - MIN(s) > 30 ORDER BY marca",
     "WITH m AS (SELECT c.marca, c.modelo, AVG(e.eco_score) AS s FROM catalog c JOIN eco e ON c.id = e.id "
     "WHERE e.eco_score IS NOT NULL GROUP BY c.marca, c.modelo) "
     "SELECT marca FROM m GROUP BY marca HAVING MAX(s) - MIN(s) > 30 ORDER BY marca", None),
]


def post(base: str, sql: str) -> dict:
    body = json.dumps({"sql": sql}).encode()
    req = urllib.request.Request(base + "/sql", data=body, method="POST", headers={
        "X-API-Key": KEY, "X-API-Secret": SECRET, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return json.loads(res.read())
    except urllib.error.HTTPError as e:
        raise SystemExit(f"sql: {sql!r} answered {e.code}: {e.read()[:400]!r}")


def same(a, b, tol) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is None and b is None
        return math.isclose(float(a), float(b), rel_tol=0, abs_tol=tol) or (tol and abs(a - b) <= tol)
    return a == b


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="eco-sql-"))
    generated = work / "generated.parquet"
    subprocess.run([args.binary, "generate", "--rows", "6000", "--seed", "11", "--out", str(generated)],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    # The ids derived by the service, written into the export both sides read.
    df = pl.read_parquet(generated)
    if "id" not in df.columns:
        raise SystemExit("sql: the generator writes ids")
    data = work / "catalog.parquet"
    df.write_parquet(data)
    creds = work / "credentials.json"
    creds.write_text(json.dumps({"credentials": [{"key": KEY, "name": "sql check",
                                                  "secret_sha256": hashlib.sha256(SECRET.encode()).hexdigest()}]}))
    log = open(work / "server.log", "w")
    proc = subprocess.Popen([args.binary, "serve", "--bind", "127.0.0.1:0", "--data", str(data), "--credentials",
                             str(creds), "--queries", str(ROOT / "queries"), "--log", "warn"],
                            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True)
    failures = 0
    checks = 0
    try:
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit(f"sql: the service did not start: {line!r}")
        base = line.strip().removeprefix("listening on ")
        con = duckdb.connect()
        con.execute(f"CREATE TABLE catalog AS SELECT * FROM read_parquet('{data}')")
        con.execute(ECO)
        for name, sql, duck_sql, tol in QUERIES:
            answer = post(base, sql)
            got = [tuple(r.values()) for r in answer["data"]["data"]]
            cur = con.execute(duck_sql or sql)
            want = [tuple(r) for r in cur.fetchall()]
            checks += 1
            ok = len(got) == len(want) and all(
                len(g) == len(w) and all(same(x, y, tol) for x, y in zip(g, w)) for g, w in zip(got, want))
            if not ok:
                failures += 1
                print(f"sql: MISMATCH {name}: service {got[:5]} ... ({len(got)} rows), "
                      f"DuckDB {want[:5]} ... ({len(want)} rows)", file=sys.stderr)
            else:
                print(f"sql: {name}: {len(got)} rows identical")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
