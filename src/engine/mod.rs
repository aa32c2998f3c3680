//! The analytics engine, in two layers; the lower never imports the upper:
//!
//! - [`dataset`]: the lifecycle of one export — the input schema and its checks, loading, the SQL
//!   views, the rounding rule of published numbers, the served table with its text dictionaries,
//!   snapshots, the store and hot reload;
//! - [`ops`]: the analytic operations over a table — filters, the catalog listing, rankings,
//!   insights and aggregations, per-vehicle views and the comparison.
//!
//! Nothing here knows about HTTP. The re-exports keep the short paths (`engine::load`,
//! `engine::rankings`, ...) for the service and the tests.

pub mod dataset;
pub mod ops;
pub mod sql;

pub use dataset::{
    contain, diff, formula, load, publish, reload, remote, schema, snapshot, state, store, table, text_index, views,
};
pub use ops::{catalog, compare, facets, filters, insights, order, profile, rankings, vehicles};

use dataset::snapshot::Snapshot;

/// Computes a snapshot's dataset-only answers (the fixed rankings) before it starts serving, so
/// its first requests are lookups. Failures surface on the first request that needs them.
pub fn warm(snapshot: &Snapshot) {
    if let Err(e) = ops::rankings::fixed(snapshot) {
        tracing::error!(error = %e, "the fixed rankings of the new dataset could not be computed");
    }
    // The eco-score order (the default of /rankings/custom and /insights/eco-scores) is built
    // with the table; the others are computed by their first request.
}
