//! The per-vehicle answers' wire shapes: summary, eco score and ranking positions.

use serde::Serialize;
use uuid::Uuid;

use super::catalog::CatalogVehicle;
use crate::engine::table::Vehicle;
use crate::engine::views::FINAL_VIEW;

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
    /// NMOG+NOx together, g/km, as the tables from PROCONVE L7 on publish them (null when the
    /// export has no such value); the pollutants index reads it with co_g_km when one of
    /// nmhc_g_km, co_g_km and nox_g_km is missing.
    pub nmog_nox_g_km: Option<f64>,
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
                    nmog_nox_g_km: v.nmog_nox_g_km,
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use polars::prelude::*;

    use super::*;
    use crate::engine::load::load_bytes;
    use crate::engine::views::{CostConfig, Views};
    use crate::sample::generate_catalog;

    #[test]
    fn views_copy_the_published_fields() {
        let mut df = generate_catalog(30, 5).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        let s = load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap();
        let v = &s.vehicle_at(7);
        let e = VehicleEcoScore::from(v);
        assert_eq!((e.eco_score, e.faixa.as_deref(), e.source), (v.eco_score, v.eco_faixa.as_deref(), "vw_eco_score"));
        let p = RankingPositions::from(v);
        assert_eq!((p.global, p.na_categoria, p.percentil), (v.posicao_global, v.posicao_categoria, v.percentil));
        let json = serde_json::to_value(VehicleSummary::from(v)).unwrap();
        assert_eq!(json["summary"]["consumo"]["custo_anual_estimado"], serde_json::json!(v.custo_anual_estimado));
        assert_eq!(json["summary"]["veiculo"]["id"], serde_json::json!(v.id));
    }
}
