//! The constants of the published formulas (API-CONTRACT §2): the eco score's weights and index
//! bounds, the pollutant limits, the bands and the decimals of published values. The SQL views
//! read them through `{{placeholders}}` (see [`placeholders`]) and `GET /methodology` publishes
//! them, so the description and the computation cannot drift apart.

use super::publish::GUARD_DECIMALS;

/// Weight of the energy index in the eco score.
pub const PESO_ENERGIA: f64 = 0.45;
/// Weight of the CO2 index in the eco score.
pub const PESO_CO2: f64 = 0.35;
/// Weight of the pollutants index in the eco score.
pub const PESO_POLUENTES: f64 = 0.20;

/// Energy consumption (MJ/km) at and above which the energy index is 0.
pub const ENERGIA_ZERO_MJ_KM: f64 = 3.0;
/// The span (MJ/km) over which the energy index goes from 0 to 100: the index is
/// 100 × (ENERGIA_ZERO_MJ_KM − consumo) / ENERGIA_ESCALA_MJ_KM, clamped to 0–100.
pub const ENERGIA_ESCALA_MJ_KM: f64 = 2.7;
/// Fossil CO2 (g/km) at and above which the CO2 index is 0 (100 at 0 g/km).
pub const CO2_ZERO_G_KM: f64 = 250.0;
/// Reference limits of the pollutants (g/km): the pollutants index is 100 × (1 − the mean of
/// each pollutant divided by its limit), clamped to 0–100.
pub const LIMITE_NMHC_G_KM: f64 = 0.05;
pub const LIMITE_CO_G_KM: f64 = 1.3;
pub const LIMITE_NOX_G_KM: f64 = 0.08;

/// The bands of a published eco score: each holds the scores up to its upper bound (inclusive)
/// above the previous band's; the last has no upper bound.
pub const FAIXAS: [(&str, Option<f64>); 4] =
    [("Baixo", Some(40.0)), ("Regular", Some(60.0)), ("Bom", Some(80.0)), ("Excelente", None)];

/// Decimals of the published metrics, costs and averages.
pub const CASAS_METRICAS: u32 = 2;
/// Decimals of a published eco score.
pub const CASAS_ECO_SCORE: u32 = 1;
/// Decimals kept before the half-to-even tie is decided (see `publish`).
pub const CASAS_GUARDA: u32 = GUARD_DECIMALS;

/// The placeholders of the views and their SQL text (numbers written as Rust prints them, so
/// `0.45` stays `0.45` and `250.0` stays `250.0`).
pub fn placeholders() -> Vec<(&'static str, String)> {
    let band = |i: usize| FAIXAS[i].1.map_or_else(String::new, |v| format!("{v:?}"));
    vec![
        ("{{peso_energia}}", format!("{PESO_ENERGIA:?}")),
        ("{{peso_co2}}", format!("{PESO_CO2:?}")),
        ("{{peso_poluentes}}", format!("{PESO_POLUENTES:?}")),
        ("{{energia_zero_mj_km}}", format!("{ENERGIA_ZERO_MJ_KM:?}")),
        ("{{energia_escala_mj_km}}", format!("{ENERGIA_ESCALA_MJ_KM:?}")),
        ("{{co2_zero_g_km}}", format!("{CO2_ZERO_G_KM:?}")),
        ("{{limite_nmhc_g_km}}", format!("{LIMITE_NMHC_G_KM:?}")),
        ("{{limite_co_g_km}}", format!("{LIMITE_CO_G_KM:?}")),
        ("{{limite_nox_g_km}}", format!("{LIMITE_NOX_G_KM:?}")),
        ("{{faixa_baixo_max}}", band(0)),
        ("{{faixa_regular_max}}", band(1)),
        ("{{faixa_bom_max}}", band(2)),
        ("{{casas_metricas}}", CASAS_METRICAS.to_string()),
        ("{{casas_eco_score}}", CASAS_ECO_SCORE.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_keep_the_literal_text() {
        let p: std::collections::HashMap<_, _> = placeholders().into_iter().collect();
        assert_eq!(p["{{peso_energia}}"], "0.45");
        assert_eq!(p["{{peso_poluentes}}"], "0.2");
        assert_eq!(p["{{co2_zero_g_km}}"], "250.0");
        assert_eq!(p["{{faixa_bom_max}}"], "80.0");
        assert_eq!(p["{{casas_eco_score}}"], "1");
        assert!((PESO_ENERGIA + PESO_CO2 + PESO_POLUENTES - 1.0).abs() < 1e-12);
    }
}
