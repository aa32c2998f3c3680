//! `POST /compare`: the strict JSON body `{"vehicle_ids": [2..4 UUIDs]}` is parsed here, with a
//! Portuguese message for every way it can be wrong, and the comparison runs in the engine.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::RawQuery;
use axum::http::{header, HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::engine::compare;
use crate::http::contract::envelope::{Ctx, Envelope, Reply};
use crate::http::contract::error::ApiError;
use crate::http::contract::params::QueryParams;
use crate::http::contract::profile::{profile, ProfileQuery, PROFILE};
use crate::http::contract::state::{AppState, MAX_BODY_BYTES};
use crate::http::wire::compare::ComparisonAnswer;
use crate::http::wire::methodology::PerfilCusto;

/// Fewest vehicles in one comparison.
pub const MIN_VEHICLES: usize = 2;
/// Most vehicles in one comparison.
pub const MAX_VEHICLES: usize = 4;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(compare_vehicles))
}

/// The body of POST /compare. Strict: no other field is accepted.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareRequest {
    /// 2 to 4 distinct vehicle ids.
    #[schema(value_type = std::collections::BTreeSet<Uuid>, min_items = 2, max_items = 4)]
    pub vehicle_ids: Vec<Value>,
}

/// True for `application/json`, with or without parameters (`; charset=utf-8`).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

/// The text between the first pair of backticks of a serde message (a field name).
fn quoted(message: &str) -> &str {
    message.split('`').nth(1).unwrap_or("")
}

/// A serde_json error as a Portuguese validation message.
fn body_error(err: &serde_json::Error) -> ApiError {
    use serde_json::error::Category;
    let (line, column) = (err.line(), err.column());
    if matches!(err.classify(), Category::Syntax | Category::Eof | Category::Io) {
        return ApiError::validation(format!(
            "Corpo da requisição não é um JSON válido (linha {line}, coluna {column})"
        ));
    }
    let text = err.to_string();
    let message = text.strip_suffix(&format!(" at line {line} column {column}")).unwrap_or(&text);
    ApiError::validation(if message.starts_with("unknown field") {
        format!("Campo '{}' não é permitido: o corpo aceita apenas 'vehicle_ids'", quoted(message))
    } else if message.starts_with("missing field") {
        "Campo 'vehicle_ids' é obrigatório".to_string()
    } else if message.starts_with("duplicate field") {
        "Campo 'vehicle_ids' informado mais de uma vez".to_string()
    } else {
        format!("Campo 'vehicle_ids' deve ser uma lista de {MIN_VEHICLES} a {MAX_VEHICLES} UUIDs")
    })
}

/// Parses and checks the body: a JSON object with exactly `vehicle_ids`, 2–4 distinct UUIDs.
pub fn parse_request(body: &[u8]) -> Result<Vec<Uuid>, ApiError> {
    // serde also reads a struct from a JSON array; only an object is accepted.
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        let err = serde_json::from_slice::<Value>(body).err();
        return Err(match err {
            Some(e) if e.is_syntax() || e.is_eof() => body_error(&e),
            _ => ApiError::validation("Corpo da requisição deve ser um objeto JSON: {\"vehicle_ids\": [...]}"),
        });
    }
    let request: CompareRequest = serde_json::from_slice(body).map_err(|e| body_error(&e))?;
    let n = request.vehicle_ids.len();
    if !(MIN_VEHICLES..=MAX_VEHICLES).contains(&n) {
        return Err(ApiError::validation(format!(
            "Campo 'vehicle_ids' deve ter de {MIN_VEHICLES} a {MAX_VEHICLES} itens (recebidos: {n})"
        )));
    }
    let mut ids: Vec<Uuid> = Vec::with_capacity(n);
    for (i, item) in request.vehicle_ids.iter().enumerate() {
        let id = item.as_str().and_then(|s| Uuid::parse_str(s).ok()).ok_or_else(|| {
            let mut shown: String = item.to_string().chars().take(60).collect();
            if shown.len() < item.to_string().len() {
                shown.push('…');
            }
            ApiError::validation(format!("Campo 'vehicle_ids[{i}]' deve ser um UUID válido (recebido: {shown})"))
        })?;
        if ids.contains(&id) {
            return Err(ApiError::validation(format!("Campo 'vehicle_ids' contém o id '{id}' repetido")));
        }
        ids.push(id);
    }
    Ok(ids)
}

/// Compares 2 to 4 vehicles.
///
/// Criteria: eco_score (max), co2_referencia_g_km (min), eficiencia_media_referencia (max),
/// autonomia_km (max), on the published values. `winner_by_criterion` lists every vehicle sharing
/// the best value (empty when none has a value); `ties` lists each criterion whose best value is
/// shared. `score_geral_final` = mean over the four criteria of the vehicle's min-max normalised
/// value among the compared vehicles (0–100, best = 100, all equal = 100, null = 0), one decimal;
/// `vencedor_geral` = highest score_geral_final, then higher eco score, then id (null when no
/// vehicle was found). Unknown ids go to `missing_data.vehicles_not_found` and the rest are still
/// compared. `vehicles` and `score_geral` follow the request order.
///
/// Requires `Content-Type: application/json` (parameters such as `charset=utf-8` allowed). The
/// body must be exactly `{"vehicle_ids": [...]}` with 2 to 4 distinct UUIDs, at most 16 KiB.
///
/// Driving profile (query string; the body stays strict): `km_ano` (1–200,000) and
/// `preco_gasolina`, `preco_etanol`, `preco_diesel`, `preco_gnv`, `preco_kwh` (> 0 and ≤ 100)
/// recompute `computed.custo_anual_estimado` with the same formula; a parameter not given keeps
/// the server's value. `meta.perfil_custo` always holds the effective profile. The cost is not a
/// criterion, so winners and scores do not depend on the profile.
#[utoipa::path(
    post,
    path = "/compare",
    tag = "compare",
    params(ProfileQuery),
    request_body(content = CompareRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The comparison", body = Envelope<ComparisonAnswer>),
        (status = 400, description = "Malformed JSON, unknown or missing field, wrong type, not 2–4 items, a non-UUID or a repeated id; an invalid driving-profile value or an unknown query parameter", body = crate::http::contract::error::Failure),
        (status = 413, description = "Body larger than 16 KiB", body = crate::http::contract::error::Failure),
        (status = 415, description = "Content-Type is not application/json", body = crate::http::contract::error::Failure),
    )
)]
pub async fn compare_vehicles(
    ctx: Ctx,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Reply<ComparisonAnswer>, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &[PROFILE])?;
    let base = ctx.snapshot.info.views.cost.clone();
    let requested = profile(&params, &base)?;
    let effective = PerfilCusto::from(requested.as_ref().unwrap_or(&base));
    if !is_json(&headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let body = body.map_err(|r| match r.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(MAX_BODY_BYTES),
        _ => ApiError::validation("Não foi possível ler o corpo da requisição"),
    })?;
    let ids = parse_request(&body)?;
    let comparison = ctx
        .run(move |s| {
            let mut c = compare::compare(s, &ids);
            if let Some(cost) = requested {
                crate::engine::profile::apply(s, &mut c.vehicles, &cost)?;
            }
            Ok(ComparisonAnswer::from(&c))
        })
        .await?;
    Ok(ctx.reply(comparison, None, None).with_cost_profile(effective))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "00000000-0000-4000-8000-000000000001";
    const B: &str = "00000000-0000-4000-8000-000000000002";

    fn message(body: &str) -> String {
        match parse_request(body.as_bytes()).unwrap_err() {
            ApiError::Validation(m) => m,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn accepts_two_to_four_distinct_uuids() {
        let ids = parse_request(format!(r#" {{"vehicle_ids": ["{A}", "{}"]}} "#, B.to_uppercase()).as_bytes()).unwrap();
        assert_eq!(ids, vec![Uuid::parse_str(A).unwrap(), Uuid::parse_str(B).unwrap()]);
    }

    #[test]
    fn every_malformed_body_names_the_problem() {
        let cases: Vec<(String, &str)> = vec![
            ("".into(), "não é um JSON válido"),
            ("{".into(), "não é um JSON válido"),
            (r#"{"vehicle_ids": ["a",]}"#.into(), "não é um JSON válido"),
            (format!(r#"{{"vehicle_ids": ["{A}", "{B}"]}} x"#), "não é um JSON válido"),
            ("[1, 2]".into(), "deve ser um objeto JSON"),
            ("\"x\"".into(), "deve ser um objeto JSON"),
            ("null".into(), "deve ser um objeto JSON"),
            ("{}".into(), "Campo 'vehicle_ids' é obrigatório"),
            (format!(r#"{{"vehicle_ids": ["{A}", "{B}"], "extra": 1}}"#), "Campo 'extra' não é permitido"),
            (format!(r#"{{"vehicle_ids": ["{A}", "{B}"], "vehicle_ids": ["{A}", "{B}"]}}"#), "mais de uma vez"),
            (r#"{"vehicle_ids": "abc"}"#.into(), "deve ser uma lista de 2 a 4 UUIDs"),
            (r#"{"vehicle_ids": null}"#.into(), "deve ser uma lista de 2 a 4 UUIDs"),
            (r#"{"vehicle_ids": {"a": 1}}"#.into(), "deve ser uma lista de 2 a 4 UUIDs"),
            (format!(r#"{{"vehicle_ids": ["{A}"]}}"#), "de 2 a 4 itens (recebidos: 1)"),
            (r#"{"vehicle_ids": []}"#.into(), "(recebidos: 0)"),
            (format!(r#"{{"vehicle_ids": ["{A}", "not-a-uuid"]}}"#), "'vehicle_ids[1]' deve ser um UUID válido"),
            (format!(r#"{{"vehicle_ids": [42, "{A}"]}}"#), "'vehicle_ids[0]' deve ser um UUID válido (recebido: 42)"),
            (format!(r#"{{"vehicle_ids": ["{A}", "{}"]}}"#, A.to_uppercase()), "repetido"),
        ];
        for (body, expected) in cases {
            let m = message(&body);
            assert!(m.contains(expected), "{body}: {m}");
        }
        let long = "x".repeat(500);
        let m = message(&format!(r#"{{"vehicle_ids": ["{A}", "{long}"]}}"#));
        assert!(m.ends_with("…)") && m.len() < 200, "{m}");
        let five = vec![format!("\"{A}\""); 5].join(",");
        assert!(message(&format!(r#"{{"vehicle_ids": [{five}]}}"#)).contains("(recebidos: 5)"));
    }

    #[test]
    fn content_type_must_be_json() {
        let mut h = HeaderMap::new();
        assert!(!is_json(&h));
        for (value, ok) in [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("Application/JSON;charset=UTF-8", true),
            ("text/plain", false),
            ("application/jsonx", false),
            ("application/x-www-form-urlencoded", false),
        ] {
            h.insert(header::CONTENT_TYPE, value.parse().unwrap());
            assert_eq!(is_json(&h), ok, "{value}");
        }
    }
}
