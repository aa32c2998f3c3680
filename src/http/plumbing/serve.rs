//! The serving loop: HTTP/1.1 connections from hyper, one task each, with a deadline for the
//! request head, a read buffer large enough for every head the limits answer themselves, and a
//! graceful shutdown (stop accepting, let the requests in flight finish).
//!
//! hyper answers a head it cannot parse (over its buffer, a URL over 64 KiB, a malformed request
//! line or header) before any middleware runs, with an empty body. [`EnvelopeIo`] recognises
//! those automatic answers on the way out and writes the failure envelope instead, so even they
//! keep the API's error shape. That includes a head of more than 100 header lines (hyper's
//! default bound, kept: a larger one makes hyper allocate its header tables on every request).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::http::contract::error::ApiError;
use crate::http::plumbing::limits::{MAX_HEADER_BYTES, MAX_URI_BYTES};

/// hyper's read buffer: every head up to this size reaches the middleware, which answers 414
/// or 431 in the envelope; a bigger one is refused by hyper itself (rewritten by [`EnvelopeIo`]).
pub const MAX_BUF_BYTES: usize = 256 * 1024;

/// Serves `router` on `listener` until `shutdown` resolves; then stops accepting (the listener
/// is closed at once) and waits for the connections to finish their requests in flight.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_timeout).max_buf_size(MAX_BUF_BYTES).keep_alive(true);
    let graceful = GracefulShutdown::new();
    let service = TowerToHyperService::new(router);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(e) => {
                    accept_error(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let conn = builder.serve_connection(TokioIo::new(EnvelopeIo::new(stream)), service.clone());
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection closed with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A failed accept: per-connection errors are skipped; others (e.g. out of file descriptors)
/// pause the loop for a moment instead of spinning.
async fn accept_error(e: io::Error) {
    use io::ErrorKind::*;
    if matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset) {
        return;
    }
    tracing::error!(error = %e, "accept failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// The error envelope for one of hyper's automatic answers, by status.
fn automatic_error(status: u16) -> Option<ApiError> {
    match status {
        400 => Some(ApiError::validation("Requisição HTTP malformada")),
        414 => Some(ApiError::UriTooLong(MAX_URI_BYTES)),
        431 => Some(ApiError::HeadersTooLarge(MAX_HEADER_BYTES)),
        _ => None,
    }
}

/// The status of `head` when it is one of hyper's automatic error answers: a complete head of
/// status 400, 414 or 431 with `content-length: 0` (the API's own failures always have a body).
fn automatic_status(head: &[u8]) -> Option<u16> {
    let rest = head.strip_prefix(b"HTTP/1.1 ").or_else(|| head.strip_prefix(b"HTTP/1.0 "))?;
    let status: u16 = std::str::from_utf8(rest.get(..3)?).ok()?.parse().ok()?;
    automatic_error(status)?;
    let complete = head.ends_with(b"\r\n\r\n");
    let empty = head.windows(19).any(|w| w.eq_ignore_ascii_case(b"\r\ncontent-length: 0"));
    (complete && empty).then_some(status)
}

/// The complete answer written instead of hyper's automatic one; the connection closes after it.
fn envelope_answer(status: u16) -> Vec<u8> {
    let err = automatic_error(status).unwrap_or(ApiError::Internal);
    let body = serde_json::to_vec(&err.body()).unwrap_or_default();
    let reason = err.status().canonical_reason().unwrap_or("Error");
    let id = crate::http::contract::state::request_id();
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nx-request-id: {id}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    tracing::info!(request_id = %id, status, "request head refused before routing");
    out
}

/// After an answer written in place of hyper's, what the client still sends is read and
/// discarded for at most this long (and [`LINGER_BYTES`]) before the socket is closed: closing
/// with unread data would reset the connection and could destroy the answer in flight.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 1024 * 1024;

/// A TCP stream whose writes pass through, except hyper's automatic error answers, which are
/// replaced by [`envelope_answer`].
pub struct EnvelopeIo {
    /// Always present until dropped.
    inner: Option<TcpStream>,
    /// A replacement being written: the bytes, how many are written, and the length of the
    /// write it stands for (reported to hyper once the replacement is out).
    replacing: Option<(Vec<u8>, usize, usize)>,
    /// Whether an answer was replaced (the connection then lingers when closed).
    replaced: bool,
}

impl EnvelopeIo {
    pub fn new(inner: TcpStream) -> EnvelopeIo {
        EnvelopeIo { inner: Some(inner), replacing: None, replaced: false }
    }

    fn io(&mut self) -> Pin<&mut TcpStream> {
        match self.inner.as_mut() {
            Some(stream) => Pin::new(stream),
            None => unreachable!("the stream is only taken when dropped"),
        }
    }

    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        while let Some((bytes, written, _)) = self.replacing.as_mut() {
            if *written == bytes.len() {
                let (_, _, stands_for) = self.replacing.take().unwrap_or_default();
                return Poll::Ready(Ok(stands_for));
            }
            let stream = match self.inner.as_mut() {
                Some(stream) => stream,
                None => return Poll::Ready(Err(io::ErrorKind::NotConnected.into())),
            };
            match Pin::new(stream).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(0))
    }
}

impl AsyncRead for EnvelopeIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.io().poll_read(cx, buf)
    }
}

impl Drop for EnvelopeIo {
    fn drop(&mut self) {
        let (true, Some(mut stream)) = (self.replaced, self.inner.take()) else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        runtime.spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let _ = stream.shutdown().await;
            let drain = async {
                let mut buf = vec![0u8; 16 * 1024];
                let mut total = 0;
                while total < LINGER_BYTES {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => total += n,
                    }
                }
            };
            let _ = tokio::time::timeout(LINGER, drain).await;
        });
    }
}

impl AsyncWrite for EnvelopeIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.replacing.is_none() {
            match automatic_status(buf) {
                Some(status) => {
                    self.replacing = Some((envelope_answer(status), 0, buf.len()));
                    self.replaced = true;
                }
                None => return self.io().poll_write(cx, buf),
            }
        }
        self.poll_replacement(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.replacing.is_none() {
            let mut non_empty = bufs.iter().filter(|b| !b.is_empty());
            let status = match (non_empty.next(), non_empty.next()) {
                (Some(only), None) => automatic_status(only),
                _ => None,
            };
            match status {
                Some(status) => {
                    let total = bufs.iter().map(|b| b.len()).sum();
                    self.replacing = Some((envelope_answer(status), 0, total));
                    self.replaced = true;
                }
                None => return self.io().poll_write_vectored(cx, bufs),
            }
        }
        self.poll_replacement(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.as_ref().is_some_and(|s| s.is_write_vectored())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.replaced {
            // Closed for good on drop, after lingering.
            return Poll::Ready(Ok(()));
        }
        self.io().poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_only_hypers_empty_error_heads() {
        let head = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(automatic_status(head), Some(431));
        let head = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(automatic_status(head), Some(414));
        // The API's own failures carry a body.
        assert_eq!(automatic_status(b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 80\r\n\r\n"), None);
        assert_eq!(automatic_status(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"), None);
        assert_eq!(automatic_status(b"{\"success\":false}"), None);
        let answer = String::from_utf8(envelope_answer(431)).unwrap();
        assert!(answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"), "{answer}");
        assert!(
            answer.ends_with(
                r#""code":"HEADERS_TOO_LARGE","message":"Cabeçalhos da requisição excedem o limite de 16384 bytes"}}"#
            ),
            "{answer}"
        );
    }
}
