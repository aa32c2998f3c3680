//! Rankings: the custom ranking, the grouped rankings (by category, fuel, brand, year) and the
//! fixed per-dataset rankings (most economical, lowest CO2, longest electric range, overview).
//!
//! Each ranking is one Polars lazy plan over the served frame: filters → metric (nulls left
//! out) → sort with id ascending as the last tie-breaker → top N; grouped rankings add a
//! `group_by` whose aggregates pick the mean, the best, the worst and the top N of each group.
//! Every ordering works on the published (rounded) values already in the frame.

use std::sync::Arc;

use polars::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::filters::{published, published_mean, sorted, Filters};
use crate::engine::dataset::table::{Table, Vehicle, ID_RANK, ROW};

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
const VALUE: &str = "__valor";
/// Temporary columns of the grouped plan.
const GROUP: &str = "__grupo";
const MEAN: &str = "__media";
const BEST: &str = "__melhor";
const WORST: &str = "__pior";
const TOP: &str = "__top";

/// Sort direction of a ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Asc,
    Desc,
}

impl Order {
    /// The query values, as accepted by the `order` parameter.
    pub const CHOICES: &'static [(&'static str, Order)] = &[("asc", Order::Asc), ("desc", Order::Desc)];

    pub fn name(self) -> &'static str {
        match self {
            Order::Asc => "asc",
            Order::Desc => "desc",
        }
    }

    pub fn descending(self) -> bool {
        self == Order::Desc
    }

    fn reversed(self) -> Order {
        match self {
            Order::Asc => Order::Desc,
            Order::Desc => Order::Asc,
        }
    }
}

/// A metric the parameterised rankings order by (eco_score → ecoScore, consumo → consumoReferencia, co2 → co2ReferenciaGKm, autonomia → autonomiaKm, eficiencia → eficienciaMediaReferencia).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    EcoScore,
    Consumo,
    Co2,
    Autonomia,
    Eficiencia,
}

impl Metric {
    /// The query values, as accepted by the `metric` parameter.
    pub const CHOICES: &'static [(&'static str, Metric)] = &[
        ("eco_score", Metric::EcoScore),
        ("consumo", Metric::Consumo),
        ("co2", Metric::Co2),
        ("autonomia", Metric::Autonomia),
        ("eficiencia", Metric::Eficiencia),
    ];

    /// The query value (`eco_score`, `consumo`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Metric::EcoScore => "eco_score",
            Metric::Consumo => "consumo",
            Metric::Co2 => "co2",
            Metric::Autonomia => "autonomia",
            Metric::Eficiencia => "eficiencia",
        }
    }

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
    /// The value echoed in `meta.filters_applied.group_by`.
    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Categoria => "categoria",
            GroupBy::Combustivel => "combustivel",
            GroupBy::Marca => "marca",
            GroupBy::Ano => "ano",
        }
    }

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

    /// `meta.filters_applied`: the filters received plus the effective metric, order and top
    /// (and `group_by` on the grouped rankings).
    pub fn applied(&self, group_by: Option<GroupBy>) -> Map<String, Value> {
        let mut m = self.filters.applied();
        m.insert("metric".into(), Value::from(self.metric.name()));
        m.insert("order".into(), Value::from(self.order.name()));
        m.insert("top".into(), Value::from(self.top));
        if let Some(g) = group_by {
            m.insert("group_by".into(), Value::from(g.name()));
        }
        m
    }
}

/// Ranking base item (the spec's camelCase shape).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RankingItem {
    pub vehicle_id: Uuid,
    #[schema(example = "Fiat")]
    pub marca: String,
    #[schema(example = "Argo")]
    pub modelo: String,
    #[schema(example = "1.0 MT")]
    pub versao: String,
    #[schema(example = 2024)]
    pub ano: i32,
    #[schema(example = "Compacto")]
    pub categoria: String,
    #[schema(example = "Flex")]
    pub combustivel_tipo: String,
    #[schema(example = "Combustão")]
    pub tipo_propulsao: String,
    pub transmissao_tipo: Option<String>,
    /// Eco score, 0–100, one decimal.
    pub eco_score: Option<f64>,
    /// MJ/km, two decimals.
    pub consumo_referencia: Option<f64>,
    /// g/km, two decimals.
    #[serde(rename = "co2ReferenciaGKm")]
    pub co2_referencia_g_km: Option<f64>,
    /// km, two decimals.
    pub autonomia_km: Option<f64>,
    /// km per unit of the reference fuel, two decimals.
    pub eficiencia_media_referencia: Option<f64>,
}

impl From<&Vehicle> for RankingItem {
    fn from(v: &Vehicle) -> Self {
        RankingItem {
            vehicle_id: v.id,
            marca: v.marca.clone(),
            modelo: v.modelo.clone(),
            versao: v.versao.clone(),
            ano: v.ano,
            categoria: v.categoria.clone(),
            combustivel_tipo: v.combustivel_tipo.clone(),
            tipo_propulsao: v.tipo_propulsao.clone(),
            transmissao_tipo: v.transmissao_tipo.clone(),
            eco_score: v.eco_score,
            consumo_referencia: v.consumo_referencia,
            co2_referencia_g_km: v.co2_referencia_g_km,
            autonomia_km: v.autonomia_km,
            eficiencia_media_referencia: v.eficiencia_media_referencia,
        }
    }
}

/// One group of a grouped ranking.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RankingGroup {
    /// The group key (the year as a string on /rankings/by-year).
    #[schema(example = "Compacto")]
    pub grupo: String,
    /// Mean of the metric over the group's vehicles, two decimals (half to even).
    pub media_grupo: f64,
    /// Best vehicle of the group by the metric's natural direction (whatever `order` is).
    pub melhor: Option<RankingItem>,
    /// Worst vehicle of the group by the metric's natural direction (whatever `order` is).
    pub pior: Option<RankingItem>,
    /// The group's top N in the requested order.
    pub top_items: Vec<RankingItem>,
}

/// `data.data` of the grouped rankings.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RankingGroups {
    pub groups: Vec<RankingGroup>,
}

/// Item of /rankings/most-economical and /rankings/longest-electric-range.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FixedRankingItem {
    /// Position in the ranking, from 1.
    pub ranking_posicao: u32,
    pub vehicle_id: Uuid,
    pub marca: String,
    pub modelo: String,
    pub versao: String,
    pub ano: i32,
    pub categoria: String,
    pub tipo_propulsao: String,
    pub combustivel_tipo: String,
    #[schema(example = "eficiencia_media_referencia")]
    pub metric_name: String,
    #[schema(example = "km/unidade")]
    pub metric_unit: String,
    pub metric_value: f64,
}

/// Item of /rankings/lowest-co2 (the spec lists only these fields).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Co2RankingItem {
    /// Position in the ranking, from 1.
    pub ranking_posicao: u32,
    pub vehicle_id: Uuid,
    #[schema(example = "co2_referencia_g_km")]
    pub metric_name: String,
    #[schema(example = "g/km")]
    pub metric_unit: String,
    pub metric_value: f64,
}

/// `data.data` of a fixed ranking.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FixedRanking<T> {
    #[schema(value_type = super::labels::RankingTipo, example = "mais-economicos")]
    pub ranking_type: String,
    pub items: Vec<T>,
}

impl<T> Default for FixedRanking<T> {
    fn default() -> Self {
        FixedRanking { ranking_type: String::new(), items: Vec::new() }
    }
}

/// Item of /rankings/overview.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OverviewItem {
    #[schema(value_type = super::labels::RankingTipo, example = "mais-economicos")]
    pub ranking_tipo: String,
    /// Position within its ranking, from 1.
    pub ranking_posicao: u32,
    pub vehicle_id: Uuid,
    pub marca: String,
    pub modelo: String,
    pub versao: String,
    pub ano: i32,
    pub categoria: String,
    pub tipo_propulsao: String,
    pub combustivel_tipo: String,
    pub metrica_valor: f64,
    #[schema(example = "km/unidade")]
    pub metrica_unidade: String,
}

/// `data.data` of /rankings/overview.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Overview {
    pub items: Vec<OverviewItem>,
}

/// The rankings that depend only on the dataset, computed once per snapshot.
#[derive(Debug, Clone, Default)]
pub struct FixedRankings {
    /// "mais-economicos": top 10 by eficiencia_media_referencia, highest first.
    pub most_economical: FixedRanking<FixedRankingItem>,
    /// "co2-menor": top 10 by co2_referencia_g_km, lowest first.
    pub lowest_co2: FixedRanking<Co2RankingItem>,
    /// "maior-autonomia-eletrica": top 10 by autonomia_eletrica_km, highest first.
    pub longest_electric_range: FixedRanking<FixedRankingItem>,
    /// The top 5 of each fixed ranking plus the top 5 by eco score.
    pub overview: Overview,
    /// The four answers above as JSON, serialised once per snapshot.
    pub json: FixedJson,
}

/// The fixed rankings serialised once (`data.data` of their answers).
#[derive(Debug, Clone, Default)]
pub struct FixedJson {
    pub most_economical: Arc<str>,
    pub lowest_co2: Arc<str>,
    pub longest_electric_range: Arc<str>,
    pub overview: Arc<str>,
}

/// One fixed ranking: what it ranks and how it is labelled.
struct FixedSpec {
    ranking_type: &'static str,
    metric_name: &'static str,
    unit: &'static str,
    /// The published value (rounded to the precision of the responses).
    value: Expr,
    order: Order,
}

impl FixedSpec {
    fn all() -> [FixedSpec; 4] {
        [
            FixedSpec {
                ranking_type: "mais-economicos",
                metric_name: "eficiencia_media_referencia",
                unit: "km/unidade",
                value: col("eficiencia_media_referencia"),
                order: Order::Desc,
            },
            FixedSpec {
                ranking_type: "co2-menor",
                metric_name: "co2_referencia_g_km",
                unit: "g/km",
                value: col("co2_referencia_g_km"),
                order: Order::Asc,
            },
            FixedSpec {
                ranking_type: "maior-autonomia-eletrica",
                metric_name: "autonomia_eletrica_km",
                unit: "km",
                // An input column: published like every metric, two decimals half to even.
                value: published(col("autonomia_eletrica_km").cast(DataType::Float64), 2),
                order: Order::Desc,
            },
            FixedSpec {
                ranking_type: "melhor-eco-score",
                metric_name: "eco_score",
                unit: "pontos",
                value: col("eco_score"),
                order: Order::Desc,
            },
        ]
    }

    /// The top `n` vehicles of the whole dataset with their ranked values.
    fn top(&self, table: &Table, n: u32) -> PolarsResult<Vec<(Vehicle, f64)>> {
        let lf = sorted(valued(table.lazy(), self.value.clone()), &[(VALUE, self.order.descending())]);
        let lf = lf.limit(n as IdxSize);
        let df = lf.select([col(ROW), col(VALUE).cast(DataType::Float64)]).collect()?;
        let values: Vec<f64> = df.column(VALUE)?.f64()?.into_no_null_iter().collect();
        Ok(table.rows_of(&df)?.into_iter().zip(values).collect())
    }
}

/// The fixed rankings of a table, computed once (see `engine::warm`).
pub fn fixed(table: &Table) -> PolarsResult<Arc<FixedRankings>> {
    table.memo("rankings/fixed", || FixedRankings::compute(table))
}

impl FixedRankings {
    /// Computes every fixed ranking of a table.
    pub fn compute(table: &Table) -> PolarsResult<FixedRankings> {
        let [economical, co2, electric, eco] = FixedSpec::all();
        let mut overview = Vec::new();
        let mut push_overview = |spec: &FixedSpec, top: &[(Vehicle, f64)]| {
            for (i, (v, value)) in top.iter().take(OVERVIEW_TOP).enumerate() {
                overview.push(OverviewItem {
                    ranking_tipo: spec.ranking_type.into(),
                    ranking_posicao: i as u32 + 1,
                    vehicle_id: v.id,
                    marca: v.marca.clone(),
                    modelo: v.modelo.clone(),
                    versao: v.versao.clone(),
                    ano: v.ano,
                    categoria: v.categoria.clone(),
                    tipo_propulsao: v.tipo_propulsao.clone(),
                    combustivel_tipo: v.combustivel_tipo.clone(),
                    metrica_valor: *value,
                    metrica_unidade: spec.unit.into(),
                });
            }
        };

        let top = economical.top(table, FIXED_TOP)?;
        push_overview(&economical, &top);
        let most_economical = full_ranking(&economical, &top);

        let top = co2.top(table, FIXED_TOP)?;
        push_overview(&co2, &top);
        let lowest_co2 = FixedRanking {
            ranking_type: co2.ranking_type.into(),
            items: top
                .iter()
                .enumerate()
                .map(|(i, (v, value))| Co2RankingItem {
                    ranking_posicao: i as u32 + 1,
                    vehicle_id: v.id,
                    metric_name: co2.metric_name.into(),
                    metric_unit: co2.unit.into(),
                    metric_value: *value,
                })
                .collect(),
        };

        let top = electric.top(table, FIXED_TOP)?;
        push_overview(&electric, &top);
        let longest_electric_range = full_ranking(&electric, &top);

        let top = eco.top(table, OVERVIEW_TOP as u32)?;
        push_overview(&eco, &top);

        let overview = Overview { items: overview };
        let json = |value: &dyn erased::Json| -> PolarsResult<Arc<str>> {
            value
                .to_json()
                .map(Arc::from)
                .map_err(|e| polars_err!(ComputeError: "cannot serialise a fixed ranking: {e}"))
        };
        let json = FixedJson {
            most_economical: json(&most_economical)?,
            lowest_co2: json(&lowest_co2)?,
            longest_electric_range: json(&longest_electric_range)?,
            overview: json(&overview)?,
        };
        Ok(FixedRankings { most_economical, lowest_co2, longest_electric_range, overview, json })
    }
}

mod erased {
    /// Serialises any `Serialize` value behind one trait object.
    pub trait Json {
        fn to_json(&self) -> serde_json::Result<String>;
    }

    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> serde_json::Result<String> {
            serde_json::to_string(self)
        }
    }
}

fn full_ranking(spec: &FixedSpec, top: &[(Vehicle, f64)]) -> FixedRanking<FixedRankingItem> {
    FixedRanking {
        ranking_type: spec.ranking_type.into(),
        items: top
            .iter()
            .enumerate()
            .map(|(i, (v, value))| FixedRankingItem {
                ranking_posicao: i as u32 + 1,
                vehicle_id: v.id,
                marca: v.marca.clone(),
                modelo: v.modelo.clone(),
                versao: v.versao.clone(),
                ano: v.ano,
                categoria: v.categoria.clone(),
                tipo_propulsao: v.tipo_propulsao.clone(),
                combustivel_tipo: v.combustivel_tipo.clone(),
                metric_name: spec.metric_name.into(),
                metric_unit: spec.unit.into(),
                metric_value: *value,
            })
            .collect(),
    }
}

/// `lf` with the ranked value in [`VALUE`]; rows without a (finite) value are left out.
fn valued(lf: LazyFrame, value: Expr) -> LazyFrame {
    lf.with_column(value.alias(VALUE)).filter(col(VALUE).is_not_null().and(col(VALUE).is_finite()))
}

/// `GET /rankings/custom`: the top N of the filtered vehicles by the metric, in the order. The
/// table keeps each metric's order (computed once), so the top N is the first N rows of that
/// order passing the filters: no sort per request.
pub fn custom(table: &Table, query: &RankingQuery) -> PolarsResult<Vec<u32>> {
    let order = table.order(query.metric.column(), query.order.descending())?;
    let matcher = table.matcher(&query.filters.rows());
    Ok(order.iter().copied().filter(|&r| matcher.matches(r)).take(query.top as usize).collect())
}

/// The group's `row`s sorted by the ranked value in `order`, id ascending on ties.
fn rows_by_value(order: Order) -> Expr {
    col(ROW).sort_by(
        [col(VALUE), col(ID_RANK)],
        SortMultipleOptions::default().with_order_descending_multi([order.descending(), false]),
    )
}

/// The grouped rankings: one group per distinct key among the filtered vehicles with a value,
/// ordered by the group mean in `order` then by key ascending.
pub fn grouped(snapshot: &Table, query: &RankingQuery, by: GroupBy) -> PolarsResult<RankingGroups> {
    let natural = query.metric.natural();
    let lf = valued(
        snapshot.filtered(&query.filters.rows(), &[query.metric.column(), by.column()])?,
        col(query.metric.column()),
    )
    .with_column(by.key().alias(GROUP))
    .group_by([col(GROUP)])
    .agg([
        published_mean(col(VALUE)).alias(MEAN),
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

    let vehicle = |r: Option<u32>| r.map(|r| RankingItem::from(&snapshot.vehicle_at(r)));
    let keys = df.column(GROUP)?.str()?;
    let means = df.column(MEAN)?.cast(&DataType::Float64)?;
    let means = means.f64()?;
    let best = df.column(BEST)?.cast(&DataType::UInt32)?;
    let best = best.u32()?;
    let worst = df.column(WORST)?.cast(&DataType::UInt32)?;
    let worst = worst.u32()?;
    let mut groups = Vec::with_capacity(df.height());
    for (i, top) in df.column(TOP)?.list()?.series_iter().enumerate() {
        let top_items = match top {
            Some(rows) => {
                rows.cast(&DataType::UInt32)?.u32()?.iter().flatten().filter_map(|r| vehicle(Some(r))).collect()
            }
            None => Vec::new(),
        };
        groups.push(RankingGroup {
            grupo: keys.get(i).unwrap_or_default().to_string(),
            media_grupo: means.get(i).unwrap_or_default(),
            melhor: vehicle(best.get(i)),
            pior: vehicle(worst.get(i)),
            top_items,
        });
    }
    Ok(RankingGroups { groups })
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;
    use std::path::Path;

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
        let q = RankingQuery::new(Filters::default(), Some(Metric::Co2), Some(Order::Desc), 3);
        assert_eq!(
            serde_json::to_string(&q.applied(Some(GroupBy::Ano))).unwrap(),
            r#"{"metric":"co2","order":"desc","top":3,"group_by":"ano"}"#
        );
        for (name, m) in Metric::CHOICES {
            assert_eq!(m.name(), *name);
            assert_eq!(serde_json::to_value(m).unwrap(), *name);
        }
    }

    #[test]
    fn plans_match_a_plain_rust_reference() {
        let s = snapshot(400, 7);
        let all = s.vehicles();
        for &(_, m) in Metric::CHOICES {
            for order in [Order::Asc, Order::Desc] {
                let q = RankingQuery::new(Filters::default(), Some(m), Some(order), 25);
                let got: Vec<Uuid> = custom(&s, &q).unwrap().iter().map(|r| s.id_at(*r)).collect();
                let want: Vec<Uuid> = reference(all.iter(), m, order).iter().take(25).map(|v| v.id).collect();
                assert_eq!(got, want, "{m:?} {order:?}");

                let groups = grouped(&s, &q, GroupBy::Categoria).unwrap().groups;
                for g in &groups {
                    let members = reference(all.iter().filter(|v| v.categoria == g.grupo), m, order);
                    let top: Vec<Uuid> = g.top_items.iter().map(|i| i.vehicle_id).collect();
                    let want: Vec<Uuid> = members.iter().take(25).map(|v| v.id).collect();
                    assert_eq!(top, want);
                    let natural = reference(members.iter().copied(), m, m.natural());
                    assert_eq!(g.melhor.as_ref().unwrap().vehicle_id, natural[0].id);
                    let worst = reference(members.iter().copied(), m, m.natural().reversed());
                    assert_eq!(g.pior.as_ref().unwrap().vehicle_id, worst[0].id);
                    let mean = members.iter().map(|v| value(v, m).unwrap()).sum::<f64>() / members.len() as f64;
                    assert!((g.media_grupo - mean).abs() <= 0.005 + 1e-9, "{} vs {mean}", g.media_grupo);
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
    fn fixed_rankings_are_computed_once() {
        let s = snapshot(300, 11);
        let all = s.vehicles();
        let f = fixed(&s).unwrap();
        let want: Vec<Uuid> =
            reference(all.iter(), Metric::Eficiencia, Order::Desc).iter().take(10).map(|v| v.id).collect();
        let got: Vec<Uuid> = f.most_economical.items.iter().map(|i| i.vehicle_id).collect();
        assert_eq!(got, want);
        let positions: Vec<u32> = f.lowest_co2.items.iter().map(|i| i.ranking_posicao).collect();
        assert_eq!(positions, (1..=10).collect::<Vec<u32>>());
        assert!(f.longest_electric_range.items.iter().all(|i| i.metric_unit == "km"));
        let kinds: Vec<&str> = f.overview.items.iter().map(|i| i.ranking_tipo.as_str()).collect();
        let mut expected = Vec::new();
        for k in ["mais-economicos", "co2-menor", "maior-autonomia-eletrica", "melhor-eco-score"] {
            let n = if k == "maior-autonomia-eletrica" {
                all.iter().filter(|v| v.autonomia_eletrica_km.is_some()).count().min(5)
            } else {
                5
            };
            expected.extend(std::iter::repeat_n(k, n));
        }
        assert_eq!(kinds, expected);
    }
}
