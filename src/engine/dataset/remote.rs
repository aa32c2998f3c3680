//! Exports pulled from an object store (`s3://BUCKET/KEY`, any S3 API) or a plain HTTP source
//! (`https://…`). The object is polled with a conditional GET (If-None-Match on the ETag last
//! seen), so an unchanged object costs one small request; a changed one is downloaded to a
//! temporary file and renamed over a local mirror, which the file reloader
//! ([`super::reload::Reloader`]) then validates and swaps in exactly like a local export. The
//! dataset version stays the hash of the bytes, so replicas that pulled the same object agree on
//! versions and ETags without talking to each other.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{ClientConfigKey, GetOptions, ObjectStore, RetryConfig};

use super::store::{SourceStatus, Store};

/// Longest wait between two polls while the source fails: 16 intervals, at most a minute (or
/// the poll interval, when longer).
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The wait before the next poll after `failures` failed polls in a row.
fn backoff(interval: Duration, failures: u32) -> Duration {
    if failures == 0 {
        return interval;
    }
    let cap = interval.saturating_mul(16).min(MAX_BACKOFF).max(interval);
    interval.saturating_mul(1 << failures.min(16)).min(cap)
}

/// What one poll found.
#[derive(Debug, PartialEq, Eq)]
pub enum Polled {
    /// The object has the ETag already downloaded.
    Unchanged,
    /// A changed object was written to the mirror (its size in bytes).
    Downloaded(u64),
}

/// Whether `data` names a remote source rather than a local path.
pub fn is_remote(data: &str) -> bool {
    ["s3://", "http://", "https://"].iter().any(|p| data.starts_with(p))
}

/// One remote export and the local file it is mirrored to.
pub struct Remote {
    url: String,
    store: Arc<dyn ObjectStore>,
    location: ObjectPath,
    mirror: PathBuf,
    max_bytes: u64,
    etag: Option<String>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("url", &self.url).field("mirror", &self.mirror).finish()
    }
}

impl Remote {
    /// The source `url`, mirrored into `folder` (created), refusing objects over `max_bytes`.
    /// S3 credentials, region and endpoint come from the standard AWS variables and, for what
    /// they leave unset, from the shared files' profile (`AWS_PROFILE`, else `default`).
    pub fn open(url: &str, folder: &Path, max_bytes: u64) -> anyhow::Result<Remote> {
        let (store, location): (Arc<dyn ObjectStore>, ObjectPath) = if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() || key.is_empty() || key.ends_with('/') {
                anyhow::bail!("--data {url}: expected s3://BUCKET/KEY (the key of one Parquet object)");
            }
            let mut builder = AmazonS3Builder::new();
            for (key, value) in aws_profile() {
                if let Ok(k) = key.parse::<AmazonS3ConfigKey>() {
                    builder = builder.with_config(k, value);
                }
            }
            // The variables win over the profile, as in the AWS tools.
            for (key, value) in std::env::vars_os() {
                let (Some(key), Some(value)) = (key.to_str(), value.to_str()) else { continue };
                if key.starts_with("AWS_") {
                    if let Ok(k) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                        builder = builder.with_config(k, value);
                    }
                }
            }
            let builder = builder
                .with_bucket_name(bucket)
                .with_retry(retry())
                .with_config(AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout), "5 seconds")
                .with_config(AmazonS3ConfigKey::Client(ClientConfigKey::Timeout), "600 seconds");
            let store = builder.build().map_err(|e| anyhow::anyhow!("--data {url}: {e}"))?;
            (Arc::new(store), ObjectPath::from(key))
        } else if url.starts_with("http://") || url.starts_with("https://") {
            let scheme_end = url.find("://").map(|i| i + 3).unwrap_or(0);
            let (base, key) = match url[scheme_end..].find('/') {
                Some(i) => (&url[..scheme_end + i], &url[scheme_end + i + 1..]),
                None => (url, ""),
            };
            if key.is_empty() || key.ends_with('/') {
                anyhow::bail!("--data {url}: expected the URL of one Parquet file");
            }
            let store = HttpBuilder::new()
                .with_url(base)
                .with_retry(retry())
                .with_config(ClientConfigKey::AllowHttp, "true")
                .with_config(ClientConfigKey::ConnectTimeout, "5 seconds")
                .with_config(ClientConfigKey::Timeout, "600 seconds")
                .build()
                .map_err(|e| anyhow::anyhow!("--data {url}: {e}"))?;
            (Arc::new(store), ObjectPath::from(key))
        } else {
            anyhow::bail!("--data {url}: not an s3:// or http(s):// source");
        };
        let name = location.filename().filter(|n| !n.is_empty()).unwrap_or("catalog.parquet").to_string();
        std::fs::create_dir_all(folder).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", folder.display()))?;
        Ok(Remote { url: url.to_string(), store, location, mirror: folder.join(name), max_bytes, etag: None })
    }

    /// The local file the object is mirrored to (what the reloader watches).
    pub fn mirror(&self) -> &Path {
        &self.mirror
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Asks for the object unless it still has the ETag last downloaded; a changed object is
    /// downloaded to a temporary file next to the mirror and renamed over it once complete.
    pub async fn poll(&mut self) -> Result<Polled, String> {
        let options = GetOptions { if_none_match: self.etag.clone(), ..Default::default() };
        let result = match self.store.get_opts(&self.location, options).await {
            Ok(r) => r,
            Err(object_store::Error::NotModified { .. }) => return Ok(Polled::Unchanged),
            Err(object_store::Error::NotFound { .. }) => return Err("the object does not exist".to_string()),
            Err(e) => return Err(one_line(&e.to_string())),
        };
        let etag = result.meta.e_tag.clone();
        if result.meta.size > self.max_bytes {
            return Err(format!(
                "the object has {} bytes, over --max-data-bytes ({} bytes); it is not downloaded",
                result.meta.size, self.max_bytes
            ));
        }
        let folder = self.mirror.parent().unwrap_or(Path::new(".")).to_path_buf();
        let tmp = folder.join(format!(".download-{}.tmp", std::process::id()));
        let written = self.download(result, &tmp).await;
        match written {
            Ok(n) => {
                if let Err(e) = std::fs::rename(&tmp, &self.mirror) {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(format!("cannot write {}: {e}", self.mirror.display()));
                }
                self.etag = etag;
                Ok(Polled::Downloaded(n))
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Writes the object's bytes to `tmp` (synced), refusing more than `max_bytes`.
    async fn download(&self, result: object_store::GetResult, tmp: &Path) -> Result<u64, String> {
        let mut file = std::fs::File::create(tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
        let mut stream = result.into_stream();
        let mut n: u64 = 0;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| format!("the download stopped: {}", one_line(&e.to_string())))?;
            n += chunk.len() as u64;
            if n > self.max_bytes {
                return Err(format!("the object is over --max-data-bytes ({} bytes)", self.max_bytes));
            }
            file.write_all(&chunk).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        }
        file.sync_all().map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        Ok(n)
    }

    /// One poll, recorded in `store`'s source status (and logged when the status changes).
    pub async fn poll_recorded(&mut self, store: &Store) -> Result<Polled, String> {
        let polled = self.poll().await;
        let now = Utc::now();
        let previous = store.source();
        let mut status = previous.clone().unwrap_or_else(|| SourceStatus {
            url: self.url.clone(),
            reachable: false,
            unreachable_since: None,
            reason: None,
            last_poll: None,
            last_download: None,
            etag: None,
        });
        status.last_poll = Some(now);
        match &polled {
            Ok(p) => {
                if previous.as_ref().is_some_and(|s| !s.reachable) {
                    tracing::info!(source = %self.url, "the source is reachable again");
                }
                status.reachable = true;
                status.unreachable_since = None;
                status.reason = None;
                if let Polled::Downloaded(bytes) = p {
                    status.last_download = Some(now);
                    status.etag = self.etag.clone();
                    tracing::info!(source = %self.url, bytes, etag = ?self.etag, "a changed object was downloaded");
                }
            }
            Err(why) => {
                if status.reachable || status.unreachable_since.is_none() {
                    status.unreachable_since = Some(now);
                    tracing::error!(source = %self.url, "the source is unreachable; the current dataset keeps serving: {why}");
                }
                status.reachable = false;
                status.reason = Some(why.clone());
            }
        }
        crate::process::metrics::record_source_poll(match &polled {
            Ok(Polled::Unchanged) => "unchanged",
            Ok(Polled::Downloaded(_)) => "downloaded",
            Err(_) => "error",
        });
        store.set_source(status);
        polled
    }

    /// Polls every `interval` (backing off while the source fails, see [`backoff`]); runs until
    /// the process stops.
    pub async fn run(mut self, interval: Duration, store: Arc<Store>) {
        let mut failures: u32 = 0;
        loop {
            tokio::time::sleep(backoff(interval, failures)).await;
            match self.poll_recorded(&store).await {
                Ok(_) => failures = 0,
                Err(_) => failures = failures.saturating_add(1),
            }
        }
    }
}

/// The folder this process mirrors a remote export into (in the temporary folder, one per
/// process); those of processes that are gone are removed.
pub fn mirror_folder() -> PathBuf {
    crate::process::scratch_dir("eco-insights-source")
}

/// `text` with its words that are URLs replaced by `<fonte>` (for what a public endpoint shows:
/// the store's errors name the endpoint, bucket and key).
pub fn mask_urls(text: &str) -> String {
    text.split(' ').map(|w| if w.contains("://") { "<fonte>" } else { w }).collect::<Vec<_>>().join(" ")
}

/// Few retries inside one poll (the poll loop itself backs off), so an outage shows quickly.
fn retry() -> RetryConfig {
    RetryConfig { max_retries: 2, retry_timeout: Duration::from_secs(10), ..Default::default() }
}

/// An error on one line, without the client's nested "caused by" noise beyond it.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The settings of the AWS shared files' profile (`AWS_PROFILE`, else `default`): credentials
/// from `AWS_SHARED_CREDENTIALS_FILE` (else `~/.aws/credentials`), region and endpoint from
/// `AWS_CONFIG_FILE` (else `~/.aws/config`), as object_store configuration keys.
fn aws_profile() -> Vec<(String, String)> {
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".to_string());
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let credentials = std::env::var_os("AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".aws/credentials"));
    let config = std::env::var_os("AWS_CONFIG_FILE").map(PathBuf::from).unwrap_or_else(|| home.join(".aws/config"));
    let mut out = Vec::new();
    let sections = [(credentials, profile.clone()), (config, format!("profile {profile}"))];
    for (file, section) in sections {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let alias = if profile == "default" { "default".to_string() } else { section.clone() };
        for (key, value) in ini_section(&text, &[section.as_str(), alias.as_str()]) {
            let key = match key.as_str() {
                "aws_access_key_id" | "aws_secret_access_key" | "aws_session_token" => key,
                "region" => "aws_region".to_string(),
                "endpoint_url" => "aws_endpoint_url".to_string(),
                _ => continue,
            };
            out.push((key, value));
        }
    }
    out
}

/// The `key = value` lines of the first section named one of `names` in an INI text.
fn ini_section(text: &str, names: &[&str]) -> Vec<(String, String)> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if inside {
                break;
            }
            inside = names.contains(&name.trim());
            continue;
        }
        if inside {
            if let Some((k, v)) = line.split_once('=') {
                out.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_sources_are_told_from_paths() {
        assert!(is_remote("s3://bucket/exports/catalog.parquet"));
        assert!(is_remote("https://example.org/catalog.parquet"));
        assert!(!is_remote("data/catalog.parquet"));
        assert!(!is_remote("/srv/s3:/x.parquet"));
    }

    #[test]
    fn a_source_must_name_one_object() {
        let dir = std::env::temp_dir().join(format!("eco-remote-test-{}", std::process::id()));
        for bad in ["s3://bucket", "s3://bucket/", "s3:///key", "s3://bucket/folder/", "https://example.org/"] {
            let e = Remote::open(bad, &dir, 1 << 20).unwrap_err().to_string();
            assert!(e.contains(bad), "{bad}: {e}");
        }
        let r = Remote::open("s3://bucket/exports/catalog-2026.parquet", &dir, 1 << 20).unwrap();
        assert_eq!(r.mirror(), dir.join("catalog-2026.parquet"));
        let r = Remote::open("https://example.org/x/y.parquet", &dir, 1 << 20).unwrap();
        assert_eq!(r.mirror(), dir.join("y.parquet"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn polls_back_off_up_to_sixteen_intervals_or_a_minute() {
        let ms = Duration::from_millis;
        assert_eq!(backoff(ms(200), 0), ms(200));
        assert_eq!(backoff(ms(200), 1), ms(400));
        assert_eq!(backoff(ms(200), 4), ms(3200));
        assert_eq!(backoff(ms(200), 30), ms(3200));
        assert_eq!(backoff(ms(5000), 3), ms(40_000));
        assert_eq!(backoff(ms(5000), 9), ms(60_000));
        assert_eq!(backoff(ms(120_000), 5), ms(120_000));
    }

    #[test]
    fn profile_sections_are_read() {
        let text = "[default]\nregion = eu-west-1\n\n[profile ana]\nregion=sa-east-1\nendpoint_url = http://127.0.0.1:9000\n[other]\nregion=x\n";
        assert_eq!(ini_section(text, &["default"]), vec![("region".to_string(), "eu-west-1".to_string())]);
        let ana = ini_section(text, &["profile ana"]);
        assert_eq!(ana.len(), 2);
        assert_eq!(ana[1], ("endpoint_url".to_string(), "http://127.0.0.1:9000".to_string()));
        assert!(ini_section(text, &["missing"]).is_empty());
    }
}
