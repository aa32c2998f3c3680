//! The query parameters shared by many operations, as the OpenAPI document describes them
//! (parsed by `params::QueryParams`; these types exist only for the document).

/// The common filters, as documented parameters (parsed by `params::QueryParams`).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct FilterQuery {
    /// Brand: case- and accent-insensitive literal substring (no wildcard or regex meaning).
    #[param(
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]",
        example = "Fiat"
    )]
    marca: Option<String>,
    /// Model: case- and accent-insensitive literal substring.
    #[param(
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    modelo: Option<String>,
    /// Category: case- and accent-insensitive literal substring.
    #[param(
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    categoria: Option<String>,
    /// Fuel type (`combustivel_tipo`): case- and accent-insensitive literal substring
    /// (`eletrico` finds "Elétrico").
    #[param(
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]",
        example = "flex"
    )]
    combustivel: Option<String>,
    /// Propulsion type (`tipo_propulsao`): case- and accent-insensitive literal substring.
    #[param(
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    propulsao: Option<String>,
    /// Transmission type (`transmissao_tipo`): case- and accent-insensitive literal substring.
    #[param(
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    transmissao: Option<String>,
    /// Exact model year; same as ano_min = ano_max = ano, and cannot be combined with them.
    #[param(minimum = 1900, maximum = 2100)]
    ano: Option<i32>,
    /// Minimum model year (inclusive); not greater than ano_max; not with ano.
    #[param(minimum = 1900, maximum = 2100, example = 2020)]
    ano_min: Option<i32>,
    /// Maximum model year (inclusive); not with ano.
    #[param(minimum = 1900, maximum = 2100)]
    ano_max: Option<i32>,
    /// Lower bound (inclusive) of the published eco score (ecoScore, 0–100, one decimal); a vehicle without the value is left out.
    /// A finite number, not greater than eco_score_max.
    #[param(value_type = Option<f64>, example = 70.0)]
    eco_score_min: Option<f64>,
    /// Upper bound (inclusive) of the published eco score (ecoScore, 0–100, one decimal); a vehicle without the value is left out.
    #[param(value_type = Option<f64>)]
    eco_score_max: Option<f64>,
    /// Lower bound (inclusive) of the published consumo_referencia (MJ/km); a vehicle without the value is left out.
    /// A finite number, not greater than consumo_max.
    #[param(value_type = Option<f64>)]
    consumo_min: Option<f64>,
    /// Upper bound (inclusive) of the published consumo_referencia (MJ/km); a vehicle without the value is left out.
    #[param(value_type = Option<f64>)]
    consumo_max: Option<f64>,
    /// Lower bound (inclusive) of the published co2_referencia_g_km (g/km); a vehicle without the value is left out.
    /// A finite number, not greater than co2_max.
    #[param(value_type = Option<f64>)]
    co2_min: Option<f64>,
    /// Upper bound (inclusive) of the published co2_referencia_g_km (g/km); a vehicle without the value is left out.
    #[param(value_type = Option<f64>, example = 120.0)]
    co2_max: Option<f64>,
    /// Lower bound (inclusive) of the published autonomia_km (km); a vehicle without the value is left out.
    /// A finite number, not greater than autonomia_max.
    #[param(value_type = Option<f64>)]
    autonomia_min: Option<f64>,
    /// Upper bound (inclusive) of the published autonomia_km (km); a vehicle without the value is left out.
    #[param(value_type = Option<f64>)]
    autonomia_max: Option<f64>,
    /// Lower bound (inclusive) of the published eficiencia_media_referencia (km/unidade); a vehicle without the value is left out.
    /// A finite number, not greater than eficiencia_max.
    #[param(value_type = Option<f64>)]
    eficiencia_min: Option<f64>,
    /// Upper bound (inclusive) of the published eficiencia_media_referencia (km/unidade); a vehicle without the value is left out.
    #[param(value_type = Option<f64>)]
    eficiencia_max: Option<f64>,
    /// Lower bound (inclusive) of the published autonomia_eletrica_km (km, published with 2 decimals); a vehicle without the value is left out.
    /// A finite number, not greater than autonomia_eletrica_max.
    #[param(value_type = Option<f64>)]
    autonomia_eletrica_min: Option<f64>,
    /// Upper bound (inclusive) of the published autonomia_eletrica_km (km, published with 2 decimals); a vehicle without the value is left out.
    #[param(value_type = Option<f64>)]
    autonomia_eletrica_max: Option<f64>,
    /// Lower bound (inclusive) of the published custo_anual_estimado (R$/ano, under the server's cost configuration); a vehicle without the value is left out.
    /// A finite number, not greater than custo_max.
    #[param(value_type = Option<f64>)]
    custo_min: Option<f64>,
    /// Upper bound (inclusive) of the published custo_anual_estimado (R$/ano, under the server's cost configuration); a vehicle without the value is left out.
    #[param(value_type = Option<f64>)]
    custo_max: Option<f64>,
}

/// Pagination parameters.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PageQuery {
    /// Page number, from 1; a page past the end answers an empty list.
    #[param(minimum = 1, maximum = 9223372036854775807_i64, default = 1)]
    page: Option<i64>,
    /// Items per page.
    #[param(minimum = 1, maximum = 100, default = 20)]
    page_size: Option<i64>,
}

/// The list query language: sort, field selection and cursors (`/catalog/vehicles`,
/// `/insights/efficiency`, `/insights/eco-scores`).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ListQuery {
    /// Order of the list: one or more fields of the items, as the items name them, separated by
    /// commas; `-` before a field for descending (e.g. `-ano,marca` or `-ecoScore`). Nulls last
    /// in either direction; the id ascending is always the last tie-breaker; text compared
    /// byte-wise. Unknown or repeated field: 400. Without it, the list's own order.
    sort: Option<String>,
    /// The fields of each item, in this order, separated by commas (also the columns of CSV,
    /// Parquet and Arrow answers). Unknown or repeated field: 400. Without it, every field.
    fields: Option<String>,
    /// `meta.pagination.next_cursor` of the previous page (or its `X-Next-Cursor` header): the
    /// page after it, at the same cost at any depth. Send the same filters and sort (page_size,
    /// fields and format may change); not with `page`. A cursor made for other filters or sort,
    /// or changed by hand: 400; made on another dataset version: 409 DATASET_CHANGED.
    cursor: Option<String>,
}

/// Field selection (`/rankings/custom`).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct FieldsQuery {
    /// The fields of each item, in this order, separated by commas (also the columns of CSV,
    /// Parquet and Arrow answers). Unknown or repeated field: 400. Without it, every field.
    #[param(example = "vehicleId,marca,ecoScore")]
    fields: Option<String>,
}
