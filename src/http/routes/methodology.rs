//! `GET /methodology`: how every published number is computed, written from the constants the
//! views run with and the serving snapshot's cost configuration.

use axum::extract::RawQuery;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::contract::envelope::{Ctx, Envelope, Reply};
use crate::http::contract::error::ApiError;
use crate::http::contract::params::QueryParams;
use crate::http::contract::state::AppState;
use crate::http::wire::methodology::Methodology;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(methodology))
}

/// The methodology: formulas, weights, index bounds, bands, rounding, cost configuration and
/// the dataset it applies to.
///
/// `metricas`: each published metric's formula in words (the cost one with the configuration in
/// force); `eco_score`: the weights, each index with the input values where it is 0 and 100,
/// the pollutant limits and the bands; `arredondamento`: the rounding rule and decimals;
/// `custo`: km per year and prices in force (the server's configuration; see `km_ano` and
/// `preco_*` on /vehicles/{vehicle_id}/summary and POST /compare for a per-request profile);
/// `dataset`: version, rows and load time of the serving snapshot. Everything is generated from
/// the constants and configuration the views run with. Requires credentials like every API
/// operation; no query parameter is accepted.
#[utoipa::path(
    get,
    path = "/methodology",
    tag = "methodology",
    responses(
        (status = 200, description = "The methodology in force", body = Envelope<Methodology>),
        (status = 400, description = "A query parameter was given", body = crate::http::contract::error::Failure),
    )
)]
pub async fn methodology(ctx: Ctx, RawQuery(query): RawQuery) -> Result<Reply<Methodology>, ApiError> {
    QueryParams::parse(query.as_deref(), &[])?;
    let data = ctx.run(|s| Ok(Methodology::of(s))).await?;
    Ok(ctx.reply(data, None, None))
}
