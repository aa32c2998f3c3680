//! Loading an export: read the Parquet bytes, check them against the input schema, bring the
//! columns to their canonical types, derive missing ids, run the views and build a snapshot.

use std::io::Cursor;
use std::path::Path;
use std::time::Instant;

use chrono::Utc;
use polars::prelude::*;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::schema::{self, Problem, COLUMNS, DICTIONARY_ENCODED, ID};
use super::snapshot::{DatasetInfo, Snapshot};
use super::text_index::{fold, TextValues};
use super::views::Views;

/// Why an export was refused.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path} is not a readable Parquet file: {message}")]
    Parquet { path: String, message: String },
    #[error("{path} does not match the input schema:\n{}", list(.problems))]
    Invalid { path: String, problems: Vec<Problem> },
    #[error("the views in the queries folder failed on {path}: {message}")]
    Views { path: String, message: String },
    #[error("{path} is {bytes} bytes, over the limit of {max} bytes (--max-data-bytes)")]
    TooLarge { path: String, bytes: u64, max: u64 },
}

/// Reads a whole export, refusing one over `max` bytes before reading it (and one that grows
/// past it while being read).
pub fn read_limited(path: &Path, max: u64) -> Result<Vec<u8>, LoadError> {
    use std::io::Read;
    let shown = path.display().to_string();
    let io = |source| LoadError::Io { path: shown.clone(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len > max {
        return Err(LoadError::TooLarge { path: shown, bytes: len, max });
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(LoadError::TooLarge { path: shown, bytes: bytes.len() as u64, max });
    }
    Ok(bytes)
}

fn list(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n")
}

/// The folded fuel name the views read (`combustivel_fold`): lower case without accents, so
/// 'ELÉTRICO', 'Eletrico' and 'elétrico' are the same fuel. Folded once per distinct value.
pub const FUEL_FOLD: &str = "combustivel_fold";

fn fuel_fold(df: &DataFrame) -> PolarsResult<Column> {
    let fuels = TextValues::of(df.column("combustivel_tipo")?)?;
    let mut cache: PlHashMap<&str, String> = PlHashMap::new();
    let folded: StringChunked =
        (0..fuels.len()).map(|i| fuels.get(i).map(|v| cache.entry(v).or_insert_with(|| fold(v)).clone())).collect();
    Ok(folded.with_name(FUEL_FOLD.into()).into_column())
}

/// The dataset version: the first 16 hex digits of a SHA-256 over everything an answer depends
/// on — the export's bytes, the views' text and the cost configuration (API-CONTRACT §1).
pub fn version_of(bytes: &[u8], views: &Views) -> String {
    let mut hasher = Sha256::new();
    hasher.update(Sha256::digest(bytes));
    hasher.update(views.digest);
    hex::encode(&hasher.finalize()[..8])
}

/// Parses Parquet bytes into a frame.
pub fn read_parquet(bytes: &[u8], path: &str) -> Result<DataFrame, LoadError> {
    ParquetReader::new(Cursor::new(bytes))
        .finish()
        .map_err(|e| LoadError::Parquet { path: path.to_string(), message: e.to_string() })
}

/// Reads and checks a file without building a snapshot: every problem, or the row count.
pub fn validate_file(path: &Path) -> Result<usize, LoadError> {
    validate_file_limited(path, u64::MAX)
}

/// `validate_file`, refusing a file over `max` bytes.
pub fn validate_file_limited(path: &Path, max: u64) -> Result<usize, LoadError> {
    let shown = path.display().to_string();
    let bytes = read_limited(path, max)?;
    let raw = read_parquet(&bytes, &shown)?;
    let df = prepare(raw).map_err(|problems| LoadError::Invalid { path: shown, problems })?;
    Ok(df.height())
}

/// Checks a raw export and returns it with canonical columns (in schema order, extra columns
/// dropped), NaN as nulls, ids present, and the folded fuel name the views read added.
pub fn prepare(raw: DataFrame) -> Result<DataFrame, Vec<Problem>> {
    let started = Instant::now();
    let mut problems = schema::check(&raw);
    if !problems.is_empty() {
        return Err(problems);
    }
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "schema checked");
    let internal = |e: PolarsError| vec![Problem { column: None, row: None, rule: e.to_string() }];

    let mut exprs: Vec<Expr> = Vec::with_capacity(COLUMNS.len() + 1);
    if raw.column(ID).is_ok() {
        exprs.push(col(ID).cast(DataType::String));
    }
    for spec in COLUMNS {
        let dtype = if spec.kind == schema::Kind::Text && DICTIONARY_ENCODED.contains(&spec.name) {
            schema::dictionary_dtype()
        } else {
            spec.kind.canonical()
        };
        let mut e = col(spec.name).cast(dtype);
        // NaN is read as null; a column without NaN is passed through untouched (no copy).
        if spec.kind == schema::Kind::Float && has_nan(&raw, spec.name) {
            e = e.fill_nan(lit(NULL).cast(DataType::Float64));
        }
        exprs.push(e.alias(spec.name));
    }
    let mut df = raw.lazy().select(exprs).collect().map_err(internal)?;

    if df.column(ID).is_err() {
        let ids = derive_ids(&df).map_err(internal)?;
        let mut pairs = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            pairs.push((*id, i));
        }
        schema::duplicate_rows(&pairs, &mut problems);
        if !problems.is_empty() {
            for p in &mut problems {
                p.rule = format!("{} (derived from marca, modelo, versao, ano, motor, transmissao_tipo)", p.rule);
            }
            return Err(problems);
        }
        let text: Vec<String> = ids.iter().map(Uuid::to_string).collect();
        df.insert_column(0, Column::new(ID.into(), text)).map_err(internal)?;
    }

    tracing::debug!(ms = started.elapsed().as_millis() as u64, "columns typed");
    let fuel = fuel_fold(&df).map_err(internal)?;
    df.with_column(fuel).map_err(internal)?;
    Ok(df)
}

/// Whether a float column holds a NaN.
fn has_nan(df: &DataFrame, name: &str) -> bool {
    let Ok(column) = df.column(name) else { return false };
    if !column.dtype().is_float() {
        return false;
    }
    column.as_materialized_series().is_nan().map(|mask| mask.any()).unwrap_or(true)
}

fn derive_ids(df: &DataFrame) -> PolarsResult<Vec<Uuid>> {
    let s = |n: &str| df.column(n).and_then(TextValues::of);
    let (marca, modelo, versao, motor, trans) =
        (s("marca")?, s("modelo")?, s("versao")?, s("motor")?, s("transmissao_tipo")?);
    let ano = df.column("ano")?.i32()?.clone();
    Ok((0..df.height())
        .map(|i| {
            schema::derive_id(
                marca.get(i).unwrap_or(""),
                modelo.get(i).unwrap_or(""),
                versao.get(i).unwrap_or(""),
                ano.get(i).unwrap_or_default() as i64,
                motor.get(i),
                trans.get(i),
            )
        })
        .collect())
}

/// Loads a complete snapshot from a file: the file is read once, so a concurrent writer can at
/// worst make this load fail, never mix two versions.
pub fn load_file(path: &Path, views: &Views) -> Result<Snapshot, LoadError> {
    load_file_limited(path, views, u64::MAX)
}

/// `load_file`, refusing a file over `max` bytes.
pub fn load_file_limited(path: &Path, views: &Views, max: u64) -> Result<Snapshot, LoadError> {
    let bytes = read_limited(path, max)?;
    let version = version_of(&bytes, views);
    load_owned(bytes, version, path, views)
}

/// Loads a complete snapshot from the bytes of an export.
pub fn load_bytes(bytes: &[u8], path: &Path, views: &Views) -> Result<Snapshot, LoadError> {
    let started = Instant::now();
    let raw = read_parquet(bytes, &path.display().to_string())?;
    build(raw, version_of(bytes, views), path, views, started)
}

/// Loads a complete snapshot from the bytes of an export whose version is already known,
/// freeing the bytes as soon as they are parsed (they would otherwise stay alive through the
/// whole load, at its memory peak).
pub fn load_owned(bytes: Vec<u8>, version: String, path: &Path, views: &Views) -> Result<Snapshot, LoadError> {
    let started = Instant::now();
    let raw = read_parquet(&bytes, &path.display().to_string())?;
    drop(bytes);
    build(raw, version, path, views, started)
}

/// Checks a parsed export, computes the views and builds the snapshot.
fn build(raw: DataFrame, version: String, path: &Path, views: &Views, started: Instant) -> Result<Snapshot, LoadError> {
    let shown = path.display().to_string();
    let ms = |since: Instant| since.elapsed().as_millis() as u64;
    let read_ms = ms(started);
    let step = Instant::now();
    let df = prepare(raw).map_err(|problems| LoadError::Invalid { path: shown.clone(), problems })?;
    let check_ms = ms(step);
    // The raw export's text columns are gone (replaced by their dictionary-encoded forms).
    crate::memory::between_phases();
    let step = Instant::now();
    let views_err = |message: String| LoadError::Views { path: shown.clone(), message };
    let view = views.apply(df.lazy()).map_err(|e| views_err(format!("{e:#}")))?;
    let views_ms = ms(step);
    // The check's and the views' transient columns are gone; the table build allocates anew.
    crate::memory::between_phases();
    let step = Instant::now();
    let info = DatasetInfo {
        version,
        loaded_at: Utc::now(),
        source: path.to_path_buf(),
        rows: view.height(),
        views: std::sync::Arc::new(views.clone()),
    };
    let snapshot = Snapshot::build(view, info).map_err(|e| views_err(e.to_string()))?;
    tracing::debug!(read_ms, check_ms, views_ms, snapshot_ms = ms(step), total_ms = ms(started), file = %shown, "dataset built");
    Ok(snapshot)
}
