//! What belongs to the process, below every front door (HTTP today): its configuration's
//! limits, logging, metrics, credentials and quotas, memory and scheduling. Nothing here imports
//! a front door or the engine; both use it.

pub mod credentials;
pub mod keys;
pub mod keys_reload;
pub mod limits;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod priority;
pub mod scram;

use std::path::{Path, PathBuf};

/// Whether no process with this id runs: what it left named with its id (a scratch folder, a
/// temporary file) is left over.
pub fn gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// This process's scratch folder `PREFIX-PID` in the system's temporary folder (not created);
/// the scratch folders of gone processes with the same prefix are removed.
pub fn scratch_dir(prefix: &str) -> PathBuf {
    scratch_dir_in(&std::env::temp_dir(), prefix)
}

/// [`scratch_dir`] in `parent`.
pub fn scratch_dir_in(parent: &Path, prefix: &str) -> PathBuf {
    if let Ok(entries) = std::fs::read_dir(parent) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let left_over = name
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('-'))
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(gone);
            if left_over {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    parent.join(format!("{prefix}-{}", std::process::id()))
}
