//! The rankings' wire shapes: the ranking item, the grouped answer, the fixed rankings and the
//! overview (serialised once per snapshot), and the query values of `metric` and `order`.

use std::sync::Arc;

use polars::prelude::{polars_err, PolarsResult};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::filters_applied;
use crate::engine::rankings::{self, FixedKind, FixedTop, Group, GroupBy, Metric, Order, RankingQuery, OVERVIEW_TOP};
use crate::engine::table::{Table, Vehicle};

/// The values of the `metric` parameter.
pub const METRICS: [(&str, Metric); 5] = [
    ("eco_score", Metric::EcoScore),
    ("consumo", Metric::Consumo),
    ("co2", Metric::Co2),
    ("autonomia", Metric::Autonomia),
    ("eficiencia", Metric::Eficiencia),
];

/// The values of the `order` parameter.
pub const ORDERS: [(&str, Order); 2] = [("asc", Order::Asc), ("desc", Order::Desc)];

/// The query value of a metric.
pub fn metric_name(metric: Metric) -> &'static str {
    METRICS.iter().find(|(_, m)| *m == metric).map_or("", |(name, _)| name)
}

/// The query value of an order.
pub fn order_name(order: Order) -> &'static str {
    ORDERS.iter().find(|(_, o)| *o == order).map_or("", |(name, _)| name)
}

/// The value echoed in `meta.filters_applied.group_by`.
pub fn group_by_name(by: GroupBy) -> &'static str {
    match by {
        GroupBy::Categoria => "categoria",
        GroupBy::Combustivel => "combustivel",
        GroupBy::Marca => "marca",
        GroupBy::Ano => "ano",
    }
}

// The documented forms of `metric` and `order` (the parser reads `METRICS` / `ORDERS`; a unit
// test keeps the two in step).
#[rustfmt::skip]
/// A metric the parameterised rankings order by (eco_score → ecoScore, consumo → consumoReferencia, co2 → co2ReferenciaGKm, autonomia → autonomiaKm, eficiencia → eficienciaMediaReferencia).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = Metric)]
pub enum MetricParam {
    EcoScore,
    Consumo,
    Co2,
    Autonomia,
    Eficiencia,
}

/// Sort direction of a ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = Order)]
pub enum OrderParam {
    Asc,
    Desc,
}

/// `meta.filters_applied` of a parameterised ranking: the filters received plus the effective
/// metric, order and top (and `group_by` on the grouped rankings).
pub fn ranking_applied(query: &RankingQuery, group_by: Option<GroupBy>) -> Map<String, Value> {
    let mut m = filters_applied(&query.filters);
    m.insert("metric".into(), Value::from(metric_name(query.metric)));
    m.insert("order".into(), Value::from(order_name(query.order)));
    m.insert("top".into(), Value::from(query.top));
    if let Some(g) = group_by {
        m.insert("group_by".into(), Value::from(group_by_name(g)));
    }
    m
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
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Overview {
    pub items: Vec<OverviewItem>,
}

impl From<&Group> for RankingGroup {
    fn from(g: &Group) -> Self {
        RankingGroup {
            grupo: g.key.clone(),
            media_grupo: g.mean,
            melhor: g.best.as_ref().map(RankingItem::from),
            pior: g.worst.as_ref().map(RankingItem::from),
            top_items: g.top.iter().map(RankingItem::from).collect(),
        }
    }
}

impl RankingGroups {
    pub fn of(groups: &[Group]) -> RankingGroups {
        RankingGroups { groups: groups.iter().map(RankingGroup::from).collect() }
    }
}

/// The `ranking_type` / `ranking_tipo` label of a fixed ranking.
pub fn ranking_tipo(kind: FixedKind) -> &'static str {
    match kind {
        FixedKind::MostEconomical => "mais-economicos",
        FixedKind::LowestCo2 => "co2-menor",
        FixedKind::LongestElectricRange => "maior-autonomia-eletrica",
        FixedKind::BestEcoScore => "melhor-eco-score",
    }
}

fn positioned(top: &FixedTop) -> impl Iterator<Item = (u32, &Vehicle, f64)> {
    top.entries.iter().enumerate().map(|(i, (v, value))| (i as u32 + 1, v, *value))
}

impl From<&FixedTop> for FixedRanking<FixedRankingItem> {
    fn from(top: &FixedTop) -> Self {
        FixedRanking {
            ranking_type: ranking_tipo(top.kind).into(),
            items: positioned(top)
                .map(|(ranking_posicao, v, metric_value)| FixedRankingItem {
                    ranking_posicao,
                    vehicle_id: v.id,
                    marca: v.marca.clone(),
                    modelo: v.modelo.clone(),
                    versao: v.versao.clone(),
                    ano: v.ano,
                    categoria: v.categoria.clone(),
                    tipo_propulsao: v.tipo_propulsao.clone(),
                    combustivel_tipo: v.combustivel_tipo.clone(),
                    metric_name: top.metric.into(),
                    metric_unit: top.unit.into(),
                    metric_value,
                })
                .collect(),
        }
    }
}

impl From<&FixedTop> for FixedRanking<Co2RankingItem> {
    fn from(top: &FixedTop) -> Self {
        FixedRanking {
            ranking_type: ranking_tipo(top.kind).into(),
            items: positioned(top)
                .map(|(ranking_posicao, v, metric_value)| Co2RankingItem {
                    ranking_posicao,
                    vehicle_id: v.id,
                    metric_name: top.metric.into(),
                    metric_unit: top.unit.into(),
                    metric_value,
                })
                .collect(),
        }
    }
}

impl Overview {
    /// The top [`OVERVIEW_TOP`] of each fixed ranking, in the order of `tops`.
    pub fn of(tops: [&FixedTop; 4]) -> Overview {
        let items = tops
            .into_iter()
            .flat_map(|top| {
                positioned(top).take(OVERVIEW_TOP).map(|(ranking_posicao, v, metrica_valor)| OverviewItem {
                    ranking_tipo: ranking_tipo(top.kind).into(),
                    ranking_posicao,
                    vehicle_id: v.id,
                    marca: v.marca.clone(),
                    modelo: v.modelo.clone(),
                    versao: v.versao.clone(),
                    ano: v.ano,
                    categoria: v.categoria.clone(),
                    tipo_propulsao: v.tipo_propulsao.clone(),
                    combustivel_tipo: v.combustivel_tipo.clone(),
                    metrica_valor,
                    metrica_unidade: top.unit.into(),
                })
            })
            .collect();
        Overview { items }
    }
}

/// `data.data` of the four fixed answers, serialised once per snapshot.
#[derive(Debug, Clone)]
pub struct FixedAnswers {
    pub most_economical: Arc<str>,
    pub lowest_co2: Arc<str>,
    pub longest_electric_range: Arc<str>,
    pub overview: Arc<str>,
}

/// The fixed answers of a table (computed by its first caller, see `http::warm`).
pub fn fixed_answers(table: &Table) -> PolarsResult<Arc<FixedAnswers>> {
    table.memo("http/rankings/fixed", || {
        let f = rankings::fixed(table)?;
        let json = |value: serde_json::Result<String>| -> PolarsResult<Arc<str>> {
            value.map(Arc::from).map_err(|e| polars_err!(ComputeError: "cannot serialise a fixed ranking: {e}"))
        };
        Ok(FixedAnswers {
            most_economical: json(serde_json::to_string(&FixedRanking::<FixedRankingItem>::from(&f.most_economical)))?,
            lowest_co2: json(serde_json::to_string(&FixedRanking::<Co2RankingItem>::from(&f.lowest_co2)))?,
            longest_electric_range: json(serde_json::to_string(&FixedRanking::<FixedRankingItem>::from(
                &f.longest_electric_range,
            )))?,
            overview: json(serde_json::to_string(&Overview::of(f.all())))?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::filters::Filters;

    #[test]
    fn query_values_round_trip() {
        let documented = [
            MetricParam::EcoScore,
            MetricParam::Consumo,
            MetricParam::Co2,
            MetricParam::Autonomia,
            MetricParam::Eficiencia,
        ];
        for ((name, m), doc) in METRICS.iter().zip(documented) {
            assert_eq!(metric_name(*m), *name);
            assert_eq!(serde_json::to_value(doc).unwrap(), *name);
        }
        for ((name, o), doc) in ORDERS.iter().zip([OrderParam::Asc, OrderParam::Desc]) {
            assert_eq!(order_name(*o), *name);
            assert_eq!(serde_json::to_value(doc).unwrap(), *name);
        }
        let q = RankingQuery::new(Filters::default(), Some(Metric::Co2), Some(Order::Desc), 3);
        assert_eq!(
            serde_json::to_string(&ranking_applied(&q, Some(GroupBy::Ano))).unwrap(),
            r#"{"metric":"co2","order":"desc","top":3,"group_by":"ano"}"#
        );
    }
}
