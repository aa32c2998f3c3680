//! The explorer (`/explore`): a page for analysts, served from the binary like `/docs`. One HTML
//! shell answers every `/explore…` path (the script routes on the client with the History API);
//! its script and style sheet are compiled in (`assets/`, vanilla JavaScript, no build step). The
//! page needs no credentials: it asks the analyst for a key and secret and calls the public JSON
//! API with them, so every datum it shows goes through the same credentials, quotas and limits.

use std::sync::OnceLock;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::contract::headers::{if_none_match, matches_tag};
use crate::http::contract::state::AppState;

/// The HTML shell of every explorer path.
const SHELL: &str = include_str!("assets/explore.html");
/// The explorer's script (client-side routing, API calls, tables and SVG charts).
const SCRIPT: &str = include_str!("assets/explore.js");
/// The explorer's style sheet.
const STYLE: &str = include_str!("assets/explore.css");

/// Where the shell loads its script and style sheet from.
pub const SCRIPT_PATH: &str = "/explore/assets/explore.js";
pub const STYLE_PATH: &str = "/explore/assets/explore.css";

/// The page may load only what this service serves: no inline script or style, no handler
/// attribute, no frame; data are fetched from this origin only, downloads are `blob:` URLs and
/// charts inline SVG.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; \
     connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `/explore` (documented), every path below it (the same shell) and the two assets.
pub fn router() -> axum::Router<AppState> {
    let (router, _) = documented().split_for_parts();
    router
        .route("/explore/", get(shell))
        .route("/explore/{*rest}", get(shell))
        .route(SCRIPT_PATH, get(script))
        .route(STYLE_PATH, get(style))
}

/// The documented public route of this module (`/explore`).
pub fn documented() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(explore))
}

/// The explorer page for analysts (HTML; no credentials).
///
/// The catalog with facets, range filters, sorting, a column chooser, cursor pagination and CSV/Parquet downloads; a vehicle's page (`/explore/vehicles/{id}`); a
/// comparison (`/explore/compare?ids=…`); insights as charts (`/explore/insights`); an SQL editor
/// (`/explore/sql?sql=…`). Every path below `/explore` answers the same HTML shell, whose script
/// reads the path and the query string, which use the API's own parameter names. The page needs
/// no credentials: the analyst signs in with an API key and secret, kept in the tab's
/// `sessionStorage`, and every datum is fetched from the API with them.
#[utoipa::path(
    get,
    path = "/explore",
    tag = "docs",
    responses(
        (status = 200, description = "The explorer page (HTML shell; the same for every path below /explore)", content_type = "text/html", body = String),
        (status = 304, description = "Not modified: the page's ETag matched If-None-Match"),
    )
)]
async fn explore(headers: HeaderMap) -> Response {
    shell(headers).await
}

async fn shell(headers: HeaderMap) -> Response {
    static TAG: OnceLock<String> = OnceLock::new();
    let mut res = asset(&headers, SHELL, "text/html; charset=utf-8", &TAG);
    let h = res.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    res
}

async fn script(headers: HeaderMap) -> Response {
    static TAG: OnceLock<String> = OnceLock::new();
    asset(&headers, SCRIPT, "text/javascript; charset=utf-8", &TAG)
}

async fn style(headers: HeaderMap) -> Response {
    static TAG: OnceLock<String> = OnceLock::new();
    asset(&headers, STYLE, "text/css; charset=utf-8", &TAG)
}

/// One compiled-in file with a strong ETag of its bytes; `no-cache`, so a browser revalidates
/// (a 304 when unchanged) and never runs a script older than the binary serving it.
fn asset(headers: &HeaderMap, body: &'static str, content_type: &'static str, tag: &OnceLock<String>) -> Response {
    let tag = tag.get_or_init(|| format!("\"x-{:016x}\"", xxhash_rust::xxh3::xxh3_64(body.as_bytes())));
    let mut res = if matches_tag(&if_none_match(headers), tag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        body.into_response()
    };
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(tag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_loads_only_its_own_assets_and_has_no_inline_script() {
        assert!(SHELL.contains(&format!(r#"src="{SCRIPT_PATH}""#)));
        assert!(SHELL.contains(&format!(r#"href="{STYLE_PATH}""#)));
        assert_eq!(SHELL.matches("<script").count(), 1, "one external script, nothing inline");
        assert!(!SHELL.contains("<style"), "no inline style");
        for external in ["http://", "https://", " onclick=", " onload=", " onerror=", " style="] {
            assert!(!SHELL.contains(external), "the shell contains {external}");
        }
        assert!(!CSP.contains("unsafe"), "no unsafe-inline nor unsafe-eval");
        assert!(CSP.contains("frame-ancestors 'none'") && CSP.contains("script-src 'self'"));
    }

    #[test]
    fn the_script_never_writes_markup() {
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
            assert!(!SCRIPT.contains(sink), "explore.js uses {sink}");
        }
    }
}
