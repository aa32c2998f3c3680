//! Rankings: custom, grouped, and the fixed per-dataset rankings.

use polars::prelude::PolarsResult;

use super::snapshot::Snapshot;

/// The rankings that depend only on the dataset, computed once per snapshot.
#[derive(Debug, Default)]
pub struct FixedRankings {}

impl FixedRankings {
    pub fn compute(_snapshot: &Snapshot) -> PolarsResult<FixedRankings> {
        Ok(FixedRankings::default())
    }
}
