//! The OpenAPI 3.1 document, assembled from the handlers' annotations, and the routes that
//! publish it (no credentials needed).

use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::OpenApi;

use super::AppState;

/// Title, description and security schemes; the paths come from the routers.
pub fn base() -> OpenApi {
    let mut doc = utoipa::openapi::OpenApiBuilder::new()
        .info(
            utoipa::openapi::InfoBuilder::new()
                .title("Eco Insights API")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(include_str!("openapi_description.md")))
                .build(),
        )
        .build();
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme("api_key", SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))));
    components
        .add_security_scheme("api_secret", SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Secret"))));
    doc
}

/// Adds what every API operation shares: both credential headers required.
pub fn finish(mut doc: OpenApi) -> OpenApi {
    let both = SecurityRequirement::new("api_key", Vec::<String>::new())
        .add("api_secret", Vec::<String>::new());
    for item in doc.paths.paths.values_mut() {
        for op in [&mut item.get, &mut item.post].into_iter().flatten() {
            op.security = Some(vec![both.clone()]);
        }
    }
    doc
}

/// `GET /openapi.json`.
pub fn router(doc: OpenApi) -> Router<AppState> {
    let json = serde_json::to_value(&doc).unwrap_or_default();
    Router::new().route("/openapi.json", get(move || async move { Json(json) }))
}

/// The common filters, as documented parameters (parsed by `params::QueryParams`).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct FilterQuery {
    /// Brand: case- and accent-insensitive literal substring.
    marca: Option<String>,
    /// Model: case- and accent-insensitive literal substring.
    modelo: Option<String>,
    /// Category: case- and accent-insensitive literal substring.
    categoria: Option<String>,
    /// Fuel type: case- and accent-insensitive literal substring (`eletrico` finds "Elétrico").
    combustivel: Option<String>,
    /// Propulsion type: case- and accent-insensitive literal substring.
    propulsao: Option<String>,
    /// Transmission type: case- and accent-insensitive literal substring.
    transmissao: Option<String>,
    /// Exact model year; cannot be combined with ano_min or ano_max.
    #[param(minimum = 1900, maximum = 2100)]
    ano: Option<i32>,
    /// Minimum model year (inclusive); not greater than ano_max.
    #[param(minimum = 1900, maximum = 2100)]
    ano_min: Option<i32>,
    /// Maximum model year (inclusive).
    #[param(minimum = 1900, maximum = 2100)]
    ano_max: Option<i32>,
}

/// Pagination parameters.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PageQuery {
    /// Page number, from 1.
    #[param(minimum = 1, default = 1)]
    page: Option<i64>,
    /// Items per page.
    #[param(minimum = 1, maximum = 100, default = 20)]
    page_size: Option<i64>,
}
