//! The success envelope and the per-request context handlers work with.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::engine::filters::PageRequest;
use crate::engine::snapshot::Snapshot;
use crate::engine::sql::worker::SqlVersion;
use crate::engine::views::CostConfig;

use crate::http::contract::error::ApiError;
use crate::http::contract::state::{AppState, RequestId, DATASET_VERSION};

/// `meta.pagination`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Pagination {
    /// The page number (with `cursor`: the page of `page_size` items the cursor's position
    /// falls in).
    pub page: u64,
    pub page_size: u32,
    pub total: u64,
    pub total_pages: u64,
    /// `/catalog/vehicles`, `/insights/efficiency` and `/insights/eco-scores` only: the cursor of
    /// the page after this one (pass it as `cursor`, with the same filters and sort); null when
    /// no item follows this page's last one. Absent on other lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, nullable = true)]
    pub next_cursor: Option<Option<String>>,
}

impl Pagination {
    /// The pagination of `page` in a list of `total` items.
    pub fn of(page: PageRequest, total: usize) -> Pagination {
        let total = total as u64;
        Pagination {
            page: page.page,
            page_size: page.page_size,
            total,
            total_pages: total.div_ceil(page.page_size as u64),
            next_cursor: None,
        }
    }
}

/// A cost configuration: km per year and prices (R$).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PerfilCusto {
    /// Kilometres per year.
    #[schema(example = 12000.0)]
    pub km_ano: f64,
    /// R$/L.
    #[schema(example = 6.2)]
    pub preco_gasolina: f64,
    /// R$/L.
    #[schema(example = 4.1)]
    pub preco_etanol: f64,
    /// R$/L.
    #[schema(example = 6.0)]
    pub preco_diesel: f64,
    /// R$/m³.
    #[schema(example = 4.8)]
    pub preco_gnv: f64,
    /// R$/kWh.
    #[schema(example = 0.85)]
    pub preco_kwh: f64,
}

impl From<&CostConfig> for PerfilCusto {
    fn from(c: &CostConfig) -> Self {
        PerfilCusto {
            km_ano: c.km_ano,
            preco_gasolina: c.preco_gasolina,
            preco_etanol: c.preco_etanol,
            preco_diesel: c.preco_diesel,
            preco_gnv: c.preco_gnv,
            preco_kwh: c.preco_kwh,
        }
    }
}

/// `data.meta`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Meta {
    /// ISO 8601 UTC time the answer was generated.
    #[schema(example = "2026-01-01T12:00:00.000Z")]
    pub generated_at: String,
    /// UUID of the request (also in the X-Request-Id header).
    pub request_id: Uuid,
    /// The filters received (typed), plus the effective ranking parameters where they apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub filters_applied: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pagination: Option<Pagination>,
    /// The effective driving profile (cost configuration) of the costs in the answer: always on
    /// /vehicles/{vehicle_id}/summary and POST /compare, absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perfil_custo: Option<PerfilCusto>,
    /// `/sql` only: the result's columns, in order, with their types.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columns: Option<Vec<SqlColumn>>,
    /// `/sql` only: the rows in `data.data`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_count: Option<u64>,
    /// `/sql` only: true when the result had more rows than the server's limit (the rest cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

/// One column of an SQL answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SqlColumn {
    #[schema(example = "marca")]
    pub name: String,
    /// One of string, integer, float, boolean, date, datetime.
    #[serde(rename = "type")]
    #[schema(example = "string")]
    pub kind: &'static str,
}

impl Meta {
    /// The meta of an answer generated now for request `request_id`.
    pub fn new(request_id: Uuid, filters: Option<Map<String, Value>>, pagination: Option<Pagination>) -> Meta {
        Meta {
            generated_at: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
            request_id,
            filters_applied: filters,
            pagination,
            perfil_custo: None,
            columns: None,
            row_count: None,
            truncated: None,
        }
    }
}

/// `data`: the payload and its metadata.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Payload<T> {
    pub data: T,
    pub meta: Meta,
}

/// The success envelope `{"success": true, "data": {"data": ..., "meta": ...}}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Envelope<T> {
    /// Always true.
    pub success: bool,
    // Inlined: utoipa names a nested generic after its outer type only (`Payload_Items` for
    // every `Items<T>`), so as a shared component the payloads of different operations collide.
    #[schema(inline)]
    pub data: Payload<T>,
}

/// A successful answer: the envelope plus the dataset version it was computed from.
pub struct Reply<T> {
    envelope: Envelope<T>,
    version: String,
}

impl<T> Reply<T> {
    /// Adds `meta.perfil_custo`.
    pub fn with_cost_profile(mut self, profile: PerfilCusto) -> Reply<T> {
        self.envelope.data.meta.perfil_custo = Some(profile);
        self
    }

    /// The meta of an SQL answer: its columns, row count and whether rows were cut.
    pub fn with_sql_result(mut self, columns: Vec<SqlColumn>, row_count: usize, truncated: bool) -> Reply<T> {
        let meta = &mut self.envelope.data.meta;
        (meta.columns, meta.row_count, meta.truncated) = (Some(columns), Some(row_count as u64), Some(truncated));
        self
    }
}

impl<T: Serialize> IntoResponse for Reply<T> {
    fn into_response(self) -> Response {
        let mut res = Json(self.envelope).into_response();
        if let Ok(v) = HeaderValue::from_str(&self.version) {
            res.headers_mut().insert(DATASET_VERSION, v);
        }
        res
    }
}

/// JSON written before the envelope: shared (serialised once per snapshot) or per request.
pub enum RawJson {
    Shared(Arc<str>),
    Owned(Vec<u8>),
}

impl RawJson {
    fn as_bytes(&self) -> &[u8] {
        match self {
            RawJson::Shared(s) => s.as_bytes(),
            RawJson::Owned(v) => v,
        }
    }
}

/// A successful answer whose `data.data` is already JSON (written from the table's columns, or
/// serialised once per snapshot): only the meta is serialised here.
pub struct RawReply {
    data: RawJson,
    meta: Meta,
    version: String,
}

impl RawReply {
    /// The answer of request `request_id` around JSON serialised once per snapshot of `version`.
    pub fn shared(data: Arc<str>, request_id: Uuid, version: String) -> RawReply {
        RawReply { data: RawJson::Shared(data), meta: Meta::new(request_id, None, None), version }
    }
}

impl IntoResponse for RawReply {
    fn into_response(self) -> Response {
        match self.data {
            // Large JSON kept for every request (a grouped ranking, tens of KB) goes out as it is
            // kept: the envelope's head, the kept bytes and the meta as three pieces of one body,
            // written together, with no copy of the kept part.
            RawJson::Shared(data) if data.len() >= SHARED_UNCOPIED_BYTES => {
                let mut tail = Vec::with_capacity(160);
                write_tail(&mut tail, &self.meta);
                let pieces = [Bytes::from_static(ENVELOPE_HEAD), Bytes::from_owner(Kept(data)), Bytes::from(tail)];
                json_response(axum::body::Body::new(Pieces::new(pieces)), &self.version)
            }
            data => raw_response(data.as_bytes(), &self.meta, &self.version),
        }
    }
}

/// Shared JSON of at least this many bytes is written without copying it (see
/// [`RawReply::into_response`]); smaller JSON is copied into one buffer with its envelope.
const SHARED_UNCOPIED_BYTES: usize = 16 * 1024;

/// The envelope up to `data.data`'s value.
const ENVELOPE_HEAD: &[u8] = br#"{"success":true,"data":{"data":"#;

/// Kept JSON as the bytes of a body.
struct Kept(Arc<str>);

impl AsRef<[u8]> for Kept {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// A body of a few pieces, of known length (so it is sent with `Content-Length`).
struct Pieces {
    pieces: std::collections::VecDeque<Bytes>,
    left: u64,
}

impl Pieces {
    fn new(pieces: impl IntoIterator<Item = Bytes>) -> Pieces {
        let pieces: std::collections::VecDeque<Bytes> = pieces.into_iter().filter(|p| !p.is_empty()).collect();
        let left = pieces.iter().map(|p| p.len() as u64).sum();
        Pieces { pieces, left }
    }
}

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        std::task::Poll::Ready(this.pieces.pop_front().map(|piece| {
            this.left -= piece.len() as u64;
            Ok(http_body::Frame::data(piece))
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.pieces.is_empty()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left)
    }
}

/// Writes the envelope after `data.data`'s value: `meta` as JSON (`{}` in the unlikely case it
/// cannot be written) and the closing braces.
fn write_tail(out: &mut Vec<u8>, meta: &Meta) {
    out.extend_from_slice(br#","meta":"#);
    let at = out.len();
    if serde_json::to_writer(&mut *out, meta).is_err() {
        out.truncate(at);
        out.extend_from_slice(b"{}");
    }
    out.extend_from_slice(b"}}");
}

/// A JSON answer with the dataset version header.
fn json_response(body: axum::body::Body, version: &str) -> Response {
    let mut res =
        ([(axum::http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response();
    if let Ok(v) = HeaderValue::from_str(version) {
        res.headers_mut().insert(DATASET_VERSION, v);
    }
    res
}

impl RawReply {
    /// The answer of request `request_id` around `data` (JSON serialised once per snapshot of
    /// `version`), written without holding a reference to it: the same response as
    /// [`RawReply::shared`] gives.
    pub fn respond(data: &str, request_id: Uuid, version: &str) -> Response {
        raw_response(data.as_bytes(), &Meta::new(request_id, None, None), version)
    }
}

/// The envelope around JSON `data` with `meta`, and the dataset version header.
fn raw_response(data: &[u8], meta: &Meta, version: &str) -> Response {
    // Room for the envelope's keys and a meta without filters or pagination.
    let mut body = Vec::with_capacity(data.len() + 160);
    body.extend_from_slice(ENVELOPE_HEAD);
    body.extend_from_slice(data);
    write_tail(&mut body, meta);
    json_response(axum::body::Body::from(body), version)
}

/// What a handler needs: the snapshot it works on (fixed for the whole request) and its id.
pub struct Ctx {
    pub snapshot: Arc<Snapshot>,
    pub request_id: Uuid,
}

impl FromRequestParts<AppState> for Ctx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let snapshot = state.store().current().ok_or(ApiError::Unavailable)?;
        let request_id =
            parts.extensions.get::<RequestId>().map_or_else(crate::http::contract::state::request_id, |r| r.0);
        Ok(Ctx { snapshot, request_id })
    }
}

/// What an answer's envelope and headers name: the request and the dataset version answered.
pub struct Answering<'a> {
    pub request_id: Uuid,
    pub version: &'a str,
}

impl Answering<'_> {
    fn meta(&self, filters: Option<Map<String, Value>>, pagination: Option<Pagination>) -> Meta {
        Meta::new(self.request_id, filters, pagination)
    }

    /// The envelope around `data`, with optional filters_applied and pagination.
    pub fn reply<T: Serialize>(
        &self,
        data: T,
        filters: Option<Map<String, Value>>,
        pagination: Option<Pagination>,
    ) -> Reply<T> {
        Reply {
            envelope: Envelope { success: true, data: Payload { data, meta: self.meta(filters, pagination) } },
            version: self.version.to_string(),
        }
    }

    /// The envelope around JSON written from the table's columns.
    pub fn reply_json(
        &self,
        data: Vec<u8>,
        filters: Option<Map<String, Value>>,
        pagination: Option<Pagination>,
    ) -> RawReply {
        RawReply { data: RawJson::Owned(data), meta: self.meta(filters, pagination), version: self.version.to_string() }
    }
}

/// A handler's context that answers in the envelope.
pub trait Answers {
    fn answering(&self) -> Answering<'_>;
}

impl Answers for Ctx {
    fn answering(&self) -> Answering<'_> {
        Answering { request_id: self.request_id, version: &self.snapshot.info.version }
    }
}

/// What the SQL door's handlers need: the version analysts' SQL reads (the one serving, or the
/// one the first load has accepted while it builds the API's table) and the request's id.
pub struct SqlCtx {
    pub version: SqlVersion,
    pub request_id: Uuid,
}

impl FromRequestParts<AppState> for SqlCtx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let version = crate::engine::sql::query::current(state.store()).ok_or(ApiError::Unavailable)?;
        let request_id =
            parts.extensions.get::<RequestId>().map_or_else(crate::http::contract::state::request_id, |r| r.0);
        Ok(SqlCtx { version, request_id })
    }
}

impl Answers for SqlCtx {
    fn answering(&self) -> Answering<'_> {
        Answering { request_id: self.request_id, version: &self.version.info().version }
    }
}

impl Ctx {
    /// Runs CPU-bound engine work off the async executor, on this request's snapshot.
    pub async fn run<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Snapshot) -> polars::prelude::PolarsResult<T> + Send + 'static,
    {
        let snapshot = Arc::clone(&self.snapshot);
        tokio::task::spawn_blocking(move || work(&snapshot))
            .await
            .map_err(ApiError::internal)?
            .map_err(ApiError::internal)
    }

    /// The envelope around `data`, with optional filters_applied and pagination.
    pub fn reply<T: Serialize>(
        &self,
        data: T,
        filters: Option<Map<String, Value>>,
        pagination: Option<Pagination>,
    ) -> Reply<T> {
        self.answering().reply(data, filters, pagination)
    }
}

impl Ctx {
    /// The envelope around JSON serialised beforehand (a dataset-only answer).
    pub fn reply_raw(&self, data: Arc<str>) -> RawReply {
        RawReply::shared(data, self.request_id, self.snapshot.info.version.clone())
    }

    /// The envelope around JSON kept for the question (written once per dataset version), with
    /// this request's filters_applied.
    pub fn reply_kept(&self, data: Arc<str>, filters: Option<Map<String, Value>>) -> RawReply {
        RawReply {
            data: RawJson::Shared(data),
            meta: self.answering().meta(filters, None),
            version: self.snapshot.info.version.clone(),
        }
    }

    /// The envelope around JSON written from the table's columns.
    pub fn reply_json(
        &self,
        data: Vec<u8>,
        filters: Option<Map<String, Value>>,
        pagination: Option<Pagination>,
    ) -> RawReply {
        self.answering().reply_json(data, filters, pagination)
    }
}

/// `data.data` of listings: `{"items": [...]}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Items<T> {
    pub items: Vec<T>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body's exact length as announced (hyper's `Content-Length`), and its bytes.
    fn sent(reply: RawReply) -> (Option<u64>, Vec<u8>) {
        let response = reply.into_response();
        let length = http_body::Body::size_hint(response.body()).exact();
        let body = futures::executor::block_on(axum::body::to_bytes(response.into_body(), usize::MAX)).unwrap();
        (length, body.to_vec())
    }

    /// Large kept JSON goes out in pieces, without a copy, as the same bytes and length as the
    /// small JSON copied into one buffer.
    #[test]
    fn kept_json_is_the_same_envelope_whether_copied_or_not() {
        let id = Uuid::new_v4();
        for items in [3, 2_000] {
            let data = format!("[{}]", vec![r#"{"a":"ç"}"#; items].join(","));
            assert_eq!(data.len() >= SHARED_UNCOPIED_BYTES, items > 3);
            let (length, body) = sent(RawReply::shared(Arc::from(data.as_str()), id, "v1".into()));
            let (_, copied) = sent(RawReply {
                data: RawJson::Owned(data.clone().into_bytes()),
                ..RawReply::shared(Arc::from(""), id, "v1".into())
            });
            let value: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(value["data"]["data"].as_array().map(Vec::len), Some(items));
            assert_eq!(value["data"]["meta"]["request_id"], id.to_string());
            assert_eq!(length, Some(body.len() as u64), "sent with its exact length");
            let strip = |b: &[u8]| {
                let v: Value = serde_json::from_slice(b).unwrap();
                (v["success"].clone(), v["data"]["data"].clone(), v["data"]["meta"]["request_id"].clone())
            };
            assert_eq!(strip(&body), strip(&copied));
        }
    }
}
