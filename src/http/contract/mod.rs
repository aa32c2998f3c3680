//! The API's contract, as every other HTTP room uses it: the success and failure envelopes, the
//! error type, query-parameter parsing and their documented shapes, the driving profile, the
//! response headers (ETags, caching, quotas) and the shared state. It imports no other room of
//! `http`.

pub mod cursor;
pub mod envelope;
pub mod error;
pub mod headers;
pub mod params;
pub mod profile;
pub mod query;
pub mod state;
