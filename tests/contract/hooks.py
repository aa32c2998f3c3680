"""Schemathesis hooks of `make contract`.

OpenAPI cannot express rules that tie two query parameters together. The common filters have
two, stated in each parameter's description and in the document's methodology (API-CONTRACT §3):

* `ano` cannot be combined with `ano_min` or `ano_max` (it already means ano_min = ano_max = ano);
* `ano_min` must not be greater than `ano_max`.

The service answers 400 VALIDATION_ERROR when they are broken, which is right. Only the
*positive* cases are adjusted here, so that "schema-valid data is accepted" keeps testing
everything else; negative cases are sent as generated.
"""

from __future__ import annotations

import schemathesis

YEARS = ("ano", "ano_min", "ano_max")


def _year(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


@schemathesis.hook
def before_call(ctx, case, kwargs):
    meta = case.meta
    query = case.query
    if meta is None or not meta.generation.mode.is_positive or not isinstance(query, dict):
        return
    if not any(name in query for name in YEARS):
        return
    fixed = dict(query)
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
