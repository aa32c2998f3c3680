//! The comparison's wire shape (POST /compare).

use serde::Serialize;
use uuid::Uuid;

use crate::engine::compare::{Comparison, Criterion, Direction, CRITERIA};

/// Whether a criterion's best value is its largest or its smallest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = Direction)]
pub enum DirectionName {
    Min,
    Max,
}

/// One comparison criterion: its key and best direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = Criterion)]
pub struct CriterionItem {
    #[schema(example = "eco_score")]
    pub key: &'static str,
    pub direction: DirectionName,
}

impl From<Criterion> for CriterionItem {
    fn from(c: Criterion) -> Self {
        let direction = match c.direction {
            Direction::Min => DirectionName::Min,
            Direction::Max => DirectionName::Max,
        };
        CriterionItem { key: c.key, direction }
    }
}

/// `vehicles[].computed`: the published metrics behind the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Computed {
    pub co2_referencia_g_km: Option<f64>,
    pub eficiencia_media_referencia: Option<f64>,
    pub autonomia_km: Option<f64>,
    pub custo_anual_estimado: Option<f64>,
}

/// One compared vehicle.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ComparedVehicle {
    pub vehicle_id: Uuid,
    pub eco_score: Option<f64>,
    #[schema(value_type = Option<super::labels::FaixaEcoScore>, example = "Bom")]
    pub eco_faixa: Option<String>,
    pub computed: Computed,
}

/// Every vehicle sharing the best value of each criterion (empty when no vehicle has a value),
/// in request order.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct WinnerByCriterion {
    pub eco_score: Vec<Uuid>,
    pub co2_referencia_g_km: Vec<Uuid>,
    pub eficiencia_media_referencia: Vec<Uuid>,
    pub autonomia_km: Vec<Uuid>,
}

/// A criterion whose best value is shared by two or more vehicles.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Tie {
    #[schema(example = "eco_score")]
    pub criterion: &'static str,
    pub vehicle_ids: Vec<Uuid>,
}

/// Requested ids that match no vehicle.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct MissingData {
    pub vehicles_not_found: Vec<Uuid>,
}

/// The overall score of one vehicle.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ScoreGeral {
    pub vehicle_id: Uuid,
    /// Mean over the four criteria of the min-max normalised value (0–100), one decimal.
    pub score_geral_final: f64,
}

/// `summary`: overall scores and the overall winner.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct CompareSummary {
    /// One entry per compared vehicle, in request order.
    pub score_geral: Vec<ScoreGeral>,
    /// Highest score_geral_final, then higher eco score, then id; null when no vehicle was found.
    pub vencedor_geral: Option<Uuid>,
}

/// `data.data` of POST /compare.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[schema(as = Comparison)]
pub struct ComparisonAnswer {
    /// The vehicles found, in request order.
    pub vehicles: Vec<ComparedVehicle>,
    pub criteria: Vec<CriterionItem>,
    pub winner_by_criterion: WinnerByCriterion,
    pub ties: Vec<Tie>,
    pub missing_data: MissingData,
    pub summary: CompareSummary,
}

impl From<&Comparison> for ComparisonAnswer {
    fn from(c: &Comparison) -> Self {
        let vehicles = c
            .vehicles
            .iter()
            .map(|v| ComparedVehicle {
                vehicle_id: v.id,
                eco_score: v.eco_score,
                eco_faixa: v.eco_faixa.clone(),
                computed: Computed {
                    co2_referencia_g_km: v.co2_referencia_g_km,
                    eficiencia_media_referencia: v.eficiencia_media_referencia,
                    autonomia_km: v.autonomia_km,
                    custo_anual_estimado: v.custo_anual_estimado,
                },
            })
            .collect();
        let [eco_score, co2_referencia_g_km, eficiencia_media_referencia, autonomia_km] = c.winners.clone();
        ComparisonAnswer {
            vehicles,
            criteria: CRITERIA.into_iter().map(CriterionItem::from).collect(),
            winner_by_criterion: WinnerByCriterion {
                eco_score,
                co2_referencia_g_km,
                eficiencia_media_referencia,
                autonomia_km,
            },
            ties: c
                .ties()
                .map(|(criterion, ids)| Tie { criterion: criterion.key, vehicle_ids: ids.to_vec() })
                .collect(),
            missing_data: MissingData { vehicles_not_found: c.missing.clone() },
            summary: CompareSummary {
                score_geral: c
                    .vehicles
                    .iter()
                    .zip(&c.scores)
                    .map(|(v, s)| ScoreGeral { vehicle_id: v.id, score_geral_final: *s })
                    .collect(),
                vencedor_geral: c.overall_winner,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_with_the_contract_keys() {
        let ids = [Uuid::from_u128(1), Uuid::from_u128(2)];
        let c = Comparison {
            vehicles: Vec::new(),
            winners: [ids.to_vec(), vec![ids[0]], Vec::new(), ids.to_vec()],
            missing: vec![ids[1]],
            scores: Vec::new(),
            overall_winner: None,
        };
        let json = serde_json::to_value(ComparisonAnswer::from(&c)).unwrap();
        assert_eq!(json["criteria"][1], serde_json::json!({"key": "co2_referencia_g_km", "direction": "min"}));
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys, vec!["vehicles", "criteria", "winner_by_criterion", "ties", "missing_data", "summary"]);
        let tied: Vec<&str> =
            json["ties"].as_array().unwrap().iter().map(|t| t["criterion"].as_str().unwrap()).collect();
        assert_eq!(tied, vec!["eco_score", "autonomia_km"]);
        assert_eq!(json["missing_data"]["vehicles_not_found"], serde_json::json!([ids[1]]));
        assert_eq!(json["summary"]["vencedor_geral"], serde_json::Value::Null);
    }
}
