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
use crate::http::contract::query::{FilterQuery, ListQuery, PageQuery};
use crate::http::contract::state::AppState;
use crate::http::formats::encode;
use crate::http::formats::{self, tabular};
use crate::http::routes::listing::{self, ListRequest};
use crate::http::wire::catalog::CatalogVehicle;
use crate::http::wire::filters_applied;

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
    params(FilterQuery, PageQuery, ListQuery),
    responses(
        (status = 200, description = "One page of vehicles", body = Envelope<Items<CatalogVehicle>>),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
        (status = 409, description = "DATASET_CHANGED: the cursor was made on another dataset version; start the list again without it", body = crate::http::contract::error::Failure),
    )
)]
pub async fn list_vehicles(
    ctx: Ctx,
    uri: Uri,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &[FILTERS, PAGING, listing::LIST, formats::PARAM])?;
    let format = formats::negotiate(&params, &headers, formats::LIST)?;
    let filters = params.filters()?;
    let list = ListRequest::parse(&params, uri.path(), encode::CATALOG_VEHICLE)?;
    list.check_version(&ctx.snapshot.info.version)?;
    let applied = (!filters.is_empty()).then(|| filters_applied(&filters));
    let (data, pagination) = ctx
        .run(move |s| {
            let rows = catalog::list(s, &filters, list.window, &list.keys)?;
            let data = tabular::table_rows(s, &rows.items, &list.fields, format)?;
            Ok((data, list.pagination(&s.info.version, rows.total)))
        })
        .await?;
    let total = pagination.total as usize;
    Ok(formats::list_reply(&ctx, &uri, format, data, applied, Some(pagination), total))
}
