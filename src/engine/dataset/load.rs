//! Loading an export: read the Parquet bytes, check them against the input schema, bring the
//! columns to their canonical types, derive missing ids, run the views and build a snapshot.

use std::io::Cursor;
use std::path::Path;
use std::time::Instant;

use chrono::Utc;
use polars::prelude::*;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::assemble::assembled_as_made;
use super::contain::contained;
use super::schema::{self, IdOrder, Problem, COLUMNS, DICTIONARY_ENCODED, ID};
use super::snapshot::{DatasetInfo, Origin, Snapshot};
use super::table::KeyOrders;
use super::text_index::{fold, TextValues};
use super::views::Views;
use crate::process::usage::Usage;

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
    #[error(
        "{path} declares {rows} rows in its metadata, over the limit of {max} rows (--max-rows); no column was decoded"
    )]
    TooManyRows { path: String, rows: u64, max: u64 },
}

/// Default of `--max-rows`: the most rows an export may declare (API-CONTRACT §1).
pub const DEFAULT_MAX_ROWS: u64 = 20_000_000;

/// What an export may be before it is decoded: its size in bytes and the rows its metadata
/// declares. Both are checked before any column is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    pub max_bytes: u64,
    pub max_rows: u64,
}

impl InputLimits {
    /// No byte limit, the default row limit.
    pub const fn rows(max_rows: u64) -> InputLimits {
        InputLimits { max_bytes: u64::MAX, max_rows }
    }
}

impl Default for InputLimits {
    fn default() -> Self {
        InputLimits::rows(DEFAULT_MAX_ROWS)
    }
}

/// Reads a whole export, refusing one over `max` bytes before reading it (and one that grows
/// past it while being read). The bytes the file has when it is opened are read by parts on
/// every core (copying them out of the page cache and faulting in their memory is otherwise a
/// single-threaded tenth of a load); whatever it grew by meanwhile is read after them.
pub fn read_limited(path: &Path, max: u64) -> Result<Vec<u8>, LoadError> {
    use rayon::prelude::*;
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::FileExt;
    let shown = path.display().to_string();
    let io = |source| LoadError::Io { path: shown.clone(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len > max {
        return Err(LoadError::TooLarge { path: shown, bytes: len, max });
    }
    let mut bytes = vec![0u8; len as usize];
    bytes
        .par_chunks_mut(READ_PART_BYTES)
        .enumerate()
        .try_for_each(|(k, part)| file.read_exact_at(part, (k * READ_PART_BYTES) as u64))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => std::io::Error::new(e.kind(), "the file shrank while it was read"),
            _ => e,
        })
        .map_err(io)?;
    file.seek(SeekFrom::Start(len)).map_err(io)?;
    (&mut file).take(max.saturating_add(1) - len).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(LoadError::TooLarge { path: shown, bytes: bytes.len() as u64, max });
    }
    Ok(bytes)
}

/// The bytes of a file each part of [`read_limited`] reads.
const READ_PART_BYTES: usize = 8 << 20;

fn list(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n")
}

/// The folded fuel name the views read (`combustivel_fold`): lower case without accents, so
/// 'ELÉTRICO', 'Eletrico' and 'elétrico' are the same fuel. Folded once per distinct value.
pub const FUEL_FOLD: &str = "combustivel_fold";

pub fn fuel_fold(df: &DataFrame) -> PolarsResult<Column> {
    let folded: StringChunked = match TextValues::of(df.column("combustivel_tipo")?)? {
        // Dictionary-encoded (as loaded): each dictionary entry folded once, then a lookup per row.
        TextValues::Dictionary(codes, mapping) => {
            let size = codes.iter().flatten().max().map_or(0, |m| m as usize + 1);
            let mut cache: Vec<Option<String>> = vec![None; size];
            for code in codes.iter().flatten() {
                let entry = &mut cache[code as usize];
                if entry.is_none() {
                    *entry = Some(fold(mapping.cat_to_str(code).unwrap_or_default()));
                }
            }
            codes.iter().map(|c| c.and_then(|c| cache[c as usize].as_deref())).collect()
        }
        TextValues::Plain(values) => {
            let mut cache: PlHashMap<&str, String> = PlHashMap::new();
            for v in values.iter().flatten() {
                cache.entry(v).or_insert_with(|| fold(v));
            }
            values.iter().map(|v| v.and_then(|v| cache.get(v)).map(String::as_str)).collect()
        }
    };
    Ok(folded.with_name(FUEL_FOLD.into()).into_column())
}

/// [`fuel_fold`] dictionary-encoded, as the load's other text columns are (the views compare
/// it with literals: codes, not strings, compared per row): each dictionary entry folded once,
/// then the codes mapped on every core.
pub fn fuel_fold_encoded(df: &DataFrame) -> PolarsResult<Column> {
    let TextValues::Dictionary(codes, mapping) = TextValues::of(df.column("combustivel_tipo")?)? else {
        return schema::dictionary_encode(&fuel_fold(df)?);
    };
    let dtype = schema::dictionary_dtype();
    let DataType::Categorical(_, folded) = &dtype else {
        polars_bail!(ComputeError: "the dictionary type is not categorical");
    };
    let size = codes.max().map_or(0, |m| m as usize + 1);
    let remap: Vec<u32> = (0..size as u32)
        .map(|code| folded.insert_cat(&fold(mapping.cat_to_str(code).unwrap_or_default())))
        .collect::<PolarsResult<_>>()?;
    // Null rows keep their (unread) value; any value maps to a valid code.
    let physical = codes.apply_values(|c| remap.get(c as usize).copied().unwrap_or_default());
    // SAFETY: every code was returned by this dtype's own mapping.
    let encoded = unsafe {
        CategoricalChunked::<Categorical32Type>::from_cats_and_dtype_unchecked(
            physical.with_name(FUEL_FOLD.into()),
            dtype,
        )
    };
    Ok(encoded.into_series().into_column())
}

/// How a kept export is written: its bytes to a path.
pub type ExportWriter = fn(&[u8], &Path) -> std::io::Result<()>;

/// What is called when a first load (nothing serving yet) has kept its export: with the
/// version, while the load goes on.
pub type FirstKept = Box<dyn Fn(&str) + Send + Sync>;

/// Where loads keep the exports they read, how, and what a first load's kept export starts (see
/// [`keep_exports_in`]).
static KEPT_EXPORTS: std::sync::OnceLock<(std::path::PathBuf, ExportWriter, FirstKept)> = std::sync::OnceLock::new();

/// How many kept exports stay in the folder at most (the newest): the one being loaded and the
/// one the SQL tables have not yet taken.
const KEPT_AT_MOST: usize = 2;

/// Keeps a copy of every export a load reads in `dir`, named by its version, so that analysts'
/// SQL reads the very bytes the version was loaded from (the file at `--data` may be replaced
/// meanwhile), each written by `write`; `first_kept` is called when a first load has kept its
/// export (see [`first_export_kept`]). Set once, by the service.
pub fn keep_exports_in(dir: std::path::PathBuf, write: ExportWriter, first_kept: FirstKept) {
    let _ = KEPT_EXPORTS.set((dir, write, first_kept));
}

/// Says that a first load (nothing serving yet) has kept the export of `version`, if it has.
pub fn first_export_kept(version: &str) {
    if let (Some((_, _, then)), Some(_)) = (KEPT_EXPORTS.get(), kept_export(version)) {
        then(version);
    }
}

/// The kept copy of `version`'s export, if there is one.
pub fn kept_export(version: &str) -> Option<std::path::PathBuf> {
    let path = KEPT_EXPORTS.get()?.0.join(format!("{version}.parquet"));
    path.is_file().then_some(path)
}

/// Keeps `bytes`, the export of `version` (see [`keep_exports_in`]): written to a temporary name,
/// renamed into place; the older copies past [`KEPT_AT_MOST`] are removed. A failure is logged
/// (the SQL tables are then written from the snapshot).
pub fn keep_export(bytes: &[u8], version: &str) {
    let Some((dir, write, _)) = KEPT_EXPORTS.get() else { return };
    let target = dir.join(format!("{version}.parquet"));
    if target.is_file() {
        return;
    }
    let tmp = dir.join(format!(".{version}.{}.tmp", std::process::id()));
    let written =
        std::fs::create_dir_all(dir).and_then(|()| write(bytes, &tmp)).and_then(|()| std::fs::rename(&tmp, &target));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        tracing::warn!(%version, "cannot keep the export for analysts' SQL: {e}");
        return;
    }
    let mut kept: Vec<(std::time::SystemTime, std::path::PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    kept.sort_by_key(|k| std::cmp::Reverse(k.0));
    for (_, old) in kept.into_iter().skip(KEPT_AT_MOST) {
        let _ = std::fs::remove_file(old);
    }
}

/// The dataset version: the first 16 hex digits of a SHA-256 over everything an answer depends
/// on — the export's bytes, the views' text and the cost configuration (API-CONTRACT §1).
pub fn version_of(bytes: &[u8], views: &Views) -> String {
    version_from(&export_digest(bytes), views)
}

/// SHA-256 of an export's bytes (what the state folder checks a kept copy against).
pub fn export_digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// [`version_of`] from the export's digest.
pub fn version_from(export: &[u8; 32], views: &Views) -> String {
    let mut hasher = Sha256::new();
    hasher.update(export);
    hasher.update(views.digest);
    hex::encode(&hasher.finalize()[..8])
}

/// What follows every complaint about a file's bytes: the two usual causes.
const DAMAGED: &str = "the file is damaged or was not completely written";

/// Parses Parquet bytes into a frame. The bytes are untrusted: the file's frame (magic
/// numbers, footer length) and metadata (row counts, where each column's data lies) are checked
/// before any column is decoded, the declared rows against `max_rows`, and the decoder runs
/// contained (see [`super::contain`]), so a damaged file is refused with the column and the part
/// of the file at fault, never a panic.
pub fn read_parquet(bytes: &[u8], path: &str, max_rows: u64) -> Result<DataFrame, LoadError> {
    let bad = |message: String| LoadError::Parquet { path: path.to_string(), message };
    let data_end = check_frame(bytes).map_err(bad)?;
    let metadata = match contained(|| ParquetReader::new(Cursor::new(bytes)).get_metadata().cloned()) {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => return Err(bad(format!("its metadata (the footer) cannot be decoded: {e}; {DAMAGED}"))),
        Err(panic) => {
            return Err(bad(format!(
                "its metadata (the footer) cannot be decoded (the decoder failed: {panic}); {DAMAGED}"
            )))
        }
    };
    let declared = metadata.num_rows as u64;
    if declared > max_rows {
        return Err(LoadError::TooManyRows { path: path.to_string(), rows: declared, max: max_rows });
    }
    check_layout(&metadata, data_end).map_err(bad)?;
    let decoded = contained(|| decode_in_batches(bytes, &metadata, DECODE_BATCH_ROWS));
    let failure = match decoded {
        Ok(Ok(df)) if df.height() as u64 == declared || df.width() == 0 => return Ok(df),
        Ok(Ok(df)) => format!("its metadata declares {declared} rows but {} were decoded; {DAMAGED}", df.height()),
        Ok(Err(e)) => format!("{e}"),
        Err(panic) => format!("the decoder failed: {panic}"),
    };
    Err(bad(diagnose(bytes, &metadata).unwrap_or_else(|| format!("it cannot be decoded: {failure}; {DAMAGED}"))))
}

/// Rows decoded at a time (whole row groups): the text of this many rows exists as plain strings
/// at once.
const DECODE_BATCH_ROWS: usize = 2 * 1024 * 1024;

/// Decodes a file (its metadata checked) a few row groups at a time, each batch's text columns
/// dictionary-encoded (see [`schema::dictionary_encode`]) as soon as it is decoded, on every
/// core. A decoded text value takes 16 bytes per row before encoding and 4 after: decoding the
/// whole file first made its text the larger part of a load's memory peak, and every page of it
/// freshly faulted in. The batches are assembled into one chunk per column as they come (see
/// [`assembled_as_made`]), so the frame is never held twice.
fn decode_in_batches(bytes: &[u8], metadata: &FileMetadataRef, batch_rows: usize) -> PolarsResult<DataFrame> {
    use rayon::prelude::*;
    let batches = batches_of(metadata, batch_rows, polars_core::runtime::RAYON.install(rayon::current_num_threads));
    // One mapping per text column, shared by its batches.
    let dtypes: Vec<(&str, DataType)> =
        DICTIONARY_ENCODED.iter().map(|name| (*name, schema::dictionary_dtype())).collect();
    let decode = |(offset, len, groups): (usize, usize, usize)| {
        // Row groups side by side when each core gets several; otherwise columns side by side
        // (3 row groups on 2 cores would leave one core idle for a third of the batch).
        let parallel = match groups >= 2 * rayon::current_num_threads() {
            true => ParallelStrategy::RowGroups,
            false => ParallelStrategy::Columns,
        };
        let mut reader = ParquetReader::new(Cursor::new(bytes));
        reader.set_metadata(metadata.clone());
        reader.with_slice(Some((offset, len))).read_parallel(parallel).finish()
    };
    let encode = |mut df: DataFrame| -> PolarsResult<DataFrame> {
        let encoded: Vec<Column> = dtypes
            .par_iter()
            .filter_map(|(name, dtype)| {
                let column = df.column(name).ok().filter(|c| c.dtype().is_string())?;
                Some(schema::dictionary_encode_as(column, dtype.clone()))
            })
            .collect::<PolarsResult<_>>()?;
        for column in encoded {
            df.with_column(column)?;
        }
        Ok(df)
    };
    // Each batch is encoded and copied into the frame's columns (one chunk each) while the next
    // one is decoded, then freed.
    let assembled = assembled_as_made(batches.into_iter(), metadata.num_rows, decode, |df| Ok(vec![encode(df)?]))?;
    assembled.ok_or_else(|| polars_err!(ComputeError: "no rows were decoded"))?.finish()
}

/// The batches of [`decode_in_batches`], as (first row, rows, row groups): as many whole row
/// groups as fit in `batch_rows` (at least one). A batch of more row groups than `threads` that
/// is not the last holds a multiple of `threads` of them (the rest start the next batch): the
/// row groups of a batch are decoded side by side, and 7 of them on 2 cores left one core idle
/// for the seventh (a tenth of a 10M-row file's decode).
fn batches_of(metadata: &FileMetadataRef, batch_rows: usize, threads: usize) -> Vec<(usize, usize, usize)> {
    let sizes: Vec<usize> = metadata.row_groups.iter().map(|g| g.num_rows()).collect();
    let threads = threads.max(1);
    let mut batches = Vec::new();
    let (mut first, mut start) = (0usize, 0usize);
    while first < sizes.len() {
        let mut groups = 1;
        let mut len = sizes[first];
        while first + groups < sizes.len() && len + sizes[first + groups] <= batch_rows {
            len += sizes[first + groups];
            groups += 1;
        }
        if groups > threads && first + groups < sizes.len() {
            groups -= groups % threads;
            len = sizes[first..first + groups].iter().sum();
        }
        batches.push((start, len, groups));
        (first, start) = (first + groups, start + len);
    }
    if batches.is_empty() {
        batches.push((0, 0, 0));
    }
    batches
}

/// The frame every Parquet file has: `PAR1` at both ends and a footer length that fits. Returns
/// where the column data ends (the footer's first byte).
fn check_frame(bytes: &[u8]) -> Result<u64, String> {
    const MAGIC: &[u8] = b"PAR1";
    let n = bytes.len();
    if n < 12 {
        return Err(format!("it is {n} bytes long, too short to be Parquet (at least 12); {DAMAGED}"));
    }
    if &bytes[n - 4..] != MAGIC {
        return Err(format!("it does not end with the Parquet marker PAR1; {DAMAGED} (or it is not Parquet)"));
    }
    if &bytes[..4] != MAGIC {
        return Err(format!("it does not start with the Parquet marker PAR1; {DAMAGED} (or it is not Parquet)"));
    }
    let footer = u32::from_le_bytes([bytes[n - 8], bytes[n - 7], bytes[n - 6], bytes[n - 5]]) as u64;
    if footer + 12 > n as u64 {
        return Err(format!("its footer length ({footer} bytes) is larger than the file ({n} bytes); {DAMAGED}"));
    }
    Ok(n as u64 - 8 - footer)
}

/// The metadata against the file: the row groups' rows add up to the declared total, and every
/// column chunk's data lies between the leading marker and the footer (at `data_end`).
fn check_layout(metadata: &FileMetadata, data_end: u64) -> Result<(), String> {
    let groups = metadata.row_groups.len();
    let mut rows: u64 = 0;
    for (g, group) in metadata.row_groups.iter().enumerate() {
        rows = rows.saturating_add(group.num_rows() as u64);
        for chunk in group.parquet_columns() {
            let start = chunk.dictionary_page_offset().unwrap_or(chunk.data_page_offset());
            let len = chunk.compressed_size();
            let end = start.checked_add(len);
            let fits = start >= 4 && len >= 0 && end.is_some_and(|e| e as u64 <= data_end);
            if !fits {
                let leaf: Vec<&str> = chunk.descriptor().path_in_schema.iter().map(|p| p.as_str()).collect();
                return Err(format!(
                    "column '{}', row group {} of {groups}: the metadata places its data at bytes {start}..{}, \
                     outside the file's data (bytes 4..{data_end}); {DAMAGED}",
                    leaf.join("."),
                    g + 1,
                    end.map(|e| e.to_string()).unwrap_or_else(|| "(overflow)".into()),
                ));
            }
        }
    }
    if rows != metadata.num_rows as u64 {
        return Err(format!(
            "its metadata declares {} rows but its {groups} row groups hold {rows}; {DAMAGED}",
            metadata.num_rows
        ));
    }
    Ok(())
}

/// After a failed decode: decodes each column alone, then the failing column one row group at a
/// time, and names the first that fails (`None` when every column decodes alone).
fn diagnose(bytes: &[u8], metadata: &FileMetadataRef) -> Option<String> {
    let schema = contained(|| polars::io::parquet::read::infer_schema(metadata)).ok()?.ok()?;
    let names: Vec<String> = schema.iter_names().map(|n| n.to_string()).collect();
    let decode = |column: &str, slice: Option<(usize, usize)>| -> Result<(), String> {
        let result = contained(|| {
            let mut reader = ParquetReader::new(Cursor::new(bytes));
            reader.set_metadata(metadata.clone());
            reader.with_columns(Some(vec![column.to_string()])).with_slice(slice).finish().map(|_| ())
        });
        match result {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(panic) => Err(format!("the decoder failed: {panic}")),
        }
    };
    let (column, why) = names.iter().find_map(|name| decode(name, None).err().map(|why| (name, why)))?;
    let groups = metadata.row_groups.len();
    let mut first = 0usize;
    for (g, group) in metadata.row_groups.iter().enumerate() {
        let n = group.num_rows();
        if n > 0 && decode(column, Some((first, n))).is_err() {
            return Some(format!(
                "column '{column}', row group {} of {groups} (rows {}-{}): its data cannot be decoded ({why}); {DAMAGED}",
                g + 1,
                first + 1,
                first + n
            ));
        }
        first += n;
    }
    Some(format!("column '{column}': its data cannot be decoded ({why}); {DAMAGED}"))
}

/// Reads and checks a file without building a snapshot: every problem, or the row count.
pub fn validate_file(path: &Path) -> Result<usize, LoadError> {
    validate_file_limited(path, InputLimits::default())
}

/// `validate_file` within `limits` (bytes and declared rows, both checked before decoding).
pub fn validate_file_limited(path: &Path, limits: InputLimits) -> Result<usize, LoadError> {
    let shown = path.display().to_string();
    let bytes = read_limited(path, limits.max_bytes)?;
    let raw = read_parquet(&bytes, &shown, limits.max_rows)?;
    drop(bytes);
    let (df, _) = checked(raw, &shown)?;
    Ok(df.height())
}

/// [`prepare`], contained: a panic on a decoded but damaged export refuses the file.
fn checked(raw: DataFrame, shown: &str) -> Result<(DataFrame, IdOrder), LoadError> {
    match contained(|| prepare(raw)) {
        Ok(Ok(df)) => Ok(df),
        Ok(Err(problems)) => Err(LoadError::Invalid { path: shown.to_string(), problems }),
        Err(panic) => Err(LoadError::Parquet {
            path: shown.to_string(),
            message: format!("its values cannot be checked (the decoder failed: {panic}); {DAMAGED}"),
        }),
    }
}

/// Checks a raw export and returns it with canonical columns (in schema order, extra columns
/// dropped, an optional column the file lacks added as all null), NaN as nulls, ids present, and
/// the folded fuel name the views read added; with the rows' parsed ids and their order.
pub fn prepare(mut raw: DataFrame) -> Result<(DataFrame, IdOrder), Vec<Problem>> {
    let started = Instant::now();
    let (mut problems, order) = schema::check_keyed(&raw);
    if !problems.is_empty() {
        return Err(problems);
    }
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "schema checked");
    let internal = |e: PolarsError| vec![Problem { column: None, row: None, rule: e.to_string() }];

    // An optional column the file lacks is read as all null.
    for spec in COLUMNS.iter().filter(|c| c.optional) {
        if raw.column(spec.name).is_err() {
            let nulls = Series::full_null(spec.name.into(), raw.height(), &spec.kind.canonical());
            raw.with_column(nulls.into_column()).map_err(internal)?;
        }
    }

    // The float columns holding a NaN, found on every core.
    let with_nan: Vec<&str> = {
        use rayon::prelude::*;
        let floats: Vec<&str> = COLUMNS.iter().filter(|c| c.kind == schema::Kind::Float).map(|c| c.name).collect();
        floats.into_par_iter().filter(|name| has_nan(&raw, name)).collect()
    };
    let mut exprs: Vec<Expr> = Vec::with_capacity(COLUMNS.len() + 1);
    if raw.column(ID).is_ok() {
        exprs.push(col(ID).cast(DataType::String));
    }
    for spec in COLUMNS {
        let encoded = DICTIONARY_ENCODED.contains(&spec.name);
        if encoded && raw.column(spec.name).is_ok_and(|c| schema::is_dictionary_dtype(c.dtype())) {
            // Encoded as the file was read (see `decode_in_batches`).
            exprs.push(col(spec.name));
            continue;
        }
        let dtype =
            if spec.kind == schema::Kind::Text && encoded { schema::dictionary_dtype() } else { spec.kind.canonical() };
        let mut e = col(spec.name).cast(dtype);
        // NaN is read as null; a column without NaN is passed through untouched (no copy).
        if with_nan.contains(&spec.name) {
            e = e.fill_nan(lit(NULL).cast(DataType::Float64));
        }
        exprs.push(e.alias(spec.name));
    }
    let typed = raw.lazy().select(exprs).collect();
    let mut df = typed.map_err(internal)?;

    let order = match order {
        Some(order) => order,
        None if df.column(ID).is_ok() => return Err(internal(polars_err!(ComputeError: "the ids were not parsed"))),
        None => IdOrder::new(derive_ids(&df).map_err(internal)?),
    };
    if df.column(ID).is_err() {
        order.duplicates(&mut problems);
        if !problems.is_empty() {
            for p in &mut problems {
                p.rule = format!("{} (derived from marca, modelo, versao, ano, motor, transmissao_tipo)", p.rule);
            }
            return Err(problems);
        }
        let text: Vec<String> = order.ids.iter().map(Uuid::to_string).collect();
        df.insert_column(0, Column::new(ID.into(), text)).map_err(internal)?;
    }

    tracing::debug!(ms = started.elapsed().as_millis() as u64, "columns typed");
    let fuel = fuel_fold_encoded(&df).map_err(internal)?;
    df.with_column(fuel).map_err(internal)?;
    // One chunk per column, as the views' executor and the table build expect (a decoded file's
    // columns already are: see `decode_in_batches`; this copies only a frame that is not).
    df.rechunk_mut_par();
    Ok((df, order))
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
    load_file_limited(path, views, InputLimits::default())
}

/// `load_file` within `limits` (bytes and declared rows, both checked before decoding).
pub fn load_file_limited(path: &Path, views: &Views, limits: InputLimits) -> Result<Snapshot, LoadError> {
    let bytes = read_limited(path, limits.max_bytes)?;
    let version = version_of(&bytes, views);
    load_owned(bytes, version, path, views, limits.max_rows)
}

/// Loads a complete snapshot from the bytes of an export (the default row limit).
pub fn load_bytes(bytes: &[u8], path: &Path, views: &Views) -> Result<Snapshot, LoadError> {
    let started = Instant::now();
    let raw = read_parquet(bytes, &path.display().to_string(), DEFAULT_MAX_ROWS)?;
    load_parsed(raw, version_of(bytes, views), path, views, started, None)
}

/// Loads a complete snapshot from the bytes of an export whose version is already known,
/// freeing the bytes as soon as they are parsed (they would otherwise stay alive through the
/// whole load, at its memory peak).
pub fn load_owned(
    bytes: Vec<u8>,
    version: String,
    path: &Path,
    views: &Views,
    max_rows: u64,
) -> Result<Snapshot, LoadError> {
    let started = Instant::now();
    let raw = read_parquet(&bytes, &path.display().to_string(), max_rows)?;
    drop(bytes);
    load_parsed(raw, version, path, views, started, None)
}

/// What is told of a version a load has accepted, while it builds its table.
pub type Accepted = dyn Fn(&DatasetInfo) + Sync;

/// Builds the snapshot of an export already parsed (by [`read_parquet`], from `started`) whose
/// version is known: checks it, computes the views, builds the table. `accepted`, when given,
/// is told of the version once nothing left can refuse the export (it is checked and its views
/// computed), before the table is built.
pub fn load_parsed(
    raw: DataFrame,
    version: String,
    path: &Path,
    views: &Views,
    started: Instant,
    accepted: Option<&Accepted>,
) -> Result<Snapshot, LoadError> {
    let shown = path.display().to_string();
    let ms = |since: Instant| since.elapsed().as_millis() as u64;
    let read_ms = ms(started);
    let step = Instant::now();
    let mut usage = Usage::now();
    let (df, ids) = checked(raw, &shown)?;
    let check_ms = ms(step);
    let check_used = usage.lap();
    tracing::debug!("checked");
    // The raw export's text columns are gone (replaced by their dictionary-encoded forms).
    crate::process::memory::between_phases();
    let step = Instant::now();
    let views_err = |message: String| LoadError::Views { path: shown.clone(), message };
    // The key orders (ids, catalog order) come from the checked columns alone: they are
    // computed on a thread of their own while the views run. If that fails, the table build
    // computes them from the view.
    let (applied, keys) = std::thread::scope(|scope| {
        let keys = std::thread::Builder::new()
            .name("eco-keys".into())
            .spawn_scoped(scope, || contained(|| KeyOrders::compute(&df, ids)).ok().and_then(Result::ok))
            .ok();
        let applied = contained(|| views.apply_frame(&df));
        (applied, keys.and_then(|h| h.join().ok().flatten()))
    });
    drop(df);
    let view = match applied {
        Ok(applied) => applied.map_err(|e| views_err(format!("{e:#}")))?,
        // A panic here comes from the file's values (the same views run on every export).
        Err(panic) => {
            return Err(LoadError::Parquet {
                path: shown.clone(),
                message: format!("the views stopped on its values ({panic}); {DAMAGED}"),
            })
        }
    };
    let views_ms = ms(step);
    let views_used = usage.lap();
    tracing::debug!("views");
    // The check's and the views' transient columns are gone; the table build allocates anew.
    crate::process::memory::between_phases();
    let step = Instant::now();
    let info = DatasetInfo {
        version,
        loaded_at: Utc::now(),
        source: path.to_path_buf(),
        origin: Origin::Export,
        rows: view.height(),
        views: std::sync::Arc::new(views.clone()),
    };
    if let Some(accepted) = accepted {
        accepted(&info);
    }
    let snapshot = match contained(|| Snapshot::build(view, info, keys)) {
        Ok(built) => built.map_err(|e| views_err(e.to_string()))?,
        Err(panic) => {
            return Err(LoadError::Parquet {
                path: shown.clone(),
                message: format!("the served table cannot be built from its values ({panic}); {DAMAGED}"),
            })
        }
    };
    let (build_used, process) = (usage.lap(), Usage::now());
    // Each phase's wall time and the CPU time the process spent meanwhile (over its wall time:
    // how many cores the phase kept busy), and the pages it faulted in (fresh memory, which on a
    // virtual machine can cost more than the work written in the phase).
    tracing::info!(
        read_ms,
        check_ms,
        views_ms,
        snapshot_ms = ms(step),
        total_ms = ms(started),
        check_cpu_ms = check_used.cpu_ms,
        views_cpu_ms = views_used.cpu_ms,
        snapshot_cpu_ms = build_used.cpu_ms,
        process_cpu_ms = process.cpu_ms,
        check_faults = check_used.faults,
        views_faults = views_used.faults,
        snapshot_faults = build_used.faults,
        process_faults = process.faults,
        file = %shown,
        "dataset built"
    );
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::dataset::formula::Casas;
    use crate::engine::dataset::table::Table;
    use crate::engine::views::CostConfig;

    /// The encoded folded fuel holds the same text as the plain one, row for row, nulls
    /// included, whether the fuel column is dictionary-encoded or plain.
    #[test]
    fn folded_fuel_encoded_reads_as_the_plain_fold() {
        let fuels = [Some("ELÉTRICO"), Some("Eletrico"), None, Some("Flex"), Some("elétrico"), Some("GNV"), None];
        let plain = DataFrame::new_infer_height(vec![Column::new("combustivel_tipo".into(), fuels)]).unwrap();
        let encoded = schema::dictionary_encode(plain.column("combustivel_tipo").unwrap()).unwrap();
        let encoded = DataFrame::new_infer_height(vec![encoded]).unwrap();
        let expected: Vec<Option<String>> =
            fuel_fold(&plain).unwrap().str().unwrap().iter().map(|v| v.map(str::to_string)).collect();
        assert_eq!(expected[0].as_deref(), Some("eletrico"));
        for df in [&encoded, &plain] {
            let folded = fuel_fold_encoded(df).unwrap();
            assert!(schema::is_dictionary_dtype(folded.dtype()));
            assert_eq!(folded.name().as_str(), FUEL_FOLD);
            let text = folded.cast(&DataType::String).unwrap();
            let got: Vec<Option<String>> = text.str().unwrap().iter().map(|v| v.map(str::to_string)).collect();
            assert_eq!(got, expected);
        }
    }

    /// A file of several read parts (and a last part shorter than the others) is read byte for
    /// byte; one over the limit is refused.
    #[test]
    fn files_are_read_by_parts_byte_for_byte() {
        let path = std::env::temp_dir().join(format!("eco-read-{}.bin", std::process::id()));
        let len = READ_PART_BYTES * 2 + 12_345;
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let written: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        std::fs::write(&path, &written).unwrap();
        assert!(read_limited(&path, len as u64).unwrap() == written);
        assert!(matches!(read_limited(&path, len as u64 - 1), Err(LoadError::TooLarge { .. })));
        std::fs::write(&path, b"").unwrap();
        assert!(read_limited(&path, 10).unwrap().is_empty());
        std::fs::remove_file(&path).unwrap();
    }

    fn checked(rows: usize, seed: u64) -> (DataFrame, IdOrder, DataFrame, Casas) {
        let mut df = crate::sample::generate_catalog(rows, seed).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).with_row_group_size(Some(rows / 3)).finish(&mut df).unwrap();
        let raw = read_parquet(&bytes, "generated.parquet", DEFAULT_MAX_ROWS).unwrap();
        let (checked, order) = prepare(raw).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        let view = views.apply(checked.clone().lazy()).unwrap();
        (checked, order, view, views.params.casas)
    }

    /// The key orders computed from the checked export (beside the views) give the table the
    /// view alone gives; key orders of other rows are not used.
    #[test]
    fn key_orders_computed_before_the_views_give_the_same_table() {
        let (checked, order, view, casas) = checked(600, 11);
        let alone = Table::build(view.clone(), casas, None).unwrap();
        let keys = KeyOrders::compute(&checked, order.clone()).unwrap();
        let early = Table::build(view.clone(), casas, Some(keys)).unwrap();
        assert_eq!(early.vehicles(), alone.vehicles());
        assert_eq!(early.rows_by_id(), alone.rows_by_id());
        assert_eq!(early.order("eco_score", true).unwrap(), alone.order("eco_score", true).unwrap());
        // Rows in another order: the orders do not hold for this view and are recomputed.
        let reversed = checked.reverse();
        let ids = IdOrder::new(order.ids.iter().rev().copied().collect());
        let stale = KeyOrders::compute(&reversed, ids).unwrap();
        let rebuilt = Table::build(view, casas, Some(stale)).unwrap();
        assert_eq!(rebuilt.vehicles(), alone.vehicles());
        assert_eq!(rebuilt.rows_by_id(), alone.rows_by_id());
        // Rows already in catalog order (an export written in that order): the table built from
        // their view, its key orders computed from it, gathers nothing and is the same table.
        let keys = KeyOrders::compute(&checked, order.clone()).unwrap();
        let (ordered, ..) = keys.put_in_order(checked.clone()).unwrap();
        assert!(ordered.columns().iter().all(|c| c.n_chunks() == 1));
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        let ordered_view = views.apply(ordered.lazy()).unwrap();
        let first = Table::build(ordered_view, casas, None).unwrap();
        assert_eq!(first.vehicles(), alone.vehicles());
        assert_eq!(first.rows_by_id(), alone.rows_by_id());
        assert_eq!(first.order("eco_score", true).unwrap(), alone.order("eco_score", true).unwrap());
        // The catalog order itself: marca, modelo, versao, ano descending, then id.
        let vehicles = alone.vehicles();
        let key = |v: &crate::engine::dataset::table::Vehicle| {
            (v.marca.clone(), v.modelo.clone(), v.versao.clone(), std::cmp::Reverse(v.ano), v.id.to_string())
        };
        assert!(vehicles.windows(2).all(|w| key(&w[0]) < key(&w[1])));
    }

    /// A file decoded a few row groups at a time holds the rows a whole decode gives, its text
    /// encoded with one mapping per column across the batches.
    #[test]
    fn batches_decode_what_the_whole_file_holds() {
        let mut df = crate::sample::generate_catalog(700, 3).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).with_row_group_size(Some(64)).finish(&mut df).unwrap();
        let metadata = ParquetReader::new(Cursor::new(&bytes)).get_metadata().cloned().unwrap();
        assert!(metadata.row_groups.len() > 5);
        let whole = ParquetReader::new(Cursor::new(&bytes)).finish().unwrap();
        for batch_rows in [1, 100, 250, 10_000] {
            let batched = decode_in_batches(&bytes, &metadata, batch_rows).unwrap();
            assert_eq!(batched.height(), whole.height());
            assert_eq!(batched.get_column_names(), whole.get_column_names());
            for column in whole.columns() {
                let ours = batched.column(column.name()).unwrap();
                if DICTIONARY_ENCODED.contains(&column.name().as_str()) {
                    assert!(schema::is_dictionary_dtype(ours.dtype()), "{} is {}", column.name(), ours.dtype());
                }
                let (ours, theirs) = (ours.cast(&DataType::String).ok(), column.cast(&DataType::String).ok());
                match (ours, theirs) {
                    (Some(a), Some(b)) => assert!(a.equals_missing(&b), "{} differs", column.name()),
                    _ => assert!(batched.column(column.name()).unwrap().equals_missing(column)),
                }
            }
        }
    }

    /// Batches hold whole row groups, within the batch size, and (but the last) a multiple of the
    /// cores when they hold more row groups than cores.
    #[test]
    fn batches_split_row_groups_evenly_between_cores() {
        let mut df = crate::sample::generate_catalog(38 * 64, 3).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).with_row_group_size(Some(64)).finish(&mut df).unwrap();
        let metadata = ParquetReader::new(Cursor::new(&bytes)).get_metadata().cloned().unwrap();
        assert_eq!(metadata.row_groups.len(), 38);
        let groups = |threads| batches_of(&metadata, 7 * 64, threads).iter().map(|b| b.2).collect::<Vec<_>>();
        assert_eq!(groups(1), [7, 7, 7, 7, 7, 3]);
        assert_eq!(groups(2), [6, 6, 6, 6, 6, 6, 2]);
        assert_eq!(groups(4), [4, 4, 4, 4, 4, 4, 4, 4, 6]);
        assert_eq!(groups(8), [7, 7, 7, 7, 7, 3]);
        for threads in [1, 2, 3, 8] {
            let batches = batches_of(&metadata, 7 * 64, threads);
            let mut next = 0;
            for &(start, len, groups) in &batches {
                assert_eq!((start, len), (next, groups * 64), "{batches:?}");
                next += len;
            }
            assert_eq!(next, 38 * 64);
        }
        assert_eq!(batches_of(&metadata, 1, 2).len(), 38, "a row group larger than the batch is a batch");
    }

    /// An export without the optional `nmog_nox_g_km` column is read with it all null, in its
    /// place among the columns; one with it keeps its values (NaN as null).
    #[test]
    fn the_optional_column_is_null_when_absent_and_kept_when_present() {
        let raw = crate::sample::generate_catalog(50, 2).unwrap();
        assert!(raw.column("nmog_nox_g_km").is_err());
        let (without, _) = prepare(raw.clone()).unwrap();
        let column = without.column("nmog_nox_g_km").unwrap();
        assert_eq!((column.dtype(), column.null_count(), column.len()), (&DataType::Float64, 50, 50));
        let names: Vec<&str> = without.get_column_names().iter().map(|n| n.as_str()).collect();
        let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
        assert_eq!(at("nmog_nox_g_km"), at("nox_g_km") + 1);
        let mut with = raw;
        let mut values: Vec<Option<f64>> = (0..50).map(|i| (i % 4 != 0).then_some(0.01 * i as f64)).collect();
        values[1] = Some(f64::NAN);
        with.with_column(Column::new("nmog_nox_g_km".into(), values)).unwrap();
        let (checked, _) = prepare(with).unwrap();
        let column = checked.column("nmog_nox_g_km").unwrap().f64().unwrap().clone();
        assert_eq!(column.null_count(), 13 + 1, "13 nulls written and one NaN");
        assert_eq!(column.get(2), Some(0.02));
    }

    /// Text read as plain strings is dictionary-encoded with the values the cast would give.
    #[test]
    fn plain_text_is_encoded_as_the_cast_would() {
        let (checked, ..) = checked(300, 5);
        for name in DICTIONARY_ENCODED {
            let column = checked.column(name).unwrap();
            assert!(column.dtype().is_categorical(), "{name} is {}", column.dtype());
        }
    }
}
