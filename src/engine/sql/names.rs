//! Output column names as PostgreSQL gives them (its `FigureColname`): an expression without an
//! alias is named after its column (`marca`), its function (`count`, `avg`, `coalesce`), its
//! construct (`case`, `exists`, `array`), the type it casts a constant to (`int4`), or else
//! `?column?`. DataFusion names such a column after the whole expression (`count(*)`,
//! `avg(catalog.ano)`), so every unnamed item of every SELECT is given PostgreSQL's name as an
//! alias before the statement runs. PostgreSQL allows one name twice in an answer; an answer here
//! is keyed by column name, so a statement whose answer would repeat a name is refused, naming
//! it (in a subquery, where a repeated name cannot be referred to, it is numbered `_2`, `_3`…).

use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    DataType, Expr, Function, Ident, ObjectName, ObjectNamePart, Query, Select, SelectItem, SetExpr, TimezoneInfo,
    TrimWhereField, Value, VisitMut, VisitorMut,
};

/// PostgreSQL's name for a column without an alias.
pub const UNNAMED: &str = "?column?";

fn function_name(name: &ObjectName) -> Option<String> {
    match name.0.last()? {
        ObjectNamePart::Identifier(ident) => Some(ident_name(ident)),
        _ => None,
    }
}

/// An identifier as PostgreSQL folds it: lower case unless quoted.
pub(super) fn ident_name(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The name PostgreSQL gives a type in a column name (`int4`, `float8`, `text`…).
fn type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => "int4".into(),
        DataType::BigInt(_) | DataType::Int8(_) => "int8".into(),
        DataType::SmallInt(_) | DataType::Int2(_) => "int2".into(),
        DataType::Real | DataType::Float4 => "float4".into(),
        DataType::Float(info) => match info {
            sqlparser::ast::ExactNumberInfo::Precision(p)
            | sqlparser::ast::ExactNumberInfo::PrecisionAndScale(p, _)
                if *p <= 24 =>
            {
                "float4".into()
            }
            _ => "float8".into(),
        },
        DataType::Double(_) | DataType::DoublePrecision | DataType::Float8 => "float8".into(),
        DataType::Numeric(_) | DataType::Decimal(_) | DataType::Dec(_) => "numeric".into(),
        DataType::Varchar(_) | DataType::CharacterVarying(_) => "varchar".into(),
        DataType::Char(_) | DataType::Character(_) => "bpchar".into(),
        DataType::Bool | DataType::Boolean => "bool".into(),
        DataType::Timestamp(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => "timestamptz".into(),
        DataType::Timestamp(_, _) => "timestamp".into(),
        DataType::Time(_, _) => "time".into(),
        DataType::Interval { .. } => "interval".into(),
        other => other.to_string().to_lowercase(),
    }
}

/// PostgreSQL's name for `expr`, or `None` where it would say `?column?`.
pub fn figure(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(ident) => Some(ident_name(ident)),
        Expr::CompoundIdentifier(parts) => parts.last().map(ident_name),
        Expr::Nested(inner) | Expr::Collate { expr: inner, .. } => figure(inner),
        Expr::Function(Function { name, .. }) => function_name(name),
        Expr::Cast { expr, data_type, .. } => figure(expr).or_else(|| Some(type_name(data_type))),
        Expr::TypedString(t) => Some(type_name(&t.data_type)),
        Expr::Value(v) => match &v.value {
            Value::Boolean(_) => Some("bool".into()),
            _ => None,
        },
        Expr::Interval(_) => Some("interval".into()),
        Expr::Case { .. } => Some("case".into()),
        Expr::Exists { .. } => Some("exists".into()),
        Expr::Subquery(query) => first_output(query),
        Expr::Array(_) => Some("array".into()),
        Expr::Tuple(_) => Some("row".into()),
        Expr::Extract { .. } => Some("extract".into()),
        Expr::Ceil { .. } => Some("ceil".into()),
        Expr::Floor { .. } => Some("floor".into()),
        Expr::Position { .. } => Some("position".into()),
        Expr::Substring { .. } => Some("substring".into()),
        Expr::Overlay { .. } => Some("overlay".into()),
        Expr::AtTimeZone { .. } => Some("timezone".into()),
        Expr::Trim { trim_where, .. } => Some(
            match trim_where {
                Some(TrimWhereField::Leading) => "ltrim",
                Some(TrimWhereField::Trailing) => "rtrim",
                _ => "btrim",
            }
            .into(),
        ),
        _ => None,
    }
}

/// The name of a subquery's first output column.
fn first_output(query: &Query) -> Option<String> {
    let mut body = query.body.as_ref();
    loop {
        match body {
            SetExpr::Select(select) => {
                return match select.projection.first()? {
                    SelectItem::UnnamedExpr(e) => figure(e),
                    SelectItem::ExprWithAlias { alias, .. } => Some(ident_name(alias)),
                    _ => None,
                };
            }
            SetExpr::SetOperation { left, .. } => body = left.as_ref(),
            SetExpr::Query(q) => body = q.body.as_ref(),
            _ => return None,
        }
    }
}

/// Gives every unnamed item of `select` its PostgreSQL name as an alias.
fn name_items(select: &mut Select) {
    let mut taken: HashSet<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(ident_name(alias)),
            SelectItem::UnnamedExpr(e @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_))) => figure(e),
            _ => None,
        })
        .collect();
    for item in select.projection.iter_mut() {
        let SelectItem::UnnamedExpr(expr) = item else { continue };
        if matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            continue;
        }
        let base = figure(expr).unwrap_or_else(|| UNNAMED.to_string());
        let mut name = base.clone();
        let mut n = 2;
        while !taken.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        let expr = std::mem::replace(expr, Expr::Value(Value::Null.into()));
        *item = SelectItem::ExprWithAlias { expr, alias: Ident::with_quote('"', name) };
    }
}

fn name_body(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => name_items(select),
        SetExpr::SetOperation { left, right, .. } => {
            name_body(left);
            name_body(right);
        }
        SetExpr::Query(q) => name_body(&mut q.body),
        _ => {}
    }
}

struct Namer;

impl VisitorMut for Namer {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        name_body(&mut query.body);
        ControlFlow::Continue(())
    }
}

/// The names of the answer's columns as far as the syntax tells them (`None` for `*`).
fn output_names(query: &Query) -> Option<Vec<String>> {
    let mut body = query.body.as_ref();
    loop {
        match body {
            SetExpr::Select(select) => {
                return select
                    .projection
                    .iter()
                    .map(|item| match item {
                        SelectItem::UnnamedExpr(e) => Some(figure(e).unwrap_or_else(|| UNNAMED.to_string())),
                        SelectItem::ExprWithAlias { alias, .. } => Some(ident_name(alias)),
                        _ => None,
                    })
                    .collect();
            }
            SetExpr::SetOperation { left, .. } => body = left.as_ref(),
            SetExpr::Query(q) => body = q.body.as_ref(),
            _ => return None,
        }
    }
}

/// Where a column name repeated in a positional answer (the PostgreSQL door's rows are
/// positional, as PostgreSQL's) is told apart inside the service: `name` + MARK + its position.
/// The door writes the name up to the mark ([`wire_name`]).
pub const MARK: char = '\u{1f}';

/// A column's name as a positional answer gives it (see [`MARK`]).
pub fn wire_name(name: &str) -> &str {
    name.split(MARK).next().unwrap_or(name)
}

/// The first SELECT of a query's body: the one that names the answer's columns.
fn first_select(body: &mut SetExpr) -> Option<&mut Select> {
    match body {
        SetExpr::Select(select) => Some(select),
        SetExpr::SetOperation { left, .. } => first_select(left),
        SetExpr::Query(q) => first_select(&mut q.body),
        _ => None,
    }
}

/// Names the unnamed output columns of every SELECT of `statement` as PostgreSQL does. A
/// statement whose answer would have two columns of one name is refused when answers are keyed
/// by name; when they are `positional`, the repeated names are told apart by [`MARK`].
pub fn name_outputs(statement: &mut sqlparser::ast::Statement, positional: bool) -> Result<(), String> {
    if let sqlparser::ast::Statement::Query(query) = statement {
        if let Some(names) = output_names(query) {
            let mut seen = HashSet::new();
            let twice: Vec<usize> = (0..names.len()).filter(|&i| !seen.insert(names[i].as_str())).collect();
            if positional && !twice.is_empty() {
                if let Some(select) = first_select(&mut query.body) {
                    for i in twice {
                        let item = &mut select.projection[i];
                        let expr = match item {
                            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                                std::mem::replace(e, Expr::Value(Value::Null.into()))
                            }
                            _ => continue,
                        };
                        let alias = Ident::with_quote('"', format!("{}{MARK}{i}", names[i]));
                        *item = SelectItem::ExprWithAlias { expr, alias };
                    }
                }
            } else if let Some(twice) = twice.first().map(|&i| &names[i]) {
                return Err(format!(
                    "the answer would have two columns named \"{twice}\" (answers are keyed by column name): \
                     give them distinct aliases"
                ));
            }
        }
    }
    let _ = statement.visit(&mut Namer);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn named(sql: &str) -> String {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
        name_outputs(&mut statements[0], false).unwrap();
        statements[0].to_string()
    }

    #[test]
    fn an_answer_with_a_name_twice_is_refused() {
        for sql in [
            "SELECT count(*), count(ano) FROM catalog",
            "SELECT 1, 2",
            "SELECT a.marca, b.marca FROM catalog a, catalog b",
            "SELECT marca AS x, modelo AS X FROM catalog",
        ] {
            let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
            assert!(name_outputs(&mut statements[0], false).is_err(), "{sql}");
        }
    }

    #[test]
    fn unnamed_columns_get_postgresql_names() {
        assert_eq!(
            named("SELECT marca, count(*), AVG(ano), ano / 5, CAST(ano AS INT), '1'::int, CASE WHEN true THEN 1 END FROM catalog"),
            "SELECT marca, count(*) AS \"count\", AVG(ano) AS \"avg\", ano / 5 AS \"?column?\", CAST(ano AS INT) AS \"ano\", \
             '1'::INT AS \"int4\", CASE WHEN true THEN 1 END AS \"case\" FROM catalog"
        );
        assert_eq!(
            named("SELECT * FROM (SELECT count(*), count(ano), 1, 2 FROM catalog) t"),
            "SELECT * FROM (SELECT count(*) AS \"count\", count(ano) AS \"count_2\", 1 AS \"?column?\", 2 AS \"?column?_2\" FROM catalog) t"
        );
        assert_eq!(
            named("SELECT (SELECT max(ano) FROM catalog), EXISTS (SELECT 1), c.marca FROM catalog c"),
            "SELECT (SELECT max(ano) AS \"max\" FROM catalog) AS \"max\", EXISTS (SELECT 1 AS \"?column?\") AS \"exists\", c.marca FROM catalog c"
        );
        assert_eq!(
            named("SELECT x AS y, trim(marca) FROM catalog"),
            "SELECT x AS y, TRIM(marca) AS \"btrim\" FROM catalog"
        );
    }
}
