//! Per-vehicle endpoints: `GET /vehicles/{vehicle_id}/summary`, `/eco-score`,
//! `/ranking-positions`, `/compare-similar` and `/best-alternative`.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use serde_json::{Map, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::engine::vehicles::{self, SIMILAR_DEFAULT, SIMILAR_MAX};
use crate::http::contract::envelope::{Ctx, Envelope, Items, Reply};
use crate::http::contract::error::ApiError;
use crate::http::contract::params::QueryParams;
use crate::http::contract::profile::{profile, ProfileQuery, PROFILE};
use crate::http::contract::state::AppState;
use crate::http::formats::encode;
use crate::http::formats::{self, tabular};
use crate::http::wire::methodology::PerfilCusto;
use crate::http::wire::rankings::RankingItem;
use crate::http::wire::vehicles::{RankingPositions, VehicleEcoScore, VehicleSummary};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(vehicle_summary))
        .routes(routes!(vehicle_eco_score))
        .routes(routes!(vehicle_ranking_positions))
        .routes(routes!(compare_similar))
        .routes(routes!(best_alternative))
}

/// `top` of compare-similar, as a documented parameter (parsed by `params::QueryParams`).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct SimilarQuery {
    /// How many similar vehicles to return.
    #[param(minimum = 1, maximum = 20, default = 5)]
    top: Option<i64>,
}

/// The path's vehicle id, parsed here so a bad one answers VALIDATION_ERROR in the envelope.
fn vehicle_id(path: Result<Path<String>, PathRejection>) -> Result<Uuid, ApiError> {
    path.ok()
        .and_then(|Path(raw)| Uuid::parse_str(&raw).ok())
        .ok_or_else(|| ApiError::validation("Parâmetro 'vehicle_id' deve ser um UUID válido"))
}

/// The query parameters, rejecting any outside `allowed`.
fn query_params(query: Option<String>, allowed: &[&str]) -> Result<QueryParams, ApiError> {
    QueryParams::parse(query.as_deref(), &[allowed])
}

fn not_found(id: &Uuid) -> ApiError {
    ApiError::NotFound(format!("Veículo '{id}' não encontrado"))
}

/// `meta.filters_applied` of the per-vehicle rankings.
fn applied(id: &Uuid, top: Option<u32>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("vehicle_id".into(), Value::String(id.to_string()));
    if let Some(top) = top {
        m.insert("top".into(), Value::from(top));
    }
    m
}

/// Every catalog field, the consumption metrics and the emissions of one vehicle.
///
/// `summary.veiculo` holds the catalog fields, `summary.consumo` the efficiency columns,
/// eficiencia_media_referencia, consumo_energetico_mj_km, autonomia_km and custo_anual_estimado
/// (R$/year), `summary.emissoes` the pollutants and the PBE classes. Missing values are null.
///
/// Driving profile: `km_ano` (1–200,000) and `preco_gasolina`, `preco_etanol`, `preco_diesel`,
/// `preco_gnv`, `preco_kwh` (> 0 and ≤ 100) recompute custo_anual_estimado with the same formula
/// (the SQL views); a parameter not given keeps the server's value. `meta.perfil_custo` always
/// holds the effective profile (the server's configuration when no parameter is given). Only the
/// cost depends on it; the eco score does not. No other query parameter is accepted.
#[utoipa::path(
    get,
    path = "/vehicles/{vehicle_id}/summary",
    tag = "vehicles",
    params(("vehicle_id" = Uuid, Path, description = "Id of the vehicle"), ProfileQuery),
    responses(
        (status = 200, description = "The vehicle's summary", body = Envelope<VehicleSummary>),
        (status = 400, description = "vehicle_id is not a UUID, an invalid driving-profile value, or an unknown query parameter", body = crate::http::contract::error::Failure),
        (status = 404, description = "No vehicle has this id", body = crate::http::contract::error::Failure),
    )
)]
pub async fn vehicle_summary(
    ctx: Ctx,
    path: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Result<Reply<VehicleSummary>, ApiError> {
    let id = vehicle_id(path)?;
    let params = query_params(query, PROFILE)?;
    let base = ctx.snapshot.info.views.cost.clone();
    let requested = profile(&params, &base)?;
    let effective = PerfilCusto::from(requested.as_ref().unwrap_or(&base));
    let found = ctx
        .run(move |s| {
            let Some(mut v) = s.vehicle(&id) else { return Ok(None) };
            if let Some(cost) = requested {
                crate::engine::profile::apply(s, std::slice::from_mut(&mut v), &cost)?;
            }
            Ok(Some(VehicleSummary::from(&v)))
        })
        .await?;
    Ok(ctx.reply(found.ok_or_else(|| not_found(&id))?, None, None).with_cost_profile(effective))
}

/// The eco score of one vehicle, its band and the view that computes it.
///
/// `eco_score` and `faixa` are null when the vehicle has no score. `source` is always
/// "vw_eco_score". No query parameter is accepted.
#[utoipa::path(
    get,
    path = "/vehicles/{vehicle_id}/eco-score",
    tag = "vehicles",
    params(("vehicle_id" = Uuid, Path, description = "Id of the vehicle")),
    responses(
        (status = 200, description = "The vehicle's eco score", body = Envelope<VehicleEcoScore>),
        (status = 400, description = "vehicle_id is not a UUID, or a query parameter was given", body = crate::http::contract::error::Failure),
        (status = 404, description = "No vehicle has this id", body = crate::http::contract::error::Failure),
    )
)]
pub async fn vehicle_eco_score(
    ctx: Ctx,
    path: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Result<Reply<VehicleEcoScore>, ApiError> {
    let id = vehicle_id(path)?;
    query_params(query, &[])?;
    let found = ctx.run(move |s| Ok(s.vehicle(&id).as_ref().map(VehicleEcoScore::from))).await?;
    Ok(ctx.reply(found.ok_or_else(|| not_found(&id))?, None, None))
}

/// Positions of one vehicle by eco score: overall, in its categoria and in its combustivel_tipo.
///
/// Best = 1; ties share the lowest position (1, 2, 2, 4). percentil = 100 × (N − global) /
/// (N − 1) over the N scored vehicles (100 when N = 1), one decimal. Every field but vehicleId
/// is null when the vehicle has no score. No query parameter is accepted.
#[utoipa::path(
    get,
    path = "/vehicles/{vehicle_id}/ranking-positions",
    tag = "vehicles",
    params(("vehicle_id" = Uuid, Path, description = "Id of the vehicle")),
    responses(
        (status = 200, description = "The vehicle's positions", body = Envelope<RankingPositions>),
        (status = 400, description = "vehicle_id is not a UUID, or a query parameter was given", body = crate::http::contract::error::Failure),
        (status = 404, description = "No vehicle has this id", body = crate::http::contract::error::Failure),
    )
)]
pub async fn vehicle_ranking_positions(
    ctx: Ctx,
    path: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Result<Reply<RankingPositions>, ApiError> {
    let id = vehicle_id(path)?;
    query_params(query, &[])?;
    let found = ctx.run(move |s| Ok(s.vehicle(&id).as_ref().map(RankingPositions::from))).await?;
    Ok(ctx.reply(found.ok_or_else(|| not_found(&id))?, None, None))
}

/// The vehicles most similar to a base vehicle.
///
/// Other vehicles of the base's categoria that have an eco score, ordered by |Δ ecoScore|
/// ascending, then |Δ ano|, then id (when the base has no score: by |Δ ano|, then id). The base
/// is never included; an empty list when it is alone in its categoria.
/// `meta.filters_applied` = {vehicle_id, top}.
#[utoipa::path(
    get,
    path = "/vehicles/{vehicle_id}/compare-similar",
    tag = "vehicles",
    params(("vehicle_id" = Uuid, Path, description = "Id of the base vehicle"), SimilarQuery),
    responses(
        (status = 200, description = "Similar vehicles, most similar first", body = Envelope<Items<RankingItem>>),
        (status = 400, description = "vehicle_id is not a UUID, or an invalid or unknown query parameter", body = crate::http::contract::error::Failure),
        (status = 404, description = "No vehicle has this id", body = crate::http::contract::error::Failure),
    )
)]
pub async fn compare_similar(
    ctx: Ctx,
    uri: Uri,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let id = vehicle_id(path)?;
    let params = query_params(query, &["top", formats::PARAM[0]])?;
    let format = formats::negotiate(&params, &headers, formats::LIST)?;
    let top = params.int("top", 1, SIMILAR_MAX as i64)?.map_or(SIMILAR_DEFAULT, |t| t as u32);
    let found = ctx
        .run(move |s| match vehicles::similar(s, &id, top)? {
            Some(rows) => Ok(Some((tabular::table_rows(s, &rows, encode::RANKING_ITEM, format)?, rows.len()))),
            None => Ok(None),
        })
        .await?;
    let (data, total) = found.ok_or_else(|| not_found(&id))?;
    Ok(formats::list_reply(&ctx, &uri, format, data, Some(applied(&id, Some(top))), None, total))
}

/// The best alternative to a base vehicle, or null when none is better.
///
/// The vehicle of the base's categoria with the highest eco score strictly above the base's
/// (when the base has no score: the best-scored one); ties by higher
/// eficienciaMediaReferencia, then id. `data.data` is null when no vehicle is better.
/// `meta.filters_applied` = {vehicle_id}.
#[utoipa::path(
    get,
    path = "/vehicles/{vehicle_id}/best-alternative",
    tag = "vehicles",
    params(("vehicle_id" = Uuid, Path, description = "Id of the base vehicle")),
    responses(
        (status = 200, description = "The best alternative (data.data null when none is better)", body = Envelope<Option<RankingItem>>),
        (status = 400, description = "vehicle_id is not a UUID, or a query parameter was given", body = crate::http::contract::error::Failure),
        (status = 404, description = "No vehicle has this id", body = crate::http::contract::error::Failure),
    )
)]
pub async fn best_alternative(
    ctx: Ctx,
    path: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Result<Reply<Option<RankingItem>>, ApiError> {
    let id = vehicle_id(path)?;
    query_params(query, &[])?;
    let found = ctx
        .run(move |s| Ok(vehicles::best_alternative(s, &id)?.map(|best| best.as_ref().map(RankingItem::from))))
        .await?;
    let best = found.ok_or_else(|| not_found(&id))?;
    Ok(ctx.reply(best, Some(applied(&id, None)), None))
}
