//! `GET /insights/summary`, `/insights/efficiency`, `/insights/eco-scores`, `/insights/emissions`
//! and `/aggregations/by-brand`: parse the common filters (and paging), call
//! `engine::insights`, encode. `meta.filters_applied` is always present (`{}` without filters).

use axum::extract::RawQuery;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::engine::insights;
use crate::http::contract::envelope::{Ctx, Envelope, Items, Reply};
use crate::http::contract::error::ApiError;
use crate::http::contract::params::{QueryParams, FILTERS, PAGING};
use crate::http::contract::query::{FilterQuery, ListQuery, PageQuery};
use crate::http::contract::state::AppState;
use crate::http::formats::encode;
use crate::http::formats::{self, tabular};
use crate::http::routes::listing::{self, ListRequest};
use crate::http::wire::filters_applied;
use crate::http::wire::insights::{BrandAggregate, EcoScoreItem, EfficiencyItem, EmissionsSummary, InsightsSummary};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(summary))
        .routes(routes!(efficiency))
        .routes(routes!(eco_scores))
        .routes(routes!(emissions))
        .routes(routes!(by_brand))
}

/// Consolidated summary of the filtered vehicles.
///
/// `mediasGerais`: mean eco score, consumo_referencia (MJ/km) and co2_referencia_g_km (g/km),
/// nulls ignored, null when no vehicle has the value. `melhoresCategorias` / `pioresCategorias`:
/// the 3 categories with the highest / lowest mean eco score (best first / worst first, ties by
/// categoria ascending; categories without a scored vehicle are left out; with fewer than 6
/// scored categories the two lists share categories). `distribuicaoEcoScore`: always the bands
/// "0-40", "40-60", "60-80", "80-100" in that order, zeros included; a band holds the scores in
/// (lower, upper], the first band also holds 0. Averages are means of the published per-vehicle
/// values, rounded to 2 decimals (half to even).
#[utoipa::path(
    get,
    path = "/insights/summary",
    tag = "insights",
    params(FilterQuery),
    responses(
        (status = 200, description = "Summary of the filtered vehicles", body = Envelope<InsightsSummary>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn summary(ctx: Ctx, RawQuery(query): RawQuery) -> Result<Reply<InsightsSummary>, ApiError> {
    let filters = QueryParams::parse(query.as_deref(), &[FILTERS])?.filters()?;
    let applied = filters_applied(&filters);
    let data = ctx.run(move |s| Ok(InsightsSummary::from(&*insights::summary(s, &filters)?))).await?;
    Ok(ctx.reply(data, Some(applied), None))
}

/// Paginated efficiency list of the filtered vehicles.
///
/// Vehicles without eficienciaMediaReferencia are left out; ordered by eficienciaMediaReferencia
/// descending, then vehicleId. A page past the end answers an empty list with exact pagination.
#[utoipa::path(
    get,
    path = "/insights/efficiency",
    tag = "insights",
    params(FilterQuery, PageQuery, ListQuery),
    responses(
        (status = 200, description = "One page of efficiency items", body = Envelope<Items<EfficiencyItem>>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
        (status = 409, description = "DATASET_CHANGED: the cursor was made on another dataset version; start the list again without it", body = crate::http::contract::error::Failure),
    )
)]
pub async fn efficiency(
    ctx: Ctx,
    uri: Uri,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &[FILTERS, PAGING, listing::LIST, formats::PARAM])?;
    let format = formats::negotiate(&params, &headers, formats::LIST)?;
    let filters = params.filters()?;
    let list = ListRequest::parse(&params, uri.path(), encode::EFFICIENCY_ITEM)?;
    list.check_version(&ctx.snapshot.info.version)?;
    let applied = filters_applied(&filters);
    let (data, pagination) = ctx
        .run(move |s| {
            let rows = insights::efficiency(s, &filters, list.window, &list.keys)?;
            let data = tabular::table_rows(s, &rows.items, &list.fields, format)?;
            Ok((data, list.pagination(&s.info.version, rows.total)))
        })
        .await?;
    let total = pagination.total as usize;
    Ok(formats::list_reply(&ctx, &uri, format, data, Some(applied), Some(pagination), total))
}

/// Paginated eco score list of the filtered vehicles.
///
/// Vehicles without an eco score are left out; ordered by ecoScore descending, then vehicleId.
/// faixa: Baixo (≤ 40), Regular (≤ 60), Bom (≤ 80), Excelente (> 80). A page past the end
/// answers an empty list with exact pagination.
#[utoipa::path(
    get,
    path = "/insights/eco-scores",
    tag = "insights",
    params(FilterQuery, PageQuery, ListQuery),
    responses(
        (status = 200, description = "One page of eco score items", body = Envelope<Items<EcoScoreItem>>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
        (status = 409, description = "DATASET_CHANGED: the cursor was made on another dataset version; start the list again without it", body = crate::http::contract::error::Failure),
    )
)]
pub async fn eco_scores(
    ctx: Ctx,
    uri: Uri,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &[FILTERS, PAGING, listing::LIST, formats::PARAM])?;
    let format = formats::negotiate(&params, &headers, formats::LIST)?;
    let filters = params.filters()?;
    let list = ListRequest::parse(&params, uri.path(), encode::ECO_SCORE_ITEM)?;
    list.check_version(&ctx.snapshot.info.version)?;
    let applied = filters_applied(&filters);
    let (data, pagination) = ctx
        .run(move |s| {
            let rows = insights::eco_scores(s, &filters, list.window, &list.keys)?;
            let data = tabular::table_rows(s, &rows.items, &list.fields, format)?;
            Ok((data, list.pagination(&s.info.version, rows.total)))
        })
        .await?;
    let total = pagination.total as usize;
    Ok(formats::list_reply(&ctx, &uri, format, data, Some(applied), Some(pagination), total))
}

/// Emissions summary of the filtered vehicles.
///
/// `mediaPorCategoria` / `mediaPorCombustivel`: mean co2_referencia_g_km by categoria / by
/// combustivel_tipo, ascending by media then grupo; groups without a CO2 value are left out.
/// `distribuicao`: always the bands "0-100", "100-130", "130-180", "180+" (g/km) in that order,
/// zeros included; a band holds the values in (lower, upper], the first band also holds 0.
#[utoipa::path(
    get,
    path = "/insights/emissions",
    tag = "insights",
    params(FilterQuery),
    responses(
        (status = 200, description = "Emissions of the filtered vehicles", body = Envelope<EmissionsSummary>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn emissions(ctx: Ctx, RawQuery(query): RawQuery) -> Result<Reply<EmissionsSummary>, ApiError> {
    let filters = QueryParams::parse(query.as_deref(), &[FILTERS])?.filters()?;
    let applied = filters_applied(&filters);
    let data = ctx.run(move |s| Ok(EmissionsSummary::from(&*insights::emissions(s, &filters)?))).await?;
    Ok(ctx.reply(data, Some(applied), None))
}

/// Aggregation of the filtered vehicles by brand.
///
/// One item per brand (exact marca value), ordered by grupo ascending case-insensitively, then
/// byte-wise. quantidadeVeiculos counts the brand's filtered vehicles; the means ignore nulls and
/// are null when no vehicle of the brand has the value (2 decimals, half to even).
#[utoipa::path(
    get,
    path = "/aggregations/by-brand",
    tag = "aggregations",
    params(FilterQuery),
    responses(
        (status = 200, description = "One item per brand", body = Envelope<Items<BrandAggregate>>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn by_brand(ctx: Ctx, uri: Uri, headers: HeaderMap, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &[FILTERS, formats::PARAM])?;
    let format = formats::negotiate(&params, &headers, formats::LIST)?;
    let filters = params.filters()?;
    let applied = filters_applied(&filters);
    let (data, total) = ctx
        .run(move |s| {
            let items: Vec<BrandAggregate> =
                insights::by_brand(s, &filters)?.iter().map(BrandAggregate::from).collect();
            let total = items.len();
            Ok((tabular::serialized_rows(items, tabular::brand_frame, format)?, total))
        })
        .await?;
    Ok(formats::list_reply(&ctx, &uri, format, data, Some(applied), None, total))
}
