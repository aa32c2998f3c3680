//! The HTTP layer: routing, credentials, envelopes and errors. It parses requests, calls the
//! engine and encodes answers; it never builds Polars plans itself.

pub mod compression;
pub mod encode;
pub mod envelope;
pub mod error;
pub mod fast;
pub mod formats;
pub mod limits;
pub mod middleware;
pub mod openapi;
pub mod panics;
pub mod params;
pub mod profile;
pub mod routes;
pub mod serve;
pub mod wire;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_axum::router::OpenApiRouter;

use crate::engine::store::Store;

use crate::process::keys::{Credentials, KeyStore};

pub use crate::process::limits::MAX_BODY_BYTES;
/// Response header with the version of the dataset that produced the answer.
pub const DATASET_VERSION: &str = "x-dataset-version";
/// Request/response header with the request id.
pub const REQUEST_ID: &str = "x-request-id";

/// The id of one request, set by the outermost middleware.
#[derive(Debug, Clone, Copy)]
pub struct RequestId(pub uuid::Uuid);

struct Inner {
    store: Arc<Store>,
    /// The process's credentials, swapped whole when the credentials file changes (see
    /// `process::keys_reload`).
    keys: Arc<KeyStore>,
}

/// Shared state of every handler: cheap to clone.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

impl AppState {
    pub fn new(store: Arc<Store>, credentials: Credentials) -> AppState {
        AppState::sharing(store, Arc::new(KeyStore::new(credentials)))
    }

    /// The state of a server sharing the process's dataset store and credentials.
    pub fn sharing(store: Arc<Store>, keys: Arc<KeyStore>) -> AppState {
        AppState { inner: Arc::new(Inner { store, keys }) }
    }

    /// The process's credentials (shared with the other front doors and the reloader).
    pub fn keys(&self) -> &Arc<KeyStore> {
        &self.inner.keys
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The credentials in force now (a request keeps the set it started with).
    pub fn credentials(&self) -> Arc<Credentials> {
        self.inner.keys.current()
    }

    /// Puts a new set of credentials in force for the next requests.
    pub fn replace_credentials(&self, credentials: Credentials) {
        self.inner.keys.replace(credentials);
    }
}

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

/// The API operations (credentials required) with their OpenAPI description.
pub fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(routes::catalog::router())
        .merge(routes::export::router())
        .merge(routes::rankings::router())
        .merge(routes::insights::router())
        .merge(routes::vehicles::router())
        .merge(routes::compare::router())
        .merge(routes::facets::router())
        .merge(routes::methodology::router())
}

/// The complete application router with the default limits.
pub fn app(state: AppState) -> Router {
    app_with(state, &limits::Limits::default())
}

/// The complete application router. Layers, from the outside in — once per request, before
/// routing: request id, access log, metrics, the dataset-only answers served ahead of the router
/// (`fast`), in-flight and time limits (`request_context`); panics caught; compression. Then, per route: the matched route recorded, URL/header/encoding
/// limits and the failure envelope for framework errors (`check_request`); HTTP caching; body
/// size; then the routes (API operations behind credentials).
pub fn app_with(state: AppState, limits: &limits::Limits) -> Router {
    let (api, doc) = OpenApiRouter::with_openapi(openapi::base()).merge(api_router()).split_for_parts();
    let doc = openapi::finish(doc);
    let api = api.route_layer(axum::middleware::from_fn_with_state(state.clone(), middleware::authenticate));
    let routes = panics::with_test_route(Router::new())
        .merge(api)
        .merge(routes::health::router())
        .merge(routes::metrics::router())
        .merge(openapi::router(doc))
        .fallback(middleware::not_found)
        .method_not_allowed_fallback(middleware::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(middleware::http_cache))
        .layer(axum::middleware::from_fn(limits::check_request))
        .with_state(state.clone());
    // `Router::layer` wraps every route separately; the layers that do not need the matched
    // route wrap the whole router once instead (a router whose only endpoint is `routes`).
    Router::new()
        .fallback_service(routes)
        .layer(compression::layer())
        .layer(CatchPanicLayer::custom(panics::answer))
        .layer(axum::middleware::from_fn_with_state(
            middleware::Front { guard: limits::Guard::new(limits), state },
            middleware::request_context,
        ))
}

/// A bound, ready-to-serve application (port 0 allowed).
pub struct Application {
    listener: TcpListener,
    router: Router,
    limits: limits::Limits,
}

impl Application {
    pub async fn bind(addr: &str, state: AppState) -> anyhow::Result<Application> {
        Application::bind_with(addr, state, limits::Limits::default()).await
    }

    /// Binds with the given limits.
    pub async fn bind_with(addr: &str, state: AppState, limits: limits::Limits) -> anyhow::Result<Application> {
        let listener = TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("cannot bind {addr}: {e}"))?;
        Ok(Application { listener, router: app_with(state, &limits), limits })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves, then lets requests in flight finish.
    pub async fn run_until(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        serve::serve(self.listener, self.router, self.limits.header_timeout, shutdown).await
    }
}
