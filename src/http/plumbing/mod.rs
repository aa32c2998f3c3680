//! HTTP's own plumbing, around every answer: request ids, access logs and metrics
//! (`middleware`), credentials checks, limits, compression, the dataset-only answers served ahead
//! of the router (`fast`), panics, and the serving loop.

pub mod compression;
pub mod fast;
pub mod limits;
pub mod middleware;
pub mod panics;
pub mod serve;
