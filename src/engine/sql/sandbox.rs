//! The analyst's SQL, checked before anything runs (API-CONTRACT §7): exactly one read-only
//! statement (a query: SELECT, WITH, UNION…) in PostgreSQL's dialect whose relations are the
//! tables the service offers (`catalog` and the views `queries/` creates) or the query's own
//! CTEs, and whose functions are on an allow-list. DataFusion has table functions, `COPY`,
//! `CREATE EXTERNAL TABLE` and URL-backed tables, and will have more: everything not listed here
//! is refused, so a function a later DataFusion adds is refused until someone lists it.

use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{Expr, ObjectName, ObjectNamePart, Query, SetExpr, Statement, TableFactor, Visit, Visitor};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// Why a statement is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not valid SQL (the parser's reason).
    Syntax(String),
    /// Not one read-only query, or a function or table function off the allow-list.
    Forbidden(String),
    /// A relation that is neither an offered table nor one of the query's CTEs.
    UnknownTable(String),
    /// Valid PostgreSQL that this engine cannot answer as PostgreSQL does.
    Unsupported(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Syntax(m) | Refused::Forbidden(m) | Refused::UnknownTable(m) | Refused::Unsupported(m) => {
                f.write_str(m)
            }
        }
    }
}

/// Scalar, aggregate and window functions an analyst's query may call: pure computations over
/// the values of the offered tables, as PostgreSQL names them. Nothing that reads, writes, sleeps
/// or names a file.
pub const FUNCTIONS: &[&str] = &[
    // aggregates
    "avg",
    "count",
    "max",
    "min",
    "sum",
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
    "string_agg",
    "array_agg",
    "bool_and",
    "bool_or",
    "every",
    "bit_and",
    "bit_or",
    "bit_xor",
    "percentile_cont",
    "percentile_disc",
    "mode",
    "median",
    "grouping",
    // window
    "row_number",
    "rank",
    "dense_rank",
    "percent_rank",
    "cume_dist",
    "ntile",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "nth_value",
    // numbers
    "abs",
    "ceil",
    "ceiling",
    "floor",
    "round",
    "trunc",
    "sqrt",
    "cbrt",
    "power",
    "pow",
    "exp",
    "ln",
    "log",
    "log10",
    "sign",
    "mod",
    "div",
    "gcd",
    "lcm",
    "factorial",
    "pi",
    "degrees",
    "radians",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "cot",
    "greatest",
    "least",
    "random",
    "isnan",
    "nanvl",
    "iszero",
    // conditionals
    "coalesce",
    "nullif",
    // text
    "lower",
    "upper",
    "length",
    "char_length",
    "character_length",
    "octet_length",
    "bit_length",
    "substr",
    "substring",
    "trim",
    "ltrim",
    "rtrim",
    "btrim",
    "concat",
    "concat_ws",
    "replace",
    "left",
    "right",
    "lpad",
    "rpad",
    "starts_with",
    "ends_with",
    "strpos",
    "position",
    "reverse",
    "initcap",
    "split_part",
    "regexp_like",
    "regexp_replace",
    "regexp_match",
    "regexp_count",
    "repeat",
    "translate",
    "ascii",
    "chr",
    "to_hex",
    "overlay",
    "string_to_array",
    // dates
    "date_part",
    "date_trunc",
    "date_bin",
    "extract",
    "now",
    "current_date",
    "current_time",
    "make_date",
    "to_char",
    "to_date",
    "to_timestamp",
    // the session (constants of this service: `version()` in PostgreSQL's form)
    "version",
    "current_database",
    "current_schema",
    "current_catalog",
    "pg_client_encoding",
    // arrays
    "array_to_string",
    "array_length",
    "cardinality",
    "array_position",
    "array_remove",
    "array_distinct",
    "array_sort",
];

/// The one statement of a request, checked: its text is what runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub sql: String,
    /// The offered tables it reads (lower case).
    pub tables: Vec<String>,
}

/// A name as PostgreSQL folds it: each part in lower case unless quoted.
fn name_of(name: &ObjectName) -> String {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => super::names::ident_name(i),
            other => other.to_string().to_lowercase(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Collects the query's CTE names.
struct Ctes(HashSet<String>);

impl Visitor for Ctes {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.0.insert(cte.alias.name.value.to_lowercase());
            }
        }
        ControlFlow::Continue(())
    }
}

/// Checks relations and functions.
struct Check<'a> {
    offered: &'a [String],
    ctes: HashSet<String>,
    tables: Vec<String>,
}

impl Visitor for Check<'_> {
    type Break = Refused;

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<Refused> {
        if let SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) = query.body.as_ref() {
            return ControlFlow::Break(Refused::Forbidden("only read-only queries are accepted".into()));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<Refused> {
        match factor {
            TableFactor::Table { name, args: None, .. } => {
                let full = name_of(name);
                if super::pg_catalog::is_system(full.strip_prefix("eco.").unwrap_or(&full)) {
                    return ControlFlow::Continue(());
                }
                // `catalog`, `public.catalog` and `eco.public.catalog` are one table.
                let table = full
                    .strip_prefix("eco.public.")
                    .or_else(|| full.strip_prefix("public."))
                    .unwrap_or(&full)
                    .to_string();
                if self.ctes.contains(&table) {
                    return ControlFlow::Continue(());
                }
                if self.offered.contains(&table) {
                    if !self.tables.contains(&table) {
                        self.tables.push(table);
                    }
                    return ControlFlow::Continue(());
                }
                if table.contains('/') || table.contains(':') || table.contains('\\') {
                    return ControlFlow::Break(Refused::Forbidden(format!(
                        "a file or URL cannot be read; tables are read by name ({})",
                        self.offered.join(", ")
                    )));
                }
                ControlFlow::Break(Refused::UnknownTable(format!(
                    "table '{table}' does not exist (tables: {})",
                    self.offered.join(", ")
                )))
            }
            TableFactor::Table { name, .. } | TableFactor::Function { name, .. } => {
                ControlFlow::Break(Refused::Forbidden(format!("table function '{}' is not allowed", name_of(name))))
            }
            // Subqueries in FROM, LATERAL ones included, and parenthesised joins.
            TableFactor::Derived { .. } | TableFactor::NestedJoin { .. } => ControlFlow::Continue(()),
            _ => ControlFlow::Break(Refused::Forbidden("this kind of FROM item is not allowed".into())),
        }
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<Refused> {
        if let Expr::Function(f) = expr {
            let name = name_of(&f.name);
            // `pg_catalog.version()` is `version()`: PostgreSQL's built-ins live in pg_catalog.
            let bare = name.strip_prefix("pg_catalog.").unwrap_or(&name);
            if bare.contains('.') || !(FUNCTIONS.contains(&bare) || super::pg_catalog::FUNCTIONS.contains(&bare)) {
                return ControlFlow::Break(Refused::Forbidden(format!("function '{name}' is not allowed")));
            }
        }
        ControlFlow::Continue(())
    }
}

/// Parses `sql` in PostgreSQL's dialect and checks it against the sandbox; `offered` are the
/// table names (lower case); `user` is who asks (`current_user`). The checked text has every
/// unnamed output column named as PostgreSQL names it ([`super::names`]); `positional` answers
/// (the PostgreSQL door's) may repeat a name. Besides the offered tables, a query may read the
/// system catalog ([`super::pg_catalog`]).
pub fn check(sql: &str, offered: &[String], user: &str, positional: bool) -> Result<Checked, Refused> {
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| Refused::Syntax(e.to_string()))?;
    let statement = match statements.as_slice() {
        [one] => one,
        [] => return Err(Refused::Syntax("no statement".into())),
        _ => return Err(Refused::Forbidden(format!("exactly one statement is accepted ({} given)", statements.len()))),
    };
    let Statement::Query(query) = statement else {
        let kind = statement.to_string();
        let word = kind.split_whitespace().next().unwrap_or("this statement").to_uppercase();
        return Err(Refused::Forbidden(format!("only read-only queries are accepted ({word} is not)")));
    };
    if query.body.as_ref().to_string().to_uppercase().contains(" INTO ") {
        return Err(Refused::Forbidden("SELECT … INTO is not allowed".into()));
    }
    let mut ctes = Ctes(HashSet::new());
    let _ = statement.visit(&mut ctes);
    let mut statement = statements.remove(0);
    let local: HashSet<String> = ctes.0.iter().cloned().chain(offered.iter().cloned()).collect();
    super::pg_catalog::prepare(&mut statement, &local);
    let mut checker = Check { offered, ctes: ctes.0, tables: Vec::new() };
    if let ControlFlow::Break(refused) = statement.visit(&mut checker) {
        return Err(refused);
    }
    let tables = checker.tables;
    super::names::name_outputs(&mut statement, positional).map_err(Refused::Unsupported)?;
    super::rewrite::rewrite(&mut statement).map_err(Refused::Unsupported)?;
    super::pg_catalog::rewrite(&mut statement, user);
    Ok(Checked { sql: statement.to_string(), tables })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered() -> Vec<String> {
        vec!["catalog".into(), "vw_metrics".into(), "vw_eco_score".into()]
    }

    fn check(sql: &str, offered: &[String]) -> Result<Checked, Refused> {
        super::check(sql, offered, "eco", false)
    }

    fn refused(sql: &str) -> Refused {
        check(sql, &offered()).unwrap_err()
    }

    #[test]
    fn read_only_queries_over_the_offered_tables_pass() {
        for sql in [
            "SELECT marca, AVG(co2_fossil_g_km) FROM catalog WHERE ano >= 2015 GROUP BY marca HAVING COUNT(*) > 2",
            "WITH b AS (SELECT marca, MAX(eco_score) AS m FROM vw_eco_score GROUP BY marca) SELECT * FROM b ORDER BY m",
            "SELECT c.id, e.eco_score FROM catalog c JOIN vw_eco_score e ON c.id = e.id",
            "SELECT marca FROM catalog UNION SELECT marca FROM vw_metrics",
            "SELECT DISTINCT CASE WHEN ano > 2020 THEN 'novo' ELSE 'antigo' END, CAST(ano AS DOUBLE PRECISION) FROM catalog",
            "SELECT c.marca, t.n FROM catalog c, LATERAL (SELECT count(*) AS n FROM catalog d WHERE d.marca = c.marca) t",
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ano), mode() WITHIN GROUP (ORDER BY marca) FROM catalog",
            "SELECT * FROM (SELECT ano FROM catalog) t WHERE ano IN (SELECT ano FROM catalog WHERE marca = 'Fiat')",
        ] {
            assert!(check(sql, &offered()).is_ok(), "{sql}: {:?}", check(sql, &offered()));
        }
        assert_eq!(check("select 1 from CATALOG", &offered()).unwrap().tables, vec!["catalog"]);
    }

    #[test]
    fn everything_else_is_refused() {
        for sql in [
            "DROP TABLE catalog",
            "CREATE TABLE x AS SELECT * FROM catalog",
            "INSERT INTO catalog VALUES (1)",
            "COPY catalog TO '/tmp/x.csv'",
            "SET x = 1",
            "SELECT 1; SELECT 2",
            "EXPLAIN SELECT * FROM catalog",
            "SHOW TABLES",
            "COPY (SELECT 1) TO '/tmp/x.csv'",
            "CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '/etc/passwd'",
            "SET datafusion.execution.target_partitions = 1",
            "SET search_path = public",
        ] {
            assert!(matches!(refused(sql), Refused::Forbidden(_)), "{sql}: {:?}", refused(sql));
        }
        for sql in [
            "SELECT * FROM read_parquet('/etc/passwd')",
            "SELECT * FROM read_csv('https://example.com/x.csv')",
            "SELECT read_json('x') FROM catalog",
            "SELECT * FROM catalog, LATERAL generate_series(1, 10)",
            "SELECT pg_sleep(10) FROM catalog",
            "SELECT * FROM TABLE(read_ipc('x'))",
            "SELECT * FROM generate_series(1, 10)",
            "SELECT * FROM range(1, 10)",
            "SELECT * FROM catalog, unnest(ARRAY[1, 2])",
            "SELECT * FROM 'file:///etc/passwd'",
            "SELECT * FROM \"/etc/passwd\"",
        ] {
            let r = refused(sql);
            assert!(matches!(r, Refused::Forbidden(_)), "{sql}: {r:?}");
            assert!(!r.to_string().contains("/etc"), "{r}");
        }
        assert!(matches!(refused("SELECT * FROM secrets"), Refused::UnknownTable(m) if m.contains("'secrets'")));
        for sql in [
            "SELECT * FROM datafusion.public.catalog",
            "SELECT * FROM other.catalog",
            "SELECT * FROM information_schema.secrets",
            "SELECT * FROM pg_catalog.pg_authid",
        ] {
            assert!(matches!(refused(sql), Refused::UnknownTable(_)), "{sql}: {:?}", refused(sql));
        }
        // The tables live in schema `public` of database `eco`.
        for sql in ["SELECT 1 FROM public.catalog", "SELECT 1 FROM eco.public.vw_metrics", "SELECT 1 FROM \"catalog\""]
        {
            assert!(check(sql, &offered()).is_ok(), "{sql}");
        }
        assert!(matches!(refused("SELEC * FROM catalog"), Refused::Syntax(_)));
        assert!(matches!(refused(""), Refused::Syntax(_)));
    }
}
