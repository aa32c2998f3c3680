//! Logins at the PostgreSQL door: user = API key, password = its secret.
//!
//! A key with a SCRAM-SHA-256 verifier in the credentials file logs in with SCRAM-SHA-256
//! (RFC 7677, as PostgreSQL does: the secret never crosses the connection, and the client checks
//! the server's signature), and over TLS also with SCRAM-SHA-256-PLUS (channel binding
//! `tls-server-end-point`) when the certificate's signature algorithm allows it. An unknown key
//! goes through the same exchange against a mock verifier (a salt that is stable per key name),
//! so the answer does not tell unknown keys from wrong secrets. A key without a verifier (a file
//! written before verifiers existed) may send its secret in clear text only inside TLS; over plain
//! TCP it meets the mock exchange and is refused like a wrong secret (the log says why).
//!
//! Every refusal is the same FATAL `28P01`; once the client is proven, the key's quota is taken
//! (`53400` past it) and the connection counts as authenticated for the start-up deadline.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::cleartext::CleartextPasswordAuth;
use pgwire::api::auth::mechanism::{AuthMechanism, AuthMechanismFactory};
use pgwire::api::auth::sasl::scram::{ScramAuth, ScramSecret};
use pgwire::api::auth::{
    AuthDriver, AuthOutcome, AuthSource, DefaultServerParameterProvider, LoginInfo, Password, StartupHandler,
};
use pgwire::api::{ClientInfo, METADATA_USER};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::places::Admission;
use super::tls::Tls;
use crate::process::keys::{KeyStore, Refusal};
use crate::process::scram::Verifier;

/// A FATAL error response (the connection is closed after it).
fn fatal(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new("FATAL".to_owned(), code.to_owned(), message)))
}

/// The one answer to a login refused for its credentials, whatever was wrong.
fn refused(user: &str) -> PgWireError {
    fatal("28P01", format!("password authentication failed for user \"{user}\" (chave ou segredo inválidos)"))
}

/// The SCRAM verifiers of the keys in force; a mock one for an unknown key or a key without one.
struct Verifiers {
    keys: Arc<KeyStore>,
    /// The seed of the mock verifiers (random per process).
    seed: [u8; 32],
}

impl Debug for Verifiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Verifiers")
    }
}

#[async_trait]
impl AuthSource for Verifiers {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        Err(PgWireError::InvalidPassword(login.user().unwrap_or_default().to_owned()))
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or_default();
        // The mock is computed for every login, so a known key takes as long as an unknown one.
        let mock = Verifier::mock(&self.seed, user);
        let v = self.keys.with_current(|c| c.scram_verifier(user)).unwrap_or(mock);
        let secret = ScramSecret::Verifier {
            salt: v.salt,
            iterations: v.iterations as usize,
            stored_key: v.stored_key.to_vec(),
            server_key: v.server_key.to_vec(),
        };
        Ok((secret, None))
    }
}

/// The secrets' hashes, for a key without a verifier over TLS (its secret sent in clear text
/// inside the TLS connection).
struct Secrets(Arc<KeyStore>);

impl Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets")
    }
}

#[async_trait]
impl AuthSource for Secrets {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        Err(PgWireError::InvalidPassword(login.user().unwrap_or_default().to_owned()))
    }

    async fn verify_password(&self, login: &LoginInfo, presented: &[u8]) -> PgWireResult<Option<()>> {
        let user = login.user().unwrap_or_default();
        let secret = String::from_utf8_lossy(presented);
        match self.0.with_current(|c| c.verify(user, &secret)) {
            true => Ok(None),
            false => Err(PgWireError::InvalidPassword(user.to_owned())),
        }
    }
}

/// The door's login methods, shared by its connections.
pub struct Logins {
    keys: Arc<KeyStore>,
    /// SCRAM-SHA-256, for plain TCP connections (libpq refuses a -PLUS offer there).
    scram: ScramAuth,
    /// SCRAM-SHA-256 and, when the certificate allows channel binding, SCRAM-SHA-256-PLUS.
    scram_tls: ScramAuth,
    cleartext: CleartextPasswordAuth<Secrets>,
}

impl Logins {
    /// The login methods of the door, with `tls` when it has it.
    pub fn new(keys: Arc<KeyStore>, tls: Option<&Tls>) -> Logins {
        let mut seed = [0u8; 32];
        if let Err(e) = getrandom::fill(&mut seed) {
            tracing::warn!(error = %e, "PostgreSQL door: no random seed for the mock SCRAM verifiers");
        }
        let verifiers: Arc<dyn AuthSource> = Arc::new(Verifiers { keys: Arc::clone(&keys), seed });
        let scram = ScramAuth::new(Arc::clone(&verifiers));
        let mut scram_tls = ScramAuth::new(verifiers);
        if let Some(tls) = tls {
            if let Err(e) = scram_tls.configure_certificate(&tls.certificate_pem) {
                tracing::warn!(
                    error = %e,
                    "PostgreSQL door: SCRAM-SHA-256-PLUS (channel binding) is not offered: the certificate's \
                     signature algorithm has no tls-server-end-point hash"
                );
            }
        }
        let cleartext = CleartextPasswordAuth::new(Arc::new(Secrets(Arc::clone(&keys))));
        Logins { keys, scram, scram_tls, cleartext }
    }

    /// The login method of a connection, from its user (the key) and whether it is TLS.
    fn mechanism(&self, user: &str, secure: bool) -> Box<dyn AuthMechanism> {
        let without_verifier =
            self.keys.with_current(|c| c.scram_verifier(user).is_none().then(|| c.name(user)).flatten());
        match (without_verifier, secure) {
            (Some(_), true) => self.cleartext.create(),
            (Some(name), false) => {
                tracing::warn!(
                    client = %name,
                    "PostgreSQL login refused: this key has no SCRAM verifier, so it logs in only over TLS; \
                     give it one with `eco-insights credentials scram`"
                );
                self.scram.create()
            }
            (None, true) => self.scram_tls.create(),
            (None, false) => self.scram.create(),
        }
    }
}

/// One connection's login: the door's methods and the connection's place (signed in once the
/// login succeeds, which the start-up deadline reads).
#[derive(Clone)]
pub struct Login {
    logins: Arc<Logins>,
    admission: Arc<Admission>,
}

impl Login {
    pub fn new(logins: Arc<Logins>, admission: Arc<Admission>) -> Login {
        Login { logins, admission }
    }
}

/// The start-up of a connection: protocol negotiation, the login, then the server parameters.
pub struct Startup {
    login: Login,
    driver: AuthDriver<DefaultServerParameterProvider>,
}

impl Startup {
    pub fn new(login: Login, parameters: DefaultServerParameterProvider) -> Startup {
        Startup { login, driver: AuthDriver::new(parameters) }
    }

    /// After a step of the login: nothing more, or, the client proven, its key's quota taken and
    /// the start-up completed; a refusal (logged at debug level with pgwire's reason) is `28P01`.
    async fn step<C>(&self, client: &mut C, user: &str, outcome: PgWireResult<AuthOutcome>) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let final_message: Option<Authentication> = match outcome {
            Ok(AuthOutcome::InProgress) => return Ok(()),
            Ok(AuthOutcome::Authenticated { final_message, .. }) => final_message,
            Err(e) => {
                tracing::debug!(peer = %client.socket_addr(), error = %e, "PostgreSQL login refused");
                return Err(refused(user));
            }
        };
        match self.login.logins.keys.with_current(|c| c.admit(user)) {
            Ok(_) => {
                if !self.login.admission.admit() {
                    crate::process::metrics::pg_query("refused");
                    return Err(fatal(
                        "53300",
                        "sorry, too many clients already (limite de conexões PostgreSQL atingido)".into(),
                    ));
                }
                self.driver.complete_authentication(client, final_message).await
            }
            Err(denial) => match denial.error {
                Refusal::Unauthorized => Err(refused(user)),
                Refusal::RateLimited(secs) => {
                    Err(fatal("53400", format!("cota de requisições excedida para esta chave; tente em {secs} s")))
                }
            },
        }
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                pgwire::api::auth::protocol_negotiation(client, startup).await?;
                pgwire::api::auth::save_startup_parameters_to_metadata(client, startup);
                let user = client.metadata().get(METADATA_USER).cloned().unwrap_or_default();
                let mechanism = self.login.logins.mechanism(&user, client.is_secure());
                let outcome = self.driver.begin_authentication(client, mechanism).await;
                self.step(client, &user, outcome).await
            }
            PgWireFrontendMessage::PasswordMessageFamily(message) => {
                let user = client.metadata().get(METADATA_USER).cloned().unwrap_or_default();
                let outcome = self.driver.advance_authentication(client, message).await;
                self.step(client, &user, outcome).await
            }
            _ => Ok(()),
        }
    }
}
