//! `GET /metrics`: the process's metrics (no credentials, exempt from the limits).

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Router;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::contract::error::ApiError;
use crate::http::contract::state::AppState;
use crate::process::metrics::{render, DatasetFigures, Serving, SourceFigures, CONTENT_TYPE};

/// The `/metrics` route with its OpenAPI description.
fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(metrics))
}

pub fn router() -> Router<AppState> {
    routes().split_for_parts().0
}

/// The OpenAPI description of `/metrics` (merged by `openapi::base`).
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}

/// Prometheus metrics: requests by route template, method and status, latency histograms by
/// route, requests in flight, 429s, and the dataset being served (rows, version, load time,
/// reloads by result).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "health",
    responses((status = 200, description = "The metrics in the OpenMetrics text format \
        (`eco_http_requests_total{route,method,status}`, `eco_http_request_duration_seconds` by route, \
        `eco_http_in_flight`, `eco_rate_limited_total`, `eco_log_lines_dropped_total`, `eco_dataset_rows`, \
        `eco_dataset_info{version}`, `eco_dataset_loaded_timestamp_seconds`, `eco_dataset_reloads_total{result}`, \
        `eco_pg_queries_total{result}`; with a remote source (`--data s3://…` or `https://…`) also \
        `eco_source_polls_total{result}`, `eco_source_reachable` and \
        `eco_source_unreachable_since_timestamp_seconds`)",
        content_type = "application/openmetrics-text", body = String))
)]
async fn metrics(State(state): State<AppState>) -> Response {
    let store = state.store();
    let (reloads_ok, reloads_refused) = store.reload_counts();
    let serving = store.current().map(|s| Serving {
        rows: s.info.rows,
        version: s.info.version.clone(),
        loaded_at: s.info.loaded_at,
    });
    let source =
        store.source().map(|s| SourceFigures { reachable: s.reachable, unreachable_since: s.unreachable_since });
    match render(&DatasetFigures { serving, reloads_ok, reloads_refused, source }) {
        Ok(text) => {
            let mut res = text.into_response();
            let h = res.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            res
        }
        Err(e) => ApiError::internal(e).into_response(),
    }
}
