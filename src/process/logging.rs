//! Logs to standard error, as text or one JSON object per line, written by a dedicated thread:
//! a request only appends its line to a bounded in-memory buffer and never waits for the
//! terminal or a pipe, nor wakes a thread per line: the writer thread is woken when a line lands
//! in an empty buffer, writes out everything waiting, then lets lines gather for a moment. When the buffer is full the line is dropped and counted
//! (`eco_log_lines_dropped_total`).

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use anyhow::Context;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// How log lines are written to standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Bytes of log lines waiting for the writer thread at most.
const BUFFER_BYTES: usize = 8 * 1024 * 1024;
/// After a write, how long the writer thread lets lines gather before the next one.
const GATHER: Duration = Duration::from_millis(2);
/// How often an idle writer thread checks whether logging has closed.
const IDLE_CHECK: Duration = Duration::from_millis(200);

/// Lines waiting to be written, and the lock that keeps their writes in order.
struct Shared {
    pending: Mutex<Vec<u8>>,
    /// Signalled when a line lands in an empty buffer (once per batch, not per line).
    wake: Condvar,
    writing: Mutex<()>,
    closed: AtomicBool,
}

impl Shared {
    /// Queues one complete line, or drops and counts it when the buffer is full.
    fn append(&self, line: &[u8]) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.len() + line.len() > BUFFER_BYTES {
            drop(pending);
            super::metrics::log_line_dropped();
        } else {
            let was_empty = pending.is_empty();
            pending.extend_from_slice(line);
            drop(pending);
            if was_empty {
                self.wake.notify_one();
            }
        }
    }
    /// Writes out everything waiting now (the writer thread, and the guard at exit).
    fn write_out(&self, spare: &mut Vec<u8>) {
        let _order = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if pending.is_empty() {
                return;
            }
            std::mem::swap(&mut *pending, spare);
        }
        let mut err = io::stderr().lock();
        let _ = err.write_all(spare);
        let _ = err.flush();
        spare.clear();
    }
}

/// Hands each formatted event to the shared buffer.
#[derive(Clone)]
struct BufferWriter {
    shared: Arc<Shared>,
}

/// One event: bytes gathered while the formatter writes, appended when dropped.
pub struct EventWriter<'a> {
    shared: &'a Shared,
    line: Vec<u8>,
}

impl Write for EventWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.line.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for EventWriter<'_> {
    fn drop(&mut self) {
        if !self.line.is_empty() {
            self.shared.append(&self.line);
        }
    }
}

impl<'a> MakeWriter<'a> for BufferWriter {
    type Writer = EventWriter<'a>;

    fn make_writer(&'a self) -> EventWriter<'a> {
        EventWriter { shared: &self.shared, line: Vec::with_capacity(256) }
    }
}

fn write_lines(shared: Arc<Shared>) {
    let mut spare = Vec::new();
    while !shared.closed.load(Ordering::Acquire) {
        {
            let mut pending = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
            while pending.is_empty() && !shared.closed.load(Ordering::Acquire) {
                pending = shared.wake.wait_timeout(pending, IDLE_CHECK).unwrap_or_else(|e| e.into_inner()).0;
            }
        }
        shared.write_out(&mut spare);
        // Let the next lines gather: under load one write (and one wake-up) serves many lines.
        std::thread::sleep(GATHER);
    }
}

/// Keeps the writer going; dropping it writes out what is waiting.
pub struct LogGuard {
    shared: Arc<Shared>,
}

impl LogGuard {
    /// Writes out every line queued so far (e.g. the start-up's, before the service says it
    /// listens: whoever waits for that line finds them written).
    pub fn flush(&self) {
        self.shared.write_out(&mut Vec::new());
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.wake.notify_one();
        self.shared.write_out(&mut Vec::new());
    }
}

/// Installs the global subscriber: `filter` in tracing syntax, lines as `format`.
pub fn init(filter: &str, format: LogFormat) -> anyhow::Result<LogGuard> {
    let filter = EnvFilter::try_new(filter).context("invalid --log filter")?;
    let shared = Arc::new(Shared {
        pending: Mutex::new(Vec::new()),
        wake: Condvar::new(),
        writing: Mutex::new(()),
        closed: AtomicBool::new(false),
    });
    let thread = Arc::clone(&shared);
    std::thread::Builder::new().name("log-writer".into()).spawn(move || write_lines(thread))?;
    let writer = BufferWriter { shared: Arc::clone(&shared) };
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer);
    let installed = match format {
        LogFormat::Text => builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init(),
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).with_span_list(false).try_init(),
    };
    installed.map_err(|e| anyhow::anyhow!("cannot install the logger: {e}"))?;
    // From now on a panic is a line of this log, not a raw message on standard error.
    crate::engine::contain::install_hook();
    let _ = ACCESS.set((Arc::clone(&shared), format));
    Ok(LogGuard { shared })
}

/// Where request lines go once [`init`] ran, and in which format.
static ACCESS: std::sync::OnceLock<(Arc<Shared>, LogFormat)> = std::sync::OnceLock::new();

/// The fields of one request's log line.
pub struct RequestLine<'a> {
    pub request_id: &'a str,
    /// The generated UUID when the client's own request id is not one.
    pub uuid: Option<&'a str>,
    pub method: &'a str,
    pub route: &'a str,
    pub status: u16,
    pub latency_ms: f64,
    /// The client's name (never its secret); absent when unauthenticated.
    pub key: Option<&'a str>,
}

/// The target request lines are logged under (the `--log` filter applies to it).
pub const REQUEST_TARGET: &str = "eco_insights::http::middleware";

/// Writes one request line in the configured format, formatted here rather than by the
/// tracing formatter: the same fields and layout, at a fraction of the cost on the request path.
/// Returns false when [`init`] has not run (the caller then logs through `tracing`).
pub fn request(line: &RequestLine<'_>) -> bool {
    let Some((shared, format)) = ACCESS.get() else { return false };
    let mut out = String::with_capacity(256);
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
    match format {
        LogFormat::Text => {
            use std::fmt::Write;
            let _ = write!(out, "{now}  INFO {REQUEST_TARGET}: request request_id={}", line.request_id);
            if let Some(uuid) = line.uuid {
                let _ = write!(out, " uuid={uuid}");
            }
            let _ = write!(
                out,
                " method={} route={} status={} latency_ms={}",
                line.method,
                quoted(line.route),
                line.status,
                line.latency_ms
            );
            if let Some(key) = line.key {
                let _ = write!(out, " key={}", quoted(key));
            }
        }
        LogFormat::Json => {
            let mut v = serde_json::Map::new();
            v.insert("timestamp".into(), now.into());
            v.insert("level".into(), "INFO".into());
            v.insert("message".into(), "request".into());
            v.insert("request_id".into(), line.request_id.into());
            if let Some(uuid) = line.uuid {
                v.insert("uuid".into(), uuid.into());
            }
            v.insert("method".into(), line.method.into());
            v.insert("route".into(), line.route.into());
            v.insert("status".into(), line.status.into());
            v.insert("latency_ms".into(), line.latency_ms.into());
            if let Some(key) = line.key {
                v.insert("key".into(), key.into());
            }
            v.insert("target".into(), REQUEST_TARGET.into());
            out = serde_json::Value::Object(v).to_string();
        }
    }
    out.push('\n');
    shared.append(out.as_bytes());
    true
}
