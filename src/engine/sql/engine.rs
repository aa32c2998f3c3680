//! Analysts' SQL on Apache DataFusion, in PostgreSQL's dialect (API-CONTRACT §7), inside a
//! worker process (see [`super::worker`]).
//!
//! A dataset version's tables (`catalog` and every view) are Arrow IPC files that Polars wrote
//! once; a view's file holds only the columns it does not share with the catalog, row for row
//! (the worker takes those from the catalog's file). The worker maps them into memory and hands their buffers to DataFusion as record batches
//! without copying or re-encoding a row: a query reads the pages of the columns it uses, the page
//! cache is shared by every worker, and the mapped files are not part of a worker's memory budget.
//! DataFusion's own memory pool has the budget too (no spilling to disk), so an aggregation that
//! outgrows it stops with a clear reason before the process limit kills the worker.

use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::convert::fb_to_schema;
use datafusion::arrow::ipc::reader::{read_footer_length, FileDecoder};
use datafusion::arrow::ipc::root_as_footer;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::catalog::MemTable;
use datafusion::error::DataFusionError;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::memory_pool::{GreedyMemoryPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};
use serde::{Deserialize, Serialize};

/// The layouts of a version's views, beside their files (`layout.json`).
pub const LAYOUT: &str = "layout.json";
/// The file of a folder of tables holding each view's defining query (`worker::view_definitions`).
pub const DEFINITIONS: &str = "definitions.json";

/// How a view's table is stored: its columns in order, and those that are the catalog's own
/// column of that name, row for row (not written again: the worker reads them from the catalog's
/// file). A view with other rows than the catalog's shares none.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Layout {
    pub columns: Vec<String>,
    pub shared: Vec<String>,
}

/// The prefix of a described statement's parameter columns (`PARAMETER` + its number).
pub const PARAMETER: &str = "\u{1e}$";

/// Rows per record batch handed to DataFusion (slices of the files' batches, no copy).
pub const SLICE_ROWS: usize = 64 * 1024;

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
    loaded: Option<(PathBuf, SessionContext)>,
}

/// An IPC file's bytes, mapped: the owner of the buffers of its batches.
fn map(path: &Path) -> Result<Buffer, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open a table: {e}"))?;
    // SAFETY: the file is the service's own, written once to a temporary name and renamed into
    // place; nothing writes it afterwards (a new version gets a folder of its own).
    let mmap = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("cannot map a table: {e}"))?;
    let len = mmap.len();
    let Some(ptr) = NonNull::new(mmap.as_ptr() as *mut u8) else {
        return Err("cannot map an empty table file".into());
    };
    // SAFETY: the pointer and length are the mapping's, and the mapping lives as long as the
    // buffer (it is the buffer's owner).
    Ok(unsafe { Buffer::from_custom_allocation(ptr, len, Arc::new(mmap)) })
}

/// The schema and record batches of a mapped IPC file (no copy: their buffers are the map's).
fn decode(path: &Path) -> Result<(SchemaRef, Vec<RecordBatch>), String> {
    let bad = |what: &str| format!("a table file is damaged ({what})");
    let buffer = map(path)?;
    if buffer.len() < 10 {
        return Err(bad("too short"));
    }
    let trailer = buffer.len() - 10;
    let tail: [u8; 10] = buffer[trailer..].try_into().map_err(|_| bad("trailer"))?;
    let footer_len = read_footer_length(tail).map_err(|e| bad(&e.to_string()))?;
    let footer_start = trailer.checked_sub(footer_len).ok_or_else(|| bad("footer"))?;
    let footer = root_as_footer(&buffer[footer_start..trailer]).map_err(|e| bad(&e.to_string()))?;
    let schema = Arc::new(fb_to_schema(footer.schema().ok_or_else(|| bad("no schema"))?));
    // SAFETY: validation is skipped because the file is the service's own output (see `map`),
    // written by Polars from checked columns; validating would read every page of every column at
    // each worker's first query.
    let mut decoder = unsafe { FileDecoder::new(Arc::clone(&schema), footer.version()).with_skip_validation(true) };
    let block_of = |block: &datafusion::arrow::ipc::Block| -> Result<Buffer, String> {
        let start = usize::try_from(block.offset()).map_err(|_| bad("block"))?;
        let len = block.bodyLength() as usize + block.metaDataLength() as usize;
        if start.checked_add(len).is_none_or(|end| end > buffer.len()) {
            return Err(bad("block out of bounds"));
        }
        Ok(buffer.slice_with_length(start, len))
    };
    for block in footer.dictionaries().iter().flatten() {
        decoder.read_dictionary(block, &block_of(block)?).map_err(|e| bad(&e.to_string()))?;
    }
    let mut batches = Vec::new();
    for block in footer.recordBatches().iter().flatten() {
        if let Some(batch) = decoder.read_record_batch(block, &block_of(block)?).map_err(|e| bad(&e.to_string()))? {
            batches.push(batch);
        }
    }
    Ok((schema, batches))
}

/// Record batches with the first row of each (in the table).
struct Rows {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    starts: Vec<usize>,
}

impl Rows {
    fn new((schema, batches): (SchemaRef, Vec<RecordBatch>)) -> Rows {
        let mut starts = Vec::with_capacity(batches.len());
        let mut n = 0;
        for b in &batches {
            starts.push(n);
            n += b.num_rows();
        }
        Rows { schema, batches, starts }
    }

    fn len(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// Rows `start..start + len`, within one batch (the segments are cut at every batch's end).
    fn slice(&self, start: usize, len: usize) -> RecordBatch {
        let i = self.starts.partition_point(|&s| s <= start).saturating_sub(1);
        self.batches[i].slice(start - self.starts[i], len)
    }
}

/// A table of the version: its own file's columns, and the columns it shares with the catalog
/// (`layout`) taken from the catalog's file, row for row; cut into slices of at most
/// [`SLICE_ROWS`] rows dealt into `partitions` partitions.
fn table(own: &Rows, catalog: Option<&Rows>, layout: Option<&Layout>, partitions: usize) -> Result<MemTable, String> {
    let shared: &[String] = layout.map(|l| l.shared.as_slice()).unwrap_or_default();
    let catalog = catalog.filter(|_| !shared.is_empty());
    let own_columns = own.schema.fields().len();
    let rows = match catalog {
        Some(c) if own_columns == 0 => c.len(),
        Some(c) if c.len() != own.len() => return Err("a view's rows do not match the catalog's".into()),
        _ => own.len(),
    };
    // Where every slice ends: each batch's end in either file, and every SLICE_ROWS rows.
    let mut ends: Vec<usize> = (1..=rows.div_ceil(SLICE_ROWS)).map(|k| (k * SLICE_ROWS).min(rows)).collect();
    let mut cut = |r: &Rows| ends.extend(r.starts.iter().skip(1).copied());
    if own_columns > 0 {
        cut(own);
    }
    if let Some(c) = catalog {
        cut(c);
    }
    ends.sort_unstable();
    ends.dedup();
    // The columns in the view's order, each from its file.
    let names: Vec<String> = match layout {
        Some(l) => l.columns.clone(),
        None => own.schema.fields().iter().map(|f| f.name().clone()).collect(),
    };
    let mut sources = Vec::with_capacity(names.len());
    let mut fields = Vec::with_capacity(names.len());
    for name in &names {
        let (from_catalog, rows_of) = match catalog {
            Some(c) if shared.contains(name) => (true, c),
            _ => (false, own),
        };
        let index = rows_of.schema.index_of(name).map_err(|_| format!("a table file lacks the column {name}"))?;
        fields.push(rows_of.schema.field(index).clone());
        sources.push((from_catalog, index));
    }
    let schema = Arc::new(Schema::new(fields));
    let mut parts: Vec<Vec<RecordBatch>> = vec![Vec::new(); partitions.max(1)];
    let count = parts.len();
    let mut start = 0;
    for (k, end) in ends.into_iter().enumerate() {
        let len = end - start;
        let own_slice = (own_columns > 0).then(|| own.slice(start, len));
        let catalog_slice = catalog.map(|c| c.slice(start, len));
        let columns: Vec<ArrayRef> = sources
            .iter()
            .map(|(from_catalog, index)| match (from_catalog, &catalog_slice, &own_slice) {
                (true, Some(c), _) => Arc::clone(c.column(*index)),
                (_, _, Some(o)) => Arc::clone(o.column(*index)),
                _ => unreachable!("a column comes from a file that has rows"),
            })
            .collect();
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns).map_err(|e| e.to_string())?;
        parts[k % count].push(batch);
        start = end;
    }
    MemTable::try_new(schema, parts).map_err(|e| e.to_string())
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
        let config = SessionConfig::new()
            .with_target_partitions(self.threads)
            .with_information_schema(false)
            .with_default_catalog_and_schema("eco", "public")
            .set_str("datafusion.sql_parser.dialect", "PostgreSQL")
            .set_str("datafusion.sql_parser.default_null_ordering", "nulls_max")
            .set_str("datafusion.sql_parser.parse_float_as_decimal", "true")
            .set_str("datafusion.execution.time_zone", "UTC");
        // Three quarters of the budget for DataFusion's own accounting: what it does not count
        // (batches in flight, the answer) fits in the rest before the process limit.
        let pool = TrackConsumersPool::new(
            GreedyMemoryPool::new(self.memory_bytes / 4 * 3),
            std::num::NonZeroUsize::new(3).unwrap_or(std::num::NonZeroUsize::MIN),
        );
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(Arc::new(pool))
            .with_disk_manager_builder(DiskManagerBuilder::default().with_mode(DiskManagerMode::Disabled))
            .build_arc()
            .map_err(|e| e.to_string())?;
        let state =
            SessionStateBuilder::new().with_config(config).with_runtime_env(runtime).with_default_features().build();
        let ctx = SessionContext::new_with_state(state);
        super::postgres::install(&ctx);
        let layouts: std::collections::BTreeMap<String, Layout> = match std::fs::read(dir.join(LAYOUT)) {
            Ok(text) => serde_json::from_slice(&text).map_err(|e| format!("the tables' layout is damaged: {e}"))?,
            Err(_) => Default::default(),
        };
        // Older folders of tables have no definitions: their views are listed without one.
        let mut definitions: std::collections::BTreeMap<String, String> = std::fs::read(dir.join(DEFINITIONS))
            .ok()
            .and_then(|text| serde_json::from_slice(&text).ok())
            .unwrap_or_default();
        let catalog = Rows::new(decode(&dir.join("catalog.arrow"))?);
        let mut offered = Vec::with_capacity(tables.len());
        for name in tables {
            let (table, rows) = if name == "catalog" {
                (table(&catalog, None, None, self.threads)?, catalog.len())
            } else {
                let own = Rows::new(decode(&dir.join(format!("{name}.arrow")))?);
                let rows = if own.schema.fields().is_empty() { catalog.len() } else { own.len() };
                (table(&own, Some(&catalog), layouts.get(name), self.threads)?, rows)
            };
            let schema = datafusion::catalog::TableProvider::schema(&table);
            offered.push(super::pg_catalog::Offered {
                name: name.clone(),
                schema,
                rows,
                view: name != "catalog",
                definition: definitions.remove(name),
            });
            ctx.register_table(name.as_str(), Arc::new(table)).map_err(|e| e.to_string())?;
        }
        super::pg_catalog::install(&ctx, &offered)?;
        Ok(ctx)
    }

    /// The session over the tables in `dir` (kept for the next queries on the same version).
    fn loaded(&mut self, dir: &Path, tables: &[String]) -> Result<SessionContext, Failure> {
        if self.loaded.as_ref().is_none_or(|(d, _)| d != dir) {
            self.loaded = None;
            let ctx = self.session(dir, tables).map_err(Failure::Invalid)?;
            self.loaded = Some((dir.to_path_buf(), ctx));
        }
        self.loaded.as_ref().map(|(_, ctx)| ctx.clone()).ok_or_else(|| Failure::Invalid("no tables".into()))
    }

    /// Plans `sql` (with `$n` parameters) without running it: an Arrow IPC stream with no rows
    /// whose schema is the answer's columns (as [`for_clients`] types them), then one column per
    /// parameter, named [`PARAMETER`] + its number, of the type DataFusion infers for it
    /// from where it is used (text where nothing tells).
    pub fn describe(&mut self, dir: &Path, tables: &[String], sql: &str) -> Result<Vec<u8>, Failure> {
        let ctx = self.loaded(dir, tables)?;
        let sql = sql.to_string();
        let planned = self.runtime.block_on(async move {
            let plan = ctx.state().create_logical_plan(&sql).await?;
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
            let options = SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false);
            let frame = ctx.sql_with_options(&sql, options).await?;
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
            let options = SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false);
            let frame = ctx.sql_with_options(&sql, options).await.map_err(classify)?;
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
