//! The one error type of the HTTP layer and the spec's failure envelope it renders to.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Every failure the API answers, with its status and Portuguese message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// 400: a bad query, path or body value; the message names the parameter and the rule.
    Validation(String),
    /// 401: a credential header is missing or wrong (one answer for both).
    Unauthorized,
    /// 404: unknown vehicle or route.
    NotFound(String),
    /// 405: wrong method on a known path.
    MethodNotAllowed,
    /// 406: the `Accept` header lists no format the operation can produce.
    NotAcceptable(String),
    /// 413: request body over the limit.
    PayloadTooLarge(usize),
    /// 414: request target (path and query) over the limit, in bytes.
    UriTooLong(usize),
    /// 415: POST without `Content-Type: application/json`.
    UnsupportedMediaType,
    /// 409: a cursor made on another dataset version (the version it was made on).
    DatasetChanged(String),
    /// 422: an analyst's query stopped at the time or memory limit (which one, in Portuguese).
    QueryTooExpensive(String),
    /// 429: per-key quota exceeded; retry after this many seconds.
    RateLimited(u64),
    /// 431: header block over the limit, in bytes.
    HeadersTooLarge(usize),
    /// 500: a bug; the detail is logged, never sent.
    Internal,
    /// 503: no dataset is loaded.
    Unavailable,
    /// 503: too many requests in flight; retry after 1 s.
    Overloaded,
    /// 503: the request took longer than the request timeout (milliseconds).
    Timeout(u64),
}

/// `error` member of the failure envelope.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Machine-readable code: VALIDATION_ERROR, UNAUTHORIZED, NOT_FOUND, METHOD_NOT_ALLOWED,
    /// NOT_ACCEPTABLE, PAYLOAD_TOO_LARGE, URI_TOO_LONG, UNSUPPORTED_MEDIA_TYPE, DATASET_CHANGED, QUERY_TOO_EXPENSIVE, RATE_LIMITED,
    /// HEADERS_TOO_LARGE, INTERNAL_ERROR, SERVICE_UNAVAILABLE.
    pub code: &'static str,
    /// Human-readable message in Portuguese.
    pub message: String,
}

/// The failure envelope: `{"success": false, "error": {"code", "message"}}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Failure {
    /// Always false.
    pub success: bool,
    pub error: ErrorBody,
}

impl From<crate::process::keys::Refusal> for ApiError {
    /// A refusal of the process's credentials, answered over HTTP (401 or 429).
    fn from(refusal: crate::process::keys::Refusal) -> Self {
        match refusal {
            crate::process::keys::Refusal::Unauthorized => ApiError::Unauthorized,
            crate::process::keys::Refusal::RateLimited(secs) => ApiError::RateLimited(secs),
        }
    }
}

impl ApiError {
    pub fn validation(message: impl Into<String>) -> Self {
        ApiError::Validation(message.into())
    }

    /// Logs an unexpected engine error and hides it behind a 500.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        tracing::error!(error = %err, "internal error");
        ApiError::Internal
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Validation(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UriTooLong(_) => StatusCode::URI_TOO_LONG,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::DatasetChanged(_) => StatusCode::CONFLICT,
            ApiError::QueryTooExpensive(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::HeadersTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Unavailable | ApiError::Overloaded | ApiError::Timeout(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Validation(_) => "VALIDATION_ERROR",
            ApiError::Unauthorized => "UNAUTHORIZED",
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ApiError::NotAcceptable(_) => "NOT_ACCEPTABLE",
            ApiError::PayloadTooLarge(_) => "PAYLOAD_TOO_LARGE",
            ApiError::UriTooLong(_) => "URI_TOO_LONG",
            ApiError::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ApiError::DatasetChanged(_) => "DATASET_CHANGED",
            ApiError::QueryTooExpensive(_) => "QUERY_TOO_EXPENSIVE",
            ApiError::RateLimited(_) => "RATE_LIMITED",
            ApiError::HeadersTooLarge(_) => "HEADERS_TOO_LARGE",
            ApiError::Internal => "INTERNAL_ERROR",
            ApiError::Unavailable | ApiError::Overloaded | ApiError::Timeout(_) => "SERVICE_UNAVAILABLE",
        }
    }

    pub fn message(&self) -> String {
        match self {
            ApiError::Validation(m) | ApiError::NotFound(m) | ApiError::NotAcceptable(m) => m.clone(),
            ApiError::QueryTooExpensive(m) => format!("Consulta interrompida: {m}"),
            ApiError::Unauthorized => {
                "Credenciais ausentes ou inválidas: envie X-API-Key e X-API-Secret válidos".into()
            }
            ApiError::MethodNotAllowed => "Método HTTP não permitido para este recurso".into(),
            ApiError::PayloadTooLarge(limit) => format!("Corpo da requisição excede o limite de {limit} bytes"),
            ApiError::UriTooLong(limit) => format!("URL da requisição excede o limite de {limit} bytes"),
            ApiError::UnsupportedMediaType => "Content-Type deve ser application/json".into(),
            ApiError::DatasetChanged(made_on) => format!(
                "O cursor foi emitido para a versão {made_on} do conjunto de dados, que não está mais em uso; \
                 recomece a listagem sem cursor"
            ),
            ApiError::HeadersTooLarge(limit) => {
                format!("Cabeçalhos da requisição excedem o limite de {limit} bytes")
            }
            ApiError::RateLimited(s) => {
                format!("Cota de requisições excedida para esta chave; tente novamente em {s} s")
            }
            ApiError::Internal => "Erro interno do servidor".into(),
            ApiError::Unavailable => "Nenhum conjunto de dados carregado; tente novamente em instantes".into(),
            ApiError::Overloaded => {
                "Servidor sobrecarregado: limite de requisições simultâneas atingido; tente novamente em 1 s".into()
            }
            ApiError::Timeout(ms) => format!("A requisição excedeu o tempo limite de {ms} ms; tente novamente"),
        }
    }

    /// The error a bare status from the framework stands for (used to wrap non-JSON errors).
    pub fn from_status(status: StatusCode) -> Self {
        match status.as_u16() {
            401 => ApiError::Unauthorized,
            404 => ApiError::NotFound("Recurso não encontrado".into()),
            405 => ApiError::MethodNotAllowed,
            406 => ApiError::NotAcceptable("Nenhum formato aceito pelo cabeçalho Accept pode ser produzido".into()),
            413 => ApiError::PayloadTooLarge(crate::http::contract::state::MAX_BODY_BYTES),
            414 => ApiError::UriTooLong(crate::process::limits::MAX_URI_BYTES),
            415 => ApiError::UnsupportedMediaType,
            429 => ApiError::RateLimited(60),
            431 => ApiError::HeadersTooLarge(crate::process::limits::MAX_HEADER_BYTES),
            503 => ApiError::Unavailable,
            400..=499 => ApiError::validation("Requisição inválida"),
            _ => ApiError::Internal,
        }
    }

    pub fn body(&self) -> Failure {
        Failure { success: false, error: ErrorBody { code: self.code(), message: self.message() } }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut res = (self.status(), axum::Json(self.body())).into_response();
        match self {
            ApiError::RateLimited(secs) => {
                res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            ApiError::Overloaded => {
                res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_status_and_code() {
        let cases = [
            (ApiError::validation("x"), 400, "VALIDATION_ERROR"),
            (ApiError::Unauthorized, 401, "UNAUTHORIZED"),
            (ApiError::NotFound("x".into()), 404, "NOT_FOUND"),
            (ApiError::MethodNotAllowed, 405, "METHOD_NOT_ALLOWED"),
            (ApiError::NotAcceptable("x".into()), 406, "NOT_ACCEPTABLE"),
            (ApiError::PayloadTooLarge(1), 413, "PAYLOAD_TOO_LARGE"),
            (ApiError::UriTooLong(8), 414, "URI_TOO_LONG"),
            (ApiError::UnsupportedMediaType, 415, "UNSUPPORTED_MEDIA_TYPE"),
            (ApiError::RateLimited(3), 429, "RATE_LIMITED"),
            (ApiError::HeadersTooLarge(16), 431, "HEADERS_TOO_LARGE"),
            (ApiError::Internal, 500, "INTERNAL_ERROR"),
            (ApiError::Unavailable, 503, "SERVICE_UNAVAILABLE"),
            (ApiError::Overloaded, 503, "SERVICE_UNAVAILABLE"),
            (ApiError::Timeout(10), 503, "SERVICE_UNAVAILABLE"),
        ];
        for (e, status, code) in cases {
            assert_eq!(e.status().as_u16(), status);
            assert_eq!(e.code(), code);
            assert_eq!(ApiError::from_status(e.status()).code(), code);
        }
    }

    #[test]
    fn rate_limited_sets_retry_after() {
        let r = ApiError::RateLimited(7).into_response();
        assert_eq!(r.headers()[header::RETRY_AFTER], "7");
        assert_eq!(ApiError::Overloaded.into_response().headers()[header::RETRY_AFTER], "1");
    }
}
