//! Response compression (tower-http): gzip, Brotli or zstd by `Accept-Encoding`, for answers of
//! at least [`MIN_COMPRESSED_BYTES`]. Cacheable answers vary on `Accept-Encoding` and keep one
//! weak ETag for every encoding (see `middleware::http_cache`).
//!
//! When `Accept-Encoding` rules out every encoding the server has (identity included),
//! tower-http answers 406 but keeps the original body; [`not_acceptable`] turns that into the
//! failure envelope.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use tower_http::compression::predicate::{DefaultPredicate, Predicate, SizeAbove};
use tower_http::compression::CompressionLayer;

use crate::http::contract::error::{ErrorBody, Failure};

/// Answers smaller than this are sent uncompressed.
pub const MIN_COMPRESSED_BYTES: u64 = 1024;

/// The compression layer.
pub fn layer() -> CompressionLayer<impl Predicate> {
    CompressionLayer::new().compress_when(DefaultPredicate::new().and(SizeAbove::new(MIN_COMPRESSED_BYTES)))
}

/// The status an answer had before compression (set inside the compression layer).
#[derive(Debug, Clone, Copy)]
struct StatusBeforeCompression(StatusCode);

/// Inside the compression layer: records the answer's status.
pub fn mark_status(mut res: Response) -> Response {
    let status = res.status();
    res.extensions_mut().insert(StatusBeforeCompression(status));
    res
}

/// Outside the compression layer: a 406 that compression made of another answer becomes the
/// failure envelope.
pub fn not_acceptable(res: Response) -> Response {
    let changed = res.extensions().get::<StatusBeforeCompression>().is_some_and(|s| s.0 != res.status());
    if res.status() != StatusCode::NOT_ACCEPTABLE || !changed {
        return res;
    }
    let error = ErrorBody {
        code: "NOT_ACCEPTABLE",
        message: "Nenhuma codificação aceitável em Accept-Encoding (disponíveis: gzip, br, zstd, identity)".into(),
    };
    let mut fixed = (StatusCode::NOT_ACCEPTABLE, Json(Failure { success: false, error })).into_response();
    if let Some(vary) = res.headers().get(axum::http::header::VARY) {
        fixed.headers_mut().insert(axum::http::header::VARY, vary.clone());
    }
    fixed.headers_mut().insert(axum::http::header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    fixed
}
