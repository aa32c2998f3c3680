//! Casts told apart in column names. DataFusion names an expression without its casts:
//! `avg(ano::numeric)` and `avg(ano)` are both `avg(catalog.ano)`, so a query asking for both
//! (which PostgreSQL answers) stops at planning on a duplicate name. Such a query is planned again
//! with every cast inside a function's arguments wrapped in `coalesce(cast, NULL…)`, the same
//! value with one `NULL` more for each distinct cast: the names differ, the values and types do
//! not. Only a query refused that way is rewritten ([`names_collide`]); every other is planned as
//! written.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::error::DataFusionError;
use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident, ObjectName,
    ObjectNamePart, Value, VisitMut, VisitorMut,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// Whether planning stopped on two expressions of one name (DataFusion's schemas refuse them).
fn names_collide(error: &DataFusionError) -> bool {
    let text = error.to_string();
    text.contains("duplicate unqualified field name") || text.contains("duplicate qualified field name")
}

/// `plan(sql)`, and `plan` again on `sql` with its casts told apart when the first refused it for
/// two expressions of one name (see the module).
pub async fn planned_apart<T, F, Fut>(sql: &str, plan: F) -> Result<T, DataFusionError>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<T, DataFusionError>>,
{
    match plan(sql.to_string()).await {
        Err(e) if names_collide(&e) => match told_apart(sql) {
            Some(again) => plan(again).await,
            None => Err(e),
        },
        planned => planned,
    }
}

/// `sql` with its casts inside function arguments told apart (see the module); `None` when it
/// has none or does not parse.
pub fn told_apart(sql: &str) -> Option<String> {
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    let mut wrapper = Wrapper { depth: 0, seen: HashMap::new() };
    for statement in &mut statements {
        let _ = statement.visit(&mut wrapper);
    }
    (!wrapper.seen.is_empty()).then(|| statements.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))
}

struct Wrapper {
    /// How many function calls the visited expression is inside.
    depth: usize,
    /// Each distinct cast (as written) and its number.
    seen: HashMap<String, usize>,
}

impl VisitorMut for Wrapper {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if matches!(expr, Expr::Function(_)) {
            self.depth += 1;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Function(_) => self.depth -= 1,
            Expr::Cast { .. } if self.depth > 0 => {
                let next = self.seen.len() + 1;
                let n = *self.seen.entry(expr.to_string()).or_insert(next);
                let cast = std::mem::replace(expr, Expr::Value(Value::Null.into()));
                *expr = same_value(cast, n);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// `coalesce(value, NULL, …)` with `nulls` NULLs: `value`, of its type.
fn same_value(value: Expr, nulls: usize) -> Expr {
    let arg = |e: Expr| FunctionArg::Unnamed(FunctionArgExpr::Expr(e));
    let mut args = vec![arg(value)];
    args.extend((0..nulls).map(|_| arg(Expr::Value(Value::Null.into()))));
    Expr::Function(Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new("coalesce"))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList { duplicate_treatment: None, args, clauses: Vec::new() }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Casts inside function arguments, at any depth, are numbered by what they cast to what;
    /// the same cast twice gets the same number; casts outside functions stay as written.
    #[test]
    fn casts_in_arguments_are_numbered() {
        let sql = "SELECT avg(ano::numeric), avg(ano), sum(ano::numeric * 2), ano::text \
                   FROM catalog GROUP BY ano::text ORDER BY avg(ano::numeric)";
        let out = told_apart(sql).unwrap();
        assert_eq!(
            out,
            "SELECT avg(coalesce(ano::NUMERIC, NULL)), avg(ano), sum(coalesce(ano::NUMERIC, NULL) * 2), ano::TEXT \
             FROM catalog GROUP BY ano::TEXT ORDER BY avg(coalesce(ano::NUMERIC, NULL))"
        );
        let out = told_apart("SELECT count(CAST(x AS text)), count(x::float8) FROM t").unwrap();
        assert_eq!(out, "SELECT count(coalesce(CAST(x AS TEXT), NULL)), count(coalesce(x::FLOAT8, NULL, NULL)) FROM t");
        assert!(told_apart("SELECT avg(ano) FROM catalog").is_none());
        assert!(told_apart("SELECT ano::text FROM catalog").is_none());
    }
}
