//! The HTTP layer: routing, credentials, envelopes and errors. It parses requests, calls the
//! engine and encodes answers; it never builds Polars plans itself.

pub mod auth;
pub mod credentials_reload;
pub mod encode;
pub mod envelope;
pub mod error;
pub mod formats;
pub mod middleware;
pub mod openapi;
pub mod params;
pub mod routes;
pub mod wire;

use std::net::SocketAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use axum::extract::DefaultBodyLimit;
use axum::Router;
use tokio::net::TcpListener;
use utoipa_axum::router::OpenApiRouter;

use crate::engine::store::Store;

use self::auth::Credentials;

/// Largest accepted request body (POST /compare), in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// Response header with the version of the dataset that produced the answer.
pub const DATASET_VERSION: &str = "x-dataset-version";
/// Request/response header with the request id.
pub const REQUEST_ID: &str = "x-request-id";

/// The id of one request, set by the outermost middleware.
#[derive(Debug, Clone, Copy)]
pub struct RequestId(pub uuid::Uuid);

struct Inner {
    store: Arc<Store>,
    /// Swapped whole when the credentials file changes (see `credentials_reload`).
    credentials: ArcSwap<Credentials>,
}

/// Shared state of every handler: cheap to clone.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

impl AppState {
    pub fn new(store: Arc<Store>, credentials: Credentials) -> AppState {
        AppState { inner: Arc::new(Inner { store, credentials: ArcSwap::from_pointee(credentials) }) }
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The credentials in force now (a request keeps the set it started with).
    pub fn credentials(&self) -> Arc<Credentials> {
        self.inner.credentials.load_full()
    }

    /// Puts a new set of credentials in force for the next requests.
    pub fn replace_credentials(&self, credentials: Credentials) {
        self.inner.credentials.store(Arc::new(credentials));
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
}

/// The complete application router.
pub fn app(state: AppState) -> Router {
    let (api, doc) = OpenApiRouter::with_openapi(openapi::base()).merge(api_router()).split_for_parts();
    let doc = openapi::finish(doc);
    let api = api.route_layer(axum::middleware::from_fn_with_state(state.clone(), middleware::authenticate));
    Router::new()
        .merge(api)
        .merge(routes::health::router())
        .merge(openapi::router(doc))
        .fallback(middleware::not_found)
        .method_not_allowed_fallback(middleware::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(middleware::http_cache))
        .layer(axum::middleware::from_fn(middleware::normalise_errors))
        .layer(axum::middleware::from_fn(middleware::request_context))
        .with_state(state)
}

/// A bound, ready-to-serve application (port 0 allowed).
pub struct Application {
    listener: TcpListener,
    router: Router,
}

impl Application {
    pub async fn bind(addr: &str, state: AppState) -> anyhow::Result<Application> {
        let listener = TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("cannot bind {addr}: {e}"))?;
        Ok(Application { listener, router: app(state) })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves, then lets requests in flight finish.
    pub async fn run_until(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        axum::serve(self.listener, self.router).with_graceful_shutdown(shutdown).await
    }
}
