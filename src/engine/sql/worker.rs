//! One analyst query in a process of its own: the worker's side (`eco-insights sql-worker`,
//! reading its request on standard input and writing the rows as an Arrow IPC stream on standard
//! output) and the service's side ([`Runner`]), which starts it within the limits, waits at most
//! the time limit and kills it past that.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use polars::prelude::*;
use polars::sql::SQLContext;
use serde::{Deserialize, Serialize};

use super::SqlLimits;
use crate::engine::dataset::schema::{COLUMNS, DICTIONARY_ENCODED};
use crate::engine::dataset::snapshot::Snapshot;
use crate::engine::dataset::views::{CostConfig, Views};

/// The worker's exit status when the query itself failed (its reason on standard error).
const QUERY_FAILED: i32 = 3;

/// What the service sends a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// The dataset's `catalog` table (Arrow IPC file).
    pub catalog: PathBuf,
    /// The views' files it was served with, and its cost configuration.
    pub sources: Vec<(String, String)>,
    pub cost: CostConfig,
    /// The checked statement.
    pub sql: String,
    pub max_rows: usize,
}

/// How one query ended.
#[derive(Debug)]
pub enum Outcome {
    /// Its rows (at most `max_rows`) and whether more were cut.
    Rows { frame: DataFrame, truncated: bool },
    /// The query is wrong (an unknown column, a type error...): the reason, without paths.
    Invalid(String),
    /// Stopped at a limit: which one.
    TooExpensive(String),
    /// Every worker slot is taken.
    Busy,
    /// The dataset version's catalog file is still being written (a large dataset's first
    /// query): retry after about this many seconds.
    Preparing(u64),
    /// The worker could not run (the reason is logged).
    Failed(String),
}

/// The table names a query may read: `catalog` and every table the views create.
pub fn offered_tables(views: &Views) -> Vec<String> {
    let mut names = vec!["catalog".to_string()];
    for (_, stmt) in &views.statements {
        let words: Vec<&str> = stmt.split_whitespace().take(3).collect();
        if let [create, table, name] = words[..] {
            if create.eq_ignore_ascii_case("create") && table.eq_ignore_ascii_case("table") {
                let name = name.trim_matches('"').to_lowercase();
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    names
}

/// The worker: reads a [`Request`] on standard input, runs it, writes the rows on standard
/// output. Exits 0, or [`QUERY_FAILED`] with the reason on standard error.
pub fn run_worker() -> i32 {
    if std::env::var_os(SERVE_ENV).is_some() {
        return serve_worker();
    }
    let mut input = String::new();
    if std::io::stdin().read_to_string(&mut input).is_err() {
        eprintln!("cannot read the request");
        return 2;
    }
    let request: Request = match serde_json::from_str(&input) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bad request: {e}");
            return 2;
        }
    };
    match run_query(&request) {
        Ok(mut frame) => {
            let mut out = std::io::stdout().lock();
            match IpcStreamWriter::new(&mut out).finish(&mut frame) {
                Ok(()) => {
                    let _ = out.flush();
                    0
                }
                Err(e) => {
                    eprintln!("{e}");
                    QUERY_FAILED
                }
            }
        }
        Err(e) => {
            eprintln!("{e}");
            QUERY_FAILED
        }
    }
}

/// Set in a worker's environment: it stays up and answers one framed request after another
/// (see [`serve_worker`]) instead of one request to its end of input.
const SERVE_ENV: &str = "ECO_SQL_WORKER_SERVE";

/// A warm worker: reads requests framed as a little-endian u32 length and the JSON, answers each
/// with a status byte (0: rows, 3: the query failed), a little-endian u64 length and the Arrow IPC
/// stream or the reason. It loads a catalog file once and keeps it in memory for the next
/// queries on it. Ends when its input ends.
fn serve_worker() -> i32 {
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    // The catalog file loaded last: its text columns as text, and the same frame with the
    // low-cardinality text columns dictionary-encoded (group by and joins on codes are about
    // twice as fast).
    let mut loaded: Option<(PathBuf, DataFrame, DataFrame)> = None;
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
            .map_err(|e| polars_err!(ComputeError: "bad request: {e}"))
            .and_then(|request| {
                if loaded.as_ref().is_none_or(|(p, _, _)| *p != request.catalog) {
                    loaded = None;
                    let file = std::fs::File::open(&request.catalog)?;
                    let text = IpcReader::new(file).finish()?;
                    let coded = dictionary_encoded(&text)?;
                    loaded = Some((request.catalog.clone(), text, coded));
                }
                let (text, coded) = match &loaded {
                    Some((_, text, coded)) => (text.clone(), coded.clone()),
                    None => Default::default(),
                };
                let mut frame = query_over(&request, coded.lazy()).or_else(|_| query_over(&request, text.lazy()))?;
                let mut bytes = Vec::new();
                IpcStreamWriter::new(&mut bytes).finish(&mut frame)?;
                Ok(bytes)
            });
        let (status, payload) = match answer {
            Ok(bytes) => (0u8, bytes),
            Err(e) => (QUERY_FAILED as u8, e.to_string().into_bytes()),
        };
        let written = output
            .write_all(&[status])
            .and_then(|()| output.write_all(&(payload.len() as u64).to_le_bytes()))
            .and_then(|()| output.write_all(&payload))
            .and_then(|()| output.flush());
        if written.is_err() {
            return 2;
        }
    }
}

fn run_query(request: &Request) -> PolarsResult<DataFrame> {
    // A lazy scan: only the columns the query (and the views it reads) use are read.
    let path = PlRefPath::try_from_path(&request.catalog)?;
    let catalog = LazyFrame::scan_ipc(path, IpcScanOptions::default(), UnifiedScanArgs::default())?;
    query_over(request, catalog)
}

/// Runs the views and the request's statement over `catalog`; dictionary-encoded columns of the
/// answer are text again.
fn query_over(request: &Request, catalog: LazyFrame) -> PolarsResult<DataFrame> {
    let views = Views::from_sources(&request.sources, &request.cost).map_err(|e| polars_err!(ComputeError: "{e}"))?;
    let mut ctx = SQLContext::new().with_function_registry(crate::engine::dataset::publish::sql_functions());
    ctx.register("catalog", catalog);
    for (_, stmt) in &views.statements {
        let _ = ctx.execute(stmt)?;
    }
    let frame = ctx.execute(&request.sql)?.limit(request.max_rows as IdxSize + 1).collect()?;
    as_text(frame)
}

/// `frame` with its dictionary-encoded text columns as text.
fn as_text(frame: DataFrame) -> PolarsResult<DataFrame> {
    if !frame.columns().iter().any(|c| matches!(c.dtype(), DataType::Categorical(_, _))) {
        return Ok(frame);
    }
    let columns = frame
        .columns()
        .iter()
        .map(|c| match c.dtype() {
            DataType::Categorical(_, _) => c.cast(&DataType::String),
            _ => Ok(c.clone()),
        })
        .collect::<PolarsResult<Vec<_>>>()?;
    DataFrame::new_infer_height(columns)
}

/// The catalog with its [`DICTIONARY_ENCODED`] columns dictionary-encoded, all with one mapping
/// (so two of them compare). A query runs on it first: its answers are those of the text
/// columns (comparisons, ordering, joins and grouping read the values), and a query it cannot
/// plan (a text function such as LOWER or LIKE on such a column) runs again on the text.
fn dictionary_encoded(text: &DataFrame) -> PolarsResult<DataFrame> {
    let dtype = crate::engine::dataset::schema::dictionary_dtype();
    let columns = text
        .columns()
        .iter()
        .map(|c| {
            if DICTIONARY_ENCODED.contains(&c.name().as_str()) && c.dtype() == &DataType::String {
                c.cast(&dtype)
            } else {
                Ok(c.clone())
            }
        })
        .collect::<PolarsResult<Vec<_>>>()?;
    DataFrame::new_infer_height(columns)
}

/// The `catalog` table of a snapshot as analysts' SQL sees it: the validated export as loaded
/// (input columns, text as text), its ids, and the folded fuel name the views read.
pub fn catalog_frame(snapshot: &Snapshot) -> PolarsResult<DataFrame> {
    let frame = snapshot.table.frame();
    let ids: Vec<String> = (0..snapshot.table.len() as u32).map(|r| snapshot.table.id_at(r).to_string()).collect();
    let mut columns: Vec<Column> = vec![Column::new("id".into(), ids)];
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

/// Writes the `catalog` table of `snapshot` to `path` in `dir` (through a temporary file) and
/// removes the other versions' files.
fn write_catalog(dir: &Path, snapshot: &Snapshot, path: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut frame = catalog_frame(snapshot).map_err(|e| e.to_string())?;
    let tmp = dir.join(format!(".catalog-{}.tmp", snapshot.info.version));
    let written = std::fs::File::create(&tmp)
        .map_err(|e| e.to_string())
        .and_then(|f| IpcWriter::new(f).finish(&mut frame).map_err(|e| e.to_string()))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| e.to_string()));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write the catalog file: {e}"));
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.path() != path {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    Ok(())
}

/// A warm worker kept between queries, with the catalog file it has loaded.
struct Warm {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    answers: std::sync::mpsc::Receiver<Option<(u8, Vec<u8>)>>,
    stderr: std::sync::Arc<Mutex<String>>,
    catalog: PathBuf,
}

impl Warm {
    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The service's side: worker slots and the catalog file of the dataset version serving.
pub struct Runner {
    /// Warm workers waiting for a query (at most `workers`).
    idle: Mutex<Vec<Warm>>,
    limits: SqlLimits,
    /// Queries running now.
    running: Mutex<usize>,
    /// The folder of the catalog files (one per dataset version, the latest kept).
    dir: PathBuf,
    /// Serialises writing a version's catalog file.
    writing: std::sync::Arc<Mutex<()>>,
    /// The versions whose catalog file a background thread was started for, and why the last
    /// write of a version failed.
    preparing: std::sync::Arc<Mutex<std::collections::HashMap<String, Option<String>>>>,
    /// The program to start as a worker (this binary).
    program: PathBuf,
}

/// Gives a slot back when the query ends, however it ends.
struct Slot<'a>(&'a Mutex<usize>);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut n = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
    }
}

impl Runner {
    pub fn new(limits: SqlLimits) -> Runner {
        let dir = std::env::temp_dir().join(format!("eco-insights-sql-{}", std::process::id()));
        // The catalog files of services that are gone (a folder per process id).
        if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let gone = name
                    .strip_prefix("eco-insights-sql-")
                    .and_then(|pid| pid.parse::<u32>().ok())
                    .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
                if gone {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let program = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("eco-insights"));
        Runner {
            limits,
            idle: Mutex::new(Vec::new()),
            running: Mutex::new(0),
            dir,
            writing: Default::default(),
            preparing: Default::default(),
            program,
        }
    }

    pub fn limits(&self) -> SqlLimits {
        self.limits
    }

    /// The catalog file of `snapshot`'s version, written on first use by a thread of its own
    /// (older versions' files are removed then), waited for until `deadline`: `Ok(None)` when it
    /// is still being written then (the write goes on; a later query finds it).
    fn catalog_file(&self, snapshot: &Arc<Snapshot>, deadline: Instant) -> Result<Option<PathBuf>, String> {
        let version = snapshot.info.version.clone();
        let path = self.dir.join(format!("catalog-{version}.arrow"));
        if path.is_file() {
            return Ok(Some(path));
        }
        {
            let mut preparing = self.preparing.lock().unwrap_or_else(|e| e.into_inner());
            match preparing.get(&version) {
                Some(Some(failed)) => {
                    let failed = failed.clone();
                    // The next query tries again.
                    preparing.remove(&version);
                    return Err(failed);
                }
                Some(None) => {}
                None => {
                    preparing.insert(version.clone(), None);
                    let (dir, writing, states) =
                        (self.dir.clone(), Arc::clone(&self.writing), Arc::clone(&self.preparing));
                    let snapshot = Arc::clone(snapshot);
                    let (target, v) = (path.clone(), version.clone());
                    let spawned = std::thread::Builder::new().name("eco-sql-catalog".into()).spawn(move || {
                        let written = {
                            let _one = writing.lock().unwrap_or_else(|e| e.into_inner());
                            if target.is_file() {
                                Ok(())
                            } else {
                                write_catalog(&dir, &snapshot, &target)
                            }
                        };
                        let mut states = states.lock().unwrap_or_else(|e| e.into_inner());
                        match written {
                            Ok(()) => drop(states.remove(&v)),
                            Err(e) => drop(states.insert(v, Some(e))),
                        }
                    });
                    if let Err(e) = spawned {
                        preparing.remove(&version);
                        return Err(format!("cannot start writing the catalog file: {e}"));
                    }
                }
            }
        }
        loop {
            if path.is_file() {
                return Ok(Some(path));
            }
            if let Some(Some(_)) = self.preparing.lock().unwrap_or_else(|e| e.into_inner()).get(&version) {
                return self.catalog_file(snapshot, deadline);
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs a checked statement against `snapshot` within the limits. Blocks the calling thread
    /// for at most about the time limit.
    pub fn run(&self, snapshot: &Arc<Snapshot>, sql: &str) -> Outcome {
        {
            let mut n = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if *n >= self.limits.workers {
                return Outcome::Busy;
            }
            *n += 1;
        }
        let _slot = Slot(&self.running);
        let started = Instant::now();
        let catalog = match self.catalog_file(snapshot, started + self.limits.timeout) {
            Ok(Some(p)) => p,
            // Written at some 200 MB/s: the rest of a large dataset's catalog takes seconds.
            Ok(None) => return Outcome::Preparing(5),
            Err(e) => return Outcome::Failed(e),
        };
        let request = Request {
            catalog: catalog.clone(),
            sources: snapshot.info.views.sources.clone(),
            cost: snapshot.info.views.cost.clone(),
            sql: sql.to_string(),
            max_rows: self.limits.max_rows,
        };
        // A worker keeps the catalog in memory when it takes at most half its budget (a query
        // then reads no file); a larger catalog is scanned per query by a worker of its own.
        let size = std::fs::metadata(&catalog).map(|m| m.len()).unwrap_or(u64::MAX);
        let outcome = if size.saturating_mul(2) <= self.limits.memory_bytes {
            self.ask_warm(&request, started)
        } else {
            self.spawn_and_wait(&request, started)
        };
        match outcome {
            Outcome::Invalid(m) => Outcome::Invalid(without_paths(&m, &catalog)),
            other => other,
        }
    }

    /// The worker command, within the limits (memory budget, priority, threads).
    fn command(&self) -> Command {
        let budget = self.limits.memory_bytes;
        let mut command = Command::new(&self.program);
        command
            .arg("sql-worker")
            .env("POLARS_MAX_THREADS", "2")
            .env("MIMALLOC_PURGE_DELAY", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    let limit = libc::rlimit { rlim_cur: budget as libc::rlim_t, rlim_max: budget as libc::rlim_t };
                    libc::setrlimit(libc::RLIMIT_DATA, &limit);
                    // The lowest priority and the idle scheduling class: an analyst's query runs
                    // on the CPU time the operations leave (under full load it may reach its
                    // deadline; the operations keep their throughput).
                    libc::setpriority(libc::PRIO_PROCESS, 0, 19);
                    #[cfg(target_os = "linux")]
                    {
                        let param = libc::sched_param { sched_priority: 0 };
                        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
                    }
                    Ok(())
                });
            }
        }
        command
    }

    fn too_expensive_time(&self) -> Outcome {
        let ms = self.limits.timeout.as_millis();
        Outcome::TooExpensive(format!("a consulta excedeu o tempo limite de {ms} ms e foi interrompida"))
    }

    fn too_expensive_memory(&self) -> Outcome {
        Outcome::TooExpensive(format!(
            "a consulta excedeu o limite de memória de {} MB e foi interrompida",
            self.limits.memory_bytes / (1024 * 1024)
        ))
    }

    /// Starts a warm worker.
    fn spawn_warm(&self, catalog: &Path) -> Result<Warm, String> {
        let mut command = self.command();
        command.env(SERVE_ENV, "1");
        let mut child = command.spawn().map_err(|e| format!("cannot start the SQL worker: {e}"))?;
        let stdin = child.stdin.take().ok_or("no worker input")?;
        let mut stdout = child.stdout.take().ok_or("no worker output")?;
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
                let mut payload = vec![0u8; len as usize];
                if stdout.read_exact(&mut payload).is_err() {
                    let _ = send.send(None);
                    return;
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
        Ok(Warm { child, stdin, answers, stderr, catalog: catalog.to_path_buf() })
    }

    /// Runs a request on a warm worker (one kept idle for this catalog, or a new one), which
    /// goes back to the idle ones when it answered in time, and is killed otherwise.
    fn ask_warm(&self, request: &Request, started: Instant) -> Outcome {
        let kept = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            let (same, other): (Vec<Warm>, Vec<Warm>) = idle.drain(..).partition(|w| w.catalog == request.catalog);
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
            None => match self.spawn_warm(&request.catalog) {
                Ok(w) => w,
                Err(e) => return Outcome::Failed(e),
            },
        };
        let body = serde_json::to_vec(request).unwrap_or_default();
        let sent = warm
            .stdin
            .write_all(&(body.len() as u32).to_le_bytes())
            .and_then(|()| warm.stdin.write_all(&body))
            .and_then(|()| warm.stdin.flush());
        if let Err(e) = sent {
            warm.stop();
            return Outcome::Failed(format!("cannot reach the SQL worker: {e}"));
        }
        let left = (started + self.limits.timeout).saturating_duration_since(Instant::now());
        match warm.answers.recv_timeout(left) {
            Ok(Some((0, bytes))) => {
                let outcome = match IpcStreamReader::new(std::io::Cursor::new(bytes)).finish() {
                    Ok(frame) => {
                        let truncated = frame.height() > self.limits.max_rows;
                        let frame = if truncated { frame.head(Some(self.limits.max_rows)) } else { frame };
                        Outcome::Rows { frame, truncated }
                    }
                    Err(e) => Outcome::Failed(format!("cannot read the SQL worker's answer: {e}")),
                };
                self.keep(warm);
                outcome
            }
            Ok(Some((_, reason))) => {
                let reason = String::from_utf8_lossy(&reason).into_owned();
                self.keep(warm);
                if reason.contains("memory allocation") || reason.contains("capacity overflow") {
                    return self.too_expensive_memory();
                }
                Outcome::Invalid(reason.lines().next().unwrap_or("the query failed").to_string())
            }
            Ok(None) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                // The worker died (an allocation over its budget aborts it).
                let status = warm.child.wait();
                let stderr = warm.stderr.lock().map(|s| s.clone()).unwrap_or_default();
                let signalled = status.as_ref().map(|s| s.code().is_none()).unwrap_or(true);
                if signalled || stderr.contains("memory allocation") {
                    return self.too_expensive_memory();
                }
                Outcome::Failed(format!("the SQL worker ended: {}", stderr.trim()))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                warm.stop();
                self.too_expensive_time()
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

    fn spawn_and_wait(&self, request: &Request, started: Instant) -> Outcome {
        let budget = self.limits.memory_bytes;
        let mut command = self.command();
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => return Outcome::Failed(format!("cannot start the SQL worker: {e}")),
        };
        let body = serde_json::to_vec(request).unwrap_or_default();
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(&body);
        }
        // Both pipes are drained on threads of their own (a full pipe would stall the worker),
        // the output bounded by the memory budget.
        let out = child.stdout.take().map(|s| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = s.take(budget).read_to_end(&mut buf);
                buf
            })
        });
        let err = child.stderr.take().map(|s| {
            std::thread::spawn(move || {
                let mut buf = String::new();
                let _ = s.take(64 * 1024).read_to_string(&mut buf);
                buf
            })
        });
        let deadline = started + self.limits.timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Outcome::Failed(format!("cannot wait for the SQL worker: {e}")),
            }
        };
        let stdout = out.and_then(|h| h.join().ok()).unwrap_or_default();
        let stderr = err.and_then(|h| h.join().ok()).unwrap_or_default();
        let ms = self.limits.timeout.as_millis();
        let Some(status) = status else {
            return Outcome::TooExpensive(format!("a consulta excedeu o tempo limite de {ms} ms e foi interrompida"));
        };
        let memory = || {
            Outcome::TooExpensive(format!(
                "a consulta excedeu o limite de memória de {} MB e foi interrompida",
                budget / (1024 * 1024)
            ))
        };
        if status.success() {
            if stdout.len() as u64 >= budget {
                return memory();
            }
            return match IpcStreamReader::new(std::io::Cursor::new(stdout)).finish() {
                Ok(frame) => {
                    let truncated = frame.height() > self.limits.max_rows;
                    let frame = if truncated { frame.head(Some(self.limits.max_rows)) } else { frame };
                    Outcome::Rows { frame, truncated }
                }
                Err(e) => Outcome::Failed(format!("cannot read the SQL worker's answer: {e}")),
            };
        }
        if status.code() == Some(QUERY_FAILED) {
            let reason = stderr.trim();
            if reason.contains("memory allocation") || reason.contains("capacity overflow") {
                return memory();
            }
            return Outcome::Invalid(reason.lines().next().unwrap_or("the query failed").to_string());
        }
        // Killed by a signal (an allocation over the budget aborts) or another failure.
        if stderr.contains("memory allocation") || status.code().is_none() {
            return memory();
        }
        Outcome::Failed(format!("the SQL worker ended with {status}: {}", stderr.trim()))
    }
}

/// A worker's reason with the catalog file's path (or any absolute path) taken out.
fn without_paths(message: &str, catalog: &Path) -> String {
    let shown = catalog.display().to_string();
    let message = message.replace(&shown, "catalog");
    message
        .split_whitespace()
        .map(|w| if w.trim_matches(|c: char| "'\"`(),".contains(c)).starts_with('/') { "<caminho>" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}
