//! The immutable dataset one request works on: the table and where it came from. A new export
//! builds a new snapshot; nothing in a snapshot ever changes.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use polars::prelude::*;

use super::table::{KeyOrders, Table};

/// Facts about where a snapshot came from.
#[derive(Debug, Clone)]
pub struct DatasetInfo {
    /// Hash of everything an answer depends on (export, views, cost configuration).
    pub version: String,
    pub loaded_at: DateTime<Utc>,
    pub source: PathBuf,
    /// Whether it was read from the export or from the copy kept in the state folder.
    pub origin: Origin,
    pub rows: usize,
    /// The views (and so the cost configuration) this snapshot was computed with.
    pub views: std::sync::Arc<super::views::Views>,
}

/// Where a served dataset was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The export at `--data`.
    Export,
    /// The copy of the last accepted export kept in `--state-dir` (the export at `--data` was
    /// missing or refused when the service started).
    State,
}

/// An immutable loaded dataset.
#[derive(Debug)]
pub struct Snapshot {
    pub info: DatasetInfo,
    pub table: Table,
}

impl std::ops::Deref for Snapshot {
    type Target = Table;

    fn deref(&self) -> &Table {
        &self.table
    }
}

impl Snapshot {
    /// Builds a snapshot from the collected final view (see `load`), with the key orders
    /// computed from the checked export when there are.
    pub fn build(view: DataFrame, info: DatasetInfo, keys: Option<KeyOrders>) -> PolarsResult<Snapshot> {
        let casas = info.views.params.casas;
        Ok(Snapshot { info, table: Table::build(view, casas, keys)? })
    }
}
