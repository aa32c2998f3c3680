//! The state folder (`--state-dir`): the last dataset the service accepted, kept on disk so a
//! restart whose export is missing or broken still serves it.
//!
//! What is kept is the export's bytes as they were accepted (`export-<sha256>.parquet`, named by
//! its content) and `manifest.json`: the dataset version, the export's SHA-256 and size, the
//! name of the file it came from, when it was accepted, and the views' files and the cost
//! configuration it was served with — so the kept dataset is served with the same numbers, the
//! same version and the same ETags, whatever the queries folder says after the restart.
//!
//! Writes are atomic: the export is written to a temporary file, flushed to disk and renamed;
//! then the manifest the same way (the rename of the manifest is the commit); then the folder is
//! flushed. A reader sees the previous kept dataset or the new one, never a mix. Everything read
//! back is checked (the manifest's shape and format, the export's size and SHA-256, the version
//! recomputed from the kept views) and then loaded through the same checks as any export: a
//! damaged kept copy is refused with a log line, never served.
//!
//! Beside it, the served table of the kept version (`table-<version>.arrow`, Arrow IPC, with the
//! XXH3 of every 8 MiB in `table-<version>.sums.json`): a restart on the same version maps it
//! instead of building the table again (see `reload::load_export`).

use std::io::Write;
use std::path::{Path, PathBuf};

use polars::prelude::{DataFrame, IpcReader, IpcWriter, SerReader, SerWriter};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::load;
use super::views::{CostConfig, Views};

/// The manifest's file name inside the state folder.
pub const MANIFEST: &str = "manifest.json";

/// The manifest format this build writes and reads.
const FORMAT: u32 = 1;

/// What `manifest.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    format: u32,
    /// The dataset version it was served with.
    version: String,
    /// The kept export's file name inside the folder.
    export: String,
    /// SHA-256 of the kept export (hex) and its size in bytes.
    export_sha256: String,
    export_bytes: u64,
    /// Name (without folder) of the file it was read from.
    source: String,
    accepted_at: DateTime<Utc>,
    /// The views' files (name, text), in run order, and the cost configuration.
    queries: Vec<(String, String)>,
    cost: CostConfig,
}

/// A dataset read back from the state folder, checked, ready to be loaded.
#[derive(Debug)]
pub struct Kept {
    pub bytes: Vec<u8>,
    pub version: String,
    pub views: Views,
    /// Name of the file it was read from when it was accepted.
    pub source: String,
    pub accepted_at: DateTime<Utc>,
    /// The kept export's path (for log lines).
    pub path: PathBuf,
}

/// An export written to the folder before it is checked, committed once it is accepted.
#[derive(Debug)]
pub struct Staged {
    tmp: PathBuf,
    name: String,
    digest: [u8; 32],
    bytes: u64,
}

/// The state folder.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

fn io_context(what: &str, path: &Path, e: std::io::Error) -> String {
    format!("cannot {what} {}: {e}", path.display())
}

/// Writes `bytes` to `path` through a temporary file flushed to disk and renamed.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = temporary(path);
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_context("write", path, e)
    })
}

/// A temporary name beside `path`, unique to this process.
fn temporary(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// The checksums of a prepared table: its size and the XXH3 of each [`SUM_CHUNK`] bytes.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ChunkSums {
    bytes: u64,
    chunk: u64,
    xxh3: Vec<u64>,
}

const SUM_CHUNK: usize = 8 << 20;

/// [`ChunkSums`] of a file, the chunks hashed in parallel through a mapping.
fn chunk_sums(path: &Path) -> Result<ChunkSums, String> {
    use rayon::prelude::*;
    let file = std::fs::File::open(path).map_err(|e| io_context("open", path, e))?;
    let len = file.metadata().map_err(|e| io_context("read", path, e))?.len();
    if len == 0 {
        return Ok(ChunkSums { bytes: 0, chunk: SUM_CHUNK as u64, xxh3: Vec::new() });
    }
    // SAFETY: read-only mapping of a file this service writes once (temporary file, renamed)
    // and never modifies in place.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io_context("map", path, e))?;
    let xxh3 = map.par_chunks(SUM_CHUNK).map(xxhash_rust::xxh3::xxh3_64).collect();
    Ok(ChunkSums { bytes: len, chunk: SUM_CHUNK as u64, xxh3 })
}

/// Flushes a folder's entries (the renames) to disk.
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The process id in the name of a temporary file ([`temporary`]).
fn temporary_owner(name: &str) -> Option<u32> {
    if !name.starts_with('.') || !name.ends_with(".tmp") {
        return None;
    }
    name.rsplit('.').nth(1).and_then(|pid| pid.parse::<u32>().ok())
}

/// Whether `name` is a temporary file of another process that is gone: a write cut short by a
/// stop or a crash, never to be completed.
fn orphaned(name: &str) -> bool {
    temporary_owner(name).is_some_and(|pid| pid != std::process::id() && crate::process::gone(pid))
}

impl StateDir {
    /// The state folder at `dir`; the temporary files that stopped processes left in it are
    /// removed.
    pub fn new(dir: impl Into<PathBuf>) -> StateDir {
        let state = StateDir { dir: dir.into() };
        state.remove_orphans();
        state
    }

    /// Removes the temporary files of processes that are gone, and those named with this
    /// process's id (a stopped process whose id this one reuses, as in a container; nothing is
    /// being written yet when the folder is opened).
    fn remove_orphans(&self) {
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if orphaned(&name) || temporary_owner(&name) == Some(std::process::id()) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn manifest(&self) -> Result<Option<Manifest>, String> {
        let path = self.dir.join(MANIFEST);
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_context("read", &path, e)),
        };
        let m: Manifest = serde_json::from_slice(&text).map_err(|e| format!("{} is damaged: {e}", path.display()))?;
        if m.format != FORMAT {
            return Err(format!("{} has format {}, this build reads format {FORMAT}", path.display(), m.format));
        }
        Ok(Some(m))
    }

    /// The prepared table of a dataset version (see [`StateDir::save_prepared`]).
    fn prepared_path(&self, version: &str) -> PathBuf {
        self.dir.join(format!("table-{version}.arrow"))
    }

    /// The prepared table's checksums.
    fn prepared_sums_path(&self, version: &str) -> PathBuf {
        self.dir.join(format!("table-{version}.sums.json"))
    }

    /// Writes the served table of `version` (`Table::prepared`) as uncompressed Arrow IPC,
    /// atomically, and removes the other versions' tables: a restart on the same version maps it
    /// instead of decoding the export and computing the views and the table again.
    pub fn save_prepared(&self, version: &str, frame: &mut DataFrame) -> Result<(), String> {
        if version.is_empty() || !version.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(format!("unexpected dataset version {version:?}"));
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| io_context("create the state folder", &self.dir, e))?;
        let path = self.prepared_path(version);
        let tmp = temporary(&path);
        let written = (|| {
            let file = std::fs::File::create(&tmp).map_err(|e| io_context("create", &tmp, e))?;
            let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
            IpcWriter::new(&mut writer).finish(frame).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
            let file = writer.into_inner().map_err(|e| io_context("write", &tmp, e.into_error()))?;
            file.sync_all().map_err(|e| io_context("write", &tmp, e))?;
            std::fs::rename(&tmp, &path).map_err(|e| io_context("rename", &tmp, e))
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        // The checksums, written once the table is in place: a table without them is not used.
        let sums = chunk_sums(&path)?;
        let text = serde_json::to_vec(&sums).map_err(|e| e.to_string())?;
        write_atomically(&self.prepared_sums_path(version), &text)?;
        sync_dir(&self.dir);
        let keep = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let keep_sums = format!("table-{version}.sums.json");
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let other_table = name.starts_with("table-")
                    && (name.ends_with(".arrow") || name.ends_with(".sums.json"))
                    && name != keep
                    && name != keep_sums;
                // A file being written by a process that is gone (stopped during the write).
                let leftover = orphaned(&name);
                if other_table || leftover {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Ok(())
    }

    /// The prepared table of `version`, memory-mapped: `None` when there is none. The file is
    /// this service's own output, written atomically; its bytes are checked against the
    /// checksums written with it (XXH3 of every 8 MiB, in parallel) before it is read, and the
    /// caller checks what it relies on (`Table::restore`) and falls back to the export on any
    /// error.
    pub fn load_prepared(&self, version: &str) -> Option<Result<DataFrame, String>> {
        let path = self.prepared_path(version);
        let file = std::fs::File::open(&path).ok()?;
        let expected: ChunkSums = match std::fs::read(self.prepared_sums_path(version)) {
            Ok(text) => match serde_json::from_slice(&text) {
                Ok(s) => s,
                Err(e) => return Some(Err(format!("the checksums of {} are damaged: {e}", path.display()))),
            },
            Err(e) => return Some(Err(io_context("read the checksums of", &path, e))),
        };
        match chunk_sums(&path) {
            Ok(found) if found == expected => {}
            Ok(_) => return Some(Err(format!("{} is damaged: its checksums do not match", path.display()))),
            Err(e) => return Some(Err(e)),
        }
        // SAFETY: the file is written by `save_prepared` (temporary file, flushed, renamed) and
        // never modified in place: a new version is a new file and an old one is only removed,
        // which keeps a mapping valid.
        let reader = unsafe { IpcReader::new(file).memory_mapped(Some(path.clone())) };
        Some(reader.finish().map_err(|e| format!("cannot read {}: {e}", path.display())))
    }

    /// The version of the kept dataset, if a readable manifest names one.
    pub fn kept_version(&self) -> Option<String> {
        self.manifest().ok().flatten().map(|m| m.version)
    }

    /// Writes an export about to be checked to a temporary file of the folder (not yet flushed:
    /// that happens on [`StateDir::commit`], once the export is accepted). `None` when the folder
    /// already keeps these bytes.
    pub fn stage(&self, bytes: &[u8], digest: [u8; 32]) -> Result<Option<Staged>, String> {
        let sha = hex::encode(digest);
        if self.manifest().ok().flatten().is_some_and(|m| m.export_sha256 == sha && self.dir.join(&m.export).is_file())
        {
            return Ok(None);
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| io_context("create the state folder", &self.dir, e))?;
        let name = format!("export-{}.parquet", &sha[..32]);
        let tmp = temporary(&self.dir.join(&name));
        // Around the page cache: the copy is read again only if a restart must fall back on it.
        let mut file = crate::process::direct::DirectFile::create(&tmp).map_err(|e| io_context("create", &tmp, e))?;
        if let Err(e) = file.write_all(bytes).and_then(|()| file.finish()) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io_context("write", &tmp, e));
        }
        Ok(Some(Staged { tmp, name, digest, bytes: bytes.len() as u64 }))
    }

    /// Drops a staged export that was refused.
    pub fn discard(&self, staged: Staged) {
        let _ = std::fs::remove_file(&staged.tmp);
    }

    /// Makes an accepted dataset the kept one: the staged export (if any) is flushed and renamed,
    /// the manifest replaced, the folder flushed, and older exports removed.
    pub fn commit(
        &self,
        staged: Option<Staged>,
        digest: [u8; 32],
        version: &str,
        views: &Views,
        source: &str,
    ) -> Result<(), String> {
        let sha = hex::encode(digest);
        let (name, size) = match staged {
            Some(s) => {
                debug_assert_eq!(s.digest, digest);
                let target = self.dir.join(&s.name);
                let done = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&s.tmp)
                    .and_then(|f| f.sync_all())
                    .and_then(|()| std::fs::rename(&s.tmp, &target));
                if let Err(e) = done {
                    let _ = std::fs::remove_file(&s.tmp);
                    return Err(io_context("keep", &target, e));
                }
                (s.name, s.bytes)
            }
            None => match self.manifest()? {
                Some(m) if m.export_sha256 == sha => (m.export, m.export_bytes),
                _ => return Err("the export to keep was not staged".to_string()),
            },
        };
        let manifest = Manifest {
            format: FORMAT,
            version: version.to_string(),
            export: name.clone(),
            export_sha256: sha,
            export_bytes: size,
            source: source.to_string(),
            accepted_at: Utc::now(),
            queries: views.sources.clone(),
            cost: views.cost.clone(),
        };
        let text = serde_json::to_vec_pretty(&manifest).map_err(|e| e.to_string())?;
        write_atomically(&self.dir.join(MANIFEST), &text)?;
        sync_dir(&self.dir);
        self.remove_others(&name);
        Ok(())
    }

    /// Removes kept exports other than `keep` and this process's leftover temporary files.
    fn remove_others(&self, keep: &str) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        let own_tmp = format!(".{}.tmp", std::process::id());
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let old_export = name.starts_with("export-") && name.ends_with(".parquet") && name != keep;
            let own_leftover = name.starts_with(".export-") && name.ends_with(&own_tmp);
            if old_export || own_leftover {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// Reads the kept dataset back and checks it against its manifest: `Ok(None)` when nothing
    /// is kept, `Err` (the reason) when what is kept is damaged or unreadable.
    pub fn read(&self, max_bytes: u64) -> Result<Option<Kept>, String> {
        let Some(m) = self.manifest()? else { return Ok(None) };
        let path = self.dir.join(&m.export);
        if m.export.contains('/') || m.export.contains('\\') || m.export.starts_with('.') {
            return Err(format!("{MANIFEST} names an export outside the state folder ({:?})", m.export));
        }
        let bytes = load::read_limited(&path, max_bytes).map_err(|e| e.to_string())?;
        if bytes.len() as u64 != m.export_bytes {
            return Err(format!(
                "the kept export {} is damaged: {} bytes, the manifest says {}",
                path.display(),
                bytes.len(),
                m.export_bytes
            ));
        }
        let digest = load::export_digest(&bytes);
        if hex::encode(digest) != m.export_sha256 {
            return Err(format!(
                "the kept export {} is damaged: its SHA-256 does not match the manifest",
                path.display()
            ));
        }
        let views = Views::from_sources(&m.queries, &m.cost)
            .map_err(|e| format!("the views kept in {MANIFEST} cannot be used: {e:#}"))?;
        let version = load::version_from(&digest, &views);
        if version != m.version {
            return Err(format!(
                "the kept dataset's version does not match its manifest ({version}, the manifest says {})",
                m.version
            ));
        }
        Ok(Some(Kept { bytes, version, views, source: m.source, accepted_at: m.accepted_at, path }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn views() -> Views {
        let params = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/queries/parametros.toml")).unwrap();
        let sources = [
            ("parametros.toml".to_string(), params),
            ("01.sql".to_string(), "CREATE TABLE vw_eco_score AS SELECT * FROM catalog".to_string()),
        ];
        Views::from_sources(&sources, &CostConfig::default()).unwrap()
    }

    #[test]
    fn temporary_files_of_stopped_processes_are_removed_when_the_folder_opens() {
        let dir = std::env::temp_dir().join(format!("eco-state-orphans-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A process id that is not running (pid_max is at most 2^22), this process's own id (a
        // stopped process whose id it reuses), a live process's file and kept files.
        let gone = ".table-abc.arrow.4194999.tmp".to_string();
        let own = format!(".table-abc.arrow.{}.tmp", std::process::id());
        let live = ".export-x.parquet.1.tmp".to_string();
        for name in [&gone, &own, &live, &"table-abc.arrow".to_string(), &"manifest.json".to_string()] {
            std::fs::write(dir.join(name), b"").unwrap();
        }
        let _state = StateDir::new(&dir);
        let mut left: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        assert_eq!(left, vec![live, "manifest.json".to_string(), "table-abc.arrow".to_string()]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn keeps_reads_back_and_refuses_damage() {
        let dir = std::env::temp_dir().join(format!("eco-state-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let state = StateDir::new(&dir);
        assert!(state.read(u64::MAX).unwrap().is_none(), "nothing kept yet");
        let v = views();
        let (one, two) = (b"first export".to_vec(), b"second export".to_vec());
        for bytes in [&one, &two] {
            let digest = load::export_digest(bytes);
            let staged = state.stage(bytes, digest).unwrap();
            assert!(staged.is_some());
            state.commit(staged, digest, &load::version_from(&digest, &v), &v, "catalog.parquet").unwrap();
        }
        let kept = state.read(u64::MAX).unwrap().unwrap();
        assert_eq!(kept.bytes, two);
        assert_eq!(kept.version, load::version_of(&two, &v));
        assert_eq!(kept.views.digest, v.digest);
        assert_eq!(kept.source, "catalog.parquet");
        // The same bytes again are not staged twice; one export file, no temporary left.
        assert!(state.stage(&two, load::export_digest(&two)).unwrap().is_none());
        let names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // A refused export leaves nothing behind.
        let three = b"third".to_vec();
        let staged = state.stage(&three, load::export_digest(&three)).unwrap().unwrap();
        state.discard(staged);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        // One flipped byte of the kept export: refused, never served.
        let export = kept.path.clone();
        let mut damaged = std::fs::read(&export).unwrap();
        damaged[0] ^= 1;
        std::fs::write(&export, &damaged).unwrap();
        assert!(state.read(u64::MAX).unwrap_err().contains("SHA-256"));
        // A truncated manifest: refused.
        std::fs::write(dir.join(MANIFEST), b"{\"format\": 1,").unwrap();
        assert!(state.read(u64::MAX).unwrap_err().contains("damaged"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
