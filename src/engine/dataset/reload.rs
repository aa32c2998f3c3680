//! Hot reload: watch the data file (and SIGHUP), load and check a changed export completely in
//! the background, and swap it in only when everything succeeded. A bad export never replaces
//! the snapshot that is serving.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::load::{self, InputLimits, LoadError};
use super::snapshot::{Origin, Snapshot};
use super::state::StateDir;
use super::store::{ReloadResult, Store};
use super::views::{CostConfig, Views};

/// How long a changed file must stay unchanged before it is read.
const SETTLE: Duration = Duration::from_millis(300);

/// The same for a file that replaced the previous one (another inode: a rename, which exposes
/// only complete files); short, so a burst of changes is still read once.
const SETTLE_RENAMED: Duration = Duration::from_millis(50);

/// What identifies one version of the file on disk without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

fn stamp(path: &PathBuf) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp { len: m.len(), modified: m.modified().ok(), inode })
}

/// The outcome of one reload attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A new snapshot is serving.
    Swapped { version: String, rows: usize },
    /// The file has the content already serving.
    Unchanged,
    /// The file was refused; the previous snapshot keeps serving.
    Refused,
}

/// Work done on a new snapshot before it is swapped in (computing its dataset-only answers).
pub type Warm = fn(&Snapshot);

/// Whether views can be read by analysts' SQL too: the reason if not.
pub type ViewsCheck = fn(&Views) -> Result<(), String>;

/// Runs `check` on the views read from `queries` and logs why analysts' SQL cannot read them, if
/// it cannot (the API serves them anyway): at the first start and on a reload that edited them.
pub fn say_if_sql_cannot_read(check: ViewsCheck, views: &Views, queries: &Path) {
    if let Err(e) = check(views) {
        tracing::warn!(queries = %queries.display(), "the views cannot be read in analysts' SQL (the API serves them): {e}");
    }
}

pub struct Reloader {
    data: PathBuf,
    queries: PathBuf,
    cost: CostConfig,
    store: Arc<Store>,
    warm: Warm,
    limits: InputLimits,
    state: Option<StateDir>,
    /// The file as it was when the reloader was made (before the first load read it).
    seen: Option<Stamp>,
    /// Checks views that changed since the dataset serving was loaded.
    views_check: Option<ViewsCheck>,
}

/// Reads and checks the export at `data` and builds its snapshot, unless `serving` is already its
/// version (`Ok(None)`). With a state folder, an accepted export is kept there before it is
/// returned (a failure to keep it is logged; the dataset still serves).
pub fn load_export(
    data: &Path,
    views: &Views,
    limits: InputLimits,
    state: Option<&StateDir>,
    serving: Option<&str>,
    accepted: Option<&load::Accepted>,
) -> Result<Option<Snapshot>, LoadError> {
    let kept = state.filter(|_| serving.is_none()).and_then(|s| s.kept_version().map(|v| (s, v)));
    let stage = |bytes: &[u8], digest: [u8; 32]| {
        state.and_then(|s| {
            s.stage(bytes, digest).unwrap_or_else(|e| {
                tracing::error!(state_dir = %s.path().display(), "cannot keep the export in the state folder: {e}");
                None
            })
        })
    };
    let (loaded, digest, version, staged) = if serving.is_none() && kept.is_none() {
        // A first load with nothing kept to compare it with: the export is parsed while its
        // digest is computed on the other core.
        let started = std::time::Instant::now();
        let bytes = load::read_limited(data, limits.max_bytes)?;
        let (digest, raw) = std::thread::scope(|scope| {
            // The export is kept for analysts' SQL on the same core, once its version is known.
            let digest = scope.spawn(|| {
                let digest = load::export_digest(&bytes);
                let version = load::version_from(&digest, views);
                load::keep_export(&bytes, &version);
                load::first_export_kept(&version);
                digest
            });
            let raw = load::read_parquet(&bytes, &data.display().to_string(), limits.max_rows);
            (digest.join(), raw)
        });
        let digest = digest.unwrap_or_else(|_| load::export_digest(&bytes));
        let version = load::version_from(&digest, views);
        let staged = match raw {
            Ok(_) => stage(&bytes, digest),
            Err(_) => None,
        };
        drop(bytes);
        let loaded = raw.and_then(|raw| load::load_parsed(raw, version.clone(), data, views, started, accepted));
        (loaded, digest, version, staged)
    } else {
        // With a kept version, the table of the kept version is mapped on another thread
        // while the export is read and hashed: it serves if the export turns out to be the
        // kept one (a restart on an unchanged export), and is dropped otherwise. On a reload,
        // an unchanged export is not parsed at all.
        let (read, early) = std::thread::scope(|scope| {
            let early =
                kept.as_ref().map(|(s, v)| scope.spawn(move || restore_prepared(s, v, data, views, Origin::Export)));
            let read = load::read_limited(data, limits.max_bytes).map(|bytes| {
                let digest = load::export_digest(&bytes);
                let version = load::version_from(&digest, views);
                (bytes, digest, version)
            });
            (read, early.and_then(|h| h.join().ok().flatten()))
        });
        let (bytes, digest, version) = read?;
        if serving == Some(version.as_str()) {
            return Ok(None);
        }
        load::keep_export(&bytes, &version);
        if let Some(snapshot) = early.filter(|s| s.info.version == version) {
            return Ok(Some(snapshot));
        }
        let staged = stage(&bytes, digest);
        let loaded = load::load_owned(bytes, version.clone(), data, views, limits.max_rows);
        (loaded, digest, version, staged)
    };
    if let Some(s) = state {
        match &loaded {
            Ok(_) => {
                let source = data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                match s.commit(staged, digest, &version, views, &source) {
                    Ok(()) => {
                        tracing::info!(%version, state_dir = %s.path().display(), "dataset kept in the state folder");
                        if let Ok(snapshot) = &loaded {
                            save_prepared(s.clone(), &version, snapshot);
                        }
                    }
                    Err(e) => tracing::error!(
                        state_dir = %s.path().display(),
                        "cannot keep the dataset in the state folder (the previous kept one stays): {e}"
                    ),
                }
            }
            Err(_) => {
                if let Some(staged) = staged {
                    s.discard(staged);
                }
            }
        }
    }
    loaded.map(Some)
}

/// A restart on the dataset the state folder keeps (same version: same export bytes, views and
/// cost configuration): its served table mapped from the folder (`table-<version>.arrow`,
/// written after the dataset was first accepted) instead of decoding the export and computing
/// the views and the table again. `None` (after a log line when something was wrong with it)
/// sends the caller down the full load.
fn restore_prepared(state: &StateDir, version: &str, data: &Path, views: &Views, origin: Origin) -> Option<Snapshot> {
    if state.kept_version().as_deref() != Some(version) {
        return None;
    }
    let started = std::time::Instant::now();
    let frame = match state.load_prepared(version)? {
        Ok(frame) => {
            tracing::debug!(ms = started.elapsed().as_millis() as u64, "prepared table mapped");
            frame
        }
        Err(e) => {
            tracing::warn!(%version, "the prepared table cannot be read; loading the export: {e}");
            return None;
        }
    };
    let info = super::snapshot::DatasetInfo {
        version: version.to_string(),
        loaded_at: chrono::Utc::now(),
        source: data.to_path_buf(),
        origin,
        rows: frame.height(),
        views: Arc::new(views.clone()),
    };
    let casas = views.params.casas;
    match super::contain::contained(|| super::table::Table::restore(frame, casas)) {
        Ok(Ok(table)) => {
            tracing::info!(%version, rows = info.rows, ms = started.elapsed().as_millis() as u64, "prepared table mapped from the state folder");
            Some(Snapshot { info, table })
        }
        Ok(Err(e)) => {
            tracing::warn!(%version, "the prepared table is refused; loading the export: {e}");
            None
        }
        Err(panic) => {
            tracing::warn!(%version, "the prepared table is refused ({panic}); loading the export");
            None
        }
    }
}

/// Writes the served table of a dataset just kept in the state folder, on a thread of its own
/// (serving does not wait for it), for the next restart on the same version.
fn save_prepared(state: StateDir, version: &str, snapshot: &Snapshot) {
    let mut frame = match snapshot.table.prepared() {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(version, "cannot prepare the table for the state folder: {e}");
            return;
        }
    };
    let version = version.to_string();
    let work = move || {
        let started = std::time::Instant::now();
        match state.save_prepared(&version, &mut frame) {
            Ok(()) => {
                tracing::info!(%version, ms = started.elapsed().as_millis() as u64, "prepared table written to the state folder")
            }
            Err(e) => tracing::warn!(%version, "cannot write the prepared table to the state folder: {e}"),
        }
    };
    if let Err(e) = std::thread::Builder::new().name("eco-prepare".into()).spawn(work) {
        tracing::warn!("cannot start the thread writing the prepared table: {e}");
    }
}

/// The dataset kept in the state folder, checked and loaded; `Ok(None)` when nothing is kept.
pub fn load_kept(state: &StateDir, limits: InputLimits) -> Result<Option<Snapshot>, String> {
    let Some(kept) = state.read(limits.max_bytes)? else { return Ok(None) };
    load::keep_export(&kept.bytes, &kept.version);
    if let Some(mut snapshot) = restore_prepared(state, &kept.version, &kept.path, &kept.views, Origin::State) {
        snapshot.info.source = PathBuf::from(kept.source);
        return Ok(Some(snapshot));
    }
    let path = kept.path.clone();
    let mut snapshot = load::load_owned(kept.bytes, kept.version, &path, &kept.views, limits.max_rows)
        .map_err(|e| format!("the kept dataset is refused: {e}"))?;
    snapshot.info.origin = Origin::State;
    snapshot.info.source = PathBuf::from(kept.source);
    Ok(Some(snapshot))
}

/// A refusal reason as `/readyz` may show it: the data file named without its folder.
pub fn public_reason(data: &std::path::Path, why: &str) -> String {
    match data.file_name() {
        Some(name) => why.replace(&data.display().to_string(), &name.to_string_lossy()),
        None => why.to_string(),
    }
}

/// Logs what a swap changed (vehicles added, removed, changed, unchanged), computed after the
/// swap on a thread of its own, so the new data serves without waiting for the comparison; the
/// replaced snapshot is freed there once compared.
fn log_changes(previous: Arc<Snapshot>, current: Arc<Snapshot>) {
    let work = move || {
        let started = std::time::Instant::now();
        match super::diff::compare(&previous, &current) {
            Ok(delta) => {
                let c = delta.counts();
                tracing::info!(
                    from = %previous.info.version,
                    to = %current.info.version,
                    added = c.added,
                    removed = c.removed,
                    changed = c.changed,
                    unchanged = c.unchanged,
                    ms = started.elapsed().as_millis() as u64,
                    "dataset swap changed"
                );
            }
            Err(e) => tracing::warn!(error = %e, "cannot compare the swapped datasets"),
        }
        drop(previous);
    };
    if let Err(e) = std::thread::Builder::new().name("eco-reload-diff".into()).spawn(work) {
        tracing::warn!(error = %e, "cannot start the thread comparing the swapped datasets");
    }
}

impl Reloader {
    /// Watches `data` from now on: make it before the first load reads the file.
    pub fn new(data: PathBuf, queries: PathBuf, cost: CostConfig, store: Arc<Store>, warm: Warm) -> Reloader {
        let seen = stamp(&data);
        Reloader {
            data,
            queries,
            cost,
            store,
            warm,
            limits: InputLimits::default(),
            state: None,
            seen,
            views_check: None,
        }
    }

    /// Runs `check` on views edited since the serving dataset was loaded (see
    /// [`say_if_sql_cannot_read`]).
    pub fn with_views_check(mut self, check: ViewsCheck) -> Reloader {
        self.views_check = Some(check);
        self
    }

    /// Refuses exports over `limits` (bytes, declared rows).
    pub fn with_limits(mut self, limits: InputLimits) -> Reloader {
        self.limits = limits;
        self
    }

    /// Keeps every accepted export in `state` (see [`super::state`]).
    pub fn with_state(mut self, state: Option<StateDir>) -> Reloader {
        self.state = state;
        self
    }

    /// Polls the file every `interval` and reloads on SIGHUP; runs until the process stops.
    pub async fn run(self, interval: Duration) {
        #[cfg(unix)]
        let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        let mut seen = self.seen.clone();
        let mut missing_logged = false;
        loop {
            #[cfg(unix)]
            let forced = match hangup.as_mut() {
                Some(h) => tokio::select! {
                    _ = tokio::time::sleep(interval) => false,
                    _ = h.recv() => true,
                },
                None => {
                    tokio::time::sleep(interval).await;
                    false
                }
            };
            #[cfg(not(unix))]
            let forced = {
                tokio::time::sleep(interval).await;
                false
            };
            let mut now = stamp(&self.data);
            if now.is_none() {
                if !missing_logged {
                    tracing::warn!(file = %self.data.display(), "data file is missing; the current snapshot keeps serving");
                    missing_logged = true;
                }
                seen = None;
                continue;
            }
            missing_logged = false;
            if !forced && now == seen {
                continue;
            }
            // Wait for the writer to finish: the stamp must hold still for SETTLE (less when the
            // file was replaced by a rename).
            let renamed = matches!((&seen, &now), (Some(a), Some(b)) if a.inode != b.inode);
            let settle = if renamed { SETTLE_RENAMED } else { SETTLE };
            loop {
                tokio::time::sleep(settle).await;
                let again = stamp(&self.data);
                if again == now {
                    break;
                }
                now = again;
            }
            seen = now;
            let reason = if forced { "SIGHUP" } else { "file changed" };
            self.reload(reason).await;
        }
    }

    /// Loads the file now and swaps it in if it is valid and new.
    pub async fn reload(&self, reason: &str) -> Outcome {
        let data = self.data.clone();
        let queries = self.queries.clone();
        let cost = self.cost.clone();
        let warm = self.warm;
        let limits = self.limits;
        let state = self.state.clone();
        // A dataset served from the state folder is replaced even by the same export (it is then
        // served from the export again).
        let serving = self.store.current();
        let current = serving.as_ref().filter(|s| s.info.origin == Origin::Export).map(|s| s.info.version.clone());
        let views_serving = serving.map(|s| s.info.views.digest);
        let views_check = self.views_check;
        tracing::info!(file = %data.display(), reason, "reloading dataset");
        let work = move || -> Result<Option<_>, String> {
            // Requests keep being served meanwhile, a little behind the load when CPU is short.
            let _yields = crate::process::priority::serving_yields();
            // The views are read on every reload, so edited formulas apply even when the export
            // itself is unchanged; the version covers both (and the cost configuration).
            let views = Views::read(&queries, &cost).map_err(|e| format!("{e:#}"))?;
            if let Some(check) = views_check.filter(|_| views_serving != Some(views.digest)) {
                say_if_sql_cannot_read(check, &views, &queries);
            }
            let loaded = load_export(&data, &views, limits, state.as_ref(), current.as_deref(), None);
            let snapshot = match loaded.map_err(|e| e.to_string())? {
                Some(s) => s,
                None => return Ok(None),
            };
            // The load's free pages go back before the answers are computed: the served snapshot
            // is in memory beside the new one until the swap.
            crate::process::memory::between_phases();
            let started = std::time::Instant::now();
            warm(&snapshot);
            tracing::debug!(ms = started.elapsed().as_millis() as u64, "dataset-only answers computed");
            Ok(Some(snapshot))
        };
        // A thread of its own, at the process's normal priority (the threads serving requests
        // yield to it while it runs, see `priority`), so a load under full traffic is not starved.
        let (done, result) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new().name("eco-reload".into()).spawn(move || {
            let result = crate::process::memory::during_reload(|| {
                super::contain::contained(work).unwrap_or_else(|panic| Err(format!("the reload stopped: {panic}")))
            });
            let _ = done.send(result);
        });
        let outcome = match spawned {
            Ok(_) => result.await.map_err(|_| "the reload thread stopped before finishing".to_string()),
            Err(e) => Err(format!("cannot start the reload thread: {e}")),
        };
        match outcome {
            Ok(Ok(Some(snapshot))) => {
                let (version, rows, bytes) =
                    (snapshot.info.version.clone(), snapshot.info.rows, snapshot.estimated_bytes());
                // The replaced snapshot is freed off the async workers, by the thread that
                // compares it with the new one (when no request holds it any more, the last one
                // to finish frees it).
                let previous = self.store.replace(snapshot);
                tracing::info!(%version, rows, bytes, file = %self.data.display(), "dataset swapped in");
                let current = self.store.current();
                match (previous, current) {
                    (Some(previous), Some(current)) => log_changes(previous, current),
                    (previous, _) => drop(tokio::task::spawn_blocking(move || drop(previous))),
                }
                self.store.record_reload(ReloadResult::Ok);
                Outcome::Swapped { version, rows }
            }
            Ok(Ok(None)) => {
                tracing::info!(file = %self.data.display(), "dataset unchanged (same export, views and cost configuration)");
                self.store.record_reload(ReloadResult::Ok);
                Outcome::Unchanged
            }
            Ok(Err(why)) => {
                tracing::error!(file = %self.data.display(), "new dataset refused; the previous one keeps serving: {why}");
                self.store.record_reload(ReloadResult::Refused(public_reason(&self.data, &why)));
                Outcome::Refused
            }
            Err(e) => {
                tracing::error!(file = %self.data.display(), error = %e, "dataset reload failed; the previous one keeps serving");
                self.store.record_reload(ReloadResult::Refused(e));
                Outcome::Refused
            }
        }
    }
}
