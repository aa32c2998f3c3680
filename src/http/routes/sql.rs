//! `POST /sql` and `GET /sql`: an analyst's own read-only query over `catalog` and the views,
//! sandboxed and bounded (see `engine::sql`).

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::RawQuery;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use polars::prelude::*;
use serde::Deserialize;
use serde_json::{Map, Number, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::engine::sql::sandbox::{self, Refused};
use crate::engine::sql::worker::{offered_tables, Outcome};
use crate::http::contract::envelope::{Answers, SqlColumn, SqlCtx};
use crate::http::contract::error::ApiError;
use crate::http::contract::params::QueryParams;
use crate::http::contract::state::{AppState, MAX_BODY_BYTES};
use crate::http::formats::{self, tabular, Format};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(sql_get, sql_post))
}

/// Body of `POST /sql`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SqlRequest {
    /// One read-only statement in PostgreSQL's dialect.
    #[schema(example = "SELECT marca, ROUND(AVG(co2_fossil_g_km), 2) AS co2 FROM catalog GROUP BY marca ORDER BY co2")]
    pub sql: String,
}

/// Parameters of `GET /sql`.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct SqlQuery {
    /// One read-only statement in PostgreSQL's dialect (percent-encoded).
    #[param(example = "SELECT COUNT(*) AS n FROM catalog")]
    sql: String,
}

/// The column type of an SQL answer.
fn kind(dtype: &DataType) -> &'static str {
    match dtype {
        d if d.is_integer() => "integer",
        d if d.is_float() || d.is_decimal() => "float",
        DataType::Boolean => "boolean",
        DataType::Date => "date",
        DataType::Datetime(_, _) => "datetime",
        _ => "string",
    }
}

/// The result with every column in a type the answer formats carry (others as text).
fn plain(frame: DataFrame) -> PolarsResult<DataFrame> {
    let columns: Vec<Column> = frame
        .columns()
        .iter()
        .map(|c| match kind(c.dtype()) {
            "string" if !c.dtype().is_string() => c.cast(&DataType::String),
            "float" if c.dtype().is_decimal() => c.cast(&DataType::Float64),
            _ => Ok(c.clone()),
        })
        .collect::<PolarsResult<_>>()?;
    DataFrame::new_infer_height(columns)
}

fn json_value(v: AnyValue<'_>) -> Value {
    match v {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::Bool(b),
        AnyValue::Float64(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        AnyValue::Float32(f) => Number::from_f64(f as f64).map_or(Value::Null, Value::Number),
        AnyValue::Int8(i) => i.into(),
        AnyValue::Int16(i) => i.into(),
        AnyValue::Int32(i) => i.into(),
        AnyValue::Int64(i) => i.into(),
        AnyValue::UInt8(i) => i.into(),
        AnyValue::UInt16(i) => i.into(),
        AnyValue::UInt32(i) => i.into(),
        AnyValue::UInt64(i) => i.into(),
        AnyValue::String(s) => Value::String(s.to_string()),
        AnyValue::StringOwned(s) => Value::String(s.to_string()),
        other => Value::String(other.to_string().trim_matches('"').to_string()),
    }
}

/// The rows as JSON objects keyed by column name.
fn rows(frame: &DataFrame) -> Vec<Map<String, Value>> {
    let names: Vec<String> = frame.get_column_names().iter().map(|n| n.to_string()).collect();
    (0..frame.height())
        .map(|i| {
            let mut row = Map::with_capacity(names.len());
            for (name, column) in names.iter().zip(frame.columns()) {
                row.insert(name.clone(), column.get(i).map(json_value).unwrap_or(Value::Null));
            }
            row
        })
        .collect()
}

/// Runs a statement and answers it in `format`.
async fn answer(
    ctx: SqlCtx,
    uri: Uri,
    headers: &HeaderMap,
    format: Format,
    sql: String,
    state: AppState,
) -> Result<Response, ApiError> {
    let offered = offered_tables(&ctx.version.info().views);
    // `current_user` is the API key that asks (authenticated before the handler runs).
    let user = headers.get("x-api-key").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let checked = sandbox::check(&sql, &offered, user, false).map_err(|r| match r {
        Refused::Syntax(m) => ApiError::validation(format!("Consulta SQL inválida: {m}")),
        Refused::Forbidden(m) => ApiError::validation(format!("Consulta SQL não permitida: {m}")),
        Refused::UnknownTable(m) => ApiError::validation(format!("Consulta SQL inválida: {m}")),
        Refused::Unsupported(m) => ApiError::validation(format!("Consulta SQL não suportada: {m}")),
    })?;
    // The query runs on a thread of its own (not the blocking pool): it may wait for its worker
    // up to the time limit.
    let (done, result) = tokio::sync::oneshot::channel();
    let version = ctx.version.clone();
    let runner = std::sync::Arc::clone(state.sql());
    std::thread::Builder::new()
        .name("eco-sql".into())
        .spawn(move || {
            let _ = done.send(runner.run(&version, &checked.sql));
        })
        .map_err(ApiError::internal)?;
    let outcome = result.await.map_err(ApiError::internal)?;
    let (frame, truncated) = match outcome {
        Outcome::Rows { frame, truncated } => (plain(frame).map_err(ApiError::internal)?, truncated),
        Outcome::Invalid(m) => return Err(ApiError::validation(format!("Consulta SQL inválida: {m}"))),
        Outcome::TooExpensive(_, m) => return Err(ApiError::QueryTooExpensive(m)),
        Outcome::Busy => return Err(ApiError::Overloaded),
        Outcome::Failed(m) => return Err(ApiError::internal(m)),
        // Only the PostgreSQL door cancels a query.
        Outcome::Cancelled => return Err(ApiError::QueryTooExpensive("a consulta foi cancelada".into())),
    };
    let columns: Vec<SqlColumn> =
        frame.columns().iter().map(|c| SqlColumn { name: c.name().to_string(), kind: kind(c.dtype()) }).collect();
    let count = frame.height();
    if format == Format::Json {
        let mut res =
            ctx.answering().reply(rows(&frame), None, None).with_sql_result(columns, count, truncated).into_response();
        let h = res.headers_mut();
        h.insert(formats::TOTAL_COUNT, axum::http::HeaderValue::from(count as u64));
        h.insert("x-sql-truncated", axum::http::HeaderValue::from_static(if truncated { "true" } else { "false" }));
        return Ok(res);
    }
    let mut out = Vec::new();
    if format == Format::Ndjson {
        for row in rows(&frame) {
            serde_json::to_writer(&mut out, &row).map_err(ApiError::internal)?;
            out.push(b'\n');
        }
    } else {
        tabular::write_frame(&mut frame.clone(), format, &mut out).map_err(ApiError::internal)?;
    }
    let mut res = formats::list_reply(&ctx, &uri, format, out, None, None, count);
    res.headers_mut()
        .insert("x-sql-truncated", axum::http::HeaderValue::from_static(if truncated { "true" } else { "false" }));
    Ok(res)
}

/// An analyst's query, asked with GET.
///
/// Same as `POST /sql` with the statement in the `sql` parameter; a successful answer carries a
/// weak ETag of the dataset version and the statement.
#[utoipa::path(
    get,
    path = "/sql",
    tag = "sql",
    params(SqlQuery),
    responses(
        (status = 200, description = "The rows", body = crate::http::contract::envelope::Envelope<Vec<Object>>),
        (status = 400, description = "Not one read-only statement, a forbidden function or table function, an unknown table or column, a syntax error", body = crate::http::contract::error::Failure),
        (status = 422, description = "QUERY_TOO_EXPENSIVE: stopped at the time or memory limit", body = crate::http::contract::error::Failure),
    )
)]
pub async fn sql_get(
    ctx: SqlCtx,
    uri: Uri,
    headers: HeaderMap,
    axum::extract::State(state): axum::extract::State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &[&["sql"], formats::PARAM])?;
    let format = formats::negotiate(&params, &headers, formats::LIST)?;
    let sql = params.get("sql").ok_or_else(|| ApiError::validation("Parâmetro 'sql' é obrigatório"))?.to_string();
    answer(ctx, uri, &headers, format, sql, state).await
}

/// An analyst's own query: one read-only statement in PostgreSQL's dialect (run by Apache DataFusion) over `catalog` (the validated
/// export as loaded, with ids and `combustivel_fold`) and every view `queries/` creates
/// (`vw_metrics`, `vw_eco_score`, …).
///
/// `data.data` holds the rows as objects keyed by column name; `meta.columns` the columns with
/// their types (string, integer, float, boolean, date, datetime), `meta.row_count` and
/// `meta.truncated` (true when rows past the server's `--sql-max-rows` were cut). Anything but
/// one read-only query (CREATE, DROP, INSERT, COPY, SET, several statements), a function or
/// table function not on the allow-list (`read_parquet`, `read_csv`, …), an unknown table or
/// column, or a syntax error: 400 with the parser's reason. A query past `--sql-timeout-ms` or
/// the memory budget is stopped and answered 422 QUERY_TOO_EXPENSIVE; when every query slot is
/// busy, 503 with Retry-After. A dataset version is answered from the moment it serves; on a
/// first start, from the moment the load has accepted the export (checked, its views computed),
/// while the API still answers 503. Before that: 503 SERVICE_UNAVAILABLE.
#[utoipa::path(
    post,
    path = "/sql",
    tag = "sql",
    request_body(content = SqlRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The rows", body = crate::http::contract::envelope::Envelope<Vec<Object>>),
        (status = 400, description = "Malformed body; not one read-only statement, a forbidden function or table function, an unknown table or column, a syntax error", body = crate::http::contract::error::Failure),
        (status = 413, description = "Body larger than 16 KiB", body = crate::http::contract::error::Failure),
        (status = 415, description = "Content-Type is not application/json", body = crate::http::contract::error::Failure),
        (status = 422, description = "QUERY_TOO_EXPENSIVE: stopped at the time or memory limit", body = crate::http::contract::error::Failure),
    )
)]
pub async fn sql_post(
    ctx: SqlCtx,
    uri: Uri,
    headers: HeaderMap,
    axum::extract::State(state): axum::extract::State<AppState>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &[formats::PARAM])?;
    let format = formats::negotiate(&params, &headers, formats::LIST)?;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(ApiError::UnsupportedMediaType);
    }
    let body = body.map_err(|r| match r.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(MAX_BODY_BYTES),
        _ => ApiError::validation("Não foi possível ler o corpo da requisição"),
    })?;
    let request: SqlRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::validation(format!("Corpo da requisição deve ser {{\"sql\": \"...\"}}: {e}")))?;
    answer(ctx, uri, &headers, format, request.sql, state).await
}
