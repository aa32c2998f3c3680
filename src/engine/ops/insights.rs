//! Insights and aggregations (spec endpoints 10–14): the summary, the efficiency and eco-score
//! lists, the emissions summary and the per-brand aggregation, as lazy aggregations over the
//! filtered served frame. Every average is taken over the published (already rounded)
//! per-vehicle values, ignores nulls, and is itself rounded to 2 decimals, half to even.

use std::sync::Arc;

use polars::prelude::*;

use super::filters::{page_key, published_mean, Filters, Page, Window};
use super::order::{ordered, SortKey};
use crate::engine::dataset::table::Table;

const ECO_SCORE: &str = "eco_score";
const CONSUMO: &str = "consumo_referencia";
const CO2: &str = "co2_referencia_g_km";
const EFICIENCIA: &str = "eficiencia_media_referencia";

/// Number of categories in `melhoresCategorias` and in `pioresCategorias`.
pub const CATEGORY_LIST_LEN: u32 = 3;

/// One band of a distribution. A band holds the values in (previous band's `upper`, `upper`]:
/// the first band also holds everything at or below its `upper` (0 included), and a band without
/// `upper` (the last) everything above the previous one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    pub faixa: &'static str,
    pub upper: Option<f64>,
}

/// The eco-score bands of `distribuicaoEcoScore`, in the order they are listed.
pub const ECO_SCORE_BANDS: [Band; 4] = [
    Band { faixa: "0-40", upper: Some(40.0) },
    Band { faixa: "40-60", upper: Some(60.0) },
    Band { faixa: "60-80", upper: Some(80.0) },
    Band { faixa: "80-100", upper: None },
];

/// The CO2 bands (g/km) of the emissions `distribuicao`, in the order they are listed.
pub const CO2_BANDS: [Band; 4] = [
    Band { faixa: "0-100", upper: Some(100.0) },
    Band { faixa: "100-130", upper: Some(130.0) },
    Band { faixa: "130-180", upper: Some(180.0) },
    Band { faixa: "180+", upper: None },
];

/// How many values fall in one band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BandCount {
    pub band: &'static str,
    pub total: u64,
}

/// Published means over a set of vehicles (`None` when no vehicle has the value).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Means {
    pub eco_score: Option<f64>,
    /// Of consumo_referencia (MJ/km).
    pub consumo: Option<f64>,
    /// Of co2_referencia_g_km (g/km).
    pub co2: Option<f64>,
}

/// The summary of the filtered vehicles.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub means: Means,
    /// Up to [`CATEGORY_LIST_LEN`] categories with the highest mean eco score, best first
    /// (ties: categoria ascending).
    pub best_categories: Vec<(String, f64)>,
    /// Up to [`CATEGORY_LIST_LEN`] categories with the lowest mean eco score, worst first.
    pub worst_categories: Vec<(String, f64)>,
    /// Every band of [`ECO_SCORE_BANDS`], in order.
    pub eco_score_bands: Vec<BandCount>,
}

/// The emissions of the filtered vehicles.
#[derive(Debug, Clone, PartialEq)]
pub struct Emissions {
    /// Mean CO2 by categoria, ascending by mean then key; categories without CO2 left out.
    pub by_category: Vec<(String, f64)>,
    /// Mean CO2 by combustivel_tipo, likewise.
    pub by_fuel: Vec<(String, f64)>,
    /// Every band of [`CO2_BANDS`], in order.
    pub co2_bands: Vec<BandCount>,
}

/// The aggregates of one brand.
#[derive(Debug, Clone, PartialEq)]
pub struct BrandStats {
    pub marca: String,
    pub vehicles: u64,
    pub means: Means,
}

/// The published mean of a column at `decimals` (see `filters::published_mean`).
fn mean_of(column: &str, decimals: u32) -> Expr {
    published_mean(col(column), decimals)
}

/// One count expression per band, aliased `faixa_{i}`.
fn band_counts(column: &str, bands: &[Band]) -> Vec<Expr> {
    let value = || col(column).cast(DataType::Float64);
    bands
        .iter()
        .enumerate()
        .map(|(i, band)| {
            let lower = i.checked_sub(1).and_then(|p| bands[p].upper);
            let inside = match (lower, band.upper) {
                (None, Some(u)) => value().lt_eq(lit(u)),
                (Some(l), Some(u)) => value().gt(lit(l)).and(value().lt_eq(lit(u))),
                (Some(l), None) => value().gt(lit(l)),
                (None, None) => value().is_not_null(),
            };
            // Null values compare to null and are not counted.
            inside.cast(DataType::UInt32).sum().cast(DataType::UInt64).alias(format!("faixa_{i}"))
        })
        .collect()
}

/// Reads the band counts of [`band_counts`] from a one-row frame.
fn read_bands(df: &DataFrame, bands: &[Band]) -> PolarsResult<Vec<BandCount>> {
    bands
        .iter()
        .enumerate()
        .map(|(i, band)| {
            let total = u64_at(df, &format!("faixa_{i}"))?.unwrap_or(0);
            Ok(BandCount { band: band.faixa, total })
        })
        .collect()
}

/// How many values of `column` fall in each band (zeros included, bands in the given order).
pub fn distribution(lf: LazyFrame, column: &str, bands: &[Band]) -> PolarsResult<Vec<BandCount>> {
    let df = lf.select(band_counts(column, bands)).collect()?;
    read_bands(&df, bands)
}

/// The rounded mean of `value` per distinct `key`, groups without a value left out, ordered by
/// the mean (ascending or descending) then by the key ascending, at most `limit` groups.
pub fn group_means(
    lf: LazyFrame,
    key: &str,
    value: &str,
    descending: bool,
    limit: Option<u32>,
    decimals: u32,
) -> PolarsResult<Vec<(String, f64)>> {
    // Dictionary-encoded keys become text again (few groups) before they are ordered.
    let lf = lf
        .group_by([col(key)])
        .agg([mean_of(value, decimals).alias("media")])
        .filter(col("media").is_not_null())
        .with_column(col(key).cast(DataType::String))
        .sort_by_exprs(
            [col("media"), col(key)],
            SortMultipleOptions::default().with_order_descending_multi([descending, false]),
        );
    let lf = match limit {
        Some(n) => lf.limit(n as IdxSize),
        None => lf,
    };
    let df = lf.collect()?;
    let keys = df.column(key)?.cast(&DataType::String)?;
    let means = df.column("media")?.cast(&DataType::Float64)?;
    Ok(keys
        .str()?
        .iter()
        .zip(means.f64()?.iter())
        .filter_map(|(k, m)| Some((k?.to_string(), m.filter(|x| x.is_finite())?)))
        .collect())
}

fn f64_column(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<f64>>> {
    let c = df.column(name)?.cast(&DataType::Float64)?;
    Ok(c.f64()?.iter().map(|v| v.filter(|x| x.is_finite())).collect())
}

fn f64_at(df: &DataFrame, name: &str) -> PolarsResult<Option<f64>> {
    Ok(f64_column(df, name)?.first().copied().flatten())
}

fn u64_at(df: &DataFrame, name: &str) -> PolarsResult<Option<u64>> {
    let c = df.column(name)?.cast(&DataType::UInt64)?;
    Ok(c.u64()?.get(0))
}

/// `GET /insights/summary` over the filtered vehicles (computed once per snapshot when there is
/// no filter).
pub fn summary(snapshot: &Table, filters: &Filters) -> PolarsResult<Arc<Summary>> {
    if filters.is_empty() {
        return snapshot.memo("insights/summary", || summary_of(snapshot, filters));
    }
    let key = format!("insights/summary|{}", filters.key());
    snapshot.answers.get_or_compute(&key, |_| 1024, || summary_of(snapshot, filters))
}

fn summary_of(snapshot: &Table, filters: &Filters) -> PolarsResult<Summary> {
    let lf = snapshot.filtered(&filters.rows(), &[ECO_SCORE, CONSUMO, CO2, "categoria"])?;
    let d = snapshot.casas.metricas;
    let mut exprs =
        vec![mean_of(ECO_SCORE, d).alias("eco"), mean_of(CONSUMO, d).alias("consumo"), mean_of(CO2, d).alias("co2")];
    exprs.extend(band_counts(ECO_SCORE, &ECO_SCORE_BANDS));
    let totals = lf.clone().select(exprs).collect()?;
    let means = Means {
        eco_score: f64_at(&totals, "eco")?,
        consumo: f64_at(&totals, "consumo")?,
        co2: f64_at(&totals, "co2")?,
    };
    // One aggregation, ordered by mean then categoria: the worst are its head, the best its
    // tail reordered (mean descending, categoria ascending).
    let worst_first = group_means(lf, "categoria", ECO_SCORE, false, None, d)?;
    let mut best_first = worst_first.clone();
    best_first.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let listed = |mut groups: Vec<(String, f64)>| {
        groups.truncate(CATEGORY_LIST_LEN as usize);
        groups
    };
    Ok(Summary {
        means,
        best_categories: listed(best_first),
        worst_categories: listed(worst_first),
        eco_score_bands: read_bands(&totals, &ECO_SCORE_BANDS)?,
    })
}

/// The filtered vehicles with a non-null `metric`, by `metric` descending then id, one page
/// (its rows): the metric's order (computed once per table) walked once, counting the matches
/// and keeping the page's rows.
/// With sort keys, the same vehicles in the keys' order (see `order`).
fn ranked_page(
    table: &Table,
    filters: &Filters,
    metric: &str,
    window: Window,
    keys: &[SortKey],
) -> PolarsResult<Page<u32>> {
    let order = table.order(metric, true)?;
    if !keys.is_empty() {
        let members: Vec<u32> = if filters.is_empty() {
            order.to_vec()
        } else {
            let matcher = table.matcher(&filters.rows());
            order.iter().copied().filter(|&r| matcher.matches(r)).collect()
        };
        let all = ordered(table, Some(&members), keys)?;
        let range = window.range(all.len());
        return Ok(Page { items: all[range].to_vec(), total: all.len() });
    }
    if filters.is_empty() {
        let range = window.range(order.len());
        return Ok(Page { items: order[range].to_vec(), total: order.len() });
    }
    let range = window.range(usize::MAX);
    let matcher = table.matcher(&filters.rows());
    let mut rows = Vec::with_capacity(range.len().min(1024));
    let mut total = 0usize;
    for &r in order {
        if matcher.matches(r) {
            if range.contains(&total) {
                rows.push(r);
            }
            total += 1;
        }
    }
    Ok(Page { items: rows, total })
}

/// `GET /insights/efficiency`: the rows of the vehicles with an efficiency, by
/// eficiencia_media_referencia descending, then id.
pub fn efficiency(table: &Table, filters: &Filters, window: Window, keys: &[SortKey]) -> PolarsResult<Arc<Page<u32>>> {
    let key = page_key("insights/efficiency", filters, window, keys);
    table.answers.get_or_compute(&key, Page::weight, || ranked_page(table, filters, EFICIENCIA, window, keys))
}

/// `GET /insights/eco-scores`: the rows of the scored vehicles, by eco score descending, then id.
pub fn eco_scores(table: &Table, filters: &Filters, window: Window, keys: &[SortKey]) -> PolarsResult<Arc<Page<u32>>> {
    let key = page_key("insights/eco-scores", filters, window, keys);
    table.answers.get_or_compute(&key, Page::weight, || ranked_page(table, filters, ECO_SCORE, window, keys))
}

/// `GET /insights/emissions` over the filtered vehicles (computed once per snapshot when there
/// is no filter).
pub fn emissions(snapshot: &Table, filters: &Filters) -> PolarsResult<Arc<Emissions>> {
    if filters.is_empty() {
        return snapshot.memo("insights/emissions", || emissions_of(snapshot, filters));
    }
    let key = format!("insights/emissions|{}", filters.key());
    let weigh = |e: &Emissions| (e.by_category.len() + e.by_fuel.len()) * 64 + 256;
    snapshot.answers.get_or_compute(&key, weigh, || emissions_of(snapshot, filters))
}

fn emissions_of(snapshot: &Table, filters: &Filters) -> PolarsResult<Emissions> {
    let lf = snapshot.filtered(&filters.rows(), &[CO2, "categoria", "combustivel_tipo"])?;
    Ok(Emissions {
        by_category: group_means(lf.clone(), "categoria", CO2, false, None, snapshot.casas.metricas)?,
        by_fuel: group_means(lf.clone(), "combustivel_tipo", CO2, false, None, snapshot.casas.metricas)?,
        co2_bands: distribution(lf, CO2, &CO2_BANDS)?,
    })
}

/// `GET /aggregations/by-brand`: one item per brand of the filtered vehicles, by brand
/// ascending case-insensitively, then byte-wise (computed once per snapshot when there is no
/// filter).
pub fn by_brand(snapshot: &Table, filters: &Filters) -> PolarsResult<Arc<Vec<BrandStats>>> {
    if filters.is_empty() {
        return snapshot.memo("aggregations/by-brand", || by_brand_of(snapshot, filters));
    }
    let key = format!("aggregations/by-brand|{}", filters.key());
    let weigh = |b: &Vec<BrandStats>| b.len() * 96 + 64;
    snapshot.answers.get_or_compute(&key, weigh, || by_brand_of(snapshot, filters))
}

fn by_brand_of(snapshot: &Table, filters: &Filters) -> PolarsResult<Vec<BrandStats>> {
    let df = snapshot
        .filtered(&filters.rows(), &["marca", CONSUMO, CO2, ECO_SCORE])?
        .group_by([col("marca")])
        .agg([
            len().cast(DataType::UInt64).alias("quantidade"),
            mean_of(CONSUMO, snapshot.casas.metricas).alias("consumo"),
            mean_of(CO2, snapshot.casas.metricas).alias("co2"),
            mean_of(ECO_SCORE, snapshot.casas.metricas).alias("eco"),
        ])
        .with_column(col("marca").cast(DataType::String))
        .sort_by_exprs([col("marca").str().to_lowercase(), col("marca")], SortMultipleOptions::default())
        .collect()?;
    let marcas = df.column("marca")?.str()?.clone();
    let quantidade = df.column("quantidade")?.cast(&DataType::UInt64)?;
    let (consumo, co2, eco) = (f64_column(&df, "consumo")?, f64_column(&df, "co2")?, f64_column(&df, "eco")?);
    Ok(marcas
        .iter()
        .zip(quantidade.u64()?.iter())
        .enumerate()
        .map(|(i, (marca, n))| BrandStats {
            marca: marca.unwrap_or_default().to_string(),
            vehicles: n.unwrap_or(0),
            means: Means { eco_score: eco[i], consumo: consumo[i], co2: co2[i] },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(values: &[Option<f64>]) -> LazyFrame {
        df!("v" => values).unwrap().lazy()
    }

    fn totals(bands: Vec<BandCount>) -> Vec<(String, u64)> {
        bands.into_iter().map(|b| (b.band.to_string(), b.total)).collect()
    }

    #[test]
    fn band_edges_are_lower_exclusive_upper_inclusive() {
        let lf = scores(&[Some(0.0), Some(40.0), Some(40.1), Some(60.0), Some(80.0), Some(80.1), Some(100.0), None]);
        let got = totals(distribution(lf, "v", &ECO_SCORE_BANDS).unwrap());
        let want: Vec<(String, u64)> =
            [("0-40", 2), ("40-60", 2), ("60-80", 1), ("80-100", 2)].iter().map(|(f, n)| (f.to_string(), *n)).collect();
        assert_eq!(got, want);
        let lf = scores(&[Some(0.0), Some(100.0), Some(100.01), Some(130.0), Some(180.0), Some(180.5), Some(999.0)]);
        let got = totals(distribution(lf, "v", &CO2_BANDS).unwrap());
        assert_eq!(got.iter().map(|(_, n)| *n).collect::<Vec<_>>(), vec![2, 2, 1, 2]);
        assert_eq!(
            got.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
            vec!["0-100", "100-130", "130-180", "180+"]
        );
    }

    #[test]
    fn empty_input_lists_every_band_with_zero() {
        let lf = scores(&[]);
        let got = totals(distribution(lf, "v", &CO2_BANDS).unwrap());
        assert_eq!(got.len(), 4);
        assert!(got.iter().all(|(_, n)| *n == 0));
    }

    #[test]
    fn group_means_skip_nulls_round_and_order() {
        let df = df!(
            "k" => ["b", "a", "a", "c", "d", "e"],
            "v" => [Some(10.0), Some(10.0), Some(10.005), None, Some(12.125), Some(10.0025)]
        )
        .unwrap();
        // a: 10.0025 → 10.0 (half to even); b: 10.0; e: 10.0025 → 10.0; c has no value.
        let asc = group_means(df.clone().lazy(), "k", "v", false, None, 2).unwrap();
        let keys: Vec<&str> = asc.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, vec!["a", "b", "e", "d"]);
        assert_eq!(asc[3].1, 12.12);
        let desc = group_means(df.lazy(), "k", "v", true, Some(2), 2).unwrap();
        assert_eq!(desc, vec![("d".to_string(), 12.12), ("a".to_string(), 10.0)]);
    }

    #[test]
    fn means_of_nothing_are_null() {
        let df = df!("v" => [None::<f64>, None]).unwrap();
        let out = df.lazy().select([mean_of("v", 2).alias("m")]).collect().unwrap();
        assert_eq!(f64_at(&out, "m").unwrap(), None);
        let empty = df!("v" => Vec::<f64>::new()).unwrap();
        let out = empty.lazy().select([mean_of("v", 2).alias("m")]).collect().unwrap();
        assert_eq!(f64_at(&out, "m").unwrap(), None);
    }
}
