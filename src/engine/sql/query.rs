//! One analyst's statement as every SQL front door runs it: the dataset version it reads (a
//! transaction's pinned one, or the current one), the sandbox check, then a SQL worker on a
//! thread of its own (it may wait for its worker up to the time limit), cancellable. Each door
//! only translates a [`Refusal`] into its own protocol's terms (a SQLSTATE, a gRPC code).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use polars::prelude::{DataFrame, IpcStreamReader, SerReader};

use super::sandbox::{self, Refused};
use super::worker::{offered_tables, Answer, Outcome, Runner, SqlVersion, Streaming};
use crate::engine::store::Store;

/// Why a statement gave no answer.
#[derive(Debug)]
pub enum Refusal {
    /// No dataset is loaded yet.
    NoData,
    /// The sandbox refused it: a syntax error, a forbidden statement or function, an unknown
    /// table, an unsupported feature.
    Refused(Refused),
    /// The worker gave no rows: the query is wrong, stopped at a limit, refused for want of a
    /// worker slot, cancelled, or failed.
    Outcome(Outcome),
}

/// A statement to run.
pub struct Statement<'a> {
    pub sql: &'a str,
    /// Who asks (`current_user`).
    pub user: &'a str,
    /// Whether repeated output names are allowed (answers read by position, see
    /// [`super::names::MARK`]).
    pub positional: bool,
    /// Plan it without running it (see [`Runner::describe`]).
    pub describe: bool,
}

/// The dataset version a statement reads: `pinned` (a transaction's), else the one serving,
/// else the one the first load has accepted while it builds the API's table.
/// A version pinned before it served reads as served once it does, and is gone if its load
/// failed after accepting it.
pub fn version(store: &Store, pinned: Option<SqlVersion>) -> Result<SqlVersion, Refusal> {
    let now = current(store);
    match pinned {
        Some(SqlVersion::Accepted(info)) => now.filter(|v| v.info().version == info.version).ok_or(Refusal::NoData),
        Some(served) => Ok(served),
        None => now.ok_or(Refusal::NoData),
    }
}

/// The version analysts' SQL reads now (see [`version`]).
pub fn current(store: &Store) -> Option<SqlVersion> {
    match store.current() {
        Some(snapshot) => Some(SqlVersion::Served(snapshot)),
        None => store.accepted().map(SqlVersion::Accepted),
    }
}

/// Checks `statement` against the sandbox and runs it on `version` within the limits; the
/// answer is the worker's Arrow IPC stream (at most `max_rows + 1` rows). Stops within some
/// 25 ms of `cancel` becoming true.
pub async fn run_ipc(
    runner: &Arc<Runner>,
    version: SqlVersion,
    statement: Statement<'_>,
    cancel: Arc<AtomicBool>,
) -> Result<Answer, Refusal> {
    let describe = statement.describe;
    checked_on_a_thread(runner, version, statement, move |runner, version, sql| {
        runner.ask_ipc(version, sql, &cancel, describe)
    })
    .await
}

/// Checks `statement` against the sandbox and starts it on `version` within the limits, its
/// answer streamed as it is computed (see [`Runner::ask_stream`]): the stream once the answer's
/// schema is known.
pub async fn run_stream(
    runner: &Arc<Runner>,
    version: SqlVersion,
    statement: Statement<'_>,
) -> Result<Streaming, Refusal> {
    checked_on_a_thread(runner, version, statement, |runner, version, sql| runner.ask_stream(version, sql)).await
}

/// `statement` checked against the sandbox, then `ask` with its checked SQL on a thread of its
/// own (it may wait for its worker up to the time limit).
async fn checked_on_a_thread<T: Send + 'static>(
    runner: &Arc<Runner>,
    version: SqlVersion,
    statement: Statement<'_>,
    ask: impl FnOnce(&Arc<Runner>, &SqlVersion, &str) -> Result<T, Outcome> + Send + 'static,
) -> Result<T, Refusal> {
    let offered = offered_tables(&version.info().views);
    let checked =
        sandbox::check(statement.sql, &offered, statement.user, statement.positional).map_err(Refusal::Refused)?;
    let runner = Arc::clone(runner);
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("eco-sql-query".into())
        .spawn(move || {
            let _ = done.send(ask(&runner, &version, &checked.sql));
        })
        .map_err(|e| Refusal::Outcome(Outcome::Failed(e.to_string())))?;
    match result.await {
        Ok(answer) => answer.map_err(Refusal::Outcome),
        Err(e) => Err(Refusal::Outcome(Outcome::Failed(e.to_string()))),
    }
}

/// [`run_ipc`] read into a frame of at most `max_rows` rows, and whether more were cut.
pub async fn run_frame(
    runner: &Arc<Runner>,
    version: SqlVersion,
    statement: Statement<'_>,
    cancel: Arc<AtomicBool>,
) -> Result<(DataFrame, bool), Refusal> {
    let max_rows = runner.limits().max_rows;
    let answer = run_ipc(runner, version, statement, cancel).await?;
    let frame = IpcStreamReader::new(std::io::Cursor::new(&answer[..]))
        .finish()
        .map_err(|e| Refusal::Outcome(Outcome::Failed(format!("cannot read the SQL worker's answer: {e}"))))?;
    let truncated = frame.height() > max_rows;
    Ok(if truncated { (frame.head(Some(max_rows)), true) } else { (frame, false) })
}

/// A statement written with positional `?` placeholders (the parameter style ADBC's and ODBC's
/// drivers declare) with `$1`, `$2`… in their place, in order; quoted text, quoted names and
/// comments are left as they are. A statement that already numbers its parameters (`$n`) is
/// returned unchanged, so the two styles are never mixed.
pub fn numbered_placeholders(sql: &str) -> String {
    if has_parameters(sql) || !sql.contains('?') {
        return sql.to_string();
    }
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    let mut n = 0;
    while let Some(c) = chars.next() {
        out.push(c);
        match c {
            '\'' | '"' => {
                for d in chars.by_ref() {
                    out.push(d);
                    if d == c {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                for d in chars.by_ref() {
                    out.push(d);
                    if d == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                let mut last = '/';
                for d in chars.by_ref() {
                    out.push(d);
                    if last == '*' && d == '/' {
                        break;
                    }
                    last = d;
                }
            }
            '?' => {
                out.pop();
                n += 1;
                out.push_str(&format!("${n}"));
            }
            _ => {}
        }
    }
    out
}

/// A statement with its `$n` parameters replaced by SQL literals (outside quoted text): a value
/// that is `numeric` and reads as a finite number goes as it is, any other is quoted (so a value
/// cannot inject SQL), `None` is NULL. The error names a parameter that is missing or invalid.
pub fn bind(sql: &str, params: &[Option<String>], numeric: &[bool]) -> Result<String, String> {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    let mut quoted: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quoted {
            out.push(c);
            if c == q {
                quoted = None;
            }
            continue;
        }
        if c == '\'' || c == '"' {
            quoted = Some(c);
            out.push(c);
            continue;
        }
        if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            let mut n = String::new();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                n.push(d);
                chars.next();
            }
            let i: usize = n.parse().map_err(|_| format!("parâmetro ${n} inválido"))?;
            let value = params.get(i.wrapping_sub(1)).ok_or_else(|| format!("parâmetro ${i} ausente"))?;
            match value {
                None => out.push_str("NULL"),
                Some(v)
                    if numeric.get(i - 1).copied().unwrap_or(false) && v.parse::<f64>().is_ok_and(f64::is_finite) =>
                {
                    out.push_str(v)
                }
                Some(v) => {
                    out.push('\'');
                    out.push_str(&v.replace('\'', "''"));
                    out.push('\'');
                }
            }
            continue;
        }
        out.push(c);
    }
    Ok(out)
}

/// Whether a statement has `$n` parameters (outside quotes).
pub fn has_parameters(sql: &str) -> bool {
    let mut quoted: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quoted {
            Some(q) if c == q => quoted = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quoted = Some(c),
            None if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) => return true,
            None => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot of a small generated catalog.
    fn snapshot() -> crate::engine::dataset::snapshot::Snapshot {
        use polars::prelude::ParquetWriter;
        let mut df = crate::sample::generate_catalog(50, 7).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let queries = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
        let views = crate::engine::views::Views::read(&queries, &Default::default()).unwrap();
        crate::engine::dataset::load::load_bytes(&bytes, std::path::Path::new("catalog.parquet"), &views).unwrap()
    }

    /// Before a snapshot serves, SQL reads the version the first load accepted; a transaction
    /// pinned to it reads the same version as served once it serves, and nothing once the load
    /// that accepted it failed.
    #[test]
    fn the_accepted_version_is_read_until_it_serves() {
        let built = snapshot();
        let info = built.info.clone();
        let store = Store::new(None);
        assert!(matches!(version(&store, None), Err(Refusal::NoData)));
        store.accept(info.clone());
        let early = version(&store, None).unwrap();
        assert!(matches!(&early, SqlVersion::Accepted(i) if i.version == info.version));
        store.replace(built);
        assert!(store.accepted().is_none(), "the accepted version is forgotten once one serves");
        let pinned = version(&store, Some(early.clone())).unwrap();
        assert!(matches!(&pinned, SqlVersion::Served(s) if s.info.version == info.version));
        assert!(matches!(version(&store, None).unwrap(), SqlVersion::Served(_)));
        // A snapshot serving: a late acceptance does not take its place.
        store.accept(info.clone());
        assert!(store.accepted().is_none());
        // The load that accepted it failed: a transaction pinned to it has nothing to read.
        let failed = Store::new(None);
        failed.accept(info);
        failed.forget_accepted();
        assert!(matches!(version(&failed, Some(early)), Err(Refusal::NoData)));
        assert!(matches!(version(&failed, None), Err(Refusal::NoData)));
    }

    #[test]
    fn parameters_become_literals_outside_quotes() {
        let p = vec![Some("Fiat".to_string()), Some("2020".to_string()), None, Some("o'Neil".to_string())];
        let numeric = [false, true, false, false];
        assert_eq!(
            bind("SELECT '$1', $1, $2, $3, $4 FROM catalog", &p, &numeric).unwrap(),
            "SELECT '$1', 'Fiat', 2020, NULL, 'o''Neil' FROM catalog"
        );
        assert!(bind("SELECT $9", &p, &numeric).is_err());
        // A "number" that is not one is quoted, so it cannot inject SQL.
        assert_eq!(bind("SELECT $1", &[Some("1; DROP".into())], &[true]).unwrap(), "SELECT '1; DROP'");
        assert!(has_parameters("SELECT $1") && !has_parameters("SELECT '$1'"));
    }

    #[test]
    fn question_marks_are_numbered_outside_quotes_and_comments() {
        assert_eq!(
            numbered_placeholders("SELECT '?', \"a?\", ? -- why?\n FROM t WHERE x = ? /* ? */ AND y = ?"),
            "SELECT '?', \"a?\", $1 -- why?\n FROM t WHERE x = $2 /* ? */ AND y = $3"
        );
        assert_eq!(numbered_placeholders("SELECT $1, '?'"), "SELECT $1, '?'");
        assert_eq!(numbered_placeholders("SELECT 1"), "SELECT 1");
    }
}
