//! Cross-cutting layers: request ids and access logs, credentials, HTTP caching, and the
//! guarantee that every failure leaves as the JSON failure envelope.

use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::error::ApiError;
use super::panics::Panicked;
use super::{AppState, RequestId, DATASET_VERSION, REQUEST_ID};
use crate::process::keys::{Grant, RateInfo};
use crate::process::metrics;

/// The name of the client (credentials entry) a request was answered for, set on the response
/// by `authenticate` for the access log.
#[derive(Debug, Clone)]
pub struct ClientName(pub String);

/// Longest `X-Request-Id` kept from a request.
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// Whether an incoming `X-Request-Id` is kept: 1 to 128 visible ASCII characters.
fn sane_request_id(id: &str) -> bool {
    (1..=MAX_REQUEST_ID_LEN).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

/// A random (version 4) UUID for a request id, from a per-thread generator seeded once from the
/// OS: no system call per request. Request ids need to be unique, not secret.
pub fn request_id() -> Uuid {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<(u64, u64)> = Cell::new({
            let seed = Uuid::new_v4().as_u64_pair();
            (seed.0 | 1, seed.1 | 1)
        });
    }
    STATE.with(|state| {
        // xorshift128+, twice: 128 fresh bits.
        let next = || {
            let (mut s1, s0) = state.get();
            let result = s0.wrapping_add(s1);
            s1 ^= s1 << 23;
            let s1 = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
            state.set((s0, s1));
            result
        };
        let bits = ((next() as u128) << 64) | next() as u128;
        uuid::Builder::from_random_bytes(bits.to_be_bytes()).into_uuid()
    })
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

/// The state of [`request_context`]: the limits and, for the answers served ahead of the
/// router (see `fast`), the application state.
#[derive(Clone)]
pub struct Front {
    pub guard: super::limits::Guard,
    pub state: AppState,
}

/// Gives every request an id (X-Request-Id on the answer: the client's own when it sent a sane
/// one, else a generated UUID), counts it in the metrics and logs one line per request.
///
/// `meta.request_id` is a UUID: the client's id when it is one, else a generated one (then
/// also logged, as `uuid`).
pub async fn request_context(State(front): State<Front>, mut req: Request, next: Next) -> Response {
    let incoming = req.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()).filter(|v| sane_request_id(v));
    let parsed = incoming.and_then(|v| Uuid::try_parse(v).ok());
    let uuid = parsed.unwrap_or_else(request_id);
    let shown = match incoming {
        Some(id) => id.to_string(),
        None => uuid.to_string(),
    };
    let own_uuid = incoming.is_some() && parsed.is_none();
    let method = req.method().clone();
    // Filled after routing (see `RouteSlot`); read even when the request panicked.
    let slot = RouteSlot::default();
    let started = Instant::now();
    let in_flight = metrics::InFlight::enter();
    let fast = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        super::fast::answer(&front.state, &front.guard, &req, uuid)
    }));
    let (mut res, fast_route) = match fast {
        Ok(Some((res, route))) => (res, Some(route)),
        Ok(None) => {
            req.extensions_mut().insert(RequestId(uuid));
            req.extensions_mut().insert(slot.clone());
            (super::compression::not_acceptable(super::limits::guarded(&front.guard, req, next).await), None)
        }
        Err(payload) => (super::panics::answer(payload), None),
    };
    drop(in_flight);
    let elapsed = started.elapsed();
    if let Ok(v) = HeaderValue::from_str(&shown) {
        res.headers_mut().insert(REQUEST_ID, v);
    }
    let status = res.status();
    let matched = slot.0.get();
    let route = fast_route.or(matched.map(MatchedPath::as_str)).unwrap_or(metrics::UNMATCHED);
    metrics::observe(route, &method, status, elapsed);
    let key = res.extensions().get::<ClientName>().map(|c| c.0.as_str());
    let uuid_field = own_uuid.then(|| uuid.to_string());
    // Microsecond resolution is plenty for a log line.
    let latency_ms = (elapsed.as_secs_f64() * 1_000_000.0).round() / 1000.0;
    if let Some(Panicked(message)) = res.extensions().get::<Panicked>() {
        tracing::error!(request_id = %shown, %method, route, panic = %message, "request handler panicked");
    }
    if tracing::enabled!(tracing::Level::INFO) {
        let line = crate::process::logging::RequestLine {
            request_id: &shown,
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

/// Weak ETag from the dataset version and the normalised request (path + sorted parameters).
/// Weak: the body carries a per-request id and time, and it may be sent compressed.
pub fn etag(version: &str, path: &str, query: Option<&str>) -> String {
    etag_for(version, path, query, None)
}

/// The ETag of one representation: a JSON answer's tag is [`etag`]; any other media type (e.g.
/// `text/csv`, negotiated through `Accept`) is part of the tag, so each format has its own.
pub fn etag_for(version: &str, path: &str, query: Option<&str>, media_type: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> =
        form_urlencoded::parse(query.unwrap_or("").as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    pairs.sort();
    let mut h = Sha256::new();
    h.update(version.as_bytes());
    h.update(b"\n");
    h.update(path.as_bytes());
    for (k, v) in pairs {
        h.update(b"\n");
        h.update(k.as_bytes());
        h.update(b"=");
        h.update(v.as_bytes());
    }
    if let Some(media_type) = media_type {
        h.update(b"\n\0representation=");
        h.update(media_type.as_bytes());
    }
    format!("W/\"{}\"", hex::encode(&h.finalize()[..16]))
}

/// The entity tags listed in If-None-Match headers.
pub fn if_none_match(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_string())
        .collect()
}

/// The opaque part of an entity tag (without `W/`).
fn opaque(tag: &str) -> &str {
    tag.strip_prefix("W/").unwrap_or(tag)
}

/// Weak comparison (RFC 9110 §8.8.3.2), as If-None-Match requires: weak and strong forms match.
pub fn matches_tag(listed: &[String], tag: &str) -> bool {
    listed.iter().any(|t| t == "*" || opaque(t) == opaque(tag))
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

/// `Vary` of a cacheable answer: per client, per format (`Accept`: the list operations answer
/// in the format it negotiates) and per encoding (compressed or not).
pub const VARY: &str = "X-API-Key, X-API-Secret, Accept, Accept-Encoding";

/// The media type of a non-JSON answer (`None` for JSON), as it enters the answer's tag.
fn representation(headers: &HeaderMap) -> Option<&str> {
    let content_type = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = content_type.split(';').next().unwrap_or("").trim();
    (essence != "application/json").then_some(essence)
}

/// ETag, Cache-Control and Vary of a cacheable answer.
pub fn cache_headers(res: &mut Response, tag: &str) {
    let headers = [
        (header::ETAG, HeaderValue::from_str(tag).ok()),
        (header::CACHE_CONTROL, Some(HeaderValue::from_static("private, no-cache"))),
        (header::VARY, Some(HeaderValue::from_static(VARY))),
    ];
    for (name, value) in headers {
        if let Some(v) = value {
            res.headers_mut().insert(name, v);
        }
    }
}

/// `304 Not Modified` for `tag` of dataset `version`, with an empty body.
pub fn not_modified(tag: &str, version: &str) -> Response {
    let mut res = Response::new(Body::empty());
    *res.status_mut() = StatusCode::NOT_MODIFIED;
    if let Ok(v) = HeaderValue::from_str(version) {
        res.headers_mut().insert(DATASET_VERSION, v);
    }
    cache_headers(&mut res, tag);
    res
}

/// A conditional GET whose tag matches the current dataset: answered 304 before any work (the
/// tag only ever names a successful answer of this path, parameters and dataset version).
fn early_not_modified(state: &AppState, req: &Request) -> Option<Response> {
    // A request whose `Accept` may pick another format than JSON is tagged by its answer.
    if !(req.method() == Method::GET || req.method() == Method::HEAD)
        || !req.headers().contains_key(header::IF_NONE_MATCH)
        || !super::formats::negotiate::accepts_json_first(req.headers())
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

/// Marks the answer to a request let through: its quota headers and, for the log, the client.
pub fn granted(res: &mut Response, grant: Grant) {
    rate_limit_headers(res, grant.rate);
    res.extensions_mut().insert(ClientName(grant.name));
}

/// `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (IETF
/// draft-ietf-httpapi-ratelimit-headers) on every answer to a key with a quota.
fn rate_limit_headers(res: &mut Response, rate: Option<RateInfo>) {
    let Some(rate) = rate else { return };
    let h = res.headers_mut();
    h.insert("ratelimit-limit", HeaderValue::from(rate.limit));
    h.insert("ratelimit-remaining", HeaderValue::from(rate.remaining));
    h.insert("ratelimit-reset", HeaderValue::from(rate.reset_secs));
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

    #[test]
    fn request_ids_are_distinct_v4_uuids() {
        let ids: std::collections::HashSet<Uuid> = (0..10_000).map(|_| request_id()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids.iter().all(|u| u.get_version_num() == 4 && u.get_variant() == uuid::Variant::RFC4122));
    }

    #[test]
    fn etag_ignores_parameter_order_but_not_values_or_version() {
        let a = etag("v1", "/x", Some("a=1&b=2"));
        assert_eq!(a, etag("v1", "/x", Some("b=2&a=1")));
        assert_ne!(a, etag("v1", "/x", Some("a=1&b=3")));
        assert_ne!(a, etag("v2", "/x", Some("a=1&b=2")));
        assert_ne!(a, etag("v1", "/y", Some("a=1&b=2")));
        assert!(a.starts_with("W/\"") && a.ends_with('"'));
        assert_eq!(a, etag_for("v1", "/x", Some("a=1&b=2"), None), "JSON keeps its tag");
        let csv = etag_for("v1", "/x", Some("a=1&b=2"), Some("text/csv"));
        assert_ne!(a, csv);
        assert_ne!(csv, etag_for("v1", "/x", Some("a=1&b=2"), Some("application/vnd.apache.parquet")));
    }

    #[test]
    fn if_none_match_lists_and_weak_tags() {
        let mut h = HeaderMap::new();
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"x\", W/\"t\""));
        assert!(matches_tag(&if_none_match(&h), "\"t\""));
        assert!(matches_tag(&if_none_match(&h), "W/\"t\""));
        assert!(matches_tag(&if_none_match(&h), "W/\"x\""));
        assert!(!matches_tag(&if_none_match(&h), "\"u\""));
        assert!(!matches_tag(&if_none_match(&h), "W/\"u\""));
    }
}
