//! The response headers the API's contract defines: weak ETags and conditional GETs, caching
//! and `Vary`, and the quota headers of a key with a quota. Used by the routes that answer
//! conditionally themselves and by the plumbing around every answer.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use sha2::{Digest, Sha256};

use super::state::DATASET_VERSION;
use crate::process::keys::{Grant, RateInfo};

/// The name of the client (credentials entry) a request was answered for, set on the response
/// by `authenticate` for the access log.
#[derive(Debug, Clone)]
pub struct ClientName(pub String);

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

/// `Vary` of a cacheable answer: per client, per format (`Accept`: the list operations answer
/// in the format it negotiates) and per encoding (compressed or not).
pub const VARY: &str = "X-API-Key, X-API-Secret, Accept, Accept-Encoding";

/// The media type of a non-JSON answer (`None` for JSON), as it enters the answer's tag.
pub fn representation(headers: &HeaderMap) -> Option<&str> {
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

/// Marks the answer to a request let through: its quota headers and, for the log, the client.
pub fn granted(res: &mut Response, grant: Grant) {
    rate_limit_headers(res, grant.rate);
    res.extensions_mut().insert(ClientName(grant.name));
}

/// `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (IETF
/// draft-ietf-httpapi-ratelimit-headers) on every answer to a key with a quota.
pub fn rate_limit_headers(res: &mut Response, rate: Option<RateInfo>) {
    let Some(rate) = rate else { return };
    let h = res.headers_mut();
    h.insert("ratelimit-limit", HeaderValue::from(rate.limit));
    h.insert("ratelimit-remaining", HeaderValue::from(rate.remaining));
    h.insert("ratelimit-reset", HeaderValue::from(rate.reset_secs));
}

#[cfg(test)]
mod tests {
    use super::*;

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
