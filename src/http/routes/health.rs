//! Liveness and readiness (no credentials).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::http::error::ApiError;
use crate::http::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/healthz", get(healthz)).route("/readyz", get(readyz))
}

/// The process is alive.
async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// A dataset is loaded: its version, row count and load time.
async fn readyz(State(state): State<AppState>) -> Response {
    match state.store().current() {
        Some(s) => (
            StatusCode::OK,
            Json(json!({
                "status": "ready",
                "dataset": {
                    "version": s.info.version,
                    "rows": s.info.rows,
                    "loaded_at": s.info.loaded_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    "source": s.info.source.display().to_string(),
                }
            })),
        )
            .into_response(),
        None => ApiError::Unavailable.into_response(),
    }
}
