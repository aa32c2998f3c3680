//! `GET /rankings/*`: the custom ranking, the rankings grouped by category, fuel, brand and year,
//! and the fixed rankings (computed once per dataset, so those handlers are lookups).

use std::sync::Arc;

use axum::extract::RawQuery;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use polars::prelude::polars_err;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::engine::rankings::{self, GroupBy, RankingQuery, DEFAULT_GROUP_TOP, DEFAULT_TOP, MAX_TOP};
use crate::http::contract::envelope::{Ctx, Envelope, Items, RawReply};
use crate::http::contract::error::ApiError;
use crate::http::contract::params::{QueryParams, FILTERS};
use crate::http::contract::query::{FieldsQuery, FilterQuery};
use crate::http::contract::state::AppState;
use crate::http::formats::encode;
use crate::http::formats::{self, tabular};
use crate::http::routes::listing;
use crate::http::wire::rankings::{
    fixed_answers, ranking_applied, Co2RankingItem, FixedAnswers, FixedRanking, FixedRankingItem, MetricParam,
    OrderParam, Overview, RankingGroups, RankingItem, METRICS, ORDERS,
};

/// The ranking parameters.
const RANKING: &[&str] = &["metric", "order", "top"];

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(custom))
        .routes(routes!(by_category))
        .routes(routes!(by_fuel))
        .routes(routes!(by_brand))
        .routes(routes!(by_year))
        .routes(routes!(most_economical))
        .routes(routes!(lowest_co2))
        .routes(routes!(longest_electric_range))
        .routes(routes!(overview))
}

/// Parameters of /rankings/custom.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct CustomRankingQuery {
    /// Ranked metric: eco_score → ecoScore, consumo → consumoReferencia, co2 → co2ReferenciaGKm,
    /// autonomia → autonomiaKm, eficiencia → eficienciaMediaReferencia.
    #[param(inline, default = json!("eco_score"))]
    metric: Option<MetricParam>,
    /// Direction. Default: the metric's best-first direction (desc for eco_score, eficiencia and
    /// autonomia; asc for consumo and co2).
    #[param(inline)]
    order: Option<OrderParam>,
    /// Number of vehicles returned.
    #[param(minimum = 1, maximum = 100, default = 10)]
    top: Option<i64>,
}

/// Parameters of the grouped rankings.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct GroupRankingQuery {
    /// Ranked metric: eco_score → ecoScore, consumo → consumoReferencia, co2 → co2ReferenciaGKm,
    /// autonomia → autonomiaKm, eficiencia → eficienciaMediaReferencia.
    #[param(inline, default = json!("eco_score"))]
    metric: Option<MetricParam>,
    /// Direction of topItems and of the groups (by mediaGrupo). Default: the metric's best-first
    /// direction (desc for eco_score, eficiencia and autonomia; asc for consumo and co2).
    #[param(inline)]
    order: Option<OrderParam>,
    /// Number of vehicles in each group's topItems.
    #[param(minimum = 1, maximum = 100, default = 5)]
    top: Option<i64>,
}

/// The common filters plus metric, order and top (`default_top` when absent).
fn ranking_query(raw: Option<&str>, default_top: u32) -> Result<RankingQuery, ApiError> {
    ranking_query_of(&QueryParams::parse(raw, &[FILTERS, RANKING])?, default_top)
}

/// [`ranking_query`] of parameters already decoded.
fn ranking_query_of(params: &QueryParams, default_top: u32) -> Result<RankingQuery, ApiError> {
    let filters = params.filters()?;
    let metric = params.choice("metric", &METRICS)?;
    let order = params.choice("order", &ORDERS)?;
    let top = params.int("top", 1, MAX_TOP as i64)?.map_or(default_top, |t| t as u32);
    Ok(RankingQuery::new(filters, metric, order, top))
}

/// Custom ranking: the top N filtered vehicles by a metric.
///
/// Vehicles whose metric is null are left out. Ties on the published value are broken by id
/// ascending. `meta.filters_applied` holds the filters given plus the effective metric, order
/// and top (defaults included). A filter matching nothing answers an empty list.
#[utoipa::path(
    get,
    path = "/rankings/custom",
    tag = "rankings",
    params(FilterQuery, CustomRankingQuery, FieldsQuery),
    responses(
        (status = 200, description = "The ranked vehicles", body = Envelope<Items<RankingItem>>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn custom(ctx: Ctx, uri: Uri, headers: HeaderMap, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &[FILTERS, RANKING, listing::FIELDS, formats::PARAM])?;
    let format = formats::negotiate(&params, &headers, formats::LIST)?;
    let q = ranking_query_of(&params, DEFAULT_TOP)?;
    let fields = listing::fields(&params, encode::RANKING_ITEM)?;
    let applied = ranking_applied(&q, None);
    let (data, total) = ctx
        .run(move |s| {
            let rows = rankings::custom(s, &q)?;
            Ok((tabular::table_rows(s, &rows, &fields, format)?, rows.len()))
        })
        .await?;
    Ok(formats::list_reply(&ctx, &uri, format, data, Some(applied), None, total))
}

/// Shared body of the four grouped rankings: `data.data` is written once per question and
/// dataset version, then kept as bytes (only the meta is written per request); a kept answer is
/// sent from the request's own task, as a fixed ranking is.
async fn grouped(ctx: Ctx, query: Option<String>, by: GroupBy) -> Result<RawReply, ApiError> {
    let q = ranking_query(query.as_deref(), DEFAULT_GROUP_TOP)?;
    let applied = ranking_applied(&q, Some(by));
    if let Some(data) = rankings::grouped_kept(&ctx.snapshot, &q, by) {
        return Ok(ctx.reply_kept(data, Some(applied)));
    }
    let data = ctx
        .run(move |s| {
            rankings::grouped_written(s, &q, by, |groups| {
                serde_json::to_string(&RankingGroups::of(groups))
                    .map(Arc::from)
                    .map_err(|e| polars_err!(ComputeError: "the grouped ranking cannot be written: {e}"))
            })
        })
        .await?;
    Ok(ctx.reply_kept(data, Some(applied)))
}

/// Ranking grouped by categoria.
///
/// One group per categoria among the filtered vehicles with a non-null metric. mediaGrupo is
/// the mean of the metric (2 decimals); melhor and pior are the best and worst vehicle by the
/// metric's natural direction whatever `order` is; topItems is the group's top N in `order`.
/// Groups are ordered by mediaGrupo in `order`, then grupo ascending.
#[utoipa::path(
    get,
    path = "/rankings/by-category",
    tag = "rankings",
    params(FilterQuery, GroupRankingQuery),
    responses(
        (status = 200, description = "One group per categoria", body = Envelope<RankingGroups>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn by_category(ctx: Ctx, RawQuery(query): RawQuery) -> Result<RawReply, ApiError> {
    grouped(ctx, query, GroupBy::Categoria).await
}

/// Ranking grouped by combustivel_tipo (same rules as /rankings/by-category).
#[utoipa::path(
    get,
    path = "/rankings/by-fuel",
    tag = "rankings",
    params(FilterQuery, GroupRankingQuery),
    responses(
        (status = 200, description = "One group per fuel type", body = Envelope<RankingGroups>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn by_fuel(ctx: Ctx, RawQuery(query): RawQuery) -> Result<RawReply, ApiError> {
    grouped(ctx, query, GroupBy::Combustivel).await
}

/// Ranking grouped by marca (same rules as /rankings/by-category).
#[utoipa::path(
    get,
    path = "/rankings/by-brand",
    tag = "rankings",
    params(FilterQuery, GroupRankingQuery),
    responses(
        (status = 200, description = "One group per brand", body = Envelope<RankingGroups>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn by_brand(ctx: Ctx, RawQuery(query): RawQuery) -> Result<RawReply, ApiError> {
    grouped(ctx, query, GroupBy::Marca).await
}

/// Ranking grouped by model year; grupo is the year as a string (same rules as
/// /rankings/by-category).
#[utoipa::path(
    get,
    path = "/rankings/by-year",
    tag = "rankings",
    params(FilterQuery, GroupRankingQuery),
    responses(
        (status = 200, description = "One group per model year", body = Envelope<RankingGroups>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn by_year(ctx: Ctx, RawQuery(query): RawQuery) -> Result<RawReply, ApiError> {
    grouped(ctx, query, GroupBy::Ano).await
}

/// Rejects every query parameter: the fixed rankings take none.
fn no_params(query: Option<String>) -> Result<(), ApiError> {
    QueryParams::parse(query.as_deref(), &[]).map(|_| ())
}

/// Most economical: the 10 vehicles with the highest eficiencia_media_referencia.
///
/// ranking_type "mais-economicos", metric_unit "km/unidade"; ranking_posicao runs 1, 2, 3...
/// (ties on the published value broken by id ascending). Takes no parameter.
#[utoipa::path(
    get,
    path = "/rankings/most-economical",
    tag = "rankings",
    responses(
        (status = 200, description = "Top 10 by average reference efficiency",
         body = Envelope<FixedRanking<FixedRankingItem>>),
        (status = 400, description = "A query parameter was given", body = crate::http::contract::error::Failure),
    )
)]
pub async fn most_economical(ctx: Ctx, RawQuery(query): RawQuery) -> Result<RawReply, ApiError> {
    no_params(query)?;
    Ok(ctx.reply_raw(fixed(&ctx)?.most_economical.clone()))
}

/// Lowest CO2: the 10 vehicles with the lowest co2_referencia_g_km.
///
/// ranking_type "co2-menor", metric_unit "g/km"; items hold only ranking_posicao, vehicle_id and
/// the metric. Ties broken by id ascending. Takes no parameter.
#[utoipa::path(
    get,
    path = "/rankings/lowest-co2",
    tag = "rankings",
    responses(
        (status = 200, description = "Top 10 by lowest CO2", body = Envelope<FixedRanking<Co2RankingItem>>),
        (status = 400, description = "A query parameter was given", body = crate::http::contract::error::Failure),
    )
)]
pub async fn lowest_co2(ctx: Ctx, RawQuery(query): RawQuery) -> Result<RawReply, ApiError> {
    no_params(query)?;
    Ok(ctx.reply_raw(fixed(&ctx)?.lowest_co2.clone()))
}

/// Longest electric range: the 10 vehicles with the highest autonomia_eletrica_km.
///
/// ranking_type "maior-autonomia-eletrica", metric_name "autonomia_eletrica_km", unit "km";
/// only vehicles with an electric range; same item fields as /rankings/most-economical. Takes
/// no parameter.
#[utoipa::path(
    get,
    path = "/rankings/longest-electric-range",
    tag = "rankings",
    responses(
        (status = 200, description = "Top 10 by electric range", body = Envelope<FixedRanking<FixedRankingItem>>),
        (status = 400, description = "A query parameter was given", body = crate::http::contract::error::Failure),
    )
)]
pub async fn longest_electric_range(ctx: Ctx, RawQuery(query): RawQuery) -> Result<RawReply, ApiError> {
    no_params(query)?;
    Ok(ctx.reply_raw(fixed(&ctx)?.longest_electric_range.clone()))
}

/// Overview: the top 5 of mais-economicos, co2-menor, maior-autonomia-eletrica and
/// melhor-eco-score (unit "pontos"), in that order, each with positions from 1. Takes no
/// parameter.
#[utoipa::path(
    get,
    path = "/rankings/overview",
    tag = "rankings",
    responses(
        (status = 200, description = "Top 5 of each fixed ranking", body = Envelope<Overview>),
        (status = 400, description = "A query parameter was given", body = crate::http::contract::error::Failure),
    )
)]
pub async fn overview(ctx: Ctx, RawQuery(query): RawQuery) -> Result<RawReply, ApiError> {
    no_params(query)?;
    Ok(ctx.reply_raw(fixed(&ctx)?.overview.clone()))
}

/// The fixed answers of the request's snapshot (computed once per snapshot).
fn fixed(ctx: &Ctx) -> Result<std::sync::Arc<FixedAnswers>, ApiError> {
    fixed_answers(&ctx.snapshot).map_err(ApiError::internal)
}
