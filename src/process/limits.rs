//! The process's limits, shared by every front door: the size of a request's target, headers and
//! body, the number of requests handled at once and the time one may take, with their defaults.
//! The front doors enforce them (HTTP: `http::limits`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

/// Largest accepted request body (POST /compare), in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// Largest accepted request target (path and query), in bytes.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// Largest accepted header block (every `name: value` line), in bytes.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Defaults of the command-line limits.
pub const DEFAULT_HEADER_TIMEOUT_MS: u64 = 10_000;
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 10_000;
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 256;

/// The limits of one server, from the command line.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time a client has to send a request's complete head; the connection is closed after it.
    pub header_timeout: Duration,
    /// Time a request may take until its answer starts; then 503 SERVICE_UNAVAILABLE.
    pub request_timeout: Duration,
    /// API requests handled at once; more are answered 503 SERVICE_UNAVAILABLE at once.
    pub max_in_flight: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_millis(DEFAULT_HEADER_TIMEOUT_MS),
            request_timeout: Duration::from_millis(DEFAULT_REQUEST_TIMEOUT_MS),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }
}

/// Paths never refused for lack of capacity: probes, metrics, the documentation and the
/// explorer's page and assets (their data calls are API requests like any other).
pub fn exempt_from_capacity(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics" | "/openapi.json" | "/docs" | "/explore")
        || path.starts_with("/docs/")
        || path.starts_with("/explore/")
}

/// The in-flight permits and the request deadline of one server.
#[derive(Clone)]
pub struct Guard {
    in_flight: Arc<Semaphore>,
    request_timeout: Duration,
}

impl Guard {
    pub fn new(limits: &Limits) -> Guard {
        Guard {
            in_flight: Arc::new(Semaphore::new(limits.max_in_flight.max(1) as usize)),
            request_timeout: limits.request_timeout,
        }
    }
}

impl Guard {
    /// A place among the API requests in flight, if one is free (held until dropped).
    pub fn try_enter(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.in_flight.try_acquire().ok()
    }

    /// [`Guard::try_enter`] for a permit held past this borrow (a request's whole life).
    pub fn try_enter_owned(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        Arc::clone(&self.in_flight).try_acquire_owned().ok()
    }

    /// How long a request may take until its answer starts.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exempt_paths() {
        for p in [
            "/healthz",
            "/readyz",
            "/metrics",
            "/openapi.json",
            "/docs",
            "/docs/rapidoc-min.js",
            "/explore",
            "/explore/sql",
        ] {
            assert!(exempt_from_capacity(p), "{p}");
        }
        for p in ["/catalog/vehicles", "/compare", "/metricsx", "/docsx", "/explorex"] {
            assert!(!exempt_from_capacity(p), "{p}");
        }
    }
}
