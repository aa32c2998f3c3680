//! Eco Insights: a read-only HTTP JSON service over a vehicle-efficiency catalog.
//!
//! `engine` owns the data (Parquet → Polars views → snapshot → analytics); `http` owns the API
//! (routing, credentials, envelopes, errors); `config` owns the command line; `sample` writes the
//! deterministic synthetic catalog bundled with the repository; `report` writes the analyst's
//! HTML report of a catalog.

pub mod config;
pub mod diff;
pub mod engine;
pub mod http;
pub mod process;
pub mod report;
pub mod sample;
