//! Cross-cutting layers: request ids and access logs, credentials, HTTP caching, and the
//! guarantee that every failure leaves as the JSON failure envelope.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use uuid::Uuid;

use crate::http::contract::error::ApiError;
use crate::http::contract::headers::{
    cache_headers, etag, etag_for, granted, if_none_match, matches_tag, not_modified, rate_limit_headers,
    representation, ClientName,
};
use crate::http::contract::state::{request_id, AppState, RequestId, DATASET_VERSION, REQUEST_ID};
use crate::http::plumbing::panics::Panicked;
use crate::process::metrics;

/// Longest `X-Request-Id` kept from a request.
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// Whether an incoming `X-Request-Id` is kept: 1 to 128 visible ASCII characters.
fn sane_request_id(id: &str) -> bool {
    (1..=MAX_REQUEST_ID_LEN).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

/// The route template a request matched, filled by [`record_route`] once the router has
/// matched it: the outer layers (request id, log, metrics) run before routing.
#[derive(Clone, Default)]
pub struct RouteSlot(std::sync::Arc<std::sync::OnceLock<MatchedPath>>);

/// Records the matched route template in the request's [`RouteSlot`] (a per-route layer).
pub fn record_route(req: &Request) {
    if let (Some(slot), Some(path)) = (req.extensions().get::<RouteSlot>(), req.extensions().get::<MatchedPath>()) {
        let _ = slot.0.set(path.clone());
    }
}

/// The state of [`request_context`]: the limits, and the application state the answers served
/// ahead of the router read (see `fast`, called by the serving loop before the router).
#[derive(Clone)]
pub struct Front {
    pub guard: crate::http::plumbing::limits::Guard,
    pub state: AppState,
}

/// One request's bookkeeping from its arrival to its answer: its id (X-Request-Id on the answer:
/// the client's own when it sent a sane one, else a generated UUID), the in-flight gauge, the
/// metrics and one access log line. `meta.request_id` is a UUID: the client's id when it is
/// one, else a generated one (then also logged, as `uuid`).
pub struct Exchange {
    /// The client's own id, when it sent a sane one.
    incoming: Option<String>,
    pub uuid: Uuid,
    /// Whether the client's id is not a UUID (the generated one is then logged beside it).
    own_uuid: bool,
    method: Method,
    started: Instant,
    in_flight: metrics::InFlight,
}

impl Exchange {
    /// Starts the bookkeeping of a request with these method and headers.
    pub fn begin(method: &Method, headers: &HeaderMap) -> Exchange {
        let incoming = headers.get(REQUEST_ID).and_then(|v| v.to_str().ok()).filter(|v| sane_request_id(v));
        let parsed = incoming.and_then(|v| Uuid::try_parse(v).ok());
        Exchange {
            incoming: incoming.map(str::to_string),
            uuid: parsed.unwrap_or_else(request_id),
            own_uuid: incoming.is_some() && parsed.is_none(),
            method: method.clone(),
            started: Instant::now(),
            in_flight: metrics::InFlight::enter(),
        }
    }

    /// Ends it with the answer `res` of `route` (a route template, or `metrics::UNMATCHED`):
    /// the request id header, the metrics and the log line.
    pub fn finish(self, mut res: Response, route: &str) -> Response {
        let Exchange { incoming, uuid, own_uuid, method, started, in_flight } = self;
        drop(in_flight);
        let elapsed = started.elapsed();
        let mut buf = Uuid::encode_buffer();
        let shown: &str = match &incoming {
            Some(id) => id,
            None => uuid.hyphenated().encode_lower(&mut buf),
        };
        if let Ok(v) = HeaderValue::from_str(shown) {
            res.headers_mut().insert(REQUEST_ID, v);
        }
        let status = res.status();
        metrics::observe(route, &method, status, elapsed);
        if let Some(Panicked(message)) = res.extensions().get::<Panicked>() {
            tracing::error!(request_id = %shown, %method, route, panic = %message, "request handler panicked");
        }
        if tracing::enabled!(tracing::Level::INFO) {
            let key = res.extensions().get::<ClientName>().map(|c| c.0.as_str());
            let uuid_field = own_uuid.then(|| uuid.to_string());
            // Microsecond resolution is plenty for a log line.
            let latency_ms = (elapsed.as_secs_f64() * 1_000_000.0).round() / 1000.0;
            let line = crate::process::logging::RequestLine {
                request_id: shown,
                uuid: uuid_field.as_deref(),
                method: method.as_str(),
                route,
                status: status.as_u16(),
                latency_ms,
                key,
            };
            if !crate::process::logging::request(&line) {
                tracing::info!(
                    request_id = %shown,
                    uuid = uuid_field,
                    %method,
                    route,
                    status = status.as_u16(),
                    latency_ms,
                    key,
                    "request"
                );
            }
        }
        res
    }
}

/// The bookkeeping of every request that reaches the router (see [`Exchange`]), and the
/// in-flight and time limits around it.
pub async fn request_context(State(front): State<Front>, mut req: Request, next: Next) -> Response {
    let exchange = Exchange::begin(req.method(), req.headers());
    // Filled after routing (see `RouteSlot`); read even when the request panicked.
    let slot = RouteSlot::default();
    req.extensions_mut().insert(RequestId(exchange.uuid));
    req.extensions_mut().insert(slot.clone());
    let res = crate::http::plumbing::compression::not_acceptable(
        crate::http::plumbing::limits::guarded(&front.guard, req, next).await,
    );
    let route = slot.0.get().map_or(metrics::UNMATCHED, MatchedPath::as_str);
    exchange.finish(res, route)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"))
}

/// Rewrites any error the framework produced as plain text into the failure envelope.
pub fn normalise_errors(res: Response) -> Response {
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(res.headers()) {
        return res;
    }
    let mut fixed = ApiError::from_status(status).into_response();
    *fixed.status_mut() = status;
    if let Some(name) = res.extensions().get::<ClientName>() {
        fixed.extensions_mut().insert(name.clone());
    }
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(v) = res.headers().get(&name) {
            fixed.headers_mut().insert(name, v.clone());
        }
    }
    fixed
}

/// ETag / If-None-Match / Cache-Control for successful GETs; errors are never cached.
pub async fn http_cache(req: Request, next: Next) -> Response {
    let is_get = req.method() == Method::GET || req.method() == Method::HEAD;
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    let conditional = if is_get { if_none_match(req.headers()) } else { Vec::new() };
    let mut res = next.run(req).await;
    if res.status() == StatusCode::NOT_MODIFIED {
        // Decided before the handler ran (see `authenticate`), headers included.
        return res;
    }
    if !res.status().is_success() {
        res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return res;
    }
    let version = res.headers().get(DATASET_VERSION).and_then(|v| v.to_str().ok()).map(str::to_string);
    let (true, Some(version)) = (is_get, version) else { return res };
    let tag = etag_for(&version, &path, query.as_deref(), representation(res.headers()));
    if matches_tag(&conditional, &tag) {
        let mut short = not_modified(&tag, &version);
        for name in ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"] {
            if let Some(v) = res.headers().get(name) {
                short.headers_mut().insert(name, v.clone());
            }
        }
        return short;
    }
    cache_headers(&mut res, &tag);
    res
}

/// A conditional GET whose tag matches the current dataset: answered 304 before any work (the
/// tag only ever names a successful answer of this path, parameters and dataset version).
fn early_not_modified(state: &AppState, req: &Request) -> Option<Response> {
    // A request whose `Accept` may pick another format than JSON is tagged by its answer.
    if !(req.method() == Method::GET || req.method() == Method::HEAD)
        || !req.headers().contains_key(header::IF_NONE_MATCH)
        || !crate::http::formats::negotiate::accepts_json_first(req.headers())
    {
        return None;
    }
    let snapshot = state.store().current()?;
    let tag = etag(&snapshot.info.version, req.uri().path(), req.uri().query());
    // `*` is left to the answer itself: it matches only when the request succeeds.
    let listed: Vec<String> = if_none_match(req.headers()).into_iter().filter(|t| t != "*").collect();
    matches_tag(&listed, &tag).then(|| not_modified(&tag, &snapshot.info.version))
}

/// Requires both credential headers on API operations.
pub async fn authenticate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let h = req.headers();
    let key = h.get("x-api-key").and_then(|v| v.to_str().ok());
    let secret = h.get("x-api-secret").and_then(|v| v.to_str().ok());
    match state.credentials().authorize(key, secret) {
        Ok(grant) => {
            let mut res = match early_not_modified(&state, &req) {
                Some(res) => res,
                None => next.run(req).await,
            };
            granted(&mut res, grant);
            res
        }
        Err(denial) => {
            let mut res = ApiError::from(denial.error).into_response();
            rate_limit_headers(&mut res, denial.rate);
            if let Some(name) = denial.name {
                res.extensions_mut().insert(ClientName(name));
            }
            res
        }
    }
}

/// 414 for a URL over `MAX_URI_BYTES`, 431 for headers over `MAX_HEADER_BYTES`, 400 for a
/// path segment that is not valid percent-encoded UTF-8 (naming the path parameter).
pub async fn check_request(req: Request, next: Next) -> Response {
    record_route(&req);
    let res = match super::limits::refusal(&req) {
        Some(res) => res,
        None => normalise_errors(next.run(req).await),
    };
    super::compression::mark_status(res)
}

pub async fn not_found() -> ApiError {
    ApiError::NotFound("Rota não encontrada".into())
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incoming_request_ids_must_be_sane_tokens() {
        assert!(sane_request_id("abc-123.x_Y"));
        assert!(sane_request_id(&"a".repeat(128)));
        assert!(!sane_request_id(&"a".repeat(129)));
        assert!(!sane_request_id(""));
        assert!(!sane_request_id("a b"));
        assert!(!sane_request_id("é"));
    }
}
