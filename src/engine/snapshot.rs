//! The immutable, fully computed dataset one request works on: the served frame, one record per
//! vehicle, an id index and everything that depends only on the dataset (positions, fixed
//! rankings). A new export builds a new snapshot; nothing in a snapshot ever changes.

use std::collections::HashMap;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use polars::prelude::*;
use serde::Serialize;
use uuid::Uuid;

use super::rankings::FixedRankings;

/// Name of the column holding each row's index into [`Snapshot::vehicles`].
pub const ROW: &str = "row";

/// One vehicle with its catalog fields, published metrics and precomputed positions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Vehicle {
    pub id: Uuid,
    pub marca: String,
    pub modelo: String,
    pub versao: String,
    pub ano: i32,
    pub categoria: String,
    pub motor: Option<String>,
    pub tipo_propulsao: String,
    pub combustivel_tipo: String,
    pub transmissao_tipo: Option<String>,
    pub transmissao_marchas: Option<i32>,
    pub ar_condicionado: Option<bool>,
    pub direcao_assistida_tipo: String,
    pub eficiencia_cidade_km_l: Option<f64>,
    pub eficiencia_estrada_km_l: Option<f64>,
    pub eficiencia_cidade_etanol_km_l: Option<f64>,
    pub eficiencia_estrada_etanol_km_l: Option<f64>,
    pub consumo_energetico_mj_km: Option<f64>,
    pub co2_fossil_g_km: Option<f64>,
    pub nmhc_g_km: Option<f64>,
    pub co_g_km: Option<f64>,
    pub nox_g_km: Option<f64>,
    pub autonomia_eletrica_km: Option<f64>,
    pub tanque_l: Option<f64>,
    pub classificacao_pbe_categoria: Option<String>,
    pub classificacao_pbe_geral: Option<String>,
    // Published metrics (from the views).
    pub eficiencia_media_referencia: Option<f64>,
    pub consumo_referencia: Option<f64>,
    pub co2_referencia_g_km: Option<f64>,
    pub autonomia_km: Option<f64>,
    pub custo_anual_estimado: Option<f64>,
    pub eco_score: Option<f64>,
    pub eco_faixa: Option<String>,
    // Positions by eco score (competition ranking, best = 1).
    pub posicao_global: Option<u32>,
    pub posicao_categoria: Option<u32>,
    pub posicao_combustivel: Option<u32>,
    pub percentil: Option<f64>,
}

/// Facts about where a snapshot came from.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetInfo {
    /// Content hash of the file (first 16 hex digits of its SHA-256).
    pub version: String,
    pub loaded_at: DateTime<Utc>,
    pub source: PathBuf,
    pub rows: usize,
}

/// An immutable loaded dataset.
#[derive(Debug)]
pub struct Snapshot {
    pub info: DatasetInfo,
    /// The final view plus folded filter columns, positions and the `row` index column.
    pub frame: DataFrame,
    pub vehicles: Vec<Vehicle>,
    pub by_id: HashMap<Uuid, u32>,
    pub fixed: FixedRankings,
}

impl Snapshot {
    /// A lazy scan of the served frame (cheap: columns are shared, not copied).
    pub fn lazy(&self) -> LazyFrame {
        self.frame.clone().lazy()
    }

    pub fn vehicle(&self, id: &Uuid) -> Option<&Vehicle> {
        self.by_id.get(id).map(|&r| &self.vehicles[r as usize])
    }

    /// The vehicles of a collected frame's `row` column, in the frame's order.
    pub fn rows_of(&self, df: &DataFrame) -> PolarsResult<Vec<&Vehicle>> {
        let rows = df.column(ROW)?.cast(&DataType::UInt32)?;
        Ok(rows.u32()?.iter().flatten().map(|r| &self.vehicles[r as usize]).collect())
    }

    /// Builds a snapshot from the collected final view (see `load`).
    pub fn build(view: DataFrame, info: DatasetInfo) -> PolarsResult<Snapshot> {
        let frame = with_positions(view)?;
        let vehicles = materialise(&frame)?;
        let by_id = vehicles.iter().enumerate().map(|(i, v)| (v.id, i as u32)).collect();
        let mut snapshot = Snapshot { info, frame, vehicles, by_id, fixed: FixedRankings::default() };
        snapshot.fixed = FixedRankings::compute(&snapshot)?;
        Ok(snapshot)
    }
}

/// Adds the eco-score positions (competition ranking: ties share the lowest position) and the
/// percentile, once per dataset, so per-vehicle lookups never rank anything; stores the rows in
/// catalog order so the listing only filters and slices.
fn with_positions(view: DataFrame) -> PolarsResult<DataFrame> {
    let rank = |e: Expr| e.rank(RankOptions { method: RankMethod::Min, descending: true }, None).cast(DataType::UInt32);
    let scored = col("eco_score").count().cast(DataType::Float64);
    let global = col("posicao_global").cast(DataType::Float64);
    let lf = view
        .lazy()
        .with_columns([
            rank(col("eco_score")).alias("posicao_global"),
            rank(col("eco_score")).over([col("categoria")])?.alias("posicao_categoria"),
            rank(col("eco_score")).over([col("combustivel_tipo")])?.alias("posicao_combustivel"),
        ])
        .with_column(
            when(col("eco_score").is_null())
                .then(lit(NULL).cast(DataType::Float64))
                .when(scored.clone().eq(lit(1.0)))
                .then(lit(100.0))
                .otherwise(super::filters::published(lit(100.0) * (scored.clone() - global) / (scored - lit(1.0)), 1))
                .alias("percentil"),
        );
    super::catalog::in_catalog_order(lf).with_row_index(ROW, None).collect()
}

fn strs(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<String>>> {
    Ok(df.column(name)?.str()?.iter().map(|v| v.map(str::to_string)).collect())
}

fn f64s(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<f64>>> {
    let c = df.column(name)?.cast(&DataType::Float64)?;
    Ok(c.f64()?.iter().map(|v| v.filter(|x| x.is_finite())).collect())
}

fn i32s(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<i32>>> {
    let c = df.column(name)?.cast(&DataType::Int32)?;
    Ok(c.i32()?.iter().collect())
}

fn u32s(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<u32>>> {
    let c = df.column(name)?.cast(&DataType::UInt32)?;
    Ok(c.u32()?.iter().collect())
}

fn bools(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<bool>>> {
    Ok(df.column(name)?.bool()?.iter().collect())
}

/// One [`Vehicle`] per row of the served frame, in row order.
fn materialise(df: &DataFrame) -> PolarsResult<Vec<Vehicle>> {
    let req = |v: Option<String>| v.unwrap_or_default();
    let mut id = strs(df, "id")?.into_iter();
    let mut marca = strs(df, "marca")?.into_iter();
    let mut modelo = strs(df, "modelo")?.into_iter();
    let mut versao = strs(df, "versao")?.into_iter();
    let mut ano = i32s(df, "ano")?.into_iter();
    let mut categoria = strs(df, "categoria")?.into_iter();
    let mut motor = strs(df, "motor")?.into_iter();
    let mut tipo_propulsao = strs(df, "tipo_propulsao")?.into_iter();
    let mut combustivel_tipo = strs(df, "combustivel_tipo")?.into_iter();
    let mut transmissao_tipo = strs(df, "transmissao_tipo")?.into_iter();
    let mut transmissao_marchas = i32s(df, "transmissao_marchas")?.into_iter();
    let mut ar_condicionado = bools(df, "ar_condicionado")?.into_iter();
    let mut direcao = strs(df, "direcao_assistida_tipo")?.into_iter();
    let mut ef_cid = f64s(df, "eficiencia_cidade_km_l")?.into_iter();
    let mut ef_est = f64s(df, "eficiencia_estrada_km_l")?.into_iter();
    let mut ef_cid_e = f64s(df, "eficiencia_cidade_etanol_km_l")?.into_iter();
    let mut ef_est_e = f64s(df, "eficiencia_estrada_etanol_km_l")?.into_iter();
    let mut mj = f64s(df, "consumo_energetico_mj_km")?.into_iter();
    let mut co2 = f64s(df, "co2_fossil_g_km")?.into_iter();
    let mut nmhc = f64s(df, "nmhc_g_km")?.into_iter();
    let mut co = f64s(df, "co_g_km")?.into_iter();
    let mut nox = f64s(df, "nox_g_km")?.into_iter();
    let mut aut_el = f64s(df, "autonomia_eletrica_km")?.into_iter();
    let mut tanque = f64s(df, "tanque_l")?.into_iter();
    let mut pbe_cat = strs(df, "classificacao_pbe_categoria")?.into_iter();
    let mut pbe_ger = strs(df, "classificacao_pbe_geral")?.into_iter();
    let mut efic = f64s(df, "eficiencia_media_referencia")?.into_iter();
    let mut consumo = f64s(df, "consumo_referencia")?.into_iter();
    let mut co2_ref = f64s(df, "co2_referencia_g_km")?.into_iter();
    let mut autonomia = f64s(df, "autonomia_km")?.into_iter();
    let mut custo = f64s(df, "custo_anual_estimado")?.into_iter();
    let mut eco = f64s(df, "eco_score")?.into_iter();
    let mut faixa = strs(df, "eco_faixa")?.into_iter();
    let mut p_global = u32s(df, "posicao_global")?.into_iter();
    let mut p_cat = u32s(df, "posicao_categoria")?.into_iter();
    let mut p_comb = u32s(df, "posicao_combustivel")?.into_iter();
    let mut pct = f64s(df, "percentil")?.into_iter();

    let mut out = Vec::with_capacity(df.height());
    for _ in 0..df.height() {
        let raw_id = req(id.next().flatten());
        let id = Uuid::parse_str(&raw_id)
            .map_err(|_| polars_err!(ComputeError: "invalid id {raw_id} in the served frame"))?;
        out.push(Vehicle {
            id,
            marca: req(marca.next().flatten()),
            modelo: req(modelo.next().flatten()),
            versao: req(versao.next().flatten()),
            ano: ano.next().flatten().unwrap_or_default(),
            categoria: req(categoria.next().flatten()),
            motor: motor.next().flatten(),
            tipo_propulsao: req(tipo_propulsao.next().flatten()),
            combustivel_tipo: req(combustivel_tipo.next().flatten()),
            transmissao_tipo: transmissao_tipo.next().flatten(),
            transmissao_marchas: transmissao_marchas.next().flatten(),
            ar_condicionado: ar_condicionado.next().flatten(),
            direcao_assistida_tipo: req(direcao.next().flatten()),
            eficiencia_cidade_km_l: ef_cid.next().flatten(),
            eficiencia_estrada_km_l: ef_est.next().flatten(),
            eficiencia_cidade_etanol_km_l: ef_cid_e.next().flatten(),
            eficiencia_estrada_etanol_km_l: ef_est_e.next().flatten(),
            consumo_energetico_mj_km: mj.next().flatten(),
            co2_fossil_g_km: co2.next().flatten(),
            nmhc_g_km: nmhc.next().flatten(),
            co_g_km: co.next().flatten(),
            nox_g_km: nox.next().flatten(),
            autonomia_eletrica_km: aut_el.next().flatten(),
            tanque_l: tanque.next().flatten(),
            classificacao_pbe_categoria: pbe_cat.next().flatten(),
            classificacao_pbe_geral: pbe_ger.next().flatten(),
            eficiencia_media_referencia: efic.next().flatten(),
            consumo_referencia: consumo.next().flatten(),
            co2_referencia_g_km: co2_ref.next().flatten(),
            autonomia_km: autonomia.next().flatten(),
            custo_anual_estimado: custo.next().flatten(),
            eco_score: eco.next().flatten(),
            eco_faixa: faixa.next().flatten(),
            posicao_global: p_global.next().flatten(),
            posicao_categoria: p_cat.next().flatten(),
            posicao_combustivel: p_comb.next().flatten(),
            percentil: pct.next().flatten(),
        });
    }
    Ok(out)
}
