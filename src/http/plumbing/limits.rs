//! Request limits over HTTP: the size of the URL and of the headers, the encoding of the path,
//! the number of API requests in flight and the time one request may take (the numbers are the
//! process's, see `process::limits`). Every refusal is the failure envelope; hyper's own
//! refusals (a head over its buffer) are rewritten by `serve`.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::contract::error::ApiError;
use crate::http::contract::params::{check_encoding, EncodingProblem};
pub use crate::process::limits::{
    exempt_from_capacity, Guard, Limits, DEFAULT_HEADER_TIMEOUT_MS, DEFAULT_MAX_IN_FLIGHT, DEFAULT_REQUEST_TIMEOUT_MS,
    MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_URI_BYTES,
};

/// Refuses at once (503, `Retry-After: 1`) an API request over `--max-in-flight`, and bounds the
/// time until the answer starts to `--request-timeout-ms` (503). A refused request waits in no
/// queue.
pub async fn guarded(guard: &Guard, req: Request, next: Next) -> Response {
    let _permit = if exempt_from_capacity(req.uri().path()) {
        None
    } else {
        match guard.try_enter_owned() {
            Some(permit) => Some(permit),
            None => return ApiError::Overloaded.into_response(),
        }
    };
    match tokio::time::timeout(guard.request_timeout(), next.run(req)).await {
        Ok(res) => res,
        Err(_) => {
            let ms = guard.request_timeout().as_millis() as u64;
            tracing::warn!(timeout_ms = ms, "request timed out");
            ApiError::Timeout(ms).into_response()
        }
    }
}

/// Size of the header block as sent (`name: value\r\n` per header).
pub fn header_bytes<B>(req: &axum::http::Request<B>) -> usize {
    req.headers().iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum()
}

/// The answer to a request over the URL, header or encoding limits.
pub fn refusal(req: &Request) -> Option<Response> {
    let uri_len = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if uri_len > MAX_URI_BYTES {
        return Some(ApiError::UriTooLong(MAX_URI_BYTES).into_response());
    }
    if header_bytes(req) > MAX_HEADER_BYTES {
        return Some(ApiError::HeadersTooLarge(MAX_HEADER_BYTES).into_response());
    }
    if let Some(err) = path_error(req) {
        return Some(err.into_response());
    }
    None
}

/// The first path segment that is not valid percent-encoded UTF-8, as a validation error naming
/// the route's parameter at that place (or the path itself).
fn path_error(req: &Request) -> Option<ApiError> {
    let path = req.uri().path();
    if !path.contains('%') {
        return None;
    }
    let template: Vec<&str> =
        req.extensions().get::<MatchedPath>().map_or_else(Vec::new, |m| m.as_str().split('/').collect());
    for (i, segment) in path.split('/').enumerate() {
        let Err(problem) = check_encoding(segment) else { continue };
        let param = template.get(i).and_then(|t| t.strip_prefix('{')).and_then(|t| t.strip_suffix('}'));
        let what = match param {
            Some(name) => format!("Parâmetro '{name}'"),
            None => "O caminho da requisição".to_string(),
        };
        let rule = match problem {
            EncodingProblem::Percent => "contém codificação percentual inválida",
            EncodingProblem::Utf8 => "não é UTF-8 válido",
        };
        return Some(ApiError::validation(format!("{what} {rule}")));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_errors_name_the_parameter() {
        let mut req = Request::new(axum::body::Body::empty());
        *req.uri_mut() = "/vehicles/%FF/summary".parse().unwrap();
        req.extensions_mut().insert(path_template("/vehicles/{vehicle_id}/summary"));
        assert_eq!(path_error(&req), Some(ApiError::validation("Parâmetro 'vehicle_id' não é UTF-8 válido")));
        *req.uri_mut() = "/vehicles/%G1/summary".parse().unwrap();
        assert!(matches!(path_error(&req), Some(ApiError::Validation(m)) if m.contains("codificação percentual")));
        *req.uri_mut() = "/vehicles/%C3%A9/summary".parse().unwrap();
        assert_eq!(path_error(&req), None);
    }

    fn path_template(t: &'static str) -> MatchedPath {
        // MatchedPath has no public constructor: extract it from a routed request.
        use tower::ServiceExt;
        let (tx, rx) = std::sync::mpsc::channel();
        let app = axum::Router::new().route(
            t,
            axum::routing::get(move |m: MatchedPath| async move {
                let _ = tx.send(m);
            }),
        );
        let uri = t.replace("{vehicle_id}", "x");
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(app.oneshot(axum::http::Request::get(uri).body(axum::body::Body::empty()).unwrap())).unwrap();
        rx.recv().unwrap()
    }
}
