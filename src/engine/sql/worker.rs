//! Analysts' queries in processes of their own: the worker's side (`eco-insights sql-worker`,
//! answering framed requests on standard input with Arrow IPC streams on standard output, see
//! [`run_worker`]) and the service's side ([`Runner`]), which gives each dataset version a folder
//! (the export its load kept, the views' statements: see [`super::tables`]), keeps warm workers,
//! waits at most the time limit and kills a worker past it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch as ArrowBatch;
use datafusion::arrow::datatypes::Schema as ArrowSchema;
use polars::prelude::*;
use serde::{Deserialize, Serialize};

use super::engine::{Engine, Failure, Piece};
use super::spawn::{at_idle_priority, lower_priority, stop_process, widen_pipe};
use super::tables::{created_table, Statements, EXPORT, STATEMENTS};
use super::SqlLimits;
use crate::engine::dataset::schema::{COLUMNS, DICTIONARY_ENCODED};
use crate::engine::dataset::snapshot::{DatasetInfo, Snapshot};
use crate::engine::dataset::views::Views;

/// A worker's answer: the rows (an Arrow IPC stream).
const ROWS: u8 = 0;
/// A worker's answer: the rows, written to the request's `answer_file` (nothing follows).
const ROWS_IN_FILE: u8 = 1;
/// A worker's streamed answer: the schema's Arrow IPC message (its flatbuffer).
const STREAM_SCHEMA: u8 = 2;
/// A worker's streamed answer: a record batch's message, as a little-endian u32 length, that
/// many bytes of metadata (a flatbuffer), then the body.
const STREAM_BATCH: u8 = 5;
/// A worker's streamed answer: its end (nothing follows).
const STREAM_END: u8 = 6;
/// Answers of more bytes than this go through a file (when the request names one), which the
/// service maps instead of reading them through the pipe.
const INLINE_BYTES: usize = 8 * 1024 * 1024;
/// A worker's answer: the query is wrong or unsupported (the reason follows).
const QUERY_FAILED: u8 = 3;
/// A worker's answer: the query outgrew the memory budget.
const OUT_OF_MEMORY: u8 = 4;

/// The query a warm worker is readied with: its session made, no row read.
const READY_SQL: &str = "SELECT 1 AS ready FROM catalog WHERE false";

/// At which priority a worker starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Priority {
    /// Idle from its start: every worker answering queries on a version the API serves.
    Idle,
    /// Normal until a request asks for the idle priority (see [`Request::idle`]): a worker
    /// started while the first load runs, when no API answer waits behind it.
    Normal,
}

/// The dataset version analysts' SQL reads: the snapshot the API serves, or, while the first
/// load still builds the API's table, that load's version once its export is accepted (checked,
/// its views computed: nothing left that can refuse it). Both read the same folder of tables.
#[derive(Debug, Clone)]
pub enum SqlVersion {
    Served(Arc<Snapshot>),
    Accepted(Arc<DatasetInfo>),
}

impl SqlVersion {
    pub fn info(&self) -> &DatasetInfo {
        match self {
            SqlVersion::Served(snapshot) => &snapshot.info,
            SqlVersion::Accepted(info) => info,
        }
    }

    fn snapshot(&self) -> Option<&Snapshot> {
        match self {
            SqlVersion::Served(snapshot) => Some(snapshot),
            SqlVersion::Accepted(_) => None,
        }
    }

    /// Whether the API serves it: its queries then run at the idle priority, on the CPU time
    /// the API's answers leave; before, nothing else is answered and they run at the normal one.
    fn served(&self) -> bool {
        matches!(self, SqlVersion::Served(_))
    }
}

/// What the service sends a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// The dataset version's folder of tables (`NAME.arrow`, Arrow IPC files).
    pub tables_dir: PathBuf,
    /// The table names, `catalog` first.
    pub tables: Vec<String>,
    /// The checked statement.
    pub sql: String,
    pub max_rows: usize,
    /// The worker's memory budget, in bytes (its process limit and DataFusion's pool).
    pub memory_bytes: u64,
    /// Describe the statement instead of running it (see [`Engine::describe`]).
    #[serde(default)]
    pub describe: bool,
    /// Where to write an answer of more than [`INLINE_BYTES`] (in a folder of the service's).
    #[serde(default)]
    pub answer_file: Option<PathBuf>,
    /// Stream the answer as it is computed ([`STREAM_SCHEMA`], [`STREAM_BATCH`]s, then
    /// [`STREAM_END`] or the failure), at most `max_rows` rows.
    #[serde(default)]
    pub stream: bool,
    /// Run at the idle priority: a worker started at the normal one lowers itself first, for
    /// good (a process cannot raise itself back).
    #[serde(default)]
    pub idle: bool,
}

/// The limit a query was stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `--sql-timeout-ms`.
    Time,
    /// `--sql-memory-mb`.
    Memory,
}

/// How one query ended.
#[derive(Debug)]
pub enum Outcome {
    /// Its rows (at most `max_rows`) and whether more were cut.
    Rows { frame: DataFrame, truncated: bool },
    /// The query is wrong (an unknown column, a type error...): the reason, without paths.
    Invalid(String),
    /// Stopped at a limit: which one, and the reason as the clients read it.
    TooExpensive(Limit, String),
    /// Every worker slot is taken.
    Busy,
    /// The worker could not run (the reason is logged).
    Failed(String),
    /// Cancelled by the client while it ran (its worker stopped).
    Cancelled,
}

/// The table names a query may read: `catalog` and every table the views create.
pub fn offered_tables(views: &Views) -> Vec<String> {
    let mut names = vec!["catalog".to_string()];
    for (_, stmt) in &views.statements {
        if let Some((name, _)) = created_table(stmt) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// The worker (`eco-insights sql-worker`): reads requests framed as a little-endian u32 length
/// and the JSON, answers each with a status byte ([`ROWS`], [`ROWS_IN_FILE`], [`QUERY_FAILED`],
/// [`OUT_OF_MEMORY`]), a little-endian u64 length and the Arrow IPC stream or the reason (nothing
/// for an answer written to the request's file); a streamed request is answered with
/// [`STREAM_SCHEMA`], a [`STREAM_BATCH`] per record batch as it is computed, then [`STREAM_END`]
/// (or the failure). It keeps the last version's
/// tables mapped for the next queries on it. Ends when its input ends. It lowers itself to the
/// idle priority before the first request that asks for it.
pub fn run_worker() -> i32 {
    let mut lowered = false;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).min(4);
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    let mut engine: Option<Engine> = None;
    loop {
        let mut len = [0u8; 4];
        if input.read_exact(&mut len).is_err() {
            return 0;
        }
        let mut buf = vec![0u8; u32::from_le_bytes(len) as usize];
        if input.read_exact(&mut buf).is_err() {
            return 2;
        }
        let answer = serde_json::from_slice::<Request>(&buf)
            .map_err(|e| Failure::Invalid(format!("bad request: {e}")))
            .and_then(|request| {
                if request.idle && !std::mem::replace(&mut lowered, true) {
                    lower_priority();
                }
                if engine.is_none() {
                    engine = Some(Engine::new(threads, request.memory_bytes as usize).map_err(Failure::Invalid)?);
                }
                let Some(engine) = engine.as_mut() else { return Err(Failure::Invalid("no engine".into())) };
                // A panic inside the engine on some query is that query's failure, not the
                // worker's: the analyst gets the reason, the worker stays up.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    if request.describe {
                        engine.describe(&request.tables_dir, &request.tables, &request.sql).map(|b| (ROWS, b))
                    } else if request.stream {
                        let mut emit = |piece: Piece| -> std::io::Result<()> {
                            match piece {
                                Piece::Schema(message) => write_frame(&mut output, STREAM_SCHEMA, &[&message]),
                                Piece::Batch { header, body } => {
                                    let len = (header.len() as u32).to_le_bytes();
                                    write_frame(&mut output, STREAM_BATCH, &[&len, &header, &body])
                                }
                            }
                        };
                        engine
                            .stream(&request.tables_dir, &request.tables, &request.sql, request.max_rows, &mut emit)
                            .map(|()| (STREAM_END, Vec::new()))
                    } else {
                        engine
                            .answer(&request.tables_dir, &request.tables, &request.sql, request.max_rows)
                            .and_then(|(schema, batches)| reply(&schema, &batches, request.answer_file.as_deref()))
                    }
                }))
                .unwrap_or_else(|panic| {
                    let reason = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| panic.downcast_ref::<&str>().copied())
                        .unwrap_or("unknown reason");
                    Err(Failure::Invalid(format!("the SQL engine cannot run this query ({reason})")))
                })
            });
        let (status, payload) = match answer {
            Ok(reply) => reply,
            Err(Failure::Invalid(reason)) => (QUERY_FAILED, reason.into_bytes()),
            Err(Failure::Memory) => (OUT_OF_MEMORY, Vec::new()),
        };
        if write_frame(&mut output, status, &[&payload]).is_err() {
            return 2;
        }
    }
}

/// Writes one message of the worker's answer: its status byte, the parts' length (u64, little
/// endian) and the parts.
fn write_frame(output: &mut impl Write, status: u8, parts: &[&[u8]]) -> std::io::Result<()> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    output.write_all(&[status])?;
    output.write_all(&(len as u64).to_le_bytes())?;
    for part in parts {
        output.write_all(part)?;
    }
    output.flush()
}

/// An answer as the worker sends it: inline ([`ROWS`] and the stream), or, past
/// [`INLINE_BYTES`] with a file named, written there ([`ROWS_IN_FILE`]): one copy into the page
/// cache, which the service maps, instead of two through a pipe.
fn reply(schema: &ArrowSchema, batches: &[ArrowBatch], file: Option<&Path>) -> Result<(u8, Vec<u8>), Failure> {
    let bytes: usize = batches.iter().map(super::engine::batch_bytes).sum();
    match file {
        Some(path) if bytes > INLINE_BYTES => {
            let written = std::fs::File::create(path).map_err(|e| e.to_string()).and_then(|f| {
                super::engine::write_answer(std::io::BufWriter::with_capacity(1 << 20, f), schema, batches)
            });
            written.map_err(|e| Failure::Invalid(format!("cannot write the answer: {e}")))?;
            Ok((ROWS_IN_FILE, Vec::new()))
        }
        _ => {
            let mut out = Vec::with_capacity(bytes + 4096);
            super::engine::write_answer(&mut out, schema, batches).map_err(Failure::Invalid)?;
            Ok((ROWS, out))
        }
    }
}

/// The `catalog` table of a snapshot as analysts' SQL sees it: the validated export as loaded
/// (input columns, text as text), its ids, and the folded fuel name the views read.
pub fn catalog_frame(snapshot: &Snapshot) -> PolarsResult<DataFrame> {
    let frame = snapshot.table.frame();
    // Each id written into the column's buffer as it is made (not a million strings kept first).
    let ids = StringChunked::from_iter_values(
        "id".into(),
        (0..snapshot.table.len() as u32).map(|r| snapshot.table.id_at(r).to_string()),
    );
    let mut columns: Vec<Column> = vec![ids.into_column()];
    for spec in COLUMNS {
        let c = frame.column(spec.name)?;
        let c = if DICTIONARY_ENCODED.contains(&spec.name) { c.cast(&DataType::String)? } else { c.clone() };
        columns.push(c);
    }
    let mut df = DataFrame::new_infer_height(columns)?;
    let fuel = crate::engine::dataset::load::fuel_fold(&df)?;
    df.with_column(fuel)?;
    Ok(df)
}

/// A folder being written by a process that is gone, or another version's folder.
fn stale(name: &str, keep: &str) -> bool {
    match name.strip_prefix('.') {
        // `.VERSION.PID.tmp`
        Some(tmp) => tmp
            .strip_suffix(".tmp")
            .and_then(|t| t.rsplit('.').next())
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_some_and(|pid| pid != std::process::id() && crate::process::gone(pid)),
        None => name != keep,
    }
}

/// Makes the folder `target` in `dir` of `version`'s tables: its export (the copy the load
/// kept, moved in; written from `snapshot` when none was kept) and its views' statements. In a
/// temporary folder first, renamed into place once complete, so a folder is never half-made.
/// Removes the other versions' folders and the temporary folders of processes that are gone.
fn make_tables(
    dir: &Path,
    version: &str,
    views: &Views,
    snapshot: Option<&Snapshot>,
    target: &Path,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".{version}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let made = (|| {
        std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create a folder of tables: {e}"))?;
        let export = tmp.join(EXPORT);
        let moved = crate::engine::dataset::load::kept_export(version)
            .is_some_and(|kept| std::fs::rename(&kept, &export).is_ok() || std::fs::copy(&kept, &export).is_ok());
        if !moved {
            write_export(&export, snapshot.ok_or("the export was not kept")?)?;
        }
        let statements = Statements::of(views);
        let text = serde_json::to_vec(&statements).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join(STATEMENTS), text).map_err(|e| format!("cannot write the views: {e}"))?;
        std::fs::rename(&tmp, target).map_err(|e| format!("cannot rename a folder of tables: {e}"))
    })();
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(format!("cannot prepare the SQL tables: {e}"));
    }
    let keep = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != EXPORTS && stale(&name, &keep) {
                let _ = std::fs::remove_dir_all(entry.path());
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    Ok(())
}

/// Writes the export of a snapshot whose load kept no copy (a snapshot built from bytes in
/// memory): its `catalog` (ids and typed columns) as Parquet, which the worker types as it types
/// any export.
fn write_export(path: &Path, snapshot: &Snapshot) -> Result<(), String> {
    let failed = |e: &dyn std::fmt::Display| format!("cannot write the export: {e}");
    let mut frame = catalog_frame(snapshot).map_err(|e| failed(&e))?;
    let mut bytes = Vec::new();
    ParquetWriter::new(&mut bytes).finish(&mut frame).map_err(|e| failed(&e))?;
    super::tables::write_export_copy(&bytes, path).map_err(|e| failed(&e))
}

/// The folder of the exports the loads keep, in the folder of tables (see
/// [`crate::engine::dataset::load::keep_exports_in`]).
const EXPORTS: &str = "exports";

/// A warm worker kept between queries, with the catalog file it has loaded.
struct Warm {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    answers: std::sync::mpsc::Receiver<Option<(u8, Vec<u8>)>>,
    stderr: std::sync::Arc<Mutex<String>>,
    /// The folder of tables it has mapped.
    tables_dir: PathBuf,
}

impl Warm {
    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The service's side: worker slots and the tables of the dataset version serving.
pub struct Runner {
    /// Warm workers waiting for a query (at most `workers`).
    idle: Mutex<Vec<Warm>>,
    limits: SqlLimits,
    /// Queries running now.
    running: Arc<Mutex<usize>>,
    /// The folder of the tables' folders (one per dataset version, the latest kept).
    dir: PathBuf,
    /// Serialises making a version's folder of tables.
    writing: Mutex<()>,
    /// The process writing a version's tables ahead, if one was started (its id).
    ahead: Arc<Mutex<Option<u32>>>,
    /// The version whose tables were last considered for writing ahead.
    ahead_version: Mutex<Option<String>>,
    /// The program to start as a worker (this binary).
    program: PathBuf,
    /// Where workers write large answers (in memory where the machine has a tmpfs), if anywhere.
    answers: Option<PathBuf>,
    /// The version a worker is readied on while the first load runs ([`Runner::warm_early`]),
    /// until that load is refused ([`Runner::abandon_early`]).
    early: Mutex<Option<String>>,
}

/// An answer of a worker's (an Arrow IPC stream): read through the pipe, or mapped from the file
/// it wrote (removed once mapped).
pub enum Answer {
    Inline(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl AsRef<[u8]> for Answer {
    fn as_ref(&self) -> &[u8] {
        match self {
            Answer::Inline(bytes) => bytes,
            Answer::Mapped(map) => map,
        }
    }
}

impl std::ops::Deref for Answer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_ref()
    }
}

/// An answer streamed by its worker as it computes it (see [`Runner::ask_stream`]).
pub struct Streaming {
    runner: Arc<Runner>,
    /// The worker, until the stream ends.
    warm: Option<Warm>,
    _slot: Slot,
    deadline: Instant,
    tables_dir: PathBuf,
    /// The answer's schema, as an Arrow IPC message's metadata (a flatbuffer).
    pub schema: Vec<u8>,
}

/// A record batch of a streamed answer, as the worker sent it: an Arrow IPC message's metadata
/// and body, in one buffer.
pub struct BatchMessage {
    pub bytes: Vec<u8>,
    /// Where the metadata (a flatbuffer) is; the body follows it to the end.
    pub header: std::ops::Range<usize>,
}

impl Streaming {
    /// The answer's next record batch, `None` at its end (its worker then kept for the next
    /// query); an error (the time limit, the memory budget, a failure) ends it.
    pub fn next_batch(&mut self) -> Option<Result<BatchMessage, Outcome>> {
        let mut warm = self.warm.take()?;
        match self.runner.receive(&mut warm, self.deadline, None) {
            Received::Message(STREAM_BATCH, bytes) => {
                let header = bytes.get(..4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes);
                match header.map(|h| 4..h as usize + 4).filter(|h| h.end <= bytes.len()) {
                    Some(header) => {
                        self.warm = Some(warm);
                        Some(Ok(BatchMessage { bytes, header }))
                    }
                    None => {
                        warm.stop();
                        Some(Err(Outcome::Failed("the SQL worker sent a damaged batch".into())))
                    }
                }
            }
            Received::Message(STREAM_END, _) => {
                self.runner.keep(warm);
                None
            }
            other => Some(Err(shown(self.runner.failure(warm, other), &self.tables_dir))),
        }
    }

    /// Whether its time limit has passed (a stream nobody read).
    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        if let Some(warm) = self.warm.take() {
            warm.stop();
        }
    }
}

/// `outcome` as a client may read it (no path of the tables' folder).
fn shown(outcome: Outcome, tables_dir: &Path) -> Outcome {
    match outcome {
        Outcome::Invalid(m) => Outcome::Invalid(without_paths(&m, tables_dir)),
        other => other,
    }
}

/// What waiting for a worker's next message gave.
enum Received {
    /// A message: its status byte and payload.
    Message(u8, Vec<u8>),
    /// The worker is gone (its output ended).
    Gone,
    /// The deadline passed first.
    TimedOut,
    /// The client cancelled meanwhile.
    Cancelled,
}

/// Removes a file when dropped (an answer file the worker may have left half-written).
struct Removed<'a>(Option<&'a Path>);

impl Drop for Removed<'_> {
    fn drop(&mut self) {
        if let Some(path) = self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Maps the answer a worker wrote to `path`, and removes the file (the mapping keeps it).
fn mapped(path: &Path) -> Result<Answer, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open the SQL worker's answer: {e}"))?;
    let _ = std::fs::remove_file(path);
    // SAFETY: the file is this process's (in its own folder, named once per query) and no longer
    // written: the worker answered, and it is unlinked, so nothing else can open and change it.
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) }
        .map_err(|e| format!("cannot map the SQL worker's answer: {e}"))?;
    Ok(Answer::Mapped(map))
}

/// The folder of the workers' large answers: in `/dev/shm` where it is a writable tmpfs (the
/// answer never touches a disk), else `fallback`; `None` when neither can be made.
fn answers_dir(fallback: PathBuf) -> Option<PathBuf> {
    let shm = Path::new("/dev/shm");
    let candidates = shm
        .is_dir()
        .then(|| crate::process::scratch_dir_in(shm, "eco-insights-answers"))
        .into_iter()
        .chain(std::iter::once(fallback));
    for dir in candidates {
        let _ = std::fs::remove_dir_all(&dir);
        if std::fs::create_dir_all(&dir).is_ok() {
            return Some(dir);
        }
    }
    None
}

/// Gives a slot back when the query ends, however it ends.
struct Slot(Arc<Mutex<usize>>);

impl Drop for Slot {
    fn drop(&mut self) {
        let mut n = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
    }
}

impl Runner {
    pub fn new(limits: SqlLimits) -> Runner {
        // The tables of services that are gone are removed (a folder per process id).
        let dir = crate::process::scratch_dir("eco-insights-sql");
        // A folder named with this process's id is a stopped process's whose id this one reuses.
        let _ = std::fs::remove_dir_all(&dir);
        let program = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("eco-insights"));
        let answers = answers_dir(crate::process::scratch_dir("eco-insights-answers"));
        Runner {
            answers,
            limits,
            idle: Mutex::new(Vec::new()),
            running: Default::default(),
            dir,
            writing: Default::default(),
            ahead: Default::default(),
            ahead_version: Default::default(),
            program,
            early: Default::default(),
        }
    }

    /// Stops the warm workers and removes this process's scratch folders (the tables of the
    /// versions served, the folder of large answers), once the service has stopped: nothing is
    /// left for the next start to remove. A table being written meanwhile fails to finish; its
    /// folder is removed by the next start (its process gone).
    pub fn remove_scratch(&self) {
        if let Some(pid) = self.ahead.lock().unwrap_or_else(|e| e.into_inner()).take() {
            stop_process(pid);
        }
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()));
        idle.into_iter().for_each(Warm::stop);
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(answers) = &self.answers {
            let _ = std::fs::remove_dir_all(answers);
        }
    }

    pub fn limits(&self) -> SqlLimits {
        self.limits
    }

    /// The folder where loads keep the exports they read, for the versions' tables.
    pub fn exports_dir(&self) -> PathBuf {
        self.dir.join(EXPORTS)
    }

    /// The folder of `version`'s tables, made on first use (in milliseconds: the kept export is
    /// moved in; older versions' folders are removed then), and its tables then written ahead
    /// when it is small enough and serves; with whether this call made the folder.
    fn tables_dir(&self, version: &SqlVersion) -> Result<(PathBuf, bool), String> {
        let info = version.info();
        let path = self.dir.join(&info.version);
        let begun = |v: &Option<String>| v.as_deref() == Some(info.version.as_str());
        if path.is_dir() && begun(&self.ahead_version.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok((path, false));
        }
        let made = self.version_dir(&info.version, &info.views, version.snapshot())?;
        // Not while the first load still builds the API's table: the writing waits for it.
        if version.served() {
            let mut ahead = self.ahead_version.lock().unwrap_or_else(|e| e.into_inner());
            if !begun(&ahead) {
                *ahead = Some(info.version.clone());
                if info.rows <= super::mapped::AHEAD_MAX_ROWS {
                    self.write_ahead(&path, offered_tables(&info.views));
                }
            }
        }
        Ok((path, made))
    }

    /// Makes the folder of `version`'s tables unless it is there (see [`make_tables`]), one at a
    /// time: whether this call made it.
    fn version_dir(&self, version: &str, views: &Views, snapshot: Option<&Snapshot>) -> Result<bool, String> {
        let path = self.dir.join(version);
        let _one = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        if path.is_dir() {
            return Ok(false);
        }
        make_tables(&self.dir, version, views, snapshot, &path).map(|()| true)
    }

    /// Readies a warm worker on `version`'s export while the first load still computes the
    /// version's table (the load has kept the export and knows its version): its folder of
    /// tables made, a worker started at the normal priority and its session made. It stays at
    /// the normal priority through the queries asked before the version serves
    /// ([`SqlVersion::Accepted`]), and lowers itself to the idle one, like every worker, with the
    /// first query once it serves. The first SQL query pays only for itself. Only for a first
    /// load: nothing else serves yet, so no folder in use is replaced. If the load is then
    /// refused, [`Runner::abandon_early`] removes them.
    pub fn warm_early(self: &Arc<Self>, version: &str, views: &Views) {
        let (runner, version, views) = (Arc::clone(self), version.to_string(), views.clone());
        *self.early.lock().unwrap_or_else(|e| e.into_inner()) = Some(version.clone());
        let spawned = std::thread::Builder::new().name("eco-sql-early".into()).spawn(move || {
            let started = Instant::now();
            let readied = (|| {
                runner.version_dir(&version, &views, None).map_err(Outcome::Failed)?;
                let path = runner.dir.join(&version);
                let _slot = runner.slot()?;
                // Put among the idle workers, it is the one the readying query is sent to (no
                // query runs before the load has accepted the export). It stays at the normal
                // priority until the version serves: queries before then wait for nothing else.
                runner.keep(runner.spawn_warm(&path, Priority::Normal).map_err(Outcome::Failed)?);
                let mut request = runner.request_on(path, offered_tables(&views), READY_SQL);
                request.idle = false;
                runner.ask_warm(&request, started, &std::sync::atomic::AtomicBool::new(false)).map(drop)
            })();
            match readied {
                Ok(()) => tracing::info!(
                    %version,
                    ms = started.elapsed().as_millis() as u64,
                    "SQL worker readied while the dataset loads"
                ),
                Err(outcome) => tracing::warn!(%version, "no SQL worker could be readied early: {outcome:?}"),
            }
            // The load was refused while the worker was readied: what it made goes now.
            if runner.early.lock().unwrap_or_else(|e| e.into_inner()).as_deref() != Some(version.as_str()) {
                runner.remove_version(&version);
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot start readying an SQL worker early: {e}");
        }
    }

    /// Says that the first load, whose export a worker was readied on ([`Runner::warm_early`]),
    /// was refused: that worker is stopped and its folder (the export's copy, hundreds of MB for
    /// a large catalog) removed, instead of waiting for a valid export to replace them. A worker
    /// still being readied is removed by its readying thread once it is.
    pub fn abandon_early(&self) {
        let early = self.early.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(version) = early {
            self.remove_version(&version);
            tracing::info!(%version, "the SQL worker readied on the refused export is stopped");
        }
    }

    /// Whether analysts' SQL can read `version` before it serves: its folder of tables is made,
    /// or the export its load kept is there to be moved in.
    pub fn can_read(&self, version: &str) -> bool {
        self.dir.join(version).is_dir() || crate::engine::dataset::load::kept_export(version).is_some()
    }

    /// Stops the idle workers on `version`'s folder of tables and removes it, with the export
    /// kept for it if it was not moved in yet.
    fn remove_version(&self, version: &str) {
        let path = self.dir.join(version);
        let stale: Vec<Warm> = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            let (stale, other) = idle.drain(..).partition(|w| w.tables_dir == path);
            *idle = other;
            stale
        };
        stale.into_iter().for_each(Warm::stop);
        let _one = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        let _ = std::fs::remove_dir_all(&path);
        if let Some(kept) = crate::engine::dataset::load::kept_export(version) {
            let _ = std::fs::remove_file(kept);
        }
    }

    /// Starts writing the tables of the version folder `path` ahead, in a process of its own at
    /// the idle priority (the one writing an older version's is stopped); its end is logged.
    fn write_ahead(&self, path: &Path, tables: Vec<String>) {
        let mut command = Command::new(&self.program);
        command
            .arg("sql-tables")
            .arg(path)
            .args(&tables)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        at_idle_priority(&mut command, None, true);
        let mut ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pid) = ahead.take() {
            stop_process(pid);
        }
        let child = match command.spawn() {
            Ok(child) => child,
            Err(e) => return tracing::warn!("cannot start writing the SQL tables ahead: {e}"),
        };
        *ahead = Some(child.id());
        let (slot, version) = (Arc::clone(&self.ahead), path.file_name().map(|n| n.to_string_lossy().into_owned()));
        let started = Instant::now();
        let waited = std::thread::Builder::new().name("eco-sql-ahead".into()).spawn(move || {
            let pid = child.id();
            let output = child.wait_with_output();
            let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
            if *slot == Some(pid) {
                *slot = None;
            }
            match output {
                Ok(o) if o.status.success() => tracing::info!(
                    version = version.as_deref().unwrap_or_default(),
                    ms = started.elapsed().as_millis() as u64,
                    "SQL tables written ahead"
                ),
                Ok(o) => tracing::warn!(
                    version = version.as_deref().unwrap_or_default(),
                    "the SQL tables were not written ahead ({}): {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
                Err(e) => tracing::warn!("the SQL tables were not written ahead: {e}"),
            }
        });
        if let Err(e) = waited {
            tracing::warn!("cannot watch the process writing the SQL tables ahead: {e}");
        }
    }

    /// Makes the folder of `snapshot`'s version's tables as soon as it serves, so the export the
    /// load kept does not wait in the folder of exports, and readies a warm worker on it (its
    /// session made: the export's footer read, the views planned), so the version's first query
    /// pays only for itself. Nothing more when the folder was there already: a worker was
    /// readied on it while the version loaded, or a query came first and has its worker (the
    /// readying query would take that worker from an analyst's query, or start a second one,
    /// forking the whole service, while the first answers).
    pub fn prepare(&self, snapshot: &Arc<Snapshot>) {
        let snapshot = &SqlVersion::Served(Arc::clone(snapshot));
        match self.tables_dir(snapshot) {
            Ok((_, true)) => {}
            Ok((_, false)) => return,
            Err(e) => {
                return tracing::warn!(version = %snapshot.info().version, "the SQL tables cannot be prepared: {e}")
            }
        }
        match self.run(snapshot, READY_SQL) {
            Outcome::Rows { .. } | Outcome::Busy => {}
            other => tracing::warn!(version = %snapshot.info().version, "no SQL worker could be readied: {other:?}"),
        }
    }

    /// Runs a checked statement against `version` within the limits. Blocks the calling thread
    /// for at most about the time limit.
    pub fn run(&self, version: &SqlVersion, sql: &str) -> Outcome {
        self.run_cancellable(version, sql, &std::sync::atomic::AtomicBool::new(false))
    }

    /// [`Runner::run`], stopped (its worker killed, [`Outcome::Cancelled`]) within some 25 ms of
    /// `cancel` becoming true (a client's cancel request).
    pub fn run_cancellable(&self, version: &SqlVersion, sql: &str, cancel: &std::sync::atomic::AtomicBool) -> Outcome {
        self.ask(version, sql, cancel, false)
    }

    /// Describes a statement with `$n` parameters: an answer with no rows whose columns are the
    /// statement's, then one column per parameter named [`super::engine::PARAMETER`]`n`, of its inferred type
    /// (see [`Engine::describe`]).
    pub fn describe(&self, version: &SqlVersion, sql: &str, cancel: &std::sync::atomic::AtomicBool) -> Outcome {
        self.ask(version, sql, cancel, true)
    }

    fn ask(&self, version: &SqlVersion, sql: &str, cancel: &std::sync::atomic::AtomicBool, describe: bool) -> Outcome {
        match self.ask_ipc(version, sql, cancel, describe) {
            Ok(answer) => match IpcStreamReader::new(std::io::Cursor::new(&answer[..])).finish() {
                Ok(frame) => {
                    let truncated = frame.height() > self.limits.max_rows;
                    let frame = if truncated { frame.head(Some(self.limits.max_rows)) } else { frame };
                    Outcome::Rows { frame, truncated }
                }
                Err(e) => Outcome::Failed(format!("cannot read the SQL worker's answer: {e}")),
            },
            Err(outcome) => outcome,
        }
    }

    /// [`Runner::run_cancellable`] (or [`Runner::describe`]) answered as the worker wrote it: an
    /// Arrow IPC stream of at most `max_rows + 1` rows (a door that hands Arrow on cuts it to
    /// `max_rows`); any other outcome is the error.
    pub fn ask_ipc(
        &self,
        version: &SqlVersion,
        sql: &str,
        cancel: &std::sync::atomic::AtomicBool,
        describe: bool,
    ) -> Result<Answer, Outcome> {
        let _slot = self.slot()?;
        let started = Instant::now();
        let request = self.request(version, sql, |r| {
            r.describe = describe;
            r.answer_file = self.answers.as_ref().map(|d| d.join(uuid::Uuid::new_v4().simple().to_string()));
        })?;
        self.ask_warm(&request, started, cancel).map_err(|outcome| shown(outcome, &request.tables_dir))
    }

    /// Runs a checked statement against `version` within the limits, its answer streamed as
    /// the worker computes it (at most `max_rows` rows, the rest cut): the stream, once the
    /// worker has planned the statement and sent the answer's schema. The worker and its slot
    /// are the stream's until it ends or is dropped (a stream dropped before its end stops its
    /// worker); the time limit counts from now to the stream's end.
    pub fn ask_stream(self: &Arc<Self>, version: &SqlVersion, sql: &str) -> Result<Streaming, Outcome> {
        let slot = self.slot()?;
        let started = Instant::now();
        let request = self.request(version, sql, |r| r.stream = true)?;
        let mut warm = self.send(&request)?;
        let deadline = started + self.limits.timeout;
        match self.receive(&mut warm, deadline, None) {
            Received::Message(STREAM_SCHEMA, schema) => Ok(Streaming {
                runner: Arc::clone(self),
                warm: Some(warm),
                _slot: slot,
                deadline,
                tables_dir: request.tables_dir,
                schema,
            }),
            other => Err(shown(self.failure(warm, other), &request.tables_dir)),
        }
    }

    /// A worker slot, or [`Outcome::Busy`] when every one is taken.
    fn slot(&self) -> Result<Slot, Outcome> {
        let mut n = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if *n >= self.limits.workers {
            return Err(Outcome::Busy);
        }
        *n += 1;
        Ok(Slot(Arc::clone(&self.running)))
    }

    /// The request for `sql` on `version`'s tables, as `shape` completes it.
    fn request(&self, version: &SqlVersion, sql: &str, shape: impl FnOnce(&mut Request)) -> Result<Request, Outcome> {
        let (tables_dir, _) = self.tables_dir(version).map_err(Outcome::Failed)?;
        let mut request = self.request_on(tables_dir, offered_tables(&version.info().views), sql);
        request.idle = version.served();
        shape(&mut request);
        Ok(request)
    }

    /// The plain request for `sql` on the tables in `tables_dir`.
    fn request_on(&self, tables_dir: PathBuf, tables: Vec<String>, sql: &str) -> Request {
        Request {
            tables_dir,
            tables,
            sql: sql.to_string(),
            max_rows: self.limits.max_rows,
            memory_bytes: self.limits.memory_bytes,
            describe: false,
            answer_file: None,
            stream: false,
            idle: true,
        }
    }

    /// The worker command, within the limits (memory budget, priority, threads).
    fn command(&self, priority: Priority) -> Command {
        let budget = self.limits.memory_bytes;
        let mut command = Command::new(&self.program);
        command.arg("sql-worker");
        command
            .env("POLARS_MAX_THREADS", "2")
            .env("RAYON_NUM_THREADS", "2")
            .env("MIMALLOC_PURGE_DELAY", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        at_idle_priority(&mut command, Some(budget), priority == Priority::Idle);
        command
    }

    fn too_expensive_time(&self) -> Outcome {
        let ms = self.limits.timeout.as_millis();
        Outcome::TooExpensive(Limit::Time, format!("a consulta excedeu o tempo limite de {ms} ms e foi interrompida"))
    }

    fn too_expensive_memory(&self) -> Outcome {
        Outcome::TooExpensive(
            Limit::Memory,
            format!(
                "a consulta excedeu o limite de memória de {} MB e foi interrompida",
                self.limits.memory_bytes / (1024 * 1024)
            ),
        )
    }

    /// Starts a warm worker.
    fn spawn_warm(&self, tables_dir: &Path, priority: Priority) -> Result<Warm, String> {
        let mut command = self.command(priority);
        let mut child = command.spawn().map_err(|e| format!("cannot start the SQL worker: {e}"))?;
        let stdin = child.stdin.take().ok_or("no worker input")?;
        let mut stdout = child.stdout.take().ok_or("no worker output")?;
        widen_pipe(&stdout);
        let stderr_pipe = child.stderr.take().ok_or("no worker error output")?;
        let (send, answers) = std::sync::mpsc::channel();
        let budget = self.limits.memory_bytes;
        std::thread::Builder::new()
            .name("eco-sql-answers".into())
            .spawn(move || loop {
                let mut head = [0u8; 9];
                if stdout.read_exact(&mut head).is_err() {
                    let _ = send.send(None);
                    return;
                }
                let len = u64::from_le_bytes(head[1..].try_into().unwrap_or_default());
                if len > budget {
                    let _ = send.send(None);
                    return;
                }
                // Read into spare capacity (no zeroing of an answer that can be hundreds of MB).
                let mut payload = Vec::with_capacity(len as usize);
                match (&mut stdout).take(len).read_to_end(&mut payload) {
                    Ok(n) if n as u64 == len => {}
                    _ => {
                        let _ = send.send(None);
                        return;
                    }
                }
                if send.send(Some((head[0], payload))).is_err() {
                    return;
                }
            })
            .map_err(|e| e.to_string())?;
        let stderr = std::sync::Arc::new(Mutex::new(String::new()));
        let tail = std::sync::Arc::clone(&stderr);
        std::thread::Builder::new()
            .name("eco-sql-stderr".into())
            .spawn(move || {
                let mut reader = std::io::BufReader::new(stderr_pipe);
                let mut line = String::new();
                while std::io::BufRead::read_line(&mut reader, &mut line).map(|n| n > 0).unwrap_or(false) {
                    let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                    if t.len() > 16 * 1024 {
                        t.clear();
                    }
                    t.push_str(&line);
                    line.clear();
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(Warm { child, stdin, answers, stderr, tables_dir: tables_dir.to_path_buf() })
    }

    /// A warm worker (one kept idle for this catalog, or a new one) with `request` sent to it.
    fn send(&self, request: &Request) -> Result<Warm, Outcome> {
        let kept = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            let (same, other): (Vec<Warm>, Vec<Warm>) =
                idle.drain(..).partition(|w| w.tables_dir == request.tables_dir);
            let mut same = same;
            let chosen = same.pop();
            idle.extend(same);
            drop(idle);
            for w in other {
                w.stop();
            }
            chosen
        };
        let mut warm = match kept {
            Some(w) => w,
            None => {
                let priority = if request.idle { Priority::Idle } else { Priority::Normal };
                self.spawn_warm(&request.tables_dir, priority).map_err(Outcome::Failed)?
            }
        };
        let body = serde_json::to_vec(request).unwrap_or_default();
        let sent = warm
            .stdin
            .write_all(&(body.len() as u32).to_le_bytes())
            .and_then(|()| warm.stdin.write_all(&body))
            .and_then(|()| warm.stdin.flush());
        if let Err(e) = sent {
            warm.stop();
            return Err(Outcome::Failed(format!("cannot reach the SQL worker: {e}")));
        }
        Ok(warm)
    }

    /// The worker's next message, waited for until `deadline`, or until `cancel` (checked every
    /// 25 ms) becomes true.
    fn receive(&self, warm: &mut Warm, deadline: Instant, cancel: Option<&std::sync::atomic::AtomicBool>) -> Received {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match warm.answers.recv_timeout(left.min(Duration::from_millis(25))) {
                Ok(Some((status, payload))) => return Received::Message(status, payload),
                Ok(None) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Received::Gone,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if left.is_zero() => return Received::TimedOut,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed)) {
                        return Received::Cancelled;
                    }
                }
            }
        }
    }

    /// Runs a request on a warm worker (see [`Runner::send`]), which goes back to the idle ones
    /// when it answered in time, and is killed otherwise.
    fn ask_warm(
        &self,
        request: &Request,
        started: Instant,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<Answer, Outcome> {
        let _removed = Removed(request.answer_file.as_deref());
        let mut warm = self.send(request)?;
        match self.receive(&mut warm, started + self.limits.timeout, Some(cancel)) {
            Received::Message(ROWS, bytes) => {
                self.keep(warm);
                Ok(Answer::Inline(bytes))
            }
            Received::Message(ROWS_IN_FILE, _) => {
                self.keep(warm);
                let path = request.answer_file.as_deref().ok_or_else(|| Outcome::Failed("no answer file".into()))?;
                mapped(path).map_err(Outcome::Failed)
            }
            other => Err(self.failure(warm, other)),
        }
    }

    /// What a worker's message other than rows means (its failure, the memory budget, its
    /// death, the time limit, a cancel); the worker is kept when it is still of use, stopped
    /// otherwise.
    fn failure(&self, mut warm: Warm, received: Received) -> Outcome {
        match received {
            Received::Message(OUT_OF_MEMORY, _) => {
                self.keep(warm);
                self.too_expensive_memory()
            }
            Received::Message(QUERY_FAILED, reason) => {
                let reason = String::from_utf8_lossy(&reason).into_owned();
                self.keep(warm);
                if reason.contains("memory allocation") || reason.contains("capacity overflow") {
                    return self.too_expensive_memory();
                }
                Outcome::Invalid(reason.lines().next().unwrap_or("the query failed").to_string())
            }
            Received::Message(status, _) => {
                warm.stop();
                Outcome::Failed(format!("the SQL worker answered out of turn ({status})"))
            }
            Received::Gone => {
                // The worker died (an allocation over its budget aborts it).
                let status = warm.child.wait();
                let stderr = warm.stderr.lock().map(|s| s.clone()).unwrap_or_default();
                let signalled = status.as_ref().map(|s| s.code().is_none()).unwrap_or(true);
                if signalled || stderr.contains("memory allocation") {
                    return self.too_expensive_memory();
                }
                Outcome::Failed(format!("the SQL worker ended: {}", stderr.trim()))
            }
            Received::TimedOut => {
                warm.stop();
                self.too_expensive_time()
            }
            Received::Cancelled => {
                warm.stop();
                Outcome::Cancelled
            }
        }
    }

    /// Puts a worker back among the idle ones (or stops it when enough are idle).
    fn keep(&self, warm: Warm) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.limits.workers {
            idle.push(warm);
        } else {
            drop(idle);
            warm.stop();
        }
    }
}

/// A worker's reason with the tables' folder (or any absolute path) taken out.
fn without_paths(message: &str, tables_dir: &Path) -> String {
    let shown = tables_dir.display().to_string();
    let message = message.replace(&shown, "<tabelas>");
    message
        .split_whitespace()
        .map(|w| if w.trim_matches(|c: char| "'\"`(),".contains(c)).starts_with('/') { "<caminho>" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot whose load kept no export gets one written from its catalog, with its views'
    /// statements; the folder replaces the other versions' and spares the folder of exports.
    #[test]
    fn a_folder_of_tables_holds_the_export_and_the_views() {
        let mut df = crate::sample::generate_catalog(200, 7).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let queries = Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
        let views = Views::read(&queries, &crate::engine::dataset::views::CostConfig::default()).unwrap();
        let snapshot = crate::engine::load::load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap();
        let dir = tempfile_dir();
        std::fs::create_dir_all(dir.join(EXPORTS)).unwrap();
        std::fs::create_dir_all(dir.join("an-older-version")).unwrap();
        let target = dir.join(&snapshot.info.version);
        // Without the snapshot, nothing kept: refused (nothing to write the export from).
        let refused = make_tables(&dir, &snapshot.info.version, &views, None, &target).unwrap_err();
        assert!(refused.contains("not kept"), "{refused}");
        assert!(!target.exists() && dir.join("an-older-version").is_dir(), "a refused folder changes nothing");
        make_tables(&dir, &snapshot.info.version, &views, Some(&snapshot), &target).unwrap();
        let export = std::fs::File::open(target.join(EXPORT)).unwrap();
        let written = ParquetReader::new(export).finish().unwrap();
        assert_eq!(written.height(), 200);
        assert_eq!(written.column("id").unwrap().str().unwrap().get(0), Some(snapshot.id_at(0).to_string().as_str()));
        let statements: Statements = serde_json::from_slice(&std::fs::read(target.join(STATEMENTS)).unwrap()).unwrap();
        assert_eq!(statements.statements.len(), views.statements.len());
        assert!(statements.definitions().contains_key("vw_eco_score"));
        assert!(!dir.join("an-older-version").exists(), "other versions' folders are removed");
        assert!(dir.join(EXPORTS).is_dir(), "the folder of exports stays");
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("eco-worker-test-{}-{}", std::process::id(), uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
