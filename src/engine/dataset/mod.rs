//! The lifecycle of one export: read and check it (`schema`, `load`), derive the published
//! metrics (`views`, `publish`), build the served table (`table`, `reorder`, `text_index`,
//! `text_rank`, `bucket_sort`), wrap it as an immutable snapshot (`snapshot`), serve the current one (`store`)
//! and replace it when the export changes (`reload`).

pub mod answers;
pub mod assemble;
pub mod bucket_sort;
pub mod contain;
pub mod diff;
pub mod formula;
pub mod load;
pub mod publish;
pub mod reload;
pub mod remote;
pub mod reorder;
pub mod schema;
pub mod snapshot;
pub mod state;
pub mod store;
pub mod table;
pub mod text_index;
pub mod text_rank;
pub mod views;
