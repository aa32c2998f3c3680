//! The PostgreSQL front door (`--pg-bind`): analysts' SQL over the PostgreSQL protocol v3, so
//! `psql`, psycopg, DBeaver and BI tools connect. It sits beside `http/` and shares with it only
//! what belongs to the process and the engine: the credentials and quotas (user = API key,
//! password = its secret, proven with SCRAM-SHA-256), the dataset store, and the SQL runner with
//! its sandbox and limits. The protocol itself is `pgwire`'s.
//!
//! TLS (`--pg-tls-cert`, `--pg-tls-key`) is in `tls`, the logins (SCRAM-SHA-256) in `auth`.
//!
//! Errors carry SQLSTATEs: 28P01 bad credentials, 42601 syntax, 42P01 unknown table, 42703
//! unknown column or another invalid query, 42501 a forbidden statement or function, 57014 a
//! query stopped at a limit, 53300 every query slot busy, 55000 no dataset loaded.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::stream;
use pgwire::api::auth::DefaultServerParameterProvider;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{
    DataRowEncoder, DescribePortalResponse, DescribeStatementResponse, FieldInfo, QueryResponse, Response, Tag,
};
use pgwire::api::stmt::{NoopQueryParser, StoredStatement};
use pgwire::api::{ClientInfo, PgWireServerHandlers, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use polars::prelude::*;
use tokio::net::TcpListener;

mod auth;
mod copy;
mod places;
mod session;
pub mod tls;

use crate::engine::sql::names::wire_name;
use crate::engine::sql::sandbox::Refused;
use crate::engine::sql::worker::{Limit, Outcome, Runner};
use crate::engine::store::Store;
use crate::process::keys::KeyStore;

/// The PostgreSQL version the door reports (`server_version`, `SHOW server_version`): the
/// dialect and answers it follows, as a number clients parse.
pub const SERVER_VERSION: &str = "16.0";
/// The same as `server_version_num`.
pub const SERVER_VERSION_NUM: &str = "160000";

/// What the PostgreSQL front door shares with the rest of the process.
#[derive(Clone)]
pub struct PgState {
    pub store: Arc<Store>,
    pub keys: Arc<KeyStore>,
    pub sql: Arc<Runner>,
    /// Connections open at once at most (`--pg-max-connections`).
    pub max_connections: usize,
    /// Time a connection has to authenticate (`--header-timeout-ms`).
    pub startup_timeout: std::time::Duration,
    /// TLS, when `--pg-tls-cert` and `--pg-tls-key` are given.
    pub tls: Option<Arc<tls::Tls>>,
}

fn error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new("ERROR".to_owned(), code.to_owned(), message.into())))
}

/// The queries of one connection.
pub struct Backend {
    state: PgState,
    parser: Arc<NoopQueryParser>,
    /// The last result computed to describe a portal, reused by its execution.
    described: Mutex<Option<(String, DataFrame)>>,
    /// The types inferred for statements' untyped parameters (asyncpg, node-postgres send
    /// none), by statement text: the types their values are bound with.
    inferred: Mutex<std::collections::HashMap<String, Vec<Type>>>,
    /// The session's settings (`SET`, `SHOW`), made from the start-up message on first use.
    settings: Mutex<Option<session::Settings>>,
    /// The dataset version a transaction reads (from `BEGIN` to `COMMIT`/`ROLLBACK`).
    pinned: Mutex<Option<crate::engine::sql::worker::SqlVersion>>,
    /// Open server-side cursors: each query's answer (within `--sql-max-rows`) and the rows
    /// fetched so far.
    cursors: Mutex<std::collections::HashMap<String, (DataFrame, usize)>>,
    /// Set by a cancel request for this connection (BackendKeyData); cleared when a query starts.
    cancel: Arc<std::sync::atomic::AtomicBool>,
    /// The process's cancel registry, and this connection's key in it once registered (at its
    /// first statement: the key is the BackendKeyData sent when it authenticated).
    cancels: Cancels,
    key: Mutex<Option<CancelKey>>,
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Some(key) = self.key.lock().unwrap_or_else(|e| e.into_inner()).take() {
            self.cancels.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
        }
    }
}

/// A connection's process id and secret key (BackendKeyData), as a cancel request names it.
type CancelKey = (i32, Vec<u8>);

/// The cancel flags of the open connections, by their keys.
type Cancels = Arc<Mutex<std::collections::HashMap<CancelKey, Arc<std::sync::atomic::AtomicBool>>>>;

fn key_bytes(secret: &pgwire::messages::startup::SecretKey) -> Vec<u8> {
    match secret {
        pgwire::messages::startup::SecretKey::I32(k) => k.to_be_bytes().to_vec(),
        pgwire::messages::startup::SecretKey::Bytes(b) => b.to_vec(),
    }
}

/// Answers a CancelRequest: the named connection's running query stops (57014).
struct CancelRequests(Cancels);

#[async_trait]
impl pgwire::api::cancel::CancelHandler for CancelRequests {
    async fn on_cancel_request(&self, request: pgwire::messages::cancel::CancelRequest) {
        let key = (request.pid, key_bytes(&request.secret_key));
        if let Some(flag) = self.0.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// A column's PostgreSQL type.
fn pg_type(dtype: &DataType) -> Type {
    match dtype {
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => Type::INT2,
        DataType::Int32 | DataType::UInt16 => Type::INT4,
        d if d.is_integer() => Type::INT8,
        d if d.is_float() || d.is_decimal() => Type::FLOAT8,
        DataType::Boolean => Type::BOOL,
        DataType::Date => Type::DATE,
        DataType::Datetime(_, _) => Type::TIMESTAMP,
        _ => Type::TEXT,
    }
}

fn fields(frame: &DataFrame, format: &Format) -> Vec<FieldInfo> {
    frame
        .columns()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            FieldInfo::new(wire_name(c.name()).to_string(), None, None, pg_type(c.dtype()), format.format_for(i))
        })
        .collect()
}

/// The columns of a result cast to the types their PostgreSQL types are encoded from.
fn typed_columns(frame: &DataFrame) -> PgWireResult<Vec<Column>> {
    let cast = |c: &Column| -> PolarsResult<Column> {
        match pg_type(c.dtype()) {
            Type::INT2 => c.cast(&DataType::Int16),
            Type::INT4 => c.cast(&DataType::Int32),
            Type::INT8 => c.cast(&DataType::Int64),
            Type::FLOAT8 => c.cast(&DataType::Float64),
            Type::TEXT if !c.dtype().is_string() => c.cast(&DataType::String),
            _ => Ok(c.clone()),
        }
    };
    frame.columns().iter().map(cast).collect::<PolarsResult<_>>().map_err(|e| error("XX000", e.to_string()))
}

/// Whether each field of `schema` is written as text with the shortest exact digits (PostgreSQL's
/// `extra_float_digits` of 1 and more, its default): its doubles are then written as PostgreSQL's
/// `float8out` writes them (`2026`, `1e+20`, `Infinity`), not as the protocol crate does (`2026.0`,
/// `1e20`, `inf`).
fn postgres_float_text(schema: &[FieldInfo]) -> Vec<bool> {
    use pgwire::api::results::FieldFormat;
    schema.iter().map(|f| f.format() == FieldFormat::Text && f.format_options().extra_float_digits >= 1).collect()
}

/// Encodes one value of a result with `$encoder` (a row's or a COPY's encoder); `$float_text`:
/// a double is written as PostgreSQL writes it in text (see [`postgres_float_text`]).
macro_rules! encode_value {
    ($encoder:expr, $value:expr, $float_text:expr) => {
        match $value {
            AnyValue::Null => $encoder.encode_field(&None::<i64>)?,
            AnyValue::Int16(x) => $encoder.encode_field(&x)?,
            AnyValue::Int32(x) => $encoder.encode_field(&x)?,
            AnyValue::Int64(x) => $encoder.encode_field(&x)?,
            AnyValue::Float64(x) if $float_text => {
                $encoder.encode_field(&crate::engine::sql::postgres::float_text(x).as_str())?
            }
            AnyValue::Float64(x) => $encoder.encode_field(&x)?,
            AnyValue::Boolean(x) => $encoder.encode_field(&x)?,
            AnyValue::String(s) => $encoder.encode_field(&s)?,
            AnyValue::StringOwned(ref s) => $encoder.encode_field(&s.as_str())?,
            AnyValue::Date(days) => {
                let date = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)
                    .and_then(|d| d.checked_add_signed(chrono::Duration::days(days as i64)));
                $encoder.encode_field(&date)?
            }
            AnyValue::Datetime(t, unit, _) => {
                let micros = match unit {
                    TimeUnit::Nanoseconds => t / 1_000,
                    TimeUnit::Microseconds => t,
                    TimeUnit::Milliseconds => t * 1_000,
                };
                let ts = chrono::DateTime::from_timestamp_micros(micros).map(|d| d.naive_utc());
                $encoder.encode_field(&ts)?
            }
            other => $encoder.encode_field(&other.to_string())?,
        }
    };
}

/// The rows of a result, encoded for `schema`.
fn encode(
    frame: &DataFrame,
    schema: Arc<Vec<FieldInfo>>,
) -> PgWireResult<Vec<PgWireResult<pgwire::messages::data::DataRow>>> {
    let columns = typed_columns(frame)?;
    let float_text = postgres_float_text(&schema);
    let mut encoder = DataRowEncoder::new(schema);
    let mut rows = Vec::with_capacity(frame.height());
    for i in 0..frame.height() {
        for (c, &text) in columns.iter().zip(&float_text) {
            encode_value!(encoder, c.get(i).unwrap_or(AnyValue::Null), text);
        }
        rows.push(Ok(encoder.take_row()));
    }
    Ok(rows)
}

/// A result copied to the client (`COPY … TO STDOUT`) in `format`.
fn copy_out(frame: &DataFrame, format: &copy::Format) -> PgWireResult<Response> {
    use pgwire::api::results::{CopyCsvOptions, CopyEncoder, CopyResponse, CopyTextOptions, FieldFormat};
    let columns = typed_columns(frame)?;
    let field_format = if *format == copy::Format::Binary { FieldFormat::Binary } else { FieldFormat::Text };
    let schema: Arc<Vec<FieldInfo>> = Arc::new(
        frame
            .columns()
            .iter()
            .map(|c| FieldInfo::new(wire_name(c.name()).to_string(), None, None, pg_type(c.dtype()), field_format))
            .collect(),
    );
    let mut header = None;
    let (code, mut encoder) = match format {
        copy::Format::Binary => (1, CopyEncoder::new_binary(Arc::clone(&schema))),
        copy::Format::Text { delimiter, null } => (
            0,
            CopyEncoder::new_text(
                Arc::clone(&schema),
                CopyTextOptions { delimiter: delimiter.to_string().into(), null_string: null.as_str().into() },
            ),
        ),
        copy::Format::Csv { delimiter, null, quote, header: with_header } => {
            if *with_header {
                let q = quote.to_string();
                let names: Vec<String> = schema
                    .iter()
                    .map(|f| {
                        let name = wire_name(f.name());
                        if name.contains(*delimiter) || name.contains(*quote) || name.contains('\n') {
                            format!("{q}{}{q}", name.replace(&q, &format!("{q}{q}")))
                        } else {
                            name.to_string()
                        }
                    })
                    .collect();
                header = Some(format!("{}\n", names.join(&delimiter.to_string())).into_bytes());
            }
            let options = CopyCsvOptions {
                delimiter: delimiter.to_string().into(),
                quote: quote.to_string().into(),
                escape: quote.to_string().into(),
                null_string: null.as_str().into(),
                force_quote: Vec::new(),
            };
            (0, CopyEncoder::new_csv(Arc::clone(&schema), options))
        }
    };
    let mut chunks = Vec::with_capacity(frame.height() + 1);
    let float_text = postgres_float_text(&schema);
    for i in 0..frame.height() {
        for (c, &text) in columns.iter().zip(&float_text) {
            encode_value!(encoder, c.get(i).unwrap_or(AnyValue::Null), text);
        }
        let mut data = encoder.take_copy();
        if let Some(h) = header.take() {
            // The header goes with the first row (the command's row count counts messages).
            data.data = [h, data.data.to_vec()].concat().into();
        }
        chunks.push(Ok(data));
    }
    if let Some(h) = header {
        chunks.push(Ok(pgwire::messages::copy::CopyData::new(h.into())));
    }
    Ok(Response::CopyOut(CopyResponse::new(code, schema.len(), stream::iter(chunks))))
}

impl Backend {
    fn new(state: PgState, cancels: Cancels) -> Backend {
        Backend {
            state,
            parser: Arc::new(NoopQueryParser::new()),
            described: Mutex::new(None),
            inferred: Mutex::new(std::collections::HashMap::new()),
            settings: Mutex::new(None),
            pinned: Mutex::new(None),
            cursors: Mutex::new(std::collections::HashMap::new()),
            cancel: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            cancels,
            key: Mutex::new(None),
        }
    }

    /// Registers the connection for cancel requests under the key it was given (once).
    fn register<C: ClientInfo>(&self, client: &C) {
        let mut key = self.key.lock().unwrap_or_else(|e| e.into_inner());
        if key.is_none() {
            let (pid, secret) = client.pid_and_secret_key();
            let k = (pid, key_bytes(&secret));
            self.cancels.lock().unwrap_or_else(|e| e.into_inner()).insert(k.clone(), Arc::clone(&self.cancel));
            *key = Some(k);
        }
    }

    /// Checks and runs one statement, counted in the metrics and logged like a request.
    async fn run(&self, sql: &str, user: Option<String>) -> PgWireResult<DataFrame> {
        let started = std::time::Instant::now();
        let result = self.run_unlogged(sql, user.as_deref().unwrap_or_default(), false).await;
        let outcome = match &result {
            Ok(_) => "ok",
            Err(PgWireError::UserError(e)) if e.code.starts_with("42") => {
                if e.code == "42501" {
                    "refused"
                } else {
                    "invalid"
                }
            }
            Err(PgWireError::UserError(e)) if e.code == "57014" => "stopped",
            Err(_) => "error",
        };
        crate::process::metrics::pg_query(outcome);
        let latency_ms = (started.elapsed().as_secs_f64() * 1_000_000.0).round() / 1000.0;
        let key = user.unwrap_or_default();
        tracing::info!(%key, result = outcome, latency_ms, "postgres query");
        result
    }

    /// Checks and runs one statement (off the async workers: it may wait for its worker).
    async fn run_unlogged(&self, sql: &str, user: &str, describe: bool) -> PgWireResult<DataFrame> {
        use crate::engine::sql::query::{self, Refusal, Statement};
        let pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let cancel = Arc::clone(&self.cancel);
        cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        let statement = Statement { sql, user, positional: true, describe };
        let answer = match query::version(&self.state.store, pinned) {
            Ok(version) => query::run_frame(&self.state.sql, version, statement, cancel).await,
            Err(refusal) => Err(refusal),
        };
        match answer {
            Ok((frame, _)) => Ok(frame),
            Err(Refusal::NoData) => {
                Err(error("55000", "nenhum conjunto de dados carregado; tente novamente em instantes"))
            }
            Err(Refusal::Refused(r)) => Err(match r {
                Refused::Syntax(m) => error("42601", format!("consulta SQL inválida: {m}")),
                Refused::Forbidden(m) => error("42501", format!("consulta SQL não permitida: {m}")),
                Refused::UnknownTable(m) => error("42P01", format!("consulta SQL inválida: {m}")),
                Refused::Unsupported(m) => error("0A000", format!("consulta SQL não suportada: {m}")),
            }),
            Err(Refusal::Outcome(outcome)) => Err(match outcome {
                Outcome::Rows { .. } => error("XX000", "erro interno do servidor"),
                Outcome::Invalid(m) => error(sqlstate_of(&m), format!("consulta SQL inválida: {m}")),
                // 57014 at the time limit, 53200 at the memory budget (API-CONTRACT §7).
                Outcome::TooExpensive(Limit::Time, m) => error("57014", format!("consulta interrompida: {m}")),
                Outcome::TooExpensive(Limit::Memory, m) => error("53200", format!("consulta interrompida: {m}")),
                Outcome::Busy => error("53300", "todas as vagas de consulta estão ocupadas; tente em 1 s"),
                Outcome::Cancelled => error("57014", "canceling statement due to user request (consulta cancelada)"),
                Outcome::Failed(m) => {
                    tracing::error!(error = %m, "SQL worker failed");
                    error("XX000", "erro interno do servidor")
                }
            }),
        }
    }

    /// Describes a statement with parameters without running it: its columns (a frame with no
    /// rows) and its parameters' types, declared or else inferred (and kept for its binds).
    async fn describe_parameters(
        &self,
        stmt: &StoredStatement<String>,
        user: &str,
    ) -> PgWireResult<(DataFrame, Vec<Type>)> {
        let frame = self.run_unlogged(&stmt.statement, user, true).await?;
        let (mut inferred, mut outputs) = (Vec::new(), Vec::new());
        for c in frame.columns() {
            match c.name().strip_prefix(crate::engine::sql::engine::PARAMETER) {
                Some(_) => inferred.push(pg_type(c.dtype())),
                None => outputs.push(c.clone()),
            }
        }
        let count = inferred.len().max(stmt.parameter_types.len());
        let types: Vec<Type> = (0..count)
            .map(|i| match stmt.parameter_types.get(i).cloned().flatten() {
                Some(t) if t != Type::UNKNOWN => t,
                _ => {
                    cast_type(&stmt.statement, i + 1).unwrap_or_else(|| inferred.get(i).cloned().unwrap_or(Type::TEXT))
                }
            })
            .collect();
        self.inferred.lock().unwrap_or_else(|e| e.into_inner()).insert(stmt.statement.clone(), types.clone());
        let frame = DataFrame::new(0, outputs).map_err(|e| error("XX000", e.to_string()))?;
        Ok((frame, types))
    }

    /// A portal's statement with its parameters' values in place.
    fn bound(&self, portal: &Portal<String>) -> PgWireResult<String> {
        let inferred =
            self.inferred.lock().unwrap_or_else(|e| e.into_inner()).get(&portal.statement.statement).cloned();
        bound(portal, inferred.as_deref().unwrap_or_default())
    }

    /// Answers a session statement (see [`session`]).
    fn session<C: ClientInfo>(
        &self,
        client: &C,
        statement: session::Statement,
        format: &Format,
    ) -> PgWireResult<Response> {
        use session::Statement as S;
        let mut guard = self.settings.lock().unwrap_or_else(|e| e.into_inner());
        let settings = guard.get_or_insert_with(|| session::Settings::with_startup(client.metadata()));
        let execution = |tag: &str| Ok(Response::Execution(Tag::new(tag)));
        match statement {
            S::Begin => {
                let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
                if pinned.is_none() {
                    *pinned = crate::engine::sql::query::current(&self.state.store);
                }
                Ok(Response::TransactionStart(Tag::new("BEGIN")))
            }
            S::Commit | S::Rollback => {
                *self.pinned.lock().unwrap_or_else(|e| e.into_inner()) = None;
                // Cursors end with their transaction (psycopg's named cursors are WITHOUT HOLD).
                self.cursors.lock().unwrap_or_else(|e| e.into_inner()).clear();
                let tag = if statement == S::Commit { "COMMIT" } else { "ROLLBACK" };
                Ok(Response::TransactionEnd(Tag::new(tag)))
            }
            S::Set(Some((name, value))) => {
                settings.set(name, value);
                execution("SET")
            }
            S::Set(None) => execution("SET"),
            S::Reset(name) => {
                settings.reset(name.as_deref());
                execution("RESET")
            }
            S::Show(Some(name)) => match settings.get(&name) {
                Some(value) => text_rows(&[name.as_str()], vec![vec![value]], format),
                None => Err(error("42704", format!("unrecognized configuration parameter \"{name}\""))),
            },
            S::Show(None) => {
                let rows = settings.all().into_iter().map(|(n, v, d)| vec![n, v, d]).collect();
                text_rows(&["name", "setting", "description"], rows, format)
            }
            S::Discard => {
                settings.reset(None);
                self.cursors.lock().unwrap_or_else(|e| e.into_inner()).clear();
                *self.pinned.lock().unwrap_or_else(|e| e.into_inner()) = None;
                execution("DISCARD ALL")
            }
            S::Deallocate => execution("DEALLOCATE"),
            S::Savepoint(tag) => execution(tag),
        }
    }

    /// Answers a cursor statement (see [`session::Cursor`]).
    async fn cursor(
        &self,
        statement: session::Cursor,
        user: Option<String>,
        format: &Format,
    ) -> PgWireResult<Response> {
        use session::Cursor as C;
        match statement {
            C::Declare { name, query } => {
                let frame = self.run(&query, user).await?;
                self.cursors.lock().unwrap_or_else(|e| e.into_inner()).insert(name, (frame, 0));
                Ok(Response::Execution(Tag::new("DECLARE CURSOR")))
            }
            C::Fetch { name, count, moves } => {
                let mut cursors = self.cursors.lock().unwrap_or_else(|e| e.into_inner());
                let Some((frame, at)) = cursors.get_mut(&name) else {
                    return Err(error("34000", format!("cursor \"{name}\" does not exist")));
                };
                let start = (*at).min(frame.height());
                let n = count.unwrap_or(usize::MAX).min(frame.height() - start);
                *at = start + n;
                if moves {
                    return Ok(Response::Execution(Tag::new("MOVE").with_rows(n)));
                }
                let rows = frame.slice(start as i64, n);
                drop(cursors);
                let mut response = match Backend::response(&rows, format)? {
                    Response::Query(q) => q,
                    other => return Ok(other),
                };
                response.set_command_tag("FETCH");
                Ok(Response::Query(response))
            }
            C::Close(name) => {
                let mut cursors = self.cursors.lock().unwrap_or_else(|e| e.into_inner());
                match name {
                    None => cursors.clear(),
                    Some(n) if cursors.remove(&n).is_none() => {
                        return Err(error("34000", format!("cursor \"{n}\" does not exist")));
                    }
                    Some(_) => {}
                }
                Ok(Response::Execution(Tag::new("CLOSE CURSOR")))
            }
        }
    }

    /// The columns a cursor statement answers with: a FETCH's are its cursor's query's.
    fn cursor_fields(&self, cursor: &session::Cursor, format: &Format) -> Vec<FieldInfo> {
        match cursor {
            session::Cursor::Fetch { name, moves: false, .. } => {
                let cursors = self.cursors.lock().unwrap_or_else(|e| e.into_inner());
                cursors.get(name).map(|(frame, _)| fields(frame, format)).unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    fn response(frame: &DataFrame, format: &Format) -> PgWireResult<Response> {
        let schema = Arc::new(fields(frame, format));
        let rows = encode(frame, Arc::clone(&schema))?;
        Ok(Response::Query(QueryResponse::new(schema, stream::iter(rows))))
    }
}

/// The SQLSTATE of the engine's reason for refusing a query: an unknown column (42703), a
/// function or operator that does not exist for those types (42883), a feature not supported
/// (0A000), a division by zero (22012), a value out of range or a bad cast (22003, 22P02), or
/// another error in the query (42601).
fn sqlstate_of(reason: &str) -> &'static str {
    let r = reason.to_lowercase();
    if r.contains("no field named") || r.contains("column") && r.contains("not found") {
        "42703"
    } else if r.starts_with("not supported") || r.contains("not implemented") || r.contains("unsupported") {
        "0A000"
    } else if r.contains("divide by zero") || r.contains("division by zero") {
        "22012"
    } else if r.contains("overflow") || r.contains("out of range") {
        "22003"
    } else if r.contains("cannot cast") || r.contains("cast error") {
        "22P02"
    } else if r.contains("function") || r.contains("does not exist") || r.contains("invalid function") {
        "42883"
    } else {
        "42601"
    }
}

/// The columns a session statement answers with (`SHOW`'s text columns; none for the others).
fn session_fields(statement: &session::Statement) -> Vec<FieldInfo> {
    let names: Vec<String> = match statement {
        session::Statement::Show(Some(name)) => vec![name.clone()],
        session::Statement::Show(None) => vec!["name".into(), "setting".into(), "description".into()],
        _ => vec![],
    };
    names
        .into_iter()
        .map(|n| FieldInfo::new(n, None, None, Type::TEXT, pgwire::api::results::FieldFormat::Text))
        .collect()
}

/// A result of text columns (the answers of `SHOW`).
fn text_rows(columns: &[&str], rows: Vec<Vec<String>>, format: &Format) -> PgWireResult<Response> {
    let schema = Arc::new(
        columns
            .iter()
            .enumerate()
            .map(|(i, c)| FieldInfo::new(c.to_string(), None, None, Type::TEXT, format.format_for(i)))
            .collect::<Vec<_>>(),
    );
    let mut encoded = Vec::with_capacity(rows.len());
    for row in rows {
        let mut encoder = DataRowEncoder::new(Arc::clone(&schema));
        for value in row {
            encoder.encode_field(&value)?;
        }
        encoded.push(Ok(encoder.take_row()));
    }
    Ok(Response::Query(QueryResponse::new(schema, stream::iter(encoded))))
}

/// The API key a connection logged in with (for the log line of its queries).
fn user_of<C: ClientInfo>(client: &C) -> Option<String> {
    client.metadata().get("user").cloned()
}

/// The type a statement casts its parameter `$n` to (`$1::int`), which DataFusion does not
/// infer from.
fn cast_type(sql: &str, n: usize) -> Option<Type> {
    let marker = format!("${n}::");
    let at = sql.find(&marker)? + marker.len();
    let word: String = sql[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    Some(match word.to_ascii_lowercase().as_str() {
        "int" | "int4" | "integer" => Type::INT4,
        "int2" | "smallint" => Type::INT2,
        "int8" | "bigint" => Type::INT8,
        "float8" | "float4" | "real" | "double" | "numeric" | "decimal" => Type::FLOAT8,
        "bool" | "boolean" => Type::BOOL,
        "date" => Type::DATE,
        "text" | "varchar" | "char" | "name" => Type::TEXT,
        _ => return None,
    })
}

/// Whether a statement has `$n` parameters (outside quotes).
fn has_parameters(sql: &str) -> bool {
    crate::engine::sql::query::has_parameters(sql)
}

/// A statement with its `$n` parameters replaced by SQL literals (see
/// [`crate::engine::sql::query::bind`]).
fn bind(sql: &str, params: &[Option<String>], numeric: &[bool]) -> PgWireResult<String> {
    crate::engine::sql::query::bind(sql, params, numeric).map_err(|m| error("42P02", m))
}

/// The bound statement of a portal.
fn bound(portal: &Portal<String>, inferred: &[Type]) -> PgWireResult<String> {
    let mut values = Vec::with_capacity(portal.parameter_len());
    let mut numeric = Vec::with_capacity(portal.parameter_len());
    for i in 0..portal.parameter_len() {
        let declared = match portal.statement.parameter_types.get(i).cloned().flatten() {
            Some(t) if t != Type::UNKNOWN => t,
            _ => inferred.get(i).cloned().unwrap_or(Type::UNKNOWN),
        };
        let (value, is_number) = match declared {
            Type::INT2 => (portal.parameter::<i16>(i, &declared)?.map(|v| v.to_string()), true),
            Type::INT4 => (portal.parameter::<i32>(i, &declared)?.map(|v| v.to_string()), true),
            Type::INT8 => (portal.parameter::<i64>(i, &declared)?.map(|v| v.to_string()), true),
            Type::FLOAT4 => (portal.parameter::<f32>(i, &declared)?.map(|v| v.to_string()), true),
            Type::FLOAT8 => (portal.parameter::<f64>(i, &declared)?.map(|v| v.to_string()), true),
            Type::BOOL => (portal.parameter::<bool>(i, &declared)?.map(|v| v.to_string()), true),
            _ => (portal.parameter::<String>(i, &Type::TEXT)?, false),
        };
        values.push(value);
        numeric.push(is_number);
    }
    bind(&portal.statement.statement, &values, &numeric)
}

/// What a statement is to this door: a session statement, a COPY to the client or a cursor
/// statement (each answered here), or a query for the engine.
enum Command {
    Session(session::Statement),
    Copy(copy::CopyOut),
    Cursor(session::Cursor),
    Query,
}

impl Command {
    /// Classifies `sql`; a COPY or cursor statement of a form not allowed is its error.
    fn of(sql: &str) -> PgWireResult<Command> {
        if let Some(statement) = session::parse(sql) {
            return Ok(Command::Session(statement));
        }
        if let Some(copy) = copy::parse(sql) {
            return copy.map(Command::Copy).map_err(|m| error("42501", format!("consulta SQL não permitida: {m}")));
        }
        if let Some(cursor) = session::parse_cursor(sql) {
            return cursor.map(Command::Cursor).map_err(|m| error("0A000", format!("consulta SQL não suportada: {m}")));
        }
        Ok(Command::Query)
    }
}

impl Backend {
    /// Answers a statement that is not a query for the engine; `None` for a query.
    async fn command<C: ClientInfo>(
        &self,
        client: &C,
        command: Command,
        format: &Format,
    ) -> PgWireResult<Option<Response>> {
        Ok(Some(match command {
            Command::Session(statement) => self.session(client, statement, format)?,
            Command::Copy(copy) => copy_out(&self.run(&copy.query, user_of(client)).await?, &copy.format)?,
            Command::Cursor(cursor) => self.cursor(cursor, user_of(client), format).await?,
            Command::Query => return Ok(None),
        }))
    }

    /// The columns a statement that is not a query for the engine answers with (`SHOW`'s, a
    /// FETCH's; none for the others); `None` for a query.
    fn command_fields(&self, command: &Command, format: &Format) -> Option<Vec<FieldInfo>> {
        match command {
            Command::Session(statement) => Some(session_fields(statement)),
            Command::Copy(_) => Some(Vec::new()),
            Command::Cursor(cursor) => Some(self.cursor_fields(cursor, format)),
            Command::Query => None,
        }
    }
}

impl Backend {
    /// One statement of a simple query.
    async fn simple_statement<C>(&self, client: &mut C, statement: &str) -> PgWireResult<Response>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        if let Some(response) = self.command(client, Command::of(statement)?, &Format::UnifiedText).await? {
            return Ok(response);
        }
        let frame = self.run(statement, user_of(client)).await?;
        Backend::response(&frame, &Format::UnifiedText)
    }
}

#[async_trait]
impl SimpleQueryHandler for Backend {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        self.register(client);
        // A simple query may hold several statements (psql -c "a; b", asyncpg's execute): each
        // answered in turn, up to the first that fails, as PostgreSQL does.
        let statements = session::split_statements(query);
        if statements.is_empty() {
            return Ok(vec![Response::EmptyQuery]);
        }
        let several = statements.len() > 1;
        let mut responses = Vec::with_capacity(statements.len());
        for statement in statements {
            match self.simple_statement(client, statement).await {
                Ok(response) => responses.push(response),
                Err(PgWireError::UserError(e)) if several => {
                    responses.push(Response::Error(e));
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(responses)
    }
}

#[async_trait]
impl ExtendedQueryHandler for Backend {
    type Statement = String;
    type QueryParser = NoopQueryParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        Arc::clone(&self.parser)
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo
            + pgwire::api::ClientPortalStore
            + futures::Sink<pgwire::messages::PgWireBackendMessage>
            + Unpin
            + Send
            + Sync,
        C::PortalStore: pgwire::api::store::PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as futures::Sink<pgwire::messages::PgWireBackendMessage>>::Error>,
    {
        self.register(client);
        let sql = self.bound(portal)?;
        let command = Command::of(&sql)?;
        // A cursor is also a portal of its name, which drivers describe (psycopg's named cursors
        // ask its columns so): described as a FETCH of all its rows.
        match &command {
            Command::Cursor(session::Cursor::Declare { name, .. }) => {
                let fetch = format!("FETCH ALL FROM \"{}\"", name.replace('"', "\"\""));
                let statement = Arc::new(StoredStatement::new(name.clone(), fetch, vec![]));
                let portal = Arc::new(Portal::new_cursor(name.clone(), statement));
                pgwire::api::store::PortalStore::put_portal(client.portal_store(), portal);
            }
            Command::Cursor(session::Cursor::Close(Some(name))) => {
                pgwire::api::store::PortalStore::rm_portal(client.portal_store(), name);
            }
            _ => {}
        }
        if let Some(response) = self.command(client, command, &portal.result_column_format).await? {
            return Ok(response);
        }
        let cached = {
            let mut d = self.described.lock().unwrap_or_else(|e| e.into_inner());
            match d.take() {
                Some((s, frame)) if s == sql => Some(frame),
                _ => None,
            }
        };
        let frame = match cached {
            Some(f) => f,
            None => self.run(&sql, user_of(client)).await?,
        };
        Backend::response(&frame, &portal.result_column_format)
    }

    async fn do_describe_statement<C>(
        &self,
        client: &mut C,
        stmt: &StoredStatement<Self::Statement>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let types: Vec<Type> = stmt.parameter_types.iter().map(|t| t.clone().unwrap_or(Type::UNKNOWN)).collect();
        if let Some(described) = self.command_fields(&Command::of(&stmt.statement)?, &Format::UnifiedText) {
            return Ok(DescribeStatementResponse::new(types, described));
        }
        if !types.is_empty() || has_parameters(&stmt.statement) {
            let user = user_of(client).unwrap_or_default();
            let (frame, types) = self.describe_parameters(stmt, &user).await?;
            return Ok(DescribeStatementResponse::new(types, fields(&frame, &Format::UnifiedText)));
        }
        let frame = self.run(&stmt.statement, user_of(client)).await?;
        let described = fields(&frame, &Format::UnifiedText);
        *self.described.lock().unwrap_or_else(|e| e.into_inner()) = Some((stmt.statement.clone(), frame));
        Ok(DescribeStatementResponse::new(types, described))
    }

    async fn do_describe_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let sql = self.bound(portal)?;
        if let Some(described) = self.command_fields(&Command::of(&sql)?, &portal.result_column_format) {
            return Ok(DescribePortalResponse::new(described));
        }
        let frame = self.run(&sql, user_of(client)).await?;
        let described = fields(&frame, &portal.result_column_format);
        *self.described.lock().unwrap_or_else(|e| e.into_inner()) = Some((sql, frame));
        Ok(DescribePortalResponse::new(described))
    }
}

/// One connection's handlers.
struct Handlers {
    backend: Arc<Backend>,
    login: auth::Login,
    cancels: Cancels,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::clone(&self.backend)
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        Arc::clone(&self.backend)
    }

    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        let mut parameters = DefaultServerParameterProvider::default();
        parameters.server_version = SERVER_VERSION.to_owned();
        parameters.default_transaction_read_only = true;
        parameters.is_superuser = false;
        parameters.time_zone = "UTC".to_owned();
        parameters.date_style = "ISO, MDY".to_owned();
        Arc::new(auth::Startup::new(self.login.clone(), parameters))
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        Arc::new(CancelRequests(Arc::clone(&self.cancels)))
    }
}

/// Serves the PostgreSQL protocol on `listener` until the process stops, with the places of
/// [`places`]: at most `max_connections` signed in (a login past them is answered 53300 and
/// closed) and at most as many in their start-up (the oldest closed to make room for a new one),
/// each of those closed when it has not signed in within `startup_timeout`.
pub async fn serve(listener: TcpListener, state: PgState) {
    let places = places::Places::new(state.max_connections);
    let cancels: Cancels = Arc::default();
    let logins = Arc::new(auth::Logins::new(Arc::clone(&state.keys), state.tls.as_deref()));
    loop {
        let (socket, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "PostgreSQL front door: accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let (admission, close) = places.arrive();
        let handlers = Handlers {
            backend: Arc::new(Backend::new(state.clone(), Arc::clone(&cancels))),
            login: auth::Login::new(Arc::clone(&logins), Arc::clone(&admission)),
            cancels: Arc::clone(&cancels),
        };
        let deadline = state.startup_timeout;
        let tls = state.tls.as_ref().map(|t| t.acceptor.clone());
        tokio::spawn(async move {
            let connection = pgwire::tokio::process_socket(socket, tls, handlers);
            tokio::pin!(connection);
            let start_up = tokio::time::sleep(deadline);
            tokio::pin!(start_up);
            // (A branch's condition is read when the select starts: a connection that signed in
            // while it waited is let go on, and the next round leaves out both branches.)
            let mut deadline_passed = false;
            let result = loop {
                tokio::select! {
                    r = &mut connection => break r,
                    () = &mut start_up, if !deadline_passed => {
                        deadline_passed = true;
                        if !admission.is_signed_in() {
                            tracing::debug!(%peer, "PostgreSQL connection closed: no sign-in within the deadline");
                            return;
                        }
                    }
                    () = close.notified(), if !admission.is_signed_in() => {
                        if !admission.is_signed_in() {
                            tracing::debug!(%peer, "PostgreSQL connection closed: newer connections needed its start-up place");
                            return;
                        }
                    }
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "PostgreSQL connection ended with an error");
            }
        });
    }
}
