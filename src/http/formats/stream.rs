//! The streamed body of `GET /catalog/export`: a blocking task writes the rows chunk by chunk
//! (each chunk a frame of [`CHUNK_ROWS`] rows) through Polars' batched writers into a bounded
//! channel that the response body drains, so memory stays bounded whatever the catalog size:
//! one chunk's frame plus a few frames of bytes in flight. A client that goes away closes the
//! channel and the writer stops at its next frame.
//!
//! - CSV: `CsvWriter::batched`, the header once, then each chunk;
//! - Parquet: `ParquetWriter::batched`, one row group per chunk, the footer at the end;
//! - Arrow IPC stream: each chunk written by `IpcStreamWriter` and spliced into one stream (the
//!   schema message once, the record batches of every chunk, the end-of-stream marker once);
//! - NDJSON: each row as its JSON item, one per line.

use std::io::{self, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use hyper::body::Frame;
use polars::prelude::*;
use tokio::sync::mpsc;

use crate::engine::snapshot::Snapshot;
use crate::engine::table::Table;
use crate::http::formats::encode::{Fields, RowWriter};

use super::tabular::frame_of;
use super::Format;

/// Rows per chunk (one frame, one Parquet row group, one Arrow record batch at a time).
pub const CHUNK_ROWS: usize = 50_000;
/// Bytes gathered before a body frame is sent.
const FRAME_BYTES: usize = 1 << 20;
/// Body frames in flight between the writer and the connection.
const FRAMES_IN_FLIGHT: usize = 4;

type Item = Result<Bytes, io::Error>;

/// Streams `rows` of the snapshot (every row when `None`) with `fields` in `format`. The work
/// runs on the blocking pool; the returned body yields its bytes as they are written.
pub fn body(snapshot: Arc<Snapshot>, rows: Option<Vec<u32>>, fields: Fields, format: Format) -> Body {
    let (tx, rx) = mpsc::channel::<Item>(FRAMES_IN_FLIGHT);
    tokio::task::spawn_blocking(move || {
        let mut sink = ChannelWriter { tx, buffer: Vec::with_capacity(FRAME_BYTES), closed: false };
        let written = write(&snapshot, rows.as_deref(), fields, format, &mut sink).and_then(|_| Ok(sink.flush()?));
        if let Err(e) = written {
            if !sink.closed {
                tracing::error!(error = %e, format = format.name(), "the export stopped before its end");
                // The client sees a truncated body (an aborted chunked transfer), never a
                // complete-looking file.
                let _ = sink.tx.blocking_send(Err(io::Error::other("export failed")));
            }
        }
    });
    Body::new(ChannelBody { rx })
}

/// The rows of chunk `i`.
fn chunk(rows: Option<&[u32]>, len: usize, i: usize) -> Vec<u32> {
    let range = i * CHUNK_ROWS..((i + 1) * CHUNK_ROWS).min(len);
    match rows {
        Some(rows) => rows[range].to_vec(),
        None => (range.start as u32..range.end as u32).collect(),
    }
}

/// Writes the whole export to `out`, chunk by chunk.
pub fn write(
    table: &Table,
    rows: Option<&[u32]>,
    fields: Fields,
    format: Format,
    out: &mut impl Write,
) -> PolarsResult<()> {
    let len = rows.map_or(table.len(), <[u32]>::len);
    let chunks = len.div_ceil(CHUNK_ROWS);
    let frame = |i: usize| frame_of(table, &chunk(rows, len, i), fields);
    match format {
        Format::Csv => {
            let schema = frame_of(table, &[], fields)?.schema().as_ref().clone();
            let mut writer = CsvWriter::new(&mut *out).include_header(true).batched(&schema)?;
            for i in 0..chunks {
                writer.write_batch(&frame(i)?)?;
            }
            writer.finish()?;
        }
        Format::Parquet => {
            let schema = frame_of(table, &[], fields)?.schema().as_ref().clone();
            let mut writer = ParquetWriter::new(&mut *out).batched(&schema)?;
            for i in 0..chunks {
                writer.write_batch(&frame(i)?)?;
            }
            writer.finish()?;
        }
        Format::Arrow => {
            let mut splice = ArrowSplice::default();
            if chunks == 0 {
                splice.chunk(&mut frame_of(table, &[], fields)?, out)?;
            }
            for i in 0..chunks {
                splice.chunk(&mut frame(i)?, out)?;
            }
            splice.finish(out)?;
        }
        Format::Ndjson | Format::Json => {
            let writer = RowWriter::new(table, fields)?;
            let mut line = Vec::with_capacity(1024);
            for i in 0..chunks {
                for row in chunk(rows, len, i) {
                    line.clear();
                    writer.write(&mut line, row);
                    line.push(b'\n');
                    out.write_all(&line)?;
                }
            }
        }
    }
    Ok(())
}

/// The Arrow IPC end-of-stream marker: continuation token and a zero metadata length.
const END_OF_STREAM: [u8; 8] = [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0];

/// Joins the streams Polars writes per chunk into one stream: the first chunk's schema message,
/// then only the record batches of every chunk, then one end-of-stream marker. The frames have
/// no dictionary-encoded column (text is plain), so a stream is exactly: schema message,
/// record batches, end-of-stream.
#[derive(Default)]
struct ArrowSplice {
    started: bool,
}

impl ArrowSplice {
    fn chunk(&mut self, df: &mut DataFrame, out: &mut impl Write) -> PolarsResult<()> {
        let mut bytes = Vec::new();
        IpcStreamWriter::new(&mut bytes).with_compat_level(CompatLevel::oldest()).finish(df)?;
        let Some(batches) = bytes.strip_suffix(&END_OF_STREAM) else {
            polars_bail!(ComputeError: "the Arrow stream does not end with the end-of-stream marker");
        };
        let start = if self.started { schema_message_len(batches)? } else { 0 };
        self.started = true;
        out.write_all(&batches[start..])?;
        Ok(())
    }

    fn finish(self, out: &mut impl Write) -> PolarsResult<()> {
        Ok(out.write_all(&END_OF_STREAM)?)
    }
}

/// Length of the encapsulated message at the start of `stream` (the schema, which has no body):
/// continuation token 0xFFFFFFFF, then the metadata length (little-endian i32, padding included).
fn schema_message_len(stream: &[u8]) -> PolarsResult<usize> {
    match stream {
        [0xFF, 0xFF, 0xFF, 0xFF, a, b, c, d, ..] => {
            let metadata = i32::from_le_bytes([*a, *b, *c, *d]);
            let len = 8 + usize::try_from(metadata).unwrap_or(usize::MAX);
            if len > stream.len() {
                polars_bail!(ComputeError: "truncated Arrow schema message");
            }
            Ok(len)
        }
        _ => polars_bail!(ComputeError: "the Arrow stream does not start with a message"),
    }
}

/// A `Write` whose bytes go to the response body in frames of about [`FRAME_BYTES`]; blocks when
/// the connection is slower than the writer (the channel is bounded).
struct ChannelWriter {
    tx: mpsc::Sender<Item>,
    buffer: Vec<u8>,
    /// The body was dropped (client gone, or a HEAD / 304 answer): stop writing.
    closed: bool,
}

impl ChannelWriter {
    fn send(&mut self) -> io::Result<()> {
        let frame = std::mem::replace(&mut self.buffer, Vec::with_capacity(FRAME_BYTES));
        if self.tx.blocking_send(Ok(Bytes::from(frame))).is_err() {
            self.closed = true;
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"));
        }
        Ok(())
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"));
        }
        self.buffer.extend_from_slice(data);
        if self.buffer.len() >= FRAME_BYTES {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.send()
    }
}

/// The receiving end as an HTTP body.
struct ChannelBody {
    rx: mpsc::Receiver<Item>,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.rx.poll_recv(cx).map(|item| item.map(|r| r.map(Frame::data)))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::engine::load::load_bytes;
    use crate::engine::views::{CostConfig, Views};
    use crate::http::formats::tabular::EXPORT_FIELDS;

    fn table(rows: usize) -> Snapshot {
        let mut df = crate::sample::generate_catalog(rows, 3).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap()
    }

    #[test]
    fn chunked_exports_read_back_whole() {
        // More rows than a chunk, so every format joins several chunks.
        let s = table(CHUNK_ROWS + 1234);
        let n = s.len();
        let selected: Vec<u32> = (0..n as u32).filter(|r| r % 2 == 0).collect();
        for (rows, expected) in [(None, n), (Some(selected.as_slice()), selected.len()), (Some(&[][..]), 0)] {
            let export = |format: Format| {
                let mut out = Vec::new();
                write(&s, rows, EXPORT_FIELDS, format, &mut out).unwrap();
                out
            };
            let csv = export(Format::Csv);
            let text = std::str::from_utf8(&csv).unwrap();
            assert_eq!(text.lines().count(), expected + 1, "one header line");
            assert!(text.starts_with("id,marca,modelo,versao,ano,"));
            let parquet = ParquetReader::new(std::io::Cursor::new(export(Format::Parquet))).finish().unwrap();
            assert_eq!(parquet.height(), expected);
            assert_eq!(parquet.width(), EXPORT_FIELDS.len());
            let arrow = IpcStreamReader::new(std::io::Cursor::new(export(Format::Arrow))).finish().unwrap();
            assert_eq!(arrow.height(), expected);
            assert!(arrow.equals_missing(&parquet), "Arrow and Parquet hold the same rows");
            let ndjson = export(Format::Ndjson);
            assert_eq!(ndjson.iter().filter(|b| **b == b'\n').count(), expected);
            if expected > 0 {
                let last = frame_of(&s, &[rows.map_or(n as u32 - 1, |r| r[r.len() - 1])], EXPORT_FIELDS).unwrap();
                assert!(arrow.tail(Some(1)).equals_missing(&last), "the last row is the last selected");
            }
        }
    }

    #[test]
    fn a_dropped_body_stops_the_writer() {
        let (tx, rx) = mpsc::channel::<Item>(1);
        drop(rx);
        let mut sink = ChannelWriter { tx, buffer: Vec::new(), closed: false };
        assert!(sink.write_all(&vec![0u8; FRAME_BYTES]).is_err());
        assert!(sink.closed);
    }
}
