//! When freed memory goes back to the OS. The process runs on mimalloc (see `main.rs`), which
//! normally returns freed pages at once, so a replaced snapshot leaves the process as soon as its
//! last request ends and memory stays flat across swaps. While an export is loaded, though, the
//! same policy costs time: every intermediate column is freed and the next one faults fresh
//! zeroed pages back in (a third of a 1M-row load was the kernel zeroing pages). So during a load
//! freed pages are only *scheduled* for return, reused by the next buffers of the load, and all
//! returned at once when it ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use libmimalloc_sys::mi_option_t;

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_t` (its C header's enum order).
const PURGE_DELAY: mi_option_t = 15;

/// The purge delay while a load runs (ms): longer than any load, so nothing is purged before the
/// forced collection at its end.
const DEFERRED: libc::c_long = 3_600_000;

/// Loads never overlap their deferral windows (the first restores what the last expects).
static LOADS: Mutex<()> = Mutex::new(());

/// Whether the load running now returns its free pages between phases (see [`between_phases`]).
static RELEASE_BETWEEN_PHASES: AtomicBool = AtomicBool::new(false);

/// Runs `load` with freed memory kept for reuse, then returns every free page to the OS (on a
/// thread of its own: nothing waits for it). For a first load: nothing else is in memory, so the
/// peak is the load's own.
pub fn during_load<T>(load: impl FnOnce() -> T) -> T {
    deferring(false, load)
}

/// [`during_load`] for a reload: the served snapshot stays in memory meanwhile, so the pages
/// kept are also returned between the load's phases (see [`between_phases`]), which keeps the
/// peak of a swap down at the cost of some page zeroing.
pub fn during_reload<T>(load: impl FnOnce() -> T) -> T {
    deferring(true, load)
}

fn deferring<T>(release_between_phases: bool, load: impl FnOnce() -> T) -> T {
    let _one = LOADS.lock().unwrap_or_else(|e| e.into_inner());
    RELEASE_BETWEEN_PHASES.store(release_between_phases, Ordering::Relaxed);
    let normal = *NORMAL_PURGE_DELAY.get_or_init(|| {
        // SAFETY: mimalloc options are process-wide integers; reading and setting them is
        // thread-safe.
        unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) }
    });
    // SAFETY: as above.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, DEFERRED) };
    let out = load();
    RELEASE_BETWEEN_PHASES.store(false, Ordering::Relaxed);
    if release_between_phases {
        // A reload: the served snapshot is in memory beside the new one; return the pages now.
        collect_everywhere(normal);
    } else {
        // A first load: its free pages are returned on a thread of their own (unmapping a
        // 10M-row load's gigabytes takes some 150 ms), so the service starts listening
        // meanwhile. The purge delay stays deferred until then: the pages scheduled under it
        // are only purged while it is.
        let release = move || {
            let _one = LOADS.lock().unwrap_or_else(|e| e.into_inner());
            collect_everywhere(normal);
        };
        drop(_one);
        if let Err(e) = std::thread::Builder::new().name("eco-release".into()).spawn(release) {
            tracing::warn!("cannot start the thread returning the load's free memory: {e}");
            let _one = LOADS.lock().unwrap_or_else(|e| e.into_inner());
            collect_everywhere(normal);
        }
    }
    out
}

/// The purge delay outside loads, as mimalloc had it before the first.
static NORMAL_PURGE_DELAY: std::sync::OnceLock<libc::c_long> = std::sync::OnceLock::new();

/// Returns every free page to the OS: the pages freed on the threads of both pools (a page
/// freed by another thread than the one that allocated it stays with its owner until that thread
/// collects: the parts of a load's views are computed on the pools' threads and freed on this
/// one), then every arena's; then the purge delay is set back to `normal_purge_delay`.
fn collect_everywhere(normal_purge_delay: libc::c_long) {
    // SAFETY: mimalloc options are process-wide integers, and `mi_collect` only frees memory no
    // allocation refers to. Pages scheduled for purging are only purged under a purge delay
    // (none is with a delay of 0): the delay is deferred while they are collected.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, DEFERRED) };
    let collect = |_: rayon::BroadcastContext<'_>| unsafe { libmimalloc_sys::mi_collect(true) };
    rayon::broadcast(collect);
    polars_core::runtime::RAYON.install(|| rayon::broadcast(collect));
    // SAFETY: as above.
    unsafe {
        libmimalloc_sys::mi_collect(true);
        libmimalloc_sys::mi_option_set(PURGE_DELAY, normal_purge_delay);
    }
}

/// Turns transparent huge pages off for this process (`PR_SET_THP_DISABLE`; mimalloc otherwise
/// advises them for its arenas). A load faults in hundreds of MB; on virtual machines that hand
/// free memory back to their host (free page reporting, balloons), a 2 MiB fault on such memory
/// costs the host a fresh huge page: measured here at 0.4–0.8 GB/s against 2.6–3 GB/s for 4 KiB
/// faults on the same memory. On base pages a cold start takes the same time whether or not the
/// memory was recently freed (1.4–1.5 s for 1M rows, against 1.3–2.4 s with huge pages), and a
/// swap under load takes 2.2–3.0 s instead of 2.9–3.5 s. No-op where the call is unsupported.
pub fn without_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: a prctl on the calling process with integer arguments; no memory is passed.
    unsafe {
        libc::prctl(
            libc::PR_SET_THP_DISABLE,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
    }
}

/// Called by a load between phases whose buffers do not reuse each other's pages: inside
/// [`during_reload`], returns the free pages kept so far to the OS.
pub fn between_phases() {
    if RELEASE_BETWEEN_PHASES.load(Ordering::Relaxed) {
        // SAFETY: `mi_collect` only frees memory no allocation refers to.
        unsafe { libmimalloc_sys::mi_collect(true) };
    }
}
