//! PostgreSQL's numeric precision where DataFusion's decimals keep fewer digits (API-CONTRACT §7:
//! answered as PostgreSQL answers, or refused — never a different answer).
//!
//! A numeric constant (`1.0`) or a cast to `numeric` is a decimal in DataFusion, and decimal
//! arithmetic is exact for `+`, `-`, `*`, `sum`, `min` and `max`. Two operations are not:
//!
//! - a **division** whose result is a decimal keeps a scale fixed by the operands' declared
//!   types (`count(*) * 1.0 / (SELECT count(*) …)` answered 0.01416), where PostgreSQL keeps at
//!   least sixteen significant digits of every quotient;
//! - an **average** of decimals keeps four more decimals than its input (`avg(x::numeric)` of
//!   1, 2 and 2 is 1.66667), where PostgreSQL again keeps at least sixteen significant digits.
//!
//! Both are computed in double precision here, whatever their operands are (constants, columns,
//! aggregates, subqueries, casts): the type is known only once the plan is typed, so this is a
//! rule on the typed plan, not on the syntax. The changed types flow up through every node, and
//! DataFusion's type coercion runs again over the result so that what consumed a decimal now
//! reads a double. Every answer's decimals are doubles anyway ([`super::engine`]), so the
//! output types do not change.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::{AggregateFunction, Cast, WindowFunction, WindowFunctionDefinition};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};
use datafusion::optimizer::analyzer::type_coercion::TypeCoercion;
use datafusion::optimizer::AnalyzerRule;

/// The rule (see the module). It runs after DataFusion's own type coercion.
#[derive(Debug)]
pub struct NumericPrecision;

fn double(e: Expr) -> Expr {
    Expr::Cast(Cast::new(Box::new(e), DataType::Float64))
}

fn is_decimal(e: &Expr, schema: &DFSchema) -> Result<bool> {
    Ok(e.get_type(schema)?.is_decimal())
}

/// `avg`'s arguments as doubles when they are decimals.
fn average_args(args: &mut [Expr], schema: &DFSchema) -> Result<bool> {
    let mut changed = false;
    for a in args.iter_mut() {
        if is_decimal(a, schema)? {
            *a = double(std::mem::replace(a, Expr::Literal(datafusion::common::ScalarValue::Null, None)));
            changed = true;
        }
    }
    Ok(changed)
}

/// One expression with its decimal divisions and averages in double precision.
fn widened(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    expr.transform_up(|e| match e {
        Expr::BinaryExpr(BinaryExpr { left, op: Operator::Divide, right })
            if is_decimal(&left, schema)? || is_decimal(&right, schema)? =>
        {
            Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(double(*left)),
                Operator::Divide,
                Box::new(double(*right)),
            ))))
        }
        Expr::AggregateFunction(AggregateFunction { func, mut params }) if func.name() == "avg" => {
            let changed = average_args(&mut params.args, schema)?;
            let e = Expr::AggregateFunction(AggregateFunction { func, params });
            Ok(if changed { Transformed::yes(e) } else { Transformed::no(e) })
        }
        Expr::WindowFunction(mut w)
            if matches!(&w.fun, WindowFunctionDefinition::AggregateUDF(f) if f.name() == "avg") =>
        {
            let WindowFunction { params, .. } = w.as_mut();
            let changed = average_args(&mut params.args, schema)?;
            let e = Expr::WindowFunction(w);
            Ok(if changed { Transformed::yes(e) } else { Transformed::no(e) })
        }
        e => Ok(Transformed::no(e)),
    })
}

impl AnalyzerRule for NumericPrecision {
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let mut changed = false;
        let plan = plan
            .transform_up_with_subqueries(|node| {
                let node = rewrite_keeping_names(node, |e, schema, _| widened(e, schema))?;
                changed |= node.transformed;
                if changed {
                    // The node's own types follow its inputs' (changed below it or here).
                    Ok(Transformed::yes(node.data.recompute_schema()?))
                } else {
                    Ok(node)
                }
            })?
            .data;
        if changed {
            // What consumed a decimal reads a double now: coerced again.
            TypeCoercion::new().analyze(plan, config)
        } else {
            Ok(plan)
        }
    }

    fn name(&self) -> &str {
        "numeric_precision"
    }
}

/// `node` with each expression rewritten by `rewrite` (given the schema its columns are read
/// from and the node's inputs), the names of the outputs kept: where a node names its outputs
/// after their expressions, a rewritten one is aliased to its old name. Shared by the rules on
/// the typed plan (this one and [`super::postgres`]'s).
pub(super) fn rewrite_keeping_names(
    node: LogicalPlan,
    mut rewrite: impl FnMut(Expr, &DFSchema, &[&LogicalPlan]) -> Result<Transformed<Expr>>,
) -> Result<Transformed<LogicalPlan>> {
    let inputs: Vec<LogicalPlan> = node.inputs().into_iter().cloned().collect();
    let inputs: Vec<&LogicalPlan> = inputs.iter().collect();
    let schema = if inputs.is_empty() {
        node.schema().as_ref().clone()
    } else {
        datafusion::logical_expr::utils::merge_schema(&inputs)
    };
    let named = matches!(node, LogicalPlan::Projection(_) | LogicalPlan::Aggregate(_) | LogicalPlan::Window(_));
    node.map_expressions(|e| {
        let name = e.schema_name().to_string();
        let new = rewrite(e, &schema, &inputs)?;
        if named && new.transformed && !matches!(new.data, Expr::Alias(_)) {
            Ok(Transformed::yes(new.data.alias(name)))
        } else {
            Ok(new)
        }
    })
}
