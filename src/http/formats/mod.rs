//! Answers in analysts' formats. The list operations answer JSON by default, and CSV, Parquet,
//! Arrow IPC stream or NDJSON when the `format` parameter (which wins) or the `Accept` header asks
//! for it; `GET /catalog/export` answers the whole filtered catalog, streamed.
//!
//! - [`negotiate`]: the `format` parameter and `Accept` (q-values, wildcards) → a [`Format`];
//! - [`tabular`]: the rows of an answer as a Polars frame with the JSON items' field names and
//!   values, written with Polars' writers (or as one JSON item per line);
//! - [`reply`]: the answer of a list operation in the chosen format, with `X-Total-Count` and
//!   `Link` (the pagination of a non-JSON answer);
//! - [`stream`]: the streamed body of the export, written in chunks off the async workers;
//! - [`document`]: the OpenAPI side (media types, the `format` parameter, 406, headers).

pub mod document;
pub mod encode;
pub mod negotiate;
pub mod reply;
pub mod stream;
pub mod tabular;

pub use negotiate::{negotiate, Format, EXPORT, LIST, PARAM};
pub use reply::list_reply;

/// Response header with the number of items of the whole list (all pages).
pub const TOTAL_COUNT: &str = "x-total-count";
