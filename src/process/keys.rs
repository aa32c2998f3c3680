//! API credentials at run time: a key and the SHA-256 of its secret per client (read from the
//! credentials file, see [`super::credentials`]), compared in constant time, and an optional
//! per-key quota enforced with a token bucket.
//!
//! Quota: a key with `quota_per_minute = N` owns a bucket of N tokens (the burst) refilled at N/60
//! tokens per second; every API request takes one. Buckets exist only for configured keys, so
//! memory is bounded by the file whatever keys clients send (unknown keys get 401 before any
//! state is touched). A reloaded file keeps the bucket of every key whose quota is unchanged.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use subtle::ConstantTimeEq;

use arc_swap::ArcSwap;

pub use super::credentials::hash_secret;
use super::credentials::CredentialsFile;
use super::scram::Verifier;

/// The demo key shipped with the repository so `make run` works out of the box.
pub const DEMO_KEY: &str = "demo-key";
const DEMO_SECRET: &str = "demo-secret";

/// The token bucket of one key.
type Limiter = RateLimiter<NotKeyed, InMemoryState, DefaultClock, StateInformationMiddleware>;

struct Bucket {
    per_minute: u32,
    limiter: Limiter,
}

impl Bucket {
    fn new(per_minute: NonZeroU32) -> Bucket {
        Bucket {
            per_minute: per_minute.get(),
            limiter: RateLimiter::direct(Quota::per_minute(per_minute)).with_middleware::<StateInformationMiddleware>(),
        }
    }

    /// Time for one token to come back.
    fn period(&self) -> Duration {
        Duration::from_secs(60) / self.per_minute
    }
}

struct Client {
    name: String,
    secret_sha256: [u8; 32],
    /// The SCRAM-SHA-256 verifier the PostgreSQL door checks (None in an older file).
    scram: Option<Verifier>,
    bucket: Option<Arc<Bucket>>,
}

/// The quota state of a key after a request, for the `RateLimit-*` headers (IETF
/// draft-ietf-httpapi-ratelimit-headers): the limit, the tokens left, and the seconds until the
/// bucket is full again (`RateLimit-Reset`, rounded up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateInfo {
    pub limit: u32,
    pub remaining: u32,
    pub reset_secs: u64,
}

/// A request let through: the client's name and its quota state (None without a quota).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub name: String,
    pub rate: Option<RateInfo>,
}

/// A request refused: the error to answer and, for a known key over its quota, the client's
/// name (for the request's log line) and its quota state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub error: Refusal,
    pub name: Option<String>,
    pub rate: Option<RateInfo>,
}

/// Why a request's credentials were refused (each front door answers it in its own terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The key is unknown, the secret wrong, or either is missing (one answer for all).
    Unauthorized,
    /// The key's quota is exhausted: seconds until one request is allowed again.
    RateLimited(u64),
}

impl From<Refusal> for Denial {
    fn from(error: Refusal) -> Denial {
        Denial { error, name: None, rate: None }
    }
}

/// The credentials in force, swapped whole when the credentials file changes (see
/// [`super::keys_reload`]); shared by every front door.
pub struct KeyStore(ArcSwap<Credentials>);

impl KeyStore {
    pub fn new(credentials: Credentials) -> KeyStore {
        KeyStore(ArcSwap::from_pointee(credentials))
    }

    /// The credentials in force now (a request keeps the set it started with).
    pub fn current(&self) -> Arc<Credentials> {
        self.0.load_full()
    }

    /// Runs `f` on the credentials in force without taking a reference of its own (see
    /// `Store::with_current`).
    pub fn with_current<R>(&self, f: impl FnOnce(&Credentials) -> R) -> R {
        f(&self.0.load())
    }

    /// Puts a new set of credentials in force for the next requests.
    pub fn replace(&self, credentials: Credentials) {
        self.0.store(Arc::new(credentials));
    }
}

/// The loaded credentials and their quota buckets.
pub struct Credentials {
    clients: HashMap<String, Client>,
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// The one place a 429 is produced: over quota, retry once a token is back (at least 1 s).
fn rate_limited(wait: Duration) -> Refusal {
    super::metrics::rate_limited();
    Refusal::RateLimited(ceil_secs(wait).max(1))
}

impl Credentials {
    pub fn load(path: &Path) -> Result<Credentials> {
        Ok(Credentials::from_file(&CredentialsFile::read(path)?, None))
    }

    pub fn parse(text: &str) -> Result<Credentials> {
        Ok(Credentials::from_file(&CredentialsFile::parse(text)?, None))
    }

    /// The credentials of a checked file; the buckets of `previous` are kept for the keys whose
    /// quota did not change (a new quota starts a full bucket).
    pub fn from_file(file: &CredentialsFile, previous: Option<&Credentials>) -> Credentials {
        // `check` succeeded when the file was read; a failure here would be a bug, so it
        // yields an empty set (every request 401) rather than a panic.
        let entries = file.check().unwrap_or_default();
        let mut clients = HashMap::with_capacity(entries.len());
        for e in entries {
            let bucket = e.quota_per_minute.and_then(NonZeroU32::new).map(|q| {
                previous
                    .and_then(|p| p.clients.get(&e.key))
                    .and_then(|c| c.bucket.as_ref())
                    .filter(|b| b.per_minute == q.get())
                    .map_or_else(|| Arc::new(Bucket::new(q)), Arc::clone)
            });
            clients.insert(e.key, Client { name: e.name, secret_sha256: e.secret_sha256, scram: e.scram, bucket });
        }
        Credentials { clients }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// Whether the public demo pair is accepted: its secret's hash, or its SCRAM verifier (the
    /// PostgreSQL door's check).
    pub fn demo_active(&self) -> bool {
        self.clients.get(DEMO_KEY).is_some_and(|c| {
            bool::from(c.secret_sha256.ct_eq(&hash_secret(DEMO_SECRET)))
                || c.scram.as_ref().is_some_and(|v| v.matches(DEMO_SECRET))
        })
    }

    /// Checks a key/secret pair, then takes a token from the key's bucket.
    pub fn authorize(&self, key: Option<&str>, secret: Option<&str>) -> Result<Grant, Denial> {
        let (Some(key), Some(secret)) = (key, secret) else { return Err(Refusal::Unauthorized.into()) };
        if !self.verify(key, secret) {
            return Err(Refusal::Unauthorized.into());
        }
        self.admit(key)
    }

    /// Whether `secret` is the secret of `key` (its SHA-256 compared in constant time).
    pub fn verify(&self, key: &str, secret: &str) -> bool {
        let given = hash_secret(secret);
        let client = self.clients.get(key);
        // Compare against a dummy hash for unknown keys so timing does not tell keys apart.
        let expected = client.map_or([0u8; 32], |c| c.secret_sha256);
        bool::from(given.ct_eq(&expected)) && client.is_some()
    }

    /// Whether `key` is in force.
    pub fn contains(&self, key: &str) -> bool {
        self.clients.contains_key(key)
    }

    /// The client name of `key` (for log lines).
    pub fn name(&self, key: &str) -> Option<String> {
        self.clients.get(key).map(|c| c.name.clone())
    }

    /// The SCRAM-SHA-256 verifier of `key`; None for an unknown key or an entry without one.
    pub fn scram_verifier(&self, key: &str) -> Option<Verifier> {
        self.clients.get(key).and_then(|c| c.scram.clone())
    }

    /// Lets a request of `key` through once its client has proved its secret (a checked pair, or
    /// a SCRAM proof): takes a token from the key's bucket. Unauthorized when the key is no
    /// longer in force.
    pub fn admit(&self, key: &str) -> Result<Grant, Denial> {
        let Some(client) = self.clients.get(key) else { return Err(Refusal::Unauthorized.into()) };
        let Some(bucket) = &client.bucket else { return Ok(Grant { name: client.name.clone(), rate: None }) };
        let limit = bucket.per_minute;
        match bucket.limiter.check() {
            Ok(state) => {
                let remaining = state.remaining_burst_capacity().min(limit);
                // Each missing token takes one period to come back (an upper bound: the next
                // one may be partly refilled already).
                let reset = bucket.period() * (limit - remaining);
                Ok(Grant {
                    name: client.name.clone(),
                    rate: Some(RateInfo { limit, remaining, reset_secs: ceil_secs(reset) }),
                })
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(bucket.limiter.clock().now());
                let full = wait + bucket.period() * (limit - 1);
                Err(Denial {
                    error: rate_limited(wait),
                    name: Some(client.name.clone()),
                    rate: Some(RateInfo { limit, remaining: 0, reset_secs: ceil_secs(full) }),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(quota: &str) -> String {
        format!(
            r#"{{"credentials":[{{"key":"k1","name":"one","secret_sha256":"{}","quota_per_minute":{quota}}},
                {{"key":"{DEMO_KEY}","name":"demo","secret_sha256":"{}"}}]}}"#,
            hex::encode(hash_secret("s1")),
            hex::encode(hash_secret(DEMO_SECRET))
        )
    }

    fn creds(quota: &str) -> Credentials {
        Credentials::parse(&text(quota)).unwrap()
    }

    fn unauthorized() -> Result<Grant, Denial> {
        Err(Refusal::Unauthorized.into())
    }

    #[test]
    fn good_pair_passes_and_bad_ones_do_not() {
        let c = creds("null");
        assert_eq!(c.authorize(Some("k1"), Some("s1")).unwrap(), Grant { name: "one".into(), rate: None });
        assert_eq!(c.authorize(Some("k1"), Some("s2")), unauthorized());
        assert_eq!(c.authorize(Some("k2"), Some("s1")), unauthorized());
        assert_eq!(c.authorize(None, Some("s1")), unauthorized());
        assert_eq!(c.authorize(Some("k1"), None), unauthorized());
        assert!(c.demo_active());
    }

    #[test]
    fn the_bucket_allows_the_burst_then_refuses() {
        let c = creds("2");
        let first = c.authorize(Some("k1"), Some("s1")).unwrap().rate.unwrap();
        assert_eq!((first.limit, first.remaining), (2, 1));
        assert!((1..=30).contains(&first.reset_secs), "{first:?}");
        let second = c.authorize(Some("k1"), Some("s1")).unwrap().rate.unwrap();
        assert_eq!(second.remaining, 0);
        assert!((31..=60).contains(&second.reset_secs), "{second:?}");
        let denied = c.authorize(Some("k1"), Some("s1")).unwrap_err();
        // One token is back 30 s after the first request.
        assert!(matches!(denied.error, Refusal::RateLimited(s) if (1..=30).contains(&s)), "{denied:?}");
        assert_eq!(denied.rate.unwrap().remaining, 0);
        // Other keys are not affected; a wrong secret is 401 even over quota.
        assert!(c.authorize(Some(DEMO_KEY), Some(DEMO_SECRET)).is_ok());
        assert_eq!(c.authorize(Some("k1"), Some("nope")), unauthorized());
    }

    #[test]
    fn a_reload_keeps_the_bucket_of_an_unchanged_quota() {
        let c = creds("1");
        assert!(c.authorize(Some("k1"), Some("s1")).is_ok());
        let same = Credentials::from_file(&CredentialsFile::parse(&text("1")).unwrap(), Some(&c));
        assert!(same.authorize(Some("k1"), Some("s1")).is_err(), "the used bucket was not kept");
        let changed = Credentials::from_file(&CredentialsFile::parse(&text("5")).unwrap(), Some(&c));
        assert!(changed.authorize(Some("k1"), Some("s1")).is_ok(), "a new quota starts a full bucket");
    }

    #[test]
    fn scram_verifiers_and_admission() {
        let v = Verifier::new("s1").unwrap();
        let text = format!(
            r#"{{"credentials":[{{"key":"k1","name":"one","secret_sha256":"{}","scram_verifier":"{v}","quota_per_minute":1}},
                {{"key":"old","name":"old","secret_sha256":"{}"}}]}}"#,
            hex::encode(hash_secret("s1")),
            hex::encode(hash_secret("s2"))
        );
        let c = Credentials::parse(&text).unwrap();
        assert_eq!(c.scram_verifier("k1"), Some(v));
        assert_eq!(c.scram_verifier("old"), None);
        assert_eq!(c.scram_verifier("nope"), None);
        assert!(c.contains("old") && !c.contains("nope"));
        assert_eq!((c.name("old").as_deref(), c.name("nope")), (Some("old"), None));
        assert!(c.verify("old", "s2") && !c.verify("old", "s1") && !c.verify("nope", "s2"));
        // Admission takes the quota's token; an unknown key is not admitted.
        assert!(c.admit("k1").is_ok());
        assert!(matches!(c.admit("k1").unwrap_err().error, Refusal::RateLimited(_)));
        assert_eq!(c.admit("nope"), unauthorized());
        assert!(!c.demo_active());
        // The demo pair is active through its verifier alone too.
        let demo = format!(
            r#"{{"credentials":[{{"key":"{DEMO_KEY}","name":"d","secret_sha256":"{}","scram_verifier":"{}"}}]}}"#,
            hex::encode(hash_secret("replaced")),
            Verifier::new(DEMO_SECRET).unwrap()
        );
        assert!(Credentials::parse(&demo).unwrap().demo_active());
    }

    #[test]
    fn malformed_files_are_refused() {
        assert!(Credentials::parse(r#"{"credentials":[{"key":"a","name":"n","secret_sha256":"zz"}]}"#).is_err());
        assert!(Credentials::parse(r#"{"credentials":[{"key":"a","name":"n","secret_sha256":"00","x":1}]}"#).is_err());
        assert!(Credentials::parse(r#"{"credentials":[]}"#).unwrap().is_empty());
    }
}
