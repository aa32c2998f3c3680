//! The serving loop: HTTP/1.1 connections from hyper, one task each, a read buffer large enough
//! for every head the limits answer themselves, and a graceful shutdown (stop accepting, let the
//! requests in flight finish). Each request goes to [`FrontDoor`]: the dataset-only answers
//! (`fast`) are given there, everything else goes to the router.
//!
//! The deadline for request heads is kept by a watch per connection ([`watch`]) rather than by
//! hyper's header timer, which arms and disarms a timer of the runtime on every request: the
//! connection counts what it does (heads completed, answer bytes written, requests being
//! answered) in plain counters, and the watch, waking a few times per deadline, closes a
//! connection on which nothing moved for the whole deadline — a head trickled forever, or an
//! idle kept-alive connection.
//!
//! hyper answers a head it cannot parse (over its buffer, a URL over 64 KiB, a malformed request
//! line or header) before any middleware runs, with an empty body. [`EnvelopeIo`] recognises
//! those automatic answers on the way out and writes the failure envelope instead, so even they
//! keep the API's error shape. That includes a head of more than 100 header lines (hyper's
//! default bound, kept: a larger one makes hyper allocate its header tables on every request).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::Request;
use axum::response::Response;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::http::contract::error::ApiError;
use crate::http::plumbing::limits::{MAX_HEADER_BYTES, MAX_URI_BYTES};
use crate::http::plumbing::middleware::Front;

/// hyper's read buffer: every head up to this size reaches the middleware, which answers 414
/// or 431 in the envelope; a bigger one is refused by hyper itself (rewritten by [`EnvelopeIo`]).
pub const MAX_BUF_BYTES: usize = 256 * 1024;

/// Serves `router` on `listener`, the dataset-only answers of `front` ahead of it, until
/// `shutdown` resolves; then stops accepting (the listener is closed at once) and waits for the
/// connections to finish their requests in flight. A connection on which nothing moves for
/// `header_timeout` (see [`watch`]) is closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    front: Front,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let mut builder = http1::Builder::new();
    builder.header_read_timeout(None).max_buf_size(MAX_BUF_BYTES).keep_alive(true);
    let graceful = GracefulShutdown::new();
    let shared = Arc::new(Shared { front, router: TowerToHyperService::new(router) });
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
        let activity = Arc::new(Activity::default());
        let door = FrontDoor { shared: Arc::clone(&shared), activity: Arc::clone(&activity) };
        let io = EnvelopeIo::new(stream).counting(Arc::clone(&activity));
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(io), door));
        let task = tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection closed with an error");
            }
        });
        tokio::spawn(watch(activity, task.abort_handle(), header_timeout));
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// What one connection has done, as its [`watch`] sees it: plain counters, updated by the
/// connection's own task and read by the watch a few times per deadline.
#[derive(Default)]
struct Activity {
    /// Request heads completed plus answer writes made: moves whenever the connection does.
    progress: AtomicU64,
    /// Requests whose answer is being prepared or written (from their complete head to the end
    /// of their body).
    busy: AtomicU64,
}

impl Activity {
    fn moved(&self) {
        self.progress.fetch_add(1, Ordering::Relaxed);
    }

    fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::Relaxed);
        Busy(Arc::clone(self))
    }
}

/// One request being answered (see [`Activity::busy`]), until dropped.
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
        self.0.moved();
    }
}

/// Closes the connection of `task` once nothing moved on it (no head completed, no answer byte
/// written, no request being answered) for `timeout`; ends with the connection. It wakes four
/// times per deadline, so a still connection is closed between 1 and 1.25 deadlines after it
/// last moved.
async fn watch(activity: Arc<Activity>, task: tokio::task::AbortHandle, timeout: Duration) {
    let tick = (timeout / 4).max(Duration::from_millis(1));
    let mut seen = activity.progress.load(Ordering::Relaxed);
    let mut still = Duration::ZERO;
    loop {
        tokio::time::sleep(tick).await;
        if task.is_finished() {
            return;
        }
        let now = activity.progress.load(Ordering::Relaxed);
        if now != seen || activity.busy.load(Ordering::Relaxed) > 0 {
            seen = now;
            still = Duration::ZERO;
            continue;
        }
        still += tick;
        if still >= timeout {
            tracing::debug!(
                timeout_ms = timeout.as_millis() as u64,
                "connection closed: no complete request head in time"
            );
            task.abort();
            return;
        }
    }
}

/// What every connection's [`FrontDoor`] shares.
struct Shared {
    front: Front,
    router: TowerToHyperService<Router>,
}

/// The service of one connection: the dataset-only answers given at once (see `fast`), every
/// other request handed to the router; both counted in the connection's [`Activity`].
struct FrontDoor {
    shared: Arc<Shared>,
    activity: Arc<Activity>,
}

impl hyper::service::Service<Request<Incoming>> for FrontDoor {
    type Response = Response;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, req: Request<Incoming>) -> Answer {
        self.activity.moved();
        if let Some(res) = crate::http::plumbing::fast::exchange(&self.shared.front, &req) {
            return Answer::Ready(Some(res));
        }
        let busy = self.activity.busy();
        let routed = self.shared.router.call(req);
        Answer::Routed(Box::pin(async move {
            let res = match routed.await {
                Ok(res) => res,
                Err(never) => match never {},
            };
            Ok(res.map(|inner| Body::new(Tracked { inner, _busy: busy })))
        }))
    }
}

/// The answer of a [`FrontDoor`]: ready at once, or the router's.
enum Answer {
    Ready(Option<Response>),
    Routed(Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>),
}

impl Future for Answer {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            // Polled once: hyper never polls a completed future again.
            Answer::Ready(res) => res.take().map_or(Poll::Pending, |res| Poll::Ready(Ok(res))),
            Answer::Routed(fut) => fut.as_mut().poll(cx),
        }
    }
}

/// A routed answer's body, its request counted as busy until the body is written or dropped.
struct Tracked {
    inner: Body,
    _busy: Busy,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
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
    /// The connection's activity, moved by every write (see [`watch`]).
    activity: Option<Arc<Activity>>,
}

impl EnvelopeIo {
    pub fn new(inner: TcpStream) -> EnvelopeIo {
        EnvelopeIo { inner: Some(inner), replacing: None, replaced: false, activity: None }
    }

    /// Counts every write in `activity`.
    fn counting(mut self, activity: Arc<Activity>) -> EnvelopeIo {
        self.activity = Some(activity);
        self
    }

    fn wrote(&self, written: &Poll<io::Result<usize>>) {
        if let (Some(activity), Poll::Ready(Ok(1..))) = (&self.activity, written) {
            activity.moved();
        }
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
                None => {
                    let written = self.io().poll_write(cx, buf);
                    self.wrote(&written);
                    return written;
                }
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
                None => {
                    let written = self.io().poll_write_vectored(cx, bufs);
                    self.wrote(&written);
                    return written;
                }
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
