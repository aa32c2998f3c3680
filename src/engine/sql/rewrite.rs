//! Rewrites of a checked statement's syntax tree where DataFusion would answer otherwise than
//! PostgreSQL (API-CONTRACT §7: answered as PostgreSQL answers, or refused — never a different
//! answer):
//!
//! - `x op ANY (subquery)` and `x op ALL (subquery)` (and `x NOT IN (subquery)`, PostgreSQL's
//!   `<> ALL`) as a condition of WHERE become `EXISTS` / `NOT EXISTS` over the subquery, which
//!   answer alike there (a row is kept exactly when the condition is true); DataFusion answers
//!   them wrongly, so anywhere else they are refused.
//! - `INTERSECT ALL` and `EXCEPT ALL`, which DataFusion answers as their DISTINCT forms: refused.
//! - `to_char(date, 'YYYY-MM-DD')`: PostgreSQL's template patterns become the engine's.
//! - PostgreSQL's names of functions DataFusion has under another name (`sign`, `every`,
//!   `variance`).
//! - `substring(text FROM pattern)`, a regular expression in PostgreSQL: refused.
//! - `mod(a, b)` as `a % b`; `date_part` and `EXTRACT` as doubles (DataFusion's are integers).
//!   (Decimal divisions and averages are made doubles on the typed plan: [`super::numeric`].)

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident,
    ObjectNamePart, Query, Select, SetExpr, SetOperator, SetQuantifier, Statement, TableFactor, Value, VisitMut,
    VisitorMut,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// Why a statement cannot be answered as PostgreSQL answers it.
pub type Unsupported = String;

/// PostgreSQL's function names that DataFusion spells otherwise.
const RENAMED: &[(&str, &str)] = &[("sign", "signum"), ("every", "bool_and"), ("variance", "var_samp")];

fn parse_expr(sql: &str) -> Result<Expr, Unsupported> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| format!("cannot rewrite a condition: {e}"))
}

/// `left op ANY|ALL (query)` as EXISTS over the subquery (true exactly when PostgreSQL's is).
fn quantified(left: &Expr, op: &BinaryOperator, query: &Query, all: bool, n: usize) -> Result<Expr, Unsupported> {
    let alias = format!("__quantified_{n}");
    let sql = if all {
        format!("NOT EXISTS (SELECT 1 FROM ({query}) AS {alias}(v) WHERE ({left} {op} {alias}.v) IS NOT TRUE)")
    } else {
        format!("EXISTS (SELECT 1 FROM ({query}) AS {alias}(v) WHERE {left} {op} {alias}.v)")
    };
    parse_expr(&sql)
}

/// Rewrites the quantified comparisons that are conditions of `expr` (a WHERE clause: itself,
/// or a conjunct of its top-level ANDs).
fn rewrite_conditions(expr: &mut Expr, n: &mut usize) -> Result<(), Unsupported> {
    match expr {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            rewrite_conditions(left, n)?;
            rewrite_conditions(right, n)
        }
        Expr::Nested(inner) => rewrite_conditions(inner, n),
        Expr::AnyOp { left, compare_op, right, .. } => {
            if let Expr::Subquery(query) = right.as_ref() {
                *n += 1;
                *expr = quantified(left, compare_op, query, false, *n)?;
            }
            Ok(())
        }
        Expr::AllOp { left, compare_op, right } => {
            if let Expr::Subquery(query) = right.as_ref() {
                *n += 1;
                *expr = quantified(left, compare_op, query, true, *n)?;
            }
            Ok(())
        }
        Expr::InSubquery { expr: left, subquery, negated: true } => {
            *n += 1;
            *expr = quantified(left, &BinaryOperator::NotEq, subquery, true, *n)?;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// PostgreSQL's `to_char` template as a chrono format (the patterns of dates and times that
/// print numbers; others are refused).
pub fn chrono_format(template: &str) -> Result<String, Unsupported> {
    const PATTERNS: &[(&str, &str)] = &[
        ("YYYY", "%Y"),
        ("HH24", "%H"),
        ("HH12", "%I"),
        ("YY", "%y"),
        ("MM", "%m"),
        ("DD", "%d"),
        ("HH", "%I"),
        ("MI", "%M"),
        ("SS", "%S"),
        ("MS", "%3f"),
        ("US", "%6f"),
    ];
    let mut out = String::new();
    let mut rest = template;
    'outer: while let Some(c) = rest.chars().next() {
        if c == '"' {
            let end = rest[1..].find('"').ok_or("to_char: unterminated quoted text in the template")?;
            out.push_str(&rest[1..1 + end].replace('%', "%%"));
            rest = &rest[end + 2..];
            continue;
        }
        for (pattern, format) in PATTERNS {
            if rest.starts_with(pattern) {
                out.push_str(format);
                rest = &rest[pattern.len()..];
                continue 'outer;
            }
        }
        if c.is_ascii_alphabetic() {
            return Err(format!(
                "to_char: the template pattern at '{}' is not supported (supported: YYYY, YY, MM, DD, HH24, \
                 HH12, HH, MI, SS, MS, US)",
                rest.chars().take(6).collect::<String>()
            ));
        }
        if c == '%' {
            out.push_str("%%");
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Ok(out)
}

fn function_name(f: &Function) -> Option<String> {
    match f.name.0.as_slice() {
        [ObjectNamePart::Identifier(i)] => Some(super::names::ident_name(i)),
        _ => None,
    }
}

struct Rewriter {
    quantified: usize,
}

impl Rewriter {
    fn select(&mut self, select: &mut Select) -> Result<(), Unsupported> {
        if let Some(selection) = select.selection.as_mut() {
            rewrite_conditions(selection, &mut self.quantified)?;
        }
        Ok(())
    }

    fn body(&mut self, body: &mut SetExpr) -> Result<(), Unsupported> {
        match body {
            SetExpr::Select(select) => self.select(select),
            SetExpr::SetOperation { op, set_quantifier, left, right } => {
                if matches!(op, SetOperator::Intersect | SetOperator::Except | SetOperator::Minus)
                    && matches!(set_quantifier, SetQuantifier::All)
                {
                    return Err(format!("{op} ALL is not supported (use {op}, which removes duplicates)"));
                }
                self.body(left)?;
                self.body(right)
            }
            SetExpr::Query(q) => self.body(&mut q.body),
            _ => Ok(()),
        }
    }
}

impl VisitorMut for Rewriter {
    type Break = Unsupported;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<Unsupported> {
        if let Err(e) = super::lateral::fetch_as_limit(query) {
            return ControlFlow::Break(e);
        }
        match self.body(&mut query.body) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<Unsupported> {
        match factor {
            TableFactor::Derived { lateral: true, subquery, .. } => match super::lateral::top_n(subquery) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(e),
            },
            _ => ControlFlow::Continue(()),
        }
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<Unsupported> {
        match expr {
            Expr::AnyOp { right, .. } | Expr::AllOp { right, .. } if matches!(right.as_ref(), Expr::Subquery(_)) => {
                ControlFlow::Break(
                    "ANY / ALL with a subquery is supported only as a condition of WHERE (not under OR or NOT)".into(),
                )
            }
            Expr::InSubquery { negated: true, .. } => ControlFlow::Break(
                "NOT IN with a subquery is supported only as a condition of WHERE (not under OR or NOT)".into(),
            ),
            Expr::Substring { substring_from: Some(from), substring_for: None, .. } if matches!(from.as_ref(), Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_))) => {
                ControlFlow::Break(
                    "substring(text FROM pattern) with a regular expression is not supported (use regexp_match)".into(),
                )
            }
            Expr::Function(f) => {
                // PostgreSQL's built-ins are in schema pg_catalog: `pg_catalog.version()`.
                if let [ObjectNamePart::Identifier(schema), last] = f.name.0.as_slice() {
                    if schema.value.eq_ignore_ascii_case("pg_catalog") {
                        f.name.0 = vec![last.clone()];
                    }
                }
                let Some(name) = function_name(f) else { return ControlFlow::Continue(()) };
                if let Some((_, to)) = RENAMED.iter().find(|(from, _)| *from == name) {
                    f.name.0 = vec![ObjectNamePart::Identifier(Ident::new(*to))];
                }
                if name == "to_char" {
                    if let Err(e) = self.to_char(f) {
                        return ControlFlow::Break(e);
                    }
                }
                ControlFlow::Continue(())
            }
            _ => ControlFlow::Continue(()),
        }
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<Unsupported> {
        self.after(expr);
        ControlFlow::Continue(())
    }
}

fn as_double(e: Expr) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(e),
        data_type: DataType::DoublePrecision,
        array: false,
        format: None,
    }
}

impl Rewriter {
    /// Rewrites made once an expression's children are rewritten (they wrap or replace it).
    fn after(&mut self, expr: &mut Expr) {
        let taken = std::mem::replace(expr, Expr::Value(Value::Null.into()));
        *expr = match taken {
            Expr::Function(f) if function_name(&f).as_deref() == Some("mod") => match &f.args {
                FunctionArguments::List(list) if list.args.len() == 2 => {
                    let arg = |i: usize| match &list.args[i] {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                        _ => None,
                    };
                    match (arg(0), arg(1)) {
                        (Some(a), Some(b)) => Expr::Nested(Box::new(Expr::BinaryOp {
                            left: Box::new(Expr::Nested(Box::new(a))),
                            op: BinaryOperator::Modulo,
                            right: Box::new(Expr::Nested(Box::new(b))),
                        })),
                        _ => Expr::Function(f),
                    }
                }
                _ => Expr::Function(f),
            },
            Expr::Function(f) if function_name(&f).as_deref() == Some("date_part") => as_double(Expr::Function(f)),
            e @ Expr::Extract { .. } => as_double(e),
            other => other,
        };
    }

    /// `to_char(value, 'template')` with the template in the engine's format.
    fn to_char(&self, f: &mut Function) -> Result<(), Unsupported> {
        let FunctionArguments::List(list) = &mut f.args else { return Ok(()) };
        let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(template))) = list.args.get_mut(1) else {
            return Err("to_char takes a value and a template".into());
        };
        let Expr::Value(v) = template else { return Err("to_char: the template must be a constant text".into()) };
        let Value::SingleQuotedString(text) = &v.value else {
            return Err("to_char: the template must be a constant text".into());
        };
        let format = chrono_format(text)?;
        v.value = Value::SingleQuotedString(format);
        Ok(())
    }
}

/// Rewrites `statement` (see the module), or says what cannot be answered as PostgreSQL does.
pub fn rewrite(statement: &mut Statement) -> Result<(), Unsupported> {
    match statement.visit(&mut Rewriter { quantified: 0 }) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> Result<String, Unsupported> {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
        rewrite(&mut statements[0])?;
        Ok(statements[0].to_string())
    }

    #[test]
    fn quantified_conditions_of_where_become_exists() {
        assert_eq!(
            rewritten("SELECT a FROM t WHERE a > ALL (SELECT b FROM u) AND c = 1").unwrap(),
            "SELECT a FROM t WHERE NOT EXISTS (SELECT 1 FROM (SELECT b FROM u) AS __quantified_1 (v) \
             WHERE (a > __quantified_1.v) IS NOT TRUE) AND c = 1"
        );
        assert_eq!(
            rewritten("SELECT a FROM t WHERE a = ANY (SELECT b FROM u)").unwrap(),
            "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM (SELECT b FROM u) AS __quantified_1 (v) WHERE a = __quantified_1.v)"
        );
        assert!(rewritten("SELECT a FROM t WHERE a NOT IN (SELECT b FROM u)").unwrap().contains("NOT EXISTS"));
        assert!(rewritten("SELECT a FROM t WHERE a = ANY (ARRAY[1, 2])").unwrap().contains("ANY"));
        for sql in [
            "SELECT a > ALL (SELECT b FROM u) FROM t",
            "SELECT a FROM t WHERE NOT (a > ALL (SELECT b FROM u))",
            "SELECT a FROM t WHERE c = 1 OR a = ANY (SELECT b FROM u)",
            "SELECT a FROM t INTERSECT ALL SELECT b FROM u",
            "SELECT a FROM t EXCEPT ALL SELECT b FROM u",
            "SELECT substring(a FROM 'x.*') FROM t",
        ] {
            assert!(rewritten(sql).is_err(), "{sql}");
        }
    }

    #[test]
    fn to_char_templates_and_renamed_functions() {
        assert_eq!(chrono_format("YYYY-MM-DD HH24:MI:SS").unwrap(), "%Y-%m-%d %H:%M:%S");
        assert_eq!(chrono_format("DD/MM/YY \"às\" HH12").unwrap(), "%d/%m/%y às %I");
        assert!(chrono_format("Month").is_err());
        assert_eq!(
            rewritten("SELECT to_char(d, 'YYYY'), sign(x), every(b), variance(x) FROM t").unwrap(),
            "SELECT to_char(d, '%Y'), signum(x), bool_and(b), var_samp(x) FROM t"
        );
        assert_eq!(
            rewritten("SELECT mod(a, 3), date_part('year', d), 1 / 3.0, a / b, x::numeric / 2 FROM t").unwrap(),
            "SELECT ((a) % (3)), CAST(date_part('year', d) AS DOUBLE PRECISION), 1 / 3.0, a / b, x::NUMERIC / 2 FROM t"
        );
    }

    #[test]
    fn fetch_first_becomes_limit() {
        assert_eq!(
            rewritten("SELECT a FROM t ORDER BY a FETCH FIRST 3 ROWS ONLY").unwrap(),
            "SELECT a FROM t ORDER BY a LIMIT 3"
        );
        assert_eq!(rewritten("SELECT a FROM t FETCH NEXT ROW ONLY").unwrap(), "SELECT a FROM t LIMIT 1");
        assert_eq!(
            rewritten("SELECT a FROM t ORDER BY a OFFSET 2 ROWS FETCH FIRST 5 ROWS ONLY").unwrap(),
            "SELECT a FROM t ORDER BY a LIMIT 5 OFFSET 2 ROWS"
        );
        assert_eq!(
            rewritten("SELECT * FROM (SELECT a FROM t FETCH FIRST 2 ROWS ONLY) s").unwrap(),
            "SELECT * FROM (SELECT a FROM t LIMIT 2) s"
        );
        assert!(rewritten("SELECT a FROM t ORDER BY a FETCH FIRST 3 ROWS WITH TIES").is_err());
        assert!(rewritten("SELECT a FROM t FETCH FIRST 10 PERCENT ROWS ONLY").is_err());
    }
}
