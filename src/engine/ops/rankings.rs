//! Rankings: the custom ranking, the grouped rankings (by category, fuel, brand, year) and the
//! fixed per-dataset rankings (most economical, lowest CO2, longest electric range, overview).
//!
//! Each ranking is one Polars lazy plan over the served frame: filters → metric (nulls left
//! out) → sort with id ascending as the last tie-breaker → top N; grouped rankings add a
//! `group_by` whose aggregates pick the mean, the best, the worst and the top N of each group.
//! Every ordering works on the published (rounded) values already in the frame.

use std::sync::Arc;

use polars::prelude::*;
use rayon::prelude::*;

#[cfg(test)]
use super::filters::published_mean;
use super::filters::Filters;
#[cfg(test)]
use crate::engine::dataset::table::ROW;
use crate::engine::dataset::table::{Table, Vehicle, ID_RANK};

/// Largest `top` a parameterised ranking accepts.
pub const MAX_TOP: u32 = 100;
/// Default `top` of the custom ranking.
pub const DEFAULT_TOP: u32 = 10;
/// Default `top` (per group) of the grouped rankings.
pub const DEFAULT_GROUP_TOP: u32 = 5;
/// Number of items of each fixed ranking.
pub const FIXED_TOP: u32 = 10;
/// Number of items of each ranking in the overview.
pub const OVERVIEW_TOP: usize = 5;

/// Temporary column holding the ranked value.
#[cfg(test)]
const VALUE: &str = "__valor";
/// Temporary columns of the grouped plan.
#[cfg(test)]
const GROUP: &str = "__grupo";
#[cfg(test)]
const MEAN: &str = "__media";
#[cfg(test)]
const BEST: &str = "__melhor";
#[cfg(test)]
const WORST: &str = "__pior";
#[cfg(test)]
const TOP: &str = "__top";

/// Sort direction of a ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

impl Order {
    pub fn descending(self) -> bool {
        self == Order::Desc
    }

    pub fn reversed(self) -> Order {
        match self {
            Order::Asc => Order::Desc,
            Order::Desc => Order::Asc,
        }
    }
}

/// A metric the parameterised rankings order by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    EcoScore,
    Consumo,
    Co2,
    Autonomia,
    Eficiencia,
}

impl Metric {
    /// The served frame's column holding the published value.
    pub fn column(self) -> &'static str {
        match self {
            Metric::EcoScore => "eco_score",
            Metric::Consumo => "consumo_referencia",
            Metric::Co2 => "co2_referencia_g_km",
            Metric::Autonomia => "autonomia_km",
            Metric::Eficiencia => "eficiencia_media_referencia",
        }
    }

    /// The best-first direction: higher is better for the score, efficiency and range; lower is
    /// better for energy consumption and CO2.
    pub fn natural(self) -> Order {
        match self {
            Metric::EcoScore | Metric::Autonomia | Metric::Eficiencia => Order::Desc,
            Metric::Consumo | Metric::Co2 => Order::Asc,
        }
    }
}

/// The key of a grouped ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    Categoria,
    Combustivel,
    Marca,
    Ano,
}

impl GroupBy {
    /// The column holding the key.
    fn column(self) -> &'static str {
        match self {
            GroupBy::Categoria => "categoria",
            GroupBy::Combustivel => "combustivel_tipo",
            GroupBy::Marca => "marca",
            GroupBy::Ano => "ano",
        }
    }

    /// The group key as a string expression (the year is rendered as text, e.g. "2024").
    #[cfg(test)]
    fn key(self) -> Expr {
        match self {
            GroupBy::Categoria => col("categoria"),
            GroupBy::Combustivel => col("combustivel_tipo"),
            GroupBy::Marca => col("marca"),
            GroupBy::Ano => col("ano").cast(DataType::String),
        }
    }
}

/// A validated request to a parameterised ranking, with the defaults resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct RankingQuery {
    pub filters: Filters,
    pub metric: Metric,
    pub order: Order,
    /// 1..=[`MAX_TOP`]; per group on the grouped rankings.
    pub top: u32,
}

impl RankingQuery {
    /// Resolves the defaults: metric eco_score, order the metric's natural direction.
    pub fn new(filters: Filters, metric: Option<Metric>, order: Option<Order>, top: u32) -> RankingQuery {
        let metric = metric.unwrap_or(Metric::EcoScore);
        let order = order.unwrap_or(metric.natural());
        RankingQuery { filters, metric, order, top: top.clamp(1, MAX_TOP) }
    }
}

/// One group of a grouped ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The group key (the year as text on the by-year ranking).
    pub key: String,
    /// Published mean of the metric over the group's vehicles.
    pub mean: f64,
    /// Best vehicle of the group by the metric's natural direction (whatever the order is).
    pub best: Option<Vehicle>,
    /// Worst vehicle of the group by the metric's natural direction.
    pub worst: Option<Vehicle>,
    /// The group's top N in the requested order.
    pub top: Vec<Vehicle>,
}

/// The fixed rankings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixedKind {
    /// Top 10 by eficiencia_media_referencia, highest first.
    MostEconomical,
    /// Top 10 by co2_referencia_g_km, lowest first.
    LowestCo2,
    /// Top 10 by autonomia_eletrica_km, highest first.
    LongestElectricRange,
    /// Top 5 by eco score (listed in the overview only).
    BestEcoScore,
}

/// One fixed ranking: its top vehicles with the ranked (published) values.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedTop {
    pub kind: FixedKind,
    /// The column ranked.
    pub metric: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// Best first.
    pub entries: Vec<(Vehicle, f64)>,
}

/// The rankings that depend only on the dataset, computed once per snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedRankings {
    pub most_economical: FixedTop,
    pub lowest_co2: FixedTop,
    pub longest_electric_range: FixedTop,
    /// [`OVERVIEW_TOP`] long: the overview lists it.
    pub best_eco_score: FixedTop,
}

/// One fixed ranking: what it ranks and how it is labelled.
struct FixedSpec {
    kind: FixedKind,
    /// The column ranked, by its published values (see `Table::published`).
    metric_name: &'static str,
    unit: &'static str,
    order: Order,
}

impl FixedSpec {
    fn all() -> [FixedSpec; 4] {
        [
            FixedSpec {
                kind: FixedKind::MostEconomical,
                metric_name: "eficiencia_media_referencia",
                unit: "km/unidade",
                order: Order::Desc,
            },
            FixedSpec {
                kind: FixedKind::LowestCo2,
                metric_name: "co2_referencia_g_km",
                unit: "g/km",
                order: Order::Asc,
            },
            FixedSpec {
                kind: FixedKind::LongestElectricRange,
                metric_name: "autonomia_eletrica_km",
                unit: "km",
                // An input column: published like every metric (half to even, see
                // `Table::published`).
                order: Order::Desc,
            },
            FixedSpec { kind: FixedKind::BestEcoScore, metric_name: "eco_score", unit: "pontos", order: Order::Desc },
        ]
    }

    /// The top `n` vehicles of the whole dataset with their ranked values: one pass over the
    /// published values (the table's, kept for the range filters) keeping the best `n` (the
    /// sort's order: the value, then the id ascending), rows without a finite value left out.
    /// No sort of the whole table, no column copied: at 10M rows a sort held both cores for
    /// seconds right when the service starts answering.
    fn top(&self, table: &Table, n: u32) -> PolarsResult<FixedTop> {
        let values = table.published(self.metric_name)?;
        let ranks = table.frame().column(ID_RANK)?.u32()?.rechunk();
        let ranks = ranks.cont_slice()?;
        if ranks.len() != values.len() {
            polars_bail!(ComputeError: "the id ranks are not the table's rows");
        }
        // Each core keeps the best of a part of the rows; the parts' best are merged.
        let part = values.len().div_ceil(rayon::current_num_threads().max(1)).max(1 << 16);
        let descending = self.order.descending();
        let bests: Vec<Vec<(f64, u32, u32)>> = (0..values.len())
            .step_by(part)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|start| {
                let rows = start..(start + part).min(values.len());
                let candidates = rows.filter(|&i| values[i].is_finite()).map(|i| (values[i], ranks[i], i as u32));
                best_n(candidates, n as usize, descending)
            })
            .collect();
        let entries = best_n(bests.into_iter().flatten(), n as usize, descending)
            .into_iter()
            .map(|(value, _, row)| (table.vehicle_at(row), value))
            .collect();
        Ok(FixedTop { kind: self.kind, metric: self.metric_name, unit: self.unit, entries })
    }
}

/// The best `n` of `(value, id rank, row)` candidates, best first: by value (descending when
/// `descending`), equal values by id rank ascending.
fn best_n(candidates: impl Iterator<Item = (f64, u32, u32)>, n: usize, descending: bool) -> Vec<(f64, u32, u32)> {
    let before = |a: &(f64, u32, u32), b: &(f64, u32, u32)| {
        let by_value = if descending { b.0.partial_cmp(&a.0) } else { a.0.partial_cmp(&b.0) };
        by_value.unwrap_or(std::cmp::Ordering::Equal).then(a.1.cmp(&b.1)).is_lt()
    };
    let mut best: Vec<(f64, u32, u32)> = Vec::with_capacity(n + 1);
    for c in candidates {
        if best.len() == n && best.last().is_none_or(|worst| !before(&c, worst)) {
            continue;
        }
        let at = best.partition_point(|b| before(b, &c));
        best.insert(at, c);
        best.truncate(n);
    }
    best
}

/// The fixed rankings of a table, computed once (see `engine::warm`).
pub fn fixed(table: &Table) -> PolarsResult<Arc<FixedRankings>> {
    table.memo("rankings/fixed", || FixedRankings::compute(table))
}

impl FixedRankings {
    /// Computes every fixed ranking of a table.
    pub fn compute(table: &Table) -> PolarsResult<FixedRankings> {
        let [economical, co2, electric, eco] = FixedSpec::all();
        Ok(FixedRankings {
            most_economical: economical.top(table, FIXED_TOP)?,
            lowest_co2: co2.top(table, FIXED_TOP)?,
            longest_electric_range: electric.top(table, FIXED_TOP)?,
            best_eco_score: eco.top(table, OVERVIEW_TOP as u32)?,
        })
    }

    /// The four rankings in the overview's order.
    pub fn all(&self) -> [&FixedTop; 4] {
        [&self.most_economical, &self.lowest_co2, &self.longest_electric_range, &self.best_eco_score]
    }
}

/// `lf` with the ranked value in [`VALUE`]; rows without a (finite) value are left out.
#[cfg(test)]
fn valued(lf: LazyFrame, value: Expr) -> LazyFrame {
    lf.with_column(value.alias(VALUE)).filter(col(VALUE).is_not_null().and(col(VALUE).is_finite()))
}

/// `GET /rankings/custom`: the top N of the filtered vehicles by the metric, in the order. The
/// table keeps each metric's order (computed once), so the top N is the first N rows of that
/// order passing the filters: no sort per request.
/// Filtered rankings are kept per table (see `answers`).
pub fn custom(table: &Table, query: &RankingQuery) -> PolarsResult<Arc<Vec<u32>>> {
    let key = format!("rankings/custom|{}|{:?}|{:?}|{}", query.filters.key(), query.metric, query.order, query.top);
    table.answers.get_or_compute(
        &key,
        |rows: &Vec<u32>| rows.len() * 4 + 64,
        || {
            let order = table.order(query.metric.column(), query.order.descending())?;
            let matcher = table.matcher(&query.filters.rows());
            Ok(order.iter().copied().filter(|&r| matcher.matches(r)).take(query.top as usize).collect())
        },
    )
}

/// The group's `row`s sorted by the ranked value in `order`, id ascending on ties.
#[cfg(test)]
fn rows_by_value(order: Order) -> Expr {
    col(ROW).sort_by(
        [col(VALUE), col(ID_RANK)],
        SortMultipleOptions::default().with_order_descending_multi([order.descending(), false]),
    )
}

/// The grouped rankings: one group per distinct key among the filtered vehicles with a value,
/// ordered by the group mean in `order` then by key ascending.
/// Kept per table, by the question (see `answers`).
pub fn grouped(snapshot: &Table, query: &RankingQuery, by: GroupBy) -> PolarsResult<Arc<Vec<Group>>> {
    let weigh = |groups: &Vec<Group>| groups.iter().map(|g| (g.top.len() + 2) * 512 + g.key.len()).sum::<usize>() + 64;
    snapshot.answers.get_or_compute(&grouped_key(query, by), weigh, || grouped_of(snapshot, query, by))
}

/// The grouped rankings written once per question by `write` (the answer's JSON, say), and kept
/// per table beside the groups: a repeated question costs a lookup, as a fixed ranking does.
pub fn grouped_written(
    snapshot: &Table,
    query: &RankingQuery,
    by: GroupBy,
    write: impl FnOnce(&[Group]) -> PolarsResult<Arc<str>>,
) -> PolarsResult<Arc<str>> {
    let kept = snapshot.answers.get_or_compute(
        &written_key(query, by),
        |text: &Arc<str>| text.len(),
        || write(&grouped(snapshot, query, by)?),
    )?;
    Ok(Arc::clone(&kept))
}

/// The grouped rankings' JSON if it is kept already (see [`grouped_written`]): answered on the
/// request's own task, with no hop to a blocking thread.
pub fn grouped_kept(snapshot: &Table, query: &RankingQuery, by: GroupBy) -> Option<Arc<str>> {
    snapshot.answers.kept::<Arc<str>>(&written_key(query, by)).map(|kept| Arc::clone(&*kept))
}

/// The question of a grouped ranking's written answer.
fn written_key(query: &RankingQuery, by: GroupBy) -> String {
    format!("written|{}", grouped_key(query, by))
}

/// The normalised question of a grouped ranking.
fn grouped_key(query: &RankingQuery, by: GroupBy) -> String {
    format!("rankings/grouped|{by:?}|{}|{:?}|{:?}|{}", query.filters.key(), query.metric, query.order, query.top)
}

/// One walk of the metric's precomputed order (in the requested direction, id ascending on
/// ties) over the filtered rows: per group its sum and count, its first rows (the top N), and
/// its extreme in the other direction. No sort of rows per request; only the groups are sorted.
fn grouped_of(snapshot: &Table, query: &RankingQuery, by: GroupBy) -> PolarsResult<Vec<Group>> {
    struct Acc {
        sum: f64,
        n: u64,
        /// Best rows first in the requested order (at most `top`).
        top: Vec<u32>,
        /// The first row (in the walk) of the other extreme value.
        other: (u32, f64),
    }
    let column = query.metric.column();
    let values = snapshot.published(column)?;
    let order = snapshot.order(column, query.order.descending())?;
    let filters = query.filters.rows();
    let matcher = (!filters.is_empty()).then(|| snapshot.matcher(&filters));
    // The groups' slots: a text column's codes (null: the last slot), or years from the smallest.
    let text = match by {
        GroupBy::Ano => None,
        _ => Some(
            snapshot
                .index
                .column(by.column())
                .ok_or_else(|| polars_err!(ComputeError: "no dictionary for {}", by.column()))?,
        ),
    };
    let (year_min, slots) = match text {
        Some(t) => (0, t.values().len() + 1),
        None => {
            let (lo, hi) = (0..snapshot.len() as u32)
                .map(|r| snapshot.ano_at(r))
                .fold((i32::MAX, i32::MIN), |(lo, hi), a| (lo.min(a), hi.max(a)));
            (lo, if lo > hi { 0 } else { (hi as i64 - lo as i64 + 1) as usize })
        }
    };
    let slot_of = |row: u32| -> usize {
        match text {
            Some(t) => t.code_at(row).map(|c| c as usize).unwrap_or(slots - 1),
            None => (snapshot.ano_at(row) as i64 - year_min as i64) as usize,
        }
    };
    // Walking in the requested order, the other extreme moves on a strictly more extreme value
    // only: among ties it stays on the lowest id, as the contract's tie-break wants.
    let descending = query.order.descending();
    let beyond = |v: f64, current: f64| if descending { v < current } else { v > current };
    let top = query.top as usize;
    let mut accs: Vec<Option<Acc>> = (0..slots).map(|_| None).collect();
    for &row in order {
        let v = values[row as usize];
        if !v.is_finite() || matcher.as_ref().is_some_and(|m| !m.matches(row)) {
            continue;
        }
        let acc = accs[slot_of(row)].get_or_insert_with(|| Acc { sum: 0.0, n: 0, top: Vec::new(), other: (row, v) });
        acc.sum += v;
        acc.n += 1;
        if acc.top.len() < top {
            acc.top.push(row);
        }
        if beyond(v, acc.other.1) {
            acc.other = (row, v);
        }
    }
    let decimals = snapshot.casas.metricas;
    let natural_first = query.order == query.metric.natural();
    let mut groups: Vec<Group> = accs
        .into_iter()
        .enumerate()
        .filter_map(|(slot, acc)| {
            let acc = acc?;
            let key = match text {
                Some(t) => t.values().get(slot).cloned().unwrap_or_default(),
                None => (year_min as i64 + slot as i64).to_string(),
            };
            let first = acc.top.first().map(|&r| snapshot.vehicle_at(r));
            let other = Some(snapshot.vehicle_at(acc.other.0));
            let (best, worst) = if natural_first { (first, other) } else { (other, first) };
            Some(Group {
                key,
                mean: crate::engine::dataset::publish::round_published(acc.sum / acc.n as f64, decimals),
                best,
                worst,
                top: acc.top.iter().map(|&r| snapshot.vehicle_at(r)).collect(),
            })
        })
        .collect();
    groups.sort_by(|a, b| {
        let by_mean = if descending { b.mean.total_cmp(&a.mean) } else { a.mean.total_cmp(&b.mean) };
        by_mean.then_with(|| a.key.as_bytes().cmp(b.key.as_bytes()))
    });
    Ok(groups)
}

/// The same answer as [`grouped_of`] as one Polars plan (group by, sorts per group): the
/// reference the walk is checked against.
#[cfg(test)]
fn grouped_plan(snapshot: &Table, query: &RankingQuery, by: GroupBy) -> PolarsResult<Vec<Group>> {
    let natural = query.metric.natural();
    let lf = valued(
        snapshot.filtered(&query.filters.rows(), &[query.metric.column(), by.column()])?,
        col(query.metric.column()),
    )
    .with_column(by.key().alias(GROUP))
    .group_by([col(GROUP)])
    .agg([
        published_mean(col(VALUE), snapshot.casas.metricas).alias(MEAN),
        rows_by_value(natural).first().alias(BEST),
        rows_by_value(natural.reversed()).first().alias(WORST),
        rows_by_value(query.order).head(Some(query.top as usize)).alias(TOP),
    ])
    // Dictionary-encoded keys become text again (few groups) before they are ordered.
    .with_column(col(GROUP).cast(DataType::String))
    .sort_by_exprs(
        [col(MEAN), col(GROUP)],
        SortMultipleOptions::default()
            .with_order_descending_multi([query.order.descending(), false])
            .with_nulls_last(true),
    );
    let df = lf.collect()?;

    let vehicle = |r: Option<u32>| r.map(|r| snapshot.vehicle_at(r));
    let keys = df.column(GROUP)?.str()?;
    let means = df.column(MEAN)?.cast(&DataType::Float64)?;
    let means = means.f64()?;
    let best = df.column(BEST)?.cast(&DataType::UInt32)?;
    let best = best.u32()?;
    let worst = df.column(WORST)?.cast(&DataType::UInt32)?;
    let worst = worst.u32()?;
    let mut groups = Vec::with_capacity(df.height());
    for (i, top) in df.column(TOP)?.list()?.series_iter().enumerate() {
        let top = match top {
            Some(rows) => {
                rows.cast(&DataType::UInt32)?.u32()?.iter().flatten().filter_map(|r| vehicle(Some(r))).collect()
            }
            None => Vec::new(),
        };
        groups.push(Group {
            key: keys.get(i).unwrap_or_default().to_string(),
            mean: means.get(i).unwrap_or_default(),
            best: vehicle(best.get(i)),
            worst: vehicle(worst.get(i)),
            top,
        });
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;
    use std::path::Path;

    use uuid::Uuid;

    use super::*;
    use crate::engine::load::load_bytes;
    use crate::engine::views::{CostConfig, Views};
    use crate::sample::generate_catalog;

    fn snapshot(rows: usize, seed: u64) -> crate::engine::snapshot::Snapshot {
        let mut df = generate_catalog(rows, seed).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap()
    }

    fn value(v: &Vehicle, m: Metric) -> Option<f64> {
        match m {
            Metric::EcoScore => v.eco_score,
            Metric::Consumo => v.consumo_referencia,
            Metric::Co2 => v.co2_referencia_g_km,
            Metric::Autonomia => v.autonomia_km,
            Metric::Eficiencia => v.eficiencia_media_referencia,
        }
    }

    /// Plain-Rust reference order over the materialised vehicles.
    fn reference<'a>(vs: impl Iterator<Item = &'a Vehicle>, m: Metric, order: Order) -> Vec<&'a Vehicle> {
        let mut out: Vec<&Vehicle> = vs.filter(|v| value(v, m).is_some()).collect();
        out.sort_by(|a, b| {
            let (x, y) = (value(a, m).unwrap(), value(b, m).unwrap());
            let c = if order == Order::Desc { y.partial_cmp(&x) } else { x.partial_cmp(&y) };
            c.unwrap_or(Ordering::Equal).then_with(|| a.id.to_string().cmp(&b.id.to_string()))
        });
        out
    }

    /// A table written as a prepared frame (Arrow IPC) and restored answers exactly as the one
    /// built from the export.
    #[test]
    fn a_restored_table_answers_as_the_built_one() {
        let s = snapshot(400, 9);
        let mut frame = s.table.prepared().unwrap();
        let mut ipc = Vec::new();
        IpcWriter::new(&mut ipc).finish(&mut frame).unwrap();
        let read = IpcReader::new(std::io::Cursor::new(ipc)).finish().unwrap();
        let restored = Table::restore(read, s.table.casas).unwrap();
        assert_eq!(restored.vehicles(), s.table.vehicles());
        for (id, v) in s.table.vehicles().iter().map(|v| (v.id, v)) {
            assert_eq!(restored.vehicle(&id).as_ref(), Some(v));
        }
        for m in [Metric::EcoScore, Metric::Co2, Metric::Eficiencia] {
            for order in [Order::Asc, Order::Desc] {
                let q = RankingQuery::new(Filters::default(), Some(m), Some(order), 7);
                assert_eq!(custom(&restored, &q).unwrap(), custom(&s.table, &q).unwrap());
                for by in [GroupBy::Categoria, GroupBy::Ano] {
                    assert_eq!(grouped(&restored, &q, by).unwrap(), grouped(&s.table, &q, by).unwrap());
                }
            }
        }
        // A prepared frame whose id ranks are not a permutation is refused.
        let mut frame = s.table.prepared().unwrap();
        let ranks = frame.column(crate::engine::dataset::table::ID_RANK).unwrap().u32().unwrap().clone();
        let mut broken: Vec<u32> = ranks.into_no_null_iter().collect();
        broken[1] = broken[0];
        frame.with_column(Column::new(crate::engine::dataset::table::ID_RANK.into(), broken)).unwrap();
        let e = Table::restore(frame, s.table.casas).unwrap_err().to_string();
        assert!(e.contains("permutation"), "{e}");
    }

    #[test]
    fn defaults_follow_the_metric() {
        let q = RankingQuery::new(Filters::default(), None, None, DEFAULT_TOP);
        assert_eq!((q.metric, q.order, q.top), (Metric::EcoScore, Order::Desc, 10));
        for (m, o) in [
            (Metric::Consumo, Order::Asc),
            (Metric::Co2, Order::Asc),
            (Metric::Autonomia, Order::Desc),
            (Metric::Eficiencia, Order::Desc),
        ] {
            assert_eq!(RankingQuery::new(Filters::default(), Some(m), None, 5).order, o);
        }
        assert_eq!(RankingQuery::new(Filters::default(), None, None, 0).top, 1);
        assert_eq!(RankingQuery::new(Filters::default(), None, None, 1000).top, MAX_TOP);
    }

    #[test]
    fn plans_match_a_plain_rust_reference() {
        let s = snapshot(400, 7);
        let all = s.vehicles();
        for m in [Metric::EcoScore, Metric::Consumo, Metric::Co2, Metric::Autonomia, Metric::Eficiencia] {
            for order in [Order::Asc, Order::Desc] {
                let q = RankingQuery::new(Filters::default(), Some(m), Some(order), 25);
                let got: Vec<Uuid> = custom(&s, &q).unwrap().iter().map(|r| s.id_at(*r)).collect();
                let want: Vec<Uuid> = reference(all.iter(), m, order).iter().take(25).map(|v| v.id).collect();
                assert_eq!(got, want, "{m:?} {order:?}");

                let filtered = Filters {
                    text: vec![crate::engine::filters::TextFilter::new("modelo", "a").unwrap()],
                    ano_min: Some(2018),
                    ranges: vec![crate::engine::filters::RangeFilter {
                        stem: "eco_score",
                        column: "eco_score",
                        min: Some(30.0),
                        max: None,
                    }],
                    ..Default::default()
                };
                let qf = RankingQuery::new(filtered, Some(m), Some(order), 3);
                for by in [GroupBy::Categoria, GroupBy::Combustivel, GroupBy::Marca, GroupBy::Ano] {
                    for q in [&q, &qf] {
                        let walked = grouped_of(&s, q, by).unwrap();
                        assert_eq!(walked, grouped_plan(&s, q, by).unwrap(), "{by:?} {q:?}");
                    }
                }
                let groups = grouped(&s, &q, GroupBy::Categoria).unwrap();
                for g in groups.iter() {
                    let members = reference(all.iter().filter(|v| v.categoria == g.key), m, order);
                    let top: Vec<Uuid> = g.top.iter().map(|v| v.id).collect();
                    let want: Vec<Uuid> = members.iter().take(25).map(|v| v.id).collect();
                    assert_eq!(top, want);
                    let natural = reference(members.iter().copied(), m, m.natural());
                    assert_eq!(g.best.as_ref().unwrap().id, natural[0].id);
                    let worst = reference(members.iter().copied(), m, m.natural().reversed());
                    assert_eq!(g.worst.as_ref().unwrap().id, worst[0].id);
                    let mean = members.iter().map(|v| value(v, m).unwrap()).sum::<f64>() / members.len() as f64;
                    assert!((g.mean - mean).abs() <= 0.005 + 1e-9, "{} vs {mean}", g.mean);
                }
                let mut keys: Vec<&str> =
                    all.iter().filter(|v| value(v, m).is_some()).map(|v| v.categoria.as_str()).collect();
                keys.sort_unstable();
                keys.dedup();
                assert_eq!(groups.len(), keys.len());
            }
        }
    }

    #[test]
    fn fixed_rankings_are_computed_once_per_table() {
        let s = snapshot(300, 11);
        let all = s.vehicles();
        let f = fixed(&s).unwrap();
        let want: Vec<Uuid> =
            reference(all.iter(), Metric::Eficiencia, Order::Desc).iter().take(10).map(|v| v.id).collect();
        let got: Vec<Uuid> = f.most_economical.entries.iter().map(|(v, _)| v.id).collect();
        assert_eq!(got, want);
        let values: Vec<f64> =
            f.most_economical.entries.iter().map(|(v, x)| v.eficiencia_media_referencia.unwrap() - x).collect();
        assert!(values.iter().all(|d| *d == 0.0), "ranked values are the published ones");
        assert_eq!(f.lowest_co2.entries.len(), 10);
        let ids = |top: &FixedTop| top.entries.iter().map(|(v, _)| v.id).collect::<Vec<Uuid>>();
        let first = |m, order, n| reference(all.iter(), m, order).iter().take(n).map(|v| v.id).collect::<Vec<_>>();
        assert_eq!(ids(&f.lowest_co2), first(Metric::Co2, Order::Asc, 10));
        assert_eq!(ids(&f.best_eco_score), first(Metric::EcoScore, Order::Desc, OVERVIEW_TOP));
        assert_eq!(
            (f.longest_electric_range.unit, f.longest_electric_range.kind),
            ("km", FixedKind::LongestElectricRange)
        );
        let electric = all.iter().filter(|v| v.autonomia_eletrica_km.is_some()).count().min(10);
        assert_eq!(f.longest_electric_range.entries.len(), electric);
        assert_eq!(f.best_eco_score.entries.len(), OVERVIEW_TOP);
        assert!(Arc::ptr_eq(&f, &fixed(&s).unwrap()), "computed once per table");
    }

    /// The best `n` of candidates are the first `n` of a full sort (value, then id rank), ties,
    /// fewer candidates than `n` and `n` = 0 included.
    #[test]
    fn best_n_is_the_head_of_the_sort() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        let candidates: Vec<(f64, u32, u32)> = (0..500).map(|row| ((next() % 17) as f64 - 8.0, next(), row)).collect();
        for descending in [false, true] {
            let mut sorted = candidates.clone();
            sorted.sort_by(|a, b| {
                let by = if descending { b.0.total_cmp(&a.0) } else { a.0.total_cmp(&b.0) };
                by.then(a.1.cmp(&b.1))
            });
            for n in [0, 1, 5, 10, 499, 500, 700] {
                let want: Vec<_> = sorted.iter().copied().take(n).collect();
                assert_eq!(best_n(candidates.iter().copied(), n, descending), want, "n = {n}");
            }
        }
    }

    /// A grouped ranking is written once per question and kept: the same question again is the
    /// kept bytes (no walk, no writing), another question is written anew.
    #[test]
    fn grouped_answers_are_written_once_per_question() {
        let s = snapshot(400, 8);
        let q = RankingQuery::new(Filters::default(), Some(Metric::Co2), None, 3);
        let writes = std::sync::atomic::AtomicUsize::new(0);
        let write = |groups: &[Group]| {
            writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(Arc::from(groups.iter().map(|g| g.key.as_str()).collect::<Vec<_>>().join(",")))
        };
        assert!(grouped_kept(&s, &q, GroupBy::Marca).is_none(), "nothing kept before the first ask");
        let first = grouped_written(&s, &q, GroupBy::Marca, write).unwrap();
        let again = grouped_written(&s, &q, GroupBy::Marca, write).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "the same question is the kept bytes");
        let kept = grouped_kept(&s, &q, GroupBy::Marca).expect("kept after the first ask");
        assert!(Arc::ptr_eq(&first, &kept), "the kept bytes, without a walk");
        assert!(grouped_kept(&s, &q, GroupBy::Categoria).is_none(), "another question is not kept");
        assert_eq!(writes.load(std::sync::atomic::Ordering::Relaxed), 1);
        let brands: std::collections::BTreeSet<String> =
            s.vehicles().into_iter().filter(|v| v.co2_referencia_g_km.is_some()).map(|v| v.marca).collect();
        let written: std::collections::BTreeSet<String> = first.split(',').map(str::to_string).collect();
        assert_eq!(written, brands, "one group per brand with a CO2 value");
        let other = grouped_written(&s, &q, GroupBy::Categoria, write).unwrap();
        assert_eq!(writes.load(std::sync::atomic::Ordering::Relaxed), 2);
        assert_ne!(first, other);
    }
}
