//! Black-box API tests: the real binary on port 0, real Parquet fixtures, HTTP.

mod common;

mod catalog;
mod compare;
mod insights;
mod rankings;
mod vehicles;
