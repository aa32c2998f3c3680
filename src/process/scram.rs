//! SCRAM-SHA-256 verifiers (RFC 5802, RFC 7677) of the credentials file, in PostgreSQL's
//! format: `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (salt and keys in
//! base64), what `pg_authid.rolpassword` holds for a SCRAM password.
//!
//! A verifier lets the PostgreSQL door check a client's proof without ever seeing the secret:
//! `SaltedPassword = PBKDF2-HMAC-SHA-256(SASLprep(secret), salt, iterations)`,
//! `StoredKey = SHA-256(HMAC(SaltedPassword, "Client Key"))` and
//! `ServerKey = HMAC(SaltedPassword, "Server Key")`. Neither key gives the secret back short of
//! guessing it through the salted, iterated hash (exactly what PostgreSQL stores).

use std::borrow::Cow;
use std::fmt;
use std::num::NonZeroU32;

use anyhow::{bail, Context, Result};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::{digest, hmac, pbkdf2};
use subtle::ConstantTimeEq;

/// Iterations of a new verifier: RFC 7677's minimum and PostgreSQL's default.
pub const ITERATIONS: u32 = 4096;
/// Most iterations a verifier may ask for: each login costs the client that many HMACs (and
/// checking the demo pair at load costs the process as much).
pub const MAX_ITERATIONS: u32 = 10_000_000;
/// Bytes of a new verifier's random salt (PostgreSQL's length).
pub const SALT_LEN: usize = 16;
const PREFIX: &str = "SCRAM-SHA-256$";

/// One key's SCRAM-SHA-256 verifier.
#[derive(Clone, PartialEq, Eq)]
pub struct Verifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: [u8; 32],
    pub server_key: [u8; 32],
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier").field("iterations", &self.iterations).finish_non_exhaustive()
    }
}

fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), message);
    let mut out = [0u8; 32];
    out.copy_from_slice(tag.as_ref());
    out
}

fn sha256(data: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest::digest(&digest::SHA256, data).as_ref());
    out
}

impl Verifier {
    /// The verifier of `secret` with a fresh random salt and [`ITERATIONS`].
    pub fn new(secret: &str) -> Result<Verifier> {
        let mut salt = vec![0u8; SALT_LEN];
        getrandom::fill(&mut salt).map_err(|e| anyhow::anyhow!("the OS random generator failed: {e}"))?;
        Ok(Verifier::derive(secret, &salt, ITERATIONS))
    }

    /// The verifier of `secret` with this salt and iteration count. The secret is normalized with
    /// SASLprep first, or used as it is when SASLprep refuses it (as PostgreSQL and libpq do).
    pub fn derive(secret: &str, salt: &[u8], iterations: u32) -> Verifier {
        let normalized = stringprep::saslprep(secret).unwrap_or(Cow::Borrowed(secret));
        let mut salted = [0u8; 32];
        pbkdf2::derive(
            pbkdf2::PBKDF2_HMAC_SHA256,
            NonZeroU32::new(iterations).unwrap_or(NonZeroU32::MIN),
            salt,
            normalized.as_bytes(),
            &mut salted,
        );
        Verifier::from_salted_password(&salted, salt, iterations)
    }

    fn from_salted_password(salted: &[u8; 32], salt: &[u8], iterations: u32) -> Verifier {
        Verifier {
            iterations,
            salt: salt.to_vec(),
            stored_key: sha256(&hmac(salted, b"Client Key")),
            server_key: hmac(salted, b"Server Key"),
        }
    }

    /// A verifier no secret matches, the same for the same `name` and `seed`: what a login with
    /// an unknown key is checked against, so that its exchange looks like a known key's (the
    /// same salt every time, like PostgreSQL's mock authentication).
    pub fn mock(seed: &[u8; 32], name: &str) -> Verifier {
        let derived = hmac(seed, name.as_bytes());
        Verifier {
            iterations: ITERATIONS,
            salt: hmac(&derived, b"salt")[..SALT_LEN].to_vec(),
            stored_key: hmac(&derived, b"stored key"),
            server_key: hmac(&derived, b"server key"),
        }
    }

    /// Whether `secret` is the one this verifier was made from (PBKDF2 with its salt and
    /// iterations: milliseconds, not for every request).
    pub fn matches(&self, secret: &str) -> bool {
        let other = Verifier::derive(secret, &self.salt, self.iterations);
        bool::from(other.stored_key.ct_eq(&self.stored_key) & other.server_key.ct_eq(&self.server_key))
    }

    /// Parses PostgreSQL's format. The iteration count must be at least [`ITERATIONS`] (RFC
    /// 7677's minimum) and at most [`MAX_ITERATIONS`], the salt at least 8 bytes, and both keys
    /// 32 bytes.
    pub fn parse(text: &str) -> Result<Verifier> {
        let usage = "expected SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (base64)";
        let rest = text.trim().strip_prefix(PREFIX).with_context(|| usage.to_string())?;
        let (params, keys) = rest.split_once('$').with_context(|| usage.to_string())?;
        let (iterations, salt) = params.split_once(':').with_context(|| usage.to_string())?;
        let (stored, server) = keys.split_once(':').with_context(|| usage.to_string())?;
        let iterations: u32 = iterations.parse().with_context(|| format!("bad iteration count; {usage}"))?;
        if !(ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            bail!("{iterations} iterations: from {ITERATIONS} to {MAX_ITERATIONS} are accepted");
        }
        let salt = STANDARD.decode(salt).with_context(|| format!("bad salt; {usage}"))?;
        if salt.len() < 8 {
            bail!("a salt of {} bytes: at least 8 are required", salt.len());
        }
        let key = |text: &str, what: &str| -> Result<[u8; 32]> {
            let bytes = STANDARD.decode(text).with_context(|| format!("bad {what}; {usage}"))?;
            bytes.try_into().map_err(|b: Vec<u8>| anyhow::anyhow!("{what} is {} bytes, not 32", b.len()))
        };
        Ok(Verifier { iterations, salt, stored_key: key(stored, "StoredKey")?, server_key: key(server, "ServerKey")? })
    }
}

impl fmt::Display for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PREFIX}{}:{}${}:{}",
            self.iterations,
            STANDARD.encode(&self.salt),
            STANDARD.encode(self.stored_key),
            STANDARD.encode(self.server_key)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(text: &str) -> Vec<u8> {
        STANDARD.decode(text).unwrap()
    }

    /// RFC 7677, section 3: user "user", password "pencil". The proof the RFC's client sends
    /// and the signature its server answers must follow from the verifier alone.
    #[test]
    fn rfc_7677_test_vector() {
        let v = Verifier::derive("pencil", &b64("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096);
        let auth_message = "n=user,r=rOprNGfwEbeRWgbNEkqO,\
                            r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,\
                            c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        // The server's check: ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage), and
        // SHA-256(ClientKey) must be StoredKey.
        let proof = b64("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
        let signature = hmac(&v.stored_key, auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(signature).map(|(p, s)| p ^ s).collect();
        assert_eq!(sha256(&client_key), v.stored_key);
        // The server's signature: HMAC(ServerKey, AuthMessage).
        assert_eq!(
            hmac(&v.server_key, auth_message.as_bytes()).to_vec(),
            b64("6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        );
        // A wrong password gives another StoredKey.
        assert_ne!(Verifier::derive("pencil!", &v.salt, 4096).stored_key, v.stored_key);
    }

    #[test]
    fn postgresql_format_round_trip() {
        let v = Verifier::derive("pencil", &b64("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096);
        let text = v.to_string();
        assert!(text.starts_with("SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$"), "{text}");
        assert_eq!(Verifier::parse(&text).unwrap(), v);
        assert!(v.matches("pencil") && !v.matches("pencl"));
        // Made by PostgreSQL 15 (`SET password_encryption = 'scram-sha-256'; CREATE ROLE u LOGIN
        // PASSWORD 'demo-secret'`, then `SELECT rolpassword FROM pg_authid WHERE rolname = 'u'`).
        let pg = "SCRAM-SHA-256$4096:NWeYBbWfyFu/VFr/BH8i5g==$\
                  is8Wg6F0FFu2ll2TmD2kl6aJwwF6w45p7exyrvV9B8o=:o1ZjP8s9iTui+BnH65CLOezbFgNSLzMjoUm27Bz+tis=";
        let parsed = Verifier::parse(pg).unwrap();
        assert_eq!(parsed.to_string(), pg);
        assert_eq!(parsed, Verifier::derive("demo-secret", &parsed.salt, 4096));
        assert!(parsed.matches("demo-secret") && !parsed.matches("demo-secreT"));
    }

    #[test]
    fn new_verifiers_are_salted_and_malformed_ones_refused() {
        let (a, b) = (Verifier::new("s").unwrap(), Verifier::new("s").unwrap());
        assert_ne!(a.salt, b.salt);
        assert_ne!(a.stored_key, b.stored_key);
        assert_eq!((a.iterations, a.salt.len()), (ITERATIONS, SALT_LEN));
        assert!(a.matches("s") && b.matches("s"));
        let good = a.to_string();
        for bad in [
            "",
            "md5abc",
            &good.replacen("SCRAM-SHA-256", "SCRAM-SHA-1", 1),
            &good.replacen("4096:", "1024:", 1),
            &good.replacen("4096:", "10000001:", 1),
            &good.replacen("4096:", "x:", 1),
            &good[..good.len() - 4],
            &good.replacen('$', "", 2),
        ] {
            assert!(Verifier::parse(bad).is_err(), "{bad} was accepted");
        }
        // The mock of a name is stable and matches nothing.
        let seed = [7u8; 32];
        assert_eq!(Verifier::mock(&seed, "k"), Verifier::mock(&seed, "k"));
        assert_ne!(Verifier::mock(&seed, "k").salt, Verifier::mock(&seed, "j").salt);
        assert_eq!(Verifier::mock(&seed, "k").salt.len(), SALT_LEN);
    }
}
