//! Black-box API tests: the real binary on port 0, real Parquet fixtures, HTTP.

mod common;
mod expected;
mod http;

mod catalog;
mod compare;
mod formats;
mod insights;
mod keys;
mod lists;
mod nmog;
mod operations;
mod pbev;
mod precision;
mod rankings;
mod reload;
mod report;
mod sql;
mod third_party;
mod tools;
mod untrusted;
mod vehicles;
