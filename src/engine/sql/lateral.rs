//! `LATERAL` top-N per outer row, which DataFusion cannot run as written (a correlated subquery
//! with `ORDER BY … LIMIT` is not decorrelated), rewritten into what it can (API-CONTRACT §7).
//!
//! The common form, the N best rows of one table for each outer row:
//!
//! ```sql
//! SELECT c.marca, t.modelo, t.co2
//! FROM brands c, LATERAL (
//!     SELECT d.modelo, d.co2_fossil_g_km AS co2 FROM catalog d
//!     WHERE d.marca = c.marca AND d.ano = 2024 ORDER BY co2 LIMIT 3) t
//! ```
//!
//! is the same as numbering the inner table's rows per correlation key, in the subquery's order,
//! and keeping rows `OFFSET + 1 …= OFFSET + LIMIT` of the outer row's key:
//!
//! ```sql
//! … LATERAL (SELECT d.modelo, d.co2_fossil_g_km AS co2
//!     FROM (SELECT d.* FROM catalog AS d WHERE d.ano = 2024
//!           QUALIFY row_number() OVER (PARTITION BY d.marca ORDER BY d.co2_fossil_g_km NULLS LAST)
//!           BETWEEN 0 + 1 AND 0 + 3) AS d
//!     WHERE d.marca = c.marca) t
//! ```
//!
//! whose only correlation is an equality, which DataFusion decorrelates. The rewrite applies when
//! the subquery reads one table, correlates with the outer row only by equalities of its own
//! expressions with the outer row's, and neither groups, aggregates, numbers rows nor removes
//! duplicates (those are computed over the rows before the limit); anything else is left as
//! written, and DataFusion's refusal names it.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, BinaryOperator, Expr, GroupByExpr, LimitClause, OrderByKind, Query, SelectItem, SetExpr,
    TableFactor, Value,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::names::ident_name;

/// PostgreSQL's aggregates (and the window functions that are aggregates' kin): a select list
/// holding one is computed over every matched row, not the first N; a scalar subquery calling
/// one answers a row even over no rows (the catalog's rewrite, `pg_catalog::syntax`).
pub(super) const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
    "every",
    "stddev",
    "stddev_samp",
    "stddev_pop",
    "variance",
    "var_samp",
    "var_pop",
    "corr",
    "covar_samp",
    "covar_pop",
    "regr_slope",
    "regr_intercept",
    "regr_count",
    "regr_r2",
    "regr_avgx",
    "regr_avgy",
    "regr_sxx",
    "regr_syy",
    "regr_sxy",
    "percentile_cont",
    "percentile_disc",
    "mode",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "bit_and",
    "bit_or",
    "first_value",
    "last_value",
];

/// `FETCH FIRST n ROWS ONLY` (the standard's `LIMIT n`, which DataFusion does not read) as
/// `LIMIT n`; `FETCH FIRST ROW ONLY` is one row. `WITH TIES` and `PERCENT` are refused.
pub(super) fn fetch_as_limit(query: &mut Query) -> Result<(), String> {
    let Some(fetch) = query.fetch.take() else { return Ok(()) };
    if fetch.with_ties {
        return Err("FETCH … WITH TIES is not supported (use rank() in a subquery)".into());
    }
    if fetch.percent {
        return Err("FETCH … PERCENT is not supported".into());
    }
    let n = fetch.quantity.unwrap_or_else(|| Expr::value(Value::Number("1".into(), false)));
    match query.limit_clause.as_mut() {
        None => {
            query.limit_clause = Some(LimitClause::LimitOffset { limit: Some(n), offset: None, limit_by: Vec::new() })
        }
        Some(LimitClause::LimitOffset { limit: limit @ None, .. }) => *limit = Some(n),
        Some(_) => return Err("LIMIT and FETCH in one query".into()),
    }
    Ok(())
}

/// The columns an expression names: whether any is unqualified, and the qualifiers of the others.
struct Names {
    unqualified: bool,
    qualifiers: Vec<String>,
}

fn names(e: &Expr) -> Names {
    let mut n = Names { unqualified: false, qualifiers: Vec::new() };
    let _ = visit_expressions(e, |e| {
        match e {
            Expr::Identifier(_) => n.unqualified = true,
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                n.qualifiers.push(ident_name(&parts[parts.len() - 2]));
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    n
}

/// Whether `e` names only the inner table's columns (`inner` is its name in the subquery).
fn inner_only(e: &Expr, inner: &str) -> bool {
    names(e).qualifiers.iter().all(|q| q == inner)
}

/// Whether `e` names only the outer row's columns (qualified by another name).
fn outer_only(e: &Expr, inner: &str) -> bool {
    let n = names(e);
    !n.unqualified && !n.qualifiers.is_empty() && n.qualifiers.iter().all(|q| q != inner)
}

fn aggregates_or_windows(items: &[SelectItem]) -> bool {
    let mut found = false;
    for item in items {
        let _ = visit_expressions(item, |e| {
            if let Expr::Function(f) = e {
                let name = f.name.0.last().and_then(|p| p.as_ident()).map(ident_name).unwrap_or_default();
                if f.over.is_some() || AGGREGATES.contains(&name.as_str()) {
                    found = true;
                }
            }
            ControlFlow::<()>::Continue(())
        });
    }
    found
}

fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            conjuncts(*left, out);
            conjuncts(*right, out);
        }
        Expr::Nested(inner) if matches!(inner.as_ref(), Expr::BinaryOp { op: BinaryOperator::And, .. }) => {
            conjuncts(*inner, out)
        }
        e => out.push(e),
    }
}

/// Rewrites the subquery of a `LATERAL` derived table (see the module); leaves it as written when
/// it is not of the form rewritten.
pub fn top_n(query: &mut Query) -> Result<(), String> {
    fetch_as_limit(query)?;
    let Some(LimitClause::LimitOffset { limit: Some(limit), offset, limit_by }) = &query.limit_clause else {
        return Ok(());
    };
    if !limit_by.is_empty() || query.with.is_some() {
        return Ok(());
    }
    let SetExpr::Select(select) = query.body.as_ref() else { return Ok(()) };
    let [from] = select.from.as_slice() else { return Ok(()) };
    if !from.joins.is_empty()
        || select.distinct.is_some()
        || !matches!(&select.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
        || select.having.is_some()
        || select.qualify.is_some()
        || !select.named_window.is_empty()
        || aggregates_or_windows(&select.projection)
    {
        return Ok(());
    }
    let TableFactor::Table { name, alias, args: None, .. } = &from.relation else { return Ok(()) };
    let quoted = match alias {
        Some(a) if a.columns.is_empty() => a.name.clone(),
        Some(_) => return Ok(()),
        None => match name.0.last().and_then(|p| p.as_ident()) {
            Some(i) => i.clone(),
            None => return Ok(()),
        },
    };
    let inner = ident_name(&quoted);

    let mut parts = Vec::new();
    if let Some(selection) = select.selection.clone() {
        conjuncts(selection, &mut parts);
    }
    let (mut keys, mut correlated, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for c in parts {
        if inner_only(&c, &inner) {
            rest.push(c);
            continue;
        }
        let key = match &c {
            Expr::BinaryOp { left, op: BinaryOperator::Eq, right } => {
                if inner_only(left, &inner) && outer_only(right, &inner) {
                    Some(left.as_ref().clone())
                } else if inner_only(right, &inner) && outer_only(left, &inner) {
                    Some(right.as_ref().clone())
                } else {
                    None
                }
            }
            _ => None,
        };
        match key {
            Some(k) => {
                keys.push(k);
                correlated.push(c);
            }
            // Another kind of correlation: left to DataFusion, which names it.
            None => return Ok(()),
        }
    }
    if keys.is_empty() {
        return Ok(());
    }

    // The subquery's order, its select-list aliases and positions replaced by their expressions,
    // with PostgreSQL's places of nulls made explicit.
    let items: Vec<(Option<String>, Expr)> = select
        .projection
        .iter()
        .map(|i| match i {
            SelectItem::UnnamedExpr(e) => (None, e.clone()),
            SelectItem::ExprWithAlias { expr, alias } => (Some(ident_name(alias)), expr.clone()),
            _ => (None, Expr::Value(Value::Null.into())),
        })
        .collect();
    let mut order = Vec::new();
    if let Some(order_by) = &query.order_by {
        let OrderByKind::Expressions(exprs) = &order_by.kind else { return Ok(()) };
        for o in exprs {
            let mut o = o.clone();
            match &o.expr {
                Expr::Identifier(i) => {
                    if let Some((_, e)) = items.iter().find(|(a, _)| a.as_deref() == Some(ident_name(i).as_str())) {
                        o.expr = e.clone();
                    }
                }
                Expr::Value(v) => {
                    if let Value::Number(n, _) = &v.value {
                        match n.parse::<usize>().ok().and_then(|k| items.get(k.wrapping_sub(1))) {
                            Some((_, e)) => o.expr = e.clone(),
                            None => return Ok(()),
                        }
                    }
                }
                _ => {}
            }
            let descending = o.options.asc == Some(false);
            o.options.nulls_first.get_or_insert(descending);
            order.push(o.to_string());
        }
    }
    let order = if order.is_empty() { String::new() } else { format!(" ORDER BY {}", order.join(", ")) };
    let partition = keys.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", ");
    let skip = offset.as_ref().map_or("0".to_string(), |o| format!("({})", o.value));
    let filter = if rest.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", rest.iter().map(|c| format!("({c})")).collect::<Vec<_>>().join(" AND "))
    };
    let derived = format!(
        "SELECT * FROM (SELECT {quoted}.* FROM {name} AS {quoted}{filter} \
         QUALIFY row_number() OVER (PARTITION BY {partition}{order}) BETWEEN {skip} + 1 AND {skip} + ({limit})) AS {quoted}"
    );
    let parsed = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&derived)
        .and_then(|mut p| p.parse_query())
        .map_err(|e| format!("cannot rewrite a LATERAL subquery: {e}"))?;
    let SetExpr::Select(new) = *parsed.body else { return Err("cannot rewrite a LATERAL subquery".into()) };
    let Some(relation) = new.from.into_iter().next().map(|f| f.relation) else {
        return Err("cannot rewrite a LATERAL subquery".into());
    };

    let SetExpr::Select(select) = query.body.as_mut() else { return Ok(()) };
    select.from[0].relation = relation;
    select.selection = correlated.into_iter().reduce(|a, b| Expr::BinaryOp {
        left: Box::new(a),
        op: BinaryOperator::And,
        right: Box::new(b),
    });
    query.order_by = None;
    query.limit_clause = None;
    Ok(())
}

#[cfg(test)]
mod tests {
    use sqlparser::ast::{Statement, TableWithJoins};

    use super::*;

    /// The statement with its first LATERAL subquery rewritten.
    fn rewritten(sql: &str) -> String {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
        let Statement::Query(q) = &mut statements[0] else { panic!() };
        let SetExpr::Select(s) = q.body.as_mut() else { panic!() };
        let relations = s.from.iter_mut().flat_map(|TableWithJoins { relation, joins }| {
            std::iter::once(relation).chain(joins.iter_mut().map(|j| &mut j.relation))
        });
        for r in relations {
            if let TableFactor::Derived { lateral: true, subquery, .. } = r {
                top_n(subquery).unwrap();
                break;
            }
        }
        statements[0].to_string()
    }

    #[test]
    fn top_n_per_outer_row_becomes_a_numbered_partition() {
        let sql = rewritten(
            "SELECT c.marca, t.modelo FROM b c, LATERAL (SELECT d.modelo, d.co2 AS co2 FROM catalog d \
             WHERE d.marca = c.marca AND d.ano = 2024 ORDER BY co2 DESC, 1 OFFSET 1 LIMIT 3) t",
        );
        assert_eq!(
            sql,
            "SELECT c.marca, t.modelo FROM b c, LATERAL (SELECT d.modelo, d.co2 AS co2 FROM \
             (SELECT d.* FROM catalog AS d WHERE (d.ano = 2024) QUALIFY row_number() OVER (PARTITION BY d.marca \
             ORDER BY d.co2 DESC NULLS FIRST, d.modelo NULLS LAST) BETWEEN (1) + 1 AND (1) + (3)) AS d \
             WHERE d.marca = c.marca) t"
        );
        let fetch = rewritten(
            "SELECT * FROM b c CROSS JOIN LATERAL (SELECT modelo FROM catalog WHERE c.marca = catalog.marca \
             ORDER BY co2 FETCH FIRST 2 ROWS ONLY) t",
        );
        assert!(
            fetch.contains("PARTITION BY catalog.marca ORDER BY co2 NULLS LAST) BETWEEN 0 + 1 AND 0 + (2)"),
            "{fetch}"
        );
    }

    #[test]
    fn other_forms_are_left_as_written() {
        for sql in [
            // not a limit
            "SELECT * FROM b c, LATERAL (SELECT d.modelo FROM catalog d WHERE d.marca = c.marca) t",
            // an aggregate over the matched rows
            "SELECT * FROM b c, LATERAL (SELECT max(d.co2) FROM catalog d WHERE d.marca = c.marca LIMIT 1) t",
            // a correlation other than an equality
            "SELECT * FROM b c, LATERAL (SELECT d.modelo FROM catalog d WHERE d.co2 < c.co2 LIMIT 1) t",
            // a join inside
            "SELECT * FROM b c, LATERAL (SELECT d.modelo FROM catalog d JOIN e ON true WHERE d.marca = c.marca LIMIT 1) t",
        ] {
            let before = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap()[0].to_string();
            assert_eq!(rewritten(sql), before, "{sql}");
        }
    }
}
