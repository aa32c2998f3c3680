//! The served table: the columns of one dataset in catalog order (one chunk each), an id index,
//! the text dictionaries of the filters and the per-metric orders. Every answer reads the rows
//! it needs from these columns by index; nothing here ever changes once built (per-metric orders
//! and dataset-only answers are computed once, on first use).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use polars::prelude::*;
use rayon::slice::ParallelSliceMut;
use serde::Serialize;
use uuid::Uuid;

use super::publish::published;
use super::schema::{dictionary_dtype, COLUMNS, ID};
pub use super::schema::{ID_RANK, ROW};
use super::text_index::{Matcher, TextIndex, TextValues};
use super::views::DERIVED_COLUMNS;

/// A dataset-only value, or why it could not be computed.
type Memo = OnceLock<Result<Arc<dyn Any + Send + Sync>, String>>;

/// Which rows a request selects: text filters as (column, folded needle) pairs, matched as
/// literal substrings of the folded values, and inclusive year bounds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowFilter {
    pub text: Vec<(&'static str, String)>,
    pub ano: Option<(i32, i32)>,
}

impl RowFilter {
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.ano.is_none()
    }
}

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

/// The metric columns with a precomputed order (see [`Table::order`]).
pub const ORDERED: [&str; 5] =
    ["eco_score", "consumo_referencia", "co2_referencia_g_km", "autonomia_km", "eficiencia_media_referencia"];

/// The served columns, in catalog order, one chunk each: the input columns (but `id`, kept as
/// [`Table::ids`]), the published metrics, the eco-score positions, [`ROW`] and [`ID_RANK`].
/// Nothing else the views computed is kept. Every per-vehicle answer reads its row from these
/// columns by index; text filters are resolved through the [`TextIndex`].
#[derive(Debug)]
pub struct Table {
    frame: DataFrame,
    ids: Vec<Uuid>,
    by_id: HashMap<Uuid, u32>,
    cols: Cols,
    anos: Vec<i32>,
    pub index: TextIndex,
    orders: [[OnceLock<PolarsResult<Vec<u32>>>; 2]; ORDERED.len()],
    /// Answers that depend only on the dataset, computed on first use.
    memo: Mutex<HashMap<&'static str, Arc<Memo>>>,
}

impl Table {
    /// A lazy scan of the whole table (cheap: columns are shared, not copied).
    pub fn lazy(&self) -> LazyFrame {
        self.frame.clone().lazy()
    }

    pub fn frame(&self) -> &DataFrame {
        &self.frame
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Approximate memory held by the table: the columns, the ids and their index, the text
    /// dictionaries and the year column.
    pub fn estimated_bytes(&self) -> usize {
        let n = self.len();
        self.frame.estimated_size() + n * (16 + 24 + 4) + self.index.estimated_bytes()
    }

    /// The row of a vehicle id.
    pub fn row_of(&self, id: &Uuid) -> Option<u32> {
        self.by_id.get(id).copied()
    }

    /// The id of a row.
    pub fn id_at(&self, row: u32) -> Uuid {
        self.ids[row as usize]
    }

    /// One vehicle, read from the columns.
    pub fn vehicle(&self, id: &Uuid) -> Option<Vehicle> {
        self.row_of(id).map(|r| self.vehicle_at(r))
    }

    /// The vehicle of a row, read from the columns.
    pub fn vehicle_at(&self, row: u32) -> Vehicle {
        self.cols.vehicle(row as usize, self.ids[row as usize])
    }

    /// The vehicles of a collected frame's `row` column, in the frame's order.
    pub fn rows_of(&self, df: &DataFrame) -> PolarsResult<Vec<Vehicle>> {
        Ok(row_numbers(df)?.into_iter().map(|r| self.vehicle_at(r)).collect())
    }

    /// Every vehicle, in catalog order (tests and tools; answers read only the rows they need).
    pub fn vehicles(&self) -> Vec<Vehicle> {
        (0..self.len() as u32).map(|r| self.vehicle_at(r)).collect()
    }

    /// The model year of a row.
    pub fn ano_at(&self, row: u32) -> i32 {
        self.anos[row as usize]
    }

    /// The filters compiled against this table's dictionaries.
    pub fn matcher(&self, filters: &RowFilter) -> Matcher<'_> {
        let text: Vec<(&str, &str)> = filters.text.iter().map(|(c, v)| (*c, v.as_str())).collect();
        Matcher::new(&self.index, &self.anos, &text, filters.ano)
    }

    /// The rows (in catalog order) passing `filters`; `None` when there is no filter (every row).
    pub fn selection(&self, filters: &RowFilter) -> Option<Vec<u32>> {
        if filters.is_empty() {
            return None;
        }
        let matcher = self.matcher(filters);
        Some(match matcher.candidates() {
            Some(rows) => rows.into_iter().filter(|&r| matcher.matches(r)).collect(),
            None => (0..self.len() as u32).filter(|&r| matcher.matches(r)).collect(),
        })
    }

    /// A lazy frame of the rows passing `filters` with `columns` plus [`ROW`] and [`ID_RANK`]:
    /// only the selected rows of the needed columns are gathered.
    pub fn filtered(&self, filters: &RowFilter, columns: &[&str]) -> PolarsResult<LazyFrame> {
        let rows = self.selection(filters);
        self.gather(rows.as_deref(), columns)
    }

    /// `columns` plus [`ROW`] and [`ID_RANK`] of the given rows (all rows when `None`).
    pub fn gather(&self, rows: Option<&[u32]>, columns: &[&str]) -> PolarsResult<LazyFrame> {
        let mut names: Vec<&str> = vec![ROW, ID_RANK];
        for c in columns {
            if !names.contains(c) {
                names.push(c);
            }
        }
        let df = self.frame.select(names)?;
        Ok(match rows {
            None => df.lazy(),
            Some(rows) => df.take(&IdxCa::from_vec(PlSmallStr::EMPTY, rows.to_vec()))?.lazy(),
        })
    }

    /// A value that depends only on this table, computed once (`key` names it): the first request
    /// computes it, concurrent ones wait for that result.
    pub fn memo<T>(&self, key: &'static str, compute: impl FnOnce() -> PolarsResult<T>) -> PolarsResult<Arc<T>>
    where
        T: Send + Sync + 'static,
    {
        let cell = Arc::clone(self.memo.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_default());
        let value = cell.get_or_init(|| match compute() {
            Ok(v) => Ok(Arc::new(v) as Arc<dyn Any + Send + Sync>),
            Err(e) => Err(e.to_string()),
        });
        match value {
            Ok(v) => {
                Arc::clone(v).downcast::<T>().map_err(|_| polars_err!(ComputeError: "memo {key} holds another type"))
            }
            Err(e) => polars_bail!(ComputeError: "{key} could not be computed: {e}"),
        }
    }

    /// The rows with a value of `column` (one of [`ORDERED`]), best-first for `descending`, id
    /// ascending on ties of the published value; computed once per table and direction.
    pub fn order(&self, column: &str, descending: bool) -> PolarsResult<&[u32]> {
        let Some(i) = ORDERED.iter().position(|c| *c == column) else {
            polars_bail!(ComputeError: "no precomputed order for {column}");
        };
        // One request computes it; concurrent ones wait for that result instead of sorting too.
        let cell = &self.orders[i][descending as usize];
        let computed = cell.get_or_init(|| {
            let df = self
                .frame
                .select([ROW, ID_RANK, column])?
                .lazy()
                .filter(col(column).is_not_null())
                .sort_by_exprs(
                    [col(column), col(ID_RANK)],
                    SortMultipleOptions::default().with_order_descending_multi([descending, false]),
                )
                .select([col(ROW)])
                .collect()?;
            row_numbers(&df)
        });
        match computed {
            Ok(rows) => Ok(rows),
            Err(e) => polars_bail!(ComputeError: "the order of {column} could not be computed: {e}"),
        }
    }

    /// Builds the table from the collected final view of the SQL views.
    pub fn build(view: DataFrame) -> PolarsResult<Table> {
        let t = std::time::Instant::now();
        let (frame, ids) = served(view)?;
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "served frame");
        let by_id = ids.iter().enumerate().map(|(i, id)| (*id, i as u32)).collect();
        let anos = frame.column("ano")?.i32()?.iter().map(|v| v.unwrap_or_default()).collect();
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "ids");
        let cols = Cols::new(&frame)?;
        let index = TextIndex::build(&frame)?;
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "text index");
        Ok(Table { frame, ids, by_id, cols, anos, index, orders: Default::default(), memo: Mutex::default() })
    }
}

/// The row numbers of a frame's [`ROW`] column.
pub fn row_numbers(df: &DataFrame) -> PolarsResult<Vec<u32>> {
    let rows = df.column(ROW)?.cast(&DataType::UInt32)?;
    Ok(rows.u32()?.iter().flatten().collect())
}

/// The served frame and its ids, in catalog order: positions added, every column the views
/// computed for their own use dropped, ids ranked (so every tie-breaker compares integers), low
/// cardinality text dictionary-encoded, one chunk per column.
fn served(view: DataFrame) -> PolarsResult<(DataFrame, Vec<Uuid>)> {
    let rank = |e: Expr| e.rank(RankOptions { method: RankMethod::Min, descending: true }, None).cast(DataType::UInt32);
    let scored = col("eco_score").count().cast(DataType::Float64);
    let global = col("posicao_global").cast(DataType::Float64);
    let mut keep: Vec<Expr> = vec![col(ID)];
    keep.extend(COLUMNS.iter().map(|c| col(c.name)));
    keep.extend(DERIVED_COLUMNS.iter().map(|c| col(*c)));
    let df = view
        .lazy()
        .select(keep)
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
                .otherwise(published(lit(100.0) * (scored.clone() - global) / (scored - lit(1.0)), 1))
                .alias("percentil"),
        )
        .collect()?;

    // Ids as UUIDs: a UUID's byte order is the order of its lower-case text, so ranking the
    // parsed values ranks the ids.
    let ids: Vec<Uuid> = df
        .column(ID)?
        .str()?
        .iter()
        .map(|v| {
            let v = v.unwrap_or_default();
            Uuid::parse_str(v).map_err(|_| polars_err!(ComputeError: "invalid id {v} in the served frame"))
        })
        .collect::<PolarsResult<_>>()?;
    let mut by_id: Vec<u32> = (0..ids.len() as u32).collect();
    by_id.par_sort_unstable_by_key(|&i| ids[i as usize]);
    let mut id_rank = vec![0u32; ids.len()];
    for (rank, &i) in by_id.iter().enumerate() {
        id_rank[i as usize] = rank as u32;
    }

    let order = catalog_permutation(&df, &id_rank)?;
    let ids: Vec<Uuid> = order.iter().map(|&i| ids[i as usize]).collect();
    let id_rank: Vec<u32> = order.iter().map(|&i| id_rank[i as usize]).collect();
    // Column by column: each is gathered into catalog order (one chunk) and its unordered source
    // released before the next, so the peak is one frame plus one column.
    let order = IdxCa::from_vec(PlSmallStr::EMPTY, order);
    let mut df = df;
    let names: Vec<PlSmallStr> = df.get_column_names_owned();
    let mut columns: Vec<Column> = Vec::with_capacity(names.len() + 2);
    for name in names {
        let source = df.drop_in_place(&name)?;
        if name == ID {
            continue;
        }
        let mut column = source.take(&order)?;
        drop(source);
        // The inputs arrive dictionary-encoded (see `load::prepare`); the band is encoded here.
        if name == "eco_faixa" && column.dtype().is_string() {
            column = column.cast(&dictionary_dtype())?;
        }
        columns.push(column);
    }
    columns.push(Column::new(ID_RANK.into(), id_rank));
    let mut df = DataFrame::new_infer_height(columns)?.with_row_index(ROW.into(), None)?;
    df.rechunk_mut();
    Ok((df, ids))
}

/// The catalog order as a permutation of the frame's rows: marca, modelo, versao (byte order),
/// ano descending, then id ascending (`id_rank`). Brand and model compare as the rank of their
/// distinct values, so most comparisons are between integers.
fn catalog_permutation(df: &DataFrame, id_rank: &[u32]) -> PolarsResult<Vec<u32>> {
    fn lexical_ranks(values: &TextValues) -> Vec<u32> {
        let mut distinct: Vec<&str> =
            (0..values.len()).map(|i| values.get(i).unwrap_or("")).collect::<PlHashSet<_>>().into_iter().collect();
        distinct.sort_unstable();
        let rank: PlHashMap<&str, u32> = distinct.iter().enumerate().map(|(i, v)| (*v, i as u32)).collect();
        (0..values.len()).map(|i| rank[values.get(i).unwrap_or("")]).collect()
    }
    let marca = lexical_ranks(&TextValues::of(df.column("marca")?)?);
    let modelo = lexical_ranks(&TextValues::of(df.column("modelo")?)?);
    let versao = df.column("versao")?.str()?;
    let versao: Vec<&str> = versao.iter().map(|v| v.unwrap_or("")).collect();
    let ano: Vec<i32> = df.column("ano")?.i32()?.iter().map(|v| v.unwrap_or_default()).collect();
    let mut order: Vec<u32> = (0..df.height() as u32).collect();
    order.par_sort_unstable_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        marca[a]
            .cmp(&marca[b])
            .then(modelo[a].cmp(&modelo[b]))
            .then_with(|| versao[a].cmp(versao[b]))
            .then(ano[b].cmp(&ano[a]))
            .then(id_rank[a].cmp(&id_rank[b]))
    });
    Ok(order)
}

/// Typed handles on the served columns (shared with the frame, not copied) for row reads.
#[derive(Debug)]
struct Cols {
    text: Vec<TextValues>,
    ano: Int32Chunked,
    marchas: Int32Chunked,
    ar: BooleanChunked,
    floats: Vec<Float64Chunked>,
    positions: Vec<UInt32Chunked>,
}

/// Text columns read by [`Cols::vehicle`], in this order.
const TEXT: [&str; 12] = [
    "marca",
    "modelo",
    "versao",
    "categoria",
    "motor",
    "tipo_propulsao",
    "combustivel_tipo",
    "transmissao_tipo",
    "direcao_assistida_tipo",
    "classificacao_pbe_categoria",
    "classificacao_pbe_geral",
    "eco_faixa",
];

/// Float columns read by [`Cols::vehicle`], in this order.
const FLOATS: [&str; 18] = [
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
    "eficiencia_media_referencia",
    "consumo_referencia",
    "co2_referencia_g_km",
    "autonomia_km",
    "custo_anual_estimado",
    "eco_score",
    "percentil",
];

impl Cols {
    fn new(df: &DataFrame) -> PolarsResult<Cols> {
        let text = TEXT.iter().map(|n| TextValues::of(df.column(n)?)).collect::<PolarsResult<_>>()?;
        let float =
            |n: &str| -> PolarsResult<Float64Chunked> { Ok(df.column(n)?.cast(&DataType::Float64)?.f64()?.clone()) };
        let floats = FLOATS.iter().map(|n| float(n)).collect::<PolarsResult<_>>()?;
        let positions = ["posicao_global", "posicao_categoria", "posicao_combustivel"]
            .iter()
            .map(|n| Ok(df.column(n)?.u32()?.clone()))
            .collect::<PolarsResult<_>>()?;
        Ok(Cols {
            text,
            ano: df.column("ano")?.i32()?.clone(),
            marchas: df.column("transmissao_marchas")?.i32()?.clone(),
            ar: df.column("ar_condicionado")?.bool()?.clone(),
            floats,
            positions,
        })
    }

    fn vehicle(&self, i: usize, id: Uuid) -> Vehicle {
        let t = |k: usize| self.text[k].get(i).map(str::to_string);
        let req = |k: usize| t(k).unwrap_or_default();
        let f = |k: usize| self.floats[k].get(i).filter(|x| x.is_finite());
        Vehicle {
            id,
            marca: req(0),
            modelo: req(1),
            versao: req(2),
            ano: self.ano.get(i).unwrap_or_default(),
            categoria: req(3),
            motor: t(4),
            tipo_propulsao: req(5),
            combustivel_tipo: req(6),
            transmissao_tipo: t(7),
            transmissao_marchas: self.marchas.get(i),
            ar_condicionado: self.ar.get(i),
            direcao_assistida_tipo: req(8),
            eficiencia_cidade_km_l: f(0),
            eficiencia_estrada_km_l: f(1),
            eficiencia_cidade_etanol_km_l: f(2),
            eficiencia_estrada_etanol_km_l: f(3),
            consumo_energetico_mj_km: f(4),
            co2_fossil_g_km: f(5),
            nmhc_g_km: f(6),
            co_g_km: f(7),
            nox_g_km: f(8),
            autonomia_eletrica_km: f(9),
            tanque_l: f(10),
            classificacao_pbe_categoria: t(9),
            classificacao_pbe_geral: t(10),
            eficiencia_media_referencia: f(11),
            consumo_referencia: f(12),
            co2_referencia_g_km: f(13),
            autonomia_km: f(14),
            custo_anual_estimado: f(15),
            eco_score: f(16),
            eco_faixa: t(11),
            posicao_global: self.positions[0].get(i),
            posicao_categoria: self.positions[1].get(i),
            posicao_combustivel: self.positions[2].get(i),
            percentil: f(17),
        }
    }
}
