//! The analytic operations over a served table: the common filters, the catalog listing,
//! rankings, insights and aggregations, per-vehicle views and the side-by-side comparison. Each
//! reads only the rows and columns it needs; those that depend only on the dataset are computed
//! once per table.

pub mod catalog;
pub mod compare;
pub mod facets;
pub mod filters;
pub mod insights;
pub mod order;
pub mod profile;
pub mod rankings;
pub mod vehicles;
