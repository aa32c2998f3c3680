//! The driving profile of one request (`/vehicles/{vehicle_id}/summary`, `POST /compare`):
//! `km_ano` and the prices as query parameters, each checked and naming itself when wrong. The
//! parameters a request does not give keep the server's configuration.

use crate::engine::views::CostConfig;

use crate::http::contract::error::ApiError;
use crate::http::contract::params::QueryParams;

/// The driving-profile parameters.
pub const PROFILE: &[&str] = &["km_ano", "preco_gasolina", "preco_etanol", "preco_diesel", "preco_gnv", "preco_kwh"];

/// Bounds of `km_ano` (inclusive).
pub const KM_ANO_MIN: f64 = 1.0;
pub const KM_ANO_MAX: f64 = 200_000.0;
/// Largest price (R$ per unit); a price must be greater than 0.
pub const PRECO_MAX: f64 = 100.0;

/// The driving profile as documented parameters (parsed by [`profile`]).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ProfileQuery {
    /// Kilometres per year of the annual cost (default: the server's `--km-ano`).
    #[param(minimum = 1, maximum = 200000, example = 20000)]
    km_ano: Option<f64>,
    /// Gasoline price, R$/L (default: the server's `--preco-gasolina`).
    #[param(exclusive_minimum = 0, maximum = 100)]
    preco_gasolina: Option<f64>,
    /// Ethanol price, R$/L (default: the server's `--preco-etanol`).
    #[param(exclusive_minimum = 0, maximum = 100)]
    preco_etanol: Option<f64>,
    /// Diesel price, R$/L (default: the server's `--preco-diesel`).
    #[param(exclusive_minimum = 0, maximum = 100)]
    preco_diesel: Option<f64>,
    /// Natural gas price, R$/m³ (default: the server's `--preco-gnv`).
    #[param(exclusive_minimum = 0, maximum = 100)]
    preco_gnv: Option<f64>,
    /// Electricity price, R$/kWh (default: the server's `--preco-kwh`).
    #[param(exclusive_minimum = 0, maximum = 100)]
    preco_kwh: Option<f64>,
}

/// A finite number, or VALIDATION_ERROR naming the parameter and its rule.
fn number(params: &QueryParams, name: &str, rule: &str) -> Result<Option<f64>, ApiError> {
    let Some(raw) = params.get(name) else { return Ok(None) };
    match raw.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Some(v)),
        _ => Err(ApiError::validation(format!("Parâmetro '{name}' deve ser um número {rule}"))),
    }
}

/// The effective cost configuration: `base` (the snapshot's) with the request's values, or `None`
/// when the request gives no profile parameter.
pub fn profile(params: &QueryParams, base: &CostConfig) -> Result<Option<CostConfig>, ApiError> {
    let km_rule = "entre 1 e 200000";
    let price_rule = "maior que 0 e no máximo 100";
    let mut cost = base.clone();
    let mut given = false;
    if let Some(km) = number(params, "km_ano", km_rule)? {
        if !(KM_ANO_MIN..=KM_ANO_MAX).contains(&km) {
            return Err(ApiError::validation(format!("Parâmetro 'km_ano' deve ser um número {km_rule}")));
        }
        cost.km_ano = km;
        given = true;
    }
    let prices: [(&str, &mut f64); 5] = [
        ("preco_gasolina", &mut cost.preco_gasolina),
        ("preco_etanol", &mut cost.preco_etanol),
        ("preco_diesel", &mut cost.preco_diesel),
        ("preco_gnv", &mut cost.preco_gnv),
        ("preco_kwh", &mut cost.preco_kwh),
    ];
    for (name, slot) in prices {
        if let Some(p) = number(params, name, price_rule)? {
            if p <= 0.0 || p > PRECO_MAX {
                return Err(ApiError::validation(format!("Parâmetro '{name}' deve ser um número {price_rule}")));
            }
            *slot = p;
            given = true;
        }
    }
    Ok(given.then_some(cost))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(q: &str) -> Result<Option<CostConfig>, ApiError> {
        profile(&QueryParams::parse(Some(q), &[PROFILE]).unwrap(), &CostConfig::default())
    }

    fn message(q: &str) -> String {
        match parse(q).unwrap_err() {
            ApiError::Validation(m) => m,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn values_override_the_defaults() {
        assert_eq!(parse("").unwrap(), None);
        let c = parse("km_ano=20000&preco_kwh=1.5").unwrap().unwrap();
        assert_eq!(c, CostConfig { km_ano: 20_000.0, preco_kwh: 1.5, ..CostConfig::default() });
        assert_eq!(parse("km_ano=1").unwrap().unwrap().km_ano, 1.0);
        assert_eq!(parse("km_ano=200000").unwrap().unwrap().km_ano, 200_000.0);
        assert_eq!(parse("preco_gnv=100").unwrap().unwrap().preco_gnv, 100.0);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (q, name) in [
            ("km_ano=0", "'km_ano'"),
            ("km_ano=200001", "'km_ano'"),
            ("km_ano=abc", "'km_ano'"),
            ("km_ano=NaN", "'km_ano'"),
            ("km_ano=inf", "'km_ano'"),
            ("preco_gasolina=0", "'preco_gasolina'"),
            ("preco_etanol=-1", "'preco_etanol'"),
            ("preco_diesel=100.01", "'preco_diesel'"),
            ("preco_gnv=infinity", "'preco_gnv'"),
            ("preco_kwh=1e400", "'preco_kwh'"),
        ] {
            assert!(message(q).contains(name), "{q}: {}", message(q));
        }
    }
}
