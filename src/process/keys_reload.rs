//! Hot credentials: the running service watches its credentials file (size, modification time
//! and inode, polled, and on SIGHUP) and swaps a changed, valid file in without a restart. A
//! broken file is refused with a log line saying why, and the last good set keeps working.
//! Revoked keys stop working with the next request; the quota buckets of the keys that remain
//! keep their state.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use std::sync::Arc;

use super::credentials::CredentialsFile;
use super::keys::{Credentials, KeyStore};

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

/// The credentials file as it was at one moment (taken before the first read, so a change made
/// while the service starts is not missed).
#[derive(Debug, Clone)]
pub struct FileStamp(Option<Stamp>);

impl FileStamp {
    pub fn now(path: &std::path::Path) -> FileStamp {
        FileStamp(stamp(&path.to_path_buf()))
    }
}

pub struct CredentialsReloader {
    path: PathBuf,
    /// The file as it was read at start-up.
    seen: FileStamp,
    keys: Arc<KeyStore>,
    /// False when the service listens beyond loopback without `--allow-demo-credentials`: a file
    /// that activates the public demo pair is then refused like a broken one.
    demo_allowed: bool,
}

impl CredentialsReloader {
    /// Watches `path`, read at start-up when it was as `seen`.
    pub fn new(path: PathBuf, seen: FileStamp, keys: Arc<KeyStore>, demo_allowed: bool) -> CredentialsReloader {
        CredentialsReloader { path, seen, keys, demo_allowed }
    }

    /// Polls the file every `interval` and re-reads it on SIGHUP; runs until the process stops.
    pub async fn run(self, interval: Duration) {
        #[cfg(unix)]
        let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        let mut seen = self.seen.0.clone();
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
            let now = stamp(&self.path);
            if !forced && now == seen {
                continue;
            }
            seen = now;
            self.reload(if forced { "SIGHUP" } else { "file changed" });
        }
    }

    /// Reads the file now and puts it in force if it is valid.
    pub fn reload(&self, reason: &str) -> bool {
        let file = self.path.display();
        match self.read() {
            Ok(credentials) => {
                let keys = credentials.len();
                if keys == 0 {
                    tracing::warn!(%file, reason, "credentials reloaded: the file lists no key, every API request is refused");
                } else {
                    tracing::info!(%file, reason, keys, "credentials reloaded");
                }
                self.keys.replace(credentials);
                true
            }
            Err(why) => {
                tracing::error!(%file, reason, "new credentials file refused; the previous credentials stay in force: {why:#}");
                false
            }
        }
    }

    fn read(&self) -> anyhow::Result<Credentials> {
        let file = CredentialsFile::read(&self.path)?;
        let current = self.keys.current();
        let credentials = Credentials::from_file(&file, Some(&current));
        if credentials.demo_active() && !self.demo_allowed {
            anyhow::bail!(
                "it activates the public demo credentials (demo-key / demo-secret) while the service listens \
                 beyond loopback without --allow-demo-credentials"
            );
        }
        Ok(credentials)
    }
}
