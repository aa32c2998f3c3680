//! Sign-in on the Flight SQL door: the handshake's basic authentication (API key and secret,
//! checked against the credentials in force) answered with a bearer token bound to the key.
//! Tokens are random, kept only in this process, expire, and are honoured only while their key
//! is in force: a key revoked in the credentials file stops working at the next reload.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use tonic::Status;

use crate::process::keys::{Credentials, Refusal};

/// How long a token is valid after its handshake.
pub const TOKEN_TTL: Duration = Duration::from_secs(60 * 60);

/// The one answer to a bad key/secret pair, a missing, unknown or expired token.
pub fn unauthenticated() -> Status {
    Status::unauthenticated(
        "Credenciais ausentes ou inválidas: entre com a chave da API como usuário e o segredo como senha",
    )
}

/// A key over its quota.
pub fn rate_limited(refusal: Refusal) -> Status {
    match refusal {
        Refusal::RateLimited(s) => Status::resource_exhausted(format!(
            "Cota de requisições excedida para esta chave; tente novamente em {s} s"
        )),
        Refusal::Unauthorized => unauthenticated(),
    }
}

/// The key and secret of a `Basic` authorization header (`key:secret` in base64).
pub fn basic(header: &str) -> Option<(String, String)> {
    let encoded = header.strip_prefix("Basic ").or_else(|| header.strip_prefix("basic "))?;
    // Padded or not (Go's Flight client sends it without padding).
    let decoded = base64::engine::general_purpose::STANDARD_NO_PAD.decode(encoded.trim().trim_end_matches('=')).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (key, secret) = text.split_once(':')?;
    Some((key.to_string(), secret.to_string()))
}

/// The token of a `Bearer` authorization header.
pub fn bearer(header: &str) -> Option<&str> {
    header.strip_prefix("Bearer ").or_else(|| header.strip_prefix("bearer ")).map(str::trim)
}

/// The tokens handed out: token → (key, expiry).
pub struct Tokens {
    issued: Mutex<HashMap<String, (String, Instant)>>,
    ttl: Duration,
}

impl Tokens {
    pub fn new(ttl: Duration) -> Tokens {
        Tokens { issued: Mutex::new(HashMap::new()), ttl }
    }

    /// A new token for `key` (whose secret was just checked); expired tokens are forgotten.
    pub fn issue(&self, key: &str) -> String {
        let token = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let now = Instant::now();
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        issued.retain(|_, (_, expiry)| *expiry > now);
        issued.insert(token.clone(), (key.to_string(), now + self.ttl));
        token
    }

    /// The key `token` was issued to, while it has not expired and the key is in `credentials`.
    pub fn key(&self, token: &str, credentials: &Credentials) -> Option<String> {
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        let (key, expiry) = issued.get(token)?.clone();
        if expiry <= Instant::now() || !credentials.contains(&key) {
            issued.remove(token);
            return None;
        }
        Some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_and_bearer_headers() {
        // "demo-key:demo:secret" — the secret may hold a colon.
        let header = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("demo-key:demo:secret"));
        assert_eq!(basic(&header), Some(("demo-key".into(), "demo:secret".into())));
        let unpadded = format!("Basic {}", base64::engine::general_purpose::STANDARD_NO_PAD.encode("k:s1"));
        assert_eq!(basic(&unpadded), Some(("k".into(), "s1".into())));
        assert_eq!(basic("Basic !!!"), None);
        assert_eq!(basic("Bearer abc"), None);
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
    }

    #[test]
    fn tokens_expire_and_follow_the_credentials() {
        let hash = hex::encode(crate::process::credentials::hash_secret("s1"));
        let text = format!(r#"{{"credentials":[{{"key":"k1","name":"one","secret_sha256":"{hash}"}}]}}"#);
        let credentials = Credentials::parse(&text).unwrap();
        let empty = Credentials::parse(r#"{"credentials":[]}"#).unwrap();
        let tokens = Tokens::new(TOKEN_TTL);
        let token = tokens.issue("k1");
        assert_eq!(tokens.key(&token, &credentials).as_deref(), Some("k1"));
        assert_eq!(tokens.key("other", &credentials), None);
        // The key revoked: the token stops working.
        assert_eq!(tokens.key(&token, &empty), None);
        assert_eq!(tokens.key(&token, &credentials), None);
        let expired = Tokens::new(Duration::ZERO);
        let token = expired.issue("k1");
        assert_eq!(expired.key(&token, &credentials), None);
    }
}
