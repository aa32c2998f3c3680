//! `GET /catalog/vehicles`.

use axum::extract::RawQuery;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::engine::catalog;
use crate::http::contract::envelope::{Ctx, Envelope, Items};
use crate::http::contract::error::ApiError;
use crate::http::contract::params::{QueryParams, FILTERS, PAGING};
use crate::http::contract::query::{FilterQuery, PageQuery};
use crate::http::contract::state::AppState;
use crate::http::formats::encode;
use crate::http::formats::{self, tabular};
use crate::http::wire::catalog::CatalogVehicle;
use crate::http::wire::{filters_applied, Pagination};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_vehicles))
}

/// Paginated catalog listing with the common filters.
///
/// Ordered by marca, modelo, versao (byte-wise), ano descending, then id. A page past the end
/// answers an empty list with exact pagination. `meta.filters_applied` is present only when a
/// filter is given.
#[utoipa::path(
    get,
    path = "/catalog/vehicles",
    tag = "catalog",
    params(FilterQuery, PageQuery),
    responses(
        (status = 200, description = "One page of vehicles", body = Envelope<Items<CatalogVehicle>>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn list_vehicles(
    ctx: Ctx,
    uri: Uri,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &[FILTERS, PAGING, formats::PARAM])?;
    let format = formats::negotiate(&params, &headers, formats::LIST)?;
    let (filters, page) = (params.filters()?, params.page()?);
    let applied = (!filters.is_empty()).then(|| filters_applied(&filters));
    let (data, pagination) = ctx
        .run(move |s| {
            let rows = catalog::list(s, &filters, page);
            let data = tabular::table_rows(s, &rows.items, encode::CATALOG_VEHICLE, format)?;
            Ok((data, Pagination::of(page, rows.total)))
        })
        .await?;
    let total = pagination.total as usize;
    Ok(formats::list_reply(&ctx, &uri, format, data, applied, Some(pagination), total))
}
