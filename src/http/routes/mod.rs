//! One module per resource, each exposing its own router.

pub mod catalog;
pub mod compare;
pub mod export;
pub mod facets;
pub mod health;
pub mod insights;
pub mod listing;
pub mod methodology;
pub mod metrics;
pub mod rankings;
pub mod sql;
pub mod vehicles;

use utoipa_axum::router::OpenApiRouter;

use crate::http::contract::state::AppState;

/// The API operations (credentials required) with their OpenAPI description.
pub fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(catalog::router())
        .merge(export::router())
        .merge(rankings::router())
        .merge(insights::router())
        .merge(vehicles::router())
        .merge(compare::router())
        .merge(facets::router())
        .merge(methodology::router())
        .merge(sql::router())
}
