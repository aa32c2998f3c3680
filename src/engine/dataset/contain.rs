//! Containment of third-party decoding: an export is untrusted input, and the Parquet decoder
//! (Polars' own) may panic on a damaged file (a bit-flipped page, metadata that lies about
//! sizes). Every decode of an export runs inside [`contained`], which turns such a panic into an
//! error the caller reports like any other refusal (the file and what is wrong with it), and keeps
//! the panic's default message and backtrace off standard error meanwhile.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

/// Decodes running now: while one runs, a panic (on its thread or on a Polars worker running
/// part of it) is not printed; the decode reports it.
static CONTAINED: AtomicUsize = AtomicUsize::new(0);

static HOOK: Once = Once::new();

/// Installs (once per process) a panic hook that stays silent while a contained decode runs;
/// otherwise, once the service's logger is installed, a panic is one line of the log (the JSON
/// log when the service runs with it), never a raw message on standard error: a panic that a
/// connection or a task catches is logged exactly once, here. Before the logger is installed
/// (a command line run), it behaves as the hook it replaces.
pub fn install_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CONTAINED.load(Ordering::SeqCst) > 0 {
                tracing::debug!(panic = %info, "panic inside a contained decode (reported as a refusal)");
                return;
            }
            if tracing::dispatcher::has_been_set() {
                let location = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
                let thread = std::thread::current();
                tracing::error!(
                    panic = info.payload_as_str().unwrap_or("a panic without a message"),
                    location,
                    thread = thread.name().unwrap_or("unnamed"),
                    "panic"
                );
                return;
            }
            previous(info);
        }));
    });
}

/// Decrements the counter even when the work unwinds.
struct Running;

impl Running {
    fn start() -> Running {
        CONTAINED.fetch_add(1, Ordering::SeqCst);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        CONTAINED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A panic's message (the text of `panic!`, or a placeholder for another payload).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Runs `work`; a panic inside it (on this thread or on a worker it waits for) is returned as
/// `Err(message)` instead of unwinding further.
pub fn contained<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    let _running = Running::start();
    panic::catch_unwind(AssertUnwindSafe(work)).map_err(|payload| panic_message(payload.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_and_the_counter_comes_back() {
        assert_eq!(contained(|| 41 + 1), Ok(42));
        let err = contained(|| -> u8 { panic!("bad page {}", 7) }).unwrap_err();
        assert_eq!(err, "bad page 7");
        let err = contained(|| -> u8 { std::panic::panic_any(3_u32) }).unwrap_err();
        assert_eq!(err, "a panic without a message");
        // A panic on a rayon worker reaches the caller, and is contained there too.
        let err = contained(|| {
            use rayon::prelude::*;
            (0..64).into_par_iter().map(|i| if i == 33 { panic!("worker {i}") } else { i }).sum::<i32>()
        })
        .unwrap_err();
        assert_eq!(err, "worker 33");
    }
}
