//! Deterministic synthetic catalog generator shaped like the INMETRO PBEV vehicle table.
//!
//! [`generate_catalog`] builds a frame with the service's input schema (see the column list in
//! [`COLUMNS`]) from a hand-written Brazilian light-vehicle model table plus a small in-file PRNG
//! (`xoshiro256**` seeded through SplitMix64), so the same `(rows, seed)` always yields the same frame.
//! [`write_parquet`] persists a frame as Parquet (zstd, column statistics on).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context as _;
use polars::prelude::*;
use uuid::Uuid;

/// Output column names, in frame order.
pub const COLUMNS: [&str; 26] = [
    "id",
    "marca",
    "modelo",
    "versao",
    "categoria",
    "ano",
    "motor",
    "tipo_propulsao",
    "combustivel_tipo",
    "transmissao_tipo",
    "transmissao_marchas",
    "ar_condicionado",
    "direcao_assistida_tipo",
    "eficiencia_cidade_km_l",
    "eficiencia_estrada_km_l",
    "eficiencia_cidade_etanol_km_l",
    "eficiencia_estrada_etanol_km_l",
    "consumo_energetico_mj_km",
    "co2_fossil_g_km",
    "nmhc_g_km",
    "co_g_km",
    "nox_g_km",
    "autonomia_eletrica_km",
    "tanque_l",
    "classificacao_pbe_categoria",
    "classificacao_pbe_geral",
];

// ---------------------------------------------------------------------------------------------
// PRNG
// ---------------------------------------------------------------------------------------------

/// xoshiro256** seeded through SplitMix64. Small, fast and fully deterministic.
struct Rng {
    s: [u64; 4],
}

impl Rng {
    fn new(seed: u64) -> Self {
        let mut sm = seed;
        let mut next = || {
            sm = sm.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = sm;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let s = [next(), next(), next(), next()];
        Rng { s }
    }

    fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi).
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }

    /// Uniform integer in 0..n (n > 0).
    fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Uniform integer in lo..=hi.
    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        debug_assert!(lo <= hi);
        lo + self.below((hi - lo + 1) as usize) as i32
    }

    fn choice<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Index drawn proportionally to `weights` (all >= 0, sum > 0).
    fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = self.f64() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= *w;
        }
        weights.len() - 1
    }

    /// Picks one of `(value, weight)` pairs.
    fn pick<T: Copy>(&mut self, items: &[(T, f64)]) -> T {
        let total: f64 = items.iter().map(|(_, w)| *w).sum();
        let mut x = self.f64() * total;
        for (v, w) in items {
            if x < *w {
                return *v;
            }
            x -= *w;
        }
        items[items.len() - 1].0
    }

    fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }
}

// ---------------------------------------------------------------------------------------------
// Domain vocabulary
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cat {
    Sub,
    Comp,
    Med,
    Gra,
    ExG,
    Uec,
    Ueg,
    Fde,
    Minivan,
    Com,
    PicC,
    Pic,
    Esp,
}

const ALL_CATS: [Cat; 13] = [
    Cat::Sub,
    Cat::Comp,
    Cat::Med,
    Cat::Gra,
    Cat::ExG,
    Cat::Uec,
    Cat::Ueg,
    Cat::Fde,
    Cat::Minivan,
    Cat::Com,
    Cat::PicC,
    Cat::Pic,
    Cat::Esp,
];

impl Cat {
    fn name(self) -> &'static str {
        match self {
            Cat::Sub => "Subcompacto",
            Cat::Comp => "Compacto",
            Cat::Med => "Médio",
            Cat::Gra => "Grande",
            Cat::ExG => "Extra Grande",
            Cat::Uec => "Utilitário Esportivo Compacto",
            Cat::Ueg => "Utilitário Esportivo Grande",
            Cat::Fde => "Fora de Estrada",
            Cat::Minivan => "Minivan",
            Cat::Com => "Comercial",
            Cat::PicC => "Picape Compacta",
            Cat::Pic => "Picape",
            Cat::Esp => "Esportivo",
        }
    }

    fn ordinal(self) -> usize {
        ALL_CATS.iter().position(|c| *c == self).unwrap_or(0)
    }

    /// Typical gasoline city km/l of a mainstream engine in this class (before the engine factor).
    fn gasoline_city_base(self) -> f64 {
        match self {
            Cat::Sub => 13.6,
            Cat::Comp => 12.6,
            Cat::Med => 11.8,
            Cat::Gra => 10.0,
            Cat::ExG => 8.8,
            Cat::Uec => 11.0,
            Cat::Ueg => 9.6,
            Cat::Fde => 8.8,
            Cat::Minivan => 10.4,
            Cat::Com => 10.6,
            Cat::PicC => 11.4,
            Cat::Pic => 9.0,
            Cat::Esp => 8.0,
        }
    }

    /// Typical diesel city km/l in this class.
    fn diesel_city_base(self) -> f64 {
        match self {
            Cat::Pic => 9.8,
            Cat::Ueg => 10.0,
            Cat::Fde => 9.2,
            Cat::Com => 10.4,
            Cat::Uec => 11.0,
            _ => 10.2,
        }
    }

    fn typical_tank(self) -> f64 {
        match self {
            Cat::Sub => 47.0,
            Cat::Comp => 50.0,
            Cat::Med => 52.0,
            Cat::Gra => 60.0,
            Cat::ExG => 75.0,
            Cat::Uec => 52.0,
            Cat::Ueg => 65.0,
            Cat::Fde => 65.0,
            Cat::Minivan => 55.0,
            Cat::Com => 60.0,
            Cat::PicC => 55.0,
            Cat::Pic => 76.0,
            Cat::Esp => 64.0,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Prop {
    Comb,
    Hev,
    Phev,
    Ev,
}

impl Prop {
    fn name(self) -> &'static str {
        match self {
            Prop::Comb => "Combustão",
            Prop::Hev => "Híbrido",
            Prop::Phev => "Híbrido Plug-in",
            Prop::Ev => "Elétrico",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fuel {
    Flex,
    Gasolina,
    Diesel,
    Eletrico,
    Etanol,
    Gnv,
}

impl Fuel {
    fn name(self) -> &'static str {
        match self {
            Fuel::Flex => "Flex",
            Fuel::Gasolina => "Gasolina",
            Fuel::Diesel => "Diesel",
            Fuel::Eletrico => "Elétrico",
            Fuel::Etanol => "Etanol",
            Fuel::Gnv => "GNV",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Trans {
    Manual,
    Automatica,
    Cvt,
    Automatizada,
}

impl Trans {
    fn name(self) -> &'static str {
        match self {
            Trans::Manual => "Manual",
            Trans::Automatica => "Automática",
            Trans::Cvt => "CVT",
            Trans::Automatizada => "Automatizada",
        }
    }

    fn abbr(self) -> &'static str {
        match self {
            Trans::Manual => "MT",
            Trans::Automatica => "AT",
            Trans::Cvt => "CVT",
            Trans::Automatizada => "AMT",
        }
    }
}

/// (transmission, gears); gears == 0 means "no fixed ratio count" (stored as null).
type Gearbox = &'static [(Trans, i32)];

const M5: Gearbox = &[(Trans::Manual, 5)];
const M6: Gearbox = &[(Trans::Manual, 6)];
const A6: Gearbox = &[(Trans::Automatica, 6)];
const A7: Gearbox = &[(Trans::Automatica, 7)];
const A8: Gearbox = &[(Trans::Automatica, 8)];
const A9: Gearbox = &[(Trans::Automatica, 9)];
const A10: Gearbox = &[(Trans::Automatica, 10)];
const CV: Gearbox = &[(Trans::Cvt, 0)];
const M5A6: Gearbox = &[(Trans::Manual, 5), (Trans::Automatica, 6)];
const M6A6: Gearbox = &[(Trans::Manual, 6), (Trans::Automatica, 6)];
const M5CV: Gearbox = &[(Trans::Manual, 5), (Trans::Cvt, 0)];
const M6CV: Gearbox = &[(Trans::Manual, 6), (Trans::Cvt, 0)];
const M5AM5: Gearbox = &[(Trans::Manual, 5), (Trans::Automatizada, 5)];
const M6A8: Gearbox = &[(Trans::Manual, 6), (Trans::Automatica, 8)];
const DCT6: Gearbox = &[(Trans::Automatizada, 6)];
const DCT7: Gearbox = &[(Trans::Automatizada, 7)];
const E1: Gearbox = &[(Trans::Automatica, 1)];

/// One powertrain offer of a model.
#[derive(Clone, Copy, Debug)]
struct Pt {
    motor: &'static str,
    prop: Prop,
    fuel: Fuel,
    /// Efficiency factor relative to the class/propulsion baseline.
    k: f64,
    gearbox: Gearbox,
    y0: i32,
    y1: i32,
    /// Nominal electric range (km) for EV / PHEV, 0 otherwise.
    range_km: f64,
    w: f64,
}

impl Pt {
    fn w(mut self, w: f64) -> Self {
        self.w = w;
        self
    }
}

struct Model {
    marca: &'static str,
    modelo: &'static str,
    cat: Cat,
    /// Relative frequency in the catalog.
    w: f64,
    /// Fuel tank (L) for the non-electric versions; 0 = class default.
    tank: f64,
    trims: Vec<&'static str>,
    pts: Vec<Pt>,
}

/// The model table, a data file read at build time (see its header for the format).
const MODELS: &str = include_str!("models.txt");

/// A gearbox by its name in the model table.
fn gearbox(name: &str) -> Option<Gearbox> {
    Some(match name {
        "M5" => M5,
        "M6" => M6,
        "A6" => A6,
        "A7" => A7,
        "A8" => A8,
        "A9" => A9,
        "A10" => A10,
        "CV" => CV,
        "M5A6" => M5A6,
        "M6A6" => M6A6,
        "M5CV" => M5CV,
        "M6CV" => M6CV,
        "M5AM5" => M5AM5,
        "M6A8" => M6A8,
        "DCT6" => DCT6,
        "DCT7" => DCT7,
        "E1" => E1,
        _ => return None,
    })
}

/// A category by its name in the model table.
fn category(name: &str) -> Option<Cat> {
    ALL_CATS.iter().copied().find(|c| format!("{c:?}") == name)
}

/// Parses the model table: the models in file order (order matters for determinism).
fn parse_models(text: &'static str) -> Result<Vec<Model>, String> {
    let mut trims: HashMap<&str, Vec<&'static str>> = HashMap::new();
    let mut models: Vec<Model> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let at = |why: String| format!("models.txt, line {}: {why}", n + 1);
        let line = raw.trim_end();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let list = |text: &'static str| -> Vec<&'static str> { text.split(';').map(str::trim).collect() };
        if let Some(rest) = line.strip_prefix("trims ") {
            let (name, values) = rest.split_once(':').ok_or_else(|| at("trims NAME: a; b; c".into()))?;
            trims.insert(name.trim(), list(values));
            continue;
        }
        let fields: Vec<&'static str> = line.trim().split('|').map(str::trim).collect();
        let num = |i: usize| -> Result<f64, String> {
            let text = fields.get(i).ok_or_else(|| at(format!("field {} is missing", i + 1)))?;
            text.parse::<f64>().map_err(|_| at(format!("{text:?} is not a number")))
        };
        let year = |i: usize| -> Result<i32, String> {
            let text = fields.get(i).ok_or_else(|| at(format!("field {} is missing", i + 1)))?;
            text.parse::<i32>().map_err(|_| at(format!("{text:?} is not a year")))
        };
        let gear = |i: usize| -> Result<Gearbox, String> {
            let text = fields.get(i).copied().unwrap_or_default();
            gearbox(text).ok_or_else(|| at(format!("unknown gearbox {text:?}")))
        };
        if let Some(first) = fields[0].strip_prefix("model ") {
            if fields.len() != 6 {
                return Err(at("model: marca | modelo | category | weight | tank | trims".into()));
            }
            let cat = category(fields[2]).ok_or_else(|| at(format!("unknown category {:?}", fields[2])))?;
            let trim_list = match fields[5].strip_prefix('@') {
                Some(name) => trims.get(name).cloned().ok_or_else(|| at(format!("unknown trims @{name}")))?,
                None => list(fields[5]),
            };
            models.push(Model {
                marca: first.trim(),
                modelo: fields[1],
                cat,
                w: num(3)?,
                tank: num(4)?,
                trims: trim_list,
                pts: Vec::new(),
            });
            continue;
        }
        let model = models.last_mut().ok_or_else(|| at("a powertrain before any model".into()))?;
        let (kind, motor) = (fields[0], fields.get(1).copied().unwrap_or_default());
        let base = |prop: Prop, fuel: Fuel, k: f64, gearbox: Gearbox, y0: i32, y1: i32| Pt {
            motor,
            prop,
            fuel,
            k,
            gearbox,
            y0,
            y1,
            range_km: 0.0,
            w: 1.0,
        };
        let (pt, used) = match kind {
            "fx" | "gs" | "dz" => {
                let fuel = match kind {
                    "fx" => Fuel::Flex,
                    "gs" => Fuel::Gasolina,
                    _ => Fuel::Diesel,
                };
                (base(Prop::Comb, fuel, num(2)?, gear(3)?, year(4)?, year(5)?), 6)
            }
            "hev" => {
                let fuel = match fields.get(2).copied() {
                    Some("FL") => Fuel::Flex,
                    Some("GA") => Fuel::Gasolina,
                    other => return Err(at(format!("hybrid fuel must be FL or GA, not {other:?}"))),
                };
                (base(Prop::Hev, fuel, num(3)?, gear(4)?, year(5)?, year(6)?), 7)
            }
            "phev" => {
                let pt = base(Prop::Phev, Fuel::Gasolina, num(2)?, gear(4)?, year(5)?, year(6)?);
                (Pt { range_km: num(3)?, ..pt }, 7)
            }
            "ev" => {
                let pt = base(Prop::Ev, Fuel::Eletrico, num(2)?, E1, year(4)?, year(5)?);
                (Pt { range_km: num(3)?, ..pt }, 6)
            }
            other => return Err(at(format!("unknown powertrain kind {other:?}"))),
        };
        let pt = match fields.len() {
            n if n == used => pt,
            n if n == used + 1 => pt.w(num(used)?),
            _ => return Err(at(format!("{kind} takes {} or {} fields", used, used + 1))),
        };
        model.pts.push(pt);
    }
    Ok(models)
}

/// The model table, parsed once.
fn catalog() -> Result<&'static [Model], String> {
    static MODELS_TABLE: std::sync::OnceLock<Result<Vec<Model>, String>> = std::sync::OnceLock::new();
    MODELS_TABLE.get_or_init(|| parse_models(MODELS)).as_deref().map_err(Clone::clone)
}

// ---------------------------------------------------------------------------------------------
// Row synthesis
// ---------------------------------------------------------------------------------------------

fn round_to(x: f64, decimals: i32) -> f64 {
    let p = 10f64.powi(decimals);
    (x * p).round() / p
}

fn pbe_class(i: usize) -> &'static str {
    ["A", "B", "C", "D", "E"][i.min(4)]
}

/// General PBE class from energy consumption (lower MJ/km is better).
fn pbe_general(mj: f64) -> &'static str {
    if mj <= 1.30 {
        "A"
    } else if mj <= 1.60 {
        "B"
    } else if mj <= 1.80 {
        "C"
    } else if mj <= 2.10 {
        "D"
    } else {
        "E"
    }
}

fn steering(rng: &mut Rng, prop: Prop, cat: Cat, ano: i32) -> &'static str {
    const EL: &str = "Elétrica";
    const HI: &str = "Hidráulica";
    const EH: &str = "Eletro-hidráulica";
    const ME: &str = "Mecânica";
    if prop != Prop::Comb {
        return EL;
    }
    match cat {
        Cat::Pic if ano >= 2020 => rng.pick(&[(EL, 0.6), (EH, 0.2), (HI, 0.2)]),
        Cat::Pic => rng.pick(&[(HI, 0.75), (EH, 0.1), (EL, 0.15)]),
        Cat::Com if ano < 2019 => rng.pick(&[(HI, 0.7), (ME, 0.15), (EL, 0.15)]),
        Cat::Com => rng.pick(&[(EL, 0.5), (HI, 0.5)]),
        Cat::Sub | Cat::Comp if ano < 2017 => rng.pick(&[(ME, 0.3), (HI, 0.4), (EH, 0.2), (EL, 0.1)]),
        Cat::Sub => rng.pick(&[(EL, 0.75), (ME, 0.15), (HI, 0.1)]),
        _ if ano < 2016 => rng.pick(&[(HI, 0.55), (EH, 0.25), (EL, 0.2)]),
        _ => rng.pick(&[(EL, 0.88), (EH, 0.08), (HI, 0.04)]),
    }
}

/// Optional value: `None` with probability `p_null`.
fn maybe<T>(rng: &mut Rng, p_null: f64, v: T) -> Option<T> {
    if rng.chance(p_null) {
        None
    } else {
        Some(v)
    }
}

#[derive(Default)]
struct Cols {
    id: Vec<String>,
    marca: Vec<&'static str>,
    modelo: Vec<&'static str>,
    versao: Vec<String>,
    categoria: Vec<&'static str>,
    ano: Vec<i32>,
    motor: Vec<Option<&'static str>>,
    tipo_propulsao: Vec<&'static str>,
    combustivel_tipo: Vec<&'static str>,
    transmissao_tipo: Vec<Option<&'static str>>,
    transmissao_marchas: Vec<Option<i32>>,
    ar_condicionado: Vec<Option<bool>>,
    direcao: Vec<&'static str>,
    ef_cid: Vec<Option<f64>>,
    ef_est: Vec<Option<f64>>,
    ef_cid_et: Vec<Option<f64>>,
    ef_est_et: Vec<Option<f64>>,
    mj: Vec<Option<f64>>,
    co2: Vec<Option<f64>>,
    nmhc: Vec<Option<f64>>,
    co: Vec<Option<f64>>,
    nox: Vec<Option<f64>>,
    autonomia: Vec<Option<f64>>,
    tanque: Vec<Option<f64>>,
    pbe_cat: Vec<Option<&'static str>>,
    pbe_geral: Vec<Option<&'static str>>,
}

impl Cols {
    fn with_capacity(n: usize) -> Self {
        Cols { id: Vec::with_capacity(n), versao: Vec::with_capacity(n), ..Default::default() }
    }
}

const VERSION_SUFFIXES: [&str; 8] =
    ["Pack", "Plus", "Tech", "Connect", "Edição Especial", "Série Limitada", "Black Edition", "Launch Edition"];

/// Builds `rows` synthetic catalog rows; the same (rows, seed) always gives the same frame.
pub fn generate_catalog(rows: usize, seed: u64) -> PolarsResult<DataFrame> {
    let models = catalog().map_err(|e| PolarsError::ComputeError(e.into()))?;
    let model_w: Vec<f64> = models.iter().map(|m| m.w).collect();
    let pt_w: Vec<Vec<f64>> = models.iter().map(|m| m.pts.iter().map(|p| p.w).collect()).collect();

    let mut rng = Rng::new(seed);
    let mut c = Cols::with_capacity(rows);
    let mut seen: HashSet<Uuid> = HashSet::with_capacity(rows);
    // Per base id (a version without suffix): where the search for a free suffix resumes.
    let mut next_suffix: HashMap<Uuid, usize> = HashMap::new();
    // Unrounded energy figure and category per row, for the PBE class pass.
    let mut mj_true: Vec<f64> = Vec::with_capacity(rows);
    let mut cat_of: Vec<Cat> = Vec::with_capacity(rows);
    let mut pbe_null: Vec<(bool, bool)> = Vec::with_capacity(rows);

    for _ in 0..rows {
        let mi = rng.weighted(&model_w);
        let m = &models[mi];
        let p = m.pts[rng.weighted(&pt_w[mi])];
        let ano = rng.range(p.y0, p.y1);
        let trim = *rng.choice(&m.trims);
        let (trans, gears) = *rng.choice(p.gearbox);
        let cat = m.cat;

        // A few flex versions are homologated as dedicated ethanol or CNG (GNV) variants.
        let mut fuel = p.fuel;
        if p.prop == Prop::Comb
            && fuel == Fuel::Flex
            && matches!(cat, Cat::Sub | Cat::Comp | Cat::Med | Cat::Com | Cat::Minivan)
        {
            if rng.chance(0.012) {
                fuel = Fuel::Etanol;
            } else if rng.chance(0.012) {
                fuel = Fuel::Gnv;
            }
        }

        // ---- efficiency (true values, before nulling) --------------------------------------
        let noise = rng.uniform(0.94, 1.06);
        let yr = 1.0 + 0.006 * (ano - 2019) as f64;
        let (city, hwy) = match (p.prop, fuel) {
            (Prop::Ev, _) => {
                let c = (44.0 * p.k * noise).clamp(25.0, 60.0);
                (c, (c * rng.uniform(0.84, 0.95)).clamp(25.0, 60.0))
            }
            (Prop::Phev, _) => {
                let c = (26.0 * p.k * noise).clamp(20.0, 35.0);
                (c, (c * rng.uniform(0.85, 0.97)).clamp(20.0, 35.0))
            }
            (Prop::Hev, _) => {
                let c = (18.5 * p.k * noise * yr).clamp(15.0, 22.0);
                (c, (c * rng.uniform(0.86, 0.97)).clamp(15.0, 22.0))
            }
            (_, Fuel::Diesel) => {
                let c = (cat.diesel_city_base() * p.k * noise * yr).clamp(8.0, 11.5);
                (c, (c * rng.uniform(1.08, 1.2)).clamp(8.5, 12.5))
            }
            (_, Fuel::Etanol) => {
                let c = rng.uniform(7.0, 9.0);
                (c, (c * rng.uniform(1.08, 1.15)).min(10.0))
            }
            (_, Fuel::Gnv) => {
                let c = rng.uniform(11.0, 13.5);
                (c, (c * rng.uniform(1.06, 1.12)).min(15.0))
            }
            _ if cat == Cat::Esp => {
                let c = (cat.gasoline_city_base() * p.k * noise * yr).clamp(5.8, 9.0);
                (c, (c * rng.uniform(1.12, 1.26)).clamp(6.5, 10.0))
            }
            _ => {
                let c = (cat.gasoline_city_base() * p.k * noise * yr).clamp(7.0, 16.0);
                (c, (c * rng.uniform(1.12, 1.26)).clamp(7.5, 18.0))
            }
        };
        let city = round_to(city, 1);
        let mut hwy = round_to(hwy, 1);
        if p.prop == Prop::Comb && hwy <= city {
            hwy = round_to(city + 0.3, 1);
        }
        let eff_mean = 0.5 * (city + hwy);

        let n2 = rng.uniform(0.96, 1.04);
        let mj = match (p.prop, fuel) {
            (Prop::Ev, _) => (18.0 / eff_mean * n2).clamp(0.3, 0.6),
            (Prop::Phev, _) => (20.0 / eff_mean * n2).clamp(0.6, 1.0),
            (Prop::Hev, _) => (19.0 / eff_mean * n2).clamp(0.9, 1.3),
            (_, Fuel::Diesel) => (30.0 / eff_mean * n2).clamp(2.4, 3.6),
            (_, Fuel::Etanol) => (21.0 / eff_mean * n2).clamp(1.9, 2.8),
            (_, Fuel::Gnv) => (26.0 / eff_mean * n2).clamp(1.7, 2.4),
            _ => (22.0 / eff_mean * n2).clamp(1.2, 3.8),
        };
        let n3 = rng.uniform(0.96, 1.04);
        let co2 = match (p.prop, fuel) {
            (Prop::Ev, _) => 0.0,
            (Prop::Phev, _) => (1200.0 / eff_mean * n3).clamp(30.0, 70.0),
            (Prop::Hev, _) => (1640.0 / eff_mean * n3).clamp(70.0, 110.0),
            (_, Fuel::Diesel) => (2650.0 / eff_mean * n3).clamp(200.0, 300.0),
            (_, Fuel::Etanol) => rng.uniform(0.0, 40.0),
            (_, Fuel::Gnv) => (1400.0 / eff_mean * n3).clamp(90.0, 120.0),
            _ if cat == Cat::Esp => (1640.0 / eff_mean * n3).clamp(180.0, 300.0),
            _ => (1640.0 / eff_mean * n3).clamp(80.0, 230.0),
        };

        // Pollutants (PROCONVE L6 before 2022, tighter L7 from 2022).
        let l7 = if ano >= 2022 { 0.75 } else { 1.0 };
        let (nmhc, co, nox) = match (p.prop, fuel) {
            (Prop::Ev, _) => (0.0, 0.0, 0.0),
            (Prop::Phev, _) => (rng.uniform(0.005, 0.015), rng.uniform(0.1, 0.3), rng.uniform(0.005, 0.012)),
            (Prop::Hev, _) => (rng.uniform(0.005, 0.02), rng.uniform(0.1, 0.4), rng.uniform(0.005, 0.015)),
            (_, Fuel::Diesel) => (rng.uniform(0.005, 0.03), rng.uniform(0.1, 0.5), rng.uniform(0.035, 0.08)),
            (_, Fuel::Etanol) => {
                (rng.uniform(0.015, 0.05) * l7, rng.uniform(0.2, 1.0) * l7, rng.uniform(0.01, 0.04) * l7)
            }
            (_, Fuel::Gnv) => (rng.uniform(0.005, 0.02), rng.uniform(0.1, 0.6), rng.uniform(0.01, 0.05)),
            _ => {
                let sport = if cat == Cat::Esp { 1.25 } else { 1.0 };
                (
                    rng.uniform(0.01, 0.045) * l7 * sport,
                    rng.uniform(0.15, 1.1) * l7 * sport,
                    rng.uniform(0.008, 0.05) * l7 * sport,
                )
            }
        };
        let (nmhc, co, nox) = if p.prop == Prop::Ev {
            (0.0, 0.0, 0.0)
        } else {
            (nmhc.clamp(0.005, 0.05), co.clamp(0.1, 1.3), nox.clamp(0.005, 0.08))
        };

        let autonomia = match p.prop {
            Prop::Ev => Some((p.range_km * rng.uniform(0.95, 1.05)).clamp(200.0, 600.0)),
            Prop::Phev => Some((p.range_km * rng.uniform(0.92, 1.08)).clamp(40.0, 100.0)),
            _ => None,
        };
        let tank = if m.tank > 0.0 { m.tank } else { cat.typical_tank() };
        let tanque = if p.prop == Prop::Ev {
            None
        } else {
            Some(if cat == Cat::Pic { tank.clamp(70.0, 80.0) } else { tank.clamp(35.0, 80.0) })
        };

        // ---- nulls (independent, a few % each) ----------------------------------------------
        let motor = maybe(&mut rng, if p.prop == Prop::Ev { 0.15 } else { 0.03 }, p.motor);
        let trans_tipo = maybe(&mut rng, 0.03, trans);
        let marchas = match trans_tipo {
            None => None,
            Some(_) if gears == 0 => None,
            Some(_) => maybe(&mut rng, 0.02, gears),
        };
        let ar = if rng.chance(0.04) {
            None
        } else {
            let old_basic = ano < 2017 && matches!(cat, Cat::Sub | Cat::Comp | Cat::Com | Cat::PicC);
            Some(!rng.chance(if old_basic { 0.15 } else { 0.01 }))
        };
        let direcao = steering(&mut rng, p.prop, cat, ano);
        let r = rng.f64();
        let (ef_c, ef_h) = if r < 0.02 {
            (None, None)
        } else if r < 0.035 {
            (None, Some(hwy))
        } else if r < 0.05 {
            (Some(city), None)
        } else {
            (Some(city), Some(hwy))
        };
        let (ef_c_et, ef_h_et) = if fuel == Fuel::Flex {
            let ratio_c = 0.70 * rng.uniform(0.97, 1.03);
            let ratio_h = 0.70 * rng.uniform(0.97, 1.03);
            let drop_et = rng.chance(0.01);
            (
                ef_c.filter(|_| !drop_et).map(|v| round_to(v * ratio_c, 1)),
                ef_h.filter(|_| !drop_et).map(|v| round_to(v * ratio_h, 1)),
            )
        } else {
            (None, None)
        };
        let mj_out = maybe(&mut rng, 0.03, round_to(mj, 2));
        let co2_out = maybe(&mut rng, 0.03, round_to(co2, 0));
        let nmhc_out = maybe(&mut rng, 0.015, round_to(nmhc, 3));
        let co_out = maybe(&mut rng, 0.015, round_to(co, 3));
        let nox_out = maybe(&mut rng, 0.015, round_to(nox, 3));
        let autonomia_out = autonomia.and_then(|a| maybe(&mut rng, 0.03, round_to(a, 0)));
        let tanque_out = tanque.and_then(|t| maybe(&mut rng, 0.02, round_to(t, 0)));
        pbe_null.push((rng.chance(0.03), rng.chance(0.03)));

        // ---- version text and unique id -----------------------------------------------------
        let mut versao =
            if p.prop == Prop::Ev { trim.to_string() } else { format!("{trim} {} {}", p.motor, trans.abbr()) };
        match fuel {
            Fuel::Etanol => versao.push_str(" E100"),
            Fuel::Gnv => versao.push_str(" GNV"),
            _ => {}
        }
        let motor_key = motor.unwrap_or("");
        let trans_key = trans_tipo.map(Trans::name).unwrap_or("");
        let make_id = |v: &str| {
            let key = format!("{}|{}|{}|{}|{}|{}", m.marca, m.modelo, v, ano, motor_key, trans_key);
            Uuid::new_v5(&Uuid::NAMESPACE_OID, key.as_bytes())
        };
        let mut id = make_id(&versao);
        if seen.contains(&id) {
            let base = versao.clone();
            // Every suffix before the one taken last time for this base is taken (the set only
            // grows), so the search resumes there: linear, not quadratic, in the rows per base.
            let next = next_suffix.entry(id).or_insert(0);
            let mut n = *next;
            loop {
                let candidate = if n < VERSION_SUFFIXES.len() {
                    format!("{base} {}", VERSION_SUFFIXES[n])
                } else {
                    format!("{base} Série {}", n - VERSION_SUFFIXES.len() + 2)
                };
                let cand_id = make_id(&candidate);
                if !seen.contains(&cand_id) {
                    versao = candidate;
                    id = cand_id;
                    *next = n + 1;
                    break;
                }
                n += 1;
            }
        }
        seen.insert(id);

        c.id.push(id.hyphenated().to_string());
        c.marca.push(m.marca);
        c.modelo.push(m.modelo);
        c.versao.push(versao);
        c.categoria.push(cat.name());
        c.ano.push(ano);
        c.motor.push(motor);
        c.tipo_propulsao.push(p.prop.name());
        c.combustivel_tipo.push(fuel.name());
        c.transmissao_tipo.push(trans_tipo.map(Trans::name));
        c.transmissao_marchas.push(marchas);
        c.ar_condicionado.push(ar);
        c.direcao.push(direcao);
        c.ef_cid.push(ef_c);
        c.ef_est.push(ef_h);
        c.ef_cid_et.push(ef_c_et);
        c.ef_est_et.push(ef_h_et);
        c.mj.push(mj_out);
        c.co2.push(co2_out);
        c.nmhc.push(nmhc_out);
        c.co.push(co_out);
        c.nox.push(nox_out);
        c.autonomia.push(autonomia_out);
        c.tanque.push(tanque_out);
        mj_true.push(mj);
        cat_of.push(cat);
    }

    // ---- PBE classes: quintiles of energy use within the category; thresholds overall -------
    let mut cat_class = vec!["C"; rows];
    let mut by_cat: Vec<Vec<usize>> = vec![Vec::new(); ALL_CATS.len()];
    for (i, cat) in cat_of.iter().enumerate() {
        by_cat[cat.ordinal()].push(i);
    }
    for idx in by_cat.iter_mut() {
        idx.sort_by(|a, b| mj_true[*a].total_cmp(&mj_true[*b]).then(a.cmp(b)));
        let n = idx.len();
        for (rank, i) in idx.iter().enumerate() {
            cat_class[*i] = pbe_class(rank * 5 / n.max(1));
        }
    }
    for ((&(null_cat, null_geral), class), mj) in pbe_null.iter().zip(&cat_class).zip(&mj_true) {
        c.pbe_cat.push(if null_cat { None } else { Some(*class) });
        c.pbe_geral.push(if null_geral { None } else { Some(pbe_general(*mj)) });
    }

    let columns = vec![
        Column::new("id".into(), c.id),
        Column::new("marca".into(), c.marca),
        Column::new("modelo".into(), c.modelo),
        Column::new("versao".into(), c.versao),
        Column::new("categoria".into(), c.categoria),
        Column::new("ano".into(), c.ano),
        Column::new("motor".into(), c.motor),
        Column::new("tipo_propulsao".into(), c.tipo_propulsao),
        Column::new("combustivel_tipo".into(), c.combustivel_tipo),
        Column::new("transmissao_tipo".into(), c.transmissao_tipo),
        Column::new("transmissao_marchas".into(), c.transmissao_marchas),
        Column::new("ar_condicionado".into(), c.ar_condicionado),
        Column::new("direcao_assistida_tipo".into(), c.direcao),
        Column::new("eficiencia_cidade_km_l".into(), c.ef_cid),
        Column::new("eficiencia_estrada_km_l".into(), c.ef_est),
        Column::new("eficiencia_cidade_etanol_km_l".into(), c.ef_cid_et),
        Column::new("eficiencia_estrada_etanol_km_l".into(), c.ef_est_et),
        Column::new("consumo_energetico_mj_km".into(), c.mj),
        Column::new("co2_fossil_g_km".into(), c.co2),
        Column::new("nmhc_g_km".into(), c.nmhc),
        Column::new("co_g_km".into(), c.co),
        Column::new("nox_g_km".into(), c.nox),
        Column::new("autonomia_eletrica_km".into(), c.autonomia),
        Column::new("tanque_l".into(), c.tanque),
        Column::new("classificacao_pbe_categoria".into(), c.pbe_cat),
        Column::new("classificacao_pbe_geral".into(), c.pbe_geral),
    ];
    DataFrame::new(rows, columns)
}

/// Writes a frame to Parquet (zstd compression, column statistics on), creating parent dirs.
pub fn write_parquet(df: &mut DataFrame, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating directory {}", dir.display()))?;
    }
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    encode_parquet(df, &mut out).with_context(|| format!("writing Parquet to {}", path.display()))?;
    out.flush().with_context(|| format!("flushing {}", path.display()))?;
    Ok(())
}

/// A frame as Parquet bytes in memory, encoded as [`write_parquet`] writes it (for a small
/// export written atomically).
pub fn parquet_bytes(df: &mut DataFrame) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    encode_parquet(df, &mut out)?;
    Ok(out)
}

/// zstd compression, min / max / null-count statistics per column chunk.
fn encode_parquet<W: Write>(df: &mut DataFrame, out: W) -> anyhow::Result<()> {
    ParquetWriter::new(out)
        .with_compression(ParquetCompression::Zstd(None))
        .with_statistics(StatisticsOptions::default())
        .finish(df)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_model_table_parses_and_a_broken_line_is_named() {
        let models = catalog().unwrap();
        assert_eq!(models.len(), 219);
        assert_eq!(models.iter().map(|m| m.pts.len()).sum::<usize>(), 393);
        assert_eq!((models[0].marca, models[0].modelo, models[0].pts[0].w), ("Fiat", "Mobi", 3.0));
        let broken = "model Fiat | Mobi | Sub | 3.0 | 47.0 | A; B\n  fx | 1.0 | 1.07 | M55 | 2017 | 2026\n";
        let err = parse_models(broken).map(|_| ()).unwrap_err();
        assert!(err.contains("line 2") && err.contains("M55"), "{err}");
        let err = parse_models("  ev | x | 1.0 | 300 | 2020 | 2024\n").map(|_| ()).unwrap_err();
        assert!(err.contains("before any model"), "{err}");
    }

    use std::collections::BTreeSet;

    use super::*;

    fn strs(df: &DataFrame, name: &str) -> Vec<Option<String>> {
        df.column(name).unwrap().str().unwrap().iter().map(|v| v.map(str::to_string)).collect()
    }

    fn floats(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
        df.column(name).unwrap().f64().unwrap().iter().collect()
    }

    fn big() -> DataFrame {
        generate_catalog(12_000, 7).unwrap()
    }

    #[test]
    fn generate_is_deterministic() {
        let a = generate_catalog(3_000, 42).unwrap();
        let b = generate_catalog(3_000, 42).unwrap();
        assert!(a.equals_missing(&b));
        let c = generate_catalog(3_000, 43).unwrap();
        assert!(!a.equals_missing(&c));
    }

    #[test]
    fn generate_schema_matches_service_input() {
        let df = generate_catalog(50, 1).unwrap();
        let names: Vec<&str> = df.get_column_names().iter().map(|s| s.as_str()).collect();
        assert_eq!(names, COLUMNS.to_vec());
        let expect = |name: &str| -> DataType {
            match name {
                "ano" | "transmissao_marchas" => DataType::Int32,
                "ar_condicionado" => DataType::Boolean,
                n if n.starts_with("eficiencia") || n.ends_with("_g_km") || n.ends_with("_km") || n == "tanque_l" => {
                    DataType::Float64
                }
                _ => DataType::String,
            }
        };
        for col in df.columns() {
            assert_eq!(col.dtype(), &expect(col.name().as_str()), "dtype of {}", col.name());
        }
        assert_eq!(df.height(), 50);
        assert_eq!(generate_catalog(0, 1).unwrap().height(), 0);
    }

    #[test]
    fn generate_ids_unique_valid_v5() {
        let df = big();
        let ids = strs(&df, "id");
        let marca = strs(&df, "marca");
        let modelo = strs(&df, "modelo");
        let versao = strs(&df, "versao");
        let motor = strs(&df, "motor");
        let trans = strs(&df, "transmissao_tipo");
        let ano: Vec<Option<i32>> = df.column("ano").unwrap().i32().unwrap().iter().collect();
        let mut seen = HashSet::new();
        for i in 0..df.height() {
            let id = ids[i].as_deref().unwrap();
            let u = Uuid::parse_str(id).unwrap();
            assert_eq!(u.get_version_num(), 5);
            assert_eq!(id, u.hyphenated().to_string(), "lowercase hyphenated");
            assert!(seen.insert(id.to_string()), "duplicate id {id}");
            let key = format!(
                "{}|{}|{}|{}|{}|{}",
                marca[i].as_deref().unwrap(),
                modelo[i].as_deref().unwrap(),
                versao[i].as_deref().unwrap(),
                ano[i].unwrap(),
                motor[i].as_deref().unwrap_or(""),
                trans[i].as_deref().unwrap_or(""),
            );
            assert_eq!(u, Uuid::new_v5(&Uuid::NAMESPACE_OID, key.as_bytes()));
        }
        assert_eq!(df.column("id").unwrap().n_unique().unwrap(), df.height());
    }

    #[test]
    fn generate_required_columns_and_coverage() {
        let df = big();
        for name in [
            "id",
            "marca",
            "modelo",
            "versao",
            "categoria",
            "ano",
            "tipo_propulsao",
            "combustivel_tipo",
            "direcao_assistida_tipo",
        ] {
            assert_eq!(df.column(name).unwrap().null_count(), 0, "{name} has nulls");
        }
        let ano = df.column("ano").unwrap().i32().unwrap();
        assert!(ano.iter().all(|y| (2012..=2026).contains(&y.unwrap())));

        let distinct = |name: &str| -> BTreeSet<String> { strs(&df, name).into_iter().flatten().collect() };
        assert!(distinct("marca").len() >= 30, "brands: {}", distinct("marca").len());
        let cats: BTreeSet<String> = ALL_CATS.iter().map(|c| c.name().to_string()).collect();
        assert_eq!(distinct("categoria"), cats);
        let props: BTreeSet<String> =
            ["Combustão", "Híbrido", "Híbrido Plug-in", "Elétrico"].iter().map(|s| s.to_string()).collect();
        assert_eq!(distinct("tipo_propulsao"), props);
        let fuels: BTreeSet<String> =
            ["Flex", "Gasolina", "Diesel", "Elétrico", "Etanol", "GNV"].iter().map(|s| s.to_string()).collect();
        assert_eq!(distinct("combustivel_tipo"), fuels);
        assert_eq!(distinct("direcao_assistida_tipo").len(), 4);
        assert_eq!(distinct("transmissao_tipo").len(), 4);

        // Flex is the majority fuel, a few Etanol / GNV.
        let fuel = strs(&df, "combustivel_tipo");
        let count = |f: &str| fuel.iter().filter(|v| v.as_deref() == Some(f)).count();
        assert!(count("Flex") * 2 > df.height());
        assert!((5..300).contains(&count("Etanol")));
        assert!((5..300).contains(&count("GNV")));

        // Every nullable column has some nulls, but only a few %.
        for name in COLUMNS {
            let nulls = df.column(name).unwrap().null_count();
            if [
                "eficiencia_cidade_etanol_km_l",
                "eficiencia_estrada_etanol_km_l",
                "autonomia_eletrica_km",
                "tanque_l",
                "transmissao_marchas",
            ]
            .contains(&name)
            {
                continue; // structurally null for some propulsions
            }
            if nulls > 0 {
                assert!(nulls < df.height() / 10, "{name}: {nulls} nulls");
            }
        }
        for name in [
            "motor",
            "transmissao_tipo",
            "ar_condicionado",
            "eficiencia_cidade_km_l",
            "eficiencia_estrada_km_l",
            "consumo_energetico_mj_km",
            "co2_fossil_g_km",
            "nmhc_g_km",
            "co_g_km",
            "nox_g_km",
            "classificacao_pbe_categoria",
            "classificacao_pbe_geral",
        ] {
            assert!(df.column(name).unwrap().null_count() > 0, "{name} never null");
        }
        let city = floats(&df, "eficiencia_cidade_km_l");
        let hwy = floats(&df, "eficiencia_estrada_km_l");
        let both = (0..df.height()).filter(|i| city[*i].is_none() && hwy[*i].is_none()).count();
        let only_city = (0..df.height()).filter(|i| city[*i].is_none() && hwy[*i].is_some()).count();
        let only_hwy = (0..df.height()).filter(|i| city[*i].is_some() && hwy[*i].is_none()).count();
        assert!(both > 0 && only_city > 0 && only_hwy > 0);
    }

    #[test]
    fn generate_values_consistent() {
        let df = big();
        let n = df.height();
        let prop = strs(&df, "tipo_propulsao");
        let fuel = strs(&df, "combustivel_tipo");
        let cat = strs(&df, "categoria");
        let city = floats(&df, "eficiencia_cidade_km_l");
        let hwy = floats(&df, "eficiencia_estrada_km_l");
        let city_e = floats(&df, "eficiencia_cidade_etanol_km_l");
        let hwy_e = floats(&df, "eficiencia_estrada_etanol_km_l");
        let mj = floats(&df, "consumo_energetico_mj_km");
        let co2 = floats(&df, "co2_fossil_g_km");
        let nmhc = floats(&df, "nmhc_g_km");
        let co = floats(&df, "co_g_km");
        let nox = floats(&df, "nox_g_km");
        let range = floats(&df, "autonomia_eletrica_km");
        let tank = floats(&df, "tanque_l");

        let mut ev_rows = 0;
        let mut ratio_checked = 0;
        for i in 0..n {
            let p = prop[i].as_deref().unwrap();
            let f = fuel[i].as_deref().unwrap();
            match p {
                "Elétrico" => {
                    ev_rows += 1;
                    assert_eq!(f, "Elétrico");
                    if let Some(v) = co2[i] {
                        assert_eq!(v, 0.0);
                    }
                    if let Some(r) = range[i] {
                        assert!((200.0..=600.0).contains(&r), "EV range {r}");
                    }
                    assert!(tank[i].is_none());
                    if let Some(m) = mj[i] {
                        assert!((0.3..=0.6).contains(&m));
                    }
                    for v in [nmhc[i], co[i], nox[i]].into_iter().flatten() {
                        assert_eq!(v, 0.0);
                    }
                }
                "Híbrido Plug-in" => {
                    if let Some(r) = range[i] {
                        assert!((40.0..=100.0).contains(&r), "PHEV range {r}");
                    }
                    if let Some(v) = co2[i] {
                        assert!((30.0..=70.0).contains(&v));
                    }
                }
                _ => assert!(range[i].is_none()),
            }
            if f == "Flex" {
                for (g, e) in [(city[i], city_e[i]), (hwy[i], hwy_e[i])] {
                    if let (Some(g), Some(e)) = (g, e) {
                        let r = e / g;
                        assert!((0.655..=0.745).contains(&r), "ethanol ratio {r} ({e}/{g})");
                        ratio_checked += 1;
                    }
                }
            } else {
                assert!(city_e[i].is_none() && hwy_e[i].is_none());
            }
            if p == "Combustão" {
                if let (Some(c), Some(h)) = (city[i], hwy[i]) {
                    assert!(h > c, "highway {h} <= city {c}");
                }
            }
            if f == "Diesel" {
                if let Some(v) = co2[i] {
                    assert!((200.0..=300.0).contains(&v));
                }
            }
            if cat[i].as_deref() == Some("Picape") {
                if let Some(t) = tank[i] {
                    assert!((70.0..=80.0).contains(&t));
                }
            }
            if let Some(t) = tank[i] {
                assert!((35.0..=80.0).contains(&t));
            }
            if p != "Elétrico" {
                if let Some(v) = nmhc[i] {
                    assert!((0.005..=0.05).contains(&v));
                }
                if let Some(v) = co[i] {
                    assert!((0.1..=1.3).contains(&v));
                }
                if let Some(v) = nox[i] {
                    assert!((0.005..=0.08).contains(&v));
                }
            }
        }
        assert!(ev_rows > 100, "EV rows {ev_rows}");
        assert!(ratio_checked > 1000);
    }

    #[test]
    fn generate_eco_and_co2_bands_populated() {
        let df = big();
        let mj = floats(&df, "consumo_energetico_mj_km");
        let co2 = floats(&df, "co2_fossil_g_km");
        let nmhc = floats(&df, "nmhc_g_km");
        let co = floats(&df, "co_g_km");
        let nox = floats(&df, "nox_g_km");
        let mut eco_bands = [0usize; 4];
        let mut co2_bands = [0usize; 4];
        for i in 0..df.height() {
            if let Some(c) = co2[i] {
                co2_bands[if c < 100.0 {
                    0
                } else if c < 130.0 {
                    1
                } else if c < 180.0 {
                    2
                } else {
                    3
                }] += 1;
            }
            let (Some(m), Some(c), Some(a), Some(b), Some(x)) = (mj[i], co2[i], nmhc[i], co[i], nox[i]) else {
                continue;
            };
            let ie = (100.0 * (3.0 - m) / 2.7).clamp(0.0, 100.0);
            let ic = (100.0 * (250.0 - c) / 250.0).clamp(0.0, 100.0);
            let ip = (100.0 * (1.0 - (a / 0.05 + b / 1.3 + x / 0.08) / 3.0)).clamp(0.0, 100.0);
            let eco = 0.45 * ie + 0.35 * ic + 0.20 * ip;
            eco_bands[if eco < 40.0 {
                0
            } else if eco < 60.0 {
                1
            } else if eco < 80.0 {
                2
            } else {
                3
            }] += 1;
        }
        assert!(eco_bands.iter().all(|c| *c >= 100), "eco bands {eco_bands:?}");
        assert!(co2_bands.iter().all(|c| *c >= 100), "co2 bands {co2_bands:?}");
    }

    #[test]
    fn generate_pbe_classes_follow_efficiency() {
        let df = big();
        let cat = strs(&df, "categoria");
        let cls = strs(&df, "classificacao_pbe_categoria");
        let mj = floats(&df, "consumo_energetico_mj_km");
        // Within the "Compacto" category, mean MJ/km must increase from class A to class E.
        let mut sums = [(0.0f64, 0usize); 5];
        for i in 0..df.height() {
            if cat[i].as_deref() != Some("Compacto") {
                continue;
            }
            if let (Some(c), Some(m)) = (cls[i].as_deref(), mj[i]) {
                let k = (c.as_bytes()[0] - b'A') as usize;
                sums[k].0 += m;
                sums[k].1 += 1;
            }
        }
        let means: Vec<f64> = sums.iter().map(|(s, n)| s / *n as f64).collect();
        assert!(means.windows(2).all(|w| w[0] <= w[1]), "{means:?}");
    }

    #[test]
    fn generate_parquet_round_trip() {
        let mut df = generate_catalog(500, 5).unwrap();
        let dir = std::env::temp_dir().join(format!("eco-gen-test-{}", std::process::id()));
        let path = dir.join("sub").join("catalog.parquet");
        write_parquet(&mut df, &path).unwrap();
        let back = ParquetReader::new(File::open(&path).unwrap()).finish().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(df.equals_missing(&back));
    }

    #[test]
    fn generate_catalog_table_is_sane() {
        for m in catalog().unwrap() {
            assert!(!m.pts.is_empty() && !m.trims.is_empty(), "{}", m.modelo);
            for p in &m.pts {
                assert!(2012 <= p.y0 && p.y0 <= p.y1 && p.y1 <= 2026, "{} {}", m.modelo, p.motor);
                if p.prop == Prop::Ev {
                    assert!(p.y0 >= 2019, "{}", m.modelo);
                }
            }
        }
    }
}
