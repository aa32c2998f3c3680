//! The constants of the published formulas (API-CONTRACT §2): the eco score's weights and index
//! bounds, the pollutant limits, the bands and the decimals of published values. They live in
//! one analyst-editable file beside the views, `queries/parametros.toml` ([`FILE`]), read with the
//! views at start and on every reload and checked here: the SQL reads them through
//! `{{section.key}}` placeholders (see [`Parametros::placeholders`]), `GET /methodology`
//! publishes them and the engine rounds averages and percentiles with their decimals, so the
//! description and the computation cannot drift apart.

use serde::Deserialize;

use super::publish::GUARD_DECIMALS;

/// The parameters file's name inside the queries folder.
pub const FILE: &str = "parametros.toml";

/// Decimals kept before the half-to-even tie is decided (see `publish`): part of the rounding
/// rule, not a formula constant.
pub const CASAS_GUARDA: u32 = GUARD_DECIMALS;

/// The most decimals a published value may have.
const MAX_CASAS: u32 = 6;

/// `[eco_score]`: the weights of the indices.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pesos {
    pub peso_energia: f64,
    pub peso_co2: f64,
    pub peso_poluentes: f64,
}

/// `[indice_energia]`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndiceEnergia {
    /// Consumption (MJ/km) at and above which the index is 0.
    pub zero_mj_km: f64,
    /// The span (MJ/km) over which the index goes from 0 to 100.
    pub escala_mj_km: f64,
}

/// `[indice_co2]`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndiceCo2 {
    /// Fossil CO2 (g/km) at and above which the index is 0.
    pub zero_g_km: f64,
}

/// `[limites_poluentes]`: reference limits (g/km).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitesPoluentes {
    pub nmhc_g_km: f64,
    pub co_g_km: f64,
    pub nox_g_km: f64,
}

/// `[limites_poluentes_l7]`: the reference limits (g/km) of the pollutants index of a vehicle
/// published from PROCONVE L7 on, with NMOG+NOx together instead of NMHC and NOx apart (used when
/// one of nmhc_g_km, co_g_km, nox_g_km is missing and nmog_nox_g_km and co_g_km are present).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitesPoluentesL7 {
    pub nmog_nox_g_km: f64,
    pub co_g_km: f64,
}

/// The contract's limits (API-CONTRACT §2), for a `parametros.toml` written before the section
/// existed (a dataset kept in the state folder by an earlier release still loads).
impl Default for LimitesPoluentesL7 {
    fn default() -> Self {
        LimitesPoluentesL7 { nmog_nox_g_km: 0.08, co_g_km: 1.0 }
    }
}

/// `[faixas]`: the upper bound (inclusive) of each band but the last.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Faixas {
    pub baixo_ate: f64,
    pub regular_ate: f64,
    pub bom_ate: f64,
}

/// `[casas]`: decimals of published values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Casas {
    /// Metrics, costs and every average.
    pub metricas: u32,
    /// Per-vehicle eco scores, percentiles and score_geral_final.
    pub eco_score: u32,
}

impl Default for Casas {
    /// The contract's decimals (tables built without a parameters file, in unit tests).
    fn default() -> Self {
        Casas { metricas: 2, eco_score: 1 }
    }
}

/// Everything `parametros.toml` holds, checked.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parametros {
    pub eco_score: Pesos,
    pub indice_energia: IndiceEnergia,
    pub indice_co2: IndiceCo2,
    pub limites_poluentes: LimitesPoluentes,
    #[serde(default)]
    pub limites_poluentes_l7: LimitesPoluentesL7,
    pub faixas: Faixas,
    pub casas: Casas,
}

/// The names of the bands, lowest first.
pub const NOMES_FAIXAS: [&str; 4] = ["Baixo", "Regular", "Bom", "Excelente"];

impl Parametros {
    /// Parses and checks the file's text; the error names the key and the rule it breaks.
    pub fn parse(text: &str) -> Result<Parametros, String> {
        let p: Parametros = toml::from_str(text).map_err(|e| format!("{FILE}: {}", e.to_string().trim_end()))?;
        p.check().map_err(|e| format!("{FILE}: {e}"))?;
        Ok(p)
    }

    /// Every number finite; weights >= 0 summing to 1; bounds positive and in order.
    fn check(&self) -> Result<(), String> {
        let Pesos { peso_energia, peso_co2, peso_poluentes } = self.eco_score;
        let numbers = [
            ("eco_score.peso_energia", peso_energia),
            ("eco_score.peso_co2", peso_co2),
            ("eco_score.peso_poluentes", peso_poluentes),
            ("indice_energia.zero_mj_km", self.indice_energia.zero_mj_km),
            ("indice_energia.escala_mj_km", self.indice_energia.escala_mj_km),
            ("indice_co2.zero_g_km", self.indice_co2.zero_g_km),
            ("limites_poluentes.nmhc_g_km", self.limites_poluentes.nmhc_g_km),
            ("limites_poluentes.co_g_km", self.limites_poluentes.co_g_km),
            ("limites_poluentes.nox_g_km", self.limites_poluentes.nox_g_km),
            ("limites_poluentes_l7.nmog_nox_g_km", self.limites_poluentes_l7.nmog_nox_g_km),
            ("limites_poluentes_l7.co_g_km", self.limites_poluentes_l7.co_g_km),
            ("faixas.baixo_ate", self.faixas.baixo_ate),
            ("faixas.regular_ate", self.faixas.regular_ate),
            ("faixas.bom_ate", self.faixas.bom_ate),
        ];
        for (key, v) in numbers {
            if !v.is_finite() {
                return Err(format!("{key} must be a finite number (got {v})"));
            }
        }
        for (key, v) in &numbers[..3] {
            if *v < 0.0 {
                return Err(format!("{key} must be >= 0 (got {v})"));
            }
        }
        let sum = peso_energia + peso_co2 + peso_poluentes;
        if (sum - 1.0).abs() > 1e-9 {
            return Err(format!(
                "eco_score.peso_energia + peso_co2 + peso_poluentes must sum to 1 (they sum to {sum})"
            ));
        }
        if peso_energia + peso_co2 == 0.0 {
            return Err("eco_score.peso_energia and peso_co2 cannot both be 0 (a score needs one of them)".into());
        }
        for (key, v) in &numbers[4..11] {
            if *v <= 0.0 {
                return Err(format!("{key} must be > 0 (got {v})"));
            }
        }
        let e = self.indice_energia;
        if e.escala_mj_km > e.zero_mj_km {
            return Err(format!(
                "indice_energia.escala_mj_km ({}) must not exceed indice_energia.zero_mj_km ({}): the index would \
                 reach 100 only below 0 MJ/km",
                e.escala_mj_km, e.zero_mj_km
            ));
        }
        let f = self.faixas;
        let edges = [
            (0.0, "0"),
            (f.baixo_ate, "faixas.baixo_ate"),
            (f.regular_ate, "faixas.regular_ate"),
            (f.bom_ate, "faixas.bom_ate"),
            (100.0, "100"),
        ];
        for pair in edges.windows(2) {
            let ((lo, lo_name), (hi, hi_name)) = (pair[0], pair[1]);
            if lo >= hi {
                let key = if hi_name == "100" { lo_name } else { hi_name };
                return Err(format!("{key}: the bands must be in order, 0 < baixo_ate < regular_ate < bom_ate < 100 ({lo_name} = {lo}, {hi_name} = {hi})"));
            }
        }
        for (key, v) in [("casas.metricas", self.casas.metricas), ("casas.eco_score", self.casas.eco_score)] {
            if v > MAX_CASAS {
                return Err(format!("{key} must be between 0 and {MAX_CASAS} (got {v})"));
            }
        }
        Ok(())
    }

    /// The bands: name and upper bound (inclusive; `None` for the last).
    pub fn faixas(&self) -> [(&'static str, Option<f64>); 4] {
        let f = self.faixas;
        [
            (NOMES_FAIXAS[0], Some(f.baixo_ate)),
            (NOMES_FAIXAS[1], Some(f.regular_ate)),
            (NOMES_FAIXAS[2], Some(f.bom_ate)),
            (NOMES_FAIXAS[3], None),
        ]
    }

    /// The placeholders of the views (`{{section.key}}`) and their SQL text: numbers written as
    /// Rust prints them (always with a decimal point, so Polars SQL reads a float), decimals as
    /// integers.
    pub fn placeholders(&self) -> Vec<(String, String)> {
        let number = |v: f64| {
            let text = format!("{v:?}");
            if text.contains(['.', 'e']) {
                text
            } else {
                format!("{text}.0")
            }
        };
        let p = self;
        let floats = [
            ("eco_score.peso_energia", p.eco_score.peso_energia),
            ("eco_score.peso_co2", p.eco_score.peso_co2),
            ("eco_score.peso_poluentes", p.eco_score.peso_poluentes),
            ("indice_energia.zero_mj_km", p.indice_energia.zero_mj_km),
            ("indice_energia.escala_mj_km", p.indice_energia.escala_mj_km),
            ("indice_co2.zero_g_km", p.indice_co2.zero_g_km),
            ("limites_poluentes.nmhc_g_km", p.limites_poluentes.nmhc_g_km),
            ("limites_poluentes.co_g_km", p.limites_poluentes.co_g_km),
            ("limites_poluentes.nox_g_km", p.limites_poluentes.nox_g_km),
            ("limites_poluentes_l7.nmog_nox_g_km", p.limites_poluentes_l7.nmog_nox_g_km),
            ("limites_poluentes_l7.co_g_km", p.limites_poluentes_l7.co_g_km),
            ("faixas.baixo_ate", p.faixas.baixo_ate),
            ("faixas.regular_ate", p.faixas.regular_ate),
            ("faixas.bom_ate", p.faixas.bom_ate),
        ];
        let mut out: Vec<(String, String)> = floats.iter().map(|(k, v)| (format!("{{{{{k}}}}}"), number(*v))).collect();
        out.push(("{{casas.metricas}}".into(), p.casas.metricas.to_string()));
        out.push(("{{casas.eco_score}}".into(), p.casas.eco_score.to_string()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/queries/parametros.toml")).unwrap()
    }

    #[test]
    fn the_shipped_file_holds_the_contracts_constants() {
        let p = Parametros::parse(&shipped()).unwrap();
        assert_eq!((p.eco_score.peso_energia, p.eco_score.peso_co2, p.eco_score.peso_poluentes), (0.45, 0.35, 0.20));
        assert_eq!(
            (p.indice_energia.zero_mj_km, p.indice_energia.escala_mj_km, p.indice_co2.zero_g_km),
            (3.0, 2.7, 250.0)
        );
        assert_eq!(
            (p.limites_poluentes.nmhc_g_km, p.limites_poluentes.co_g_km, p.limites_poluentes.nox_g_km),
            (0.05, 1.3, 0.08)
        );
        assert_eq!((p.limites_poluentes_l7.nmog_nox_g_km, p.limites_poluentes_l7.co_g_km), (0.08, 1.0));
        assert_eq!(
            p.faixas(),
            [("Baixo", Some(40.0)), ("Regular", Some(60.0)), ("Bom", Some(80.0)), ("Excelente", None)]
        );
        assert_eq!(p.casas, Casas::default());
        let ph: std::collections::HashMap<_, _> = p.placeholders().into_iter().collect();
        assert_eq!(ph["{{eco_score.peso_energia}}"], "0.45");
        assert_eq!(ph["{{eco_score.peso_poluentes}}"], "0.2");
        assert_eq!(ph["{{indice_co2.zero_g_km}}"], "250.0");
        assert_eq!(ph["{{casas.eco_score}}"], "1");
        assert_eq!(ph["{{limites_poluentes_l7.nmog_nox_g_km}}"], "0.08");
        assert_eq!(ph["{{limites_poluentes_l7.co_g_km}}"], "1.0");
    }

    #[test]
    fn each_broken_rule_names_its_key() {
        let base = shipped();
        let cases = [
            ("peso_co2 = 0.35", "peso_co2 = 0.40", "sum to 1"),
            ("peso_co2 = 0.35", "peso_co2 = \"0.35\"", "peso_co2"),
            ("peso_co2 = 0.35", "peso_co2 = nan", "eco_score.peso_co2 must be a finite"),
            ("peso_energia = 0.45", "peso_energia = -0.05", "eco_score.peso_energia must be >= 0"),
            ("zero_g_km = 250.0", "zero_g_km = 0.0", "indice_co2.zero_g_km must be > 0"),
            ("escala_mj_km = 2.7", "escala_mj_km = 3.5", "indice_energia.escala_mj_km"),
            ("regular_ate = 60.0", "regular_ate = 30.0", "faixas.regular_ate"),
            ("bom_ate = 80.0", "bom_ate = 100.0", "faixas.bom_ate"),
            ("metricas = 2", "metricas = 9", "casas.metricas"),
            ("nox_g_km = 0.08", "nox_g_km = 0.08\nso2_g_km = 0.1", "so2_g_km"),
            ("nox_g_km = 0.08", "", "nox_g_km"),
            ("nmog_nox_g_km = 0.08", "nmog_nox_g_km = 0.0", "limites_poluentes_l7.nmog_nox_g_km must be > 0"),
            ("co_g_km = 1.0", "co_g_km = -1.0", "limites_poluentes_l7.co_g_km must be > 0"),
            ("co_g_km = 1.0", "co_g_km = inf", "limites_poluentes_l7.co_g_km must be a finite"),
            ("nmog_nox_g_km = 0.08", "", "nmog_nox_g_km"),
            ("[limites_poluentes_l7]", "[limites_poluentes_l8]", "limites_poluentes"),
        ];
        for (from, to, needle) in cases {
            assert!(base.contains(from), "{from}");
            let err = Parametros::parse(&base.replacen(from, to, 1)).unwrap_err();
            assert!(err.starts_with(FILE) && err.contains(needle), "{to}: {err}");
        }
    }
}
