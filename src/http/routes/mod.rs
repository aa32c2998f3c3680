//! One module per resource, each exposing its own router.

pub mod catalog;
pub mod compare;
pub mod export;
pub mod facets;
pub mod health;
pub mod insights;
pub mod methodology;
pub mod metrics;
pub mod rankings;
pub mod vehicles;
