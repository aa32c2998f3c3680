//! The syntax only catalog queries use, turned into what DataFusion runs (see the parent module).

use super::*;
// Aggregate functions: a SELECT that calls one without GROUP BY answers a row even over none.
use crate::engine::sql::lateral::AGGREGATES;

/// The last part of a type's name, in lower case (`pg_catalog.regclass` is `regclass`).
fn type_name(t: &SqlType) -> Option<String> {
    match t {
        SqlType::Custom(name, _) => name.0.last().map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.to_lowercase(),
            other => other.to_string().to_lowercase(),
        }),
        SqlType::Regclass => Some("regclass".into()),
        SqlType::Text => Some("text".into()),
        SqlType::Char(_) | SqlType::Character(_) => Some("char".into()),
        _ => None,
    }
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args.into_iter().map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e))).collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

fn cast(expr: Expr, to: SqlType) -> Expr {
    Expr::Cast { kind: CastKind::Cast, expr: Box::new(expr), data_type: to, array: false, format: None }
}

fn is_text_literal(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)))
}

/// Whether `left <> right` compares a column's collation with its type's.
fn collations(left: &Expr, right: &Expr) -> bool {
    let (l, r) = (left.to_string().to_lowercase(), right.to_string().to_lowercase());
    (l.ends_with("attcollation") && r.ends_with("typcollation"))
        || (l.ends_with("typcollation") && r.ends_with("attcollation"))
}

/// Rewrites the syntax of catalog queries (see the module's documentation); `user` is what
/// `current_user` answers.
struct CatalogSyntax<'a> {
    user: &'a str,
}

impl VisitorMut for CatalogSyntax<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let replaced = match expr {
            Expr::BinaryOp { op: BinaryOperator::PGCustomBinaryOperator(parts), left, right } => {
                let op = match parts.last().map(String::as_str) {
                    Some("~") => Some(BinaryOperator::PGRegexMatch),
                    Some("~*") => Some(BinaryOperator::PGRegexIMatch),
                    Some("!~") => Some(BinaryOperator::PGRegexNotMatch),
                    Some("!~*") => Some(BinaryOperator::PGRegexNotIMatch),
                    Some("=") => Some(BinaryOperator::Eq),
                    Some("<>") => Some(BinaryOperator::NotEq),
                    Some("<") => Some(BinaryOperator::Lt),
                    Some(">") => Some(BinaryOperator::Gt),
                    Some("<=") => Some(BinaryOperator::LtEq),
                    Some(">=") => Some(BinaryOperator::GtEq),
                    Some("~~") => Some(BinaryOperator::PGLikeMatch),
                    Some("||") => Some(BinaryOperator::StringConcat),
                    _ => None,
                };
                op.map(|op| Expr::BinaryOp { left: left.clone(), op, right: right.clone() })
            }
            Expr::Collate { expr: inner, .. } => Some((**inner).clone()),
            // Every column here has its type's collation (psql asks for those that differ).
            Expr::BinaryOp { left, op: BinaryOperator::NotEq, right } if collations(left, right) => {
                Some(Expr::Value(Value::Boolean(false).into()))
            }
            // `typreceive != 0`: a regproc (text here) against an oid number.
            Expr::BinaryOp { left, op, right } if is_regproc_column(left) || is_regproc_column(right) => {
                let as_text = |e: &Expr| match e {
                    Expr::Value(v) => match &v.value {
                        Value::Number(n, _) => Some(Expr::Value(
                            Value::SingleQuotedString(if n == "0" { "-".into() } else { n.clone() }).into(),
                        )),
                        _ => None,
                    },
                    _ => None,
                };
                match (as_text(left), as_text(right)) {
                    (Some(l), None) => Some(Expr::BinaryOp { left: Box::new(l), op: op.clone(), right: right.clone() }),
                    (None, Some(r)) => Some(Expr::BinaryOp { left: left.clone(), op: op.clone(), right: Box::new(r) }),
                    _ => None,
                }
            }
            // `x = ANY('{a,b}')`: an array written as text.
            Expr::AnyOp { left, compare_op: BinaryOperator::Eq, right, .. } => match right.as_ref() {
                Expr::Value(v) => match &v.value {
                    Value::SingleQuotedString(t) if t.starts_with('{') && t.ends_with('}') => {
                        let items = t[1..t.len() - 1]
                            .split(',')
                            .filter(|i| !i.is_empty())
                            .map(|i| {
                                Expr::Value(Value::SingleQuotedString(i.trim().trim_matches('"').to_string()).into())
                            })
                            .collect();
                        Some(Expr::InList { expr: left.clone(), list: items, negated: false })
                    }
                    _ => None,
                },
                _ => None,
            },
            Expr::Cast { expr: inner, data_type, .. } => match type_name(data_type).as_deref() {
                Some("regclass") if is_text_literal(inner) => Some(call("to_regclass", vec![(**inner).clone()])),
                Some(
                    "regclass" | "regtype" | "regproc" | "regprocedure" | "regnamespace" | "regrole" | "oid" | "xid",
                ) => Some(cast((**inner).clone(), SqlType::BigInt(None))),
                Some("name" | "char" | "bpchar") => Some(cast((**inner).clone(), SqlType::Text)),
                Some("text") => match inner.as_ref() {
                    // `x::regclass::text` and `x::regtype::text`: the relation's or type's name.
                    Expr::Cast { expr: oid, data_type: SqlType::BigInt(None), .. } => {
                        Some(call("eco_relation_name", vec![(**oid).clone()]))
                    }
                    _ => Some(cast((**inner).clone(), SqlType::Text)),
                },
                _ => None,
            },
            Expr::Function(f) if matches!(f.args, FunctionArguments::None) => {
                let name = f.name.to_string().to_lowercase();
                matches!(name.as_str(), "current_user" | "session_user" | "user" | "current_role")
                    .then(|| Expr::Value(Value::SingleQuotedString(self.user.to_string()).into()))
            }
            _ => None,
        };
        if let Some(new) = replaced {
            *expr = new;
        }
        ControlFlow::Continue(())
    }
}

/// A scalar subquery over the catalog that does not aggregate: its one value taken with `max`,
/// which is the value (PostgreSQL would fail on a second row; these catalog lookups have at
/// most one), because DataFusion plans a correlated scalar subquery only when it aggregates.
struct CatalogScalarSubqueries;

impl VisitorMut for CatalogScalarSubqueries {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let Expr::Subquery(query) = expr else { return ControlFlow::Continue(()) };
        let mut relations = Relations(Vec::new());
        let _ = Visit::visit(query.as_ref(), &mut relations);
        if relations.0.is_empty() || !relations.0.iter().all(|r| is_system(r)) {
            return ControlFlow::Continue(());
        }
        let SetExpr::Select(select) = query.body.as_mut() else { return ControlFlow::Continue(()) };
        let plain = matches!(&select.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
        if !plain || select.having.is_some() || select.projection.len() != 1 || query.limit_clause.is_some() {
            return ControlFlow::Continue(());
        }
        let mut aggregate = CallsAggregate(false, 0);
        let _ = Visit::visit(&select.projection, &mut aggregate);
        if aggregate.0 {
            return ControlFlow::Continue(());
        }
        if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = &mut select.projection[0] {
            let inner = std::mem::replace(e, Expr::Value(Value::Null.into()));
            *e = call("max", vec![inner]);
        }
        ControlFlow::Continue(())
    }
}

/// `x::regclass` as an item of a SELECT: the relation's name, as PostgreSQL writes a regclass.
struct RegclassItems;

impl VisitorMut for RegclassItems {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_mut() {
            for item in &mut select.projection {
                let (alias, e) = match item {
                    SelectItem::UnnamedExpr(e) => (crate::engine::sql::names::figure(e), &*e),
                    SelectItem::ExprWithAlias { expr, alias } => (Some(alias.value.clone()), &*expr),
                    _ => continue,
                };
                if let Expr::Cast { expr: inner, data_type, .. } = e {
                    if type_name(data_type).as_deref() == Some("regclass") && !is_text_literal(inner) {
                        let name = alias;
                        let call = call("eco_relation_name", vec![(**inner).clone()]);
                        *item = SelectItem::ExprWithAlias {
                            expr: call,
                            alias: Ident::with_quote('"', name.unwrap_or_else(|| "regclass".into())),
                        };
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The relations a query reads, schema-qualified as the sandbox resolved them.
struct Relations(Vec<String>);

impl Visitor for Relations {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        // A table function is no relation: a query over one and an empty relation is empty.
        if let TableFactor::Table { name, args: None, .. } = factor {
            self.0.push(name.to_string().to_lowercase());
        }
        ControlFlow::Continue(())
    }
}

/// Scalar subqueries that read only empty catalog relations become NULL, which is what they
/// answer.
struct EmptySubqueries;

impl VisitorMut for EmptySubqueries {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let reads_nothing = |query: &Query| {
            let mut relations = Relations(Vec::new());
            let _ = Visit::visit(query, &mut relations);
            let simple = matches!(query.body.as_ref(), SetExpr::Select(_));
            simple && !relations.0.is_empty() && relations.0.iter().all(|r| is_empty_relation(r))
        };
        match expr {
            Expr::Subquery(query) if reads_nothing(query) => *expr = Expr::Value(Value::Null.into()),
            // `ARRAY(subquery)` over no rows: an empty array.
            Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("array") => {
                if let FunctionArguments::Subquery(query) = &f.args {
                    if reads_nothing(query) {
                        *expr = Expr::Value(Value::SingleQuotedString("{}".into()).into());
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// Whether expressions call an aggregate (outside their subqueries).
struct CallsAggregate(bool, usize);

impl Visitor for CallsAggregate {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.1 += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.1 -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if self.1 > 0 {
            return ControlFlow::Continue(());
        }
        if let Expr::Function(f) = expr {
            let name = f.name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
            if AGGREGATES.contains(&name.as_str()) {
                self.0 = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}

/// Whether a query's body was reduced to no rows by [`blank_select`].
fn is_blank(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(s) => {
            s.from.is_empty() && matches!(&s.selection, Some(Expr::Value(v)) if v.value == Value::Boolean(false))
        }
        SetExpr::SetOperation { left, right, .. } => is_blank(left) && is_blank(right),
        SetExpr::Query(q) => is_blank(&q.body),
        _ => false,
    }
}

fn empty_factor(factor: &TableFactor, blank_ctes: &HashSet<String>) -> bool {
    match factor {
        TableFactor::Table { name, args: None, .. } => {
            let name = name.to_string().to_lowercase();
            is_empty_relation(&name) || blank_ctes.contains(&name)
        }
        TableFactor::Derived { subquery, .. } => is_blank(&subquery.body),
        _ => false,
    }
}

/// Whether a FROM item has no rows: its first relation is an empty catalog relation, or one
/// inner- or cross-joined to it is (and no right or full join brings rows back).
fn from_item_is_empty(item: &TableWithJoins, blank_ctes: &HashSet<String>) -> bool {
    let empty_factor = |f: &TableFactor| empty_factor(f, blank_ctes);
    let mut empty = empty_factor(&item.relation);
    for join in &item.joins {
        match &join.join_operator {
            JoinOperator::Join(_) | JoinOperator::Inner(_) | JoinOperator::CrossJoin(_) => {
                empty |= empty_factor(&join.relation);
            }
            JoinOperator::Left(_) | JoinOperator::LeftOuter(_) | JoinOperator::Semi(_) | JoinOperator::LeftSemi(_) => {
                empty |= empty_factor(&join.relation)
                    && matches!(join.join_operator, JoinOperator::Semi(_) | JoinOperator::LeftSemi(_));
            }
            _ => return false,
        }
    }
    empty
}

/// A SELECT over an empty catalog relation (no aggregate, no GROUP BY): its rows are none, so
/// its items become NULLs of the same names and its FROM goes (what it called — set-returning
/// functions, table functions — is never run).
fn blank_select(select: &mut Select, blank_ctes: &HashSet<String>) -> bool {
    // GROUP BY over no rows answers none; an aggregate without it answers one row.
    let grouped = match &select.group_by {
        GroupByExpr::Expressions(e, modifiers) if e.is_empty() && modifiers.is_empty() => false,
        GroupByExpr::Expressions(e, modifiers)
            if modifiers.is_empty()
                && !e.iter().any(|e| matches!(e, Expr::Rollup(_) | Expr::Cube(_) | Expr::GroupingSets(_))) =>
        {
            true
        }
        _ => return false,
    };
    if select.from.is_empty() || !select.from.iter().any(|item| from_item_is_empty(item, blank_ctes)) {
        return false;
    }
    if !grouped {
        let mut aggregate = CallsAggregate(false, 0);
        let _ = Visit::visit(&select.projection, &mut aggregate);
        if aggregate.0 || select.having.is_some() {
            return false;
        }
    }
    let mut items = Vec::with_capacity(select.projection.len());
    let mut taken = HashSet::new();
    for (i, item) in select.projection.iter().enumerate() {
        let name = match item {
            SelectItem::ExprWithAlias { alias, .. } => crate::engine::sql::names::ident_name(alias),
            SelectItem::UnnamedExpr(e) => {
                crate::engine::sql::names::figure(e).unwrap_or_else(|| crate::engine::sql::names::UNNAMED.into())
            }
            _ => return false,
        };
        // A name repeated in one SELECT is told apart as a positional answer's (see names::MARK).
        let name =
            if taken.insert(name.clone()) { name } else { format!("{name}{}{i}", crate::engine::sql::names::MARK) };
        items.push(SelectItem::ExprWithAlias {
            expr: Expr::Value(Value::Null.into()),
            alias: Ident::with_quote('"', name),
        });
    }
    select.group_by = GroupByExpr::Expressions(vec![], vec![]);
    select.having = None;
    select.projection = items;
    select.from = Vec::new();
    select.selection = Some(Expr::Value(Value::Boolean(false).into()));
    select.distinct = None;
    true
}

fn blank_body(body: &mut SetExpr, blank_ctes: &HashSet<String>) -> bool {
    match body {
        SetExpr::Select(select) => blank_select(select, blank_ctes),
        SetExpr::SetOperation { left, right, .. } => {
            let l = blank_body(left, blank_ctes);
            let r = blank_body(right, blank_ctes);
            l && r
        }
        SetExpr::Query(query) => blank_body(&mut query.body, blank_ctes),
        _ => false,
    }
}

/// Reduces the queries over empty catalog relations, CTEs and derived tables included.
struct NoRows(HashSet<String>);

impl VisitorMut for NoRows {
    type Break = ();

    // Inner queries first: a derived table reduced to no rows empties the query around it.
    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(with) = &mut query.with {
            for cte in &mut with.cte_tables {
                if blank_body(&mut cte.query.body, &self.0) || is_blank(&cte.query.body) {
                    cte.query.order_by = None;
                    self.0.insert(cte.alias.name.value.to_lowercase());
                }
            }
        }
        if blank_body(&mut query.body, &self.0) {
            query.order_by = None;
        }
        ControlFlow::Continue(())
    }
}

/// Before the sandbox's check: the names of `pg_catalog`'s relations qualified (see
/// [`qualify`]), and the parts of a query that read an empty catalog relation reduced to what
/// they answer — NULL, an empty array, no rows — so what they would have called is never checked
/// nor run.
pub fn prepare(statement: &mut Statement, local: &HashSet<String>) {
    let _ = VisitMut::visit(statement, &mut Qualify { local });
    let _ = VisitMut::visit(statement, &mut NoRows(HashSet::new()));
    let _ = VisitMut::visit(statement, &mut EmptySubqueries);
}

struct Qualify<'a> {
    local: &'a HashSet<String>,
}

impl VisitorMut for Qualify<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, args: None, .. } = factor {
            qualify(name, self.local);
        }
        ControlFlow::Continue(())
    }
}

/// Unqualified names of `pg_catalog`'s relations (not the query's CTEs nor the service's
/// tables) qualified, as PostgreSQL finds them; `information_schema.x` kept as is.
fn qualify(name: &mut ObjectName, local: &HashSet<String>) -> Option<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => crate::engine::sql::names::ident_name(i),
            other => other.to_string().to_lowercase(),
        })
        .collect();
    let parts: Vec<&str> = match parts.first().map(String::as_str) {
        Some("eco") if parts.len() == 3 => parts[1..].iter().map(String::as_str).collect(),
        _ => parts.iter().map(String::as_str).collect(),
    };
    let qualified = match parts[..] {
        [one] if in_pg_catalog(one) && !local.contains(one) => format!("pg_catalog.{one}"),
        [schema, table] => format!("{schema}.{table}"),
        _ => return None,
    };
    if !is_system(&qualified) {
        return None;
    }
    let (schema, table) = qualified.split_once('.')?;
    *name = ObjectName::from(vec![Ident::new(schema), Ident::new(table)]);
    Some(qualified)
}

/// Rewrites a checked statement's catalog syntax (see the module's documentation).
pub fn rewrite(statement: &mut Statement, user: &str) {
    let _ = VisitMut::visit(statement, &mut RegclassItems);
    let _ = VisitMut::visit(statement, &mut CatalogScalarSubqueries);
    let _ = VisitMut::visit(statement, &mut CatalogSyntax { user });
}
