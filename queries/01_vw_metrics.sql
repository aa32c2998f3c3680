-- vw_metrics: the per-vehicle reference metrics (API-CONTRACT §2).
--
-- Input table `catalog`: the validated export, plus `combustivel_fold`, the fuel name in lower
-- case without accents (so 'ELÉTRICO', 'Eletrico' and 'elétrico' are the same fuel).
-- Published values are rounded here (metrics and cost to 2 decimals), so rankings, averages and
-- comparisons all work on the numbers a client sees. Rounding happens only where a value is
-- published: every formula (autonomia, cost, and the eco score in 02_vw_eco_score.sql) reads the
-- unrounded inputs. ROUND_PUBLISHED(value, decimals) is the service's one rounding rule: half to
-- even, the tie decided on the decimal value (2.135 -> 2.14, 0.125 -> 0.12).
-- {{km_ano}} and {{preco_*}} are replaced by the server's cost configuration; {{casas.metricas}}
-- (the decimals of published metrics) comes from parametros.toml, beside this file.

CREATE TABLE vw_metrics AS
WITH base AS (
    SELECT
        *,
        -- mean of the non-null of city and highway efficiency (km per unit of reference fuel)
        CASE
            WHEN eficiencia_cidade_km_l IS NULL AND eficiencia_estrada_km_l IS NULL THEN NULL
            WHEN eficiencia_cidade_km_l IS NULL THEN eficiencia_estrada_km_l
            WHEN eficiencia_estrada_km_l IS NULL THEN eficiencia_cidade_km_l
            ELSE (eficiencia_cidade_km_l + eficiencia_estrada_km_l) / 2.0
        END AS efic_raw,
        -- the same mean over the ethanol columns (Flex only)
        CASE
            WHEN eficiencia_cidade_etanol_km_l IS NULL AND eficiencia_estrada_etanol_km_l IS NULL THEN NULL
            WHEN eficiencia_cidade_etanol_km_l IS NULL THEN eficiencia_estrada_etanol_km_l
            WHEN eficiencia_estrada_etanol_km_l IS NULL THEN eficiencia_cidade_etanol_km_l
            ELSE (eficiencia_cidade_etanol_km_l + eficiencia_estrada_etanol_km_l) / 2.0
        END AS efic_etanol_raw
    FROM catalog
),
custo AS (
    SELECT
        *,
        CASE WHEN efic_raw > 0 THEN {{km_ano}} / efic_raw END AS litros_ano,
        CASE WHEN efic_etanol_raw > 0 THEN {{km_ano}} / efic_etanol_raw END AS litros_etanol_ano
    FROM base
)
SELECT
    *,
    ROUND_PUBLISHED(efic_raw, {{casas.metricas}}) AS eficiencia_media_referencia,
    ROUND_PUBLISHED(consumo_energetico_mj_km, {{casas.metricas}}) AS consumo_referencia,
    ROUND_PUBLISHED(co2_fossil_g_km, {{casas.metricas}}) AS co2_referencia_g_km,
    ROUND_PUBLISHED(
        CASE
            WHEN combustivel_fold = 'eletrico' THEN autonomia_eletrica_km
            ELSE tanque_l * efic_raw + COALESCE(autonomia_eletrica_km, 0.0)
        END, {{casas.metricas}}) AS autonomia_km,
    ROUND_PUBLISHED(
        CASE combustivel_fold
            -- MJ/km to kWh/km: divide by 3.6
            WHEN 'eletrico' THEN {{km_ano}} * consumo_energetico_mj_km / 3.6 * {{preco_kwh}}
            -- the cheaper of the two fuels; both are needed (a missing input gives no cost)
            WHEN 'flex' THEN CASE
                WHEN litros_ano IS NULL OR litros_etanol_ano IS NULL THEN NULL
                ELSE LEAST(litros_ano * {{preco_gasolina}}, litros_etanol_ano * {{preco_etanol}})
            END
            WHEN 'gasolina' THEN litros_ano * {{preco_gasolina}}
            WHEN 'etanol' THEN litros_ano * {{preco_etanol}}
            WHEN 'diesel' THEN litros_ano * {{preco_diesel}}
            WHEN 'gnv' THEN litros_ano * {{preco_gnv}}
        END, {{casas.metricas}}) AS custo_anual_estimado
FROM custo;
