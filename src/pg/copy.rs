//! `COPY (query) TO STDOUT` and `COPY table TO STDOUT` (API-CONTRACT §7, PostgreSQL protocol):
//! psql's `\copy (…) TO 'file'`, connectorx (Polars' `read_database_uri`) and the ADBC driver
//! read whole answers this way, in text, CSV or binary. The query inside is checked and run like
//! any other; a COPY that reads (`FROM`) or names a file or a program is refused (42501).

use sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Statement};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// How the rows are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// PostgreSQL's text format: a delimiter (tab), `\N` for null.
    Text { delimiter: char, null: String },
    /// CSV, with an optional header line.
    Csv { delimiter: char, null: String, quote: char, header: bool },
    /// The PGCOPY binary format.
    Binary,
}

/// A COPY to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOut {
    /// The query whose rows are copied.
    pub query: String,
    pub format: Format,
}

/// The COPY `sql` is: `None` when it is no COPY, `Some(Err(reason))` for one that is not
/// allowed.
pub fn parse(sql: &str) -> Option<Result<CopyOut, String>> {
    let first = sql.split_whitespace().next()?;
    if !first.eq_ignore_ascii_case("copy") {
        return None;
    }
    let statements = match Parser::parse_sql(&PostgreSqlDialect {}, sql) {
        Ok(s) => s,
        Err(e) => return Some(Err(format!("COPY: {e}"))),
    };
    let [Statement::Copy { source, to, target, options, legacy_options, .. }] = statements.as_slice() else {
        return Some(Err("COPY: one statement is accepted".into()));
    };
    if !to || !matches!(target, CopyTarget::Stdout) {
        return Some(Err(
            "only COPY … TO STDOUT is allowed (the service is read-only and reads or writes no file)".into()
        ));
    }
    let query = match source {
        CopySource::Query(q) => q.to_string(),
        CopySource::Table { table_name, columns } => {
            let list = if columns.is_empty() {
                "*".to_string()
            } else {
                columns.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            };
            format!("SELECT {list} FROM {table_name}")
        }
    };
    let (mut kind, mut delimiter, mut null, mut quote, mut header) = ("text".to_string(), None, None, '"', false);
    for option in options {
        match option {
            CopyOption::Format(f) => kind = f.value.to_lowercase(),
            CopyOption::Delimiter(d) => delimiter = Some(*d),
            CopyOption::Null(n) => null = Some(n.clone()),
            CopyOption::Header(h) => header = *h,
            CopyOption::Quote(q) => quote = *q,
            CopyOption::Encoding(e) if e.eq_ignore_ascii_case("utf8") || e.eq_ignore_ascii_case("utf-8") => {}
            other => return Some(Err(format!("COPY option {other} is not supported"))),
        }
    }
    for option in legacy_options {
        match option {
            CopyLegacyOption::Binary => kind = "binary".into(),
            CopyLegacyOption::Delimiter(d) => delimiter = Some(*d),
            CopyLegacyOption::Null(n) => null = Some(n.clone()),
            CopyLegacyOption::Header => header = true,
            CopyLegacyOption::Csv(csv) => {
                kind = "csv".into();
                for o in csv {
                    match o {
                        CopyLegacyCsvOption::Header => header = true,
                        CopyLegacyCsvOption::Quote(q) => quote = *q,
                        other => return Some(Err(format!("COPY option {other} is not supported"))),
                    }
                }
            }
            other => return Some(Err(format!("COPY option {other} is not supported"))),
        }
    }
    let format = match kind.as_str() {
        "text" => Format::Text { delimiter: delimiter.unwrap_or('\t'), null: null.unwrap_or_else(|| "\\N".into()) },
        "csv" => Format::Csv { delimiter: delimiter.unwrap_or(','), null: null.unwrap_or_default(), quote, header },
        "binary" => Format::Binary,
        other => return Some(Err(format!("COPY format {other} is not supported (text, csv, binary)"))),
    };
    Some(Ok(CopyOut { query, format }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_to_the_client_in_every_format() {
        let copy = parse("COPY (SELECT marca FROM catalog) TO STDOUT").unwrap().unwrap();
        assert_eq!(copy.query, "SELECT marca FROM catalog");
        assert_eq!(copy.format, Format::Text { delimiter: '\t', null: "\\N".into() });
        // psql's \copy … csv header, the options list, connectorx's and ADBC's binary.
        let csv = parse("COPY ( SELECT 1 ) TO STDOUT csv header").unwrap().unwrap();
        assert_eq!(csv.format, Format::Csv { delimiter: ',', null: String::new(), quote: '"', header: true });
        let csv = parse("COPY (SELECT 1) TO STDOUT WITH (FORMAT csv, HEADER true, DELIMITER ';')").unwrap().unwrap();
        assert_eq!(csv.format, Format::Csv { delimiter: ';', null: String::new(), quote: '"', header: true });
        assert_eq!(parse("COPY (SELECT 1) TO STDOUT WITH BINARY").unwrap().unwrap().format, Format::Binary);
        assert_eq!(parse("COPY (SELECT 1) TO STDOUT (FORMAT binary)").unwrap().unwrap().format, Format::Binary);
        assert_eq!(
            parse("copy catalog (id, marca) to stdout").unwrap().unwrap().query,
            "SELECT id, marca FROM catalog"
        );
        for refused in [
            "COPY catalog FROM STDIN",
            "COPY catalog TO '/tmp/x.csv'",
            "COPY (SELECT 1) TO PROGRAM 'rm -rf /'",
            "COPY catalog FROM '/etc/passwd'",
        ] {
            assert!(parse(refused).unwrap().is_err(), "{refused}");
        }
        assert!(parse("SELECT 1").is_none());
    }
}
