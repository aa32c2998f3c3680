//! The one rounding rule of every published number (API-CONTRACT §2): half to even (ABNT NBR
//! 5891), decided on the decimal value so binary floating point never decides a tie.
//!
//! A value is first brought to [`GUARD_DECIMALS`] more decimals than it is published with (which
//! removes the noise of binary arithmetic: 39.349999999 and 39.350000001 both become 39.35), then
//! rounded half to even in integer arithmetic: 39.35 → 39.4, 43.25 → 43.2, 2.135 → 2.14.
//!
//! The same function serves the Rust code ([`round_published`], [`published`],
//! [`published_mean`]) and the SQL views, where it is registered as
//! `ROUND_PUBLISHED(value, decimals)` ([`sql_functions`]).

use std::collections::HashMap;
use std::sync::Arc;

use polars::prelude::*;
use polars::sql::{FunctionOptions, FunctionRegistry};

/// Decimals kept beyond the published precision before the tie is decided.
pub const GUARD_DECIMALS: u32 = 6;

/// Name of the SQL function (case-insensitive in SQL).
pub const SQL_FUNCTION: &str = "round_published";

/// Largest magnitude (after scaling) handled in integer arithmetic; beyond it a double has no
/// fractional digits left at the guard precision anyway.
const MAX_SCALED: f64 = 9.0e15;

fn pow10(n: u32) -> f64 {
    // Powers of ten up to 1e22 are exact in a double.
    const P: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
        1e20, 1e21, 1e22,
    ];
    P[n.min(22) as usize]
}

/// `x` rounded half to even at `decimals` decimals, the tie decided on the decimal value.
/// Non-finite values are returned unchanged (the loader refuses them before any formula runs).
pub fn round_published(x: f64, decimals: u32) -> f64 {
    let decimals = decimals.min(8);
    if !x.is_finite() {
        return x;
    }
    let scaled = x * pow10(decimals + GUARD_DECIMALS);
    if scaled.abs() >= MAX_SCALED {
        let m = pow10(decimals);
        return (x * m).round_ties_even() / m;
    }
    // The value at the guard precision, as an integer count of 10^-(decimals + GUARD) units.
    let n = scaled.round_ties_even() as i64;
    let step = 10i64.pow(GUARD_DECIMALS);
    let (mut q, r) = (n.div_euclid(step), n.rem_euclid(step));
    let half = step / 2;
    if r > half || (r == half && q % 2 != 0) {
        q += 1;
    }
    // Both operands are exact integers, so the quotient is the double nearest the decimal.
    let out = q as f64 / pow10(decimals);
    if out == 0.0 {
        0.0
    } else {
        out
    }
}

/// An expression rounding `e` (cast to Float64) with [`round_published`].
pub fn published(e: Expr, decimals: u32) -> Expr {
    e.cast(DataType::Float64)
        .map(move |c| round_column(&c, decimals), |_, field| Ok(Field::new(field.name().clone(), DataType::Float64)))
}

/// The mean of a published value, nulls ignored, published at `decimals` (`[casas] metricas`:
/// 2 as shipped; null when there is no value): every average the API serves.
pub fn published_mean(e: Expr, decimals: u32) -> Expr {
    published(e.cast(DataType::Float64).mean(), decimals)
}

fn round_column(c: &Column, decimals: u32) -> PolarsResult<Column> {
    let c = c.cast(&DataType::Float64)?;
    let ca = c.f64()?;
    Ok(ca.apply_values(|v| round_published(v, decimals)).into_column())
}

/// The SQL functions the views may call: `ROUND_PUBLISHED(value, decimals)`.
pub fn sql_functions() -> Arc<dyn FunctionRegistry> {
    let udf = UserDefinedFunction::new(
        SQL_FUNCTION.into(),
        BaseColumnUdf::new(
            |cols: &mut [Column]| {
                polars_ensure!(
                    cols.len() == 2,
                    InvalidOperation: "ROUND_PUBLISHED takes two arguments: a value and the number of decimals"
                );
                let decimals = cols[1].cast(&DataType::Int64)?;
                let decimals = decimals.i64()?.get(0);
                let decimals = match decimals {
                    Some(d) if (0..=8).contains(&d) => d as u32,
                    _ => polars_bail!(InvalidOperation: "ROUND_PUBLISHED: decimals must be a constant from 0 to 8"),
                };
                let out = round_column(&cols[0], decimals)?;
                Ok(out.with_name(cols[0].name().clone()))
            },
            |_: &Schema, fields: &[Field]| {
                let name = fields.first().map(|f| f.name().clone()).unwrap_or_else(|| SQL_FUNCTION.into());
                Ok(Field::new(name, DataType::Float64))
            },
        ),
    );
    let mut udf = udf;
    udf.options = FunctionOptions::elementwise();
    let mut functions = HashMap::new();
    functions.insert(SQL_FUNCTION.to_string(), udf);
    Arc::new(Functions { functions })
}

struct Functions {
    functions: HashMap<String, UserDefinedFunction>,
}

impl FunctionRegistry for Functions {
    fn register(&mut self, name: &str, fun: UserDefinedFunction) -> PolarsResult<()> {
        self.functions.insert(name.to_lowercase(), fun);
        Ok(())
    }

    fn get_udf(&self, name: &str) -> PolarsResult<Option<UserDefinedFunction>> {
        Ok(self.functions.get(&name.to_lowercase()).cloned())
    }

    fn contains(&self, name: &str) -> bool {
        self.functions.contains_key(&name.to_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_are_decided_on_the_decimal_value() {
        // The contract's cases, reached exactly and through float noise.
        assert_eq!(round_published(39.35, 1), 39.4);
        assert_eq!(round_published(39.349999999, 1), 39.4);
        assert_eq!(round_published(43.25, 1), 43.2);
        assert_eq!(round_published(43.250000001, 1), 43.2);
        assert_eq!(round_published(50.15, 1), 50.2);
        assert_eq!(round_published(2.135, 2), 2.14);
        assert_eq!(round_published(2.145, 2), 2.14);
        assert_eq!(round_published(0.125, 2), 0.12);
        assert_eq!(round_published(-2.135, 2), -2.14);
        assert_eq!(round_published(-0.001, 2), 0.0);
        assert_eq!(round_published(1.4022, 2), 1.4);
        assert_eq!(round_published(60.2375, 1), 60.2);
        assert_eq!(round_published(12.3456, 2), 12.35);
        assert_eq!(round_published(1e300, 2), 1e300);
        assert!(round_published(f64::NAN, 1).is_nan());
    }

    #[test]
    fn real_export_cases() {
        // consumo 2.052 / CO2 138 → exact 39.35; 1.71 / 117 → 50.15; 1.9152 / 132 → 43.25.
        let score = |mj: f64, co2: f64| {
            let e = (100.0 * (3.0 - mj) / 2.7).clamp(0.0, 100.0);
            let c = (100.0 * (250.0 - co2) / 250.0).clamp(0.0, 100.0);
            (0.45 * e + 0.35 * c) / 0.80
        };
        assert_eq!(round_published(score(2.052, 138.0), 1), 39.4);
        assert_eq!(round_published(score(1.71, 117.0), 1), 50.2);
        assert_eq!(round_published(score(1.9152, 132.0), 1), 43.2);
        assert_eq!(round_published(score(1.4022, 96.0), 1), 60.2);
    }

    #[test]
    fn expression_and_sql_function_agree() {
        let df = df!("x" => [Some(39.349999999), Some(43.250000001), None, Some(2.135)]).unwrap();
        let out = df.clone().lazy().select([published(col("x"), 1).alias("a")]).collect().unwrap();
        let a: Vec<Option<f64>> = out.column("a").unwrap().f64().unwrap().iter().collect();
        assert_eq!(a, vec![Some(39.4), Some(43.2), None, Some(2.1)]);

        let mut ctx = polars::sql::SQLContext::new().with_function_registry(sql_functions());
        ctx.register("t", df.lazy());
        let out = ctx.execute("SELECT ROUND_PUBLISHED(x, 2) AS b FROM t").unwrap().collect().unwrap();
        let b: Vec<Option<f64>> = out.column("b").unwrap().f64().unwrap().iter().collect();
        assert_eq!(b, vec![Some(39.35), Some(43.25), None, Some(2.14)]);

        let g = df!("k" => ["a", "a", "b"], "v" => [1.0, 1.25, 2.0]).unwrap();
        let out = g
            .lazy()
            .group_by([col("k")])
            .agg([published_mean(col("v"), 2).alias("m")])
            .sort(["k"], Default::default())
            .collect()
            .unwrap();
        let m: Vec<Option<f64>> = out.column("m").unwrap().f64().unwrap().iter().collect();
        assert_eq!(m, vec![Some(1.12), Some(2.0)]);
    }
}
