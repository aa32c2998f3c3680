//! The served table: the columns of one dataset in catalog order (one chunk each), an id index,
//! the text dictionaries of the filters and the per-metric orders. Every answer reads the rows
//! it needs from these columns by index; nothing here ever changes once built (per-metric orders
//! and dataset-only answers are computed once, on first use).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use polars::prelude::*;
use polars_arrow::bitmap::Bitmap;
use rayon::slice::ParallelSliceMut;
use uuid::Uuid;

use super::formula::Casas;
use super::publish::round_published;
use super::reorder::{listed_by_key, packed_byte, reorder, Order};
use super::schema::{dictionary_encode_by_chunks, parse_uuids, IdOrder, ID};
pub use super::schema::{ID_RANK, ROW};
use super::text_index::{Matcher, TextColumn, TextIndex, TextValues};
use super::text_rank::row_ranks;
use crate::process::usage::minor_faults;

/// A dataset-only value, or why it could not be computed.
type Memo = OnceLock<Result<Arc<dyn Any + Send + Sync>, String>>;

/// Which rows a request selects: text filters as (column, folded needle) pairs, matched as
/// literal substrings of the folded values, and inclusive year bounds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowFilter {
    pub text: Vec<(&'static str, String)>,
    pub ano: Option<(i32, i32)>,
    /// (published column, inclusive lower bound, inclusive upper bound): a null value fails.
    pub ranges: Vec<(&'static str, f64, f64)>,
}

impl RowFilter {
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.ano.is_none() && self.ranges.is_empty()
    }
}

/// The columns a range filter may bound (their published values, see [`Table::published`]).
pub const RANGED: [&str; 7] = [
    "eco_score",
    "consumo_referencia",
    "co2_referencia_g_km",
    "autonomia_km",
    "eficiencia_media_referencia",
    "autonomia_eletrica_km",
    "custo_anual_estimado",
];

/// One vehicle with its catalog fields, published metrics and precomputed positions.
#[derive(Debug, Clone, PartialEq)]
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
    /// NMOG+NOx together (PROCONVE L7 on), g/km; null when the export has no such column.
    pub nmog_nox_g_km: Option<f64>,
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

/// The served columns, rows in catalog order (marca, modelo, versao byte-wise, ano descending,
/// id): the input columns (but `id`, kept as [`Table::id_at`]), the published metrics, the
/// eco-score positions, [`ROW`] and [`ID_RANK`]. Nothing else the views computed is kept. Every
/// per-vehicle answer reads its row from these columns by index; text filters are resolved
/// through the [`TextIndex`].
#[derive(Debug)]
pub struct Table {
    frame: DataFrame,
    ids: Vec<Uuid>,
    /// The rows by id (ascending): a binary search finds a vehicle.
    by_id: Vec<u32>,
    cols: Cols,
    anos: Vec<i32>,
    pub index: TextIndex,
    orders: [[OnceLock<PolarsResult<Vec<u32>>>; 2]; ORDERED.len()],
    /// Answers that depend only on the dataset, computed on first use.
    memo: RwLock<HashMap<&'static str, Arc<Memo>>>,
    /// Answers to filtered questions, by the normalised question (bounded).
    pub answers: super::answers::Answers,
    /// The published values of each [`RANGED`] column, NaN for null (so a null fails every
    /// bound), built by the first range filter on that column.
    published: [OnceLock<PolarsResult<Vec<f64>>>; RANGED.len()],
    /// Decimals of published values (`parametros.toml` `[casas]`): averages and percentiles
    /// computed here are rounded with them.
    pub casas: Casas,
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
        self.frame.estimated_size() + n * (16 + 4 + 4) + self.index.estimated_bytes()
    }

    /// The row of a vehicle id.
    pub fn row_of(&self, id: &Uuid) -> Option<u32> {
        let k = self.by_id.binary_search_by(|&r| self.ids[r as usize].cmp(id)).ok()?;
        Some(self.by_id[k])
    }

    /// Every row, ordered by id ascending.
    pub fn rows_by_id(&self) -> &[u32] {
        &self.by_id
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

    /// The filters compiled against this table's dictionaries and published values. A range
    /// on a column whose values cannot be read matches nothing (logged).
    pub fn matcher(&self, filters: &RowFilter) -> Matcher<'_> {
        let text: Vec<(&str, &str)> = filters.text.iter().map(|(c, v)| (*c, v.as_str())).collect();
        let ranges = filters
            .ranges
            .iter()
            .map(|(column, lo, hi)| {
                let values = self.published(column).unwrap_or_else(|e| {
                    tracing::error!(column, error = %e, "published values unavailable for a range filter");
                    &[]
                });
                (values, *lo, *hi)
            })
            .collect();
        Matcher::new(&self.index, &self.anos, &text, filters.ano, ranges)
    }

    /// The published values of a [`RANGED`] column, one per row, NaN where null. The input
    /// column `autonomia_eletrica_km` is published rounded like every metric (`[casas]
    /// metricas`); the others are the views' published columns.
    pub fn published(&self, column: &str) -> PolarsResult<&[f64]> {
        let Some(i) = RANGED.iter().position(|c| *c == column) else {
            polars_bail!(ComputeError: "{column} is not a range-filter column");
        };
        let computed = self.published[i].get_or_init(|| {
            let values = self.frame.column(column)?.cast(&DataType::Float64)?;
            let round = column == "autonomia_eletrica_km";
            let decimals = self.casas.metricas;
            // By chunk, over the values and the validity (an iterator of options costs more
            // than the values: at 10M rows a tenth of a second per column).
            let values = values.f64()?;
            let publish = |x: f64| if round { round_published(x, decimals) } else { x };
            let mut out = Vec::with_capacity(values.len());
            for chunk in values.downcast_iter() {
                let xs = chunk.values().as_slice();
                match chunk.validity().filter(|v| v.unset_bits() > 0) {
                    None => out.extend(xs.iter().map(|&x| publish(x))),
                    Some(valid) => {
                        out.extend(xs.iter().zip(valid.iter()).map(|(&x, ok)| if ok { publish(x) } else { f64::NAN }))
                    }
                }
            }
            Ok(out)
        });
        match computed {
            Ok(values) => Ok(values),
            Err(e) => polars_bail!(ComputeError: "the published values of {column} could not be read: {e}"),
        }
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
        // Read-mostly: every request of a dataset-only answer looks its cell up; only the first
        // one of each key takes the write lock.
        let found = self.memo.read().unwrap_or_else(|e| e.into_inner()).get(key).cloned();
        let cell = match found {
            Some(cell) => cell,
            None => Arc::clone(self.memo.write().unwrap_or_else(|e| e.into_inner()).entry(key).or_default()),
        };
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

    /// Builds the table from the collected final view of the SQL views (its served columns),
    /// with the key orders computed before the views when the view left their columns as they
    /// were (otherwise they are computed here, from the view).
    pub fn build(view: DataFrame, casas: Casas, keys: Option<KeyOrders>) -> PolarsResult<Table> {
        // Each step's debug line: the time since the build began and the process's minor page
        // faults so far (their differences are the fresh memory each step touched).
        let t = std::time::Instant::now();
        let ms = |t: std::time::Instant| t.elapsed().as_millis() as u64;
        let mut frame = view;
        // The band is encoded before it is put in order (its codes are gathered like numbers),
        // while the key orders are checked against the view.
        let (keys, band) = rayon::join(
            || keys.filter(|k| k.hold_for(&frame)),
            || {
                let band = frame.column("eco_faixa")?;
                band.dtype().is_string().then(|| dictionary_encode_by_chunks(band)).transpose()
            },
        );
        let keys = match keys {
            Some(keys) => keys,
            None => {
                tracing::debug!("key orders computed from the view");
                KeyOrders::compute(&frame, IdOrder::new(parse_ids(&frame)?))?
            }
        };
        tracing::debug!(ms = ms(t), faults = minor_faults(), "key orders");
        if let Some(band) = band? {
            frame.with_column(band)?;
        }
        // Rows stored in catalog order: a listing page is a slice, and the rows of one brand or
        // model are contiguous, which keeps the gathers of filtered plans cache-friendly.
        let _ = frame.drop_in_place(ID)?;
        let (mut frame, IdOrder { ids, by_id, .. }, id_rank) = keys.put_in_order(frame)?;
        frame.with_column(Column::new(ID_RANK.into(), id_rank))?;
        let mut frame = frame.with_row_index(ROW.into(), None)?;
        tracing::debug!(ms = ms(t), faults = minor_faults(), "catalog order");
        let index = TextIndex::build(&frame)?;
        tracing::debug!(ms = ms(t), faults = minor_faults(), "text index");
        let eco_order = positions(&mut frame, &index, &by_id, casas.eco_score)?;
        tracing::debug!(ms = ms(t), faults = minor_faults(), "positions");
        let anos = frame.column("ano")?.i32()?.iter().map(|v| v.unwrap_or_default()).collect();
        let cols = Cols::new(&frame)?;
        let orders: [[OnceLock<PolarsResult<Vec<u32>>>; 2]; ORDERED.len()] = Default::default();
        let _ = orders[0][1].set(Ok(eco_order));
        Ok(Table {
            frame,
            ids,
            by_id,
            cols,
            anos,
            index,
            orders,
            memo: RwLock::default(),
            answers: Default::default(),
            published: Default::default(),
            casas,
        })
    }
}

/// The columns the key orders are computed from.
const KEY_COLUMNS: [&str; 5] = [ID, "marca", "modelo", "versao", "ano"];

/// What the build needs from a dataset's own columns, not from the views: the ids with their
/// order and the catalog order. A load computes them from the checked export while the views
/// run; they hold for a view that passes their columns through unchanged.
pub struct KeyOrders {
    /// The columns they were computed from (shared with the frame, not copied).
    columns: Vec<Column>,
    order: IdOrder,
    id_rank: Vec<u32>,
    catalog: Vec<u32>,
}

impl KeyOrders {
    /// The key orders of a frame holding [`KEY_COLUMNS`], given its ids' order.
    pub fn compute(frame: &DataFrame, order: IdOrder) -> PolarsResult<KeyOrders> {
        if order.ids.len() != frame.height() {
            polars_bail!(ComputeError: "the ids are not the frame's rows");
        }
        let t = std::time::Instant::now();
        let id_rank = order.ranks()?;
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "id ranks");
        let catalog = catalog_permutation(frame, &id_rank, &order.by_id)?;
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "catalog permutation");
        let columns = KEY_COLUMNS.iter().map(|c| frame.column(c).cloned()).collect::<PolarsResult<_>>()?;
        Ok(KeyOrders { columns, order, id_rank, catalog })
    }

    /// `frame` (the frame these orders were computed from) with its rows in catalog order, with
    /// the ids and their ranks by position in that order. The key columns kept for
    /// [`KeyOrders::hold_for`] are released first; the columns are gathered on every core, each
    /// unordered source released once gathered, while the ids and their positions are mapped
    /// beside them. A frame already in order is returned as it is (in one chunk per column).
    pub fn put_in_order(self, frame: DataFrame) -> PolarsResult<(DataFrame, IdOrder, Vec<u32>)> {
        use rayon::prelude::*;
        let KeyOrders { order, id_rank, catalog, columns } = self;
        drop(columns);
        if catalog.iter().enumerate().all(|(p, &row)| p as u32 == row) {
            // One chunk per column, as the gathers below give.
            let mut frame = frame;
            frame.rechunk_mut_par();
            return Ok((frame, order, id_rank));
        }
        let IdOrder { ids, mut by_id, repeats } = order;
        let order = Order::new(&catalog, frame.height())?;
        // The ids and their maps, in their own memory where the plan allows (see
        // `Order::reordered`).
        let (maps, frame) = rayon::join(
            || -> PolarsResult<_> {
                let ids = order.reordered(ids)?;
                let position = order.positions()?;
                by_id.par_iter_mut().for_each(|r| *r = position[*r as usize]);
                let id_rank = order.reordered(id_rank)?;
                Ok((ids, by_id, id_rank))
            },
            || reorder(frame, &order),
        );
        let (ids, by_id, id_rank) = maps?;
        Ok((frame?, IdOrder { ids, by_id, repeats }, id_rank))
    }

    /// Whether `view` holds the same rows of the key columns, in the same order (compared in
    /// parallel).
    fn hold_for(&self, view: &DataFrame) -> bool {
        use rayon::prelude::*;
        view.height() == self.catalog.len()
            && self.columns.par_iter().all(|c| {
                view.column(c.name()).is_ok_and(|v| {
                    let (v, c) = (v.as_materialized_series(), c.as_materialized_series());
                    same_memory(v, c) || v.equals_missing(c)
                })
            })
    }
}

/// Whether two columns are the same values in the same memory (a column the views passed
/// through, shared rather than copied): then they are equal without reading them, where
/// comparing a 10M-row column of ids reads 720 MB of text. Text, 32-bit integers and dictionary
/// codes (the key columns' types) are recognised; any other column is `false` here, and compared.
fn same_memory(a: &Series, b: &Series) -> bool {
    use polars_arrow::array::{Array, PrimitiveArray, Utf8ViewArray};
    fn primitive<T: polars_arrow::types::NativeType>(a: &dyn Array, b: &dyn Array) -> bool {
        match (a.as_any().downcast_ref::<PrimitiveArray<T>>(), b.as_any().downcast_ref::<PrimitiveArray<T>>()) {
            (Some(a), Some(b)) => std::ptr::eq(a.values().as_ptr(), b.values().as_ptr()),
            _ => false,
        }
    }
    let same_array = |a: &dyn Array, b: &dyn Array| -> bool {
        let same_validity = match (a.validity(), b.validity()) {
            (None, None) => true,
            (Some(x), Some(y)) => x.as_slice() == y.as_slice(),
            _ => false,
        };
        let same_values = match (a.as_any().downcast_ref::<Utf8ViewArray>(), b.as_any().downcast_ref::<Utf8ViewArray>())
        {
            (Some(a), Some(b)) => {
                std::ptr::eq(a.views().as_ptr(), b.views().as_ptr())
                    && a.data_buffers().len() == b.data_buffers().len()
                    && a.data_buffers()
                        .iter()
                        .zip(b.data_buffers().iter())
                        .all(|(x, y)| std::ptr::eq(x.as_ptr(), y.as_ptr()))
            }
            _ => primitive::<u32>(a, b) || primitive::<i32>(a, b),
        };
        a.len() == b.len() && a.dtype() == b.dtype() && same_validity && same_values
    };
    a.dtype() == b.dtype()
        && a.len() == b.len()
        && a.chunks().len() == b.chunks().len()
        && a.chunks().iter().zip(b.chunks()).all(|(x, y)| same_array(x.as_ref(), y.as_ref()))
}

/// The extra columns of a prepared table (see [`Table::prepared`]): the ids' two halves and the
/// eco-score order (null past its end).
const PREPARED_ID_HI: &str = "__id_hi";
const PREPARED_ID_LO: &str = "__id_lo";
const PREPARED_ECO_ORDER: &str = "__eco_order";

impl Table {
    /// The table as one frame, written as Arrow IPC to the state folder and read back by
    /// [`Table::restore`] on a restart on the same dataset version: the served columns plus the
    /// ids and the eco-score order, which are what the build computes and the columns do not hold.
    pub fn prepared(&self) -> PolarsResult<DataFrame> {
        let mut df = self.frame.clone();
        let (hi, lo): (Vec<u64>, Vec<u64>) = self
            .ids
            .iter()
            .map(|id| {
                let v = id.as_u128();
                ((v >> 64) as u64, v as u64)
            })
            .unzip();
        df.with_column(Column::new(PREPARED_ID_HI.into(), hi))?;
        df.with_column(Column::new(PREPARED_ID_LO.into(), lo))?;
        let eco = self.order("eco_score", true)?;
        let mut order: Vec<Option<u32>> = eco.iter().map(|r| Some(*r)).collect();
        order.resize(self.len(), None);
        df.with_column(Column::new(PREPARED_ECO_ORDER.into(), order))?;
        Ok(df)
    }

    /// A table from a frame [`Table::prepared`] wrote, checked for what the serving code relies
    /// on (ids, their ranks and the row numbers form permutations, the order's rows exist); the
    /// dictionaries are rebuilt from the columns. No sort, no view.
    pub fn restore(mut frame: DataFrame, casas: Casas) -> PolarsResult<Table> {
        let t = std::time::Instant::now();
        let ms = |t: std::time::Instant| t.elapsed().as_millis() as u64;
        let n = frame.height();
        let hi = frame.drop_in_place(PREPARED_ID_HI)?;
        let lo = frame.drop_in_place(PREPARED_ID_LO)?;
        let eco = frame.drop_in_place(PREPARED_ECO_ORDER)?;
        // The ids and the checks beside the dictionaries (two independent passes).
        let (checked, index) = std::thread::scope(|scope| {
            let checked = scope.spawn(|| restored_ids(&frame, &hi, &lo, &eco, n));
            let index = TextIndex::build(&frame);
            let checked =
                checked.join().unwrap_or_else(|_| Err(polars_err!(ComputeError: "the prepared table's check stopped")));
            (checked, index)
        });
        let (ids, by_id, eco_order) = checked?;
        let index = index?;
        tracing::debug!(ms = ms(t), "prepared: ids checked, text index");
        let anos = frame.column("ano")?.i32()?.iter().map(|v| v.unwrap_or_default()).collect();
        let cols = Cols::new(&frame)?;
        tracing::debug!(ms = ms(t), "prepared: columns");
        let orders: [[OnceLock<PolarsResult<Vec<u32>>>; 2]; ORDERED.len()] = Default::default();
        let _ = orders[0][1].set(Ok(eco_order));
        Ok(Table {
            frame,
            ids,
            by_id,
            cols,
            anos,
            index,
            orders,
            memo: RwLock::default(),
            answers: Default::default(),
            published: Default::default(),
            casas,
        })
    }
}

/// The ids, the rows by id and the eco-score order of a prepared table, checked: the id ranks
/// and the row numbers are permutations, the ranks order the ids, the order's rows exist.
#[allow(clippy::type_complexity)]
fn restored_ids(
    frame: &DataFrame,
    hi: &Column,
    lo: &Column,
    eco: &Column,
    n: usize,
) -> PolarsResult<(Vec<Uuid>, Vec<u32>, Vec<u32>)> {
    let ids: Vec<Uuid> = hi
        .u64()?
        .iter()
        .zip(lo.u64()?.iter())
        .map(|(h, l)| match (h, l) {
            (Some(h), Some(l)) => Ok(Uuid::from_u128((h as u128) << 64 | l as u128)),
            _ => polars_bail!(ComputeError: "the prepared table has a row without id"),
        })
        .collect::<PolarsResult<_>>()?;
    let mut by_id = vec![u32::MAX; n];
    for (row, rank) in frame.column(ID_RANK)?.u32()?.iter().enumerate() {
        match rank {
            Some(r) if (r as usize) < n && by_id[r as usize] == u32::MAX => by_id[r as usize] = row as u32,
            _ => polars_bail!(ComputeError: "the prepared table's id ranks are not a permutation"),
        }
    }
    if by_id.windows(2).any(|w| ids[w[0] as usize] >= ids[w[1] as usize]) {
        polars_bail!(ComputeError: "the prepared table's id ranks do not order its ids");
    }
    let rows_in_order = frame.column(ROW)?.idx()?.iter().enumerate().all(|(i, r)| r == Some(i as IdxSize));
    if !rows_in_order {
        polars_bail!(ComputeError: "the prepared table's row numbers are not its rows");
    }
    let eco_order: Vec<u32> = eco.u32()?.iter().flatten().collect();
    if eco_order.iter().any(|&r| r as usize >= n) {
        polars_bail!(ComputeError: "the prepared table's eco-score order names rows it does not have");
    }
    Ok((ids, by_id, eco_order))
}

/// The row numbers of a frame's [`ROW`] column.
pub fn row_numbers(df: &DataFrame) -> PolarsResult<Vec<u32>> {
    let rows = df.column(ROW)?.cast(&DataType::UInt32)?;
    Ok(rows.u32()?.iter().flatten().collect())
}

/// The ids of the view's rows.
fn parse_ids(view: &DataFrame) -> PolarsResult<Vec<Uuid>> {
    let ids = view.column(ID)?.cast(&DataType::String)?;
    let ids = ids.str()?;
    let (parsed, bad) = parse_uuids(ids);
    if let Some(&row) = bad.first() {
        polars_bail!(ComputeError: "invalid id {} in the served frame", ids.get(row).unwrap_or_default());
    }
    if ids.null_count() > 0 {
        polars_bail!(ComputeError: "a row of the served frame has no id");
    }
    Ok(parsed)
}

/// Adds the eco-score positions (competition ranking, best = 1: ties on the published score
/// share the lowest position) overall, within the categoria and within the combustivel_tipo, and
/// the percentile 100 × (N − global) / (N − 1) (100 when N = 1). The order of the scored rows
/// (score descending, id ascending) is returned for reuse. `by_id` lists the rows by id.
fn positions(frame: &mut DataFrame, index: &TextIndex, by_id: &[u32], casas_eco_score: u32) -> PolarsResult<Vec<u32>> {
    // The scores and id ranks read in place (one chunk each: the table's columns are gathered
    // into one), nothing copied per row but the sort keys.
    let scores = frame.column("eco_score")?.cast(&DataType::Float64)?;
    let scores = scores.f64()?.rechunk();
    let scores_array = scores.downcast_as_array();
    let score = Scores { values: scores_array.values().as_slice(), valid: scores_array.validity() };
    let groups = [group_codes(index, "categoria")?, group_codes(index, "combustivel_tipo")?];
    let counted = match score_levels(&score, COUNTED_LEVELS) {
        Some(levels) => positions_counted(&score, &levels, &groups, by_id, casas_eco_score),
        None => None,
    };
    let ranked = match counted {
        Some(ranked) => ranked,
        None => {
            let id_rank_column = frame.column(ID_RANK)?.u32()?.rechunk();
            let id_rank = id_rank_column.downcast_as_array().values().as_slice();
            positions_sorted(&score, id_rank, &groups, casas_eco_score)
        }
    };
    drop(scores);
    let Ranked { order, global, percentil, within: [categoria, combustivel] } = ranked;
    frame.with_column(global.with_name("posicao_global".into()).into_column())?;
    frame.with_column(categoria.with_name("posicao_categoria".into()).into_column())?;
    frame.with_column(combustivel.with_name("posicao_combustivel".into()).into_column())?;
    frame.with_column(percentil.with_name("percentil".into()).into_column())?;
    Ok(order)
}

/// The most distinct published scores whose positions are counted per score (as shipped, a
/// score has one decimal: at most 1,001 of them); beyond, the rows are sorted.
const COUNTED_LEVELS: usize = 1 << 16;

/// The most cells (groups × distinct scores) of a group's count table.
const COUNTED_CELLS: usize = 1 << 24;

/// The eco scores of a table's rows: a value per row, valid where there is a score.
struct Scores<'a> {
    values: &'a [f64],
    valid: Option<&'a Bitmap>,
}

impl Scores<'_> {
    fn at(&self, row: usize) -> Option<f64> {
        self.valid.is_none_or(|v| v.get_bit(row)).then(|| self.values[row])
    }
}

/// The group code of each row (`None` for a null) and the number of codes.
fn group_codes<'a>(index: &'a TextIndex, column: &str) -> PolarsResult<(&'a TextColumn, usize)> {
    let c = index.column(column).ok_or_else(|| polars_err!(ComputeError: "no {column} index"))?;
    Ok((c, c.values().len()))
}

/// The positions of every row and the order of the scored ones.
struct Ranked {
    order: Vec<u32>,
    global: UInt32Chunked,
    percentil: Float64Chunked,
    within: [UInt32Chunked; 2],
}

/// The level of each row's score (0 = the best score; `u32::MAX` without a score) and the
/// number of levels: `None` with more than `limit` distinct scores, or a NaN (which ties with
/// nothing, not even another NaN).
fn score_levels(score: &Scores, limit: usize) -> Option<(Vec<u32>, usize)> {
    use rayon::prelude::*;
    let n = score.values.len();
    let part = (n / (4 * rayon::current_num_threads())).max(1 << 16);
    let distinct = (0..n.div_ceil(part))
        .into_par_iter()
        .map(|k| {
            let mut seen: PlHashSet<u64> = PlHashSet::new();
            for row in k * part..((k + 1) * part).min(n) {
                match score.at(row) {
                    Some(v) if v.is_nan() => return None,
                    // -0.0 and 0.0 are the same score.
                    Some(v) => drop(seen.insert((v + 0.0).to_bits())),
                    None => {}
                }
                if seen.len() > limit {
                    return None;
                }
            }
            Some(seen)
        })
        .try_reduce(PlHashSet::new, |mut a, b| {
            a.extend(b);
            (a.len() <= limit).then_some(a)
        })?;
    let mut best_first: Vec<f64> = distinct.into_iter().map(f64::from_bits).collect();
    best_first.sort_unstable_by(|a, b| b.total_cmp(a));
    let level_of: PlHashMap<u64, u32> = best_first.iter().enumerate().map(|(l, v)| (v.to_bits(), l as u32)).collect();
    let levels =
        (0..n).into_par_iter().map(|row| score.at(row).map_or(u32::MAX, |v| level_of[&(v + 0.0).to_bits()])).collect();
    Some((levels, best_first.len()))
}

/// Positions counted per score level: how many rows (of the table, of a group) have each score,
/// then each row's position read from those counts; the order of the scored rows is the rows
/// by id, placed by their level. `None` when a group's count table would be too large.
fn positions_counted(
    score: &Scores,
    (levels, count): &(Vec<u32>, usize),
    groups: &[(&TextColumn, usize); 2],
    by_id: &[u32],
    casas_eco_score: u32,
) -> Option<Ranked> {
    use rayon::prelude::*;
    let (n, count) = (levels.len(), *count);
    if groups.iter().any(|(_, codes)| codes.saturating_mul(count) > COUNTED_CELLS) {
        return None;
    }
    // Rows of each level, overall and per group, counted by parts of the rows side by side.
    let part = (n / (4 * rayon::current_num_threads())).max(1 << 16);
    let cells = |(_, codes): &(&TextColumn, usize)| codes * count;
    let counts = (0..n.div_ceil(part))
        .into_par_iter()
        .map(|k| {
            let mut overall = vec![0u32; count];
            let mut within = [vec![0u32; cells(&groups[0])], vec![0u32; cells(&groups[1])]];
            let start = k * part;
            for (row, &level) in levels.iter().enumerate().take(((k + 1) * part).min(n)).skip(start) {
                if level == u32::MAX {
                    continue;
                }
                overall[level as usize] += 1;
                for ((column, _), table) in groups.iter().zip(&mut within) {
                    if let Some(code) = column.code_at(row as u32) {
                        table[code as usize * count + level as usize] += 1;
                    }
                }
            }
            (overall, within)
        })
        .reduce(
            || (vec![0u32; count], [vec![0u32; cells(&groups[0])], vec![0u32; cells(&groups[1])]]),
            |(mut a, mut aw), (b, bw)| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                for (t, u) in aw.iter_mut().zip(&bw) {
                    t.iter_mut().zip(u).for_each(|(x, y)| *x += y);
                }
                (a, aw)
            },
        );
    let (overall, within) = counts;
    // A level's position: one more than the rows of better levels (before it, as counted).
    let first_positions = |counts: &[u32]| -> Vec<u32> {
        let mut before = 0u32;
        // (No chunk at all without a score: `count` is 0 and so are the tables.)
        counts
            .chunks(count.max(1))
            .flat_map(|group| {
                before = 0;
                group
                    .iter()
                    .map(|c| {
                        let p = before + 1;
                        before += c;
                        p
                    })
                    .collect::<Vec<u32>>()
            })
            .collect()
    };
    let global_at = first_positions(&overall);
    let within_at = [first_positions(&within[0]), first_positions(&within[1])];
    let scored: u32 = overall.iter().sum();
    let percentil_at: Vec<f64> = global_at
        .iter()
        .map(|&p| match scored {
            1 => 100.0,
            _ => round_published(100.0 * (scored as f64 - p as f64) / (scored as f64 - 1.0), casas_eco_score),
        })
        .collect();
    // Each row's positions, read from its level.
    let scored_rows: Option<Bitmap> = score.valid.cloned();
    let global: Vec<u32> = levels.par_iter().map(|&l| if l == u32::MAX { 0 } else { global_at[l as usize] }).collect();
    let percentil: Vec<f64> =
        levels.par_iter().map(|&l| if l == u32::MAX { 0.0 } else { percentil_at[l as usize] }).collect();
    let group_positions = |g: usize| -> UInt32Chunked {
        let (column, _) = groups[g];
        let at = &within_at[g];
        let values: Vec<u32> = (0..n)
            .into_par_iter()
            .map(|row| match (levels[row], column.code_at(row as u32)) {
                (l, Some(code)) if l != u32::MAX => at[code as usize * count + l as usize],
                _ => 0,
            })
            .collect();
        // A position is 1 or more: a row has one where its value is not 0 (packed on every core).
        let bytes: Vec<u8> = values.par_chunks(8).map(|eight| packed_byte(eight, |&p| p != 0)).collect();
        UInt32Chunked::from_vec_validity(PlSmallStr::EMPTY, values, Some(Bitmap::from_u8_vec(bytes, n)))
    };
    // The scored rows by score (best first), then id: the rows by id listed by level, each level's
    // run after the better levels' (its first position), on every core. The levels are read in
    // id order once (rows from anywhere in the table), then by both passes of the listing in turn.
    let by_score = || -> Vec<u32> {
        let level_by_id: Vec<u32> =
            by_id.par_iter().map(|&row| levels.get(row as usize).copied().unwrap_or(u32::MAX)).collect();
        let level = |k: usize, _| Some(level_by_id[k]).filter(|&l| l != u32::MAX).map(|l| l as usize);
        listed_by_key(by_id, count, part, level, |row| row).0
    };
    let ((categoria, combustivel), order) =
        rayon::join(|| rayon::join(|| group_positions(0), || group_positions(1)), by_score);
    Some(Ranked {
        order,
        global: UInt32Chunked::from_vec_validity(PlSmallStr::EMPTY, global, scored_rows.clone()),
        percentil: Float64Chunked::from_vec_validity(PlSmallStr::EMPTY, percentil, scored_rows),
        within: [categoria, combustivel],
    })
}

/// Positions by sorting the scored rows (score descending, id rank ascending), then one pass
/// over them per ranking: for any scores.
fn positions_sorted(
    score: &Scores,
    id_rank: &[u32],
    groups: &[(&TextColumn, usize); 2],
    casas_eco_score: u32,
) -> Ranked {
    use polars_arrow::bitmap::MutableBitmap;
    let n = score.values.len();
    let (values, scored_at) = (score.values, score.valid);
    let is_scored = |r: usize| scored_at.is_none_or(|v| v.get_bit(r));
    // One integer key per scored row: the score descending (its total order as an integer,
    // inverted), the id rank, then the row itself (never decisive: id ranks are unique).
    let descending = |score: f64| -> u128 {
        let bits = score.to_bits();
        let ascending = if bits >> 63 == 1 { !bits } else { bits | 1 << 63 };
        (!ascending) as u128
    };
    let mut keyed: Vec<u128> = (0..n)
        .filter(|&r| is_scored(r))
        .map(|r| descending(values[r]) << 64 | (id_rank[r] as u128) << 32 | r as u128)
        .collect();
    keyed.par_sort_unstable();
    let order: Vec<u32> = keyed.iter().map(|&k| k as u32).collect();
    drop(keyed);
    let scored = order.len();
    // A position is null where the score is (and, within a group, where the group is).
    let scored_rows: Option<Bitmap> = scored_at.cloned();
    let group = |(c, codes): &(&TextColumn, usize)| -> UInt32Chunked {
        let mut out = vec![0u32; n];
        let mut valid = MutableBitmap::from_len_zeroed(n);
        // Per code: members seen so far, and the last score with its position.
        let mut seen: Vec<(u32, f64, u32)> = vec![(0, f64::NAN, 0); *codes];
        for &r in &order {
            let Some(code) = c.code_at(r) else { continue };
            let value = values[r as usize];
            let entry = &mut seen[code as usize];
            entry.0 += 1;
            if entry.1 != value {
                entry.1 = value;
                entry.2 = entry.0;
            }
            out[r as usize] = entry.2;
            valid.set(r as usize, true);
        }
        UInt32Chunked::from_vec_validity(PlSmallStr::EMPTY, out, Some(valid.into()))
    };
    let overall = || {
        let mut global = vec![0u32; n];
        let mut percentil = vec![0f64; n];
        let (mut last, mut position) = (f64::NAN, 0u32);
        for (i, &r) in order.iter().enumerate() {
            let value = values[r as usize];
            if value != last {
                last = value;
                position = i as u32 + 1;
            }
            global[r as usize] = position;
            percentil[r as usize] = if scored == 1 {
                100.0
            } else {
                round_published(100.0 * (scored as f64 - position as f64) / (scored as f64 - 1.0), casas_eco_score)
            };
        }
        (
            UInt32Chunked::from_vec_validity(PlSmallStr::EMPTY, global, scored_rows.clone()),
            Float64Chunked::from_vec_validity(PlSmallStr::EMPTY, percentil, scored_rows),
        )
    };
    // The three passes are independent: they run side by side.
    let ((global, percentil), (categoria, combustivel)) =
        rayon::join(overall, || rayon::join(|| group(&groups[0]), || group(&groups[1])));
    Ranked { order, global, percentil, within: [categoria, combustivel] }
}

/// The catalog order as a permutation of the rows: marca, modelo, versao (byte order), ano
/// descending, then id ascending. Brand and model compare as the rank of their distinct values
/// (ranked once per dictionary entry), so most comparisons are between integers.
fn catalog_permutation(df: &DataFrame, id_rank: &[u32], by_id: &[u32]) -> PolarsResult<Vec<u32>> {
    use rayon::prelude::*;
    // Each step's debug line: that step's own time.
    let mut t = std::time::Instant::now();
    let lexical_ranks = |values: &TextValues| -> Vec<u32> {
        match values {
            TextValues::Dictionary(codes, mapping) => {
                let size = codes.iter().flatten().max().map_or(0, |m| m as usize + 1);
                let mut seen = vec![false; size];
                for c in codes.iter().flatten() {
                    seen[c as usize] = true;
                }
                let mut present: Vec<u32> = (0..size as u32).filter(|c| seen[*c as usize]).collect();
                present.sort_unstable_by(|a, b| mapping.cat_to_str(*a).cmp(&mapping.cat_to_str(*b)));
                let mut rank = vec![0u32; size];
                for (i, code) in present.iter().enumerate() {
                    rank[*code as usize] = i as u32;
                }
                codes.iter().map(|c| c.map_or(0, |c| rank[c as usize])).collect()
            }
            TextValues::Plain(text) => row_ranks(text),
        }
    };
    let (marca, modelo, versao) = std::thread::scope(|scope| {
        let marca = scope.spawn(|| TextValues::of(df.column("marca")?).map(|v| lexical_ranks(&v)));
        let modelo = scope.spawn(|| TextValues::of(df.column("modelo")?).map(|v| lexical_ranks(&v)));
        let versao = df.column("versao").and_then(TextValues::of).map(|v| lexical_ranks(&v));
        let join = |h: std::thread::ScopedJoinHandle<'_, PolarsResult<Vec<u32>>>| {
            h.join().unwrap_or_else(|_| Err(polars_err!(ComputeError: "catalog order thread failed")))
        };
        (join(marca), join(modelo), versao)
    });
    let (marca, modelo, versao) = (marca?, modelo?, versao?);
    tracing::debug!(ms = t.elapsed().as_millis() as u64, "catalog text ranks");
    t = std::time::Instant::now();
    let ano = df.column("ano")?.i32()?;
    if id_rank.len() != df.height() {
        polars_bail!(ComputeError: "the id ranks are not the frame's rows");
    }
    // One integer key per row: brand, model and version ranks, the year descending and the id
    // rank, most significant first (16 + 24 + 24 + 16 + 32 bits). The key is read three times a
    // row by the sort (see `bucket_sort`): each part of it from a plain slice.
    let ano = ano.rechunk();
    let ano = ano.downcast_as_array();
    let (anos, valid) = (ano.values().as_slice(), ano.validity());
    let ano_desc: Vec<u16> = (0..anos.len())
        .into_par_iter()
        .map(|i| {
            let a = if valid.is_none_or(|v| v.get_bit(i)) { anos[i] } else { 0 };
            (u16::MAX as i64 - a as i64).clamp(0, u16::MAX as i64) as u16
        })
        .collect();
    let key = |i: usize| -> u128 {
        ((marca[i] as u128) << 96)
            | ((modelo[i] as u128) << 72)
            | ((versao[i] as u128) << 48)
            | ((ano_desc[i] as u128) << 32)
            | id_rank[i] as u128
    };
    let fits = |ranks: &[u32], bits: u32| ranks.par_iter().all(|r| (*r as u64) < (1u64 << bits));
    if fits(&marca, 16) && fits(&modelo, 24) && fits(&versao, 24) && by_id.len() == df.height() {
        // The key alone is sorted (16 bytes a row, not 32 with the row beside it): its id rank
        // names the row through the id order.
        let keyed = super::bucket_sort::sorted(df.height(), key, |k| *k);
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "catalog keys sorted");
        return Ok(keyed.par_iter().map(|&k| by_id[k as u32 as usize]).collect());
    }
    // More distinct values than the packed key holds: compare field by field.
    let mut order: Vec<u32> = (0..df.height() as u32).collect();
    order.par_sort_unstable_by_key(|&r| {
        let i = r as usize;
        (marca[i], modelo[i], versao[i], ano_desc[i], id_rank[i])
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
const FLOATS: [&str; 19] = [
    "eficiencia_cidade_km_l",
    "eficiencia_estrada_km_l",
    "eficiencia_cidade_etanol_km_l",
    "eficiencia_estrada_etanol_km_l",
    "consumo_energetico_mj_km",
    "co2_fossil_g_km",
    "nmhc_g_km",
    "co_g_km",
    "nox_g_km",
    "nmog_nox_g_km",
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
            nmog_nox_g_km: f(9),
            autonomia_eletrica_km: f(10),
            tanque_l: f(11),
            classificacao_pbe_categoria: t(9),
            classificacao_pbe_geral: t(10),
            eficiencia_media_referencia: f(12),
            consumo_referencia: f(13),
            co2_referencia_g_km: f(14),
            autonomia_km: f(15),
            custo_anual_estimado: f(16),
            eco_score: f(17),
            eco_faixa: t(11),
            posicao_global: self.positions[0].get(i),
            posicao_categoria: self.positions[1].get(i),
            posicao_combustivel: self.positions[2].get(i),
            percentil: f(18),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_columns_are_found_without_reading_them() {
        let long = |i: i32| format!("a version name longer than twelve bytes {i}");
        let columns = [
            Series::new("s".into(), (0..100).map(|i| (i % 9 != 0).then(|| long(i))).collect::<Vec<_>>()),
            Series::new("i".into(), (0..100).map(|i| (i % 7 != 0).then_some(i)).collect::<Vec<_>>()),
            dictionary_encode_by_chunks(&Column::new("d".into(), (0..100).map(|i| long(i % 3)).collect::<Vec<_>>()))
                .unwrap()
                .take_materialized_series(),
        ];
        for c in &columns {
            let shared = c.clone();
            assert!(same_memory(c, &shared), "{}: a shared column", c.name());
            // Equal values in memory of their own, or a slice of the same memory: read instead.
            let copy = match c.dtype() {
                DataType::String => c.str().unwrap().iter().collect::<StringChunked>().into_series(),
                DataType::Int32 => c.i32().unwrap().iter().collect::<Int32Chunked>().into_series(),
                dtype => {
                    let text = c.cast(&DataType::String).unwrap().into_column();
                    super::super::schema::dictionary_encode_as(&text, dtype.clone()).unwrap().take_materialized_series()
                }
            };
            let copy = copy.with_name(c.name().clone());
            assert!(!same_memory(c, &copy), "{}: a copy", c.name());
            assert!(c.equals_missing(&copy));
            assert!(!same_memory(c, &c.slice(1, 99)) && !same_memory(&c.slice(0, 99), &c.slice(1, 99)));
        }
    }

    #[test]
    fn plain_text_ranks_are_the_byte_order_of_the_distinct_values() {
        let values: Vec<Option<String>> = (0..5000)
            .map(|i| match i % 3 {
                _ if i % 97 == 0 => None,
                0 => Some(format!("v{}", i % 50)),
                _ => Some(format!("version {:>5} long enough to lie out of line", (i * 7919) % 1234)),
            })
            .collect();
        let mut text = StringChunked::new("v".into(), &values[..1700]);
        text.append(&StringChunked::new("v".into(), &values[1700..])).unwrap();
        let mut distinct: Vec<&str> = values.iter().flatten().map(String::as_str).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let expected: Vec<u32> =
            values.iter().map(|v| v.as_deref().map_or(0, |v| distinct.binary_search(&v).unwrap() as u32)).collect();
        assert_eq!(row_ranks(&text), expected);
    }

    #[test]
    fn catalog_order_is_brand_model_version_year_desc_then_id() {
        let df = df!(
            "marca" => ["b", "a", "a", "a", "a", "B"],
            "modelo" => ["x", "y", "x", "x", "x", "x"],
            "versao" => ["1", "1", "2", "10", "2", "1"],
            "ano" => [2020, 2020, 2019, 2020, 2021, 2020],
        )
        .unwrap();
        // Byte order: "B" < "a" < "b", "10" < "2". B (5), a/x/10 (3), a/x/2/2021 (4), a/x/2/2019 (2),
        // a/y/1 (1), b (0).
        assert_eq!(catalog_permutation(&df, &[0, 1, 2, 3, 4, 5], &[0, 1, 2, 3, 4, 5]).unwrap(), [5, 3, 4, 2, 1, 0]);
        // Ids in another order: the id rank breaks no tie here, and names each row through the order.
        assert_eq!(catalog_permutation(&df, &[5, 4, 3, 2, 1, 0], &[5, 4, 3, 2, 1, 0]).unwrap(), [5, 3, 4, 2, 1, 0]);
    }

    /// Positions counted per score level equal positions by sorting the rows, on scores with
    /// ties, nulls and rows without a group; with more distinct scores than the limit, the
    /// counted path declines.
    #[test]
    fn counted_positions_equal_sorted_positions() {
        // Past several parts of the rows (see `positions_counted`).
        let n = 300_000usize;
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let scores: Vec<Option<f64>> =
            (0..n).map(|_| (next() % 10 != 0).then(|| (next() % 1001) as f64 / 10.0)).collect();
        let categoria: Vec<Option<String>> =
            (0..n).map(|_| (next() % 20 != 0).then(|| format!("c{}", next() % 7))).collect();
        let combustivel: Vec<String> = (0..n).map(|_| format!("f{}", next() % 4)).collect();
        let mut by_id: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            by_id.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        let mut id_rank = vec![0u32; n];
        for (k, &row) in by_id.iter().enumerate() {
            id_rank[row as usize] = k as u32;
        }
        let mut df = df!(
            "eco_score" => scores,
            "categoria" => categoria,
            "combustivel_tipo" => combustivel,
            ID_RANK => id_rank.clone(),
        )
        .unwrap();
        for (name, value) in [("marca", "m"), ("modelo", "x"), ("tipo_propulsao", "C"), ("transmissao_tipo", "M")] {
            df.with_column(Column::new(name.into(), vec![value; n])).unwrap();
        }
        let index = TextIndex::build(&df).unwrap();
        let column = df.column("eco_score").unwrap().f64().unwrap().rechunk();
        let array = column.downcast_as_array();
        let score = Scores { values: array.values().as_slice(), valid: array.validity() };
        let groups = [group_codes(&index, "categoria").unwrap(), group_codes(&index, "combustivel_tipo").unwrap()];
        let levels = score_levels(&score, COUNTED_LEVELS).unwrap();
        assert!(levels.1 > 900, "scores with ties over most of 0-100");
        let counted = positions_counted(&score, &levels, &groups, &by_id, 1).unwrap();
        let sorted = positions_sorted(&score, &id_rank, &groups, 1);
        assert_eq!(counted.order, sorted.order);
        let same = |a: &UInt32Chunked, b: &UInt32Chunked| a.iter().eq(b.iter());
        assert!(same(&counted.global, &sorted.global));
        assert!(counted.percentil.iter().eq(sorted.percentil.iter()));
        for (a, b) in counted.within.iter().zip(&sorted.within) {
            assert!(same(a, b));
            // A tenth of the rows has no score (some more no group).
            assert!(a.null_count() > n / 12, "rows without a score or a group have no position");
        }
        assert!(score_levels(&score, 100).is_none(), "more distinct scores than the limit");
        // No score at all: no level, no position, an empty order.
        let none = Scores { values: array.values().as_slice(), valid: Some(&Bitmap::new_zeroed(n)) };
        let empty = score_levels(&none, COUNTED_LEVELS).unwrap();
        assert_eq!(empty.1, 0);
        let counted = positions_counted(&none, &empty, &groups, &by_id, 1).unwrap();
        assert!(counted.order.is_empty());
        assert_eq!(counted.global.null_count(), n);
        assert_eq!(counted.within[0].null_count(), n);
        assert_eq!(counted.percentil.null_count(), n);
        // The table build takes the counted path here and gives the same columns.
        let order = positions(&mut df, &index, &by_id, 1).unwrap();
        assert_eq!(order, sorted.order);
        assert!(df
            .column("posicao_global")
            .unwrap()
            .as_materialized_series()
            .equals_missing(&sorted.global.clone().with_name("posicao_global".into()).into_series()));
    }

    #[test]
    fn positions_share_the_lowest_on_ties() {
        let df = df!(
            "eco_score" => [Some(70.0), Some(80.0), None, Some(70.0), Some(60.0)],
            "categoria" => ["A", "A", "A", "B", "A"],
            "combustivel_tipo" => ["F", "G", "F", "F", "F"],
            ID_RANK => [4u32, 3, 2, 1, 0],
        )
        .unwrap();
        let mut df = df;
        for (name, value) in [("marca", "m"), ("modelo", "x"), ("tipo_propulsao", "C"), ("transmissao_tipo", "M")] {
            df.with_column(Column::new(name.into(), vec![value; 5])).unwrap();
        }
        let index = TextIndex::build(&df).unwrap();
        let order = positions(&mut df, &index, &[4, 3, 2, 1, 0], 1).unwrap();
        assert_eq!(order, [1, 3, 0, 4], "score descending, then id");
        let read = |name: &str| -> Vec<Option<u32>> { df.column(name).unwrap().u32().unwrap().iter().collect() };
        assert_eq!(read("posicao_global"), [Some(2), Some(1), None, Some(2), Some(4)]);
        assert_eq!(read("posicao_categoria"), [Some(2), Some(1), None, Some(1), Some(3)]);
        assert_eq!(read("posicao_combustivel"), [Some(1), Some(1), None, Some(1), Some(3)]);
        let percentil: Vec<Option<f64>> = df.column("percentil").unwrap().f64().unwrap().iter().collect();
        // N = 4: 100 × (4 − p) / 3 → 66.7, 100, null, 66.7, 0.
        assert_eq!(percentil, [Some(66.7), Some(100.0), None, Some(66.7), Some(0.0)]);
    }
}
