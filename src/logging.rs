//! Logs to standard error, as text or one JSON object per line, written by a dedicated thread:
//! a request only hands its line to a bounded queue and never waits for the terminal or a pipe.
//! When the queue is full the line is dropped and counted (`eco_log_lines_dropped_total`).

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::Duration;

use anyhow::Context;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Lines waiting for the writer thread at most.
const QUEUE_LINES: usize = 16 * 1024;
/// How long the guard waits for the queue to drain at exit.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

enum Message {
    Line(Vec<u8>),
    Flush(mpsc::Sender<()>),
}

/// Hands each formatted event to the writer thread.
#[derive(Clone)]
struct QueueWriter {
    queue: SyncSender<Message>,
}

/// One event: bytes gathered while the formatter writes, queued when dropped.
pub struct EventWriter<'a> {
    queue: &'a SyncSender<Message>,
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
        if self.line.is_empty() {
            return;
        }
        match self.queue.try_send(Message::Line(std::mem::take(&mut self.line))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                crate::http::metrics::log_line_dropped();
            }
        }
    }
}

impl<'a> MakeWriter<'a> for QueueWriter {
    type Writer = EventWriter<'a>;

    fn make_writer(&'a self) -> EventWriter<'a> {
        EventWriter { queue: &self.queue, line: Vec::with_capacity(256) }
    }
}

fn write_lines(queue: Receiver<Message>) {
    let mut out = io::BufWriter::new(io::stderr());
    let mut next = queue.recv().ok();
    while let Some(message) = next {
        match message {
            Message::Line(line) => {
                let _ = out.write_all(&line);
            }
            Message::Flush(done) => {
                let _ = out.flush();
                let _ = done.send(());
            }
        }
        // Write what is queued, then flush before waiting.
        next = match queue.try_recv() {
            Ok(m) => Some(m),
            Err(_) => {
                let _ = out.flush();
                queue.recv().ok()
            }
        };
    }
    let _ = out.flush();
}

/// Keeps the writer thread's queue; dropping it writes out what is queued (bounded wait).
pub struct LogGuard {
    queue: SyncSender<Message>,
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        let (done, flushed) = mpsc::channel();
        if self.queue.send(Message::Flush(done)).is_ok() {
            let _ = flushed.recv_timeout(FLUSH_TIMEOUT);
        }
    }
}

/// Installs the global subscriber: `filter` in tracing syntax, lines as `format`.
pub fn init(filter: &str, format: LogFormat) -> anyhow::Result<LogGuard> {
    let filter = EnvFilter::try_new(filter).context("invalid --log filter")?;
    let (queue, lines) = mpsc::sync_channel(QUEUE_LINES);
    std::thread::Builder::new().name("log-writer".into()).spawn(move || write_lines(lines))?;
    let writer = QueueWriter { queue: queue.clone() };
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer);
    let installed = match format {
        LogFormat::Text => builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init(),
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).with_span_list(false).try_init(),
    };
    installed.map_err(|e| anyhow::anyhow!("cannot install the logger: {e}"))?;
    Ok(LogGuard { queue })
}
