"""Schemathesis hooks of `make contract`.

OpenAPI cannot express rules that tie two query parameters together. The common filters have
two, stated in each parameter's description and in the document's methodology (API-CONTRACT §3):

* `ano` cannot be combined with `ano_min` or `ano_max` (it already means ano_min = ano_max = ano);
* `ano_min` must not be greater than `ano_max`; likewise each range filter's `<stem>_min` and
  `<stem>_max` (eco_score, consumo, co2, autonomia, eficiencia, autonomia_eletrica, custo);
* `sort` and `fields` name each field once (their pattern lists the fields, not the repetition);
* `/sql` takes a statement, and "valid SQL over these tables" is no JSON Schema: positive cases
  send a valid query (negative ones, and the generated text in them, must be refused with 400);
* `cursor` only has meaning as the `next_cursor` of an earlier answer: a generated one is a
  tampered one (400, which the negative cases check), so positive cases go without it.

The service answers 400 VALIDATION_ERROR when they are broken, which is right. Only the
*positive* cases are adjusted here, so that "schema-valid data is accepted" keeps testing
everything else; negative cases are sent as generated.
"""

from __future__ import annotations

import schemathesis

YEARS = ("ano", "ano_min", "ano_max")
VALID_SQL = "SELECT marca, COUNT(*) AS n FROM catalog GROUP BY marca ORDER BY n DESC"
RANGES = ("eco_score", "consumo", "co2", "autonomia", "eficiencia", "autonomia_eletrica", "custo")


def _number(value: object) -> float | None:
    try:
        return float(str(value))
    except ValueError:
        return None


def _once(value: object) -> str:
    """A comma list with each field (sign aside) kept once, first occurrence first."""
    seen, kept = set(), []
    for name in str(value).split(","):
        bare = name.lstrip("-")
        if bare not in seen:
            seen.add(bare)
            kept.append(name)
    return ",".join(kept)


def _year(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


@schemathesis.hook
def before_call(ctx, case, kwargs):
    meta = case.meta
    query = case.query
    if meta is None or not meta.generation.mode.is_positive:
        return
    if case.path == "/sql":
        if isinstance(case.body, dict) and "sql" in case.body:
            case.body = {**case.body, "sql": VALID_SQL}
        if isinstance(query, dict) and "sql" in query:
            case.query = {**query, "sql": VALID_SQL}
        return
    if not isinstance(query, dict):
        return
    fixed = dict(query)
    fixed.pop("cursor", None)
    for name in ("sort", "fields"):
        if name in fixed:
            fixed[name] = _once(fixed[name])
    for stem in RANGES:
        lo, hi = _number(fixed.get(f"{stem}_min")), _number(fixed.get(f"{stem}_max"))
        if lo is not None and hi is not None and lo > hi:
            fixed[f"{stem}_min"], fixed[f"{stem}_max"] = fixed[f"{stem}_max"], fixed[f"{stem}_min"]
    ano = _year(fixed.get("ano")) if "ano" in fixed else None
    if ano is not None and ("ano_min" in fixed or "ano_max" in fixed):
        # Keep either the exact year or the range, deterministically, so both shapes get tested.
        if ano % 2 == 0:
            fixed.pop("ano")
        else:
            fixed.pop("ano_min", None)
            fixed.pop("ano_max", None)
    lo, hi = _year(fixed.get("ano_min")), _year(fixed.get("ano_max"))
    if lo is not None and hi is not None and lo > hi:
        fixed["ano_min"], fixed["ano_max"] = fixed["ano_max"], fixed["ano_min"]
    if fixed != query:
        case.query = fixed
