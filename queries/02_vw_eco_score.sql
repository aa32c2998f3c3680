-- vw_eco_score: the eco score (0-100, one decimal) and its band, over vw_metrics.
--
-- The indices read the export's unrounded inputs (consumo_energetico_mj_km and co2_fossil_g_km,
-- which consumo_referencia and co2_referencia_g_km publish at 2 decimals): a score computed from
-- a rounded metric would be off by up to 0.1 point. Only the score itself is rounded, with
-- ROUND_PUBLISHED (half to even on the decimal value: 39.35 -> 39.4, 43.25 -> 43.2).
--
-- The pollutants index reads NMHC, CO and NOx against the limits of [limites_poluentes] when
-- the three are present; otherwise NMOG+NOx and CO (as the tables from PROCONVE L7 on publish
-- them) against the limits of [limites_poluentes_l7] when both are present; otherwise it is null.
--
-- Each index is clamped to 0-100 with CASE, never GREATEST/LEAST: those skip nulls and would
-- turn a missing index into 0 instead of leaving it out of the weighted mean.
-- Weights (parametros.toml [eco_score]: 0.45 energy, 0.35 CO2, 0.20 pollutants as shipped),
-- renormalised over the indices present; no score when both the energy and the CO2 index are
-- missing. The weights, index bounds, pollutant limits, bands and decimals are
-- {{section.key}} placeholders filled from parametros.toml beside this file: edit the numbers
-- there, and GET /methodology, the report and diff follow.
--
-- Three statements: ROUND_PUBLISHED is a function the service registers, and Polars SQL sees such
-- functions in a statement's final SELECT but not inside its WITH clauses.

CREATE TABLE vw_eco_score_raw AS
WITH raw AS (
    SELECT
        *,
        100.0 * ({{indice_energia.zero_mj_km}} - consumo_energetico_mj_km) / {{indice_energia.escala_mj_km}} AS energia_raw,
        100.0 * ({{indice_co2.zero_g_km}} - co2_fossil_g_km) / {{indice_co2.zero_g_km}} AS co2_raw,
        CASE
            WHEN nmhc_g_km IS NOT NULL AND co_g_km IS NOT NULL AND nox_g_km IS NOT NULL
                THEN 100.0 * (1.0 - (nmhc_g_km / {{limites_poluentes.nmhc_g_km}} + co_g_km / {{limites_poluentes.co_g_km}} + nox_g_km / {{limites_poluentes.nox_g_km}}) / 3.0)
            WHEN nmog_nox_g_km IS NOT NULL AND co_g_km IS NOT NULL
                THEN 100.0 * (1.0 - (nmog_nox_g_km / {{limites_poluentes_l7.nmog_nox_g_km}} + co_g_km / {{limites_poluentes_l7.co_g_km}}) / 2.0)
            ELSE NULL
        END AS poluentes_raw
    FROM vw_metrics
),
indices AS (
    SELECT
        *,
        CASE WHEN energia_raw IS NULL THEN NULL WHEN energia_raw < 0 THEN 0.0
             WHEN energia_raw > 100 THEN 100.0 ELSE energia_raw END AS indice_energia,
        CASE WHEN co2_raw IS NULL THEN NULL WHEN co2_raw < 0 THEN 0.0
             WHEN co2_raw > 100 THEN 100.0 ELSE co2_raw END AS indice_co2,
        CASE WHEN poluentes_raw IS NULL THEN NULL WHEN poluentes_raw < 0 THEN 0.0
             WHEN poluentes_raw > 100 THEN 100.0 ELSE poluentes_raw END AS indice_poluentes
    FROM raw
)
SELECT
    *,
    CASE
        WHEN indice_energia IS NULL AND indice_co2 IS NULL THEN NULL
        ELSE ({{eco_score.peso_energia}} * COALESCE(indice_energia, 0.0)
              + {{eco_score.peso_co2}} * COALESCE(indice_co2, 0.0)
              + {{eco_score.peso_poluentes}} * COALESCE(indice_poluentes, 0.0))
             / (CASE WHEN indice_energia IS NULL THEN 0.0 ELSE {{eco_score.peso_energia}} END
                + CASE WHEN indice_co2 IS NULL THEN 0.0 ELSE {{eco_score.peso_co2}} END
                + CASE WHEN indice_poluentes IS NULL THEN 0.0 ELSE {{eco_score.peso_poluentes}} END)
    END AS eco_score_raw
FROM indices;

-- The published score: the only rounding of the score, one decimal.
CREATE TABLE vw_eco_score_published AS
SELECT *, ROUND_PUBLISHED(eco_score_raw, {{casas.eco_score}}) AS eco_score
FROM vw_eco_score_raw;

-- The band of the published score.
CREATE TABLE vw_eco_score AS
SELECT
    *,
    CASE
        WHEN eco_score IS NULL THEN NULL
        WHEN eco_score <= {{faixas.baixo_ate}} THEN 'Baixo'
        WHEN eco_score <= {{faixas.regular_ate}} THEN 'Regular'
        WHEN eco_score <= {{faixas.bom_ate}} THEN 'Bom'
        ELSE 'Excelente'
    END AS eco_faixa
FROM vw_eco_score_published;
