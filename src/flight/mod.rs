//! The Arrow Flight SQL front door (`--flight-bind`): analysts' SQL over Flight SQL (gRPC), the
//! protocol of the ADBC and JDBC/ODBC Flight SQL drivers, answered with Arrow record batches as
//! the SQL workers produce them (no row-by-row text). It sits beside `http/` and `pg/` and shares
//! with them only what belongs to the process and the engine: the credentials and quotas (a
//! basic-auth handshake answered with a bearer token, see [`auth`]), the dataset store, and the
//! SQL runner with its sandbox and limits (see `engine::sql::query`). The protocol is
//! `arrow-flight`'s Flight SQL server over tonic; catalog metadata is in [`metadata`].
//!
//! Errors carry gRPC codes: UNAUTHENTICATED for a bad pair or token, INVALID_ARGUMENT for a
//! syntax error, an unknown name or another invalid query, PERMISSION_DENIED for a statement or
//! function that writes or reads a file, DEADLINE_EXCEEDED and RESOURCE_EXHAUSTED for a query
//! stopped at the time limit or the memory budget (and a key over its quota), UNAVAILABLE while
//! no dataset is loaded or every query slot is busy; messages as the HTTP door's. A command,
//! ticket or action body that does not decode is INVALID_ARGUMENT (see [`checked`]).

pub mod auth;
mod checked;
mod metadata;

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionClosePreparedStatementRequest, ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult,
    CommandGetCatalogs, CommandGetDbSchemas, CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables,
    CommandGetXdbcTypeInfo, CommandPreparedStatementQuery, CommandStatementQuery, DoPutPreparedStatementResult,
    ProstMessageExt, SqlInfo, TicketStatementQuery,
};
use arrow_flight::{
    Action, FlightData, FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse, IpcMessage,
    SchemaAsIpc, Ticket,
};
use datafusion::arrow::array::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::ipc::convert::fb_to_schema;
use datafusion::arrow::ipc::reader::StreamDecoder;
use datafusion::arrow::ipc::root_as_message;
use datafusion::arrow::ipc::writer::IpcWriteOptions;
use datafusion::arrow::util::display::array_value_to_string;
use futures::{Stream, TryStreamExt};
use prost::bytes::Bytes;
use prost::Message;
use tokio::net::TcpListener;
use tonic::metadata::MetadataValue;
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tonic::{Request, Response, Status, Streaming};

use crate::engine::sql::engine::{in_messages, PARAMETER};
use crate::engine::sql::names::wire_name;
use crate::engine::sql::query::{self, Refusal, Statement};
use crate::engine::sql::sandbox::Refused;
use crate::engine::sql::worker::{BatchMessage, Limit, Outcome, Runner, Streaming as AnswerStream};
use crate::engine::store::Store;
use crate::process::keys::KeyStore;

/// How long an answer waits to be fetched (its ticket), and a prepared statement to be used
/// again, before it is dropped.
const KEPT: Duration = Duration::from_secs(10 * 60);

/// What the Flight SQL door shares with the rest of the process.
#[derive(Clone)]
pub struct FlightState {
    pub store: Arc<Store>,
    pub keys: Arc<KeyStore>,
    pub sql: Arc<Runner>,
    /// TLS, when `--flight-tls-cert` and `--flight-tls-key` are given.
    pub tls: Option<Tls>,
}

/// The door's TLS (rustls on ring, through tonic): the certificate chain and key, checked when
/// loaded.
#[derive(Clone)]
pub struct Tls(ServerTlsConfig);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

impl Tls {
    /// Reads a PEM certificate chain and its private key; an error that names the file and what
    /// is wrong when either cannot be read or they cannot be used together.
    pub fn load(cert: &std::path::Path, key: &std::path::Path) -> anyhow::Result<Tls> {
        use anyhow::Context;
        let cert_pem = std::fs::read(cert)
            .with_context(|| format!("cannot read the TLS certificate {} (--flight-tls-cert)", cert.display()))?;
        if !String::from_utf8_lossy(&cert_pem).contains("BEGIN CERTIFICATE") {
            anyhow::bail!("no certificate (BEGIN CERTIFICATE) in {} (--flight-tls-cert)", cert.display());
        }
        let key_pem = std::fs::read(key)
            .with_context(|| format!("cannot read the TLS private key {} (--flight-tls-key)", key.display()))?;
        let config = ServerTlsConfig::new().identity(Identity::from_pem(cert_pem, key_pem));
        // Building a server with it checks the pair now rather than at the first connection.
        Server::builder().tls_config(config.clone()).map_err(|e| {
            anyhow::anyhow!(
                "the TLS certificate {} and private key {} cannot be used together: {e}",
                cert.display(),
                key.display()
            )
        })?;
        Ok(Tls(config))
    }
}

/// A statement started for a ticket, its answer waiting to be fetched by the key that asked.
struct Answer {
    key: String,
    schema: SchemaRef,
    stream: AnswerStream,
}

/// A prepared statement: its text, its columns and parameters, and the values bound last.
struct Prepared {
    key: String,
    sql: String,
    parameters: SchemaRef,
    values: Option<(Vec<Option<String>>, Vec<bool>)>,
    used: Instant,
}

/// The Flight SQL service.
pub struct Door {
    state: FlightState,
    tokens: Arc<auth::Tokens>,
    answers: Mutex<HashMap<String, Answer>>,
    prepared: Mutex<HashMap<String, Prepared>>,
    tables: metadata::Tables,
}

type BoxedStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

fn internal(e: impl std::fmt::Display) -> Status {
    tracing::error!(error = %e, "Flight SQL door failed");
    Status::internal("Erro interno do servidor")
}

/// The status of a refused statement (messages as the HTTP door's), and its result label.
fn refusal_status(refusal: Refusal) -> (Status, &'static str) {
    match refusal {
        Refusal::NoData => {
            (Status::unavailable("Nenhum conjunto de dados carregado; tente novamente em instantes"), "error")
        }
        Refusal::Refused(r) => match r {
            Refused::Syntax(m) => (Status::invalid_argument(format!("Consulta SQL inválida: {m}")), "invalid"),
            Refused::Forbidden(m) => (Status::permission_denied(format!("Consulta SQL não permitida: {m}")), "refused"),
            Refused::UnknownTable(m) => (Status::invalid_argument(format!("Consulta SQL inválida: {m}")), "invalid"),
            Refused::Unsupported(m) => {
                (Status::invalid_argument(format!("Consulta SQL não suportada: {m}")), "invalid")
            }
        },
        Refusal::Outcome(outcome) => match outcome {
            Outcome::Invalid(m) => (Status::invalid_argument(format!("Consulta SQL inválida: {m}")), "invalid"),
            Outcome::TooExpensive(limit, m) => {
                let message = format!("Consulta interrompida: {m}");
                let status = match limit {
                    Limit::Time => Status::deadline_exceeded(message),
                    Limit::Memory => Status::resource_exhausted(message),
                };
                (status, "stopped")
            }
            Outcome::Busy => (
                Status::unavailable(
                    "Servidor sobrecarregado: todas as vagas de consulta SQL estão ocupadas; tente novamente em 1 s",
                ),
                "stopped",
            ),
            Outcome::Cancelled => (Status::cancelled("A consulta foi cancelada"), "stopped"),
            Outcome::Failed(m) => (internal(m), "error"),
            Outcome::Rows { .. } => (internal("unexpected rows"), "error"),
        },
    }
}

/// `schema` with its columns named as the client reads them (see [`wire_name`]).
fn for_wire(schema: &Schema) -> SchemaRef {
    Arc::new(Schema::new(
        schema.fields().iter().map(|f| f.as_ref().clone().with_name(wire_name(f.name()))).collect::<Vec<Field>>(),
    ))
}

/// The schema and batches of a worker's Arrow IPC stream (no copy: the batches' buffers are the
/// stream's), at most `max_rows` rows, columns named as the client reads them.
fn decode(answer: Bytes, max_rows: usize) -> Result<(SchemaRef, Vec<RecordBatch>), Status> {
    let mut buffer = Buffer::from(answer);
    let mut decoder = StreamDecoder::new();
    let mut batches = Vec::new();
    let mut rows = 0usize;
    while !buffer.is_empty() {
        if let Some(batch) = decoder.decode(&mut buffer).map_err(internal)? {
            let take = batch.num_rows().min(max_rows - rows);
            if take > 0 {
                batches.push(batch.slice(0, take));
                rows += take;
            }
        }
    }
    decoder.finish().map_err(internal)?;
    let schema = decoder.schema().ok_or_else(|| internal("the worker's answer has no schema"))?;
    let wire = for_wire(&schema);
    let batches = batches
        .into_iter()
        .map(|b| {
            let options = RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
            RecordBatch::try_new_with_options(Arc::clone(&wire), b.columns().to_vec(), &options)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(internal)?;
    Ok((wire, batches))
}

/// A streamed answer's schema (the worker's IPC message) with the names clients read.
fn streamed_schema(message: &[u8]) -> Result<SchemaRef, Status> {
    let message = root_as_message(message).map_err(internal)?;
    let schema = message.header_as_schema().ok_or_else(|| internal("the worker's answer has no schema"))?;
    Ok(for_wire(&fb_to_schema(schema)))
}

/// Flight messages a streamed answer holds at most while the client reads the ones before
/// (about [`MESSAGE_BYTES`] each): the worker waits for the client beyond that.
const IN_FLIGHT: usize = 4;

/// The Flight data of a started statement, as its worker computes it: the schema's message,
/// then each record batch's, handed on without decoding or copying it; an error (the time
/// limit, the memory budget) ends the stream. A client that stops reading stops the worker.
fn answer_stream(key: String, schema: SchemaRef, mut stream: AnswerStream) -> BoxedStream<FlightData> {
    let (send, receive) = tokio::sync::mpsc::channel::<Result<FlightData, Status>>(IN_FLIGHT);
    let first = FlightData::from(SchemaAsIpc::new(&schema, &IpcWriteOptions::default()));
    let spawned = std::thread::Builder::new().name("eco-flight-answer".into()).spawn(move || {
        if send.blocking_send(Ok(first)).is_err() {
            return;
        }
        let (mut rows, mut result) = (0usize, "ok");
        while let Some(next) = stream.next_batch() {
            let data = match next {
                Ok(BatchMessage { bytes, header }) => {
                    let bytes = Bytes::from(bytes);
                    if let Ok(message) = root_as_message(&bytes[header.clone()]) {
                        rows += message.header_as_record_batch().map_or(0, |b| b.length() as usize);
                    }
                    Ok(FlightData {
                        data_body: bytes.slice(header.end..),
                        data_header: bytes.slice(header),
                        ..Default::default()
                    })
                }
                Err(outcome) => {
                    let (status, outcome) = refusal_status(Refusal::Outcome(outcome));
                    result = outcome;
                    Err(status)
                }
            };
            let failed = data.is_err();
            if send.blocking_send(data).is_err() {
                result = "cancelled";
                break;
            }
            if failed {
                break;
            }
        }
        tracing::info!(%key, result, rows, "flight sql answer streamed");
    });
    if let Err(e) = spawned {
        return Box::pin(futures::stream::iter([Err(internal(format!("cannot stream the answer: {e}")))]));
    }
    Box::pin(futures::stream::unfold(receive, |mut receive| async move { receive.recv().await.map(|d| (d, receive)) }))
}

/// A schema as an IPC message (FlightInfo's and prepared statements' form).
fn schema_bytes(schema: &Schema) -> Result<prost::bytes::Bytes, Status> {
    let message: Result<IpcMessage, _> = SchemaAsIpc::new(schema, &IpcWriteOptions::default()).try_into();
    let IpcMessage(bytes) = message.map_err(internal)?;
    Ok(bytes)
}

/// A stream of Flight data for `batches`, in messages of about [`MESSAGE_BYTES`] (see
/// [`in_messages`]).
fn flight_stream(schema: SchemaRef, batches: Vec<RecordBatch>) -> BoxedStream<arrow_flight::FlightData> {
    let stream = FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .with_max_flight_data_size(usize::MAX)
        .build(futures::stream::iter(in_messages(batches).into_iter().map(Ok::<_, arrow_flight::error::FlightError>)))
        .map_err(Status::from);
    Box::pin(stream)
}

/// The authorization header of a request.
fn authorization<T>(request: &Request<T>) -> Option<&str> {
    request.metadata().get("authorization").and_then(|v| v.to_str().ok())
}

impl Door {
    pub fn new(state: FlightState) -> Door {
        Door {
            state,
            tokens: Arc::new(auth::Tokens::new(auth::TOKEN_TTL)),
            answers: Mutex::new(HashMap::new()),
            prepared: Mutex::new(HashMap::new()),
            tables: metadata::Tables::default(),
        }
    }

    /// The key of a request's bearer token (issued by the handshake, not expired, its key still
    /// in force).
    fn authenticate<T>(&self, request: &Request<T>) -> Result<String, Status> {
        let token = authorization(request).and_then(auth::bearer).ok_or_else(auth::unauthenticated)?;
        self.state.keys.with_current(|c| self.tokens.key(token, c)).ok_or_else(auth::unauthenticated)
    }

    /// [`Door::authenticate`], then a token from the key's quota (a request that asks for work).
    fn authorize<T>(&self, request: &Request<T>) -> Result<String, Status> {
        let key = self.authenticate(request)?;
        self.state.keys.with_current(|c| c.admit(&key)).map_err(|d| auth::rate_limited(d.error))?;
        Ok(key)
    }

    /// Starts a statement for `key` (counted in the metrics and logged like a request): its
    /// answer's schema and stream.
    async fn execute(&self, key: &str, sql: &str) -> Result<(SchemaRef, AnswerStream), Status> {
        let started = Instant::now();
        let result = async {
            let version = query::version(&self.state.store, None)?;
            let statement = Statement { sql, user: key, positional: true, describe: false };
            query::run_stream(&self.state.sql, version, statement).await
        }
        .await;
        let (result, outcome) = match result {
            Ok(stream) => match streamed_schema(&stream.schema) {
                Ok(schema) => (Ok((schema, stream)), "ok"),
                Err(status) => (Err(status), "error"),
            },
            Err(refusal) => {
                let (status, outcome) = refusal_status(refusal);
                (Err(status), outcome)
            }
        };
        crate::process::metrics::flight_query(outcome);
        let latency_ms = (started.elapsed().as_secs_f64() * 1_000_000.0).round() / 1000.0;
        tracing::info!(%key, result = outcome, latency_ms, "flight sql query");
        result
    }

    /// Runs a statement (or describes it) for `key`, not logged: its schema and batches (at most
    /// `max_rows` rows).
    async fn execute_unlogged(
        &self,
        key: &str,
        sql: &str,
        describe: bool,
    ) -> Result<(SchemaRef, Vec<RecordBatch>), Refusal> {
        let version = query::version(&self.state.store, None)?;
        let statement = Statement { sql, user: key, positional: true, describe };
        let answer = query::run_ipc(&self.state.sql, version, statement, Arc::new(AtomicBool::new(false))).await?;
        let max_rows = self.state.sql.limits().max_rows;
        // Reading an answer of up to hundreds of MB is CPU work: off the executor.
        let failed = |e: String| Refusal::Outcome(Outcome::Failed(e));
        tokio::task::spawn_blocking(move || decode(Bytes::from_owner(answer), max_rows).map_err(|s| s.to_string()))
            .await
            .map_err(|e| failed(e.to_string()))?
            .map_err(failed)
    }

    /// Starts a statement and keeps its answer's stream for the ticket of the FlightInfo
    /// returned (its rows and bytes unknown until streamed: -1).
    async fn answer(&self, key: &str, sql: &str, descriptor: FlightDescriptor) -> Result<Response<FlightInfo>, Status> {
        // A stream never fetched holds a worker: dropped (its worker stopped) once past its time
        // limit, before a new statement takes a worker.
        self.answers.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, a| !a.stream.expired());
        let (schema, stream) = self.execute(key, sql).await?;
        let id = uuid::Uuid::new_v4().simple().to_string();
        let answer = Answer { key: key.to_string(), schema: Arc::clone(&schema), stream };
        self.answers.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), answer);
        let ticket = TicketStatementQuery { statement_handle: id.into_bytes().into() };
        let endpoint = FlightEndpoint::new().with_ticket(Ticket::new(ticket.as_any().encode_to_vec()));
        let info = FlightInfo::new()
            .try_with_schema(&schema)
            .map_err(internal)?
            .with_endpoint(endpoint)
            .with_descriptor(descriptor)
            .with_ordered(true);
        Ok(Response::new(info))
    }

    /// A FlightInfo whose ticket is the metadata command itself (answered by `do_get`).
    fn metadata_info(
        &self,
        command: impl ProstMessageExt,
        schema: &Schema,
        descriptor: FlightDescriptor,
    ) -> Result<Response<FlightInfo>, Status> {
        let endpoint = FlightEndpoint::new().with_ticket(Ticket::new(command.as_any().encode_to_vec()));
        let info = FlightInfo::new().try_with_schema(schema).map_err(internal)?.with_endpoint(endpoint);
        Ok(Response::new(info.with_descriptor(descriptor)))
    }

    fn handle(bytes: &[u8]) -> Result<String, Status> {
        String::from_utf8(bytes.to_vec()).map_err(|_| Status::invalid_argument("Instrução preparada desconhecida"))
    }
}

/// The bound values of a parameter batch's single row: each as text, and whether it is a number
/// (written as a literal) or else quoted.
fn bound_values(batches: &[RecordBatch]) -> Result<(Vec<Option<String>>, Vec<bool>), Status> {
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if rows != 1 {
        return Err(Status::invalid_argument(format!(
            "Parâmetros inválidos: esperada uma linha de valores, recebidas {rows}"
        )));
    }
    let Some(batch) = batches.iter().find(|b| b.num_rows() == 1) else {
        return Err(Status::invalid_argument("Parâmetros inválidos: nenhum valor"));
    };
    let mut values = Vec::with_capacity(batch.num_columns());
    let mut numeric = Vec::with_capacity(batch.num_columns());
    for column in batch.columns() {
        let column = column.as_ref();
        let value = if column.is_null(0) { None } else { Some(array_value_to_string(column, 0).map_err(internal)?) };
        values.push(value);
        numeric.push(column.data_type().is_numeric());
    }
    Ok((values, numeric))
}

#[tonic::async_trait]
impl FlightSqlService for Door {
    type FlightService = Door;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<BoxedStream<HandshakeResponse>>, Status> {
        let pair = authorization(&request).and_then(auth::basic);
        let Some((key, secret)) = pair else { return Err(auth::unauthenticated()) };
        let known = self.state.keys.with_current(|c| c.verify(&key, &secret));
        if !known {
            tracing::info!(%key, result = "unauthenticated", "flight sql handshake");
            return Err(auth::unauthenticated());
        }
        self.state.keys.with_current(|c| c.admit(&key)).map_err(|d| auth::rate_limited(d.error))?;
        let token = self.tokens.issue(&key);
        tracing::info!(%key, result = "ok", "flight sql handshake");
        let header = MetadataValue::try_from(format!("Bearer {token}")).map_err(internal)?;
        let answer = HandshakeResponse { protocol_version: 0, payload: token.into_bytes().into() };
        let mut response: Response<BoxedStream<HandshakeResponse>> =
            Response::new(Box::pin(futures::stream::iter(vec![Ok(answer)])));
        response.metadata_mut().insert("authorization", header);
        Ok(response)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let key = self.authorize(&request)?;
        self.answer(&key, &query::numbered_placeholders(&query.query), request.into_inner()).await
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let key = self.authenticate(&request)?;
        let id = Door::handle(&ticket.statement_handle)?;
        let answer = {
            let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
            match answers.get(&id) {
                Some(a) if a.key == key => answers.remove(&id),
                _ => None,
            }
        };
        let Some(answer) = answer else {
            return Err(Status::not_found("Resultado desconhecido ou já lido: execute a consulta novamente"));
        };
        Ok(Response::new(answer_stream(key, answer.schema, answer.stream)))
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let key = self.authorize(&request)?;
        let sql = query::numbered_placeholders(&query.query);
        let (described, _) = self.execute_unlogged(&key, &sql, true).await.map_err(|r| {
            let (status, outcome) = refusal_status(r);
            crate::process::metrics::flight_query(outcome);
            status
        })?;
        let (mut outputs, mut parameters) = (Vec::new(), Vec::new());
        for field in described.fields() {
            match field.name().strip_prefix(PARAMETER) {
                Some(n) => parameters.push(field.as_ref().clone().with_name(format!("${n}"))),
                None => outputs.push(field.as_ref().clone()),
            }
        }
        let dataset = Arc::new(Schema::new(outputs));
        let parameters = Arc::new(Schema::new(parameters));
        let handle = uuid::Uuid::new_v4().simple().to_string();
        let result = ActionCreatePreparedStatementResult {
            prepared_statement_handle: handle.clone().into_bytes().into(),
            dataset_schema: schema_bytes(&dataset)?,
            parameter_schema: if parameters.fields().is_empty() {
                Default::default()
            } else {
                schema_bytes(&parameters)?
            },
        };
        let mut prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        prepared.retain(|_, p| p.used.elapsed() < KEPT);
        prepared.insert(handle, Prepared { key, sql, parameters, values: None, used: Instant::now() });
        Ok(result)
    }

    async fn do_put_prepared_statement_query(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        let key = self.authenticate(&request)?;
        let handle = Door::handle(&query.prepared_statement_handle)?;
        let stream = request.into_inner().map_err(arrow_flight::error::FlightError::from);
        let batches: Vec<RecordBatch> =
            arrow_flight::decode::FlightRecordBatchStream::new_from_flight_data(stream).try_collect().await?;
        let values = bound_values(&batches)?;
        let mut prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        match prepared.get_mut(&handle) {
            Some(p) if p.key == key => {
                if values.0.len() != p.parameters.fields().len() && !p.parameters.fields().is_empty() {
                    return Err(Status::invalid_argument(format!(
                        "Parâmetros inválidos: a instrução tem {} parâmetro(s), recebidos {}",
                        p.parameters.fields().len(),
                        values.0.len()
                    )));
                }
                p.values = Some(values);
                p.used = Instant::now();
            }
            _ => return Err(Status::not_found("Instrução preparada desconhecida")),
        }
        Ok(DoPutPreparedStatementResult { prepared_statement_handle: Some(handle.into_bytes().into()) })
    }

    async fn get_flight_info_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let key = self.authorize(&request)?;
        let handle = Door::handle(&query.prepared_statement_handle)?;
        let sql = {
            let mut prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
            let Some(p) = prepared.get_mut(&handle).filter(|p| p.key == key) else {
                return Err(Status::not_found("Instrução preparada desconhecida"));
            };
            p.used = Instant::now();
            match &p.values {
                Some((values, numeric)) => query::bind(&p.sql, values, numeric)
                    .map_err(|m| Status::invalid_argument(format!("Parâmetros inválidos: {m}")))?,
                None if query::has_parameters(&p.sql) => {
                    return Err(Status::invalid_argument("Parâmetros inválidos: nenhum valor foi associado"));
                }
                None => p.sql.clone(),
            }
        };
        self.answer(&key, &sql, request.into_inner()).await
    }

    async fn do_action_close_prepared_statement(
        &self,
        query: ActionClosePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<(), Status> {
        let key = self.authenticate(&request)?;
        let handle = Door::handle(&query.prepared_statement_handle)?;
        let mut prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        if prepared.get(&handle).is_some_and(|p| p.key == key) {
            prepared.remove(&handle);
        }
        Ok(())
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.authorize(&request)?;
        let schema = query.into_builder().schema();
        self.metadata_info(query, &schema, request.into_inner())
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.authenticate(&request)?;
        let (schema, batch) = metadata::catalogs(query)?;
        Ok(Response::new(flight_stream(schema, vec![batch])))
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.authorize(&request)?;
        let schema = query.clone().into_builder().schema();
        self.metadata_info(query, &schema, request.into_inner())
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.authenticate(&request)?;
        let (schema, batch) = metadata::db_schemas(query)?;
        Ok(Response::new(flight_stream(schema, vec![batch])))
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.authorize(&request)?;
        let schema = query.clone().into_builder().schema();
        self.metadata_info(query, &schema, request.into_inner())
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let key = self.authenticate(&request)?;
        let version = query::version(&self.state.store, None).map_err(|r| refusal_status(r).0)?;
        let info = version.info();
        let tables = match self.tables.cached(info) {
            Some(described) if query.include_schema => described,
            None if query.include_schema => {
                // Each table's columns as its query answers with them (planned, not run).
                let mut described = Vec::new();
                for table in metadata::Tables::names(info).iter() {
                    let sql = format!("SELECT * FROM \"{}\"", table.name.replace('"', "\"\""));
                    let (schema, _) = self.execute_unlogged(&key, &sql, true).await.map_err(|r| refusal_status(r).0)?;
                    described.push(metadata::Table { schema, ..table.clone() });
                }
                let described = Arc::new(described);
                self.tables.keep(info, Arc::clone(&described));
                described
            }
            _ => metadata::Tables::names(info),
        };
        let (schema, batch) = metadata::tables(query, &tables)?;
        Ok(Response::new(flight_stream(schema, vec![batch])))
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.authorize(&request)?;
        let schema = query.into_builder().schema();
        self.metadata_info(query, &schema, request.into_inner())
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.authenticate(&request)?;
        let (schema, batch) = metadata::table_types(query)?;
        Ok(Response::new(flight_stream(schema, vec![batch])))
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.authorize(&request)?;
        let schema = query.clone().into_builder(metadata::sql_info()).schema();
        self.metadata_info(query, &schema, request.into_inner())
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.authenticate(&request)?;
        let builder = query.into_builder(metadata::sql_info());
        let schema = builder.schema();
        let batch = builder.build().map_err(internal)?;
        Ok(Response::new(flight_stream(schema, vec![batch])))
    }

    async fn get_flight_info_xdbc_type_info(
        &self,
        query: CommandGetXdbcTypeInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.authorize(&request)?;
        let schema = query.into_builder(metadata::xdbc_types()).schema();
        self.metadata_info(query, &schema, request.into_inner())
    }

    async fn do_get_xdbc_type_info(
        &self,
        query: CommandGetXdbcTypeInfo,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.authenticate(&request)?;
        let builder = query.into_builder(metadata::xdbc_types());
        let schema = builder.schema();
        let batch = builder.build().map_err(internal)?;
        Ok(Response::new(flight_stream(schema, vec![batch])))
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}

/// Serves Flight SQL on `listener` until the process stops.
pub async fn serve(listener: TcpListener, state: FlightState) {
    let tls = state.tls.clone();
    let door = Door::new(state);
    // The sign-in is checked before a request's command is decoded: without a token (or the
    // handshake's basic credentials) a call is UNAUTHENTICATED whatever its bytes hold.
    let signed_in = {
        let (tokens, keys) = (Arc::clone(&door.tokens), Arc::clone(&door.state.keys));
        move |request: Request<()>| -> Result<Request<()>, Status> {
            let header = authorization(&request).unwrap_or_default();
            if header.get(..6).is_some_and(|scheme| scheme.eq_ignore_ascii_case("basic ")) {
                return Ok(request);
            }
            let token = auth::bearer(header).ok_or_else(auth::unauthenticated)?;
            match keys.with_current(|c| tokens.key(token, c)) {
                Some(_) => Ok(request),
                None => Err(auth::unauthenticated()),
            }
        }
    };
    let service = FlightServiceServer::with_interceptor(checked::Checked(door), signed_in);
    let mut builder = Server::builder()
        .tcp_nodelay(true)
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .concurrency_limit_per_connection(64);
    if let Some(Tls(config)) = tls {
        builder = match builder.tls_config(config) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(error = %e, "Flight SQL door: TLS cannot be used");
                return;
            }
        };
    }
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    if let Err(e) = builder.add_service(service).serve_with_incoming(incoming).await {
        tracing::error!(error = %e, "Flight SQL door stopped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::DataType;
    use datafusion::arrow::ipc::writer::StreamWriter;

    fn ipc(rows: i64) -> Bytes {
        let name = format!("n{}1", crate::engine::sql::names::MARK);
        let schema = Arc::new(Schema::new(vec![Field::new(name, DataType::Int64, false)]));
        let batch =
            RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(Int64Array::from_iter_values(0..rows))]).unwrap();
        let mut out = Vec::new();
        let mut w = StreamWriter::try_new(&mut out, &schema).unwrap();
        for batch in
            [batch.slice(0, rows as usize / 2), batch.slice(rows as usize / 2, rows as usize - rows as usize / 2)]
        {
            w.write(&batch).unwrap();
        }
        w.finish().unwrap();
        drop(w);
        Bytes::from(out)
    }

    #[test]
    fn answers_are_cut_at_the_row_limit_and_named_for_clients() {
        let (schema, batches) = decode(ipc(11), 10).unwrap();
        assert_eq!(schema.field(0).name(), "n");
        assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 10);
        let (_, batches) = decode(ipc(3), 10).unwrap();
        assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);
        // A stream cut short is an error, not a shorter answer.
        let cut = ipc(1000);
        assert!(decode(cut.slice(..cut.len() - 100), 10_000).is_err());
        // A streamed answer's schema message, named for clients.
        let name = format!("n{}1", crate::engine::sql::names::MARK);
        let worker = Schema::new(vec![Field::new(name, DataType::Int64, true)]);
        let options = IpcWriteOptions::default();
        let schema = streamed_schema(&FlightData::from(SchemaAsIpc::new(&worker, &options)).data_header).unwrap();
        assert_eq!(schema.field(0).name(), "n");
        // A large batch goes in messages of about 2 MB, measured on their own rows.
        let (_, batches) = decode(ipc(1_000_000), 1_000_000).unwrap();
        let cut = in_messages(batches);
        assert_eq!(cut.iter().map(RecordBatch::num_rows).sum::<usize>(), 1_000_000);
        assert!(cut.len() >= 4 && cut.len() <= 8, "{}", cut.len());
    }

    #[test]
    fn refusals_map_to_grpc_codes() {
        use tonic::Code;
        let code = |r| refusal_status(r).0.code();
        assert_eq!(code(Refusal::Refused(Refused::Syntax("x".into()))), Code::InvalidArgument);
        assert_eq!(code(Refusal::Refused(Refused::Forbidden("x".into()))), Code::PermissionDenied);
        assert_eq!(code(Refusal::Refused(Refused::UnknownTable("x".into()))), Code::InvalidArgument);
        let time =
            Outcome::TooExpensive(Limit::Time, "a consulta excedeu o tempo limite de 5 ms e foi interrompida".into());
        assert_eq!(code(Refusal::Outcome(time)), Code::DeadlineExceeded);
        let memory = Outcome::TooExpensive(
            Limit::Memory,
            "a consulta excedeu o limite de memória de 1 MB e foi interrompida".into(),
        );
        let (status, _) = refusal_status(Refusal::Outcome(memory));
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert!(status.message().starts_with("Consulta interrompida: "), "{}", status.message());
    }
}
