//! PostgreSQL's semantics where DataFusion's differ (API-CONTRACT §7, SQL dialect): the
//! functions PostgreSQL has and DataFusion lacks or computes otherwise, and the plan rewrite that
//! makes a cast of a fraction to an integer round as PostgreSQL does.
//!
//! - `round(x)` of a double rounds half to even (PostgreSQL's `rint`); `round(x, n)` rounds the
//!   value PostgreSQL would get from `x::numeric` (15 significant digits) half away from zero.
//!   PostgreSQL itself has no `round(double precision, integer)`: analysts write
//!   `round(x::numeric, n)`, which this answers alike.
//! - `CAST(x AS INTEGER)` (and `x::int`, every integer width) of a double rounds half to even, of
//!   a numeric (a decimal, and the `avg` of integers, which PostgreSQL computes as numeric) half
//!   away from zero; DataFusion truncates.
//! - A double cast to text is written as PostgreSQL writes it (`219`, `1e+20`), not `219.0`.
//! - `mode() WITHIN GROUP (ORDER BY x)` and `percentile_disc(f) WITHIN GROUP (ORDER BY x)`, the
//!   ordered-set aggregates DataFusion lacks.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type, Int64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{plan_err, DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{AggregateFunction, Alias, Cast, ScalarFunction};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_expr::expressions::Literal;

/// The functions and the rule, added to a session.
pub fn install(ctx: &datafusion::prelude::SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Round::new(RoundMode::Postgres)));
    ctx.register_udf(ScalarUDF::new_from_impl(Round::new(RoundMode::HalfEven)));
    ctx.register_udf(ScalarUDF::new_from_impl(Round::new(RoundMode::HalfAway)));
    ctx.register_udf(ScalarUDF::new_from_impl(FloatText::new()));
    for (name, value) in [
        ("version", VERSION),
        ("current_database", "eco"),
        ("current_schema", "public"),
        ("current_catalog", "eco"),
        ("pg_client_encoding", "UTF8"),
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(Constant::new(name, value)));
    }
    ctx.register_udaf(AggregateUDF::new_from_impl(Ordered::new(OrderedKind::Mode)));
    ctx.register_udaf(AggregateUDF::new_from_impl(Ordered::new(OrderedKind::PercentileDisc)));
    ctx.add_analyzer_rule(Arc::new(super::numeric::NumericPrecision));
    ctx.add_analyzer_rule(Arc::new(PostgresSemantics));
}

/// `x` as PostgreSQL's `x::numeric` rounded to `n` decimals half away from zero: the double is
/// first written with 15 significant digits (as PostgreSQL converts it), so binary noise never
/// decides a tie (`round(2.675::numeric, 2)` is 2.68).
pub fn round_numeric(x: f64, n: i64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let text = format!("{x:.14e}");
    let Some((mantissa, exponent)) = text.split_once('e') else { return x };
    let Ok(exponent) = exponent.parse::<i64>() else { return x };
    let negative = mantissa.starts_with('-');
    let digits: Vec<i128> = mantissa.bytes().filter(u8::is_ascii_digit).map(|b| i128::from(b - b'0')).collect();
    // Digit i has the place value 10^(exponent - i); those down to 10^-n are kept.
    let keep = exponent + n.clamp(-400, 400) + 1;
    if keep >= digits.len() as i64 {
        return x;
    }
    let sign = if negative { -1.0 } else { 1.0 };
    if keep < 0 {
        return 0.0 * sign;
    }
    let keep = keep as usize;
    let mut kept = digits[..keep].iter().fold(0i128, |a, d| a * 10 + d);
    if digits[keep] >= 5 {
        kept += 1;
    }
    format!("{}{kept}e{}", if negative { "-" } else { "" }, -n.clamp(-400, 400)).parse::<f64>().unwrap_or(x)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum RoundMode {
    /// `round(x [, n])` as analysts call it.
    Postgres,
    /// The cast of a double to an integer.
    HalfEven,
    /// The cast of a numeric to an integer.
    HalfAway,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Round {
    mode: RoundMode,
    signature: Signature,
}

impl Round {
    fn new(mode: RoundMode) -> Round {
        Round { mode, signature: Signature::user_defined(Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for Round {
    fn name(&self) -> &str {
        match self.mode {
            RoundMode::Postgres => "round",
            RoundMode::HalfEven => "round_half_even",
            RoundMode::HalfAway => "round_half_away",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let max = if self.mode == RoundMode::Postgres { 2 } else { 1 };
        if arg_types.is_empty() || arg_types.len() > max {
            return plan_err!("function {}() takes 1 or {max} arguments", self.name());
        }
        let value = match &arg_types[0] {
            t if t.is_integer() => DataType::Int64,
            // A numeric keeps its type: it rounds half away from zero, a double half to even.
            t if t.is_decimal() => t.clone(),
            t if t.is_numeric() || t.is_null() => DataType::Float64,
            t => return plan_err!("function {}({t}) does not exist", self.name()),
        };
        let mut types = vec![value];
        if let Some(t) = arg_types.get(1) {
            if !t.is_integer() && !t.is_null() {
                return plan_err!("function round(numeric, {t}) does not exist: the number of decimals is an integer");
            }
            types.push(DataType::Int64);
        }
        Ok(types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(if arg_types.first().is_some_and(|t| t.is_integer()) { DataType::Int64 } else { DataType::Float64 })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let mut arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let numeric = arrays[0].data_type().is_decimal();
        // The types `coerce_types` asks for (a call the plan rewrite adds is not coerced).
        let value_type = if arrays[0].data_type().is_integer() { DataType::Int64 } else { DataType::Float64 };
        arrays[0] = cast(&arrays[0], &value_type)?;
        if let Some(n) = arrays.get_mut(1) {
            *n = cast(n, &DataType::Int64)?;
        }
        let decimals = arrays.get(1).map(|a| a.as_primitive::<Int64Type>().clone());
        // Row i's number of decimals: `None` without a second argument, `Some(None)` when null.
        let places = |i: usize| decimals.as_ref().map(|d| if d.is_null(i) { None } else { Some(d.value(i)) });
        let result: ArrayRef = match arrays[0].data_type() {
            DataType::Int64 => Arc::new(each(arrays[0].as_primitive::<Int64Type>(), places, |v, n| match n {
                // round(1250, -2) is 1300: half away from zero at tens, hundreds…
                Some(n) if n < 0 => {
                    let unit = 10i64.checked_pow((-n).min(18) as u32).unwrap_or(i64::MAX);
                    let r = (v.abs() + unit / 2) / unit * unit;
                    if v < 0 {
                        -r
                    } else {
                        r
                    }
                }
                _ => v,
            })),
            _ => Arc::new(each(arrays[0].as_primitive::<Float64Type>(), places, |x, n| match (self.mode, n) {
                (RoundMode::Postgres, Some(n)) => round_numeric(x, n),
                (RoundMode::HalfAway, _) => round_numeric(x, 0),
                (RoundMode::Postgres, None) if numeric => round_numeric(x, 0),
                _ => x.round_ties_even(),
            })),
        };
        Ok(ColumnarValue::Array(result))
    }
}

/// `f` of every row's value and number of decimals (`places`); null where either is.
fn each<T: datafusion::arrow::datatypes::ArrowPrimitiveType>(
    values: &datafusion::arrow::array::PrimitiveArray<T>,
    places: impl Fn(usize) -> Option<Option<i64>>,
    f: impl Fn(T::Native, Option<i64>) -> T::Native,
) -> datafusion::arrow::array::PrimitiveArray<T> {
    (0..values.len())
        .map(|i| match places(i) {
            _ if values.is_null(i) => None,
            Some(None) => None,
            n => Some(f(values.value(i), n.flatten())),
        })
        .collect()
}

/// What `version()` answers: PostgreSQL's form, which clients parse for the version number.
pub const VERSION: &str = concat!(
    "PostgreSQL 16.0 (Eco Insights ",
    env!("CARGO_PKG_VERSION"),
    ", Apache DataFusion 55) on x86_64-pc-linux-gnu, 64-bit"
);

/// A function of no argument answering one text (`version()`, `current_database()`…).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Constant {
    name: &'static str,
    value: &'static str,
    signature: Signature,
}

impl Constant {
    fn new(name: &'static str, value: &'static str) -> Constant {
        Constant { name, value, signature: Signature::exact(vec![], Volatility::Stable) }
    }
}

impl ScalarUDFImpl for Constant {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(self.value.to_string()))))
    }
}

/// A double as PostgreSQL's `float8out` writes it: the shortest text that reads back as the same
/// double, in exponent form below 1e-4 and from 1e15 on (`219`, `0.1`, `1e+20`, `1.5e-05`).
pub fn float_text(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let scientific = format!("{x:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else { return format!("{x}") };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..15).contains(&exponent) {
        format!("{x}")
    } else {
        format!("{mantissa}e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs())
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatText {
    signature: Signature,
}

impl FloatText {
    fn new() -> FloatText {
        FloatText { signature: Signature::exact(vec![DataType::Float64], Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for FloatText {
    fn name(&self) -> &str {
        "float8_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let values = cast(&arrays[0], &DataType::Float64)?;
        let values = values.as_primitive::<Float64Type>();
        let text: datafusion::arrow::array::StringArray = values.iter().map(|v| v.map(float_text)).collect();
        Ok(ColumnarValue::Array(Arc::new(text)))
    }
}

/// PostgreSQL's semantics in a planned query (see the module): `CAST(x AS <integer>)` of a
/// double or a decimal rounds, and a double cast to text is written as PostgreSQL writes it. (A
/// rule here keeps every output type; what changes a type is rewritten in the syntax tree,
/// [`super::rewrite`].)
#[derive(Debug)]
struct PostgresSemantics;

/// The names of an aggregate's outputs that are the `avg` of integers (numeric in PostgreSQL).
fn numeric_averages(plan: &LogicalPlan) -> Vec<String> {
    let LogicalPlan::Aggregate(aggregate) = plan else { return Vec::new() };
    let input = aggregate.input.schema();
    aggregate
        .aggr_expr
        .iter()
        .filter(|e| {
            let inner = match e {
                Expr::Alias(Alias { expr, .. }) => expr.as_ref(),
                e => e,
            };
            let Expr::AggregateFunction(AggregateFunction { func, params }) = inner else { return false };
            func.name() == "avg" && params.args.first().is_some_and(|a| integer_source(a, input))
        })
        .map(|e| e.schema_name().to_string())
        .collect()
}

/// Whether `e` is an integer, or an integer cast to a float by type coercion.
fn integer_source(e: &Expr, schema: &DFSchema) -> bool {
    match e {
        Expr::Cast(Cast { expr, .. }) | Expr::TryCast(datafusion::logical_expr::TryCast { expr, .. }) => {
            integer_source(expr, schema)
        }
        e => e.get_type(schema).is_ok_and(|t| t.is_integer()),
    }
}

fn call(udf: impl ScalarUDFImpl + 'static, args: Vec<Expr>) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(ScalarUDF::new_from_impl(udf)), args))
}

/// One expression with PostgreSQL's semantics (see [`PostgresSemantics`]).
fn postgres_expr(expr: Expr, schema: &DFSchema, averages: &[String]) -> Result<Transformed<Expr>> {
    expr.transform_up(|e| match &e {
        // A cast of a fraction to an integer rounds.
        Expr::Cast(Cast { expr, field }) if field.data_type().is_integer() => {
            let source = expr.get_type(schema)?;
            let mode = if source.is_floating() {
                let average = matches!(expr.as_ref(), Expr::Column(c) if averages.contains(&c.name));
                if average {
                    RoundMode::HalfAway
                } else {
                    RoundMode::HalfEven
                }
            } else if source.is_decimal() {
                RoundMode::HalfAway
            } else {
                return Ok(Transformed::no(e));
            };
            let inner = call(Round::new(mode), vec![expr.as_ref().clone()]);
            Ok(Transformed::yes(Expr::Cast(Cast { expr: Box::new(inner), field: Arc::clone(field) })))
        }
        // A double as text is written as PostgreSQL writes it (`219`, `1e+20`), not `219.0`.
        Expr::Cast(Cast { expr, field })
            if matches!(field.data_type(), DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
                && expr.get_type(schema)?.is_floating() =>
        {
            let inner = call(FloatText::new(), vec![expr.as_ref().clone()]);
            Ok(Transformed::yes(Expr::Cast(Cast { expr: Box::new(inner), field: Arc::clone(field) })))
        }
        _ => Ok(Transformed::no(e)),
    })
}

impl AnalyzerRule for PostgresSemantics {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            super::numeric::rewrite_keeping_names(node, |e, schema, inputs| {
                let averages: Vec<String> = inputs.iter().flat_map(|i| numeric_averages(i)).collect();
                postgres_expr(e, schema, &averages)
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "postgres_semantics"
    }
}

/// The ordered-set aggregates DataFusion lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum OrderedKind {
    Mode,
    PercentileDisc,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Ordered {
    kind: OrderedKind,
    signature: Signature,
}

impl Ordered {
    fn new(kind: OrderedKind) -> Ordered {
        let arity = match kind {
            OrderedKind::Mode => 1,
            OrderedKind::PercentileDisc => 2,
        };
        Ordered { kind, signature: Signature::any(arity, Volatility::Immutable) }
    }
}

impl AggregateUDFImpl for Ordered {
    fn name(&self) -> &str {
        match self.kind {
            OrderedKind::Mode => "mode",
            OrderedKind::PercentileDisc => "percentile_disc",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let item = Field::new_list_field(args.input_fields[0].data_type().clone(), true);
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "values"), DataType::List(Arc::new(item)), true))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let fraction = match self.kind {
            OrderedKind::Mode => 0.0,
            OrderedKind::PercentileDisc => {
                let literal = args.exprs.get(1).and_then(|e| e.downcast_ref::<Literal>());
                let Some(value) = literal.map(|l| l.value().clone()) else {
                    return plan_err!("percentile_disc: the fraction must be a constant");
                };
                let f = match value.cast_to(&DataType::Float64)? {
                    ScalarValue::Float64(Some(f)) => f,
                    _ => return plan_err!("percentile_disc: the fraction must be a number"),
                };
                if !(0.0..=1.0).contains(&f) {
                    return plan_err!("percentile value {f} is not between 0 and 1");
                }
                f
            }
        };
        let descending = args.order_bys.first().is_some_and(|s| s.options.descending);
        Ok(Box::new(Values {
            kind: self.kind,
            fraction,
            descending,
            data_type: args.return_field.data_type().clone(),
            values: Vec::new(),
        }))
    }

    fn supports_within_group_clause(&self) -> bool {
        true
    }
}

/// Collects a group's non-null values; answers once they are sorted.
#[derive(Debug)]
struct Values {
    kind: OrderedKind,
    fraction: f64,
    descending: bool,
    data_type: DataType,
    values: Vec<ScalarValue>,
}

impl Values {
    fn push_all(&mut self, array: &ArrayRef) -> Result<()> {
        for i in 0..array.len() {
            if !array.is_null(i) {
                self.values.push(ScalarValue::try_from_array(array, i)?);
            }
        }
        Ok(())
    }
}

impl Accumulator for Values {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.push_all(&values[0])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.values.is_empty() {
            return ScalarValue::try_from(&self.data_type);
        }
        let descending = self.descending;
        self.values.sort_by(|a, b| {
            let o = a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal);
            if descending {
                o.reverse()
            } else {
                o
            }
        });
        let chosen = match self.kind {
            // The first of the most frequent values in the ordering (PostgreSQL's tie rule).
            OrderedKind::Mode => {
                let (mut best, mut best_run, mut run) = (0usize, 0usize, 0usize);
                for i in 0..self.values.len() {
                    run = if i > 0 && self.values[i] == self.values[i - 1] { run + 1 } else { 1 };
                    if run > best_run {
                        best_run = run;
                        best = i + 1 - run;
                    }
                }
                best
            }
            // The first value whose position reaches the fraction.
            OrderedKind::PercentileDisc => {
                let n = self.values.len();
                ((self.fraction * n as f64).ceil() as usize).clamp(1, n) - 1
            }
        };
        Ok(self.values[chosen].clone())
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.iter().map(ScalarValue::size).sum::<usize>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let list = ScalarValue::new_list_nullable(&self.values, &self.data_type);
        Ok(vec![ScalarValue::List(list)])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = states[0].as_list::<i32>();
        for i in 0..lists.len() {
            if !lists.is_null(i) {
                self.push_all(&lists.value(i))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{float_text, round_numeric};

    #[test]
    fn doubles_as_text_as_postgresql_writes_them() {
        for (x, text) in [
            (219.0, "219"),
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (1.5e-5, "1.5e-05"),
            (123456789012345.0, "123456789012345"),
            (1e15, "1e+15"),
            (-2.5, "-2.5"),
            (0.0001, "0.0001"),
        ] {
            assert_eq!(float_text(x), text);
        }
        assert_eq!(float_text(f64::INFINITY), "Infinity");
    }

    #[test]
    fn round_of_a_double_is_the_numeric_rounding_of_its_15_digits() {
        assert_eq!(round_numeric(2.675, 2), 2.68);
        assert_eq!(round_numeric(-2.675, 2), -2.68);
        assert_eq!(round_numeric(0.125, 2), 0.13);
        assert_eq!(round_numeric(2.5, 0), 3.0);
        assert_eq!(round_numeric(0.4, 0), 0.0);
        assert_eq!(round_numeric(0.6, 0), 1.0);
        assert_eq!(round_numeric(1234.5678, -2), 1200.0);
        assert_eq!(round_numeric(1250.0, -2), 1300.0);
        assert_eq!(round_numeric(0.0004, 2), 0.0);
        assert_eq!(round_numeric(123.456, 10), 123.456);
        assert_eq!(round_numeric(99.95, 1), 100.0);
        assert!(round_numeric(f64::NAN, 2).is_nan());
    }
}
