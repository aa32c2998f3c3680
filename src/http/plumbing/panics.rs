//! Panics in a handler or middleware: caught by tower-http's `CatchPanicLayer` and answered
//! `500 INTERNAL_ERROR` in the failure envelope; the message is logged with the request id (by
//! `middleware::request_context`), never sent. The connection keeps serving.

use std::any::Any;

use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::http::contract::error::ApiError;
use crate::http::contract::state::AppState;

/// Set to `1` at start-up to add [`TEST_ROUTE`]: it exists only so the black-box tests can
/// check the real panic handling; it is not documented anywhere else.
pub const TEST_ROUTE_ENV: &str = "ECO_TEST_PANIC_ROUTE";
/// A route whose handler panics (only with [`TEST_ROUTE_ENV`] set).
pub const TEST_ROUTE: &str = "/__test/panic";

/// What a panic left: its message, for the request's log line.
#[derive(Debug, Clone)]
pub struct Panicked(pub String);

/// The answer to a caught panic.
pub fn answer(payload: Box<dyn Any + Send + 'static>) -> Response {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_string()
    };
    let mut res = ApiError::Internal.into_response();
    res.extensions_mut().insert(Panicked(message));
    res
}

/// Adds the test route when the environment asks for it.
pub fn with_test_route(router: Router<AppState>) -> Router<AppState> {
    if std::env::var_os(TEST_ROUTE_ENV).is_some_and(|v| v == "1") {
        router.route(TEST_ROUTE, get(deliberate_panic))
    } else {
        router
    }
}

async fn deliberate_panic() -> &'static str {
    panic!("deliberate panic of {TEST_ROUTE}")
}
