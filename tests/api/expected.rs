//! The contract's formulas applied to raw fixture rows: the one independent model of the
//! published values that the black-box tests compare the service against.

#![allow(dead_code)]

use crate::common::{round, Row};

fn clamp100(x: f64) -> f64 {
    x.clamp(0.0, 100.0)
}

/// Mean of the values present (null when both are missing).
pub fn mean_present(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some((a + b) / 2.0),
        (a, b) => a.or(b),
    }
}

/// eficiencia_media_referencia before rounding.
pub fn eficiencia_raw(r: &Row) -> Option<f64> {
    mean_present(r.eficiencia_cidade_km_l, r.eficiencia_estrada_km_l)
}

/// Published eficiencia_media_referencia (2 decimals).
pub fn eficiencia(r: &Row) -> Option<f64> {
    eficiencia_raw(r).map(|e| round(e, 2))
}

/// Published consumo_referencia (2 decimals).
pub fn consumo(r: &Row) -> Option<f64> {
    r.consumo_energetico_mj_km.map(|c| round(c, 2))
}

/// Published co2_referencia_g_km (2 decimals).
pub fn co2(r: &Row) -> Option<f64> {
    r.co2_fossil_g_km.map(|c| round(c, 2))
}

/// Published autonomia_km (2 decimals).
pub fn autonomia(r: &Row) -> Option<f64> {
    let km = if r.combustivel_tipo == "Elétrico" {
        r.autonomia_eletrica_km
    } else {
        Some(r.tanque_l? * eficiencia_raw(r)? + r.autonomia_eletrica_km.unwrap_or(0.0))
    };
    km.map(|k| round(k, 2))
}

/// Published eco score (0–100, 1 decimal): indices clamped to 0–100 from the export's unrounded
/// inputs, weights 0.45/0.35/0.20 renormalised over the indices present, null without both
/// energy and CO2 indices; only the score is rounded.
pub fn eco_score(r: &Row) -> Option<f64> {
    eco_score_raw(r).map(|s| round(s, 1))
}

/// The eco score before it is published.
pub fn eco_score_raw(r: &Row) -> Option<f64> {
    let energia = r.consumo_energetico_mj_km.map(|c| clamp100(100.0 * (3.0 - c) / 2.7));
    let indice_co2 = r.co2_fossil_g_km.map(|c| clamp100(100.0 * (250.0 - c) / 250.0));
    let poluentes = match (r.nmhc_g_km, r.co_g_km, r.nox_g_km) {
        (Some(a), Some(b), Some(c)) => Some(clamp100(100.0 * (1.0 - (a / 0.05 + b / 1.3 + c / 0.08) / 3.0))),
        _ => None,
    };
    if energia.is_none() && indice_co2.is_none() {
        return None;
    }
    let (mut num, mut den) = (0.0, 0.0);
    for (index, weight) in [(energia, 0.45), (indice_co2, 0.35), (poluentes, 0.20)] {
        if let Some(i) = index {
            num += weight * i;
            den += weight;
        }
    }
    Some(num / den)
}

/// Published custo_anual_estimado (2 decimals) with the default configuration: 12,000 km/year,
/// gasolina 6.20, etanol 4.10, diesel 6.00, GNV 4.80, kWh 0.85.
pub fn custo(r: &Row) -> Option<f64> {
    let km = 12_000.0;
    let per_unit = |price: f64| eficiencia_raw(r).filter(|e| *e > 0.0).map(|e| km / e * price);
    let cost = match r.combustivel_tipo.as_str() {
        "Elétrico" => r.consumo_energetico_mj_km.map(|c| km * c / 3.6 * 0.85),
        "Flex" => {
            let gas = per_unit(6.20)?;
            let eth = mean_present(r.eficiencia_cidade_etanol_km_l, r.eficiencia_estrada_etanol_km_l)
                .filter(|e| *e > 0.0)
                .map(|e| km / e * 4.10)?;
            Some(gas.min(eth))
        }
        "Gasolina" => per_unit(6.20),
        "Etanol" => per_unit(4.10),
        "Diesel" => per_unit(6.00),
        "GNV" => per_unit(4.80),
        _ => None,
    };
    cost.map(|c| round(c, 2))
}

/// The band of a published score.
pub fn faixa(score: f64) -> &'static str {
    if score <= 40.0 {
        "Baixo"
    } else if score <= 60.0 {
        "Regular"
    } else if score <= 80.0 {
        "Bom"
    } else {
        "Excelente"
    }
}
