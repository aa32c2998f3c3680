//! Eco Insights: a read-only HTTP JSON service over a vehicle-efficiency catalog.
//!
//! `engine` owns the data (Parquet → Polars views → snapshot → analytics); `http` is the HTTP
//! front door (routing, envelopes, errors, formats, docs), `pg` the PostgreSQL one and `flight`
//! the Arrow Flight SQL one, siblings that import only `engine` and `process`; `process` owns what every front door
//! shares (credentials and quotas, limits, metrics, logging, memory, scheduling); `config` owns
//! the command line; `sample` writes the deterministic synthetic catalog bundled with the
//! repository; `report` writes the analyst's HTML report of a catalog; `import` turns INMETRO's official PBEV
//! tables (PDF) into a catalog export. See README, Architecture.

pub mod config;
pub mod diff;
pub mod engine;
pub mod flight;
pub mod http;
pub mod import;
pub mod pg;
pub mod process;
pub mod report;
pub mod sample;
