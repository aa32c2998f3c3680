//! What every handler and layer shares per server and per request: the application state (the
//! process's dataset store and credentials), the request id and the API's own header names.

use std::sync::Arc;

use uuid::Uuid;

use crate::engine::sql::worker::Runner;
use crate::engine::store::Store;
use crate::process::keys::{Credentials, KeyStore};
pub use crate::process::limits::MAX_BODY_BYTES;

/// Response header with the version of the dataset that produced the answer.
pub const DATASET_VERSION: &str = "x-dataset-version";
/// Request/response header with the request id.
pub const REQUEST_ID: &str = "x-request-id";

/// The id of one request, set by the outermost middleware.
#[derive(Debug, Clone, Copy)]
pub struct RequestId(pub uuid::Uuid);

struct Inner {
    store: Arc<Store>,
    /// The process's credentials, swapped whole when the credentials file changes (see
    /// `process::keys_reload`).
    keys: Arc<KeyStore>,
    /// Runs analysts' SQL within the process's limits (shared with the other front doors).
    sql: Arc<Runner>,
}

/// Shared state of every handler: cheap to clone.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

impl AppState {
    /// A state with its own credentials and the default SQL limits.
    pub fn new(store: Arc<Store>, credentials: Credentials) -> AppState {
        let sql = Arc::new(Runner::new(crate::engine::sql::SqlLimits::default()));
        AppState::sharing(store, Arc::new(KeyStore::new(credentials)), sql)
    }

    /// The state of a server sharing the process's dataset store, credentials and SQL runner.
    pub fn sharing(store: Arc<Store>, keys: Arc<KeyStore>, sql: Arc<Runner>) -> AppState {
        AppState { inner: Arc::new(Inner { store, keys, sql }) }
    }

    /// The runner of analysts' SQL.
    pub fn sql(&self) -> &Arc<Runner> {
        &self.inner.sql
    }

    /// The process's credentials (shared with the other front doors and the reloader).
    pub fn keys(&self) -> &Arc<KeyStore> {
        &self.inner.keys
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The credentials in force now (a request keeps the set it started with).
    pub fn credentials(&self) -> Arc<Credentials> {
        self.inner.keys.current()
    }

    /// Runs `f` on the credentials in force without taking a reference of its own.
    pub fn with_credentials<R>(&self, f: impl FnOnce(&Credentials) -> R) -> R {
        self.inner.keys.with_current(f)
    }

    /// Puts a new set of credentials in force for the next requests.
    pub fn replace_credentials(&self, credentials: Credentials) {
        self.inner.keys.replace(credentials);
    }
}

/// A random (version 4) UUID for a request id, from a per-thread generator seeded once from the
/// OS: no system call per request. Request ids need to be unique, not secret.
pub fn request_id() -> Uuid {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<(u64, u64)> = Cell::new({
            let seed = Uuid::new_v4().as_u64_pair();
            (seed.0 | 1, seed.1 | 1)
        });
    }
    STATE.with(|state| {
        // xorshift128+, twice: 128 fresh bits.
        let next = || {
            let (mut s1, s0) = state.get();
            let result = s0.wrapping_add(s1);
            s1 ^= s1 << 23;
            let s1 = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
            state.set((s0, s1));
            result
        };
        let bits = ((next() as u128) << 64) | next() as u128;
        uuid::Builder::from_random_bytes(bits.to_be_bytes()).into_uuid()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_distinct_v4_uuids() {
        let ids: std::collections::HashSet<Uuid> = (0..10_000).map(|_| request_id()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids.iter().all(|u| u.get_version_num() == 4 && u.get_variant() == uuid::Variant::RFC4122));
    }
}
