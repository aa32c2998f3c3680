//! The session statements PostgreSQL clients send on their own (API-CONTRACT §7, PostgreSQL
//! protocol): `BEGIN`/`START TRANSACTION`/`COMMIT`/`END`/`ROLLBACK`/`ABORT` (a read-only
//! transaction over one dataset version), `SET`/`RESET`/`SHOW` of session settings (unknown ones
//! are kept and shown back), `DISCARD`, `DEALLOCATE` and savepoints (nothing to undo). psycopg and SQLAlchemy open a
//! transaction before their first query, pgjdbc sets `extra_float_digits` when it connects, BI
//! tools read `SHOW` answers: none of them is a query for the engine.

use std::collections::BTreeMap;

/// A session statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    Begin,
    Commit,
    Rollback,
    /// `SET name = value` (the value without its quotes), or `SET TRANSACTION …` (nothing kept).
    Set(Option<(String, String)>),
    /// `RESET name`, or `RESET ALL` (`None`).
    Reset(Option<String>),
    /// `SHOW name`, or `SHOW ALL` (`None`).
    Show(Option<String>),
    /// `DISCARD ALL` (and its narrower forms).
    Discard,
    Deallocate,
    /// `SAVEPOINT`, `RELEASE [SAVEPOINT]`, `ROLLBACK TO [SAVEPOINT]`: nothing is written, so
    /// there is nothing to keep or undo (the command tag to answer).
    Savepoint(&'static str),
}

/// The settings a session starts with: what PostgreSQL 16 answers a client by default, as far
/// as this read-only service goes. The first element is the name `SHOW` answers under.
const DEFAULTS: &[(&str, &str, &str)] = &[
    ("application_name", "", "Sets the application name to be reported in statistics and logs."),
    ("client_encoding", "UTF8", "Sets the client's character set encoding."),
    ("DateStyle", "ISO, MDY", "Sets the display format for date and time values."),
    (
        "default_transaction_isolation",
        "read committed",
        "Sets the transaction isolation level of each new transaction.",
    ),
    ("default_transaction_read_only", "on", "Sets the default read-only status of new transactions."),
    ("extra_float_digits", "1", "Sets the number of digits displayed for floating-point values."),
    ("integer_datetimes", "on", "Shows whether datetimes are integer based."),
    ("IntervalStyle", "postgres", "Sets the display format for interval values."),
    ("is_superuser", "off", "Shows whether the current user is a superuser."),
    ("lc_collate", "C.UTF-8", "Shows the collation order locale."),
    ("lc_ctype", "C.UTF-8", "Shows the character classification and case conversion locale."),
    ("max_identifier_length", "63", "Shows the maximum identifier length."),
    ("search_path", "\"$user\", public", "Sets the schema search order for names that are not schema-qualified."),
    ("server_encoding", "UTF8", "Shows the server (database) character set encoding."),
    ("server_version", super::SERVER_VERSION, "Shows the server version."),
    ("server_version_num", super::SERVER_VERSION_NUM, "Shows the server version as an integer."),
    ("standard_conforming_strings", "on", "Causes '...' strings to treat backslashes literally."),
    ("statement_timeout", "0", "Sets the maximum allowed duration of any statement."),
    ("TimeZone", "UTC", "Sets the time zone for displaying and interpreting time stamps."),
    ("transaction_isolation", "read committed", "Sets the current transaction's isolation level."),
    ("transaction_read_only", "on", "Sets the current transaction's read-only status."),
];

/// The canonical name of a setting (`timezone` → `TimeZone`), as `SHOW` answers it.
fn canonical(name: &str) -> String {
    let lower = name.to_lowercase();
    let lower = match lower.as_str() {
        "time zone" => "timezone".to_string(),
        "transaction isolation level" => "transaction_isolation".to_string(),
        "session authorization" => "session_authorization".to_string(),
        _ => lower,
    };
    DEFAULTS.iter().find(|(n, _, _)| n.to_lowercase() == lower).map(|(n, _, _)| n.to_string()).unwrap_or(lower)
}

/// A value as written in `SET`: without its quotes, list items joined by `, `.
fn value_of(words: &str) -> String {
    words
        .split(',')
        .map(|item| {
            let item = item.trim();
            let unquoted = item.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).unwrap_or(item);
            unquoted.replace("''", "'")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The session statement `sql` is, if it is one.
pub fn parse(sql: &str) -> Option<Statement> {
    let text = sql.trim().trim_end_matches(';').trim();
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let first = *words.first()?;
    let rest_of = |n: usize| -> String {
        // The original text after the first `n` words (values keep their case).
        let mut rest = text;
        for _ in 0..n {
            rest = rest.trim_start();
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            rest = &rest[end..];
        }
        rest.trim().to_string()
    };
    match first {
        "begin" => Some(Statement::Begin),
        "start" if words.get(1) == Some(&"transaction") => Some(Statement::Begin),
        "commit" | "end" => Some(Statement::Commit),
        "rollback" | "abort" => {
            if words.get(1).is_some_and(|w| *w == "to") {
                Some(Statement::Savepoint("ROLLBACK"))
            } else if words.contains(&"prepared") {
                None
            } else {
                Some(Statement::Rollback)
            }
        }
        "savepoint" if words.len() == 2 => Some(Statement::Savepoint("SAVEPOINT")),
        "release" if words.len() >= 2 => Some(Statement::Savepoint("RELEASE")),
        "set" => {
            let mut i = 1;
            if matches!(words.get(1), Some(&"session") | Some(&"local")) {
                i = 2;
            }
            match words.get(i) {
                Some(&"transaction") | Some(&"characteristics") => return Some(Statement::Set(None)),
                Some(&"time") if words.get(i + 1) == Some(&"zone") => {
                    return Some(Statement::Set(Some(("TimeZone".into(), value_of(&rest_of(i + 2))))));
                }
                Some(&"names") => {
                    return Some(Statement::Set(Some(("client_encoding".into(), value_of(&rest_of(i + 1))))));
                }
                _ => {}
            }
            let assignment = rest_of(i);
            let (name, value) = match assignment.split_once('=') {
                Some((n, v)) => (n.trim().to_string(), v.trim().to_string()),
                None => {
                    let (n, v) = assignment.split_once(char::is_whitespace)?;
                    let v = v.trim();
                    let v = v.strip_prefix("to ").or_else(|| v.strip_prefix("TO ")).unwrap_or(v);
                    (n.trim().to_string(), v.trim().to_string())
                }
            };
            if name.is_empty() || value.is_empty() {
                return None;
            }
            let value = if value.eq_ignore_ascii_case("default") { String::new() } else { value_of(&value) };
            Some(Statement::Set(Some((canonical(name.trim_matches('"')), value))))
        }
        "reset" => match words.get(1) {
            Some(&"all") => Some(Statement::Reset(None)),
            Some(_) => Some(Statement::Reset(Some(canonical(&rest_of(1))))),
            None => None,
        },
        "show" => match words.get(1) {
            Some(&"all") => Some(Statement::Show(None)),
            Some(_) => Some(Statement::Show(Some(canonical(&rest_of(1))))),
            None => None,
        },
        "discard" => Some(Statement::Discard),
        "deallocate" => Some(Statement::Deallocate),
        _ => None,
    }
}

/// One connection's settings.
#[derive(Debug, Default)]
pub struct Settings {
    /// Values set in this session (by canonical name).
    set: BTreeMap<String, String>,
    /// The values the client sent at start-up (`application_name`, `client_encoding`…).
    startup: BTreeMap<String, String>,
}

impl Settings {
    /// Keeps the settings a client sent in its start-up message.
    pub fn with_startup<'a>(pairs: impl IntoIterator<Item = (&'a String, &'a String)>) -> Settings {
        let mut settings = Settings::default();
        for (k, v) in pairs {
            let name = canonical(k);
            if DEFAULTS.iter().any(|(n, _, _)| *n == name) && name != "server_version" {
                settings.startup.insert(name, v.clone());
            }
        }
        settings
    }

    pub fn set(&mut self, name: String, value: String) {
        self.set.insert(name, value);
    }

    pub fn reset(&mut self, name: Option<&str>) {
        match name {
            Some(n) => drop(self.set.remove(n)),
            None => self.set.clear(),
        }
    }

    /// The value `SHOW name` answers, or `None` for a setting this session never saw.
    pub fn get(&self, name: &str) -> Option<String> {
        self.set
            .get(name)
            .or_else(|| self.startup.get(name))
            .cloned()
            .or_else(|| DEFAULTS.iter().find(|(n, _, _)| *n == name).map(|(_, v, _)| v.to_string()))
    }

    /// Every setting: name, value, description.
    pub fn all(&self) -> Vec<(String, String, String)> {
        let mut rows: BTreeMap<String, (String, String)> =
            DEFAULTS.iter().map(|(n, v, d)| (n.to_string(), (v.to_string(), d.to_string()))).collect();
        for (n, v) in self.startup.iter().chain(&self.set) {
            let description = rows.get(n).map(|(_, d)| d.clone()).unwrap_or_default();
            rows.insert(n.clone(), (v.clone(), description));
        }
        rows.into_iter().map(|(n, (v, d))| (n, v, d)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_statements_as_clients_send_them() {
        assert_eq!(parse("BEGIN"), Some(Statement::Begin));
        assert_eq!(parse("begin isolation level read committed, read only;"), Some(Statement::Begin));
        assert_eq!(parse("START TRANSACTION READ ONLY"), Some(Statement::Begin));
        assert_eq!(parse("COMMIT"), Some(Statement::Commit));
        assert_eq!(parse("end"), Some(Statement::Commit));
        assert_eq!(parse("ROLLBACK"), Some(Statement::Rollback));
        assert_eq!(parse("ROLLBACK TO SAVEPOINT a"), Some(Statement::Savepoint("ROLLBACK")));
        assert_eq!(parse("SAVEPOINT sa_1"), Some(Statement::Savepoint("SAVEPOINT")));
        assert_eq!(parse("RELEASE SAVEPOINT sa_1"), Some(Statement::Savepoint("RELEASE")));
        assert_eq!(parse("ROLLBACK PREPARED 'x'"), None);
        assert_eq!(
            parse("SET extra_float_digits = 3"),
            Some(Statement::Set(Some(("extra_float_digits".into(), "3".into()))))
        );
        assert_eq!(
            parse("SET application_name TO 'DBeaver 24'"),
            Some(Statement::Set(Some(("application_name".into(), "DBeaver 24".into()))))
        );
        assert_eq!(
            parse("set datestyle to 'ISO', 'DMY'"),
            Some(Statement::Set(Some(("DateStyle".into(), "ISO, DMY".into()))))
        );
        assert_eq!(
            parse("SET TIME ZONE 'America/Sao_Paulo'"),
            Some(Statement::Set(Some(("TimeZone".into(), "America/Sao_Paulo".into()))))
        );
        assert_eq!(parse("SET SESSION my.option = 'x'"), Some(Statement::Set(Some(("my.option".into(), "x".into())))));
        assert_eq!(parse("SET TRANSACTION READ ONLY"), Some(Statement::Set(None)));
        assert_eq!(parse("SHOW TimeZone"), Some(Statement::Show(Some("TimeZone".into()))));
        assert_eq!(
            parse("show transaction isolation level"),
            Some(Statement::Show(Some("transaction_isolation".into())))
        );
        assert_eq!(parse("SHOW ALL"), Some(Statement::Show(None)));
        assert_eq!(parse("RESET ALL"), Some(Statement::Reset(None)));
        assert_eq!(parse("DISCARD ALL"), Some(Statement::Discard));
        assert_eq!(parse("DEALLOCATE ALL"), Some(Statement::Deallocate));
        assert_eq!(parse("SELECT 1"), None);
        assert_eq!(parse("SET"), None);
    }

    #[test]
    fn settings_are_kept_reset_and_shown() {
        let startup = BTreeMap::from([("application_name".to_string(), "psql".to_string())]);
        let mut s = Settings::with_startup(&startup);
        assert_eq!(s.get("application_name").as_deref(), Some("psql"));
        assert_eq!(s.get("TimeZone").as_deref(), Some("UTC"));
        assert_eq!(s.get("my.option"), None);
        s.set("my.option".into(), "x".into());
        s.set("TimeZone".into(), "America/Sao_Paulo".into());
        assert_eq!(s.get("my.option").as_deref(), Some("x"));
        assert!(s.all().iter().any(|(n, v, _)| n == "my.option" && v == "x"));
        s.reset(Some("TimeZone"));
        assert_eq!(s.get("TimeZone").as_deref(), Some("UTC"));
        s.reset(None);
        assert_eq!(s.get("my.option"), None);
    }
}

/// A server-side cursor statement (`DECLARE … CURSOR FOR`, `FETCH`, `MOVE`, `CLOSE`): pandas'
/// chunked reads and SQLAlchemy's `stream_results` use them through psycopg's named cursors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cursor {
    /// `DECLARE name … CURSOR … FOR query`.
    Declare { name: String, query: String },
    /// `FETCH`/`MOVE` (`moves` true: no rows answered) of at most `count` rows (`None`: all).
    Fetch { name: String, count: Option<usize>, moves: bool },
    /// `CLOSE name`, or `CLOSE ALL` (`None`).
    Close(Option<String>),
}

/// A cursor name as PostgreSQL folds it.
fn cursor_name(word: &str) -> String {
    match word.strip_prefix('"').and_then(|w| w.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => word.to_lowercase(),
    }
}

/// The cursor statement `sql` is, if it is one (`Err` for a form not supported: backwards).
pub fn parse_cursor(sql: &str) -> Option<Result<Cursor, String>> {
    let text = sql.trim().trim_end_matches(';').trim();
    let words: Vec<&str> = text.split_whitespace().collect();
    let first = words.first()?.to_lowercase();
    match first.as_str() {
        "declare" => {
            let name = cursor_name(words.get(1)?);
            // The query follows the first `FOR` after `CURSOR`.
            let lower = text.to_lowercase();
            let cursor_at = lower.find(" cursor")?;
            let for_at = lower[cursor_at..].find(" for ").map(|i| cursor_at + i)?;
            Some(Ok(Cursor::Declare { name, query: text[for_at + 5..].trim().to_string() }))
        }
        "fetch" | "move" => {
            let moves = first == "move";
            let mut rest: Vec<String> = words[1..].iter().map(|w| w.to_string()).collect();
            let name = cursor_name(&rest.pop()?);
            if rest.last().is_some_and(|w| w.eq_ignore_ascii_case("from") || w.eq_ignore_ascii_case("in")) {
                rest.pop();
            }
            let lower: Vec<String> = rest.iter().map(|w| w.to_lowercase()).collect();
            let count = match lower.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
                [] | ["next"] | ["forward"] => Some(1),
                ["all"] | ["forward", "all"] => None,
                [n] | ["forward", n] => match n.parse::<i64>() {
                    Ok(n) if n >= 0 => Some(n as usize),
                    _ => return Some(Err(format!("{} {n}: only forward fetches are supported", first.to_uppercase()))),
                },
                other => {
                    return Some(Err(format!(
                        "{} {}: only forward fetches are supported",
                        first.to_uppercase(),
                        other.join(" ").to_uppercase()
                    )))
                }
            };
            Some(Ok(Cursor::Fetch { name, count, moves }))
        }
        "close" => match words.get(1) {
            Some(w) if w.eq_ignore_ascii_case("all") => Some(Ok(Cursor::Close(None))),
            Some(w) => Some(Ok(Cursor::Close(Some(cursor_name(w))))),
            None => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod cursor_tests {
    use super::*;

    #[test]
    fn cursor_statements_as_psycopg_sends_them() {
        assert_eq!(
            parse_cursor("DECLARE \"c_1\" NO SCROLL CURSOR WITHOUT HOLD FOR SELECT marca FROM catalog"),
            Some(Ok(Cursor::Declare { name: "c_1".into(), query: "SELECT marca FROM catalog".into() }))
        );
        assert_eq!(
            parse_cursor("declare c cursor with hold for select 1"),
            Some(Ok(Cursor::Declare { name: "c".into(), query: "select 1".into() }))
        );
        assert_eq!(
            parse_cursor("FETCH FORWARD 1000 FROM \"c_1\""),
            Some(Ok(Cursor::Fetch { name: "c_1".into(), count: Some(1000), moves: false }))
        );
        assert_eq!(
            parse_cursor("FETCH ALL c"),
            Some(Ok(Cursor::Fetch { name: "c".into(), count: None, moves: false }))
        );
        assert_eq!(parse_cursor("FETCH c"), Some(Ok(Cursor::Fetch { name: "c".into(), count: Some(1), moves: false })));
        assert_eq!(
            parse_cursor("MOVE 5 IN c"),
            Some(Ok(Cursor::Fetch { name: "c".into(), count: Some(5), moves: true }))
        );
        assert!(parse_cursor("FETCH BACKWARD 2 FROM c").unwrap().is_err());
        assert!(parse_cursor("FETCH -2 FROM c").unwrap().is_err());
        assert_eq!(parse_cursor("CLOSE \"c_1\""), Some(Ok(Cursor::Close(Some("c_1".into())))));
        assert_eq!(parse_cursor("CLOSE ALL"), Some(Ok(Cursor::Close(None))));
        assert_eq!(parse_cursor("SELECT 1"), None);
    }
}

/// The statements of a simple query, split at the semicolons outside quotes, comments and
/// dollar-quoted strings; statements with nothing but blanks and comments are left out.
pub fn split_statements(query: &str) -> Vec<&str> {
    let bytes = query.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i, mut content) = (0, 0, false);
    fn push<'a>(query: &'a str, from: usize, to: usize, content: bool, out: &mut Vec<&'a str>) {
        let text = query[from..to].trim();
        if content && !text.is_empty() {
            out.push(text);
        }
    }
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' => {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == quote {
                        if bytes.get(i + 1) == Some(&quote) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                content = true;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                while i < bytes.len() {
                    if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                continue;
            }
            b'$' => {
                // A dollar quote: $$ or $tag$ up to the same delimiter.
                let tag_end = query[i + 1..].find('$').map(|k| i + 1 + k);
                let tag_ok = tag_end.is_some_and(|e| query[i + 1..e].chars().all(|c| c.is_alphanumeric() || c == '_'))
                    && !query[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
                if let (true, Some(e)) = (tag_ok, tag_end) {
                    let tag = &query[i..=e];
                    match query[e + 1..].find(tag) {
                        Some(k) => i = e + 1 + k + tag.len() - 1,
                        None => i = bytes.len() - 1,
                    }
                }
                content = true;
            }
            b';' => {
                push(query, start, i, content, &mut out);
                start = i + 1;
                content = false;
            }
            c if !c.is_ascii_whitespace() => content = true,
            _ => {}
        }
        i += 1;
    }
    push(query, start, bytes.len(), content, &mut out);
    out
}

#[cfg(test)]
mod split_tests {
    use super::split_statements;

    #[test]
    fn statements_split_outside_quotes_and_comments() {
        assert_eq!(split_statements("select 1; select 2"), vec!["select 1", "select 2"]);
        assert_eq!(
            split_statements("select ';' ; select \"a;b\" from t;"),
            vec!["select ';'", "select \"a;b\" from t"]
        );
        assert_eq!(
            split_statements("select 1 -- a; b\n; /* c; */ select $$x;y$$"),
            vec!["select 1 -- a; b", "/* c; */ select $$x;y$$"]
        );
        assert!(split_statements("  ; -- nothing\n").is_empty());
        assert!(split_statements("").is_empty());
        assert_eq!(split_statements("select 'it''s; fine'"), vec!["select 'it''s; fine'"]);
    }
}
