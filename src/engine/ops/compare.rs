//! Side-by-side comparison of 2–4 vehicles (API-CONTRACT §4, POST /compare): winners and ties
//! per criterion and an overall score from min-max normalised published values.

use uuid::Uuid;

use crate::engine::dataset::table::{Table, Vehicle};

/// Whether a criterion's best value is its largest or its smallest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Min,
    Max,
}

/// One comparison criterion: its key and best direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Criterion {
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

/// The comparison of the found vehicles.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The vehicles found, in request order, each once.
    pub vehicles: Vec<Vehicle>,
    /// Per criterion of [`CRITERIA`] (same order): the vehicles holding the best value, in
    /// `vehicles` order; empty when none has a value.
    pub winners: [Vec<Uuid>; 4],
    /// The requested ids not in the catalog, in request order, each once.
    pub missing: Vec<Uuid>,
    /// `score_geral_final` of each vehicle, in `vehicles` order (one decimal).
    pub scores: Vec<f64>,
    /// Highest overall score; ties by higher eco score, then lower id.
    pub overall_winner: Option<Uuid>,
}

impl Comparison {
    /// The criteria won by two vehicles or more, with their winners.
    pub fn ties(&self) -> impl Iterator<Item = (Criterion, &[Uuid])> {
        CRITERIA.into_iter().zip(&self.winners).filter(|(_, w)| w.len() >= 2).map(|(c, w)| (c, w.as_slice()))
    }
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
    compare_vehicles(found, missing, snapshot.casas.eco_score)
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
/// `score_geral_final` is published with `decimals` (`[casas] eco_score`).
pub fn compare_vehicles(vehicles: Vec<Vehicle>, missing: Vec<Uuid>, decimals: u32) -> Comparison {
    let found: Vec<&Vehicle> = vehicles.iter().collect();
    let winners = CRITERIA.map(|c| winners(&found, c));
    let scores: Vec<f64> = found
        .iter()
        .map(|v| {
            let sum: f64 = CRITERIA.iter().map(|&c| normalised(&found, v, c)).sum();
            crate::engine::dataset::publish::round_published(sum / CRITERIA.len() as f64, decimals)
        })
        .collect();
    let overall_winner = found
        .iter()
        .zip(&scores)
        .max_by(|(a, sa), (b, sb)| {
            sa.total_cmp(sb).then_with(|| cmp_score(a.eco_score, b.eco_score)).then_with(|| b.id.cmp(&a.id))
        })
        .map(|(v, _)| v.id);
    Comparison { vehicles, winners, missing, scores, overall_winner }
}

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
            nmog_nox_g_km: None,
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
        let r = compare_vehicles(vec![a, b, c], vec![id(9)], 1);
        assert_eq!(r.winners[0], vec![id(1), id(2)]);
        assert_eq!(r.winners[1], vec![id(1), id(2)]);
        assert_eq!(r.winners[2], vec![id(1)]);
        assert_eq!(r.winners[3], vec![id(3)]);
        let tied: Vec<&str> = r.ties().map(|(c, _)| c.key).collect();
        assert_eq!(tied, vec!["eco_score", "co2_referencia_g_km"]);
        let scores = r.scores.clone();
        // a: 100 + 100 + 100 + 100·100/330; b: 100 + 100 + 0 + 0; c: 0 + 0 + 0 + 100.
        assert_eq!(scores, vec![82.6, 50.0, 25.0]);
        assert_eq!(r.overall_winner, Some(id(1)));
        assert_eq!(r.missing, vec![id(9)]);
    }

    #[test]
    fn overall_ties_break_on_eco_score_then_id() {
        // Each wins two criteria: 50 / 50, the higher eco score wins although its id is larger.
        let a = vehicle(1, Some(60.0), Some(120.0), Some(14.0), Some(700.0));
        let b = vehicle(2, Some(65.0), Some(110.0), Some(12.0), Some(600.0));
        let r = compare_vehicles(vec![a, b], vec![], 1);
        assert_eq!(r.overall_winner, Some(id(2)));
        // Identical vehicles: every criterion tied, 100 each, the lower id wins.
        let c = vehicle(5, Some(60.0), Some(120.0), Some(14.0), Some(700.0));
        let d = vehicle(4, Some(60.0), Some(120.0), Some(14.0), Some(700.0));
        let r = compare_vehicles(vec![c, d], vec![], 1);
        assert_eq!(r.overall_winner, Some(id(4)));
        assert_eq!(r.ties().count(), 4);
        assert!(r.scores.iter().all(|s| *s == 100.0));
    }

    #[test]
    fn nulls_score_zero_and_empty_comparison_has_no_winner() {
        let a = vehicle(1, None, None, None, None);
        let b = vehicle(2, None, None, Some(10.0), None);
        let r = compare_vehicles(vec![a, b], vec![], 1);
        assert!(r.winners[0].is_empty());
        assert_eq!(r.winners[2], vec![id(2)]);
        let scores = r.scores.clone();
        assert_eq!(scores, vec![0.0, 25.0]);
        assert_eq!(r.ties().count(), 0);
        let r = compare_vehicles(vec![], vec![id(7), id(8)], 1);
        assert_eq!(r.overall_winner, None);
        assert!(r.vehicles.is_empty() && r.scores.is_empty());
        assert_eq!(r.missing, vec![id(7), id(8)]);
    }
}
