//! The HTTP front door: it parses requests, calls the engine and encodes answers; it never builds
//! Polars plans itself. Its rooms, each importing only those below it:
//!
//! - this file assembles them: the router, its layers and the bound server;
//! - `docs`: the OpenAPI document and the docs page;
//! - `explore`: the explorer page for analysts (HTML, script and style compiled in);
//! - `plumbing`: what wraps every answer (request ids, logs, metrics, credentials, limits,
//!   compression, the answers served ahead of the router, the serving loop);
//! - `routes`: the operations;
//! - `formats`: answers in analysts' formats (CSV, NDJSON, Parquet, Arrow) and their negotiation;
//! - `wire`: the answers' shapes;
//! - `contract`: envelopes, errors, parameters, headers and the shared state.
//!
//! Below `http` sit the engine and the process (credentials, quotas, limits, metrics, logging),
//! which another front door shares.

pub mod contract;
pub mod docs;
pub mod explore;
pub mod formats;
pub mod plumbing;
pub mod routes;
pub mod wire;

pub use contract::state::{AppState, RequestId, DATASET_VERSION, MAX_BODY_BYTES, REQUEST_ID};
use docs::openapi;
use plumbing::{compression, fast, limits, middleware, panics, serve};

use std::net::SocketAddr;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_axum::router::OpenApiRouter;

/// Prepares a snapshot before it serves: the engine's dataset-only work and the fixed answers
/// serialised once, so the first requests are lookups. Failures surface on the first request
/// that needs them.
pub fn warm(snapshot: &crate::engine::snapshot::Snapshot) {
    crate::engine::warm(snapshot);
    if let Err(e) = wire::rankings::fixed_answers(snapshot) {
        tracing::error!(error = %e, "the fixed answers of the new dataset could not be serialised");
    }
    fast::warm(snapshot);
}

/// The complete application router with the default limits.
pub fn app(state: AppState) -> Router {
    app_with(state, &limits::Limits::default())
}

/// The complete application router. Layers, from the outside in — once per request, before
/// routing: request id, access log, metrics, in-flight and time limits (`request_context`);
/// panics caught; compression. Then, per route: the matched route recorded, URL/header/encoding
/// limits and the failure envelope for framework errors (`check_request`); HTTP caching; body
/// size; then the routes (API operations behind credentials). The serving loop answers the
/// dataset-only requests (`fast`) before this router.
pub fn app_with(state: AppState, limits: &limits::Limits) -> Router {
    parts(state, limits).0
}

/// The router and what the serving loop needs to answer ahead of it (the same limits).
fn parts(state: AppState, limits: &limits::Limits) -> (Router, middleware::Front) {
    let (api, doc) = OpenApiRouter::with_openapi(openapi::base()).merge(routes::api_router()).split_for_parts();
    let doc = openapi::finish(doc);
    let api = api.route_layer(axum::middleware::from_fn_with_state(state.clone(), middleware::authenticate));
    let routes = panics::with_test_route(Router::new())
        .merge(api)
        .merge(routes::health::router())
        .merge(routes::metrics::router())
        .merge(openapi::router(doc))
        .merge(explore::router())
        .fallback(middleware::not_found)
        .method_not_allowed_fallback(middleware::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(middleware::http_cache))
        .layer(axum::middleware::from_fn(middleware::check_request))
        .with_state(state.clone());
    let front = middleware::Front { guard: limits::Guard::new(limits), state };
    // `Router::layer` wraps every route separately; the layers that do not need the matched
    // route wrap the whole router once instead (a router whose only endpoint is `routes`).
    let router = Router::new()
        .fallback_service(routes)
        .layer(compression::layer())
        .layer(CatchPanicLayer::custom(panics::answer))
        .layer(axum::middleware::from_fn_with_state(front.clone(), middleware::request_context));
    (router, front)
}

/// An application's router and limits, built before its address is bound: the router and its
/// OpenAPI document depend on no dataset, so they can be built while the first one loads.
pub struct Prepared {
    router: Router,
    front: middleware::Front,
    limits: limits::Limits,
}

impl Prepared {
    pub fn new(state: AppState, limits: limits::Limits) -> Prepared {
        let (router, front) = parts(state, &limits);
        Prepared { router, front, limits }
    }

    /// Binds `addr` (port 0 allowed).
    pub async fn bind(self, addr: &str) -> anyhow::Result<Application> {
        let listener = TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("cannot bind {addr}: {e}"))?;
        Ok(self.serve_on(listener))
    }

    /// The application on a listener bound already.
    pub fn serve_on(self, listener: TcpListener) -> Application {
        let Prepared { router, front, limits } = self;
        Application { listener, router, front, limits }
    }
}

/// A bound, ready-to-serve application (port 0 allowed).
pub struct Application {
    listener: TcpListener,
    router: Router,
    front: middleware::Front,
    limits: limits::Limits,
}

impl Application {
    pub async fn bind(addr: &str, state: AppState) -> anyhow::Result<Application> {
        Application::bind_with(addr, state, limits::Limits::default()).await
    }

    /// Binds with the given limits.
    pub async fn bind_with(addr: &str, state: AppState, limits: limits::Limits) -> anyhow::Result<Application> {
        Prepared::new(state, limits).bind(addr).await
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves, then lets requests in flight finish.
    pub async fn run_until(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        serve::serve(self.listener, self.router, self.front, self.limits.header_timeout, shutdown).await
    }
}
