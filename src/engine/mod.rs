//! The analytics engine: loading and checking exports, the SQL views, the immutable snapshot,
//! filters and every computation the API serves. Nothing here knows about HTTP.

pub mod catalog;
pub mod compare;
pub mod filters;
pub mod generate;
pub mod insights;
pub mod labels;
pub mod load;
pub mod publish;
pub mod rankings;
pub mod reload;
pub mod schema;
pub mod snapshot;
pub mod store;
pub mod text_index;
pub mod vehicles;
pub mod views;
