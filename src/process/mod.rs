//! What belongs to the process, below every front door (HTTP today): its configuration's
//! limits, logging, metrics, credentials and quotas, memory and scheduling. Nothing here imports
//! a front door or the engine; both use it.

pub mod credentials;
pub mod direct;
pub mod keys;
pub mod keys_reload;
pub mod limits;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod priority;
pub mod scram;
pub mod usage;

use std::path::{Path, PathBuf};

/// Whether no process with this id runs: what it left named with its id (a scratch folder, a
/// temporary file) is left over.
pub fn gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// This process's scratch folder `PREFIX-PID` in the system's temporary folder (not created);
/// the scratch folders of gone processes with the same prefix are removed in the background.
pub fn scratch_dir(prefix: &str) -> PathBuf {
    scratch_dir_in(&std::env::temp_dir(), prefix)
}

/// [`scratch_dir`] in `parent`. The scratch folders that gone processes left (a crash's, or a
/// stop's cut short) are removed on a thread of its own at the lowest priority: unlinking the
/// kept exports of a large catalog takes a moment, which a start would otherwise spend before
/// its first load.
pub fn scratch_dir_in(parent: &Path, prefix: &str) -> PathBuf {
    let (folder, name) = (parent.to_path_buf(), prefix.to_string());
    let sweep = move || {
        priority::lowest();
        sweep_left_over(&folder, &name);
    };
    if std::thread::Builder::new().name("eco-sweep".into()).spawn(sweep.clone()).is_err() {
        sweep();
    }
    parent.join(format!("{prefix}-{}", std::process::id()))
}

/// Removes the folders `PREFIX-PID` in `parent` whose process is gone.
pub fn sweep_left_over(parent: &Path, prefix: &str) {
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
}
