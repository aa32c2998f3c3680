//! API credentials: a key and the SHA-256 of its secret per client, read from a JSON file,
//! compared in constant time, with an optional per-minute quota.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::error::ApiError;

/// The demo key shipped with the repository so `make run` works out of the box.
pub const DEMO_KEY: &str = "demo-key";
const DEMO_SECRET: &str = "demo-secret";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialsFile {
    credentials: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    key: String,
    name: String,
    /// Lower-case hex SHA-256 of the secret.
    secret_sha256: String,
    /// Requests per minute; absent or null for no quota.
    #[serde(default)]
    quota_per_minute: Option<u32>,
}

struct Client {
    name: String,
    secret_sha256: [u8; 32],
    quota_per_minute: Option<u32>,
}

/// The loaded credentials and the quota counters.
pub struct Credentials {
    clients: HashMap<String, Client>,
    windows: Mutex<HashMap<String, (Instant, u32)>>,
}

/// SHA-256 of a secret, as stored in the credentials file.
pub fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

impl Credentials {
    pub fn load(path: &Path) -> Result<Credentials> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the credentials file {}", path.display()))?;
        Credentials::parse(&text).with_context(|| format!("invalid credentials file {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Credentials> {
        let file: CredentialsFile = serde_json::from_str(text)?;
        let mut clients = HashMap::new();
        for e in file.credentials {
            let mut hash = [0u8; 32];
            hex::decode_to_slice(e.secret_sha256.trim(), &mut hash)
                .with_context(|| format!("key '{}': secret_sha256 must be 64 hex digits", e.key))?;
            if e.key.is_empty() {
                bail!("a credential has an empty key");
            }
            if clients
                .insert(
                    e.key.clone(),
                    Client { name: e.name, secret_sha256: hash, quota_per_minute: e.quota_per_minute },
                )
                .is_some()
            {
                bail!("key '{}' is listed twice", e.key);
            }
        }
        if clients.is_empty() {
            bail!("no credentials are defined");
        }
        Ok(Credentials { clients, windows: Mutex::new(HashMap::new()) })
    }

    /// Whether the public demo pair is accepted (the service warns at start-up when it is).
    pub fn demo_active(&self) -> bool {
        self.clients.get(DEMO_KEY).is_some_and(|c| bool::from(c.secret_sha256.ct_eq(&hash_secret(DEMO_SECRET))))
    }

    /// Checks a key/secret pair and its quota; returns the client's name.
    pub fn authorize(&self, key: Option<&str>, secret: Option<&str>) -> Result<String, ApiError> {
        let (Some(key), Some(secret)) = (key, secret) else { return Err(ApiError::Unauthorized) };
        let given = hash_secret(secret);
        let client = self.clients.get(key);
        // Compare against a dummy hash for unknown keys so timing does not tell keys apart.
        let expected = client.map_or([0u8; 32], |c| c.secret_sha256);
        let ok = bool::from(given.ct_eq(&expected)) && client.is_some();
        let client = match (ok, client) {
            (true, Some(c)) => c,
            _ => return Err(ApiError::Unauthorized),
        };
        if let Some(quota) = client.quota_per_minute {
            self.take(key, quota)?;
        }
        Ok(client.name.clone())
    }

    /// Fixed one-minute window per key.
    fn take(&self, key: &str, quota: u32) -> Result<(), ApiError> {
        let window = Duration::from_secs(60);
        let now = Instant::now();
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let entry = windows.entry(key.to_string()).or_insert((now, 0));
        if now.duration_since(entry.0) >= window {
            *entry = (now, 0);
        }
        if entry.1 >= quota {
            let retry = window.saturating_sub(now.duration_since(entry.0)).as_secs().max(1);
            return Err(ApiError::RateLimited(retry));
        }
        entry.1 += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(quota: &str) -> Credentials {
        let text = format!(
            r#"{{"credentials":[{{"key":"k1","name":"one","secret_sha256":"{}","quota_per_minute":{quota}}},
                {{"key":"{DEMO_KEY}","name":"demo","secret_sha256":"{}"}}]}}"#,
            hex::encode(hash_secret("s1")),
            hex::encode(hash_secret(DEMO_SECRET))
        );
        Credentials::parse(&text).unwrap()
    }

    #[test]
    fn good_pair_passes_and_bad_ones_do_not() {
        let c = creds("null");
        assert_eq!(c.authorize(Some("k1"), Some("s1")).unwrap(), "one");
        assert_eq!(c.authorize(Some("k1"), Some("s2")), Err(ApiError::Unauthorized));
        assert_eq!(c.authorize(Some("k2"), Some("s1")), Err(ApiError::Unauthorized));
        assert_eq!(c.authorize(None, Some("s1")), Err(ApiError::Unauthorized));
        assert_eq!(c.authorize(Some("k1"), None), Err(ApiError::Unauthorized));
        assert!(c.demo_active());
    }

    #[test]
    fn quota_is_enforced() {
        let c = creds("2");
        assert!(c.authorize(Some("k1"), Some("s1")).is_ok());
        assert!(c.authorize(Some("k1"), Some("s1")).is_ok());
        assert!(matches!(c.authorize(Some("k1"), Some("s1")), Err(ApiError::RateLimited(s)) if (1..=60).contains(&s)));
        assert!(c.authorize(Some(DEMO_KEY), Some(DEMO_SECRET)).is_ok());
    }

    #[test]
    fn malformed_files_are_refused() {
        assert!(Credentials::parse(r#"{"credentials":[]}"#).is_err());
        assert!(Credentials::parse(r#"{"credentials":[{"key":"a","name":"n","secret_sha256":"zz"}]}"#).is_err());
        assert!(Credentials::parse(r#"{"credentials":[{"key":"a","name":"n","secret_sha256":"00","x":1}]}"#).is_err());
    }
}
