//! insights routes.

use utoipa_axum::router::OpenApiRouter;

use crate::http::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
