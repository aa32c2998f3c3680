//! Side-by-side comparison of 2–4 vehicles (API-CONTRACT §4, POST /compare): winners and ties
//! per criterion and an overall score from min-max normalised published values.

use serde::Serialize;
use uuid::Uuid;

use crate::engine::dataset::table::{Table, Vehicle};

/// Whether a criterion's best value is its largest or its smallest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Min,
    Max,
}

/// One comparison criterion: its key and best direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Criterion {
    #[schema(example = "eco_score")]
    pub key: &'static str,
    pub direction: Direction,
}

/// The criteria, in the contract's order.
pub const CRITERIA: [Criterion; 4] = [
    Criterion { key: "eco_score", direction: Direction::Max },
    Criterion { key: "co2_referencia_g_km", direction: Direction::Min },
    Criterion { key: "eficiencia_media_referencia", direction: Direction::Max },
    Criterion { key: "autonomia_km", direction: Direction::Max },
];

/// The published value of a criterion for one vehicle.
fn value(v: &Vehicle, key: &str) -> Option<f64> {
    match key {
        "eco_score" => v.eco_score,
        "co2_referencia_g_km" => v.co2_referencia_g_km,
        "eficiencia_media_referencia" => v.eficiencia_media_referencia,
        "autonomia_km" => v.autonomia_km,
        _ => None,
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
pub struct Comparison {
    /// The vehicles found, in request order.
    pub vehicles: Vec<ComparedVehicle>,
    pub criteria: Vec<Criterion>,
    pub winner_by_criterion: WinnerByCriterion,
    pub ties: Vec<Tie>,
    pub missing_data: MissingData,
    pub summary: CompareSummary,
}

/// Publishes a score at one decimal with the service's one rounding rule.
fn round1(x: f64) -> f64 {
    crate::engine::dataset::publish::round_published(x, 1)
}

/// Compares the vehicles of `ids` (request order); unknown ids are reported, not fatal.
pub fn compare(snapshot: &Table, ids: &[Uuid]) -> Comparison {
    let mut found: Vec<Vehicle> = Vec::new();
    let mut missing = Vec::new();
    for id in ids {
        match snapshot.vehicle(id) {
            Some(v) if !found.iter().any(|f| f.id == v.id) => found.push(v),
            Some(_) => {}
            None if !missing.contains(id) => missing.push(*id),
            None => {}
        }
    }
    let found: Vec<&Vehicle> = found.iter().collect();
    compare_vehicles(&found, missing)
}

/// The vehicles sharing the best value of `criterion` (empty when none has a value).
fn winners(found: &[&Vehicle], criterion: Criterion) -> Vec<Uuid> {
    let values = found.iter().filter_map(|v| value(v, criterion.key));
    let best = match criterion.direction {
        Direction::Max => values.reduce(f64::max),
        Direction::Min => values.reduce(f64::min),
    };
    let Some(best) = best else { return Vec::new() };
    found.iter().filter(|v| value(v, criterion.key) == Some(best)).map(|v| v.id).collect()
}

/// Min-max normalised value of `v` for `criterion` among `found`: 0–100 with the best direction
/// at 100, 100 when every present value is equal, 0 when `v` has no value.
fn normalised(found: &[&Vehicle], v: &Vehicle, criterion: Criterion) -> f64 {
    let Some(x) = value(v, criterion.key) else { return 0.0 };
    let values: Vec<f64> = found.iter().filter_map(|o| value(o, criterion.key)).collect();
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == min {
        return 100.0;
    }
    match criterion.direction {
        Direction::Max => 100.0 * (x - min) / (max - min),
        Direction::Min => 100.0 * (max - x) / (max - min),
    }
}

/// The comparison of vehicles already looked up (request order, no duplicates).
pub fn compare_vehicles(found: &[&Vehicle], missing: Vec<Uuid>) -> Comparison {
    let vehicles = found
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

    let [eco, co2, efic, autonomia] = CRITERIA.map(|c| winners(found, c));
    let ties = CRITERIA
        .iter()
        .zip([&eco, &co2, &efic, &autonomia])
        .filter(|(_, w)| w.len() >= 2)
        .map(|(c, w)| Tie { criterion: c.key, vehicle_ids: w.clone() })
        .collect();

    let score_geral: Vec<ScoreGeral> = found
        .iter()
        .map(|v| {
            let sum: f64 = CRITERIA.iter().map(|&c| normalised(found, v, c)).sum();
            ScoreGeral { vehicle_id: v.id, score_geral_final: round1(sum / CRITERIA.len() as f64) }
        })
        .collect();
    let vencedor_geral = found
        .iter()
        .zip(&score_geral)
        .max_by(|(a, sa), (b, sb)| {
            sa.score_geral_final
                .total_cmp(&sb.score_geral_final)
                .then_with(|| cmp_score(a.eco_score, b.eco_score))
                // Lower id wins, so it must compare as the greater one.
                .then_with(|| b.id.cmp(&a.id))
        })
        .map(|(v, _)| v.id);

    Comparison {
        vehicles,
        criteria: CRITERIA.to_vec(),
        winner_by_criterion: WinnerByCriterion {
            eco_score: eco,
            co2_referencia_g_km: co2,
            eficiencia_media_referencia: efic,
            autonomia_km: autonomia,
        },
        ties,
        missing_data: MissingData { vehicles_not_found: missing },
        summary: CompareSummary { score_geral, vencedor_geral },
    }
}

/// Orders eco scores with a missing score below every present one.
fn cmp_score(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (a, b) => a.is_some().cmp(&b.is_some()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vehicle(n: u128, eco: Option<f64>, co2: Option<f64>, efic: Option<f64>, autonomia: Option<f64>) -> Vehicle {
        Vehicle {
            id: Uuid::from_u128(n),
            marca: "M".into(),
            modelo: "X".into(),
            versao: "V".into(),
            ano: 2020,
            categoria: "C".into(),
            motor: None,
            tipo_propulsao: "Combustão".into(),
            combustivel_tipo: "Flex".into(),
            transmissao_tipo: None,
            transmissao_marchas: None,
            ar_condicionado: None,
            direcao_assistida_tipo: "Elétrica".into(),
            eficiencia_cidade_km_l: None,
            eficiencia_estrada_km_l: None,
            eficiencia_cidade_etanol_km_l: None,
            eficiencia_estrada_etanol_km_l: None,
            consumo_energetico_mj_km: None,
            co2_fossil_g_km: co2,
            nmhc_g_km: None,
            co_g_km: None,
            nox_g_km: None,
            autonomia_eletrica_km: None,
            tanque_l: None,
            classificacao_pbe_categoria: None,
            classificacao_pbe_geral: None,
            eficiencia_media_referencia: efic,
            consumo_referencia: None,
            co2_referencia_g_km: co2,
            autonomia_km: autonomia,
            custo_anual_estimado: None,
            eco_score: eco,
            eco_faixa: None,
            posicao_global: None,
            posicao_categoria: None,
            posicao_combustivel: None,
            percentil: None,
        }
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn winners_ties_and_scores() {
        let a = vehicle(1, Some(70.0), Some(100.0), Some(13.0), Some(650.0));
        let b = vehicle(2, Some(70.0), Some(100.0), Some(11.0), Some(550.0));
        let c = vehicle(3, None, None, Some(11.0), Some(880.0));
        let r = compare_vehicles(&[&a, &b, &c], vec![id(9)]);
        assert_eq!(r.winner_by_criterion.eco_score, vec![id(1), id(2)]);
        assert_eq!(r.winner_by_criterion.co2_referencia_g_km, vec![id(1), id(2)]);
        assert_eq!(r.winner_by_criterion.eficiencia_media_referencia, vec![id(1)]);
        assert_eq!(r.winner_by_criterion.autonomia_km, vec![id(3)]);
        let tied: Vec<&str> = r.ties.iter().map(|t| t.criterion).collect();
        assert_eq!(tied, vec!["eco_score", "co2_referencia_g_km"]);
        let scores: Vec<f64> = r.summary.score_geral.iter().map(|s| s.score_geral_final).collect();
        // a: 100 + 100 + 100 + 100·100/330; b: 100 + 100 + 0 + 0; c: 0 + 0 + 0 + 100.
        assert_eq!(scores, vec![82.6, 50.0, 25.0]);
        assert_eq!(r.summary.vencedor_geral, Some(id(1)));
        assert_eq!(r.missing_data.vehicles_not_found, vec![id(9)]);
    }

    #[test]
    fn overall_ties_break_on_eco_score_then_id() {
        // Each wins two criteria: 50 / 50, the higher eco score wins although its id is larger.
        let a = vehicle(1, Some(60.0), Some(120.0), Some(14.0), Some(700.0));
        let b = vehicle(2, Some(65.0), Some(110.0), Some(12.0), Some(600.0));
        let r = compare_vehicles(&[&a, &b], vec![]);
        assert_eq!(r.summary.vencedor_geral, Some(id(2)));
        // Identical vehicles: every criterion tied, 100 each, the lower id wins.
        let c = vehicle(5, Some(60.0), Some(120.0), Some(14.0), Some(700.0));
        let d = vehicle(4, Some(60.0), Some(120.0), Some(14.0), Some(700.0));
        let r = compare_vehicles(&[&c, &d], vec![]);
        assert_eq!(r.summary.vencedor_geral, Some(id(4)));
        assert_eq!(r.ties.len(), 4);
        assert!(r.summary.score_geral.iter().all(|s| s.score_geral_final == 100.0));
    }

    #[test]
    fn nulls_score_zero_and_empty_comparison_has_no_winner() {
        let a = vehicle(1, None, None, None, None);
        let b = vehicle(2, None, None, Some(10.0), None);
        let r = compare_vehicles(&[&a, &b], vec![]);
        assert!(r.winner_by_criterion.eco_score.is_empty());
        assert_eq!(r.winner_by_criterion.eficiencia_media_referencia, vec![id(2)]);
        let scores: Vec<f64> = r.summary.score_geral.iter().map(|s| s.score_geral_final).collect();
        assert_eq!(scores, vec![0.0, 25.0]);
        assert!(r.ties.is_empty());
        let r = compare_vehicles(&[], vec![id(7), id(8)]);
        assert_eq!(r.summary.vencedor_geral, None);
        assert!(r.vehicles.is_empty() && r.summary.score_geral.is_empty());
        assert_eq!(r.criteria.len(), 4);
    }

    #[test]
    fn serialises_with_the_contract_keys() {
        let a = vehicle(1, Some(50.0), Some(100.0), None, None);
        let json = serde_json::to_value(compare_vehicles(&[&a], vec![])).unwrap();
        assert_eq!(json["criteria"][1], serde_json::json!({"key": "co2_referencia_g_km", "direction": "min"}));
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys, vec!["vehicles", "criteria", "winner_by_criterion", "ties", "missing_data", "summary"]);
    }
}
