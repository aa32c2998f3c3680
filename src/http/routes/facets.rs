//! `GET /facets`: parse the common filters, count the values in the engine, encode.

use axum::extract::RawQuery;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::engine::facets;
use crate::http::contract::envelope::{Ctx, Envelope, Reply};
use crate::http::contract::error::ApiError;
use crate::http::contract::params::{QueryParams, FILTERS};
use crate::http::contract::query::FilterQuery;
use crate::http::contract::state::AppState;
use crate::http::wire::facets::FacetsAnswer;
use crate::http::wire::filters_applied;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(facets_of_catalog))
}

/// How many of the filtered vehicles hold each value of the grouping columns.
///
/// `categoria`, `combustivel` (combustivel_tipo), `propulsao` (tipo_propulsao), `transmissao`
/// (transmissao_tipo), `marca`, `ano` (a number) and `faixa` (the eco-score band): each a list of
/// `{valor, total}` over the vehicles passing the common filters, only values held by at least
/// one of them, ordered by total descending, then valor ascending (byte-wise; years
/// numerically); a missing value (a vehicle without transmission type or without an eco score)
/// is `valor: null`, after the other values of the same total. The totals of each list add up
/// to the number of filtered vehicles. `meta.filters_applied` = the filters received.
#[utoipa::path(
    get,
    path = "/facets",
    tag = "facets",
    params(FilterQuery),
    responses(
        (status = 200, description = "The counts per value of the filtered vehicles", body = Envelope<FacetsAnswer>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn facets_of_catalog(ctx: Ctx, RawQuery(query): RawQuery) -> Result<Reply<FacetsAnswer>, ApiError> {
    let filters = QueryParams::parse(query.as_deref(), &[FILTERS])?.filters()?;
    let applied = filters_applied(&filters);
    let data = ctx.run(move |s| Ok(FacetsAnswer::from(&*facets::facets(s, &filters)?))).await?;
    Ok(ctx.reply(data, Some(applied), None))
}
