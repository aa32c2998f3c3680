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

fn pt(motor: &'static str, prop: Prop, fuel: Fuel, k: f64, gearbox: Gearbox, y0: i32, y1: i32) -> Pt {
    Pt { motor, prop, fuel, k, gearbox, y0, y1, range_km: 0.0, w: 1.0 }
}

/// Flex combustion engine.
fn fx(motor: &'static str, k: f64, gearbox: Gearbox, y0: i32, y1: i32) -> Pt {
    pt(motor, Prop::Comb, Fuel::Flex, k, gearbox, y0, y1)
}

/// Gasoline-only combustion engine.
fn gs(motor: &'static str, k: f64, gearbox: Gearbox, y0: i32, y1: i32) -> Pt {
    pt(motor, Prop::Comb, Fuel::Gasolina, k, gearbox, y0, y1)
}

/// Diesel engine.
fn dz(motor: &'static str, k: f64, gearbox: Gearbox, y0: i32, y1: i32) -> Pt {
    pt(motor, Prop::Comb, Fuel::Diesel, k, gearbox, y0, y1)
}

/// Full hybrid (fuel Flex for the Brazilian flex hybrids, Gasolina otherwise).
fn hev(motor: &'static str, fuel: Fuel, k: f64, gearbox: Gearbox, y0: i32, y1: i32) -> Pt {
    pt(motor, Prop::Hev, fuel, k, gearbox, y0, y1)
}

/// Plug-in hybrid with its nominal electric range.
fn phev(motor: &'static str, k: f64, range_km: f64, gearbox: Gearbox, y0: i32, y1: i32) -> Pt {
    Pt { range_km, ..pt(motor, Prop::Phev, Fuel::Gasolina, k, gearbox, y0, y1) }
}

/// Battery electric with its nominal range.
fn ev(motor: &'static str, k: f64, range_km: f64, y0: i32, y1: i32) -> Pt {
    Pt { range_km, ..pt(motor, Prop::Ev, Fuel::Eletrico, k, E1, y0, y1) }
}

struct Model {
    marca: &'static str,
    modelo: &'static str,
    cat: Cat,
    /// Relative frequency in the catalog.
    w: f64,
    /// Fuel tank (L) for the non-electric versions; 0 = class default.
    tank: f64,
    trims: &'static [&'static str],
    pts: Vec<Pt>,
}

fn md(
    marca: &'static str,
    modelo: &'static str,
    cat: Cat,
    w: f64,
    tank: f64,
    trims: &'static [&'static str],
    pts: Vec<Pt>,
) -> Model {
    Model { marca, modelo, cat, w, tank, trims, pts }
}

// Trim vocabularies shared by several models.
const T_FIAT: &[&str] = &["Attractive", "Drive", "Trekking", "Precision", "Audace"];
const T_GM: &[&str] = &["LT", "LTZ", "Premier", "RS", "Midnight"];
const T_TOY: &[&str] = &["GLi", "XEi", "Altis", "XRE", "XS"];
const T_HYU: &[&str] = &["Sense", "Comfort", "Limited", "Platinum", "Ultimate"];
const T_REN: &[&str] = &["Zen", "Intense", "Iconic", "Life", "Expression"];
const T_JEEP: &[&str] = &["Sport", "Longitude", "Limited", "Trailhawk", "Série S"];
const T_HON: &[&str] = &["LX", "EX", "EXL", "Touring", "Advance"];
const T_NIS: &[&str] = &["Sense", "Advance", "Exclusive", "XE", "SL"];
const T_PICK: &[&str] = &["XL", "XLS", "XLT", "Limited", "SR"];
const T_PEU: &[&str] = &["Active", "Allure", "Griffe", "GT", "Style"];
const T_CIT: &[&str] = &["Live", "Feel", "Shine", "Rivers", "First Edition"];
const T_MIT: &[&str] = &["GL", "GLS", "HPE", "HPE-S", "Outdoor"];
const T_KIA: &[&str] = &["LX", "EX", "SX", "GT-Line", "Prestige"];
const T_CHERY: &[&str] = &["Sport", "T", "TXS", "Pro", "Max Drive"];
const T_LUX: &[&str] = &["Sport", "Luxury", "M Sport", "AMG Line", "Prestige"];
const T_AUDI: &[&str] = &["Prestige", "Performance", "S line", "Black", "Launch Edition"];
const T_VOLVO: &[&str] = &["Core", "Plus", "Ultimate", "Momentum", "Inscription"];
const T_POR: &[&str] = &["Base", "S", "4S", "GTS", "Turbo"];
const T_BYD: &[&str] = &["GS", "GL", "Plus", "Premium", "AWD Performance"];
const T_GWM: &[&str] = &["Premium", "Elite", "Skin", "GT", "Supreme"];
const T_JAC: &[&str] = &["Standard", "Plus", "Comfort", "Luxury", "Full"];
const T_LR: &[&str] = &["S", "SE", "HSE", "X-Dynamic", "Dynamic"];
const T_SUB: &[&str] = &["Premium", "Limited", "Sport", "Touring", "S"];
const T_SUZ: &[&str] = &["4WORK", "4ALL", "4YOU", "4SPORT", "GLX"];
const T_LEX: &[&str] = &["Dynamic", "Luxury", "F Sport", "Executive", "Premium"];
const T_MINI: &[&str] = &["Classic", "Exclusive", "Top", "S", "JCW"];
const T_COM: &[&str] = &["Furgão", "Chassi", "Cargo", "Passageiros", "Executive"];
const T_EVN: &[&str] = &["Standard", "Plus", "Long Range", "Performance", "Premium"];
const T_SPORT: &[&str] = &["Coupé", "Cabriolet", "Performance", "Competition", "GT"];

/// The model table. Order matters only for determinism; it is a plain Vec (no hash iteration).
#[rustfmt::skip] // one model per block reads better than rustfmt's one-argument-per-line layout
fn catalog() -> Vec<Model> {
    use Cat::*;
    use Fuel::{Flex as FL, Gasolina as GA};
    vec![
        // ------------------------------------------------------------------ Fiat
        md("Fiat", "Mobi", Sub, 3.0, 47.0, &["Easy", "Like", "Way", "Trekking", "Drive"], vec![
            fx("1.0", 1.07, M5, 2017, 2026).w(3.0),
            fx("1.0", 1.04, M5AM5, 2017, 2022),
        ]),
        md("Fiat", "Uno", Sub, 2.0, 48.0, &["Vivace", "Way", "Attractive", "Sporting", "Drive"], vec![
            fx("1.0", 1.03, M5, 2012, 2021).w(3.0),
            fx("1.4", 0.95, M5, 2012, 2016),
            fx("1.3", 1.0, M5AM5, 2017, 2021),
        ]),
        md("Fiat", "Palio", Comp, 1.5, 48.0, &["Attractive", "Essence", "Sporting", "Way", "Fire"], vec![
            fx("1.0", 1.03, M5, 2012, 2017),
            fx("1.4", 0.96, M5, 2012, 2017),
            fx("1.6", 0.92, M5AM5, 2012, 2017),
        ]),
        md("Fiat", "Argo", Comp, 3.0, 48.0, T_FIAT, vec![
            fx("1.0", 1.06, M5, 2018, 2026).w(2.0),
            fx("1.3", 1.0, M5CV, 2018, 2026),
            fx("1.8", 0.9, A6, 2018, 2020),
        ]),
        md("Fiat", "Cronos", Med, 2.5, 48.0, T_FIAT, vec![
            fx("1.0", 1.06, M5, 2023, 2026),
            fx("1.3", 1.03, M5CV, 2019, 2026).w(2.0),
            fx("1.8", 0.9, A6, 2019, 2022),
        ]),
        md("Fiat", "Grand Siena", Med, 1.2, 48.0, &["Attractive", "Essence", "Tetrafuel", "EL", "Sublime"], vec![
            fx("1.4", 1.0, M5, 2012, 2021),
            fx("1.6", 0.95, M5AM5, 2012, 2016),
        ]),
        md("Fiat", "Strada", PicC, 3.5, 55.0, &["Endurance", "Freedom", "Volcano", "Ranch", "Ultra"], vec![
            fx("1.3", 1.0, M5, 2020, 2026).w(2.0),
            fx("1.0 TURBO", 1.0, CV, 2023, 2026),
            fx("1.4", 0.97, M5, 2012, 2021),
            fx("1.8", 0.9, M5, 2012, 2019),
        ]),
        md("Fiat", "Toro", Pic, 2.5, 70.0, &["Endurance", "Freedom", "Volcano", "Ranch", "Ultra"], vec![
            fx("1.8", 1.12, A6, 2016, 2021),
            fx("1.3 TURBO", 1.16, A6, 2022, 2026),
            dz("2.0 TURBO DIESEL", 1.0, A9, 2016, 2026).w(1.5),
            dz("2.2 TURBO DIESEL", 0.99, A9, 2025, 2026),
        ]),
        md("Fiat", "Pulse", Uec, 2.5, 47.0, &["Drive", "Audace", "Impetus", "Abarth", "Hybrid"], vec![
            fx("1.3", 1.02, M5CV, 2022, 2026),
            fx("1.0 TURBO", 1.05, CV, 2022, 2026).w(2.0),
            fx("1.3 TURBO", 0.96, A6, 2023, 2026),
        ]),
        md("Fiat", "Fastback", Uec, 2.0, 47.0, &["Audace", "Impetus", "Limited Edition", "Abarth", "Hybrid"], vec![
            fx("1.0 TURBO", 1.03, CV, 2023, 2026).w(2.0),
            fx("1.3 TURBO", 0.95, A6, 2023, 2026),
        ]),
        md("Fiat", "Fiorino", Com, 1.5, 48.0, T_COM, vec![
            fx("1.4", 1.0, M5, 2014, 2021),
            fx("1.3", 1.04, M5, 2022, 2026),
        ]),
        md("Fiat", "Doblò", Minivan, 1.0, 60.0, &["Attractive", "Essence", "Adventure", "Cargo", "ELX"], vec![
            fx("1.4", 0.98, M5, 2012, 2021),
            fx("1.8", 0.92, M5, 2012, 2021),
        ]),
        md("Fiat", "500e", Sub, 0.6, 0.0, &["Icon", "La Prima", "Plus", "Cabrio", "Standard"], vec![
            ev("ELÉTRICO 87 kW", 1.18, 230.0, 2022, 2026),
        ]),
        // ------------------------------------------------------------------ Volkswagen
        md("Volkswagen", "Gol", Comp, 3.0, 55.0, &["Trendline", "Comfortline", "Track", "Last Edition", "City"], vec![
            fx("1.0", 1.04, M5, 2012, 2023).w(2.0),
            fx("1.6", 0.93, M5AM5, 2012, 2023),
        ]),
        md("Volkswagen", "up!", Sub, 1.5, 50.0, &["take", "move", "cross", "pepper", "Xtreme"], vec![
            fx("1.0", 1.09, M5AM5, 2014, 2021),
            fx("1.0 TURBO", 1.05, M5, 2016, 2021),
        ]),
        md("Volkswagen", "Fox", Comp, 1.5, 50.0, &["Trendline", "Comfortline", "Highline", "Connect", "Xtreme"], vec![
            fx("1.0", 1.02, M5, 2012, 2021),
            fx("1.6", 0.93, M5AM5, 2012, 2021),
        ]),
        md("Volkswagen", "Polo", Comp, 3.0, 52.0, &["Track", "MPI", "Comfortline", "Highline", "GTS"], vec![
            fx("1.0", 1.05, M5, 2018, 2026),
            fx("1.0 TURBO", 1.03, A6, 2018, 2026).w(2.0),
            fx("1.4 TURBO", 0.94, A6, 2020, 2023),
        ]),
        md("Volkswagen", "Virtus", Med, 2.5, 52.0, &["MSI", "Comfortline", "Highline", "Exclusive", "GTS"], vec![
            fx("1.6", 0.93, M5A6, 2018, 2022),
            fx("1.0 TURBO", 1.06, A6, 2018, 2026).w(2.0),
            fx("1.4 TURBO", 0.95, A6, 2020, 2026),
        ]),
        md("Volkswagen", "Voyage", Med, 1.5, 55.0, &["Trendline", "Comfortline", "Highline", "Evidence", "City"], vec![
            fx("1.0", 1.0, M5, 2012, 2023),
            fx("1.6", 0.93, M5AM5, 2012, 2023),
        ]),
        md("Volkswagen", "Jetta", Med, 1.2, 55.0, &["Comfortline", "R-Line", "GLI", "Trendline", "Highline"], vec![
            gs("1.4 TURBO", 1.0, A6, 2012, 2018),
            fx("1.4 TURBO", 0.98, A6, 2019, 2026),
            gs("2.0 TURBO", 0.86, DCT7, 2012, 2026),
        ]),
        md("Volkswagen", "T-Cross", Uec, 2.5, 52.0, &["Sense", "Comfortline", "Highline", "Extreme", "200 TSI"], vec![
            fx("1.0 TURBO", 1.04, M6A6, 2020, 2026).w(2.0),
            fx("1.4 TURBO", 0.95, A6, 2020, 2026),
        ]),
        md("Volkswagen", "Nivus", Uec, 2.0, 52.0, &["Comfortline", "Highline", "Sense", "Outfit", "GTS"], vec![
            fx("1.0 TURBO", 1.06, A6, 2021, 2026).w(2.0),
            fx("1.4 TURBO", 0.95, A6, 2025, 2026),
        ]),
        md("Volkswagen", "Taos", Ueg, 1.5, 50.0, &["Comfortline", "Highline", "Launch Edition", "Sense", "Exclusive"], vec![
            fx("1.4 TURBO", 1.07, A6, 2022, 2026),
        ]),
        md("Volkswagen", "Tiguan Allspace", Ueg, 0.8, 60.0, &["Comfortline", "R-Line", "Highline", "250 TSI", "350 TSI"], vec![
            fx("1.4 TURBO", 1.02, A6, 2018, 2024),
            gs("2.0 TURBO", 0.9, A8, 2018, 2024),
        ]),
        md("Volkswagen", "Saveiro", PicC, 2.0, 55.0, &["Robust", "Trendline", "Cross", "Extreme", "Trooper"], vec![
            fx("1.6", 0.93, M5, 2012, 2026),
        ]),
        md("Volkswagen", "Amarok", Pic, 2.0, 80.0, &["SE", "Trendline", "Highline", "Extreme", "Comfortline"], vec![
            dz("2.0 TURBO DIESEL", 1.02, M6A8, 2012, 2026).w(1.5),
            dz("3.0 V6 TURBO DIESEL", 0.94, A8, 2018, 2026),
        ]),
        md("Volkswagen", "ID.4", Ueg, 0.5, 0.0, &["Pro", "Pure", "GTX", "Launch Edition", "1st"], vec![
            ev("ELÉTRICO 150 kW", 0.88, 360.0, 2023, 2026),
        ]),
        // ------------------------------------------------------------------ Chevrolet
        md("Chevrolet", "Onix", Comp, 4.0, 44.0, T_GM, vec![
            fx("1.0", 1.07, M5, 2012, 2019),
            fx("1.4", 0.97, M6A6, 2012, 2019),
            fx("1.0", 1.08, M6, 2020, 2026).w(1.5),
            fx("1.0 TURBO", 1.05, M6A6, 2020, 2026).w(2.0),
        ]),
        md("Chevrolet", "Onix Plus", Med, 3.0, 44.0, T_GM, vec![
            fx("1.0", 1.08, M6, 2020, 2026),
            fx("1.0 TURBO", 1.07, M6A6, 2020, 2026).w(2.0),
        ]),
        md("Chevrolet", "Prisma", Med, 1.5, 54.0, T_GM, vec![
            fx("1.0", 1.0, M5, 2013, 2019),
            fx("1.4", 0.95, M6A6, 2013, 2019),
        ]),
        md("Chevrolet", "Cobalt", Med, 1.0, 54.0, T_GM, vec![
            fx("1.4", 0.96, M5, 2012, 2019),
            fx("1.8", 0.9, M6A6, 2013, 2019),
        ]),
        md("Chevrolet", "Cruze", Med, 1.2, 52.0, T_GM, vec![
            fx("1.8", 0.88, M6A6, 2012, 2016),
            fx("1.4 TURBO", 1.0, A6, 2017, 2023),
        ]),
        md("Chevrolet", "Tracker", Uec, 3.0, 44.0, &["LT", "LTZ", "Premier", "RS", "Midnight"], vec![
            fx("1.8", 0.88, A6, 2014, 2019),
            fx("1.0 TURBO", 1.04, M6A6, 2021, 2026).w(2.0),
            fx("1.2 TURBO", 1.0, A6, 2021, 2026),
        ]),
        md("Chevrolet", "Equinox", Ueg, 0.8, 59.0, &["LT", "Premier", "Midnight", "RS", "Activ"], vec![
            gs("1.5 TURBO", 1.0, A9, 2018, 2025),
            gs("2.0 TURBO", 0.92, A9, 2018, 2021),
        ]),
        md("Chevrolet", "Trailblazer", Ueg, 0.8, 76.0, &["LT", "LTZ", "Premier", "Z71", "High Country"], vec![
            dz("2.8 TURBO DIESEL", 0.96, A6, 2013, 2024),
            fx("3.6 V6", 0.76, A6, 2013, 2016),
        ]),
        md("Chevrolet", "Spin", Minivan, 2.0, 53.0, &["LS", "LT", "LTZ", "Activ", "Premier"], vec![
            fx("1.8", 0.96, M6A6, 2013, 2026),
        ]),
        md("Chevrolet", "Montana", PicC, 2.0, 54.0, &["LS", "LT", "Sport", "Premier", "RS"], vec![
            fx("1.4", 0.95, M5, 2012, 2021),
            fx("1.2 TURBO", 0.97, M6A6, 2023, 2026),
        ]),
        md("Chevrolet", "S10", Pic, 3.0, 76.0, &["LS", "LT", "LTZ", "High Country", "Z71"], vec![
            dz("2.8 TURBO DIESEL", 0.98, M6A6, 2012, 2026).w(2.5),
            fx("2.5", 0.97, M6A6, 2013, 2023),
        ]),
        md("Chevrolet", "Camaro", Esp, 0.6, 72.0, T_SPORT, vec![
            gs("6.2 V8", 0.8, A8, 2012, 2024),
        ]),
        md("Chevrolet", "Bolt", Comp, 0.6, 0.0, &["Premier", "EUV", "LT", "Launch", "Redline"], vec![
            ev("ELÉTRICO 150 kW", 1.1, 416.0, 2020, 2024),
        ]),
        md("Chevrolet", "Spark EUV", Uec, 0.5, 0.0, &["Activ", "Premier", "LT", "Launch", "RS"], vec![
            ev("ELÉTRICO 75 kW", 1.05, 258.0, 2025, 2026),
        ]),
        // ------------------------------------------------------------------ Toyota
        md("Toyota", "Corolla", Med, 3.0, 50.0, T_TOY, vec![
            fx("1.8", 0.93, M6CV, 2012, 2019),
            fx("2.0", 0.93, CV, 2015, 2026).w(2.0),
            hev("1.8 HÍBRIDO", FL, 1.03, CV, 2020, 2026).w(1.5),
        ]),
        md("Toyota", "Corolla Cross", Uec, 2.5, 47.0, &["XR", "XRE", "XRV", "XRX", "GR-S"], vec![
            fx("2.0", 0.93, CV, 2022, 2026).w(2.0),
            hev("1.8 HÍBRIDO", FL, 0.97, CV, 2022, 2026).w(1.5),
        ]),
        md("Toyota", "Yaris", Comp, 2.0, 45.0, &["XL", "XS", "XLS", "Live", "Connect"], vec![
            fx("1.3", 1.04, M6CV, 2019, 2023),
            fx("1.5", 0.99, CV, 2019, 2026),
        ]),
        md("Toyota", "Yaris Sedan", Med, 1.2, 45.0, &["XL", "XS", "XLS", "Live", "Connect"], vec![
            fx("1.5", 1.02, M6CV, 2019, 2026),
        ]),
        md("Toyota", "Etios", Comp, 1.5, 45.0, &["X", "XS", "XLS", "Platinum", "Cross"], vec![
            fx("1.3", 1.03, M6A6, 2013, 2021),
            fx("1.5", 0.98, M6A6, 2013, 2021),
        ]),
        md("Toyota", "Hilux", Pic, 3.0, 80.0, &["STD", "SR", "SRV", "SRX", "GR-S"], vec![
            dz("2.8 TURBO DIESEL", 0.99, M6A6, 2016, 2026).w(2.5),
            dz("3.0 TURBO DIESEL", 0.93, M5, 2012, 2015),
            fx("2.7", 0.9, M5A6, 2012, 2026),
        ]),
        md("Toyota", "SW4", Ueg, 1.5, 80.0, &["SR", "SRV", "SRX", "Diamond", "GR-S"], vec![
            dz("2.8 TURBO DIESEL", 0.98, A6, 2016, 2026).w(2.0),
            fx("2.7", 0.88, A6, 2012, 2026),
        ]),
        md("Toyota", "RAV4", Ueg, 0.8, 55.0, &["S", "SX", "Connect", "Limited", "Hybrid"], vec![
            gs("2.0", 1.0, CV, 2013, 2018),
            hev("2.5 HÍBRIDO", GA, 0.9, CV, 2019, 2026),
        ]),
        md("Toyota", "Camry", Gra, 0.6, 60.0, &["XLE", "Hybrid", "SE", "XSE", "Limited"], vec![
            gs("3.5 V6", 0.8, A6, 2012, 2018),
            hev("2.5 HÍBRIDO", GA, 0.95, CV, 2019, 2026),
        ]),
        md("Toyota", "Prius", Med, 0.6, 43.0, &["NGX", "High", "Touring", "Hybrid", "Premium"], vec![
            hev("1.8 HÍBRIDO", GA, 1.15, CV, 2013, 2022),
        ]),
        md("Toyota", "Land Cruiser Prado", Fde, 0.4, 87.0, &["TX", "VX", "TXL", "Standard", "Limited"], vec![
            dz("2.8 TURBO DIESEL", 0.92, A6, 2018, 2026),
            dz("3.0 TURBO DIESEL", 0.9, A6, 2012, 2017),
        ]),
        // ------------------------------------------------------------------ Hyundai
        md("Hyundai", "HB20", Comp, 4.0, 50.0, T_HYU, vec![
            fx("1.0", 1.07, M5, 2013, 2026).w(2.0),
            fx("1.6", 0.93, M6A6, 2013, 2019),
            fx("1.0 TURBO", 1.04, M6A6, 2020, 2026).w(1.5),
        ]),
        md("Hyundai", "HB20S", Med, 2.5, 50.0, T_HYU, vec![
            fx("1.0", 1.07, M5, 2013, 2026),
            fx("1.6", 0.93, M6A6, 2013, 2019),
            fx("1.0 TURBO", 1.04, M6A6, 2020, 2026),
        ]),
        md("Hyundai", "Creta", Uec, 3.0, 50.0, &["Action", "Comfort", "Limited", "Platinum", "N Line"], vec![
            fx("1.6", 0.96, M6A6, 2017, 2026).w(1.5),
            fx("2.0", 0.88, A6, 2017, 2022),
            fx("1.0 TURBO", 1.02, A6, 2022, 2026).w(1.5),
        ]),
        md("Hyundai", "Tucson", Ueg, 1.0, 62.0, &["GLS", "Limited", "GL", "Platinum", "N Line"], vec![
            fx("2.0", 0.92, A6, 2012, 2019),
            gs("1.6 TURBO", 1.0, DCT7, 2017, 2024),
        ]),
        md("Hyundai", "ix35", Uec, 1.0, 58.0, &["GL", "GLS", "Launch", "Special", "Top"], vec![
            fx("2.0", 0.86, M6A6, 2012, 2021),
        ]),
        md("Hyundai", "Kona", Uec, 0.6, 38.0, &["Hybrid", "Ultimate", "Electric", "Premium", "N Line"], vec![
            hev("1.6 HÍBRIDO", GA, 1.0, DCT6, 2022, 2026),
            ev("ELÉTRICO 150 kW", 1.02, 305.0, 2021, 2024),
        ]),
        // ------------------------------------------------------------------ Renault
        md("Renault", "Kwid", Sub, 3.0, 38.0, &["Life", "Zen", "Intense", "Outsider", "Iconic"], vec![
            fx("1.0", 1.1, M5, 2018, 2026),
        ]),
        md("Renault", "Kwid E-Tech", Sub, 0.8, 0.0, &["Intense", "Iconic", "Plus", "Standard", "Top"], vec![
            ev("ELÉTRICO 48 kW", 1.3, 210.0, 2022, 2026),
        ]),
        md("Renault", "Sandero", Comp, 2.5, 50.0, T_REN, vec![
            fx("1.0", 1.03, M5, 2012, 2022),
            fx("1.6", 0.94, M5CV, 2012, 2022),
        ]),
        md("Renault", "Logan", Med, 1.5, 50.0, T_REN, vec![
            fx("1.0", 1.02, M5, 2012, 2022),
            fx("1.6", 0.94, M5CV, 2012, 2022),
        ]),
        md("Renault", "Duster", Uec, 2.5, 50.0, &["Expression", "Dynamique", "Zen", "Intense", "Iconic"], vec![
            fx("1.6", 0.93, M5CV, 2012, 2026).w(2.0),
            fx("2.0", 0.86, M6A6, 2012, 2020),
            fx("1.3 TURBO", 0.98, CV, 2023, 2026),
        ]),
        md("Renault", "Oroch", PicC, 2.0, 50.0, &["Expression", "Dynamique", "Intense", "Outsider", "Pro"], vec![
            fx("1.6", 0.9, M5CV, 2016, 2026),
            fx("2.0", 0.85, M6A6, 2016, 2022),
            fx("1.3 TURBO", 0.95, CV, 2023, 2026),
        ]),
        md("Renault", "Captur", Uec, 1.2, 50.0, &["Life", "Zen", "Intense", "Iconic", "Bose"], vec![
            fx("1.6", 0.9, CV, 2017, 2021),
            fx("1.3 TURBO", 0.97, CV, 2022, 2024),
        ]),
        md("Renault", "Kardian", Uec, 1.2, 50.0, &["Evolution", "Techno", "Première Edition", "Iconic", "Zen"], vec![
            fx("1.0 TURBO", 1.04, DCT6, 2025, 2026),
        ]),
        md("Renault", "Kangoo", Com, 1.0, 60.0, T_COM, vec![
            fx("1.6", 0.92, M5, 2012, 2018),
            ev("ELÉTRICO 90 kW", 0.95, 260.0, 2023, 2026),
        ]),
        md("Renault", "Master", Com, 0.8, 80.0, T_COM, vec![
            dz("2.3 TURBO DIESEL", 0.9, M6, 2012, 2026),
        ]),
        md("Renault", "Zoe", Sub, 0.4, 0.0, &["Zen", "Intense", "Life", "Iconic", "E-Tech"], vec![
            ev("ELÉTRICO 100 kW", 1.15, 300.0, 2021, 2023),
        ]),
        // ------------------------------------------------------------------ Jeep
        md("Jeep", "Renegade", Uec, 3.0, 55.0, T_JEEP, vec![
            fx("1.8", 0.86, M5A6, 2016, 2021),
            fx("1.3 TURBO", 0.94, A6, 2022, 2026).w(1.5),
            dz("2.0 TURBO DIESEL", 1.0, A9, 2016, 2022),
        ]),
        md("Jeep", "Compass", Ueg, 3.0, 60.0, T_JEEP, vec![
            fx("2.0", 0.92, A6, 2017, 2021),
            fx("1.3 TURBO", 1.02, A6, 2022, 2026).w(2.0),
            dz("2.0 TURBO DIESEL", 1.04, A9, 2017, 2026),
            phev("1.3 TURBO PHEV", 0.95, 49.0, A6, 2022, 2025).w(0.6),
        ]),
        md("Jeep", "Commander", Ueg, 1.5, 60.0, &["Limited", "Overland", "Blackhawk", "Longitude", "Série S"], vec![
            fx("1.3 TURBO", 0.98, A6, 2022, 2026),
            dz("2.0 TURBO DIESEL", 0.99, A9, 2022, 2026),
        ]),
        md("Jeep", "Wrangler", Fde, 0.6, 70.0, &["Sport", "Sahara", "Rubicon", "Unlimited", "Willys"], vec![
            gs("3.6 V6", 0.82, A8, 2012, 2018),
            gs("2.0 TURBO", 0.95, A8, 2019, 2026),
            phev("2.0 TURBO PHEV", 0.8, 42.0, A8, 2023, 2026).w(0.5),
        ]),
        md("Jeep", "Grand Cherokee", Ueg, 0.6, 80.0, &["Limited", "Overland", "Summit", "Laredo", "Trailhawk"], vec![
            gs("3.6 V6", 0.8, A8, 2012, 2022),
            dz("3.0 V6 TURBO DIESEL", 0.92, A8, 2012, 2020),
            phev("2.0 TURBO PHEV", 0.82, 45.0, A8, 2023, 2026),
        ]),
        // ------------------------------------------------------------------ Honda
        md("Honda", "City", Med, 2.0, 40.0, T_HON, vec![
            fx("1.5", 1.0, M5CV, 2012, 2026),
        ]),
        md("Honda", "Fit", Comp, 2.0, 46.0, &["DX", "LX", "EX", "EXL", "Personal"], vec![
            fx("1.4", 1.0, M5, 2012, 2014),
            fx("1.5", 0.99, M5CV, 2012, 2021),
        ]),
        md("Honda", "Civic", Med, 2.0, 47.0, &["LXS", "EX", "EXL", "Touring", "Advanced Hybrid"], vec![
            fx("1.8", 0.91, M5A6, 2012, 2016),
            fx("2.0", 0.9, CV, 2014, 2021),
            gs("1.5 TURBO", 1.0, CV, 2017, 2021),
            hev("2.0 HÍBRIDO", GA, 1.04, CV, 2023, 2026),
        ]),
        md("Honda", "HR-V", Uec, 2.5, 50.0, &["LX", "EX", "EXL", "Touring", "Advance"], vec![
            fx("1.8", 0.94, CV, 2015, 2022),
            fx("1.5", 0.98, CV, 2023, 2026),
            fx("1.5 TURBO", 0.95, CV, 2023, 2026),
        ]),
        md("Honda", "WR-V", Uec, 1.0, 45.0, &["LX", "EX", "EXL", "Touring", "Advance"], vec![
            fx("1.5", 0.98, CV, 2017, 2022),
        ]),
        md("Honda", "CR-V", Ueg, 0.8, 57.0, &["LX", "EX", "EXL", "Touring", "Advanced Hybrid"], vec![
            fx("2.0", 0.93, A6, 2012, 2017),
            gs("1.5 TURBO", 1.0, CV, 2018, 2022),
            hev("2.0 HÍBRIDO", GA, 0.93, CV, 2024, 2026),
        ]),
        md("Honda", "Accord", Gra, 0.5, 48.0, &["EX", "EXL", "Touring", "Hybrid", "Sport"], vec![
            gs("2.0 TURBO", 0.95, A10, 2018, 2021),
            hev("2.0 HÍBRIDO", GA, 0.97, CV, 2019, 2022),
        ]),
        // ------------------------------------------------------------------ Nissan
        md("Nissan", "Kicks", Uec, 3.0, 41.0, &["S", "Sense", "Advance", "SV", "Exclusive"], vec![
            fx("1.6", 1.0, M5CV, 2017, 2026).w(2.0),
            fx("1.0 TURBO", 1.04, CV, 2025, 2026),
        ]),
        md("Nissan", "Versa", Med, 2.0, 41.0, T_NIS, vec![
            fx("1.6", 1.0, M5CV, 2012, 2026),
        ]),
        md("Nissan", "March", Comp, 1.5, 41.0, &["S", "SV", "SL", "Rio", "Active"], vec![
            fx("1.0", 1.04, M5, 2012, 2020),
            fx("1.6", 0.95, M5CV, 2012, 2020),
        ]),
        md("Nissan", "Sentra", Med, 1.0, 50.0, &["S", "SV", "SL", "Exclusive", "Advance"], vec![
            fx("2.0", 0.92, CV, 2012, 2026),
        ]),
        md("Nissan", "Grand Livina", Minivan, 0.5, 50.0, &["S", "SL", "X-Gear", "Top", "Standard"], vec![
            fx("1.8", 0.92, M6A6, 2012, 2014),
        ]),
        md("Nissan", "Frontier", Pic, 2.0, 80.0, &["S", "XE", "SE", "LE", "Attack"], vec![
            dz("2.3 TURBO DIESEL", 1.02, M6A6, 2017, 2026).w(2.0),
            dz("2.5 TURBO DIESEL", 0.95, M6, 2012, 2016),
        ]),
        md("Nissan", "Leaf", Med, 0.5, 0.0, &["S", "SV", "SL", "Tekna", "e+"], vec![
            ev("ELÉTRICO 110 kW", 1.08, 272.0, 2019, 2026),
        ]),
        // ------------------------------------------------------------------ Ford
        md("Ford", "Ka", Comp, 3.0, 51.0, &["S", "SE", "SE Plus", "SEL", "Freestyle"], vec![
            fx("1.0", 1.05, M5, 2012, 2021).w(2.0),
            fx("1.5", 0.96, M5A6, 2015, 2021),
        ]),
        md("Ford", "Ka Sedan", Med, 1.5, 51.0, &["S", "SE", "SE Plus", "SEL", "Titanium"], vec![
            fx("1.0", 1.05, M5, 2015, 2021),
            fx("1.5", 0.96, M5A6, 2015, 2021),
        ]),
        md("Ford", "Fiesta", Comp, 1.5, 50.0, &["S", "SE", "SEL", "Titanium", "Sport"], vec![
            fx("1.6", 0.95, M5AM5, 2012, 2019),
            gs("1.0 TURBO", 1.04, M6, 2014, 2017),
        ]),
        md("Ford", "Focus", Med, 1.2, 55.0, &["S", "SE", "SE Plus", "Titanium", "Titanium Plus"], vec![
            fx("1.6", 0.94, M5AM5, 2012, 2019),
            fx("2.0", 0.88, DCT6, 2012, 2019),
        ]),
        md("Ford", "EcoSport", Uec, 2.0, 52.0, &["S", "SE", "Freestyle", "Titanium", "Storm"], vec![
            fx("1.6", 0.9, M5AM5, 2012, 2017),
            fx("1.5", 0.94, M5A6, 2018, 2022),
            fx("2.0", 0.84, A6, 2013, 2022),
        ]),
        md("Ford", "Territory", Uec, 1.0, 55.0, &["SEL", "Titanium", "Titanium Plus", "Launch", "Special"], vec![
            gs("1.5 TURBO", 0.92, DCT7, 2021, 2026),
        ]),
        md("Ford", "Bronco Sport", Uec, 0.6, 50.0, &["Wildtrak", "Big Bend", "Badlands", "Outer Banks", "Base"], vec![
            gs("2.0 TURBO", 0.85, A8, 2021, 2026),
        ]),
        md("Ford", "Bronco", Fde, 0.4, 64.0, &["Wildtrak", "Badlands", "Big Bend", "Black Diamond", "Raptor"], vec![
            gs("2.7 V6 TURBO", 0.85, A10, 2022, 2026),
        ]),
        md("Ford", "Ranger", Pic, 3.0, 80.0, T_PICK, vec![
            dz("2.2 TURBO DIESEL", 1.05, M6A6, 2012, 2022),
            dz("3.2 TURBO DIESEL", 0.93, A6, 2012, 2022),
            dz("3.0 V6 TURBO DIESEL", 0.93, A10, 2024, 2026),
            dz("2.0 TURBO DIESEL", 1.04, A6, 2024, 2026),
            fx("2.5", 0.94, M6, 2013, 2019).w(0.5),
        ]),
        md("Ford", "Maverick", Pic, 1.0, 62.0, &["Lariat", "Lariat FX4", "XLT", "Tremor", "Hybrid"], vec![
            gs("2.0 TURBO", 1.0, A8, 2022, 2026),
            hev("2.5 HÍBRIDO", GA, 0.86, CV, 2023, 2026),
        ]),
        md("Ford", "Mustang", Esp, 0.6, 61.0, T_SPORT, vec![
            gs("5.0 V8", 0.82, A10, 2018, 2026),
        ]),
        md("Ford", "Mustang Mach-E", Ueg, 0.4, 0.0, &["Premium", "GT", "Select", "California Route", "Performance"], vec![
            ev("ELÉTRICO 358 kW", 0.82, 400.0, 2022, 2026),
        ]),
        // ------------------------------------------------------------------ BYD
        md("BYD", "Dolphin Mini", Sub, 1.5, 0.0, &["GS", "GL", "Plus", "Standard", "Premium"], vec![
            ev("ELÉTRICO 55 kW", 1.3, 280.0, 2024, 2026),
        ]),
        md("BYD", "Dolphin", Comp, 1.2, 0.0, &["GS", "Plus", "GL", "Premium", "Launch"], vec![
            ev("ELÉTRICO 70 kW", 1.2, 340.0, 2023, 2026),
            ev("ELÉTRICO 150 kW", 1.1, 400.0, 2024, 2026),
        ]),
        md("BYD", "Seal", Gra, 0.6, 0.0, &["AWD Performance", "RWD", "Design", "Premium", "Excellence"], vec![
            ev("ELÉTRICO 390 kW", 0.95, 470.0, 2023, 2026),
        ]),
        md("BYD", "Yuan Plus", Uec, 0.8, 0.0, &["GS", "Plus", "Premium", "Pro", "Extended"], vec![
            ev("ELÉTRICO 150 kW", 0.98, 330.0, 2023, 2026),
        ]),
        md("BYD", "Han", ExG, 0.4, 0.0, &["EV", "Premium", "AWD", "Executive", "Launch"], vec![
            ev("ELÉTRICO 380 kW", 0.85, 350.0, 2023, 2026),
        ]),
        md("BYD", "Tan", Ueg, 0.3, 0.0, &["EV", "Premium", "AWD", "Executive", "Launch"], vec![
            ev("ELÉTRICO 380 kW", 0.7, 310.0, 2023, 2026),
        ]),
        md("BYD", "Song Plus", Ueg, 1.0, 52.0, T_BYD, vec![
            phev("1.5 PHEV", 1.08, 100.0, CV, 2023, 2026),
        ]),
        md("BYD", "Song Pro", Uec, 0.6, 52.0, T_BYD, vec![
            phev("1.5 PHEV", 1.12, 70.0, CV, 2025, 2026),
        ]),
        md("BYD", "King", Med, 0.6, 48.0, T_BYD, vec![
            phev("1.5 PHEV", 1.2, 80.0, CV, 2025, 2026),
        ]),
        md("BYD", "Shark", Pic, 0.4, 60.0, &["GS", "GL", "Premium", "AWD", "Launch"], vec![
            phev("1.5 TURBO PHEV", 0.8, 90.0, CV, 2025, 2026),
        ]),
        // ------------------------------------------------------------------ GWM
        md("GWM", "Haval H6", Ueg, 1.2, 55.0, T_GWM, vec![
            hev("1.5 TURBO HÍBRIDO", GA, 0.88, CV, 2023, 2026),
            phev("1.5 TURBO PHEV", 0.95, 90.0, CV, 2023, 2026),
            phev("1.5 TURBO PHEV AWD", 0.85, 85.0, CV, 2024, 2026),
        ]),
        md("GWM", "Ora 03", Comp, 0.6, 0.0, T_GWM, vec![
            ev("ELÉTRICO 126 kW", 1.1, 310.0, 2023, 2026),
        ]),
        md("GWM", "Poer", Pic, 0.3, 78.0, T_GWM, vec![
            dz("2.4 TURBO DIESEL", 0.95, A9, 2025, 2026),
        ]),
        // ------------------------------------------------------------------ Caoa Chery
        md("Caoa Chery", "Tiggo 5x", Uec, 1.5, 51.0, T_CHERY, vec![
            fx("1.5 TURBO", 0.95, CV, 2019, 2026),
            hev("1.5 TURBO HÍBRIDO", FL, 0.86, CV, 2024, 2026).w(0.5),
        ]),
        md("Caoa Chery", "Tiggo 7", Ueg, 1.2, 51.0, T_CHERY, vec![
            fx("1.5 TURBO", 1.02, CV, 2019, 2026),
            hev("1.5 TURBO HÍBRIDO", FL, 0.84, CV, 2024, 2026).w(0.5),
        ]),
        md("Caoa Chery", "Tiggo 8", Ueg, 0.8, 57.0, T_CHERY, vec![
            gs("1.6 TURBO", 0.95, DCT7, 2021, 2026),
            phev("1.5 TURBO PHEV", 0.9, 50.0, CV, 2023, 2026),
        ]),
        md("Caoa Chery", "Tiggo 2", Uec, 1.0, 48.0, T_CHERY, vec![
            fx("1.5", 0.92, M5A6, 2018, 2021),
        ]),
        md("Caoa Chery", "Arrizo 6", Med, 0.8, 50.0, T_CHERY, vec![
            fx("1.5 TURBO", 0.95, CV, 2020, 2026),
        ]),
        md("Caoa Chery", "QQ", Sub, 0.8, 35.0, &["ACT", "Smile", "Look", "Standard", "Top"], vec![
            gs("1.0", 1.0, M5, 2012, 2020),
        ]),
        md("Caoa Chery", "iCar", Sub, 0.4, 0.0, &["EQ1", "Plus", "Standard", "Premium", "Launch"], vec![
            ev("ELÉTRICO 45 kW", 1.3, 282.0, 2022, 2026),
        ]),
        // ------------------------------------------------------------------ Peugeot / Citroën
        md("Peugeot", "208", Comp, 2.5, 47.0, T_PEU, vec![
            fx("1.5", 0.97, M5, 2013, 2016),
            fx("1.6", 0.94, M5A6, 2013, 2021),
            fx("1.0", 1.06, M5, 2023, 2026),
            fx("1.0 TURBO", 1.04, CV, 2024, 2026),
            ev("ELÉTRICO 100 kW", 1.15, 220.0, 2021, 2026).w(0.5),
        ]),
        md("Peugeot", "2008", Uec, 1.5, 55.0, T_PEU, vec![
            fx("1.6", 0.9, M5A6, 2015, 2023),
            gs("1.6 TURBO", 0.9, A6, 2016, 2021),
            fx("1.0 TURBO", 1.0, CV, 2024, 2026),
            ev("ELÉTRICO 100 kW", 1.05, 234.0, 2022, 2024).w(0.5),
        ]),
        md("Peugeot", "308", Med, 0.8, 60.0, T_PEU, vec![
            fx("1.6", 0.92, M5A6, 2012, 2019),
            gs("1.6 TURBO", 0.95, A6, 2016, 2019),
        ]),
        md("Peugeot", "3008", Ueg, 0.6, 53.0, T_PEU, vec![
            gs("1.6 TURBO", 0.98, A6, 2017, 2023),
        ]),
        md("Peugeot", "Partner", Com, 1.0, 55.0, T_COM, vec![
            fx("1.6", 0.95, M5, 2012, 2026),
        ]),
        md("Citroën", "C3", Comp, 2.5, 47.0, T_CIT, vec![
            fx("1.5", 0.97, M5, 2013, 2016),
            fx("1.6", 0.93, M5A6, 2013, 2022),
            fx("1.0", 1.06, M5, 2023, 2026).w(2.0),
            fx("1.0 TURBO", 1.02, CV, 2024, 2026),
        ]),
        md("Citroën", "C4 Cactus", Uec, 1.2, 50.0, T_CIT, vec![
            fx("1.6", 0.92, M5A6, 2019, 2024),
            fx("1.6 TURBO", 0.9, A6, 2019, 2023),
        ]),
        md("Citroën", "C3 Aircross", Uec, 1.2, 47.0, T_CIT, vec![
            fx("1.6", 0.9, M5A6, 2013, 2020),
            fx("1.0 TURBO", 1.0, CV, 2024, 2026),
        ]),
        md("Citroën", "C4 Picasso", Minivan, 0.5, 57.0, &["Intensive", "Seduction", "Exclusive", "Live", "Feel"], vec![
            gs("1.6 TURBO", 0.96, A6, 2015, 2018),
            fx("2.0", 0.88, A6, 2012, 2014),
        ]),
        md("Citroën", "Jumpy", Com, 0.8, 69.0, T_COM, vec![
            dz("1.6 TURBO DIESEL", 1.05, M6, 2018, 2026),
        ]),
        // ------------------------------------------------------------------ Mitsubishi
        md("Mitsubishi", "L200 Triton", Pic, 2.0, 75.0, T_MIT, vec![
            dz("2.4 TURBO DIESEL", 1.0, M6A6, 2017, 2026).w(2.0),
            dz("3.2 TURBO DIESEL", 0.9, M5, 2012, 2016),
            fx("3.5 V6", 0.78, A6, 2012, 2016),
        ]),
        md("Mitsubishi", "Outlander", Ueg, 0.8, 60.0, T_MIT, vec![
            gs("2.0", 0.98, CV, 2012, 2022),
            gs("3.0 V6", 0.8, A6, 2012, 2020),
            phev("2.0 PHEV", 0.82, 45.0, CV, 2019, 2024),
        ]),
        md("Mitsubishi", "Pajero Sport", Ueg, 0.8, 68.0, T_MIT, vec![
            dz("2.4 TURBO DIESEL", 0.98, A8, 2019, 2026),
            fx("3.5 V6", 0.76, A6, 2012, 2016),
        ]),
        md("Mitsubishi", "ASX", Uec, 1.0, 60.0, T_MIT, vec![
            fx("2.0", 0.86, M5CV, 2012, 2022),
        ]),
        md("Mitsubishi", "Eclipse Cross", Uec, 0.8, 60.0, T_MIT, vec![
            gs("1.5 TURBO", 0.92, CV, 2018, 2026),
        ]),
        md("Mitsubishi", "Pajero Full", Fde, 0.4, 88.0, T_MIT, vec![
            dz("3.2 TURBO DIESEL", 0.88, A6, 2012, 2021),
        ]),
        // ------------------------------------------------------------------ Kia
        md("Kia", "Sportage", Ueg, 1.2, 62.0, T_KIA, vec![
            fx("2.0", 0.88, M6A6, 2012, 2021),
            gs("1.6 TURBO", 0.98, DCT7, 2022, 2026),
            hev("1.6 TURBO HÍBRIDO", GA, 0.88, A6, 2023, 2026),
        ]),
        md("Kia", "Stonic", Uec, 0.6, 45.0, T_KIA, vec![
            hev("1.0 TURBO HÍBRIDO", GA, 0.86, DCT7, 2022, 2026),
        ]),
        md("Kia", "Cerato", Med, 0.8, 50.0, T_KIA, vec![
            fx("1.6", 0.95, M6A6, 2012, 2019),
            fx("2.0", 0.9, A6, 2014, 2024),
        ]),
        md("Kia", "Picanto", Sub, 1.0, 35.0, T_KIA, vec![
            fx("1.0", 1.05, M5, 2012, 2019),
        ]),
        md("Kia", "Soul", Comp, 0.6, 48.0, T_KIA, vec![
            fx("1.6", 0.9, M6A6, 2012, 2016),
        ]),
        md("Kia", "Niro", Uec, 0.4, 0.0, T_KIA, vec![
            hev("1.6 HÍBRIDO", GA, 1.08, DCT6, 2022, 2024),
            ev("ELÉTRICO 150 kW", 1.0, 390.0, 2023, 2026),
        ]),
        md("Kia", "Carnival", Minivan, 0.4, 72.0, T_KIA, vec![
            gs("3.5 V6", 0.75, A8, 2012, 2026),
        ]),
        md("Kia", "Bongo", Com, 0.8, 60.0, T_COM, vec![
            dz("2.5 TURBO DIESEL", 1.0, M5, 2012, 2026),
        ]),
        // ------------------------------------------------------------------ BMW
        md("BMW", "320i", Med, 1.2, 59.0, &["Sport", "GP", "M Sport", "Sport GP", "Modern"], vec![
            fx("2.0 TURBO", 0.95, A8, 2012, 2026),
        ]),
        md("BMW", "330e", Med, 0.4, 40.0, &["M Sport", "Sport", "Luxury", "Modern", "Sport GP"], vec![
            phev("2.0 TURBO PHEV", 0.95, 55.0, A8, 2020, 2026),
        ]),
        md("BMW", "X1", Uec, 1.2, 51.0, &["sDrive20i", "xDrive25i", "X-Line", "M Sport", "GP"], vec![
            fx("2.0 TURBO", 0.9, A8, 2012, 2022),
            gs("2.0 TURBO", 0.9, DCT7, 2023, 2026),
            phev("1.5 TURBO PHEV", 1.0, 50.0, DCT7, 2021, 2022).w(0.4),
        ]),
        md("BMW", "iX1", Uec, 0.5, 0.0, &["eDrive20", "xDrive30", "M Sport", "X-Line", "Launch"], vec![
            ev("ELÉTRICO 150 kW", 0.98, 340.0, 2023, 2026),
        ]),
        md("BMW", "X5", Ueg, 0.4, 69.0, T_LUX, vec![
            gs("3.0 TURBO", 0.85, A8, 2012, 2026),
            phev("3.0 TURBO PHEV", 0.78, 80.0, A8, 2020, 2026),
        ]),
        md("BMW", "M3", Esp, 0.3, 59.0, T_SPORT, vec![
            gs("3.0 TURBO", 0.95, A8, 2015, 2026),
        ]),
        md("BMW", "i4", Gra, 0.3, 0.0, &["eDrive35", "eDrive40", "M50", "M Sport", "Gran Coupé"], vec![
            ev("ELÉTRICO 250 kW", 1.0, 430.0, 2022, 2026),
        ]),
        md("BMW", "i7", ExG, 0.2, 0.0, &["xDrive60", "M70", "Pure Excellence", "M Sport", "Executive"], vec![
            ev("ELÉTRICO 400 kW", 0.72, 520.0, 2023, 2026),
        ]),
        md("BMW", "740i", ExG, 0.3, 78.0, T_LUX, vec![
            gs("3.0 TURBO", 0.98, A8, 2016, 2026),
        ]),
        // ------------------------------------------------------------------ Mercedes-Benz
        md("Mercedes-Benz", "GLA", Uec, 1.0, 51.0, &["GLA 200", "GLA 250", "AMG Line", "Advance", "Enduro"], vec![
            gs("1.3 TURBO", 0.95, DCT7, 2020, 2026),
            fx("1.6 TURBO", 0.92, DCT7, 2015, 2019),
            gs("2.0 TURBO", 0.85, DCT7, 2015, 2026),
        ]),
        md("Mercedes-Benz", "C 300", Med, 0.6, 66.0, &["AMG Line", "Avantgarde", "Exclusive", "Sport", "Coupé"], vec![
            gs("2.0 TURBO", 0.88, A9, 2019, 2026),
            phev("2.0 TURBO PHEV", 0.9, 100.0, A9, 2023, 2026).w(0.5),
        ]),
        md("Mercedes-Benz", "C 180", Med, 0.8, 66.0, &["Avantgarde", "Exclusive", "Classic", "Sport", "Coupé"], vec![
            fx("1.6 TURBO", 0.96, A7, 2015, 2021),
            gs("1.5 TURBO", 0.95, A9, 2022, 2026),
        ]),
        md("Mercedes-Benz", "E 300", Gra, 0.4, 66.0, T_LUX, vec![
            gs("2.0 TURBO", 0.92, A9, 2017, 2026),
        ]),
        md("Mercedes-Benz", "S 500", ExG, 0.2, 76.0, T_LUX, vec![
            gs("3.0 TURBO", 0.9, A9, 2021, 2026),
        ]),
        md("Mercedes-Benz", "EQA", Uec, 0.3, 0.0, &["250", "300 4MATIC", "AMG Line", "Launch", "Progressive"], vec![
            ev("ELÉTRICO 140 kW", 0.98, 420.0, 2022, 2026),
        ]),
        md("Mercedes-Benz", "EQS", ExG, 0.2, 0.0, &["450+", "580 4MATIC", "AMG Line", "Launch", "SUV"], vec![
            ev("ELÉTRICO 385 kW", 0.8, 580.0, 2022, 2026),
        ]),
        md("Mercedes-Benz", "AMG GT", Esp, 0.2, 65.0, T_SPORT, vec![
            gs("4.0 V8 TURBO", 0.88, DCT7, 2016, 2026),
        ]),
        md("Mercedes-Benz", "Sprinter", Com, 0.8, 75.0, T_COM, vec![
            dz("2.2 TURBO DIESEL", 0.92, M6, 2012, 2026),
        ]),
        md("Mercedes-Benz", "Classe G", Fde, 0.2, 80.0, T_LUX, vec![
            gs("4.0 V8 TURBO", 0.75, A9, 2019, 2026),
        ]),
        // ------------------------------------------------------------------ Audi
        md("Audi", "A3", Med, 1.0, 50.0, T_AUDI, vec![
            fx("1.4 TURBO", 1.0, DCT7, 2013, 2020),
            gs("1.4 TURBO", 1.02, DCT7, 2021, 2026),
            gs("2.0 TURBO", 0.9, DCT7, 2013, 2026),
        ]),
        md("Audi", "Q3", Uec, 0.8, 64.0, T_AUDI, vec![
            fx("1.4 TURBO", 0.95, DCT6, 2016, 2020),
            gs("1.4 TURBO", 0.95, A6, 2021, 2026),
            gs("2.0 TURBO", 0.86, DCT7, 2012, 2026),
        ]),
        md("Audi", "A4", Gra, 0.4, 54.0, T_AUDI, vec![
            gs("2.0 TURBO", 0.98, A7, 2012, 2026),
        ]),
        md("Audi", "Q5", Ueg, 0.4, 65.0, T_AUDI, vec![
            gs("2.0 TURBO", 0.92, A7, 2012, 2026),
            phev("2.0 TURBO PHEV", 0.82, 60.0, A7, 2021, 2026),
        ]),
        md("Audi", "Q8 e-tron", Ueg, 0.3, 0.0, T_AUDI, vec![
            ev("ELÉTRICO 300 kW", 0.7, 430.0, 2023, 2026),
        ]),
        md("Audi", "e-tron GT", Esp, 0.2, 0.0, T_AUDI, vec![
            ev("ELÉTRICO 440 kW", 0.78, 420.0, 2022, 2026),
        ]),
        md("Audi", "RS 6", Esp, 0.2, 73.0, T_SPORT, vec![
            gs("4.0 V8 TURBO", 0.86, A8, 2014, 2026),
        ]),
        // ------------------------------------------------------------------ Volvo
        md("Volvo", "XC40", Uec, 0.8, 54.0, T_VOLVO, vec![
            gs("2.0 TURBO", 0.92, A8, 2019, 2021),
            phev("1.5 TURBO PHEV", 0.9, 45.0, DCT7, 2020, 2022),
            ev("ELÉTRICO 300 kW", 0.9, 400.0, 2021, 2026),
        ]),
        md("Volvo", "EX30", Uec, 0.6, 0.0, T_VOLVO, vec![
            ev("ELÉTRICO 200 kW", 1.05, 338.0, 2024, 2026),
        ]),
        md("Volvo", "C40", Uec, 0.3, 0.0, T_VOLVO, vec![
            ev("ELÉTRICO 300 kW", 0.9, 370.0, 2022, 2026),
        ]),
        md("Volvo", "XC60", Ueg, 0.6, 71.0, T_VOLVO, vec![
            gs("2.0 TURBO", 0.9, A8, 2012, 2020),
            phev("2.0 TURBO PHEV", 0.82, 52.0, A8, 2019, 2026),
        ]),
        md("Volvo", "XC90", Ueg, 0.3, 71.0, T_VOLVO, vec![
            phev("2.0 TURBO PHEV", 0.76, 48.0, A8, 2019, 2026),
        ]),
        md("Volvo", "S90", Gra, 0.2, 60.0, T_VOLVO, vec![
            phev("2.0 TURBO PHEV", 0.86, 55.0, A8, 2021, 2026),
        ]),
        // ------------------------------------------------------------------ Porsche
        md("Porsche", "911", Esp, 0.5, 64.0, &["Carrera", "Carrera S", "Carrera 4S", "Targa 4", "Turbo S"], vec![
            gs("3.0 TURBO", 0.92, DCT7, 2016, 2026),
            gs("3.8", 0.84, DCT7, 2012, 2019),
        ]),
        md("Porsche", "Taycan", Esp, 0.3, 0.0, T_POR, vec![
            ev("ELÉTRICO 300 kW", 0.8, 440.0, 2021, 2026),
        ]),
        md("Porsche", "Cayenne", Ueg, 0.4, 75.0, T_POR, vec![
            gs("3.0 V6 TURBO", 0.82, A8, 2012, 2026),
            phev("3.0 V6 TURBO PHEV", 0.72, 42.0, A8, 2019, 2026),
        ]),
        md("Porsche", "Macan", Ueg, 0.4, 65.0, T_POR, vec![
            gs("2.0 TURBO", 0.88, DCT7, 2014, 2024),
            ev("ELÉTRICO 300 kW", 0.82, 500.0, 2025, 2026),
        ]),
        md("Porsche", "Panamera", ExG, 0.2, 75.0, T_POR, vec![
            gs("2.9 V6 TURBO", 0.9, DCT7, 2017, 2026),
            phev("2.9 V6 TURBO PHEV", 0.74, 50.0, DCT7, 2018, 2026),
        ]),
        // ------------------------------------------------------------------ RAM
        md("RAM", "Rampage", Pic, 1.0, 70.0, &["Big Horn", "Laramie", "Rebel", "R/T", "Night Edition"], vec![
            dz("2.2 TURBO DIESEL", 1.02, A9, 2024, 2026),
            gs("2.0 TURBO", 0.98, A9, 2024, 2026),
        ]),
        md("RAM", "1500", Pic, 0.5, 80.0, &["Laramie", "Rebel", "Limited", "Classic", "Night Edition"], vec![
            gs("5.7 V8", 0.72, A8, 2021, 2026),
            gs("3.0 TURBO", 0.85, A8, 2025, 2026),
        ]),
        md("RAM", "2500", Pic, 0.3, 80.0, &["Laramie", "Limited", "Night Edition", "Longhorn", "Power Wagon"], vec![
            dz("6.7 TURBO DIESEL", 0.82, A6, 2020, 2026),
        ]),
        // ------------------------------------------------------------------ JAC
        md("JAC", "E-JS1", Sub, 0.5, 0.0, T_JAC, vec![
            ev("ELÉTRICO 45 kW", 1.26, 210.0, 2021, 2026),
        ]),
        md("JAC", "E-JS4", Uec, 0.4, 0.0, T_JAC, vec![
            ev("ELÉTRICO 110 kW", 1.0, 330.0, 2022, 2026),
        ]),
        md("JAC", "T40", Uec, 0.6, 45.0, T_JAC, vec![
            fx("1.5", 0.92, M5CV, 2016, 2023),
        ]),
        md("JAC", "J3", Comp, 0.5, 45.0, T_JAC, vec![
            fx("1.4", 0.94, M5, 2012, 2016),
        ]),
        // ------------------------------------------------------------------ Land Rover
        md("Land Rover", "Defender", Fde, 0.4, 80.0, T_LR, vec![
            gs("2.0 TURBO", 0.95, A8, 2020, 2026),
            dz("3.0 TURBO DIESEL", 0.92, A8, 2021, 2026),
            phev("2.0 TURBO PHEV", 0.75, 43.0, A8, 2022, 2026).w(0.5),
        ]),
        md("Land Rover", "Discovery", Ueg, 0.4, 77.0, T_LR, vec![
            dz("3.0 TURBO DIESEL", 0.95, A8, 2017, 2026),
            gs("3.0 V6", 0.8, A8, 2017, 2020),
        ]),
        md("Land Rover", "Discovery Sport", Ueg, 0.5, 65.0, T_LR, vec![
            gs("2.0 TURBO", 0.95, A9, 2015, 2026),
            dz("2.0 TURBO DIESEL", 1.0, A9, 2015, 2026),
        ]),
        md("Land Rover", "Range Rover Evoque", Uec, 0.5, 65.0, T_LR, vec![
            gs("2.0 TURBO", 0.9, A9, 2012, 2026),
            phev("1.5 TURBO PHEV", 0.9, 55.0, A8, 2021, 2026).w(0.5),
        ]),
        // ------------------------------------------------------------------ Subaru / Suzuki / Lexus / Mini
        md("Subaru", "Forester", Ueg, 0.5, 60.0, T_SUB, vec![
            gs("2.0", 1.02, CV, 2012, 2026),
            gs("2.5", 0.96, CV, 2012, 2020),
            hev("2.0 e-BOXER HÍBRIDO", GA, 0.84, CV, 2020, 2026),
        ]),
        md("Subaru", "XV", Uec, 0.4, 60.0, T_SUB, vec![
            gs("2.0", 0.98, CV, 2012, 2022),
        ]),
        md("Subaru", "WRX", Esp, 0.2, 60.0, T_SPORT, vec![
            gs("2.0 TURBO", 1.05, M6CV, 2015, 2022),
        ]),
        md("Suzuki", "Jimny", Fde, 0.8, 40.0, T_SUZ, vec![
            gs("1.3", 1.12, M5, 2012, 2018),
            gs("1.5", 1.08, M5, 2019, 2026),
        ]),
        md("Suzuki", "Jimny Sierra", Fde, 0.4, 40.0, T_SUZ, vec![
            gs("1.5", 1.06, M5, 2019, 2026),
        ]),
        md("Suzuki", "Vitara", Uec, 0.4, 47.0, T_SUZ, vec![
            gs("1.6", 0.96, M5A6, 2016, 2020),
            gs("1.4 TURBO", 1.0, A6, 2018, 2026),
        ]),
        md("Suzuki", "S-Cross", Uec, 0.3, 47.0, T_SUZ, vec![
            gs("1.6", 0.95, M5A6, 2012, 2020),
        ]),
        md("Lexus", "NX", Ueg, 0.5, 55.0, T_LEX, vec![
            hev("2.5 HÍBRIDO", GA, 0.94, CV, 2015, 2026),
            phev("2.5 PHEV", 0.92, 69.0, CV, 2022, 2026).w(0.5),
        ]),
        md("Lexus", "UX", Uec, 0.4, 43.0, T_LEX, vec![
            hev("2.0 HÍBRIDO", GA, 1.05, CV, 2019, 2026),
        ]),
        md("Lexus", "ES", Gra, 0.3, 50.0, T_LEX, vec![
            hev("2.5 HÍBRIDO", GA, 1.02, CV, 2019, 2026),
        ]),
        md("Lexus", "RX", Ueg, 0.3, 65.0, T_LEX, vec![
            hev("3.5 V6 HÍBRIDO", GA, 0.84, CV, 2016, 2022),
            hev("2.5 HÍBRIDO", GA, 0.92, CV, 2023, 2026),
        ]),
        md("Mini", "Cooper", Sub, 0.8, 44.0, T_MINI, vec![
            gs("1.5 TURBO", 0.92, DCT7, 2015, 2026),
            gs("2.0 TURBO", 0.84, DCT7, 2012, 2026),
        ]),
        md("Mini", "Cooper SE", Sub, 0.4, 0.0, T_MINI, vec![
            ev("ELÉTRICO 135 kW", 1.12, 232.0, 2021, 2026),
        ]),
        md("Mini", "Countryman", Uec, 0.4, 51.0, T_MINI, vec![
            gs("1.5 TURBO", 0.95, DCT7, 2012, 2026),
            phev("1.5 TURBO PHEV", 0.92, 45.0, DCT6, 2018, 2023).w(0.5),
            ev("ELÉTRICO 230 kW", 0.92, 430.0, 2025, 2026).w(0.5),
        ]),
        // ------------------------------------------------------------------ Others
        md("Jaguar", "F-Pace", Ueg, 0.3, 63.0, T_LR, vec![
            gs("2.0 TURBO", 0.9, A8, 2017, 2026),
        ]),
        md("Jaguar", "I-Pace", Ueg, 0.3, 0.0, T_LR, vec![
            ev("ELÉTRICO 294 kW", 0.75, 370.0, 2019, 2024),
        ]),
        md("Jaguar", "F-Type", Esp, 0.2, 70.0, T_SPORT, vec![
            gs("5.0 V8", 0.82, A8, 2014, 2024),
            gs("2.0 TURBO", 0.98, A8, 2018, 2023),
        ]),
        md("Ferrari", "Roma", Esp, 0.2, 80.0, T_SPORT, vec![
            gs("3.9 V8 TURBO", 0.82, DCT7, 2021, 2026),
        ]),
        md("Ferrari", "Portofino", Esp, 0.2, 80.0, T_SPORT, vec![
            gs("3.9 V8 TURBO", 0.8, DCT7, 2018, 2024),
        ]),
        md("Zeekr", "001", Gra, 0.3, 0.0, T_EVN, vec![
            ev("ELÉTRICO 400 kW", 0.78, 450.0, 2024, 2026),
        ]),
        md("Zeekr", "X", Uec, 0.3, 0.0, T_EVN, vec![
            ev("ELÉTRICO 200 kW", 0.98, 350.0, 2025, 2026),
        ]),
        md("GAC", "Aion Y", Uec, 0.3, 0.0, T_EVN, vec![
            ev("ELÉTRICO 150 kW", 1.02, 318.0, 2025, 2026),
        ]),
        md("GAC", "Aion V", Ueg, 0.3, 0.0, T_EVN, vec![
            ev("ELÉTRICO 165 kW", 0.92, 410.0, 2025, 2026),
        ]),
        md("GAC", "GS4", Uec, 0.3, 55.0, T_EVN, vec![
            phev("2.0 PHEV", 0.95, 90.0, CV, 2025, 2026),
            hev("2.0 HÍBRIDO", GA, 0.9, CV, 2025, 2026),
        ]),
        md("Neta", "Aya", Sub, 0.3, 0.0, T_EVN, vec![
            ev("ELÉTRICO 70 kW", 1.24, 263.0, 2025, 2026),
        ]),
        md("Iveco", "Daily", Com, 0.5, 80.0, T_COM, vec![
            dz("3.0 TURBO DIESEL", 0.86, M6, 2012, 2026),
        ]),
        md("Troller", "T4", Fde, 0.3, 80.0, &["XLT", "TX4", "Bold", "Standard", "Adventure"], vec![
            dz("3.2 TURBO DIESEL", 0.88, M6, 2012, 2021),
        ]),
    ]
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
    let models = catalog();
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
        let trim = *rng.choice(m.trims);
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
    let written = ParquetWriter::new(&mut out)
        .with_compression(ParquetCompression::Zstd(None))
        // min / max / null-count statistics per column chunk.
        .with_statistics(StatisticsOptions::default())
        .finish(df);
    // Both anyhow::Context and polars' PolarsContext apply to PolarsResult; pick anyhow's.
    anyhow::Context::with_context(written, || format!("writing Parquet to {}", path.display()))?;
    out.flush().with_context(|| format!("flushing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
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
    fn the_bundled_sample_is_what_make_data_generates() {
        // SAMPLE_ROWS and SAMPLE_SEED of the Makefile.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/catalog.parquet");
        let bundled = ParquetReader::new(std::fs::File::open(path).unwrap()).finish().unwrap();
        let generated = generate_catalog(12_000, 2026).unwrap();
        assert!(strs(&generated, "versao").iter().flatten().any(|v| v.contains("Série ")), "numbered suffixes taken");
        assert!(bundled.equals_missing(&generated), "data/catalog.parquet differs from the generator's output");
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
        for m in catalog() {
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
