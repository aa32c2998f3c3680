//! TLS of the PostgreSQL door (`--pg-tls-cert`, `--pg-tls-key`): rustls on ring, TLS 1.2 and
//! 1.3, answering a client's SSLRequest (and PostgreSQL 17's direct TLS, ALPN `postgresql`).

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use pgwire::tokio::tokio_rustls::rustls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The door's TLS: the acceptor of its connections and the certificate chain it presents (PEM,
/// for SCRAM-SHA-256-PLUS's channel binding, `tls-server-end-point`).
pub struct Tls {
    pub acceptor: pgwire::tokio::TlsAcceptor,
    pub certificate_pem: Vec<u8>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

impl Tls {
    /// Reads a PEM certificate chain and its private key; an error that names the file and what
    /// is wrong when either cannot be read, holds no certificate or key, or they do not match.
    pub fn load(cert: &Path, key: &Path) -> Result<Tls> {
        let certificate_pem = std::fs::read(cert)
            .with_context(|| format!("cannot read the TLS certificate {} (--pg-tls-cert)", cert.display()))?;
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(&certificate_pem).collect::<Result<_, _>>().map_err(|e| {
                anyhow::anyhow!("invalid PEM in the TLS certificate {} (--pg-tls-cert): {e}", cert.display())
            })?;
        if chain.is_empty() {
            bail!("no certificate (BEGIN CERTIFICATE) in {} (--pg-tls-cert)", cert.display());
        }
        let key_pem = std::fs::read(key)
            .with_context(|| format!("cannot read the TLS private key {} (--pg-tls-key)", key.display()))?;
        let private_key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
            anyhow::anyhow!(
                "no usable private key (PKCS#8, PKCS#1 or SEC1 PEM) in {} (--pg-tls-key): {e}",
                key.display()
            )
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS 1.2/1.3 with ring")?
            .with_no_client_auth()
            .with_single_cert(chain, private_key)
            .with_context(|| {
                format!(
                    "the TLS certificate {} and private key {} cannot be used together",
                    cert.display(),
                    key.display()
                )
            })?;
        // PostgreSQL 17's direct TLS (sslnegotiation=direct) must name the protocol with ALPN.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Tls { acceptor: pgwire::tokio::TlsAcceptor::from(Arc::new(config)), certificate_pem })
    }
}
