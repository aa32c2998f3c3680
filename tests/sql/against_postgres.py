#!/usr/bin/env python3
"""`make sql-test`: analysts' SQL answered by the service (`POST /sql`) and by a real PostgreSQL
server on the same export, compared column by column and row by row.

The contract (API-CONTRACT §7, "SQL dialect") says a query is answered as PostgreSQL answers it
on the same data, or refused with a 400 that names what is unsupported, never a different
answer. PostgreSQL is the oracle here: Debian's server, started by the test in a temporary
folder (pgserver.py), with the export loaded as `catalog` (`id`, the input columns of
API-CONTRACT §1 and `combustivel_fold`) and the views `vw_metrics` and `vw_eco_score` written in
PostgreSQL from the contract's formulas (§2), independently of the service's `queries/`.

Every query of CORPUS runs on both sides. Compared: the output column names in order (PostgreSQL
names unaliased columns `count`, `avg`, `?column?`...), each column's type family (integer,
float, string, boolean, date, datetime), the row count and every value: text, integers and
booleans exactly, other numbers within a relative tolerance (1e-9 unless the query says
otherwise; numeric is compared as a float), dates and timestamps as ISO values. A query's rows
come in its total ORDER BY, or are compared as sorted multisets when it is marked `unordered`.
An entry marked `known` is a documented difference: there the service may refuse it with a 400
(or answer it alike), but a different answer still fails.

    tests/sql/against_postgres.py --binary target/release/eco-insights [--rows N] [--only NAME] [--keep]
    tests/sql/against_postgres.py --pg-only [--data FILE | --binary BIN]

`--pg-only` checks the corpus itself, no service: every query runs on PostgreSQL, and each
ordered one gives the same rows on the catalog loaded in reverse order (its ORDER BY is total).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
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
import unicodedata
import urllib.error
import urllib.request
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
from psycopg import sql

from pgserver import PgServer, load_table

ROOT = Path(__file__).resolve().parents[2]
KEY, SECRET = "sql-check", "sql-check-secret"
SUMMARY = ROOT / "target" / "sql-test" / "summary.md"

# Default relative tolerance on numbers that are not integers on both sides, and the absolute
# one under it for values near zero (float noise of a different summation order).
REL_TOL = 1e-9
ABS_TOL = 1e-9
# PostgreSQL's numeric values (exact, at least sixteen significant digits) against the service's
# doubles: full precision, a few units in the last place of a double.
NUMERIC_TOL = 1e-15

# The service's `catalog` as a PostgreSQL table: `id`, the input columns of API-CONTRACT §1 in the
# service's canonical order (whatever the export's order), and `combustivel_fold`.
CATALOG = {
    "id": "text", "marca": "text", "modelo": "text", "versao": "text", "ano": "integer", "categoria": "text",
    "motor": "text", "tipo_propulsao": "text", "combustivel_tipo": "text", "transmissao_tipo": "text",
    "transmissao_marchas": "integer", "ar_condicionado": "boolean", "direcao_assistida_tipo": "text",
    **{name: "double precision" for name in (
        "eficiencia_cidade_km_l", "eficiencia_estrada_km_l", "eficiencia_cidade_etanol_km_l",
        "eficiencia_estrada_etanol_km_l", "consumo_energetico_mj_km", "co2_fossil_g_km", "nmhc_g_km", "co_g_km",
        "nox_g_km", "nmog_nox_g_km", "autonomia_eletrica_km", "tanque_l")},
    "classificacao_pbe_categoria": "text", "classificacao_pbe_geral": "text", "combustivel_fold": "text",
}

# The views of API-CONTRACT §2 in PostgreSQL, from the formulas (default costs: 12,000 km/year,
# gasolina 6.20, etanol 4.10, diesel 6.00, GNV 4.80, eletricidade 0.85 per kWh). Published values
# are rounded half to even on the decimal value; indices are published unrounded. Materialized:
# computed once, as the service computes its views once per dataset.
VIEWS = """
-- Half to even, decided on the decimal value: first to 6 more decimals (a float a hair off a
-- tie, 39.349999999, is the tie 39.35 it stands for), then a tie goes to the even digit.
CREATE FUNCTION round_half_even(x double precision, places integer) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT ((CASE WHEN frac > 0.5 OR (frac = 0.5 AND mod(whole, 2) <> 0) THEN whole + 1 ELSE whole END)
            / 10::numeric ^ places)::double precision
    FROM (SELECT floor(s) AS whole, s - floor(s) AS frac
          FROM (SELECT round(x::numeric, places + 6) * 10::numeric ^ places AS s) scaled) parts
$$;

-- clamp(null) is null (STRICT): a missing index stays out of the score.
CREATE FUNCTION clamp(x double precision, lo double precision, hi double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT least(greatest(x, lo), hi) $$;

CREATE MATERIALIZED VIEW vw_metrics AS
SELECT c.*,
       round_half_even(r.efic, 2) AS eficiencia_media_referencia,
       round_half_even(c.consumo_energetico_mj_km, 2) AS consumo_referencia,
       round_half_even(c.co2_fossil_g_km, 2) AS co2_referencia_g_km,
       round_half_even(CASE WHEN c.combustivel_fold = 'eletrico' THEN c.autonomia_eletrica_km
                            ELSE c.tanque_l * r.efic + coalesce(c.autonomia_eletrica_km, 0) END, 2) AS autonomia_km,
       round_half_even(CASE c.combustivel_fold
           WHEN 'eletrico' THEN 12000 * c.consumo_energetico_mj_km / 3.6 * 0.85
           WHEN 'flex' THEN CASE WHEN r.efic IS NOT NULL AND r.efic_etanol IS NOT NULL
                                 THEN least(12000 / nullif(r.efic, 0) * 6.20,
                                            12000 / nullif(r.efic_etanol, 0) * 4.10) END
           WHEN 'gasolina' THEN 12000 / nullif(r.efic, 0) * 6.20
           WHEN 'etanol' THEN 12000 / nullif(r.efic, 0) * 4.10
           WHEN 'diesel' THEN 12000 / nullif(r.efic, 0) * 6.00
           WHEN 'gnv' THEN 12000 / nullif(r.efic, 0) * 4.80
       END, 2) AS custo_anual_estimado
FROM catalog c
CROSS JOIN LATERAL (
    -- means of the non-null of city and highway (null when both are)
    SELECT (SELECT avg(v) FROM (VALUES (c.eficiencia_cidade_km_l), (c.eficiencia_estrada_km_l)) t(v)) AS efic,
           (SELECT avg(v) FROM (VALUES (c.eficiencia_cidade_etanol_km_l), (c.eficiencia_estrada_etanol_km_l)) t(v))
               AS efic_etanol
) r;

CREATE MATERIALIZED VIEW vw_eco_score AS
SELECT s.*,
       CASE WHEN s.eco_score IS NULL THEN NULL
            WHEN s.eco_score <= 40 THEN 'Baixo'
            WHEN s.eco_score <= 60 THEN 'Regular'
            WHEN s.eco_score <= 80 THEN 'Bom'
            ELSE 'Excelente' END AS eco_faixa
FROM (
    SELECT i.*,
           round_half_even(CASE WHEN i.indice_energia IS NULL AND i.indice_co2 IS NULL THEN NULL ELSE
               -- weighted mean over the indices present (weights renormalised)
               (SELECT sum(w * v) / sum(w)
                FROM (VALUES (0.45, i.indice_energia), (0.35, i.indice_co2), (0.20, i.indice_poluentes)) t(w, v)
                WHERE v IS NOT NULL) END, 1) AS eco_score
    FROM (
        SELECT m.*,
               clamp(100 * (3.0 - m.consumo_energetico_mj_km) / 2.7, 0, 100) AS indice_energia,
               clamp(100 * (250 - m.co2_fossil_g_km) / 250, 0, 100) AS indice_co2,
               -- NMHC, CO and NOx when the three are present; else NMOG+NOx and CO (PROCONVE L7)
               coalesce(clamp(100 * (1 - (m.nmhc_g_km / 0.05 + m.co_g_km / 1.3 + m.nox_g_km / 0.08) / 3), 0, 100),
                        clamp(100 * (1 - (m.nmog_nox_g_km / 0.08 + m.co_g_km / 1.0) / 2), 0, 100))
                   AS indice_poluentes
        FROM vw_metrics m
    ) i
) s;
"""


@dataclass(frozen=True)
class Query:
    name: str
    sql: str
    # Rows compared as sorted multisets (the query has no total ORDER BY).
    unordered: bool = False
    # Relative tolerance on non-integer numbers.
    tol: float = REL_TOL
    # A documented difference from PostgreSQL, one line: what differs and what PostgreSQL does.
    # The service may then refuse the query with a 400; a different answer still fails.
    known: str | None = None


CORPUS = [
    # --- output names, unaliased columns and basic filters -------------------------------------
    Query("star_first_rows", "SELECT * FROM catalog ORDER BY id LIMIT 25"),
    Query("count_star", "SELECT count(*) FROM catalog"),
    Query("unaliased_aggregates",
          "SELECT combustivel_tipo, count(*), avg(co2_fossil_g_km), max(ano), min(tanque_l), "
          "sum(transmissao_marchas) FROM catalog GROUP BY combustivel_tipo ORDER BY combustivel_tipo"),
    Query("same_name_twice", "SELECT count(*), count(DISTINCT marca), count(motor) FROM catalog",
          known="two unaliased columns of one name are refused (answers are keyed by column name); PostgreSQL answers both as `count`"),
    Query("unnamed_expressions",
          "SELECT id, ano - 2000, tanque_l * 2, marca || '/' || modelo FROM catalog ORDER BY id LIMIT 15",
          known="two unaliased columns named `?column?` are refused; PostgreSQL answers them under one name"),
    Query("case_unaliased",
          "SELECT CASE WHEN ano < 2018 THEN 'antigo' ELSE 'novo' END, count(*) FROM catalog GROUP BY 1 ORDER BY 1"),
    Query("coalesce_unaliased",
          "SELECT coalesce(motor, '(sem motor)'), count(*) FROM catalog GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 12"),
    Query("cast_names",
          "SELECT ano::text, count(*)::int, avg(tanque_l)::int, 1::int, 'x'::text, CAST(NULL AS integer) AS vazio "
          "FROM catalog GROUP BY ano ORDER BY 1"),
    # Two aggregates of one column apart from a cast: DataFusion names both after the column alone.
    Query("casts_told_apart",
          "SELECT avg(ano::numeric) AS a, avg(ano) AS b, sum(ano::float8) AS c, sum(ano) AS d, "
          "count(ano::text) AS e, count(ano) AS f, max(tanque_l::int) AS g, max(tanque_l) AS h, "
          "avg(co2_fossil_g_km::numeric * 2) AS i, avg(co2_fossil_g_km * 2) AS j FROM catalog"),
    Query("casts_told_apart_grouped",
          "SELECT combustivel_tipo, min(ano::text) AS a, min(ano) AS b, sum(tanque_l::int) AS c, sum(tanque_l) AS d "
          "FROM catalog GROUP BY combustivel_tipo HAVING sum(tanque_l::int) > 0 "
          "ORDER BY sum(tanque_l::int) DESC, combustivel_tipo"),
    Query("constant_arithmetic",
          "SELECT 7 / 2 AS a, -7 / 2 AS b, 7 % 3 AS c, -7 % 3 AS d, 7.0 / 2 AS e, 2 ^ 10 AS f, 1 / 3.0 AS g, "
          "0.1 + 0.2 = 0.3 AS h, 10 / 4 * 4 AS i"),
    Query("number_functions",
          "SELECT abs(-3) AS a, abs(-2.5) AS b, ceil(2.1) AS c, floor(-2.1) AS d, round(2.5) AS e, round(-2.5) AS f, "
          "round(2.5::float8) AS g, round(3.5::float8) AS h, round(2.345, 2) AS i, trunc(2.789, 1) AS j, "
          "sqrt(16) AS k, power(2, 10) AS l, greatest(1, 5, 3) AS n, least(2.5, 1.5) AS o, 17 / 5 * 5 + 17 % 5 AS p"),
    Query("sign_and_mod",
          "SELECT sign(-2.5) AS negativo, sign(0) AS zero, sign(-1.5::float8) AS duplo, mod(17, 5) AS resto, "
          "mod(-17, 5) AS resto_negativo, mod(7.5, 2) AS resto_decimal"),
    Query("order_desc_nulls_first",
          "SELECT id, modelo, eficiencia_cidade_km_l FROM catalog WHERE marca = 'Fiat' AND ano >= 2024 "
          "ORDER BY eficiencia_cidade_km_l DESC, id"),
    Query("order_asc_nulls_last",
          "SELECT id, tanque_l FROM catalog WHERE marca = 'Renault' AND ano >= 2023 ORDER BY tanque_l, id"),
    Query("explicit_nulls_first_last",
          "SELECT id, transmissao_marchas, co2_fossil_g_km FROM catalog WHERE marca = 'Peugeot' AND ano >= 2022 "
          "ORDER BY transmissao_marchas NULLS FIRST, co2_fossil_g_km DESC NULLS LAST, id"),
    Query("distinct_pairs_unordered", "SELECT DISTINCT marca, categoria FROM catalog WHERE ano = 2026", unordered=True),
    Query("limit_offset", "SELECT id, marca, modelo FROM catalog ORDER BY marca, modelo, id LIMIT 10 OFFSET 250"),
    Query("order_by_position_and_expression",
          "SELECT marca, count(*) AS n FROM catalog GROUP BY marca ORDER BY 2 DESC, lower(marca) LIMIT 8 OFFSET 2"),
    Query("between_and_in_list",
          "SELECT marca, ano, count(*) AS n FROM catalog WHERE ano BETWEEN 2018 AND 2020 "
          "AND marca IN ('Fiat', 'Toyota', 'BYD') GROUP BY marca, ano ORDER BY marca, ano"),
    Query("is_distinct_from",
          "SELECT count(*) FILTER (WHERE transmissao_tipo IS DISTINCT FROM 'Manual') AS distinto, "
          "count(*) FILTER (WHERE transmissao_tipo <> 'Manual') AS diferente, "
          "count(*) FILTER (WHERE transmissao_tipo IS NOT DISTINCT FROM NULL) AS nulos FROM catalog"),
    Query("nullif_empty_text",
          "SELECT nullif(transmissao_tipo, '') AS transmissao, count(*) AS n FROM catalog GROUP BY 1 ORDER BY 1"),
    Query("boolean_group_desc",
          "SELECT ar_condicionado, count(*) AS n, avg(co2_fossil_g_km) AS co2 FROM catalog GROUP BY ar_condicionado "
          "ORDER BY ar_condicionado DESC"),
    Query("boolean_where",
          "SELECT marca, count(*) AS n FROM catalog WHERE NOT ar_condicionado GROUP BY marca ORDER BY n DESC, marca "
          "LIMIT 10"),
    Query("boolean_where_is_not_true",
          "SELECT count(*) FILTER (WHERE ar_condicionado) AS com, count(*) "
          "FILTER (WHERE ar_condicionado IS NOT TRUE) AS sem_ou_nulo, count(*) "
          "FILTER (WHERE ar_condicionado IS UNKNOWN) AS nulo FROM catalog"),
    Query("greatest_least_skip_nulls",
          "SELECT id, greatest(eficiencia_cidade_km_l, eficiencia_estrada_km_l) AS melhor, "
          "least(eficiencia_cidade_km_l, eficiencia_estrada_km_l) AS pior FROM catalog "
          "WHERE eficiencia_cidade_km_l IS NULL OR eficiencia_estrada_km_l IS NULL ORDER BY id LIMIT 40"),
    Query("case_searched",
          "SELECT CASE WHEN co2_fossil_g_km IS NULL THEN 'sem dado' WHEN co2_fossil_g_km = 0 THEN 'zero' "
          "WHEN co2_fossil_g_km < 100 THEN 'baixo' WHEN co2_fossil_g_km < 150 THEN 'medio' "
          "ELSE 'alto' END AS classe, count(*) AS n FROM catalog GROUP BY 1 ORDER BY 1"),
    Query("case_simple",
          "SELECT CASE combustivel_fold WHEN 'flex' THEN 1 WHEN 'eletrico' THEN 2 "
          "ELSE 0 END AS codigo, count(*) AS n FROM catalog GROUP BY 1 ORDER BY 1"),

    # --- integer and cast semantics -------------------------------------------------------------
    Query("integer_division_and_modulo",
          "SELECT ano / 5 AS lustro, ano % 4 AS resto, count(*) AS n FROM catalog GROUP BY 1, 2 ORDER BY 1, 2"),
    Query("integer_division_of_aggregates",
          "SELECT marca, sum(transmissao_marchas) / count(transmissao_marchas) AS media_inteira, "
          "avg(transmissao_marchas) AS media FROM catalog GROUP BY marca ORDER BY marca"),
    Query("cast_avg_to_integer_rounds",
          "SELECT marca, CAST(avg(ano) AS INTEGER) AS ano_medio, avg(transmissao_marchas)::int AS marchas "
          "FROM catalog GROUP BY marca ORDER BY marca"),
    Query("float_to_int_rounds",
          "SELECT id, eficiencia_cidade_km_l, eficiencia_cidade_km_l::int AS inteiro, (tanque_l / 4)::int AS quarto, "
          "round(eficiencia_cidade_km_l) AS arredondado FROM catalog WHERE eficiencia_cidade_km_l "
          "- floor(eficiencia_cidade_km_l) = 0.5 ORDER BY id LIMIT 40"),
    Query("round_avg_numeric",
          "SELECT combustivel_tipo, round(avg(co2_fossil_g_km)::numeric, 2) AS co2, round(avg(tanque_l)::numeric, 1) "
          "FROM catalog GROUP BY 1 ORDER BY 1"),
    Query("text_casts",
          "SELECT id, ano::text || '-' || coalesce(transmissao_marchas::text, '?') AS chave, "
          "ar_condicionado::text AS ar, co2_fossil_g_km::text AS co2, eficiencia_cidade_km_l::text AS cidade "
          "FROM catalog ORDER BY id LIMIT 30"),
    Query("casts_from_text",
          "SELECT '42'::int + 1 AS a, CAST('2.5' AS double precision) * 2 AS b, '2024-02-29'::date AS c, "
          "CAST('17' AS numeric) / 4 AS d, 'true'::boolean AS e, '  7 '::int AS f"),

    # --- text -----------------------------------------------------------------------------------
    Query("text_byte_order", "SELECT DISTINCT categoria FROM catalog ORDER BY categoria"),
    Query("text_order_case_and_accents",
          "SELECT DISTINCT modelo FROM catalog WHERE marca IN ('Fiat', 'Citroën', 'BMW', 'Peugeot') "
          "ORDER BY modelo DESC"),
    Query("text_compare_greater",
          "SELECT marca, min(modelo) AS primeiro, max(modelo) AS ultimo FROM catalog WHERE marca > 'G' "
          "GROUP BY marca ORDER BY marca DESC"),
    Query("accented_text_compare",
          "SELECT DISTINCT tipo_propulsao, categoria FROM catalog WHERE tipo_propulsao > 'Elz' AND categoria < 'Mz' "
          "ORDER BY 1, 2"),
    Query("min_max_text",
          "SELECT tipo_propulsao, min(categoria) AS menor, max(categoria) AS maior, "
          "max(marca || ' ' || modelo) AS ultimo FROM catalog GROUP BY tipo_propulsao ORDER BY tipo_propulsao"),
    Query("length_in_characters",
          "SELECT DISTINCT categoria, length(categoria) AS letras, octet_length(categoria) AS bytes, "
          "char_length(categoria) FROM catalog ORDER BY 1"),
    Query("upper_lower_accents",
          "SELECT DISTINCT combustivel_tipo, upper(combustivel_tipo) AS u, lower(combustivel_tipo) AS l, "
          "initcap(lower(tipo_propulsao)) AS i FROM catalog ORDER BY 1, 2, 3, 4"),
    Query("initcap_versions",
          "SELECT DISTINCT initcap(versao) FROM catalog WHERE marca IN ('Honda', 'Citroën') ORDER BY 1"),
    Query("like_ilike",
          "SELECT count(*) FILTER (WHERE modelo LIKE '%-%') AS hifen, count(*) FILTER (WHERE versao ILIKE '%turbo%') "
          "AS turbo, count(*) FILTER (WHERE categoria LIKE 'Utilit_rio%') AS utilitario, "
          "count(*) FILTER (WHERE categoria NOT LIKE '%o') AS nao_termina_o, "
          "count(*) FILTER (WHERE categoria ILIKE 'MÉDIO') AS medio, count(*) FILTER (WHERE marca LIKE 'C_tro_n') "
          "AS citroen FROM catalog"),
    Query("substring_and_position",
          "SELECT DISTINCT categoria, substring(categoria from 2 for 3) AS meio, "
          "substring(categoria, 1, 4) AS inicio, position('o' in categoria) AS pos_o, "
          "strpos(categoria, 'é') AS pos_e, left(categoria, 2) AS l2, right(categoria, 3) AS r3 FROM catalog "
          "ORDER BY 1"),
    Query("split_part",
          "SELECT split_part(versao, ' ', 1) AS acabamento, split_part(categoria, ' ', 2) AS segunda, count(*) AS n "
          "FROM catalog GROUP BY 1, 2 ORDER BY n DESC, 1, 2 LIMIT 20"),
    Query("regexp_replace",
          "SELECT DISTINCT versao, regexp_replace(versao, '[0-9.]+', '#') AS primeiro, "
          "regexp_replace(versao, '[0-9.]+', '#', 'g') AS todos, regexp_replace(lower(versao), '\\s+', '_', 'g') "
          "FROM catalog WHERE marca = 'Honda' ORDER BY 1"),
    Query("regexp_match",
          "SELECT DISTINCT versao, (regexp_match(versao, '([0-9])\\.([0-9])'))[1] AS litros, versao ~ 'CVT$' AS cvt, "
          "versao ~* 'turbo' AS turbo, regexp_count(versao, '[A-Z]') AS maiusculas FROM catalog "
          "WHERE marca = 'Toyota' ORDER BY 1"),
    Query("substring_regex",
          "SELECT DISTINCT versao, substring(versao from '[0-9]\\.[0-9]') AS motor_txt, "
          "substring(versao from 'TURBO|HÍBRIDO') AS tipo FROM catalog WHERE marca = 'Kia' ORDER BY 1",
          known="`substring(text FROM pattern)` with a regular expression is refused; PostgreSQL matches the pattern"),
    Query("concat_with_nulls",
          "SELECT id, marca || ' ' || modelo AS nome, 'Motor ' || motor AS m, concat(marca, ' ', motor) AS c, "
          "concat_ws('/', marca, motor, transmissao_tipo) AS cw FROM catalog WHERE motor IS NULL "
          "OR transmissao_tipo IS NULL ORDER BY id LIMIT 30"),
    Query("text_functions",
          "SELECT DISTINCT modelo, replace(modelo, '-', ' ') AS r, lpad(length(modelo)::text, 4, '*') AS p, "
          "reverse(modelo) AS v, repeat(left(modelo, 1), 3) AS t, btrim('  ' || modelo || '  ') AS b, "
          "upper(modelo) = modelo AS caixa_alta FROM catalog WHERE marca IN ('Volkswagen', 'Fiat') ORDER BY 1"),
    Query("md5", "SELECT DISTINCT modelo, md5(modelo) FROM catalog WHERE marca IN ('Fiat', 'Citroën') ORDER BY 1",
          known="`md5` is not offered; PostgreSQL answers the text's MD5 in hex"),
    Query("string_agg_ordered",
          "SELECT categoria, string_agg(DISTINCT marca, ', ' ORDER BY marca) AS marcas FROM catalog "
          "GROUP BY categoria ORDER BY categoria"),
    Query("string_agg_descending",
          "SELECT marca, string_agg(modelo || ' ' || ano, '; ' ORDER BY ano DESC, modelo, id) AS historico "
          "FROM catalog WHERE combustivel_tipo = 'GNV' GROUP BY marca ORDER BY marca"),

    # --- aggregates -----------------------------------------------------------------------------
    Query("having",
          "SELECT marca, count(*) AS n, avg(co2_fossil_g_km) AS co2 FROM catalog GROUP BY marca "
          "HAVING count(*) > 100 AND avg(co2_fossil_g_km) < 150 ORDER BY marca"),
    Query("count_distinct",
          "SELECT categoria, count(DISTINCT marca) AS marcas, count(DISTINCT modelo) AS modelos, "
          "count(DISTINCT transmissao_marchas) AS marchas FROM catalog GROUP BY categoria ORDER BY categoria"),
    Query("filter_clause",
          "SELECT ano, count(*) FILTER (WHERE combustivel_tipo = 'Elétrico') AS eletricos, "
          "avg(co2_fossil_g_km) FILTER (WHERE combustivel_tipo = 'Flex') AS co2_flex, "
          "max(tanque_l) FILTER (WHERE ar_condicionado) AS tanque FROM catalog GROUP BY ano ORDER BY ano"),
    Query("bool_and_or",
          "SELECT marca, bool_and(ar_condicionado) AS todos_com_ar, bool_or(combustivel_tipo = 'Elétrico') "
          "AS tem_eletrico, bool_and(ano >= 2015) AS desde_2015 FROM catalog GROUP BY marca ORDER BY marca"),
    Query("every",
          "SELECT categoria, every(ar_condicionado) AS todos_com_ar, every(ano >= 2013) FROM catalog "
          "GROUP BY categoria ORDER BY categoria"),
    Query("stddev_variance",
          "SELECT combustivel_tipo, stddev(co2_fossil_g_km), stddev_pop(co2_fossil_g_km) AS dp_pop, "
          "stddev_samp(tanque_l) AS dp_tanque, variance(consumo_energetico_mj_km), "
          "var_pop(consumo_energetico_mj_km) AS vp, var_samp(tanque_l) AS vs FROM catalog GROUP BY 1 ORDER BY 1",
          tol=1e-07),
    Query("correlation_regression",
          "SELECT combustivel_tipo, corr(consumo_energetico_mj_km, co2_fossil_g_km) AS r, "
          "regr_slope(co2_fossil_g_km, consumo_energetico_mj_km) AS inclinacao, "
          "regr_intercept(co2_fossil_g_km, consumo_energetico_mj_km) AS intercepto, "
          "covar_samp(consumo_energetico_mj_km, co2_fossil_g_km) AS cov, "
          "regr_count(co2_fossil_g_km, consumo_energetico_mj_km) AS pares FROM catalog GROUP BY 1 ORDER BY 1",
          tol=1e-07),
    Query("percentiles",
          "SELECT categoria, percentile_cont(0.5) WITHIN GROUP (ORDER BY co2_fossil_g_km) AS mediana, "
          "percentile_disc(0.9) WITHIN GROUP (ORDER BY co2_fossil_g_km) AS p90, "
          "percentile_cont(0.25) WITHIN GROUP (ORDER BY ano) AS q1_ano, "
          "percentile_disc(0.5) WITHIN GROUP (ORDER BY marca) AS marca_mediana FROM catalog GROUP BY categoria "
          "ORDER BY categoria"),
    Query("mode",
          "SELECT tipo_propulsao, mode() WITHIN GROUP (ORDER BY marca) AS marca_comum, "
          "mode() WITHIN GROUP (ORDER BY ano) AS ano_comum FROM catalog GROUP BY tipo_propulsao ORDER BY 1"),
    Query("avg_of_counts",
          "SELECT avg(n) AS media, max(n) AS maior, min(n) AS menor FROM (SELECT marca, count(*) AS n FROM catalog "
          "GROUP BY marca) t"),

    # --- subqueries -----------------------------------------------------------------------------
    Query("scalar_subquery_in_select",
          "SELECT marca, count(*) AS n, round(100.0 * count(*) / (SELECT count(*) FROM catalog), 2) AS pct "
          "FROM catalog GROUP BY marca ORDER BY n DESC, marca LIMIT 10"),
    Query("scalar_subquery_in_where",
          "SELECT id, marca, co2_fossil_g_km FROM catalog WHERE co2_fossil_g_km "
          "> (SELECT avg(co2_fossil_g_km) + 2 * stddev(co2_fossil_g_km) FROM catalog) "
          "ORDER BY co2_fossil_g_km DESC, id LIMIT 30"),
    Query("correlated_in_where",
          "SELECT categoria, count(*) AS abaixo_da_media FROM catalog c WHERE ano >= 2025 "
          "AND co2_fossil_g_km < (SELECT avg(c2.co2_fossil_g_km) FROM catalog c2 WHERE c2.categoria = c.categoria) "
          "GROUP BY categoria ORDER BY categoria"),
    Query("correlated_in_select",
          "SELECT m.marca, (SELECT max(c2.ano) FROM catalog c2 WHERE c2.marca = m.marca "
          "AND c2.combustivel_tipo = 'Elétrico') AS ultimo_eletrico FROM (SELECT DISTINCT marca "
          "FROM catalog) m ORDER BY marca"),
    Query("exists",
          "SELECT DISTINCT marca FROM catalog c WHERE EXISTS (SELECT 1 FROM catalog e WHERE e.marca = c.marca "
          "AND e.combustivel_tipo = 'Elétrico') ORDER BY marca"),
    Query("not_exists",
          "SELECT DISTINCT marca FROM catalog c WHERE NOT EXISTS (SELECT 1 FROM catalog d WHERE d.marca = c.marca "
          "AND d.combustivel_tipo = 'Diesel') ORDER BY marca"),
    Query("in_subquery",
          "SELECT marca, modelo, count(*) AS n FROM catalog WHERE modelo IN (SELECT modelo FROM catalog "
          "WHERE tipo_propulsao = 'Híbrido Plug-in') GROUP BY marca, modelo ORDER BY marca, modelo"),
    Query("not_in_subquery_with_nulls",
          "SELECT count(*) AS n FROM catalog WHERE transmissao_marchas NOT IN (SELECT transmissao_marchas "
          "FROM catalog WHERE transmissao_tipo = 'CVT')"),
    Query("not_in_subquery",
          "SELECT transmissao_marchas, count(*) AS n FROM catalog WHERE transmissao_marchas NOT IN "
          "(SELECT transmissao_marchas FROM catalog WHERE transmissao_tipo = 'Manual' "
          "AND transmissao_marchas IS NOT NULL) GROUP BY 1 ORDER BY 1"),
    Query("greater_than_all",
          "SELECT marca, count(*) AS n, min(co2_fossil_g_km) AS menor FROM catalog "
          "WHERE co2_fossil_g_km > ALL (SELECT co2_fossil_g_km FROM catalog WHERE combustivel_tipo = 'GNV' "
          "AND co2_fossil_g_km IS NOT NULL) GROUP BY marca ORDER BY marca"),
    Query("all_over_nulls_and_empty",
          "SELECT count(*) FILTER (WHERE tanque_l > ALL (SELECT v FROM (VALUES (40.0), (45.0)) t(v))) AS acima, "
          "count(*) FILTER (WHERE tanque_l > ALL (SELECT v FROM (VALUES (40.0), (NULL)) t(v))) AS com_nulo, "
          "count(*) FILTER (WHERE tanque_l > ALL (SELECT tanque_l FROM catalog WHERE marca = 'nenhuma')) AS vazio "
          "FROM catalog",
          known="`ANY`/`ALL` with a subquery is refused outside a WHERE condition (here in FILTER); PostgreSQL answers it"),
    Query("all_in_where_with_a_null",
          "SELECT count(*) AS n FROM catalog WHERE tanque_l > ALL (SELECT v FROM (VALUES (40.0), (NULL)) t(v))"),
    Query("all_in_where_over_nothing",
          "SELECT count(*) AS n FROM catalog WHERE tanque_l > ALL (SELECT tanque_l FROM catalog WHERE marca = 'nenhuma')"),
    Query("not_in_with_a_null",
          "SELECT count(*) AS n FROM catalog WHERE ano NOT IN (SELECT CASE WHEN ano = 2020 THEN NULL ELSE ano END "
          "FROM catalog WHERE combustivel_tipo = 'GNV')"),
    Query("equals_any",
          "SELECT marca, count(*) AS n FROM catalog WHERE ano = ANY (SELECT ano FROM catalog "
          "WHERE combustivel_tipo = 'GNV') AND marca = ANY (ARRAY['Fiat', 'Chevrolet', 'Volkswagen']) GROUP BY marca "
          "ORDER BY marca"),

    # --- set operations -------------------------------------------------------------------------
    Query("intersect",
          "SELECT modelo FROM catalog WHERE ano = 2015 INTERSECT SELECT modelo FROM catalog WHERE ano = 2025 "
          "ORDER BY modelo"),
    Query("except",
          "SELECT marca FROM catalog WHERE ano <= 2014 EXCEPT SELECT marca FROM catalog WHERE ano >= 2025 ORDER BY 1"),
    Query("union_all",
          "SELECT 'combustivel' AS dimensao, combustivel_tipo AS valor, count(*) AS n FROM catalog "
          "GROUP BY combustivel_tipo UNION ALL SELECT 'propulsao', tipo_propulsao, count(*) FROM catalog "
          "GROUP BY tipo_propulsao ORDER BY dimensao, valor"),
    Query("union_distinct",
          "SELECT tipo_propulsao AS v FROM catalog UNION SELECT combustivel_tipo FROM catalog ORDER BY v"),
    Query("intersect_all_unordered",
          "SELECT ano FROM catalog WHERE marca = 'BYD' INTERSECT ALL SELECT ano FROM catalog WHERE marca = 'Volvo'",
          unordered=True,
          known="`INTERSECT ALL` is refused; PostgreSQL keeps the duplicates common to both sides"),
    Query("except_all",
          "SELECT combustivel_tipo FROM catalog WHERE ano = 2026 EXCEPT ALL SELECT combustivel_tipo FROM catalog "
          "WHERE ano = 2025 ORDER BY 1",
          known="`EXCEPT ALL` is refused; PostgreSQL keeps the surplus duplicates"),

    # --- grouping sets --------------------------------------------------------------------------
    Query("rollup",
          "SELECT combustivel_tipo, ar_condicionado, count(*) AS n, grouping(combustivel_tipo, ar_condicionado) AS g "
          "FROM catalog GROUP BY ROLLUP (combustivel_tipo, ar_condicionado) "
          "ORDER BY g, combustivel_tipo, ar_condicionado"),
    Query("cube",
          "SELECT tipo_propulsao, ar_condicionado, count(*) AS n, avg(co2_fossil_g_km) AS co2, "
          "grouping(tipo_propulsao) AS gt, grouping(ar_condicionado) AS ga FROM catalog "
          "GROUP BY CUBE (tipo_propulsao, ar_condicionado) ORDER BY gt, ga, tipo_propulsao, ar_condicionado"),
    Query("grouping_sets",
          "SELECT marca, ano, count(*) AS n, grouping(marca) AS gm, grouping(ano) AS ga FROM catalog "
          "WHERE marca IN ('Fiat', 'BYD', 'Toyota') GROUP BY GROUPING SETS ((marca), (ano), ()) "
          "ORDER BY gm, ga, marca, ano"),

    # --- window functions -----------------------------------------------------------------------
    Query("moving_average_rows_frame",
          "WITH y AS (SELECT ano, count(*) AS n FROM catalog GROUP BY ano) "
          "SELECT ano, n, avg(n) OVER (ORDER BY ano ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS media_movel, "
          "sum(n) OVER (ORDER BY ano) AS acumulado FROM y ORDER BY ano"),
    Query("range_frames",
          "SELECT id, ano, co2_fossil_g_km, count(*) OVER (ORDER BY ano RANGE BETWEEN 1 PRECEDING "
          "AND 1 FOLLOWING) AS vizinhos, count(*) OVER (ORDER BY ano) AS ate_o_ano, "
          "avg(co2_fossil_g_km) OVER (ORDER BY ano RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS co2_ate "
          "FROM catalog WHERE marca = 'BYD' ORDER BY id"),
    Query("rank_dense_rank_row_number",
          "SELECT marca, modelo, n, rank() OVER w, dense_rank() OVER w, "
          "row_number() OVER (ORDER BY n DESC, marca, modelo) FROM (SELECT marca, modelo, count(*) AS n FROM catalog "
          "GROUP BY marca, modelo) t WINDOW w AS (ORDER BY n DESC) ORDER BY row_number LIMIT 30"),
    Query("ntile_percent_rank_cume_dist",
          "SELECT marca, n, ntile(4) OVER (ORDER BY n, marca) AS quartil, percent_rank() OVER (ORDER BY n) AS pr, "
          "cume_dist() OVER (ORDER BY n) AS cd FROM (SELECT marca, count(*) AS n FROM catalog GROUP BY marca) t "
          "ORDER BY n, marca"),
    Query("lag_lead",
          "WITH y AS (SELECT combustivel_tipo, ano, count(*) AS n FROM catalog GROUP BY 1, 2) "
          "SELECT combustivel_tipo, ano, n, lag(n) OVER w AS anterior, lead(n, 1, 0) OVER w AS seguinte, "
          "n - lag(n) OVER w AS variacao FROM y WINDOW w AS (PARTITION BY combustivel_tipo ORDER BY ano) "
          "ORDER BY combustivel_tipo, ano"),
    Query("mixed_directions_in_over",
          "SELECT id, categoria, ano, co2_fossil_g_km, row_number() OVER (PARTITION BY categoria "
          "ORDER BY ano DESC, co2_fossil_g_km ASC NULLS FIRST, id DESC) AS pos FROM catalog "
          "WHERE marca = 'Volkswagen' AND ano >= 2022 ORDER BY categoria, pos"),
    Query("first_value_nulls_last",
          "SELECT DISTINCT marca, "
          "first_value(modelo) OVER (PARTITION BY marca ORDER BY co2_fossil_g_km NULLS LAST, id) AS mais_limpo, "
          "first_value(co2_fossil_g_km) OVER (PARTITION BY marca ORDER BY co2_fossil_g_km DESC NULLS LAST, id) "
          "AS maior_co2 FROM catalog ORDER BY marca"),
    Query("last_and_nth_value",
          "SELECT DISTINCT categoria, last_value(id) OVER w AS ultimo, nth_value(ano, 2) OVER w AS segundo_ano "
          "FROM catalog WINDOW w AS (PARTITION BY categoria ORDER BY ano, id ROWS BETWEEN UNBOUNDED PRECEDING "
          "AND UNBOUNDED FOLLOWING) ORDER BY categoria"),
    Query("window_share_of_total",
          "SELECT combustivel_tipo, count(*) AS n, round(100.0 * count(*) / sum(count(*)) OVER (), 2) AS pct "
          "FROM catalog GROUP BY 1 ORDER BY n DESC, 1"),
    Query("window_partition_average",
          "SELECT id, modelo, co2_fossil_g_km, co2_fossil_g_km - avg(co2_fossil_g_km) OVER (PARTITION BY modelo) "
          "AS desvio, max(ano) OVER (PARTITION BY modelo) AS ultimo_ano FROM catalog WHERE marca = 'Fiat' "
          "AND ano = 2026 ORDER BY id"),

    # --- numeric arithmetic whose operands are not constants (compared at full precision) --------
    Query("share_over_a_subquery",
          "SELECT marca, count(*) * 1.0 / (SELECT count(*) FROM catalog) AS share FROM catalog GROUP BY marca "
          "ORDER BY marca"),
    Query("numeric_columns_divided",
          "SELECT id, ano::numeric / 7 AS a, (ano * 1.0) / transmissao_marchas AS b, "
          "tanque_l::numeric / 3 AS c, ano / 3.0 AS d, (ano - 2000) * 1.0 / nullif(transmissao_marchas - 5, 0) AS e "
          "FROM catalog ORDER BY id LIMIT 60"),
    Query("numeric_averages",
          "SELECT categoria, avg(ano * 1.0) AS a, avg(ano::numeric) AS b, avg(transmissao_marchas * 1.5) AS c, "
          "avg(tanque_l::numeric) AS d FROM catalog GROUP BY categoria ORDER BY categoria"),
    Query("numeric_over_aggregates_and_windows",
          "SELECT combustivel_tipo, sum(ano * 1.0) / count(*) AS media, "
          "100.0 * count(*) / sum(count(*)) OVER () AS pct, count(*) / 3.0 AS terco FROM catalog GROUP BY 1 "
          "ORDER BY 1"),
    Query("numeric_cte_columns",
          "WITH t AS (SELECT marca, count(*) * 1.0 AS n FROM catalog GROUP BY marca) "
          "SELECT marca, n / 7 AS a, n / (SELECT sum(n) FROM t) AS b, n * 2.5 / 3 AS c FROM t ORDER BY marca"),
    Query("numeric_products_and_casts",
          "SELECT id, ano * 1.5 * 1.25 AS a, (ano * 0.1) * (transmissao_marchas * 0.01) AS b, "
          "ano::numeric * 2.5 AS c, (ano * 1.0 / 7)::numeric(12, 4) AS d, round(ano * 1.0 / 7, 3) AS e "
          "FROM catalog WHERE transmissao_marchas IS NOT NULL ORDER BY id LIMIT 40"),
    Query("numeric_window_average",
          "SELECT id, avg(ano * 1.0) OVER (PARTITION BY marca) AS media_marca FROM catalog "
          "WHERE ano >= 2024 ORDER BY id LIMIT 50"),

    # --- CTEs, recursion, LATERAL, DISTINCT ON ---------------------------------------------------
    Query("recursive_years",
          "WITH RECURSIVE anos(a) AS (SELECT 2010 UNION ALL SELECT a + 1 FROM anos WHERE a < 2028) "
          "SELECT a AS ano, count(c.id) AS n FROM anos LEFT JOIN catalog c ON c.ano = a GROUP BY a ORDER BY a"),
    Query("recursive_running_product",
          "WITH RECURSIVE t(n, fatorial) AS (SELECT 1, 1::bigint UNION ALL SELECT n + 1, fatorial * (n + 1) FROM t "
          "WHERE n < 20) SELECT n, fatorial FROM t ORDER BY n"),
    Query("several_ctes",
          "WITH por_marca AS (SELECT marca, count(*) AS n FROM catalog GROUP BY marca), "
          "eletricos AS (SELECT marca, count(*) AS e FROM catalog WHERE combustivel_tipo = 'Elétrico' "
          "GROUP BY marca) SELECT p.marca, p.n, coalesce(e.e, 0) AS e, "
          "round(100.0 * coalesce(e.e, 0) / p.n, 1) AS pct FROM por_marca p LEFT JOIN eletricos e USING (marca) "
          "ORDER BY pct DESC, p.marca"),
    Query("lateral_top_three",
          "SELECT cat.categoria, t.id, t.co2 FROM (SELECT DISTINCT categoria FROM catalog) cat, "
          "LATERAL (SELECT id, co2_fossil_g_km AS co2 FROM catalog c WHERE c.categoria = cat.categoria "
          "AND co2_fossil_g_km IS NOT NULL ORDER BY co2_fossil_g_km DESC, id "
          "LIMIT 3) t ORDER BY cat.categoria, t.co2 DESC, t.id"),
    Query("lateral_top_two_fetch_first_offset",
          "SELECT m.marca, t.* FROM (SELECT DISTINCT marca FROM catalog WHERE ano = 2024) m CROSS JOIN LATERAL "
          "(SELECT modelo, versao, consumo_energetico_mj_km AS mj FROM catalog WHERE catalog.marca = m.marca "
          "AND ano = 2024 ORDER BY mj NULLS LAST, id OFFSET 1 ROWS FETCH FIRST 2 ROWS ONLY) t "
          "ORDER BY m.marca, t.mj NULLS LAST, t.modelo, t.versao"),
    Query("left_join_lateral_best_per_brand_and_year",
          "SELECT g.marca, g.ano, b.id, b.eco_score FROM (SELECT DISTINCT marca, ano FROM catalog) g "
          "LEFT JOIN LATERAL (SELECT e.id, e.eco_score FROM vw_eco_score e WHERE e.marca = g.marca "
          "AND e.ano = g.ano AND e.eco_score >= 55 ORDER BY 2 DESC, 1 LIMIT 1) b ON true "
          "ORDER BY g.marca, g.ano"),
    Query("fetch_first_rows",
          "SELECT id, modelo, co2_fossil_g_km FROM catalog ORDER BY co2_fossil_g_km DESC NULLS LAST, id "
          "OFFSET 5 ROWS FETCH FIRST 10 ROWS ONLY"),
    Query("fetch_next_row",
          "SELECT id FROM vw_eco_score ORDER BY eco_score DESC NULLS LAST, id FETCH NEXT ROW ONLY"),
    Query("left_join_lateral",
          "SELECT m.marca, x.ultimo FROM (SELECT DISTINCT marca FROM catalog) m LEFT JOIN "
          "LATERAL (SELECT max(ano) AS ultimo FROM catalog c WHERE c.marca = m.marca "
          "AND c.tipo_propulsao = 'Híbrido') x ON true ORDER BY m.marca"),
    Query("distinct_on",
          "SELECT DISTINCT ON (marca) marca, modelo, versao, co2_fossil_g_km FROM catalog "
          "WHERE co2_fossil_g_km IS NOT NULL ORDER BY marca, co2_fossil_g_km, id"),

    # --- joins ----------------------------------------------------------------------------------
    Query("join_eco_score",
          "SELECT c.marca, count(*) AS n, avg(e.eco_score) AS media, max(e.eco_score) AS top FROM catalog c "
          "JOIN vw_eco_score e ON c.id = e.id WHERE e.eco_score IS NOT NULL GROUP BY c.marca ORDER BY c.marca"),
    Query("left_join_metrics",
          "SELECT c.id, c.combustivel_tipo, m.custo_anual_estimado FROM catalog c LEFT JOIN vw_metrics m "
          "ON m.id = c.id AND m.custo_anual_estimado < 3000 WHERE c.marca = 'Kia' ORDER BY c.id"),
    Query("self_join_next_year",
          "SELECT a.marca, a.modelo, count(*) AS pares FROM catalog a JOIN catalog b ON a.marca = b.marca "
          "AND a.modelo = b.modelo AND a.versao = b.versao AND b.ano = a.ano + 1 GROUP BY a.marca, a.modelo "
          "ORDER BY pares DESC, a.marca, a.modelo LIMIT 15"),
    Query("concat_across_join",
          "SELECT DISTINCT c.marca || ' · ' || e.eco_faixa AS rotulo FROM catalog c JOIN vw_eco_score e "
          "ON e.id = c.id WHERE c.ano = 2026 ORDER BY 1"),
    Query("anti_join",
          "SELECT count(*) AS sem_score FROM catalog c LEFT JOIN vw_eco_score e ON e.id = c.id "
          "AND e.eco_score IS NOT NULL WHERE e.id IS NULL"),
    Query("full_join",
          "SELECT coalesce(a.ano, b.ano) AS ano, a.n AS flex, b.n AS eletrico "
          "FROM (SELECT ano, count(*) AS n FROM catalog WHERE combustivel_tipo = 'Flex' AND ano < 2016 "
          "GROUP BY ano) a FULL JOIN (SELECT ano, count(*) AS n FROM catalog WHERE combustivel_tipo = 'Elétrico' "
          "GROUP BY ano) b ON a.ano = b.ano ORDER BY 1"),
    Query("cross_join",
          "SELECT f.eco_faixa, p.tipo_propulsao FROM (SELECT DISTINCT eco_faixa FROM vw_eco_score "
          "WHERE eco_faixa IS NOT NULL) f CROSS JOIN (SELECT DISTINCT tipo_propulsao FROM catalog) p ORDER BY 1, 2"),
    Query("join_using",
          "SELECT id, catalog.marca, autonomia_km FROM catalog JOIN vw_metrics USING (id) "
          "WHERE catalog.combustivel_tipo = 'Elétrico' AND catalog.ano = 2025 ORDER BY id"),

    # --- the views: published values --------------------------------------------------------------
    Query("metrics_every_row",
          "SELECT id, eficiencia_media_referencia, consumo_referencia, co2_referencia_g_km, autonomia_km, "
          "custo_anual_estimado FROM vw_metrics ORDER BY id"),
    Query("eco_score_every_row",
          "SELECT id, indice_energia, indice_co2, indice_poluentes, eco_score, eco_faixa FROM vw_eco_score "
          "ORDER BY id"),
    Query("band_counts",
          "SELECT eco_faixa, count(*), round(avg(eco_score)::numeric, 2) AS media FROM vw_eco_score "
          "GROUP BY eco_faixa ORDER BY eco_faixa NULLS FIRST"),
    Query("band_medians",
          "SELECT eco_faixa, percentile_cont(0.5) WITHIN GROUP (ORDER BY eco_score) AS mediana, min(eco_score), "
          "max(eco_score) FROM vw_eco_score GROUP BY eco_faixa ORDER BY eco_faixa DESC"),
    Query("top_eco_scores",
          "SELECT id, marca, modelo, ano, eco_score FROM vw_eco_score ORDER BY eco_score DESC NULLS LAST, id LIMIT 20"),
    Query("autonomy_desc_nulls_first",
          "SELECT id, combustivel_tipo, autonomia_km FROM vw_metrics WHERE marca = 'Toyota' AND ano >= 2024 "
          "ORDER BY autonomia_km DESC, id"),
    Query("cost_by_fuel",
          "SELECT combustivel_tipo, count(custo_anual_estimado) AS com_custo, avg(custo_anual_estimado) AS media, "
          "min(custo_anual_estimado) AS menor, max(custo_anual_estimado) AS maior FROM vw_metrics GROUP BY 1 "
          "ORDER BY 1"),
    Query("index_averages",
          "SELECT tipo_propulsao, avg(indice_energia) AS energia, avg(indice_co2) AS co2, "
          "avg(indice_poluentes) AS poluentes FROM vw_eco_score GROUP BY 1 ORDER BY 1"),
    Query("score_threshold",
          "SELECT marca, count(*) FILTER (WHERE eco_score >= 60) AS bons, count(*) AS n FROM vw_eco_score "
          "GROUP BY marca ORDER BY marca"),
    Query("brand_gap",
          "WITH m AS (SELECT marca, modelo, avg(eco_score) AS s FROM vw_eco_score GROUP BY marca, modelo) "
          "SELECT marca, max(s) - min(s) AS gap FROM m GROUP BY marca HAVING max(s) - min(s) > 30 "
          "ORDER BY gap DESC, marca"),
    Query("cheapest_per_category",
          "SELECT DISTINCT ON (categoria) categoria, marca, modelo, custo_anual_estimado FROM vw_metrics "
          "WHERE custo_anual_estimado IS NOT NULL ORDER BY categoria, custo_anual_estimado, id"),

    # --- dates ----------------------------------------------------------------------------------
    Query("date_functions_on_constants",
          "SELECT date_trunc('month', timestamp '2024-03-15 10:30:00') AS mes, "
          "extract(year from date '2024-03-01') AS ano, make_date(2024, 2, 29) AS bissexto, "
          "date '2024-03-01' + 30 AS mais_30, date '2024-12-25' - date '2024-01-01' AS dias, "
          "extract(dow from date '2024-03-01') AS dia_semana, timestamp '2024-01-31 12:00:00' + interval '1 month' "
          "AS mais_um_mes"),
    Query("make_date_per_year",
          "SELECT ano, make_date(ano, 1, 1) AS inicio, make_date(ano, 12, 31) - make_date(ano, 1, 1) + 1 AS dias, "
          "count(*) AS n FROM catalog GROUP BY ano ORDER BY ano"),
    Query("date_parts_unaliased",
          "SELECT DISTINCT ano, date_part('year', make_date(ano, 6, 1)), extract(month from make_date(ano, 6, 1)) "
          "FROM catalog WHERE ano >= 2020 ORDER BY ano"),
    Query("to_char_date",
          "SELECT DISTINCT ano, to_char(make_date(ano, 3, 1), 'YYYY-MM-DD') AS iso, "
          "to_char(make_date(ano, 3, 1), 'DD/MM/YYYY') AS br FROM catalog WHERE ano >= 2022 ORDER BY ano"),
]


# --- the export and PostgreSQL -------------------------------------------------------------------

def fold(text: str | None) -> str | None:
    """Lower case without accents ('Elétrico' -> 'eletrico')."""
    if text is None:
        return None
    decomposed = unicodedata.normalize("NFD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def catalog_table(export: Path) -> pa.Table:
    """The export as the service's `catalog`: CATALOG's columns in its order, with
    `combustivel_fold` computed here."""
    table = pq.read_table(export)
    if "id" not in table.column_names:
        raise SystemExit(f"sql: {export} has no id column (the generator writes one)")
    folded = pa.array([fold(v) for v in table.column("combustivel_tipo").to_pylist()], pa.string())
    if "nmog_nox_g_km" not in table.column_names:
        # An optional input column: the service reads an export without it as all null.
        table = table.append_column("nmog_nox_g_km", pa.nulls(table.num_rows, pa.float64()))
    table = table.append_column("combustivel_fold", folded).select(list(CATALOG))
    # Plain strings (Arrow's compute kernels do not all take string views).
    return table.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f
                                 for f in table.schema]))


def check_export(table: pa.Table) -> None:
    """The corpus relies on nulls in several float columns and on accented text."""
    with_nulls = [f.name for f in table.schema if pa.types.is_floating(f.type) and table.column(f.name).null_count]
    accented = any(fold(v) != v.lower() for name in ("categoria", "tipo_propulsao", "combustivel_tipo")
                   for v in table.column(name).unique().to_pylist() if v)
    if len(with_nulls) < 3 or not accented:
        raise SystemExit(f"sql: the export has nulls in only {with_nulls} and accented text: {accented}; "
                         "the corpus needs nulls in several float columns and accents (more --rows?)")


def load_database(pg: PgServer, dbname: str, table: pa.Table) -> None:
    with pg.connect() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    with pg.connect(dbname) as conn:
        load_table(conn, "catalog", table, CATALOG)
        conn.execute(VIEWS)


@dataclass
class Answer:
    names: list[str]
    types: list[str]
    rows: list[tuple]


class Refused(Exception):
    """An error answer: HTTP status (0 for PostgreSQL) and message."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def ask_postgres(conn: psycopg.Connection, statement: str) -> Answer:
    try:
        cur = conn.execute(statement)
    except psycopg.Error as e:
        raise Refused(0, f"{e.sqlstate}: {str(e).strip()}") from None
    types = []
    for d in cur.description:
        info = conn.adapters.types.get(d.type_code)
        types.append(info.name if info else str(d.type_code))
    return Answer([d.name for d in cur.description], types, [tuple(r) for r in cur.fetchall()])


# --- the service ---------------------------------------------------------------------------------

class Pairs(dict):
    """A JSON object that also keeps its members in order, duplicates included."""

    def __init__(self, pairs):
        super().__init__(pairs)
        self.pairs = pairs


class Service:
    def __init__(self, binary: str, export: Path, work: Path):
        creds = work / "credentials.json"
        creds.write_text(json.dumps({"credentials": [{"key": KEY, "name": "sql check",
                                                      "secret_sha256": hashlib.sha256(SECRET.encode()).hexdigest()}]}))
        self.log = open(work / "server.log", "w")
        # The time limit is raised: this test compares answers, not speed, on a busy 2-core machine.
        # The workers' files go to the test's folder (TMPDIR), removed with it.
        self.proc = subprocess.Popen(
            [binary, "serve", "--bind", "127.0.0.1:0", "--data", str(export), "--credentials", str(creds),
             "--queries", str(ROOT / "queries"), "--log", "warn", "--sql-timeout-ms", "60000"],
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, text=True,
            env=dict(os.environ, TMPDIR=str(work)))
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.stop()
            raise SystemExit(f"sql: the service did not start: {line!r} (log: {work / 'server.log'})")
        self.base = line.strip().removeprefix("listening on ")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def ask(self, statement: str) -> Answer:
        """The JSON answer; Refused on any error status (503 retried as told)."""
        body = json.dumps({"sql": statement}).encode()
        for _ in range(30):
            req = urllib.request.Request(self.base + "/sql", data=body, method="POST", headers={
                "X-API-Key": KEY, "X-API-Secret": SECRET, "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=120) as res:
                    doc = json.loads(res.read(), object_pairs_hook=Pairs)
                    break
            except urllib.error.HTTPError as e:
                text = e.read().decode(errors="replace")
                if e.code == 503:
                    time.sleep(float(e.headers.get("Retry-After") or 1))
                    continue
                try:
                    error = json.loads(text).get("error", {})
                    text = f"{error.get('code')}: {error.get('message')}"
                except (ValueError, AttributeError):
                    pass
                raise Refused(e.code, text[:500]) from None
            except (urllib.error.URLError, OSError) as e:
                raise Refused(0, f"no answer: {e}") from None
        else:
            raise Refused(503, "still unavailable after 30 tries")
        meta = doc["data"]["meta"]
        if meta.get("truncated"):
            raise Refused(200, "answer truncated: the query returns more rows than --sql-max-rows")
        names = [c["name"] for c in meta["columns"]]
        rows = []
        for row in doc["data"]["data"]:
            keys = [k for k, _ in row.pairs]
            if keys != names:
                raise Refused(200, f"row keys {keys} differ from meta.columns {names}")
            rows.append(tuple(v for _, v in row.pairs))
        return Answer(names, [c["type"] for c in meta["columns"]], rows)


# --- comparison ----------------------------------------------------------------------------------

# PostgreSQL result types and the service's column type each may be answered as.
SERVICE_TYPES = {
    "int2": {"integer"}, "int4": {"integer"}, "int8": {"integer"},
    "float4": {"float"}, "float8": {"float"}, "numeric": {"float", "integer"},
    "text": {"string"}, "varchar": {"string"}, "bpchar": {"string"}, "name": {"string"},
    "bool": {"boolean"}, "date": {"date"}, "timestamp": {"datetime"}, "timestamptz": {"datetime"},
}


def same_value(want, got, tol: float) -> bool:
    if want is None or got is None:
        return want is None and got is None
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is bool and type(got) is bool and want == got
    if isinstance(want, (int, float, Decimal)):
        if not isinstance(got, (int, float)):
            return False
        if isinstance(want, int) and isinstance(got, int):
            return want == got
        if isinstance(want, Decimal):
            # PostgreSQL's numeric: at least sixteen significant digits, which the service's
            # double must carry (within a few units in the last place of a double).
            return math.isclose(float(want), float(got), rel_tol=min(tol, NUMERIC_TOL), abs_tol=0.0) or (
                float(want) == 0.0 and abs(float(got)) <= ABS_TOL)
        return math.isclose(float(want), float(got), rel_tol=tol, abs_tol=ABS_TOL)
    if isinstance(want, (datetime.date, datetime.time)):
        if not isinstance(got, str):
            return False
        try:
            parsed = type(want).fromisoformat(got.replace(" ", "T") if isinstance(want, datetime.datetime) else got)
        except ValueError:
            return False
        return parsed == want
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(
            same_value(w, g, tol) for w, g in zip(want, got))
    return want == got


def as_json(value):
    """A PostgreSQL value as a JSON answer carries it."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and value.as_tuple().exponent >= 0 else float(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return [as_json(v) for v in value]
    return value


def sort_key(row: tuple) -> tuple:
    """An order for comparing unordered answers as multisets (None first, then by kind)."""
    def key(v):
        if v is None:
            return (0, 0, "")
        if isinstance(v, (bool, int, float, Decimal)):
            return (1, float(v), "")
        if isinstance(v, (datetime.date, datetime.time)):
            return (2, 0, v.isoformat())
        return (2, 0, str(v))
    return tuple(key(v) for v in row)


def short(row) -> str:
    text = repr(tuple(row))
    return text if len(text) <= 300 else text[:300] + "…"


def difference(query: Query, want: Answer, got: Answer, check_types: bool = True) -> str | None:
    """How `got` differs from PostgreSQL's `want` (its column types, then its first differing
    value), or None when alike."""
    if got.names != want.names:
        return f"columns {got.names}, PostgreSQL {want.names}"
    problems = []
    if check_types:
        problems += [f"column {name!r} typed {service_type}, PostgreSQL {pg_type}"
                     for name, pg_type, service_type in zip(want.names, want.types, got.types)
                     if service_type not in SERVICE_TYPES.get(pg_type, {service_type})]
    if len(got.rows) != len(want.rows):
        return "; ".join(problems + [f"{len(got.rows)} rows, PostgreSQL {len(want.rows)}"])
    want_rows, got_rows = want.rows, got.rows
    if query.unordered:
        want_rows, got_rows = sorted(want_rows, key=sort_key), sorted(got_rows, key=sort_key)
    mismatch = next(((i, name, w, g, x, y) for i, (w, g) in enumerate(zip(want_rows, got_rows))
                     for name, x, y in zip(want.names, w, g) if not same_value(x, y, query.tol)), None)
    if mismatch:
        i, name, w, g, x, y = mismatch
        problems.append(f"row {i}, column {name!r}: {y!r}, PostgreSQL {x!r} (tolerance {query.tol:g})\n"
                        f"      service    {short(g)}\n      PostgreSQL {short(w)}")
    return "; ".join(problems) or None


# --- runs ----------------------------------------------------------------------------------------

@dataclass
class Outcome:
    query: Query
    verdict: str  # alike | refused | failed
    detail: str = ""


def check_with_service(q: Query, conn: psycopg.Connection, service: Service) -> Outcome:
    started = time.monotonic()
    try:
        want = ask_postgres(conn, q.sql)
    except Refused as e:
        return Outcome(q, "failed", f"PostgreSQL itself refused it (a corpus bug): {e.message}")
    try:
        got = service.ask(q.sql)
    except Refused as e:
        if q.known and e.status == 400:
            return Outcome(q, "refused", e.message)
        return Outcome(q, "failed", f"answered {e.status}: {e.message}")
    diff = difference(q, want, got)
    if diff is not None:
        return Outcome(q, "failed", "a different answer: " + diff)
    return Outcome(q, "alike", f"{len(want.rows)} rows, {time.monotonic() - started:.2f} s")


def check_corpus_query(q: Query, conn: psycopg.Connection, reversed_conn: psycopg.Connection,
                       show: bool) -> Outcome:
    """One query on PostgreSQL alone: it runs, and an ordered one answers the same rows on the
    catalog loaded in reverse order."""
    started = time.monotonic()
    try:
        want = ask_postgres(conn, q.sql)
        elapsed = time.monotonic() - started
        again = ask_postgres(reversed_conn, q.sql)
    except Refused as e:
        return Outcome(q, "failed", f"PostgreSQL refused it: {e.message}")
    if show:
        print("  " + " | ".join(f"{n} ({t})" for n, t in zip(want.names, want.types)))
        for row in want.rows[:40]:
            print("  " + short(row))
    again.rows = [tuple(as_json(v) for v in row) for row in again.rows]
    diff = difference(q, want, again, check_types=False)
    if diff is not None:
        return Outcome(q, "failed", "not deterministic (ORDER BY not total?): " + diff)
    return Outcome(q, "alike", f"{len(want.rows)} rows in {elapsed:.2f} s, the same in reverse load order")


def report(o: Outcome) -> None:
    if o.verdict == "failed":
        print(f"sql: FAILED {o.query.name}: {o.detail}\n      sql: {o.query.sql}", file=sys.stderr)
    else:
        print(f"sql: {o.query.name}: {o.verdict} ({o.detail})")


def summary(outcomes: list[Outcome], pg_version: str, rows: int) -> str:
    alike = [o for o in outcomes if o.verdict == "alike"]
    refused = [o for o in outcomes if o.verdict == "refused"]
    failed = [o for o in outcomes if o.verdict == "failed"]
    lines = [f"Analysts' SQL against PostgreSQL {pg_version.split()[0]} (`make sql-test`, {rows} generated rows): "
             f"{len(outcomes)} queries, {len(alike)} answered alike, {len(refused)} refused with a 400 "
             f"(known differences), {len(failed)} failed.", ""]
    known = [o for o in outcomes if o.query.known]
    lines.append("Known differences from PostgreSQL (refused with a 400, never answered differently):"
                 + ("" if known else " none."))
    lines.append("")
    for o in known:
        state = {"alike": "answered alike now", "refused": "refused"}.get(o.verdict, "FAILED")
        lines.append(f"- `{o.query.name}`: {o.query.known} ({state})")
    if known:
        lines.append("")
    if failed:
        lines.append("Failed:")
        lines.append("")
        for o in failed:
            lines.append(f"- `{o.query.name}`: {o.detail.splitlines()[0]}")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", help="the service's binary (target/release/eco-insights)")
    parser.add_argument("--rows", type=int, default=6000, help="rows of the generated export (default 6000)")
    parser.add_argument("--seed", type=int, default=11, help="seed of the generated export (default 11)")
    parser.add_argument("--data", type=Path, help="an export with ids to use instead of generating one")
    parser.add_argument("--only", metavar="NAME", help="run this query only")
    parser.add_argument("--keep", action="store_true", help="leave the temporary folders (export, logs, cluster)")
    parser.add_argument("--pg-only", action="store_true",
                        help="check the corpus on PostgreSQL alone (no service); with --only, print its answer")
    args = parser.parse_args()
    if not args.binary and not (args.pg_only and args.data):
        parser.error("--binary is needed (or --pg-only with --data)")
    corpus = CORPUS
    if args.only:
        corpus = [q for q in CORPUS if q.name == args.only]
        if not corpus:
            parser.error(f"no query named {args.only!r}; names: {', '.join(q.name for q in CORPUS)}")

    # A SIGTERM unwinds like Ctrl-C, so the service and the cluster are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    outcomes: list[Outcome] = []
    with contextlib.ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix="eco-sql-"))
        if args.keep:
            stack.callback(print, f"sql: kept {work}")
        else:
            stack.callback(shutil.rmtree, work, ignore_errors=True)
        export = args.data
        if export is None:
            export = work / "catalog.parquet"
            subprocess.run([args.binary, "generate", "--rows", str(args.rows), "--seed", str(args.seed), "--out",
                            str(export)], check=True, stdout=subprocess.DEVNULL, timeout=300)
        table = catalog_table(export)
        check_export(table)
        pg = stack.enter_context(PgServer(keep=args.keep))
        if args.keep:
            stack.callback(print, f"sql: kept {pg.folder}")
        load_database(pg, "eco", table)
        pg_version = pg.version()
        print(f"sql: PostgreSQL {pg_version} on 127.0.0.1:{pg.port}, catalog of {table.num_rows} rows and the views "
              f"loaded in {time.monotonic() - started:.1f} s")
        conn = stack.enter_context(pg.connect("eco"))
        if args.pg_only:
            load_database(pg, "eco_reversed", table.take(pa.array(range(table.num_rows - 1, -1, -1))))
            reversed_conn = stack.enter_context(pg.connect("eco_reversed"))
            check = functools.partial(check_corpus_query, conn=conn, reversed_conn=reversed_conn, show=bool(args.only))
        else:
            service = Service(args.binary, export, work)
            stack.callback(service.stop)
            check = functools.partial(check_with_service, conn=conn, service=service)
        for q in corpus:
            outcomes.append(check(q))
            report(outcomes[-1])

    if args.pg_only:
        print(f"\nsql: the corpus on PostgreSQL {pg_version.split()[0]} alone, {table.num_rows} rows, "
              f"{time.monotonic() - started:.0f} s")
    else:
        text = summary(outcomes, pg_version, table.num_rows)
        print("\n" + text)
        if not args.only:
            SUMMARY.parent.mkdir(parents=True, exist_ok=True)
            SUMMARY.write_text(text)
            print(f"(written to {SUMMARY.relative_to(ROOT)}; {time.monotonic() - started:.0f} s)")
    failed = sum(o.verdict == "failed" for o in outcomes)
    print(f"{len(outcomes) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
