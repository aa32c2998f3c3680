//! Analysts' own questions in SQL (API-CONTRACT §7), shared by every front door.
//!
//! The dialect is PostgreSQL's and the engine Apache DataFusion. A statement is first checked in
//! process ([`sandbox`]): one read-only query over the offered tables, allow-listed functions
//! only, its unnamed columns given PostgreSQL's names ([`names`]), its syntax rewritten where
//! DataFusion would answer otherwise ([`rewrite`]). It then runs in a worker
//! process ([`worker`]): the same binary, kept warm between queries, with a memory budget
//! (`RLIMIT_DATA` and DataFusion's memory pool), the idle CPU priority and a bounded number of
//! threads, over the dataset version's tables (`catalog` and every view, computed by Polars and
//! written once per version as Arrow IPC files that the worker maps: [`engine`]), with
//! PostgreSQL's semantics where DataFusion's differ ([`postgres`]). The service waits at most the
//! time limit and kills the worker past it, so a query that runs away gives its CPU and memory
//! back at once and the process serving everyone else never holds its state.

pub mod casts;
pub mod engine;
pub mod lateral;
pub mod mapped;
pub mod names;
pub mod numeric;
pub mod pg_catalog;
pub mod postgres;
pub mod query;
pub mod rewrite;
pub mod sandbox;
mod spawn;
pub mod tables;
pub mod worker;

use std::time::Duration;

/// Default of `--sql-max-rows`.
pub const DEFAULT_MAX_ROWS: usize = 10_000;
/// Default of `--sql-timeout-ms`.
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;
/// Default of `--sql-memory-mb`.
pub const DEFAULT_MEMORY_MB: u64 = 1_024;
/// Default of `--sql-workers`.
pub const DEFAULT_WORKERS: usize = 2;

/// The limits of analysts' queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlLimits {
    /// Rows returned at most (the rest are cut and the answer says so).
    pub max_rows: usize,
    /// Wall time a query may take, its worker's start included.
    pub timeout: Duration,
    /// The worker's memory budget (its heap; the mapped dataset is not counted), in bytes.
    pub memory_bytes: u64,
    /// Queries running at once; more are refused at once.
    pub workers: usize,
}

impl Default for SqlLimits {
    fn default() -> Self {
        SqlLimits {
            max_rows: DEFAULT_MAX_ROWS,
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            memory_bytes: DEFAULT_MEMORY_MB * 1024 * 1024,
            workers: DEFAULT_WORKERS,
        }
    }
}
