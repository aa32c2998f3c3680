//! The OpenAPI 3.1 document, assembled from the handlers' annotations so it cannot drift from
//! the routes, the routes that publish it (`/openapi.json`) and the offline docs page (`/docs`,
//! RapiDoc vendored under `assets/`). None of these need credentials.

use axum::body::Bytes;
use axum::extract::Extension;
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use utoipa::openapi::header::{Header, HeaderBuilder};
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::response::{ResponseBuilder, Responses};
use utoipa::openapi::schema::{ComponentsBuilder, ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::tag::TagBuilder;
use utoipa::openapi::{ContentBuilder, InfoBuilder, LicenseBuilder, OpenApi, OpenApiBuilder, Ref, RefOr};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::contract::error::{ErrorBody, Failure};
use crate::http::contract::state::{AppState, MAX_BODY_BYTES};
use crate::process::limits::{MAX_HEADER_BYTES, MAX_URI_BYTES};

/// Paths served without credentials; every other path of the document is an API operation.
pub const PUBLIC_PATHS: &[&str] = &["/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/explore"];

/// Name of the security scheme of the `X-API-Key` header.
pub const API_KEY_SCHEME: &str = "api_key";
/// Name of the security scheme of the `X-API-Secret` header.
pub const API_SECRET_SCHEME: &str = "api_secret";

/// Nullable fields that are left out of the JSON when null (`data.meta` of the envelope, the
/// remote `source` of `/readyz`). Every
/// other nullable field is always present and rendered as `null`, so the document marks it
/// required.
pub const ABSENT_WHEN_NULL: &[&str] =
    &["filters_applied", "pagination", "perfil_custo", "columns", "row_count", "truncated", "next_cursor", "source"];

/// A vehicle of the bundled sample (`make data`: 12,000 rows, seed 2026; ids are derived from the
/// vehicle's fields, so they are stable): Fiat Argo Audace 1.0 MT 2024, Compacto, Flex, eco score
/// 58.7. The example of every `vehicle_id`, so the document's examples answer real data.
pub const SAMPLE_VEHICLE_ID: &str = "dc7f9952-c46a-56d5-ad97-503782f1f9a2";
/// The example body of `POST /compare`: the Argo above, BYD Dolphin GL 2024 (Elétrico, 98.7) and
/// Toyota Corolla Altis 1.8 Híbrido 2024 (Flex, 74.5), all from the bundled sample.
pub const SAMPLE_COMPARE_IDS: &[&str] =
    &[SAMPLE_VEHICLE_ID, "5018657e-03e2-58c9-a6e3-96f39d27c2da", "2cb5b6c1-2c31-5ae7-b85e-355b48c74aa1"];

/// RapiDoc 9.3.8 (`npm pack rapidoc@9.3.8`, `dist/rapidoc-min.js`, MIT; see `assets/`).
const RAPIDOC_JS: &[u8] = include_bytes!("assets/rapidoc-min.js");
/// The same file, gzip-compressed as published in the npm package.
const RAPIDOC_JS_GZ: &[u8] = include_bytes!("assets/rapidoc-min.js.gz");
/// The docs page: RapiDoc pointed at `openapi.json`, system fonts only.
const DOCS_HTML: &str = include_str!("assets/docs.html");
/// The docs page may only load what this service serves.
const DOCS_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'self'";

/// Tags in the order the docs page lists them.
const TAGS: &[(&str, &str)] = &[
    ("catalog", "The vehicle catalog, paginated, with the common filters."),
    ("rankings", "Fixed rankings (top 10), the custom ranking by metric and the rankings grouped by category, fuel, brand or year."),
    ("insights", "Consolidated summary, efficiency and eco-score lists, emissions summary."),
    ("aggregations", "Aggregations by brand."),
    ("vehicles", "Per-vehicle views: summary, eco score, ranking positions, similar vehicles, best alternative."),
    ("compare", "Side-by-side comparison of 2 to 4 vehicles."),
    ("facets", "How many of the filtered vehicles hold each value of the grouping columns."),
    ("methodology", "How every published number is computed, with the constants and cost configuration in force."),
    ("health", "Liveness and readiness probes and Prometheus metrics (no credentials)."),
    ("docs", "This document, the interactive reference and the explorer page for analysts (no credentials; the explorer asks for a key to fetch every datum)."),
];

/// Title, description, tags, security schemes, shared responses and the public operations; the
/// API paths come from the routers.
pub fn base() -> OpenApi {
    let mut components = ComponentsBuilder::new()
        .schema_from::<Failure>()
        .schema_from::<ErrorBody>()
        .security_scheme(
            API_KEY_SCHEME,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-Key",
                "Public key of the client. Required, together with X-API-Secret, on every API operation.",
            ))),
        )
        .security_scheme(
            API_SECRET_SCHEME,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-Secret",
                "Secret paired with the key. Keep it on your backend; never ship it in a public web page or app.",
            ))),
        );
    for shared in Shared::ALL {
        components = components.response(shared.name(), shared.response());
    }
    let mut doc = OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("Eco Insights API")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(include_str!("openapi_description.md")))
                .license(Some(LicenseBuilder::new().name("MIT").identifier(Some("MIT")).build()))
                .build(),
        )
        .tags(Some(TAGS.iter().map(|(name, text)| TagBuilder::new().name(*name).description(Some(*text)).build())))
        .components(Some(components.build()))
        .build();
    doc.merge(crate::http::routes::health::openapi());
    doc.merge(crate::http::routes::metrics::openapi());
    doc.merge(docs_routes().into_openapi());
    doc.merge(crate::http::explore::documented().into_openapi());
    doc
}

/// Adds what every API operation shares, so handlers do not repeat it: both credential
/// headers required; the failures any operation can answer (400, 401, 405, 414, 429 with
/// Retry-After, 431, 500, 503; 413 and 415 where a body is read); `304` on GETs;
/// the response headers (X-Request-Id, X-Dataset-Version, ETag, Cache-Control, Vary).
pub fn finish(mut doc: OpenApi) -> OpenApi {
    let both =
        SecurityRequirement::new(API_KEY_SCHEME, Vec::<String>::new()).add(API_SECRET_SCHEME, Vec::<String>::new());
    for (path, item) in doc.paths.paths.iter_mut() {
        let public = PUBLIC_PATHS.contains(&path.as_str());
        for (method, op) in operations_mut(item) {
            if public {
                finish_public(op);
            } else {
                op.security = Some(vec![both.clone()]);
                finish_api(method, op);
            }
        }
    }
    doc
}

/// The document as served: `finish`ed, plus what the typed model cannot express (required
/// response headers, required nullable fields) and the sample examples.
pub fn to_json(doc: &OpenApi) -> Value {
    let mut v = serde_json::to_value(doc).unwrap_or_else(|_| json!({}));
    mark_headers_required(&mut v);
    crate::http::formats::document::annotate(&mut v);
    flatten_single_one_of(&mut v);
    require_nullable_fields(&mut v);
    describe_list_fields(&mut v);
    add_sample_examples(&mut v);
    v
}

/// The lists with `sort` / `fields` and the fields of their items (the encoder's lists, so the
/// document names exactly the fields the service accepts).
const SELECTABLE: [(&str, crate::http::formats::encode::Fields); 4] = [
    ("/catalog/vehicles", crate::http::formats::encode::CATALOG_VEHICLE),
    ("/insights/efficiency", crate::http::formats::encode::EFFICIENCY_ITEM),
    ("/insights/eco-scores", crate::http::formats::encode::ECO_SCORE_ITEM),
    ("/rankings/custom", crate::http::formats::encode::RANKING_ITEM),
];

/// What OpenAPI can say of `sort` and `fields` per list: a pattern over the item's field names
/// (repetition is the one rule it cannot express), and an item schema that admits the subset of
/// fields `fields` selects (a copy of the envelope whose items are the full item or any subset
/// of its properties).
fn describe_list_fields(doc: &mut Value) {
    for (path, fields) in SELECTABLE {
        let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
        let alt = names.join("|");
        let Some(op) = doc.pointer_mut(&format!("/paths/{}/get", path.replace('/', "~1"))) else { continue };
        if let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) {
            for p in params.iter_mut() {
                let pattern = match p["name"].as_str() {
                    Some("sort") => format!("^-?({alt})(,-?({alt}))*$"),
                    Some("fields") => format!("^({alt})(,({alt}))*$"),
                    _ => continue,
                };
                p["schema"]["pattern"] = Value::String(pattern);
                let extra = format!(" Fields: {}.", names.join(", "));
                if let Some(d) = p["description"].as_str() {
                    p["description"] = Value::String(format!("{d}{extra}"));
                }
            }
        }
        let json_schema = op.pointer("/responses/200/content/application~1json/schema/$ref").and_then(Value::as_str);
        let Some(envelope) = json_schema.and_then(|r| r.strip_prefix("#/components/schemas/")).map(str::to_string)
        else {
            continue;
        };
        let selectable = format!("{envelope}_Selectable");
        op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"] =
            Value::String(format!("#/components/schemas/{selectable}"));
        let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) else { continue };
        let Some(mut copy) = schemas.get(&envelope).cloned() else { continue };
        let Some(items) = copy.pointer_mut("/properties/data/properties/data/properties/items/items") else { continue };
        let item_ref = items.clone();
        let item_name = item_ref["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/"));
        let properties = item_name.and_then(|n| schemas.get(n)).map(|s| s["properties"].clone()).unwrap_or(json!({}));
        *items = json!({"anyOf": [item_ref, {
            "type": "object",
            "description": "With `fields`: only the named fields, in the order given.",
            "properties": properties,
            "additionalProperties": false,
        }]});
        schemas.insert(selectable, copy);
    }
}

/// `GET /openapi.json`, `GET /docs` and the script of the docs page.
pub fn router(doc: OpenApi) -> Router<AppState> {
    let body = Bytes::from(serde_json::to_vec(&to_json(&doc)).unwrap_or_default());
    let (docs, _) = docs_routes().split_for_parts();
    docs.route("/docs/rapidoc-min.js", get(rapidoc_js)).layer(Extension(Document(body)))
}

/// The documented public routes of this module (`/openapi.json`, `/docs`).
fn docs_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(openapi_json)).routes(routes!(docs_page))
}

/// The serialized document, shared by every `/openapi.json` answer.
#[derive(Clone)]
struct Document(Bytes);

/// This OpenAPI 3.1 document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "docs",
    responses((status = 200, description = "The OpenAPI 3.1 document of this service", content_type = "application/json", body = Object))
)]
async fn openapi_json(Extension(doc): Extension<Document>) -> Response {
    let mut res = doc.0.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

/// The interactive API reference (RapiDoc), served entirely by this service: no script, style
/// or font is fetched from anywhere else.
#[utoipa::path(
    get,
    path = "/docs",
    tag = "docs",
    responses((status = 200, description = "The docs page (HTML)", content_type = "text/html", body = String))
)]
async fn docs_page() -> Response {
    let mut res = DOCS_HTML.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(DOCS_CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    res
}

/// `GET /docs/rapidoc-min.js`, gzip-compressed when the client accepts it.
async fn rapidoc_js(headers: HeaderMap) -> Response {
    let gzip = accepts_gzip(&headers);
    let mut res = if gzip { RAPIDOC_JS_GZ } else { RAPIDOC_JS }.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/javascript; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400"));
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if gzip {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    res
}

/// Whether `Accept-Encoding` allows gzip (`gzip` or `*` with a non-zero quality).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(
        |item| {
            let mut parts = item.split(';').map(str::trim);
            let name = parts.next().unwrap_or("");
            let q = parts
                .filter_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            (name.eq_ignore_ascii_case("gzip") || name == "*") && q > 0.0
        },
    )
}

/// The responses every operation may answer, defined once under `components.responses`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shared {
    NotModified,
    BadRequest,
    Unauthorized,
    MethodNotAllowed,
    PayloadTooLarge,
    UriTooLong,
    UnsupportedMediaType,
    RateLimited,
    HeadersTooLarge,
    InternalError,
    ServiceUnavailable,
}

impl Shared {
    const ALL: [Shared; 11] = [
        Shared::NotModified,
        Shared::BadRequest,
        Shared::Unauthorized,
        Shared::MethodNotAllowed,
        Shared::PayloadTooLarge,
        Shared::UriTooLong,
        Shared::UnsupportedMediaType,
        Shared::RateLimited,
        Shared::HeadersTooLarge,
        Shared::InternalError,
        Shared::ServiceUnavailable,
    ];

    fn status(self) -> &'static str {
        match self {
            Shared::NotModified => "304",
            Shared::BadRequest => "400",
            Shared::Unauthorized => "401",
            Shared::MethodNotAllowed => "405",
            Shared::PayloadTooLarge => "413",
            Shared::UriTooLong => "414",
            Shared::UnsupportedMediaType => "415",
            Shared::RateLimited => "429",
            Shared::HeadersTooLarge => "431",
            Shared::InternalError => "500",
            Shared::ServiceUnavailable => "503",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Shared::NotModified => "NotModified",
            Shared::BadRequest => "BadRequest",
            Shared::Unauthorized => "Unauthorized",
            Shared::MethodNotAllowed => "MethodNotAllowed",
            Shared::PayloadTooLarge => "PayloadTooLarge",
            Shared::UriTooLong => "UriTooLong",
            Shared::UnsupportedMediaType => "UnsupportedMediaType",
            Shared::RateLimited => "RateLimited",
            Shared::HeadersTooLarge => "HeadersTooLarge",
            Shared::InternalError => "InternalError",
            Shared::ServiceUnavailable => "ServiceUnavailable",
        }
    }

    fn description(self) -> String {
        match self {
            Shared::NotModified => "Not Modified: a tag of `If-None-Match` matches the current answer (same dataset \
                version, path and parameters; weak comparison, so `W/\"…\"` and `\"…\"` both match, whatever the \
                encoding). Empty body."
                .into(),
            Shared::BadRequest => "VALIDATION_ERROR: an invalid parameter value, or a parameter that is unknown to \
                this operation, repeated or empty, or not valid percent-encoded UTF-8 (query or path); the message \
                names the parameter and the rule."
                .into(),
            Shared::Unauthorized => {
                "UNAUTHORIZED: X-API-Key or X-API-Secret missing or wrong (one answer for both).".into()
            }
            Shared::MethodNotAllowed => {
                "METHOD_NOT_ALLOWED: wrong method on a known path; `Allow` lists the accepted ones.".into()
            }
            Shared::PayloadTooLarge => format!("PAYLOAD_TOO_LARGE: request body over {MAX_BODY_BYTES} bytes."),
            Shared::UriTooLong => format!("URI_TOO_LONG: request target (path and query) over {MAX_URI_BYTES} bytes."),
            Shared::HeadersTooLarge => {
                format!("HEADERS_TOO_LARGE: request headers over {MAX_HEADER_BYTES} bytes in total.")
            }
            Shared::UnsupportedMediaType => {
                "UNSUPPORTED_MEDIA_TYPE: the body is not sent as `Content-Type: application/json`.".into()
            }
            Shared::RateLimited => "RATE_LIMITED: the key's token bucket is empty (a quota of N per minute allows a \
                burst of N, refilled at N/60 per second); retry after `Retry-After` seconds (until one token is back). \
                `RateLimit-Remaining` is 0 and `RateLimit-Reset` says when the bucket is full again."
                .into(),
            Shared::InternalError => "INTERNAL_ERROR: a bug on our side; nothing internal is sent.".into(),
            Shared::ServiceUnavailable => "SERVICE_UNAVAILABLE: no dataset is loaded yet; or the server is at \
                `--max-in-flight` requests (answered at once, with `Retry-After: 1`); or the request took longer \
                than `--request-timeout-ms`. Retry shortly."
                .into(),
        }
    }

    fn response(self) -> utoipa::openapi::Response {
        let mut b = ResponseBuilder::new().description(self.description()).header("X-Request-Id", request_id_header());
        match self {
            Shared::NotModified => {
                return b
                    .header("ETag", etag_header())
                    .header("X-Dataset-Version", dataset_version_header())
                    .header("Cache-Control", cache_control_header("private, no-cache"))
                    .header("RateLimit-Limit", rate_limit_headers()[0].1.clone())
                    .header("RateLimit-Remaining", rate_limit_headers()[1].1.clone())
                    .header("RateLimit-Reset", rate_limit_headers()[2].1.clone())
                    .build();
            }
            Shared::MethodNotAllowed => {
                b = b.header("Allow", string_header("The methods this path accepts, e.g. `GET,HEAD`."));
            }
            Shared::ServiceUnavailable => {
                b = b.header(
                    "Retry-After",
                    HeaderBuilder::new()
                        .schema(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)))
                        .description(Some(
                            "Only when the server is at `--max-in-flight` requests: seconds to wait before retrying (1).",
                        ))
                        .build(),
                );
            }
            Shared::RateLimited => {
                b = b.header(
                    "Retry-After",
                    HeaderBuilder::new()
                        .schema(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)).maximum(Some(60)))
                        .description(Some("Seconds until the key's bucket holds a token again."))
                        .build(),
                );
            }
            _ => {}
        }
        // Unknown keys get no quota state.
        if self != Shared::Unauthorized {
            for (name, h) in rate_limit_headers() {
                b = b.header(name, h);
            }
        }
        b.header("Cache-Control", cache_control_header("no-store"))
            .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name("Failure"))).build())
            .build()
    }

    fn reference(self) -> RefOr<utoipa::openapi::Response> {
        RefOr::Ref(Ref::from_response_name(self.name()))
    }
}

fn string_header(description: &str) -> Header {
    HeaderBuilder::new().schema(ObjectBuilder::new().schema_type(Type::String)).description(Some(description)).build()
}

fn request_id_header() -> Header {
    HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String).min_length(Some(1)).max_length(Some(128)))
        .description(Some(
            "Id of the request: the request's own `X-Request-Id` when it sent one of 1 to 128 visible ASCII \
             characters, else a generated UUID (`data.meta.request_id` is the same UUID, or a generated one when \
             the client's id is not a UUID). Quote it when reporting a problem.",
        ))
        .build()
}

fn dataset_version_header() -> Header {
    string_header("Version (content hash) of the dataset that produced the answer.")
}

fn etag_header() -> Header {
    string_header(
        "Weak tag of this answer, `W/\"…\"` (dataset version + path + sorted parameters; the same for every \
         encoding); send it back in `If-None-Match`.",
    )
}

/// Headers that only answers to a key with a quota carry (so never marked required).
pub const OPTIONAL_HEADERS: &[&str] = &["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];

/// The `RateLimit-*` headers (IETF draft-ietf-httpapi-ratelimit-headers) of a key with a quota.
fn rate_limit_headers() -> [(&'static str, Header); 3] {
    let int = |minimum: i64, description: &str| {
        HeaderBuilder::new()
            .schema(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(minimum)))
            .description(Some(description))
            .build()
    };
    [
        (
            "RateLimit-Limit",
            int(1, "Only for a key with a quota: its requests per minute, which is also the burst (the size of its token bucket)."),
        ),
        ("RateLimit-Remaining", int(0, "Only for a key with a quota: tokens left in its bucket after this request.")),
        (
            "RateLimit-Reset",
            int(
                0,
                "Only for a key with a quota: seconds until its bucket is full again (Remaining back to Limit; \
                 one token comes back every 60/Limit seconds), rounded up.",
            ),
        ),
    ]
}

fn cache_control_header(value: &'static str) -> Header {
    HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String).enum_values(Some([value])))
        .description(Some(format!("Always `{value}`.")))
        .build()
}

/// Every operation of a path item, with its method name.
fn operations_mut(item: &mut PathItem) -> Vec<(Method, &mut Operation)> {
    [
        (Method::GET, &mut item.get),
        (Method::PUT, &mut item.put),
        (Method::POST, &mut item.post),
        (Method::DELETE, &mut item.delete),
        (Method::OPTIONS, &mut item.options),
        (Method::HEAD, &mut item.head),
        (Method::PATCH, &mut item.patch),
        (Method::TRACE, &mut item.trace),
    ]
    .into_iter()
    .filter_map(|(m, op)| op.as_mut().map(|op| (m, op)))
    .collect()
}

fn add_shared(responses: &mut Responses, shared: Shared) {
    responses.responses.entry(shared.status().to_string()).or_insert_with(|| shared.reference());
}

/// Adds `headers` to every inline response whose status satisfies `which`.
fn add_headers(responses: &mut Responses, which: impl Fn(u16) -> bool, headers: &[(&str, Header)]) {
    for (status, response) in responses.responses.iter_mut() {
        let RefOr::T(response) = response else { continue };
        if !status.parse::<u16>().is_ok_and(&which) {
            continue;
        }
        for (name, h) in headers {
            response.headers.entry(name.to_string()).or_insert_with(|| h.clone());
        }
    }
}

fn finish_api(method: Method, op: &mut Operation) {
    let is_get = method == Method::GET;
    let r = &mut op.responses;
    let mut success = vec![("X-Request-Id", request_id_header()), ("X-Dataset-Version", dataset_version_header())];
    if is_get {
        success.push(("ETag", etag_header()));
        success.push(("Cache-Control", cache_control_header("private, no-cache")));
        success.push((
            "Vary",
            HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(Type::String).enum_values(Some([crate::http::contract::headers::VARY])))
                .description(Some(
                    "Answers differ per client credentials, per content encoding and, on the list operations, per negotiated format (`Accept`).",
                ))
                .build(),
        ));
    }
    success.extend(rate_limit_headers());
    add_headers(r, |s| (200..300).contains(&s), &success);
    add_headers(
        r,
        |s| s >= 400,
        &[("X-Request-Id", request_id_header()), ("Cache-Control", cache_control_header("no-store"))],
    );
    // Failures past the credentials check carry the key's quota state too.
    add_headers(r, |s| s >= 400 && s != 401, &rate_limit_headers());
    for shared in [
        Shared::BadRequest,
        Shared::Unauthorized,
        Shared::MethodNotAllowed,
        Shared::UriTooLong,
        Shared::RateLimited,
        Shared::HeadersTooLarge,
        Shared::InternalError,
        Shared::ServiceUnavailable,
    ] {
        add_shared(r, shared);
    }
    if op.request_body.is_some() {
        add_shared(r, Shared::PayloadTooLarge);
        add_shared(r, Shared::UnsupportedMediaType);
    }
    if is_get {
        add_shared(r, Shared::NotModified);
    }
}

fn finish_public(op: &mut Operation) {
    add_headers(&mut op.responses, |_| true, &[("X-Request-Id", request_id_header())]);
    for shared in [Shared::MethodNotAllowed, Shared::UriTooLong, Shared::HeadersTooLarge, Shared::InternalError] {
        add_shared(&mut op.responses, shared);
    }
}

/// The methods of a JSON path item (OpenAPI keys).
const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Every header of every response is always sent, except the quota headers and the
/// `Retry-After` of a 503 (only on the in-flight refusal): mark it `required` (utoipa cannot).
fn mark_headers_required(doc: &mut Value) {
    fn mark_except(response: &mut Value, optional: &[&str]) {
        if let Some(headers) = response.get_mut("headers").and_then(Value::as_object_mut) {
            for (name, h) in headers.iter_mut() {
                if let Some(h) = h.as_object_mut() {
                    let required = !OPTIONAL_HEADERS.contains(&name.as_str()) && !optional.contains(&name.as_str());
                    h.insert("required".into(), Value::Bool(required));
                }
            }
        }
    }
    fn mark(response: &mut Value) {
        mark_except(response, &[]);
    }
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            for (method, op) in item.iter_mut() {
                if METHODS.contains(&method.as_str()) {
                    if let Some(r) = op.get_mut("responses").and_then(Value::as_object_mut) {
                        r.values_mut().for_each(mark);
                    }
                }
            }
        }
    }
    if let Some(r) = doc.pointer_mut("/components/responses").and_then(Value::as_object_mut) {
        for (name, response) in r.iter_mut() {
            let optional: &[&str] = if name == Shared::ServiceUnavailable.name() { &["Retry-After"] } else { &[] };
            mark_except(response, optional);
        }
    }
}

/// utoipa wraps an inline schema given a `default` in a one-element `oneOf`; fold it back
/// (`{"oneOf": [{"type": "string", "enum": [...]}], "default": "x"}` → one schema) so tools and
/// readers see the type directly.
fn flatten_single_one_of(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            let single = match obj.get("oneOf") {
                Some(Value::Array(alts)) if alts.len() == 1 => alts[0].as_object().cloned(),
                _ => None,
            };
            if let Some(inner) = single.filter(|i| !i.contains_key("$ref") && i.keys().all(|k| !obj.contains_key(k))) {
                obj.remove("oneOf");
                obj.extend(inner);
            }
            for (key, child) in obj.iter_mut() {
                if key != "example" && key != "examples" {
                    flatten_single_one_of(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(flatten_single_one_of),
        _ => {}
    }
}

fn is_nullable(schema: &Value) -> bool {
    let null_type = |s: &Value| match s.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    };
    null_type(schema)
        || ["oneOf", "anyOf"]
            .iter()
            .any(|k| schema.get(*k).and_then(Value::as_array).is_some_and(|alts| alts.iter().any(null_type)))
}

/// A nullable field is rendered as `null`, never left out (except [`ABSENT_WHEN_NULL`]): list
/// it in `required` so clients and schema validators know it is always there.
fn require_nullable_fields(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            if let Some(Value::Object(props)) = obj.get("properties") {
                let names: Vec<String> = props
                    .iter()
                    .filter(|(name, schema)| !ABSENT_WHEN_NULL.contains(&name.as_str()) && is_nullable(schema))
                    .map(|(name, _)| name.clone())
                    .collect();
                if !names.is_empty() {
                    let required = obj.entry("required").or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(list) = required {
                        for name in names {
                            if !list.iter().any(|r| r == &Value::String(name.clone())) {
                                list.push(Value::String(name));
                            }
                        }
                    }
                }
            }
            for (key, child) in obj.iter_mut() {
                // Examples are data, not schemas.
                if key != "example" && key != "examples" {
                    require_nullable_fields(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(require_nullable_fields),
        _ => {}
    }
}

/// Sample-based examples: every `vehicle_id` parameter and the body of `POST /compare`.
fn add_sample_examples(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else { return };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for (method, op) in item.iter_mut() {
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            if let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) {
                for p in params.iter_mut().filter_map(Value::as_object_mut) {
                    if p.get("name").and_then(Value::as_str) == Some("vehicle_id") && !p.contains_key("example") {
                        p.insert("example".into(), Value::String(SAMPLE_VEHICLE_ID.into()));
                    }
                }
            }
            if path == "/compare" && method == "post" {
                if let Some(content) =
                    op.pointer_mut("/requestBody/content/application~1json").and_then(Value::as_object_mut)
                {
                    content.entry("example").or_insert_with(|| json!({ "vehicle_ids": SAMPLE_COMPARE_IDS }));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    use super::*;
    use crate::engine::store::Store;
    use crate::process::keys::{hash_secret, Credentials};

    /// Every operation of the interface spec, plus the electric-range ranking of the contract.
    const SPEC_OPERATIONS: &[(&str, &str)] = &[
        ("get", "/catalog/vehicles"),
        ("get", "/rankings/custom"),
        ("get", "/rankings/by-category"),
        ("get", "/rankings/by-fuel"),
        ("get", "/rankings/by-brand"),
        ("get", "/rankings/by-year"),
        ("get", "/rankings/most-economical"),
        ("get", "/rankings/lowest-co2"),
        ("get", "/rankings/longest-electric-range"),
        ("get", "/rankings/overview"),
        ("get", "/insights/summary"),
        ("get", "/insights/efficiency"),
        ("get", "/insights/eco-scores"),
        ("get", "/insights/emissions"),
        ("get", "/aggregations/by-brand"),
        ("get", "/vehicles/{vehicle_id}/summary"),
        ("get", "/vehicles/{vehicle_id}/eco-score"),
        ("get", "/vehicles/{vehicle_id}/ranking-positions"),
        ("get", "/vehicles/{vehicle_id}/compare-similar"),
        ("get", "/vehicles/{vehicle_id}/best-alternative"),
        ("post", "/compare"),
    ];

    /// The document exactly as `app()` serves it.
    fn served() -> Value {
        let (_, doc) = OpenApiRouter::with_openapi(base()).merge(crate::http::routes::api_router()).split_for_parts();
        to_json(&finish(doc))
    }

    fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
        let mut out = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                if METHODS.contains(&method.as_str()) {
                    out.push((method.clone(), path.clone(), op));
                }
            }
        }
        out
    }

    /// A response of an operation, following a `$ref` to `components.responses`.
    fn response<'a>(doc: &'a Value, op: &'a Value, status: &str) -> Option<&'a Value> {
        let r = op["responses"].get(status)?;
        match r.get("$ref").and_then(Value::as_str) {
            Some(reference) => doc.pointer(reference.trim_start_matches('#')),
            None => Some(r),
        }
    }

    #[test]
    fn is_openapi_3_1_with_the_methodology() {
        let doc = served();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        let description = doc["info"]["description"].as_str().unwrap();
        for needle in [
            "half to even",
            "0.45",
            "Excelente",
            "custo_anual_estimado",
            "percentil",
            "score_geral_final",
            "If-None-Match",
            "X-Request-Id",
            "X-Dataset-Version",
            "`null`",
        ] {
            assert!(description.contains(needle), "description lacks {needle}");
        }
    }

    #[test]
    fn every_spec_operation_is_documented() {
        let doc = served();
        let ops = operations(&doc);
        for (method, path) in SPEC_OPERATIONS {
            assert!(
                ops.iter().any(|(m, p, _)| m == method && p == path),
                "{} {path} is missing from the document",
                method.to_uppercase()
            );
        }
        for path in PUBLIC_PATHS {
            assert!(doc["paths"][path]["get"].is_object(), "GET {path} is missing");
        }
    }

    #[test]
    fn api_operations_require_both_keys_and_list_the_shared_failures() {
        let doc = served();
        let schemes = &doc["components"]["securitySchemes"];
        assert_eq!(
            schemes[API_KEY_SCHEME],
            json!({"type": "apiKey", "in": "header", "name": "X-API-Key", "description": schemes[API_KEY_SCHEME]["description"]})
        );
        assert_eq!(schemes[API_SECRET_SCHEME]["name"], "X-API-Secret");
        for (method, path, op) in operations(&doc) {
            let label = format!("{} {path}", method.to_uppercase());
            if PUBLIC_PATHS.contains(&path.as_str()) {
                assert!(op.get("security").is_none(), "{label} must not need credentials");
                continue;
            }
            assert_eq!(op["security"], json!([{API_KEY_SCHEME: [], API_SECRET_SCHEME: []}]), "{label}");
            for status in ["200", "400", "401", "405", "414", "429", "431", "500", "503"] {
                let r = response(&doc, op, status).unwrap_or_else(|| panic!("{label} lacks {status}"));
                assert_eq!(r["headers"]["X-Request-Id"]["required"], true, "{label} {status}");
                if status != "200" {
                    assert_eq!(
                        r["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/Failure",
                        "{label} {status}"
                    );
                }
            }
            let limited = response(&doc, op, "429").unwrap();
            assert_eq!(limited["headers"]["Retry-After"]["required"], true);
            let unavailable = response(&doc, op, "503").unwrap();
            assert_eq!(unavailable["headers"]["Retry-After"]["required"], false, "{label}");
            assert_eq!(unavailable["headers"]["Retry-After"]["schema"]["type"], "integer", "{label}");
            assert_eq!(limited["headers"]["Retry-After"]["schema"]["type"], "integer");
            let ok = response(&doc, op, "200").unwrap();
            assert_eq!(ok["headers"]["X-Dataset-Version"]["required"], true, "{label}");
            // Only keys with a quota get the RateLimit headers; unknown keys never do.
            for r in [ok, limited, response(&doc, op, "400").unwrap()] {
                for name in OPTIONAL_HEADERS {
                    assert_eq!(r["headers"][name]["required"], false, "{label} {name}");
                    assert_eq!(r["headers"][name]["schema"]["type"], "integer", "{label} {name}");
                }
            }
            assert!(response(&doc, op, "401").unwrap()["headers"].get("RateLimit-Limit").is_none());
            if method == "get" {
                assert!(response(&doc, op, "304").is_some(), "{label} lacks 304");
                assert_eq!(ok["headers"]["ETag"]["required"], true, "{label}");
            }
            if path.starts_with("/vehicles/") {
                assert!(response(&doc, op, "404").is_some(), "{label} lacks 404");
                let id = op["parameters"].as_array().unwrap().iter().find(|p| p["name"] == "vehicle_id").unwrap();
                assert_eq!(id["in"], "path");
                assert_eq!(id["required"], true);
                assert_eq!(id["schema"]["format"], "uuid", "{label}");
                assert_eq!(id["example"], SAMPLE_VEHICLE_ID, "{label}");
            }
        }
        let readyz = &doc["paths"]["/readyz"]["get"];
        let not_ready = response(&doc, readyz, "503").unwrap();
        assert_eq!(not_ready["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/NotReady");
        let schema = &doc["components"]["schemas"]["NotReady"];
        for member in ["success", "error", "last_reload"] {
            assert!(schema["properties"].get(member).is_some(), "NotReady lacks {member}");
        }
        let compare = &doc["paths"]["/compare"]["post"];
        for status in ["413", "415"] {
            assert!(response(&doc, compare, status).is_some(), "POST /compare lacks {status}");
        }
        let body = &compare["requestBody"]["content"]["application/json"];
        assert!(body["schema"].is_object());
        assert_eq!(body["example"], json!({ "vehicle_ids": SAMPLE_COMPARE_IDS }));
    }

    #[test]
    fn parameters_carry_type_bounds_enum_and_default() {
        let doc = served();
        for (method, path, op) in operations(&doc) {
            for p in op.get("parameters").and_then(Value::as_array).into_iter().flatten() {
                let label = format!("{} {path} {}", method.to_uppercase(), p["name"]);
                let schema = &p["schema"];
                assert!(schema.get("type").is_some() || schema.get("$ref").is_some(), "{label} has no type");
                let bounds = |min: i64, max: Option<i64>| {
                    assert_eq!(schema["minimum"], json!(min), "{label}");
                    if let Some(max) = max {
                        assert_eq!(schema["maximum"], json!(max), "{label}");
                    }
                };
                match p["name"].as_str().unwrap() {
                    "ano" | "ano_min" | "ano_max" => bounds(1900, Some(2100)),
                    "page" => {
                        bounds(1, None);
                        assert_eq!(schema["default"], 1, "{label}");
                    }
                    "page_size" => {
                        bounds(1, Some(100));
                        assert_eq!(schema["default"], 20, "{label}");
                    }
                    "top" if path.ends_with("/compare-similar") => {
                        bounds(1, Some(20));
                        assert_eq!(schema["default"], 5, "{label}");
                    }
                    "top" => {
                        bounds(1, Some(100));
                        let default = if path == "/rankings/custom" { 10 } else { 5 };
                        assert_eq!(schema["default"], default, "{label}");
                    }
                    "metric" => {
                        let values = schema["enum"].as_array().unwrap_or_else(|| panic!("{label} has no enum"));
                        let mut values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
                        values.sort_unstable();
                        assert_eq!(values, ["autonomia", "co2", "consumo", "eco_score", "eficiencia"], "{label}");
                        assert_eq!(schema["default"], "eco_score", "{label}");
                    }
                    "order" => {
                        let values = schema["enum"].as_array().unwrap_or_else(|| panic!("{label} has no enum"));
                        assert_eq!(values.len(), 2, "{label}");
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn nullable_fields_are_required_and_headers_are_required() {
        let mut v = json!({"properties": {
            "a": {"type": ["string", "null"]},
            "b": {"oneOf": [{"type": "null"}, {"$ref": "#/x"}]},
            "c": {"type": "string"},
            "pagination": {"type": ["object", "null"]},
            "nested": {"type": "object", "properties": {"d": {"type": ["number", "null"]}}}
        }, "required": ["c"]});
        require_nullable_fields(&mut v);
        assert_eq!(v["required"], json!(["c", "a", "b"]));
        let mut w = json!({"oneOf": [{"type": "string", "enum": ["a", "b"]}], "default": "a"});
        flatten_single_one_of(&mut w);
        assert_eq!(w, json!({"type": "string", "enum": ["a", "b"], "default": "a"}));
        assert_eq!(v["properties"]["nested"]["required"], json!(["d"]));
        let doc = served();
        let meta = &doc["components"]["schemas"]["Meta"];
        let required: Vec<&str> = meta["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(!required.contains(&"filters_applied") && !required.contains(&"pagination"));
    }

    #[test]
    fn gzip_is_negotiated() {
        let h = |v: &'static str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(v));
            m
        };
        assert!(accepts_gzip(&h("gzip, deflate, br")));
        assert!(accepts_gzip(&h("br;q=1.0, gzip;q=0.8")));
        assert!(accepts_gzip(&h("*")));
        assert!(!accepts_gzip(&h("gzip;q=0")));
        assert!(!accepts_gzip(&h("br, identity")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    fn app() -> axum::Router {
        let creds = format!(
            r#"{{"credentials":[{{"key":"demo-key","name":"demo","secret_sha256":"{}"}}]}}"#,
            hex::encode(hash_secret("demo-secret"))
        );
        let state = AppState::new(Arc::new(Store::new(None)), Credentials::parse(&creds).unwrap());
        crate::http::app(state)
    }

    async fn get(uri: &str, headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, Bytes) {
        let mut req = Request::get(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let res = app().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
        let (parts, body) = res.into_parts();
        (parts.status, parts.headers, axum::body::to_bytes(body, usize::MAX).await.unwrap())
    }

    #[tokio::test]
    async fn the_explorer_needs_no_credentials_and_is_one_shell_under_a_strict_policy() {
        let (status, headers, shell) = get("/explore", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
        let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe") && csp.contains("frame-ancestors 'none'"));
        let tag = headers[header::ETAG].to_str().unwrap().to_string();
        for path in ["/explore/", "/explore/vehicles/x", "/explore/sql?sql=select%201", "/explore/insights?marca=fiat"]
        {
            let (status, headers, body) = get(path, &[]).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            assert_eq!(body, shell, "{path}");
            assert_eq!(headers[header::CONTENT_SECURITY_POLICY], csp, "{path}");
        }
        assert_eq!(get("/explore", &[("if-none-match", tag.as_str())]).await.0, StatusCode::NOT_MODIFIED);
        for (path, kind) in [
            (crate::http::explore::SCRIPT_PATH, "text/javascript; charset=utf-8"),
            (crate::http::explore::STYLE_PATH, "text/css; charset=utf-8"),
        ] {
            let (status, headers, body) = get(path, &[]).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            assert_eq!(headers[header::CONTENT_TYPE], kind, "{path}");
            assert!(!body.is_empty() && headers.contains_key(header::ETAG), "{path}");
        }
        assert_eq!(get("/explorex", &[]).await.0, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn docs_and_document_need_no_credentials_and_fetch_nothing_external() {
        let (status, headers, body) = get("/docs", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
        assert!(headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("default-src 'none'"));
        let html = std::str::from_utf8(&body).unwrap();
        assert!(html.contains(r#"src="docs/rapidoc-min.js""#) && html.contains(r#"spec-url="openapi.json""#));
        assert!(html.contains(r#"load-fonts="false""#));
        for external in ["http:", "https:", "//fonts", "@import", "url("] {
            assert!(!html.contains(external), "the docs page references {external}");
        }

        let (status, headers, body) = get("/docs/rapidoc-min.js", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "text/javascript; charset=utf-8");
        assert!(headers.get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body.len(), RAPIDOC_JS.len());
        let (_, headers, body) = get("/docs/rapidoc-min.js", &[("accept-encoding", "gzip")]).await;
        assert_eq!(headers[header::CONTENT_ENCODING], "gzip");
        assert_eq!(body.len(), RAPIDOC_JS_GZ.len());

        let (status, headers, body) = get("/openapi.json", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        let doc: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(doc, served());

        assert_eq!(get("/healthz", &[]).await.0, StatusCode::OK);
        assert_eq!(get("/readyz", &[]).await.0, StatusCode::SERVICE_UNAVAILABLE);
        // The API itself is behind credentials, and with them (no dataset loaded) answers 503.
        assert_eq!(get("/catalog/vehicles", &[]).await.0, StatusCode::UNAUTHORIZED);
        let creds = [("x-api-key", "demo-key"), ("x-api-secret", "demo-secret")];
        assert_eq!(get("/catalog/vehicles", &creds).await.0, StatusCode::SERVICE_UNAVAILABLE);
    }
}
