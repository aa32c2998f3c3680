//! Analysts' SQL on Apache DataFusion, in PostgreSQL's dialect (API-CONTRACT §7), inside a
//! worker process (see [`super::worker`]).
//!
//! A dataset version's tables (`catalog` and every view) are read from the version's export,
//! where it lies (see [`super::tables`]): a query decodes the columns it uses, the page cache is
//! shared by every worker, and nothing is prepared ahead. DataFusion's own memory pool has the
//! budget (no spilling to disk), so an aggregation that outgrows it stops with a clear reason
//! before the process limit kills the worker.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::error::DataFusionError;
use datafusion::prelude::{SQLOptions, SessionContext};

/// The prefix of a described statement's parameter columns (`PARAMETER` + its number).
pub const PARAMETER: &str = "\u{1e}$";

/// Why a query gave no rows.
#[derive(Debug)]
pub enum Failure {
    /// The query is wrong or unsupported: the reason, without paths.
    Invalid(String),
    /// It outgrew the memory budget.
    Memory,
}

/// The worker's engine: one DataFusion session per dataset version's tables, kept for the next
/// queries on the same version.
pub struct Engine {
    runtime: tokio::runtime::Runtime,
    threads: usize,
    memory_bytes: usize,
    /// The session of a folder of tables, and whether it maps the tables written ahead.
    loaded: Option<(PathBuf, bool, SessionContext)>,
}

impl Engine {
    /// An engine running queries on `threads` threads within `memory_bytes`.
    pub fn new(threads: usize, memory_bytes: usize) -> Result<Engine, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("eco-sql-engine")
            .build()
            .map_err(|e| format!("cannot start the SQL engine: {e}"))?;
        Ok(Engine { runtime, threads: threads.max(1), memory_bytes, loaded: None })
    }

    /// A session over the tables in `dir`, in PostgreSQL's dialect and semantics.
    fn session(&self, dir: &Path, tables: &[String]) -> Result<SessionContext, String> {
        let ctx = super::tables::context(self.threads, self.memory_bytes)?;
        // The tables written ahead once they are complete, else the export itself.
        let statements = super::tables::statements(dir)?;
        let written = dir.join(super::mapped::WRITTEN);
        let offered = if written.is_dir() {
            super::mapped::register(&ctx, &written, tables, self.threads, &statements.definitions())?
        } else {
            self.runtime.block_on(super::tables::register(&ctx, dir, tables, &statements))?
        };
        super::pg_catalog::install(&ctx, &offered)?;
        Ok(ctx)
    }

    /// The session over the tables in `dir` (kept for the next queries on the same version, until
    /// its tables written ahead are complete: then a session maps them).
    fn loaded(&mut self, dir: &Path, tables: &[String]) -> Result<SessionContext, Failure> {
        let written = dir.join(super::mapped::WRITTEN).is_dir();
        if self.loaded.as_ref().is_none_or(|(d, w, _)| d != dir || *w != written) {
            self.loaded = None;
            let ctx = self.session(dir, tables).map_err(Failure::Invalid)?;
            self.loaded = Some((dir.to_path_buf(), written, ctx));
        }
        self.loaded.as_ref().map(|(_, _, ctx)| ctx.clone()).ok_or_else(|| Failure::Invalid("no tables".into()))
    }

    /// Plans `sql` (with `$n` parameters) without running it: an Arrow IPC stream with no rows
    /// whose schema is the answer's columns (as [`for_clients`] types them), then one column per
    /// parameter, named [`PARAMETER`] + its number, of the type DataFusion infers for it
    /// from where it is used (text where nothing tells).
    pub fn describe(&mut self, dir: &Path, tables: &[String], sql: &str) -> Result<Vec<u8>, Failure> {
        let ctx = self.loaded(dir, tables)?;
        let sql = sql.to_string();
        let planned = self.runtime.block_on(async move {
            let plan = super::casts::planned_apart(&sql, |sql| {
                let state = ctx.state();
                async move { state.create_logical_plan(&sql).await }
            })
            .await?;
            let parameters = plan.get_parameter_types()?;
            Ok::<_, DataFusionError>((Arc::new(plan.schema().as_arrow().clone()), parameters))
        });
        let (schema, parameters) = planned.map_err(classify)?;
        let (schema, _) = for_clients(schema, Vec::new()).map_err(Failure::Invalid)?;
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        let mut numbered: Vec<(usize, DataType)> = parameters
            .into_iter()
            .filter_map(|(name, t)| {
                let n = name.trim_start_matches('$').parse::<usize>().ok()?;
                let t = t.unwrap_or(DataType::Utf8);
                let (t, _) = for_clients(Arc::new(Schema::new(vec![Field::new("p", t, true)])), Vec::new()).ok()?;
                Some((n, t.field(0).data_type().clone()))
            })
            .collect();
        numbered.sort_by_key(|(n, _)| *n);
        for (n, t) in numbered {
            fields.push(Field::new(format!("{}{n}", PARAMETER), t, true));
        }
        let schema = Schema::new(fields);
        let mut out = Vec::new();
        StreamWriter::try_new(&mut out, &schema)
            .and_then(|mut w| w.finish())
            .map_err(|e| Failure::Invalid(e.to_string()))?;
        Ok(out)
    }

    /// Runs `sql` over the tables in `dir`: at most `max_rows + 1` rows, with types every client
    /// reads (see [`for_clients`]).
    pub fn answer(
        &mut self,
        dir: &Path,
        tables: &[String],
        sql: &str,
        max_rows: usize,
    ) -> Result<(SchemaRef, Vec<RecordBatch>), Failure> {
        let ctx = self.loaded(dir, tables)?;
        let sql = sql.to_string();
        let batches = self.runtime.block_on(async move {
            let frame = planned(&ctx, &sql).await?;
            let frame = frame.limit(0, Some(max_rows.saturating_add(1)))?;
            let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
            let batches = frame.collect().await?;
            Ok::<_, DataFusionError>((schema, batches))
        });
        let (schema, batches) = batches.map_err(classify)?;
        let (schema, batches) = for_clients(schema, batches).map_err(Failure::Invalid)?;
        Ok((schema, batches))
    }
}

/// `sql` planned as a read-only query; planned again with its casts told apart when two of its
/// expressions differ only by a cast (see [`super::casts`]).
async fn planned(ctx: &SessionContext, sql: &str) -> Result<datafusion::dataframe::DataFrame, DataFusionError> {
    let options = SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false);
    super::casts::planned_apart(sql, |sql| async move { ctx.sql_with_options(&sql, options).await }).await
}

/// A piece of an answer streamed as it is computed (see [`Engine::stream`]): Arrow IPC
/// messages, the schema's first.
pub enum Piece {
    /// The schema's message (its flatbuffer).
    Schema(Vec<u8>),
    /// A record batch's message: its metadata (a flatbuffer) and body.
    Batch { header: Vec<u8>, body: Vec<u8> },
}

impl Engine {
    /// Runs `sql` over the tables in `dir` and hands `emit` its answer as it is computed: the
    /// schema's message, then record batches of about [`MESSAGE_BYTES`] (at most `max_rows`
    /// rows in all, the rest cut), with types every client reads (see [`for_clients`]). An error
    /// of `emit` (the reader gone) stops the query.
    pub fn stream(
        &mut self,
        dir: &Path,
        tables: &[String],
        sql: &str,
        max_rows: usize,
        emit: &mut dyn FnMut(Piece) -> std::io::Result<()>,
    ) -> Result<(), Failure> {
        use datafusion::arrow::ipc::writer::{DictionaryTracker, IpcDataGenerator, IpcWriteContext, IpcWriteOptions};
        use futures::StreamExt;
        let ctx = self.loaded(dir, tables)?;
        let sql = sql.to_string();
        let gone = |e: std::io::Error| Failure::Invalid(format!("the answer's reader is gone: {e}"));
        self.runtime.block_on(async move {
            let frame = planned(&ctx, &sql).await.map_err(classify)?;
            let frame = frame.limit(0, Some(max_rows)).map_err(classify)?;
            let planned: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
            let (schema, _) = for_clients(Arc::clone(&planned), Vec::new()).map_err(Failure::Invalid)?;
            let (generator, write) = (IpcDataGenerator::default(), IpcWriteOptions::default());
            let mut tracker = DictionaryTracker::new(false);
            let mut context = IpcWriteContext::default();
            let head = generator.schema_to_bytes_with_dictionary_tracker(&schema, &mut tracker, &write);
            emit(Piece::Schema(head.ipc_message)).map_err(gone)?;
            let mut batches = frame.execute_stream().await.map_err(classify)?;
            while let Some(batch) = batches.next().await {
                let batch = batch.map_err(classify)?;
                let (_, converted) = for_clients(Arc::clone(&planned), vec![batch]).map_err(Failure::Invalid)?;
                for slice in in_messages(converted) {
                    let (_, encoded) = generator
                        .encode(&slice, &mut tracker, &write, &mut context)
                        .map_err(|e| Failure::Invalid(e.to_string()))?;
                    emit(Piece::Batch { header: encoded.ipc_message, body: encoded.arrow_data }).map_err(gone)?;
                }
            }
            Ok(())
        })
    }
}

/// Bytes of Arrow data per record batch of an answer, about: the size of one Flight message
/// (gRPC clients take messages of a few MB), and small enough to stream.
pub const MESSAGE_BYTES: usize = 2 * 1024 * 1024;

/// The bytes of Arrow data `batch` holds (its slice of shared buffers, not their whole size).
pub fn batch_bytes(batch: &RecordBatch) -> usize {
    batch.columns().iter().map(|c| c.to_data().get_slice_memory_size().unwrap_or_default()).sum()
}

/// `batches` cut into slices of about [`MESSAGE_BYTES`] each (no copy), without empty ones.
pub fn in_messages(batches: Vec<RecordBatch>) -> Vec<RecordBatch> {
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        let rows = batch.num_rows();
        if rows == 0 {
            continue;
        }
        let per = rows.div_ceil(batch_bytes(&batch).div_ceil(MESSAGE_BYTES).max(1)).max(1);
        let mut start = 0;
        while start < rows {
            let len = per.min(rows - start);
            out.push(batch.slice(start, len));
            start += len;
        }
    }
    out
}

/// Writes an answer as an Arrow IPC stream to `out`.
pub fn write_answer<W: std::io::Write>(out: W, schema: &Schema, batches: &[RecordBatch]) -> Result<(), String> {
    let mut writer = StreamWriter::try_new(out, schema).map_err(|e| e.to_string())?;
    for batch in batches {
        writer.write(batch).map_err(|e| e.to_string())?;
    }
    writer.finish().map_err(|e| e.to_string())
}

/// A DataFusion error as the analyst reads it: its first line, without DataFusion's own prefixes
/// ("Error during planning: ", "SQL error: "…), or the memory budget.
fn classify(e: DataFusionError) -> Failure {
    let root = e.find_root();
    if matches!(root, DataFusionError::ResourcesExhausted(_)) {
        return Failure::Memory;
    }
    let text = root.to_string();
    let mut line = text.lines().next().unwrap_or("the query failed").trim().to_string();
    for prefix in [
        "Error during planning: ",
        "SQL error: ",
        "This feature is not implemented: ",
        "Schema error: ",
        "Execution error: ",
        "Arrow error: ",
    ] {
        if let Some(rest) = line.strip_prefix(prefix) {
            line = if prefix == "This feature is not implemented: " {
                format!("not supported: {rest}")
            } else {
                rest.to_string()
            };
        }
    }
    if line.chars().count() > 600 {
        line = line.chars().take(600).collect::<String>() + "…";
    }
    Failure::Invalid(line)
}

/// The answer's columns with types every door and format reads: decimals and narrow floats as
/// doubles, dictionaries as their values, intervals, times, lists and structs as text. An answer
/// with a name twice (`SELECT *` over two joined tables' `marca`) is refused, naming it.
fn for_clients(schema: SchemaRef, batches: Vec<RecordBatch>) -> Result<(SchemaRef, Vec<RecordBatch>), String> {
    let target = |t: &DataType| -> DataType {
        match t {
            t if t.is_decimal() || matches!(t, DataType::Float16 | DataType::Float32) => DataType::Float64,
            DataType::Dictionary(_, value) => match value.as_ref() {
                v if v.is_numeric() => DataType::Float64,
                _ => DataType::Utf8,
            },
            DataType::Interval(_)
            | DataType::Duration(_)
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::List(_)
            | DataType::LargeList(_)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
            | DataType::FixedSizeList(_, _)
            | DataType::Struct(_)
            | DataType::Map(_, _)
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => DataType::Utf8,
            other => other.clone(),
        }
    };
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = schema.fields().iter().find(|f| !seen.insert(f.name().as_str())) {
        return Err(format!(
            "the answer would have two columns named \"{}\" (answers are keyed by column name): select them \
             by name with distinct aliases",
            twice.name()
        ));
    }
    let fields: Vec<Field> =
        schema.fields().iter().map(|f| Field::new(f.name(), target(f.data_type()), true)).collect();
    let out_schema = Arc::new(Schema::new(fields));
    let batches = batches
        .into_iter()
        .map(|batch| {
            let columns = batch
                .columns()
                .iter()
                .zip(out_schema.fields())
                .map(|(c, f)| {
                    if c.data_type() == f.data_type() {
                        Ok(Arc::clone(c))
                    } else {
                        cast(c, f.data_type())
                            .map_err(|e| format!("cannot answer a column of type {}: {e}", c.data_type()))
                    }
                })
                .collect::<Result<Vec<ArrayRef>, String>>()?;
            RecordBatch::try_new(Arc::clone(&out_schema), columns).map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((out_schema, batches))
}
