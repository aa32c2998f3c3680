#!/usr/bin/env python3
"""Read-back of the answer formats (`make formats-test`).

Starts the release binary on a generated catalog, fetches every list operation in JSON and in
CSV, Parquet, Arrow IPC stream and NDJSON (through the `format` parameter and through `Accept`),
reads each answer with pandas, Polars and DuckDB, and checks that the rows, column names and
values equal the JSON answer's items. Then checks the full export (`/catalog/export`) the same
way against the catalog listing and the per-vehicle answers. Exits non-zero on any mismatch.

Only loopback traffic, every request bounded by a timeout; the server started here is always
stopped.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[2]
KEY, SECRET = "demo-key", "demo-secret"
FORMATS = {
    "csv": "text/csv",
    "parquet": "application/vnd.apache.parquet",
    "arrow": "application/vnd.apache.arrow.stream",
    "ndjson": "application/x-ndjson",
}
EXPORT_COLUMNS = [
    "id", "marca", "modelo", "versao", "ano", "categoria", "motor", "tipo_propulsao",
    "combustivel_tipo", "transmissao_tipo", "transmissao_marchas", "ar_condicionado",
    "direcao_assistida_tipo", "eficiencia_cidade_km_l", "eficiencia_estrada_km_l",
    "eficiencia_cidade_etanol_km_l", "eficiencia_estrada_etanol_km_l", "consumo_energetico_mj_km",
    "co2_fossil_g_km", "nmhc_g_km", "co_g_km", "nox_g_km", "nmog_nox_g_km", "autonomia_eletrica_km",
    "tanque_l",
    "classificacao_pbe_categoria", "classificacao_pbe_geral", "eficiencia_media_referencia",
    "consumo_referencia", "co2_referencia_g_km", "autonomia_km", "custo_anual_estimado",
    "eco_score", "eco_faixa",
]


class Mismatch(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# The service


class Service:
    def __init__(self, binary: str, work: Path, rows: int, seed: int):
        data = work / "catalog.parquet"
        subprocess.run(
            [binary, "generate", "--rows", str(rows), "--seed", str(seed), "--out", str(data)],
            check=True, stdout=subprocess.DEVNULL, timeout=300,
        )
        digest = hashlib.sha256(SECRET.encode()).hexdigest()
        creds = work / "credentials.json"
        creds.write_text(json.dumps({"credentials": [
            {"key": KEY, "name": "formats read-back", "secret_sha256": digest, "quota_per_minute": None}
        ]}))
        self.log = open(work / "server.log", "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--bind", "127.0.0.1:0", "--data", str(data), "--credentials", str(creds),
             "--queries", str(ROOT / "queries"), "--log", "warn"],
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.stop()
            raise SystemExit(f"formats: the service did not start: {line!r}")
        self.base = line.strip().removeprefix("listening on ")

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        req = urllib.request.Request(self.base + path, headers={"X-API-Key": KEY, "X-API-Secret": SECRET, **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=120) as res:
                return res.status, {k.lower(): v for k, v in res.headers.items()}, res.read()
        except urllib.error.HTTPError as e:
            return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()

    def json(self, path: str) -> dict:
        status, _, body = self.get(path)
        if status != 200:
            raise Mismatch(f"GET {path}: {status} {body[:300]!r}")
        return json.loads(body)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# ---------------------------------------------------------------------------------------------
# Readers: each returns (column names, rows as lists of plain Python values)


def plain(v):
    """A cell as a plain Python value (None for every kind of null)."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def text_columns(items: list[dict], columns: list[str]) -> list[str]:
    """Columns whose JSON values are strings: read as text, never guessed as numbers."""
    return [c for c in columns if any(isinstance(i.get(c), str) for i in items)]


def read_pandas(fmt: str, body: bytes, texts: list[str]):
    if fmt == "csv":
        df = pd.read_csv(io.BytesIO(body), dtype={c: "string" for c in texts}, keep_default_na=False, na_values=[""])
    elif fmt == "parquet":
        df = pd.read_parquet(io.BytesIO(body))
    elif fmt == "arrow":
        df = pa.ipc.open_stream(body).read_pandas()
    else:
        df = pd.read_json(io.BytesIO(body), lines=True, dtype=False) if body else pd.DataFrame()
    return list(df.columns), [[plain(v) for v in row] for row in df.itertuples(index=False, name=None)]


def read_polars(fmt: str, body: bytes, texts: list[str]):
    if fmt == "csv":
        df = pl.read_csv(io.BytesIO(body), schema_overrides={c: pl.String for c in texts})
    elif fmt == "parquet":
        df = pl.read_parquet(io.BytesIO(body))
    elif fmt == "arrow":
        df = pl.read_ipc_stream(io.BytesIO(body))
    else:
        df = pl.read_ndjson(io.BytesIO(body)) if body else pl.DataFrame()
    return list(df.columns), [[plain(v) for v in row] for row in df.rows()]


def read_duckdb(fmt: str, body: bytes, texts: list[str], work: Path):
    con = duckdb.connect()
    try:
        if fmt == "arrow":
            reader = pa.ipc.open_stream(body)  # DuckDB scans the Arrow stream as it is read
            rel = con.from_arrow(reader)
        else:
            path = work / f"answer.{fmt}"
            path.write_bytes(body)
            if fmt == "csv":
                types = ", ".join(f"'{c}': 'VARCHAR'" for c in texts)
                options = f", types = {{{types}}}" if texts else ""
                rel = con.sql(f"SELECT * FROM read_csv('{path}', header = true{options})")
            elif fmt == "parquet":
                rel = con.sql(f"SELECT * FROM read_parquet('{path}')")
            else:
                if not body:
                    return [], []
                rel = con.sql(f"SELECT * FROM read_json('{path}', format = 'newline_delimited')")
        return list(rel.columns), [[plain(v) for v in row] for row in rel.fetchall()]
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------
# Comparison


def same(expected, got) -> bool:
    if expected is None or got is None:
        return expected is None and got is None
    if isinstance(expected, bool) or isinstance(got, bool):
        return bool(expected) == bool(got) and isinstance(got, bool) == isinstance(expected, bool)
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(float(expected), float(got), rel_tol=1e-12, abs_tol=1e-12)
    return str(expected) == str(got)


def compare(label: str, items: list[dict], columns: list[str], rows: list[list], expected_columns: list[str] | None = None):
    expected_columns = expected_columns or (list(items[0].keys()) if items else None)
    if expected_columns is not None and items and columns != expected_columns:
        raise Mismatch(f"{label}: columns {columns} != {expected_columns}")
    if len(rows) != len(items):
        raise Mismatch(f"{label}: {len(rows)} rows, the JSON answer has {len(items)} items")
    for i, (item, row) in enumerate(zip(items, rows)):
        for c, got in zip(columns, row):
            if not same(item.get(c), got):
                raise Mismatch(f"{label}: row {i} column {c}: {got!r} != JSON {item.get(c)!r}")


def check_answer(svc: Service, work: Path, path: str, items: list[dict], fmt: str, via_accept: bool) -> int:
    sep = "&" if "?" in path else "?"
    url, headers = (path, {"Accept": FORMATS[fmt]}) if via_accept else (f"{path}{sep}format={fmt}", {})
    status, h, body = svc.get(url, headers)
    label = f"GET {url}" + (f" (Accept: {FORMATS[fmt]})" if via_accept else "")
    if status != 200:
        raise Mismatch(f"{label}: status {status}: {body[:300]!r}")
    if h.get("content-type", "").split(";")[0] != FORMATS[fmt]:
        raise Mismatch(f"{label}: Content-Type {h.get('content-type')}")
    texts = text_columns(items, list(items[0].keys()) if items else [])
    checked = 0
    for name, read in (("pandas", read_pandas), ("polars", read_polars), ("duckdb", None)):
        columns, rows = read_duckdb(fmt, body, texts, work) if read is None else read(fmt, body, texts)
        compare(f"{label} read with {name}", items, columns, rows)
        checked += 1
    return checked


def all_pages(svc: Service, path: str) -> list[dict]:
    items, page = [], 1
    sep = "&" if "?" in path else "?"
    while True:
        data = svc.json(f"{path}{sep}page={page}&page_size=100")["data"]
        items += data["data"]["items"]
        if page >= data["meta"]["pagination"]["total_pages"]:
            return items
        page += 1


def check_export(svc: Service, work: Path, query: str) -> int:
    sep = "?" if query else ""
    listing = all_pages(svc, f"/catalog/vehicles{sep}{query}")
    efficiency = {i["vehicleId"]: i for i in all_pages(svc, f"/insights/efficiency{sep}{query}")}
    scores = {i["vehicleId"]: i for i in all_pages(svc, f"/insights/eco-scores{sep}{query}")}
    expected = []
    for v in listing:
        row = dict(v)
        e, s = efficiency.get(v["id"]), scores.get(v["id"])
        row["eficiencia_media_referencia"] = e["eficienciaMediaReferencia"] if e else None
        if e:
            row["consumo_referencia"] = e["consumoReferencia"]
            row["autonomia_km"] = e["autonomiaKm"]
        row["eco_score"] = s["ecoScore"] if s else None
        row["eco_faixa"] = s["faixa"] if s else None
        expected.append(row)
    # The other input columns and the cost, from the per-vehicle summary of the first vehicles.
    for row in expected[:25]:
        summary = svc.json(f"/vehicles/{row['id']}/summary")["data"]["data"]["summary"]
        for part in summary.values():
            for k, v in part.items():
                if k in EXPORT_COLUMNS:
                    row[k] = v
    total = None
    checked = 0
    for fmt in ["csv", "parquet", "arrow", "ndjson", None]:
        url = f"/catalog/export{sep}{query}" + (f"{'&' if query else '?'}format={fmt}" if fmt else "")
        status, h, body = svc.get(url)
        fmt = fmt or "csv"
        if status != 200:
            raise Mismatch(f"GET {url}: status {status}: {body[:300]!r}")
        if h.get("content-type", "").split(";")[0] != FORMATS[fmt]:
            raise Mismatch(f"GET {url}: Content-Type {h.get('content-type')}")
        disposition = h.get("content-disposition", "")
        version = h.get("x-dataset-version", "?")
        if f'filename="eco-insights-{version}.' not in disposition or not disposition.startswith("attachment"):
            raise Mismatch(f"GET {url}: Content-Disposition {disposition!r}")
        total = int(h.get("x-total-count", "-1"))
        if total != len(listing):
            raise Mismatch(f"GET {url}: X-Total-Count {total}, the catalog lists {len(listing)}")
        texts = [c for c in EXPORT_COLUMNS if c in ("id", "eco_faixa") or any(isinstance(r.get(c), str) for r in expected)]
        for name, read in (("pandas", read_pandas), ("polars", read_polars), ("duckdb", None)):
            columns, rows = read_duckdb(fmt, body, texts, work) if read is None else read(fmt, body, texts)
            # JSON objects name their members, so an NDJSON reader may order the columns its own
            # way (Polars infers the schema of a long file in no particular order).
            order_free = fmt == "ndjson"
            if rows and (sorted(columns) != sorted(EXPORT_COLUMNS) if order_free else columns != EXPORT_COLUMNS):
                raise Mismatch(f"GET {url} read with {name}: columns {columns}")
            if len(rows) != len(expected):
                raise Mismatch(f"GET {url} read with {name}: {len(rows)} rows, expected {len(expected)}")
            for i, (exp, row) in enumerate(zip(expected, rows)):
                got = dict(zip(columns, row))
                for c, v in exp.items():
                    if not same(v, got.get(c)):
                        raise Mismatch(f"GET {url} read with {name}: row {i} column {c}: {got.get(c)!r} != {v!r}")
            checked += 1
    return checked


# ---------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(ROOT / "target/release/eco-insights"))
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="eco-formats-") as tmp:
        work = Path(tmp)
        svc = Service(args.binary, work, args.rows, args.seed)
        failures, checked = [], 0
        try:
            first = svc.json("/catalog/vehicles?page_size=1")["data"]["data"]["items"][0]["id"]
            paths = [
                "/catalog/vehicles?page=2&page_size=50",
                "/catalog/vehicles?combustivel=eletrico&page_size=100",
                "/catalog/vehicles?page=999",
                "/rankings/custom?metric=consumo&top=40",
                "/rankings/custom?marca=fiat&metric=autonomia&order=asc&top=100",
                "/insights/efficiency?page=3&page_size=100",
                "/insights/eco-scores?categoria=suv&page_size=100",
                "/aggregations/by-brand",
                f"/vehicles/{first}/compare-similar?top=20",
            ]
            for path in paths:
                items = svc.json(path)["data"]["data"]["items"]
                for fmt in FORMATS:
                    for via_accept in (False, True):
                        try:
                            checked += check_answer(svc, work, path, items, fmt, via_accept)
                        except Mismatch as e:
                            failures.append(str(e))
                        except Exception as e:  # a reader that cannot read the answer is a failure too
                            failures.append(f"{path} as {fmt}: {type(e).__name__}: {e}")
            for query in ["", "marca=fiat"]:
                try:
                    checked += check_export(svc, work, query)
                except Mismatch as e:
                    failures.append(str(e))
                except Exception as e:
                    failures.append(f"export {query!r}: {type(e).__name__}: {e}")
        except Mismatch as e:
            failures.append(str(e))
        finally:
            svc.stop()
        for f in failures:
            print(f"formats: MISMATCH {f}", file=sys.stderr)
        print(f"formats: {checked} read-backs (pandas {pd.__version__}, polars {pl.__version__}, "
              f"duckdb {duckdb.__version__}) in {time.time() - started:.1f} s")
        print(f"{checked} passed, {len(failures)} failed")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
