//! Eco Insights: a read-only HTTP JSON service over a vehicle-efficiency catalog.
//!
//! `engine` owns the data (Parquet → Polars views → snapshot → analytics); `http` owns the API
//! (routing, credentials, envelopes, errors); `config` owns the command line; `sample` writes the
//! deterministic synthetic catalog bundled with the repository.

pub mod config;
pub mod credentials;
pub mod diff;
pub mod engine;
pub mod http;
pub mod memory;
pub mod priority;
pub mod sample;
