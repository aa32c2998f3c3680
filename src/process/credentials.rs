//! The credentials file: its JSON model, its checks, atomic writes, and the `credentials`
//! command (add, list, revoke). The service reads the same model (`http::auth`); nothing here
//! knows about HTTP.
//!
//! Format: `{"credentials": [{"key", "name", "secret_sha256", "scram_verifier",
//! "quota_per_minute"}]}`. Only the SHA-256 of a secret is stored, and for the PostgreSQL door its
//! SCRAM-SHA-256 verifier (PostgreSQL's format, see [`super::scram`]); a secret is shown once,
//! when `add` creates it.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::scram::Verifier;

/// Prefix of the keys `add` creates.
pub const KEY_PREFIX: &str = "eco_";

/// The whole file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialsFile {
    pub credentials: Vec<Entry>,
}

/// One client.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub key: String,
    pub name: String,
    /// Lower-case hex SHA-256 of the secret.
    pub secret_sha256: String,
    /// The secret's SCRAM-SHA-256 verifier, `SCRAM-SHA-256$4096:<salt>$<StoredKey>:<ServerKey>`,
    /// which the PostgreSQL door checks logins against; absent in files written before it (such
    /// a key logs in over the PostgreSQL protocol only with TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scram_verifier: Option<String>,
    /// Requests per minute (the size of the key's token bucket); absent or null for no quota.
    #[serde(default)]
    pub quota_per_minute: Option<u32>,
}

/// A checked entry: the hash decoded.
#[derive(Debug, Clone)]
pub struct Checked {
    pub key: String,
    pub name: String,
    pub secret_sha256: [u8; 32],
    pub scram: Option<Verifier>,
    pub quota_per_minute: Option<u32>,
}

/// SHA-256 of a secret, as stored in the credentials file.
pub fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

impl CredentialsFile {
    /// Parses and checks the text of a file: valid JSON of this shape, non-empty unique keys,
    /// 64-hex-digit hashes, well-formed SCRAM verifiers, quotas of at least 1. An empty list is valid (every key revoked).
    pub fn parse(text: &str) -> Result<CredentialsFile> {
        let file: CredentialsFile = serde_json::from_str(text)?;
        file.check()?;
        Ok(file)
    }

    /// Reads and checks a file.
    pub fn read(path: &Path) -> Result<CredentialsFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the credentials file {}", path.display()))?;
        CredentialsFile::parse(&text).with_context(|| format!("invalid credentials file {}", path.display()))
    }

    /// Reads a file, or an empty set when it does not exist (what `add` starts from).
    pub fn read_or_empty(path: &Path) -> Result<CredentialsFile> {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(CredentialsFile::default()),
            _ => CredentialsFile::read(path),
        }
    }

    /// The entries with their hashes decoded; fails on the first problem.
    pub fn check(&self) -> Result<Vec<Checked>> {
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(self.credentials.len());
        for e in &self.credentials {
            if e.key.is_empty() {
                bail!("a credential has an empty key");
            }
            let mut hash = [0u8; 32];
            hex::decode_to_slice(e.secret_sha256.trim(), &mut hash)
                .with_context(|| format!("key '{}': secret_sha256 must be 64 hex digits", e.key))?;
            let scram = match &e.scram_verifier {
                Some(text) => {
                    Some(Verifier::parse(text).with_context(|| format!("key '{}': invalid scram_verifier", e.key))?)
                }
                None => None,
            };
            if e.quota_per_minute == Some(0) {
                bail!("key '{}': quota_per_minute must be at least 1 (null for no quota)", e.key);
            }
            if !seen.insert(e.key.as_str()) {
                bail!("key '{}' is listed twice", e.key);
            }
            out.push(Checked {
                key: e.key.clone(),
                name: e.name.clone(),
                secret_sha256: hash,
                scram,
                quota_per_minute: e.quota_per_minute,
            });
        }
        Ok(out)
    }

    /// Writes the file atomically: a temporary file in the same folder (mode 0600), flushed to
    /// disk, renamed over the target, and the folder synced, so a reader (the running service)
    /// sees either the old or the new file, never a part of one.
    pub fn write_atomic(&self, path: &Path) -> Result<()> {
        let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from("."),
        };
        let file_name = path.file_name().context("the credentials path names no file")?.to_string_lossy();
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
        let result = (|| -> Result<()> {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut f = options.open(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            drop(f);
            std::fs::rename(&tmp, path)
                .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))?;
            // The rename itself reaches the disk only with the folder.
            if let Ok(d) = std::fs::File::open(&dir) {
                let _ = d.sync_all();
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}

/// `n` random bytes from the operating system's generator, as lower-case hex.
fn random_hex(n: usize) -> Result<String> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("the OS random generator failed: {e}"))?;
    Ok(hex::encode(bytes))
}

/// A new client: its key and its secret (shown once; the file keeps only its hash and SCRAM
/// verifier).
#[derive(Debug, Serialize)]
pub struct Created {
    pub key: String,
    pub secret: String,
}

/// Adds a client with a fresh key (`eco_` + 16 random bytes in hex) and a 256-bit secret (64 hex
/// digits), with the secret's SHA-256 and SCRAM-SHA-256 verifier, creating the file when it does
/// not exist.
pub fn add(path: &Path, name: &str, quota_per_minute: Option<u32>) -> Result<Created> {
    if name.trim().is_empty() {
        bail!("--name must not be empty");
    }
    if quota_per_minute == Some(0) {
        bail!("--quota-per-minute must be at least 1");
    }
    let mut file = CredentialsFile::read_or_empty(path)?;
    let key = format!("{KEY_PREFIX}{}", random_hex(16)?);
    if file.credentials.iter().any(|e| e.key == key) {
        bail!("the generated key already exists; run the command again");
    }
    let secret = random_hex(32)?;
    file.credentials.push(Entry {
        key: key.clone(),
        name: name.to_string(),
        secret_sha256: hex::encode(hash_secret(&secret)),
        scram_verifier: Some(Verifier::new(&secret)?.to_string()),
        quota_per_minute,
    });
    file.write_atomic(path)?;
    Ok(Created { key, secret })
}

/// What `list` shows of a client: never the secret's hash or verifier.
#[derive(Debug, Serialize)]
pub struct Listed {
    pub key: String,
    pub name: String,
    pub quota_per_minute: Option<u32>,
    /// Whether the entry has a SCRAM verifier (without one, the key logs in over the PostgreSQL
    /// protocol only with TLS).
    pub scram: bool,
}

pub fn list(path: &Path) -> Result<Vec<Listed>> {
    let file = CredentialsFile::read(path)?;
    Ok(file
        .credentials
        .into_iter()
        .map(|e| Listed {
            key: e.key,
            name: e.name,
            quota_per_minute: e.quota_per_minute,
            scram: e.scram_verifier.is_some(),
        })
        .collect())
}

/// Gives an existing client a new SCRAM-SHA-256 verifier of its secret (fresh salt), so an entry
/// written before verifiers existed can log in over the PostgreSQL protocol without TLS. The
/// secret must be the key's (checked against the stored SHA-256); an error otherwise, or when the
/// key is not in the file.
pub fn set_scram(path: &Path, key: &str, secret: &str) -> Result<()> {
    let mut file = CredentialsFile::read(path)?;
    let entry = file
        .credentials
        .iter_mut()
        .find(|e| e.key == key)
        .with_context(|| format!("key '{key}' is not in {}", path.display()))?;
    let mut stored = [0u8; 32];
    hex::decode_to_slice(entry.secret_sha256.trim(), &mut stored)
        .with_context(|| format!("key '{key}': secret_sha256 must be 64 hex digits"))?;
    if !bool::from(hash_secret(secret).ct_eq(&stored)) {
        bail!("the secret given is not the secret of key '{key}'");
    }
    entry.scram_verifier = Some(Verifier::new(secret)?.to_string());
    file.write_atomic(path)
}

/// Removes a client; an error when the key is not in the file.
pub fn revoke(path: &Path, key: &str) -> Result<()> {
    let mut file = CredentialsFile::read(path)?;
    let before = file.credentials.len();
    file.credentials.retain(|e| e.key != key);
    if file.credentials.len() == before {
        bail!("key '{key}' is not in {}", path.display());
    }
    file.write_atomic(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("eco-credentials-unit-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn add_list_revoke_round_trip() {
        let d = dir("round-trip");
        let path = d.join("credentials.json");
        let a = add(&path, "one", Some(5)).unwrap();
        let b = add(&path, "two", None).unwrap();
        assert!(a.key.starts_with(KEY_PREFIX) && a.key.len() == KEY_PREFIX.len() + 32);
        assert_eq!(a.secret.len(), 64);
        assert_ne!(a.secret, b.secret);
        let file = CredentialsFile::read(&path).unwrap();
        assert_eq!(file.credentials[0].secret_sha256, hex::encode(hash_secret(&a.secret)));
        // The SCRAM verifier is the secret's, salted apart from the other entry's.
        let checked = file.check().unwrap();
        let (va, vb) = (checked[0].scram.clone().unwrap(), checked[1].scram.clone().unwrap());
        assert!(va.matches(&a.secret) && !va.matches(&b.secret) && vb.matches(&b.secret));
        assert_ne!(va.salt, vb.salt);
        assert!(!std::fs::read_to_string(&path).unwrap().contains(&a.secret));
        let listed = list(&path).unwrap();
        assert_eq!(listed.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["one", "two"]);
        assert_eq!(listed[0].quota_per_minute, Some(5));
        assert!(listed[0].scram);
        revoke(&path, &a.key).unwrap();
        assert!(revoke(&path, &a.key).is_err());
        assert_eq!(list(&path).unwrap().len(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let leftovers: Vec<_> = std::fs::read_dir(&d).unwrap().filter_map(Result::ok).collect();
        assert_eq!(leftovers.len(), 1, "temporary files left behind");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn malformed_files_are_refused() {
        let h = hex::encode(hash_secret("s"));
        assert!(CredentialsFile::parse(r#"{"credentials":[]}"#).is_ok());
        assert!(CredentialsFile::parse(r#"{"credentials":[{"key":"a","name":"n","secret_sha256":"zz"}]}"#).is_err());
        assert!(CredentialsFile::parse(&format!(
            r#"{{"credentials":[{{"key":"a","name":"n","secret_sha256":"{h}","x":1}}]}}"#
        ))
        .is_err());
        assert!(CredentialsFile::parse(&format!(
            r#"{{"credentials":[{{"key":"a","name":"n","secret_sha256":"{h}","quota_per_minute":0}}]}}"#
        ))
        .is_err());
        assert!(CredentialsFile::parse(&format!(
            r#"{{"credentials":[{{"key":"a","name":"n","secret_sha256":"{h}"}},{{"key":"a","name":"m","secret_sha256":"{h}"}}]}}"#
        ))
        .is_err());
        assert!(CredentialsFile::parse("{").is_err());
        let v = Verifier::new("s").unwrap();
        assert!(CredentialsFile::parse(&format!(
            r#"{{"credentials":[{{"key":"a","name":"n","secret_sha256":"{h}","scram_verifier":"{v}"}}]}}"#
        ))
        .is_ok());
        assert!(CredentialsFile::parse(&format!(
            r#"{{"credentials":[{{"key":"a","name":"n","secret_sha256":"{h}","scram_verifier":"md5{h}"}}]}}"#
        ))
        .is_err());
    }

    #[test]
    fn an_older_entry_gets_a_verifier_of_its_own_secret_only() {
        let d = dir("set-scram");
        let path = d.join("credentials.json");
        let h = hex::encode(hash_secret("old-secret"));
        std::fs::write(&path, format!(r#"{{"credentials":[{{"key":"old","name":"n","secret_sha256":"{h}"}}]}}"#))
            .unwrap();
        assert!(CredentialsFile::read(&path).unwrap().check().unwrap()[0].scram.is_none());
        assert!(!list(&path).unwrap()[0].scram);
        let wrong = set_scram(&path, "old", "not-the-secret").unwrap_err();
        assert!(wrong.to_string().contains("not the secret"), "{wrong}");
        assert!(set_scram(&path, "other", "old-secret").unwrap_err().to_string().contains("is not in"));
        assert!(CredentialsFile::read(&path).unwrap().credentials[0].scram_verifier.is_none());
        set_scram(&path, "old", "old-secret").unwrap();
        let file = CredentialsFile::read(&path).unwrap();
        assert_eq!(file.credentials[0].secret_sha256, h);
        assert!(file.check().unwrap()[0].scram.as_ref().unwrap().matches("old-secret"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
