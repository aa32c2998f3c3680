//! Per-vehicle views (API-CONTRACT §4): summary, eco score, ranking positions, similar vehicles
//! and the best alternative of one base vehicle.

use polars::prelude::*;
use serde::Serialize;
use uuid::Uuid;

use super::catalog::CatalogVehicle;
use super::filters::sorted;
use super::rankings::RankingItem;
use crate::engine::dataset::table::{row_numbers, Table, Vehicle, ROW};
use crate::engine::dataset::views::FINAL_VIEW;

/// Default number of similar vehicles (`top` of compare-similar).
pub const SIMILAR_DEFAULT: u32 = 5;
/// Largest `top` of compare-similar.
pub const SIMILAR_MAX: u32 = 20;

/// `summary.consumo`: efficiency inputs and the derived consumption metrics.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Consumo {
    pub eficiencia_cidade_km_l: Option<f64>,
    pub eficiencia_estrada_km_l: Option<f64>,
    pub eficiencia_cidade_etanol_km_l: Option<f64>,
    pub eficiencia_estrada_etanol_km_l: Option<f64>,
    /// Mean of the non-null city and highway efficiencies (km/unidade).
    pub eficiencia_media_referencia: Option<f64>,
    pub consumo_energetico_mj_km: Option<f64>,
    /// Range, km.
    pub autonomia_km: Option<f64>,
    /// Estimated yearly fuel or energy cost, R$, with the server's km/year and prices.
    pub custo_anual_estimado: Option<f64>,
}

/// `summary.emissoes`: emissions and the PBE classes.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Emissoes {
    pub co2_fossil_g_km: Option<f64>,
    pub nmhc_g_km: Option<f64>,
    pub co_g_km: Option<f64>,
    pub nox_g_km: Option<f64>,
    #[schema(example = "A")]
    pub classificacao_pbe_categoria: Option<String>,
    #[schema(example = "B")]
    pub classificacao_pbe_geral: Option<String>,
}

/// `summary`: the catalog fields, consumption and emissions of one vehicle.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Summary {
    pub veiculo: CatalogVehicle,
    pub consumo: Consumo,
    pub emissoes: Emissoes,
}

/// `data.data` of `GET /vehicles/{vehicle_id}/summary`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct VehicleSummary {
    pub vehicle_id: Uuid,
    pub summary: Summary,
}

impl From<&Vehicle> for VehicleSummary {
    fn from(v: &Vehicle) -> Self {
        VehicleSummary {
            vehicle_id: v.id,
            summary: Summary {
                veiculo: CatalogVehicle::from(v),
                consumo: Consumo {
                    eficiencia_cidade_km_l: v.eficiencia_cidade_km_l,
                    eficiencia_estrada_km_l: v.eficiencia_estrada_km_l,
                    eficiencia_cidade_etanol_km_l: v.eficiencia_cidade_etanol_km_l,
                    eficiencia_estrada_etanol_km_l: v.eficiencia_estrada_etanol_km_l,
                    eficiencia_media_referencia: v.eficiencia_media_referencia,
                    consumo_energetico_mj_km: v.consumo_energetico_mj_km,
                    autonomia_km: v.autonomia_km,
                    custo_anual_estimado: v.custo_anual_estimado,
                },
                emissoes: Emissoes {
                    co2_fossil_g_km: v.co2_fossil_g_km,
                    nmhc_g_km: v.nmhc_g_km,
                    co_g_km: v.co_g_km,
                    nox_g_km: v.nox_g_km,
                    classificacao_pbe_categoria: v.classificacao_pbe_categoria.clone(),
                    classificacao_pbe_geral: v.classificacao_pbe_geral.clone(),
                },
            },
        }
    }
}

/// `data.data` of `GET /vehicles/{vehicle_id}/eco-score`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct VehicleEcoScore {
    pub vehicle_id: Uuid,
    pub marca: String,
    pub modelo: String,
    pub versao: String,
    pub ano: i32,
    pub categoria: String,
    /// Eco score, 0–100, one decimal; null when the vehicle has neither energy nor CO2 data.
    pub eco_score: Option<f64>,
    /// Band of the score: Baixo (≤ 40), Regular (≤ 60), Bom (≤ 80), Excelente (> 80); null
    /// when there is no score.
    #[schema(value_type = Option<super::labels::FaixaEcoScore>, example = "Bom")]
    pub faixa: Option<String>,
    /// The view that computes the score.
    #[schema(example = "vw_eco_score")]
    pub source: &'static str,
}

impl From<&Vehicle> for VehicleEcoScore {
    fn from(v: &Vehicle) -> Self {
        VehicleEcoScore {
            vehicle_id: v.id,
            marca: v.marca.clone(),
            modelo: v.modelo.clone(),
            versao: v.versao.clone(),
            ano: v.ano,
            categoria: v.categoria.clone(),
            eco_score: v.eco_score,
            faixa: v.eco_faixa.clone(),
            source: FINAL_VIEW,
        }
    }
}

/// `data.data` of `GET /vehicles/{vehicle_id}/ranking-positions`: competition positions by eco
/// score (ties share the lowest position); every field but the id is null without a score.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RankingPositions {
    pub vehicle_id: Uuid,
    /// Position among all scored vehicles (best = 1).
    pub global: Option<u32>,
    /// Position within the vehicle's categoria.
    pub na_categoria: Option<u32>,
    /// Position within the vehicle's combustivel_tipo.
    pub no_combustivel: Option<u32>,
    /// 100 × (N − global) / (N − 1) over the N scored vehicles (100 when N = 1), one decimal.
    pub percentil: Option<f64>,
}

impl From<&Vehicle> for RankingPositions {
    fn from(v: &Vehicle) -> Self {
        RankingPositions {
            vehicle_id: v.id,
            global: v.posicao_global,
            na_categoria: v.posicao_categoria,
            no_combustivel: v.posicao_combustivel,
            percentil: v.percentil,
        }
    }
}

/// The summary of one vehicle (`None`: unknown id).
pub fn summary(snapshot: &Table, id: &Uuid) -> Option<VehicleSummary> {
    snapshot.vehicle(id).as_ref().map(VehicleSummary::from)
}

/// The eco score of one vehicle (`None`: unknown id).
pub fn eco_score(snapshot: &Table, id: &Uuid) -> Option<VehicleEcoScore> {
    snapshot.vehicle(id).as_ref().map(VehicleEcoScore::from)
}

/// The precomputed positions of one vehicle (`None`: unknown id).
pub fn ranking_positions(snapshot: &Table, id: &Uuid) -> Option<RankingPositions> {
    snapshot.vehicle(id).as_ref().map(RankingPositions::from)
}

/// The other scored vehicles of the base's categoria, as a lazy frame: the categoria's rows come
/// from the text index, so only they are gathered.
fn same_category_scored(snapshot: &Table, base: &Vehicle, row: u32, columns: &[&str]) -> PolarsResult<LazyFrame> {
    let categoria =
        snapshot.index.column("categoria").ok_or_else(|| polars_err!(ComputeError: "no categoria index"))?;
    let rows: &[u32] = match categoria.code_of(&base.categoria) {
        Some(code) => categoria.rows(code),
        None => &[],
    };
    let mut columns = columns.to_vec();
    columns.push("eco_score");
    Ok(snapshot.gather(Some(rows), &columns)?.filter(col("eco_score").is_not_null().and(col(ROW).neq(lit(row)))))
}

/// Up to `top` vehicles most similar to the base (`None`: unknown id): other scored vehicles of
/// its categoria by |Δ eco score| ascending, then |Δ ano|, then id; without a base score, by
/// |Δ ano| then id.
pub fn similar(snapshot: &Table, id: &Uuid, top: u32) -> PolarsResult<Option<Vec<u32>>> {
    let Some(row) = snapshot.row_of(id) else { return Ok(None) };
    let base = snapshot.vehicle_at(row);
    let mut deltas = vec![(col("ano") - lit(base.ano)).abs().alias("delta_ano")];
    let mut keys = vec![("delta_ano", false)];
    if let Some(score) = base.eco_score {
        // Both scores are published with one decimal: round the difference back to one decimal
        // so equal gaps (71.1 − 62.8 and 62.8 − 54.5) compare equal despite binary noise.
        deltas.push(super::filters::published((col("eco_score") - lit(score)).abs(), 1).alias("delta_score"));
        keys.insert(0, ("delta_score", false));
    }
    let lf = same_category_scored(snapshot, &base, row, &["ano"])?.with_columns(deltas);
    let df = sorted(lf, &keys).select([col(ROW)]).limit(top).collect()?;
    Ok(Some(row_numbers(&df)?))
}

/// The best alternative to the base (`None`: unknown id; `Some(None)`: nothing better): the
/// vehicle of its categoria with the highest eco score strictly above the base's (any scored one
/// when the base has no score); ties by higher eficienciaMediaReferencia, then id.
pub fn best_alternative(snapshot: &Table, id: &Uuid) -> PolarsResult<Option<Option<RankingItem>>> {
    let Some(row) = snapshot.row_of(id) else { return Ok(None) };
    let base = snapshot.vehicle_at(row);
    let mut lf = same_category_scored(snapshot, &base, row, &["eficiencia_media_referencia"])?;
    if let Some(score) = base.eco_score {
        lf = lf.filter(col("eco_score").gt(lit(score)));
    }
    let df = sorted(lf, &[("eco_score", true), ("eficiencia_media_referencia", true)])
        .select([col(ROW)])
        .limit(1)
        .collect()?;
    Ok(Some(snapshot.rows_of(&df)?.first().map(RankingItem::from)))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::engine::load::load_bytes;
    use crate::engine::views::{CostConfig, Views};
    use crate::sample::generate_catalog;

    /// A generated catalog where every 7th vehicle has neither energy nor CO2 data (no score).
    fn snapshot(rows: usize, seed: u64) -> crate::engine::snapshot::Snapshot {
        let unscored = (col("i") % lit(7)).eq(lit(0));
        let blank = |name: &str| {
            when(unscored.clone()).then(lit(NULL).cast(DataType::Float64)).otherwise(col(name)).alias(name)
        };
        let mut df = generate_catalog(rows, seed)
            .unwrap()
            .lazy()
            .with_row_index("i", None)
            .with_columns([blank("consumo_energetico_mj_km"), blank("co2_fossil_g_km")])
            .drop(cols(["i"]))
            .collect()
            .unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap()
    }

    /// A published one-decimal score in integer tenths, so gaps compare exactly.
    fn tenths(x: f64) -> i64 {
        (x * 10.0).round() as i64
    }

    /// Plain-Rust reference of `similar`.
    fn reference_similar<'a>(all: &'a [Vehicle], base: &Vehicle, top: usize) -> Vec<&'a Vehicle> {
        let mut out: Vec<&Vehicle> =
            all.iter().filter(|v| v.id != base.id && v.categoria == base.categoria && v.eco_score.is_some()).collect();
        let key = |v: &Vehicle| {
            let d_score = base.eco_score.map(|b| (tenths(v.eco_score.unwrap()) - tenths(b)).abs());
            (d_score, (v.ano - base.ano).abs(), v.id)
        };
        out.sort_by_key(|v| key(v));
        out.truncate(top);
        out
    }

    /// Plain-Rust reference of `best_alternative`.
    fn reference_best<'a>(all: &'a [Vehicle], base: &Vehicle) -> Option<&'a Vehicle> {
        let mut out: Vec<&Vehicle> = all
            .iter()
            .filter(|v| v.id != base.id && v.categoria == base.categoria)
            .filter(|v| match (v.eco_score, base.eco_score) {
                (Some(x), Some(b)) => tenths(x) > tenths(b),
                (Some(_), None) => true,
                _ => false,
            })
            .collect();
        out.sort_by(|a, b| {
            let eff = match (a.eficiencia_media_referencia, b.eficiencia_media_referencia) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                (x, y) => y.is_some().cmp(&x.is_some()),
            };
            tenths(b.eco_score.unwrap()).cmp(&tenths(a.eco_score.unwrap())).then(eff).then(a.id.cmp(&b.id))
        });
        out.first().copied()
    }

    #[test]
    fn similar_and_best_alternative_match_a_plain_reference() {
        let s = snapshot(400, 11);
        let all = s.vehicles();
        assert!(all.iter().any(|v| v.eco_score.is_none()), "the fixture should hold unscored vehicles");
        for base in all.iter().take(120) {
            for top in [1, 5, 20] {
                let got = similar(&s, &base.id, top).unwrap().unwrap();
                let want: Vec<Uuid> = reference_similar(&all, base, top as usize).iter().map(|v| v.id).collect();
                let got: Vec<Uuid> = got.iter().map(|r| s.id_at(*r)).collect();
                assert_eq!(got, want, "similar to {} (top {top})", base.id);
            }
            let got = best_alternative(&s, &base.id).unwrap().unwrap().map(|i| i.vehicle_id);
            assert_eq!(got, reference_best(&all, base).map(|v| v.id), "best alternative to {}", base.id);
        }
    }

    #[test]
    fn unknown_ids_are_none() {
        let s = snapshot(30, 3);
        let unknown = Uuid::from_u128(42);
        assert!(summary(&s, &unknown).is_none());
        assert!(eco_score(&s, &unknown).is_none());
        assert!(ranking_positions(&s, &unknown).is_none());
        assert!(similar(&s, &unknown, 5).unwrap().is_none());
        assert!(best_alternative(&s, &unknown).unwrap().is_none());
    }

    #[test]
    fn lookups_copy_the_published_fields() {
        let s = snapshot(30, 5);
        let v = &s.vehicle_at(7);
        let e = eco_score(&s, &v.id).unwrap();
        assert_eq!((e.eco_score, e.faixa.as_deref(), e.source), (v.eco_score, v.eco_faixa.as_deref(), "vw_eco_score"));
        let p = ranking_positions(&s, &v.id).unwrap();
        assert_eq!((p.global, p.na_categoria, p.percentil), (v.posicao_global, v.posicao_categoria, v.percentil));
        let json = serde_json::to_value(summary(&s, &v.id).unwrap()).unwrap();
        assert_eq!(json["summary"]["consumo"]["custo_anual_estimado"], serde_json::json!(v.custo_anual_estimado));
    }
}
