//! `GET /catalog/export`: every vehicle matching the common filters, every input column plus the
//! published metrics, streamed as a download (CSV by default).

use std::sync::Arc;

use axum::extract::RawQuery;
use axum::http::{header, HeaderMap, HeaderValue, Uri};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::contract::envelope::Ctx;
use crate::http::contract::error::ApiError;
use crate::http::contract::headers::{etag_for, if_none_match, matches_tag, not_modified};
use crate::http::contract::params::{QueryParams, FILTERS};
use crate::http::contract::query::FilterQuery;
use crate::http::contract::state::{AppState, DATASET_VERSION};
use crate::http::formats::{self, stream, tabular::EXPORT_FIELDS};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(export))
}

/// Full export of the filtered catalog, as a download.
///
/// Every vehicle matching the common filters (no pagination), in catalog order, with every input
/// column and the published metrics. CSV unless `format` or `Accept` asks for Parquet, Arrow IPC
/// stream or NDJSON. The body is streamed in chunks, so an export of a million rows never sits
/// whole in memory. `Content-Disposition: attachment` names the file after the dataset version
/// (`eco-insights-<version>.csv`); `X-Total-Count` gives the number of rows. The ETag covers the
/// dataset version, the filters and the format; `If-None-Match` with it answers 304.
#[utoipa::path(
    get,
    path = "/catalog/export",
    tag = "catalog",
    params(FilterQuery),
    responses(
        (status = 200, description = "The matching vehicles, as a file", content_type = "text/csv", body = String),
        (status = 400, description = "Invalid parameter", body = crate::http::contract::error::Failure),
    )
)]
pub async fn export(ctx: Ctx, uri: Uri, headers: HeaderMap, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &[FILTERS, formats::PARAM])?;
    let filters = params.filters()?;
    let format = formats::negotiate(&params, &headers, formats::EXPORT)?;
    let version = ctx.snapshot.info.version.clone();
    // Decided before any row is read: a client holding this export gets a 304 at once.
    let tag = etag_for(&version, uri.path(), uri.query(), Some(format.media_type()));
    if matches_tag(&if_none_match(&headers), &tag) {
        return Ok(not_modified(&tag, &version));
    }
    let rows = ctx.run(move |s| Ok(s.selection(&filters.rows()))).await?;
    let total = rows.as_ref().map_or(ctx.snapshot.len(), Vec::len);
    let body = stream::body(Arc::clone(&ctx.snapshot), rows, EXPORT_FIELDS, format);
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(format.content_type()));
    let file = format!("attachment; filename=\"eco-insights-{version}.{}\"", format.extension());
    if let Ok(v) = HeaderValue::from_str(&file) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert(formats::TOTAL_COUNT, HeaderValue::from(total as u64));
    if let Ok(v) = HeaderValue::from_str(&version) {
        h.insert(DATASET_VERSION, v);
    }
    Ok(res)
}
