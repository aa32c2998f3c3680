//! The current snapshot, swapped atomically: readers take an `Arc` and keep it for the whole
//! request, so a swap never changes the data under a request that already started. The store
//! also keeps the outcome of the reloads (for readiness and metrics).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwapOption;
use chrono::{DateTime, Utc};

use super::snapshot::{DatasetInfo, Snapshot};

/// What one reload attempt did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadResult {
    /// A new snapshot is serving, or the file held the content already serving.
    Ok,
    /// The export was refused (the reason); the previous snapshot, if any, keeps serving.
    Refused(String),
}

/// How a remote source (`remote`) looks from this replica now (for `/readyz` and the metrics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceStatus {
    /// The source as configured (`s3://bucket/key` or the URL).
    pub url: String,
    /// Whether the last poll reached the object.
    pub reachable: bool,
    /// Since when the polls fail (`None` while they succeed).
    pub unreachable_since: Option<DateTime<Utc>>,
    /// Why the last poll failed.
    pub reason: Option<String>,
    /// When the object was last asked for.
    pub last_poll: Option<DateTime<Utc>>,
    /// When a changed object was last downloaded.
    pub last_download: Option<DateTime<Utc>>,
    /// The store's ETag of the object last downloaded.
    pub etag: Option<String>,
}

/// The last reload attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadRecord {
    pub at: DateTime<Utc>,
    pub result: ReloadResult,
}

#[derive(Default)]
pub struct Store {
    current: ArcSwapOption<Snapshot>,
    /// The version the first load has accepted (its export checked, its views computed) while
    /// it still builds the API's table: analysts' SQL reads it from then (see `engine::sql`).
    accepted: ArcSwapOption<DatasetInfo>,
    reloads_ok: AtomicU64,
    reloads_refused: AtomicU64,
    last_reload: Mutex<Option<ReloadRecord>>,
    /// The remote source's status, when the export is pulled from one.
    source: Mutex<Option<SourceStatus>>,
}

impl Store {
    pub fn new(snapshot: Option<Snapshot>) -> Store {
        Store { current: ArcSwapOption::from(snapshot.map(Arc::new)), ..Store::default() }
    }

    /// The snapshot serving now, if any.
    pub fn current(&self) -> Option<Arc<Snapshot>> {
        self.current.load_full()
    }

    /// Runs `f` on the current snapshot without taking a reference of its own: for a short
    /// read on a hot path (the snapshot's reference count is shared by every serving thread).
    pub fn with_current<R>(&self, f: impl FnOnce(Option<&Arc<Snapshot>>) -> R) -> R {
        let current = self.current.load();
        f(current.as_ref())
    }

    /// Replaces the serving snapshot and returns the previous one; requests in flight finish on
    /// the one they hold.
    pub fn replace(&self, snapshot: Snapshot) -> Option<Arc<Snapshot>> {
        let previous = self.current.swap(Some(Arc::new(snapshot)));
        self.accepted.store(None);
        previous
    }

    /// Says that the first load has accepted the export of `info` and is building the API's
    /// table (nothing serves yet).
    pub fn accept(&self, info: DatasetInfo) {
        if self.current.load().is_none() {
            self.accepted.store(Some(Arc::new(info)));
        }
    }

    /// The version the first load has accepted, until a snapshot serves or the load fails.
    pub fn accepted(&self) -> Option<Arc<DatasetInfo>> {
        self.accepted.load_full()
    }

    /// Forgets the accepted version: the first load failed after accepting it.
    pub fn forget_accepted(&self) {
        self.accepted.store(None);
    }

    /// Records the outcome of a reload attempt (a load at start-up counts as one).
    pub fn record_reload(&self, result: ReloadResult) {
        let counter = match result {
            ReloadResult::Ok => &self.reloads_ok,
            ReloadResult::Refused(_) => &self.reloads_refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let record = ReloadRecord { at: Utc::now(), result };
        *self.last_reload.lock().unwrap_or_else(|e| e.into_inner()) = Some(record);
    }

    /// Reload attempts so far: (accepted, refused).
    pub fn reload_counts(&self) -> (u64, u64) {
        (self.reloads_ok.load(Ordering::Relaxed), self.reloads_refused.load(Ordering::Relaxed))
    }

    /// The last reload attempt, if any.
    pub fn last_reload(&self) -> Option<ReloadRecord> {
        self.last_reload.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The remote source's status (`None` for a local export).
    pub fn source(&self) -> Option<SourceStatus> {
        self.source.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set_source(&self, status: SourceStatus) {
        *self.source.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
    }
}
