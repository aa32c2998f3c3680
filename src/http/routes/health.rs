//! Liveness and readiness (no credentials).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::engine::snapshot::Origin;
use crate::engine::store::{ReloadResult, Store};
use crate::http::contract::error::{ApiError, ErrorBody};
use crate::http::contract::state::AppState;

/// The health routes with their OpenAPI description.
fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(healthz)).routes(routes!(readyz))
}

pub fn router() -> Router<AppState> {
    routes().split_for_parts().0
}

/// The OpenAPI description of `/healthz` and `/readyz` (merged by `openapi::base`).
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}

/// Answer of `/healthz`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Health {
    /// Always "ok".
    #[schema(example = "ok")]
    pub status: &'static str,
}

/// Answer of `/readyz`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Readiness {
    /// Always "ready".
    #[schema(example = "ready")]
    pub status: &'static str,
    pub dataset: DatasetStatus,
    /// The last load attempt (at start-up or a reload); a refused reload leaves the previous
    /// dataset serving. `result` = `refused` with a 200 means a dataset is serving while the
    /// export at `--data` is refused: `reason` names the file and what is wrong with it.
    pub last_reload: Option<LastReload>,
    /// The remote source (`--data s3://…` or `https://…`); absent for a local export.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceReport>,
}

/// A remote source as `/readyz` shows it (this endpoint is public: the object is named without
/// its bucket, host or folder, and URLs in the reason are masked).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SourceReport {
    /// `s3` or `http`.
    #[schema(example = "s3")]
    pub kind: &'static str,
    /// The object's name without its bucket or folder.
    #[schema(example = "catalog.parquet")]
    pub object: String,
    /// Whether the last poll reached the object. While false the dataset already serving keeps
    /// serving (and the polls back off, doubling up to 16 intervals or a minute).
    pub reachable: bool,
    /// Since when the polls fail (ISO 8601 UTC); null while they succeed.
    pub unreachable_since: Option<String>,
    /// Why the last poll failed; null while they succeed.
    pub reason: Option<String>,
    /// When the object was last asked for (ISO 8601 UTC).
    pub last_poll: Option<String>,
    /// When a changed object was last downloaded (ISO 8601 UTC); it is then validated and
    /// swapped in like a local export (`last_reload` gives the outcome).
    pub last_download: Option<String>,
}

fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn source_report(store: &Store) -> Option<SourceReport> {
    store.source().map(|s| SourceReport {
        kind: if s.url.starts_with("s3://") { "s3" } else { "http" },
        object: s.url.rsplit('/').next().unwrap_or_default().to_string(),
        reachable: s.reachable,
        unreachable_since: s.unreachable_since.map(iso),
        reason: s.reason.as_deref().map(crate::engine::remote::mask_urls),
        last_poll: s.last_poll.map(iso),
        last_download: s.last_download.map(iso),
    })
}

/// `/readyz` while no dataset is loaded: the failure envelope (SERVICE_UNAVAILABLE, the message
/// says why) plus the last load attempt.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct NotReady {
    /// Always false.
    pub success: bool,
    pub error: ErrorBody,
    /// The last load attempt; null before the first one finished.
    pub last_reload: Option<LastReload>,
    /// The remote source, as in [`Readiness`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceReport>,
}

/// One load attempt of the data file.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LastReload {
    /// When it finished (ISO 8601 UTC).
    #[schema(example = "2026-01-01T12:00:00.000Z")]
    pub at: String,
    /// `ok` (a dataset is serving, new or unchanged) or `refused`.
    #[schema(example = "ok")]
    pub result: LoadResult,
    /// Why the export was refused (file named without its folder): the column or part of the
    /// file at fault and the rule it breaks (undecodable pages, a footer that lies about sizes,
    /// more rows than `--max-rows`, a schema problem...); null when accepted.
    pub reason: Option<String>,
}

/// Outcome of a load attempt.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LoadResult {
    Ok,
    Refused,
}

fn last_reload(store: &Store) -> Option<LastReload> {
    store.last_reload().map(|r| {
        let (result, reason) = match r.result {
            ReloadResult::Ok => (LoadResult::Ok, None),
            ReloadResult::Refused(why) => (LoadResult::Refused, Some(why)),
        };
        LastReload { at: r.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true), result, reason }
    })
}

/// The dataset being served.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DatasetStatus {
    /// Content hash of the catalog file (the `X-Dataset-Version` header of API answers).
    pub version: String,
    /// Number of vehicles.
    #[schema(example = 12000)]
    pub rows: usize,
    /// When this version was loaded (ISO 8601 UTC).
    #[schema(example = "2026-01-01T12:00:00.000Z")]
    pub loaded_at: String,
    /// Name of the catalog file it was read from (no directory: this endpoint is public).
    #[schema(example = "catalog.parquet")]
    pub source: String,
    /// `export`: read from the export at `--data`; `state`: the copy of the last accepted export
    /// kept in `--state-dir`, served because the export was missing or refused when the service
    /// started (`last_reload` says why). It keeps its own version and ETags.
    #[schema(example = "export")]
    pub origin: DatasetOrigin,
}

/// Where the served dataset was read from.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DatasetOrigin {
    Export,
    State,
}

/// Liveness: the process is up.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "health",
    responses((status = 200, description = "The process is alive", body = Health))
)]
async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// Readiness: a dataset is loaded; its version, row count and load time.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "health",
    responses(
        (status = 200, description = "A dataset is loaded and served", body = Readiness),
        (status = 503, description = "SERVICE_UNAVAILABLE: no dataset is loaded (the first load still runs, or none is \
            valid yet: the file is missing, unreadable, invalid or over --max-data-bytes); the message and `last_reload` \
            say why", body = NotReady),
    )
)]
async fn readyz(State(state): State<AppState>) -> Response {
    match state.store().current() {
        Some(s) => (
            StatusCode::OK,
            Json(Readiness {
                status: "ready",
                dataset: DatasetStatus {
                    version: s.info.version.clone(),
                    rows: s.info.rows,
                    loaded_at: s.info.loaded_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    source: s.info.source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                    origin: match s.info.origin {
                        Origin::Export => DatasetOrigin::Export,
                        Origin::State => DatasetOrigin::State,
                    },
                },
                last_reload: last_reload(state.store()),
                source: source_report(state.store()),
            }),
        )
            .into_response(),
        None => {
            let last = last_reload(state.store());
            let message = match &last {
                Some(LastReload { reason: Some(why), .. }) => {
                    format!("Nenhum conjunto de dados carregado: a última carga foi recusada ({why})")
                }
                _ => ApiError::Unavailable.message(),
            };
            let error = ErrorBody { code: ApiError::Unavailable.code(), message };
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(NotReady { success: false, error, last_reload: last, source: source_report(state.store()) }),
            )
                .into_response()
        }
    }
}
