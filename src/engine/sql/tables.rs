//! A dataset version's tables as a worker reads them: the version's export, a Parquet file read
//! where it lies (projected, on every core, a query decoding only the columns it uses), typed as
//! the service's load types it (`catalog`: canonical types, NaN as null, an optional column the
//! file lacks as all null, the ids parsed or derived, the folded fuel name); and the views,
//! computed by DataFusion from the very statements the service runs (`queries/`, their constants
//! filled in), as views over `catalog`. Nothing needs to be written or computed first: a version
//! is answered as soon as it serves (the tables written ahead for catalogs up to 5M rows, see
//! [`super::mapped`], only make later queries faster).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Float64Array, Int32Array, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Column, DataFusionError, ScalarValue};
use datafusion::logical_expr::{create_udf, ColumnarValue, Expr, ScalarUDF, Volatility};
use datafusion::prelude::{lit, ParquetReadOptions, SessionContext};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::engine::dataset::publish::round_published;
use crate::engine::dataset::schema::{derive_id, Kind, COLUMNS, ID};
use crate::engine::dataset::text_index::fold;

/// A session in PostgreSQL's dialect and semantics, on `partitions` partitions, within
/// `memory_bytes` (no tables yet).
pub fn context(partitions: usize, memory_bytes: usize) -> Result<SessionContext, String> {
    let config = datafusion::prelude::SessionConfig::new()
        .with_target_partitions(partitions)
        .with_information_schema(false)
        .with_default_catalog_and_schema("eco", "public")
        .set_str("datafusion.sql_parser.dialect", "PostgreSQL")
        .set_str("datafusion.sql_parser.default_null_ordering", "nulls_max")
        .set_str("datafusion.sql_parser.parse_float_as_decimal", "true")
        .set_str("datafusion.execution.time_zone", "UTC")
        // The export's text read as plain UTF-8 arrays (the types the catalog offers).
        .set_str("datafusion.execution.parquet.schema_force_view_types", "false");
    // Three quarters of the budget for DataFusion's own accounting: what it does not count
    // (batches in flight, the answer) fits in the rest before the process limit.
    let pool = datafusion::execution::memory_pool::TrackConsumersPool::new(
        datafusion::execution::memory_pool::GreedyMemoryPool::new(memory_bytes / 4 * 3),
        std::num::NonZeroUsize::new(3).unwrap_or(std::num::NonZeroUsize::MIN),
    );
    let runtime = datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
        .with_memory_pool(Arc::new(pool))
        .with_disk_manager_builder(
            datafusion::execution::disk_manager::DiskManagerBuilder::default()
                .with_mode(datafusion::execution::disk_manager::DiskManagerMode::Disabled),
        )
        .build_arc()
        .map_err(|e| e.to_string())?;
    let state = datafusion::execution::SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .build();
    let ctx = SessionContext::new_with_state(state);
    super::postgres::install(&ctx);
    Ok(ctx)
}

/// A version's export in its folder of tables.
pub const EXPORT: &str = "export.parquet";
/// A version's views in its folder of tables ([`Statements`]).
pub const STATEMENTS: &str = "views.json";

/// The views of a version, as the service computes them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Statements {
    /// Each statement of `queries/` in order, its constants filled in.
    pub statements: Vec<String>,
}

impl Statements {
    /// The statements of `views`, in order.
    pub fn of(views: &crate::engine::dataset::views::Views) -> Statements {
        Statements { statements: views.statements.iter().map(|(_, stmt)| stmt.clone()).collect() }
    }

    /// The defining query of every table the statements create, by name (the text after
    /// `CREATE TABLE name AS`: Polars SQL, the formula constants in), for `pg_get_viewdef` and
    /// the catalog's view definitions.
    pub fn definitions(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for stmt in &self.statements {
            let Some((name, rest)) = created_table(stmt) else { continue };
            let Some(query) = defining_query(rest) else { continue };
            out.entry(name).or_insert_with(|| format!(" {query};"));
        }
        out
    }
}

/// A view statement's created table: its name (unquoted, in lower case) and what follows
/// `CREATE TABLE name` (`AS query`); `None` for another statement.
pub fn created_table(stmt: &str) -> Option<(String, &str)> {
    let mut words = stmt.split_whitespace();
    let (create, table, name) = (words.next()?, words.next()?, words.next()?);
    if !create.eq_ignore_ascii_case("create") || !table.eq_ignore_ascii_case("table") {
        return None;
    }
    let rest = &stmt[stmt.find(name)? + name.len()..];
    Some((name.trim_matches('"').to_lowercase(), rest.trim_start()))
}

/// The query of a `CREATE TABLE name AS query` statement's rest (see [`created_table`]).
pub fn defining_query(rest: &str) -> Option<&str> {
    rest.get(..2).filter(|w| w.eq_ignore_ascii_case("as")).map(|_| rest[2..].trim().trim_end_matches(';').trim_end())
}

/// The Arrow type of an input column's kind, as the load types it.
fn arrow_type(kind: Kind) -> DataType {
    match kind {
        Kind::Text => DataType::Utf8,
        Kind::Integer => DataType::Int32,
        Kind::Float => DataType::Float64,
        Kind::Boolean => DataType::Boolean,
    }
}

type Kernel = dyn Fn(&[ArrayRef]) -> Result<ArrayRef, DataFusionError> + Send + Sync;

/// A deterministic function of columns, computed a batch at a time.
fn function(name: &str, inputs: Vec<DataType>, output: DataType, kernel: Arc<Kernel>) -> ScalarUDF {
    create_udf(
        name,
        inputs,
        output,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            kernel(&arrays).map(ColumnarValue::Array)
        }),
    )
}

fn typed<'a, T: 'static>(array: &'a ArrayRef, what: &str) -> Result<&'a T, DataFusionError> {
    array
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| DataFusionError::Internal(format!("{what}: unexpected argument type {}", array.data_type())))
}

/// `ROUND_PUBLISHED(value, decimals)`: the service's one rounding rule (see
/// [`round_published`]), for the views' statements.
pub fn round_published_udf() -> ScalarUDF {
    function(
        "round_published",
        vec![DataType::Float64, DataType::Int64],
        DataType::Float64,
        Arc::new(|args| {
            let values = typed::<Float64Array>(&args[0], "ROUND_PUBLISHED")?;
            let decimals = typed::<datafusion::arrow::array::Int64Array>(&args[1], "ROUND_PUBLISHED")?;
            let out: Float64Array = values
                .iter()
                .zip(decimals.iter())
                .map(|(v, d)| match d {
                    Some(d) if (0..=8).contains(&d) => Ok(v.map(|v| round_published(v, d as u32))),
                    _ => Err(DataFusionError::Execution(
                        "ROUND_PUBLISHED: decimals must be a constant from 0 to 8".into(),
                    )),
                })
                .collect::<Result<_, _>>()?;
            Ok(Arc::new(out) as ArrayRef)
        }),
    )
}

/// A float column with NaN read as null (as the load reads it).
fn nan_as_null() -> ScalarUDF {
    function(
        "eco_nan_as_null",
        vec![DataType::Float64],
        DataType::Float64,
        Arc::new(|args| {
            let values = typed::<Float64Array>(&args[0], "nan_as_null")?;
            if !values.values().iter().any(|v| v.is_nan()) {
                return Ok(Arc::clone(&args[0]));
            }
            let out: Float64Array = values.iter().map(|v| v.filter(|x| !x.is_nan())).collect();
            Ok(Arc::new(out) as ArrayRef)
        }),
    )
}

/// An export's id in the service's form (the parsed UUID, lower case with hyphens).
fn id_text() -> ScalarUDF {
    function(
        "eco_id_text",
        vec![DataType::Utf8],
        DataType::Utf8,
        Arc::new(|args| {
            let values = typed::<StringArray>(&args[0], "id")?;
            let out: StringArray = values
                .iter()
                .map(|v| v.map(|v| Uuid::parse_str(v).map(|u| u.to_string()).unwrap_or_else(|_| v.to_string())))
                .collect();
            Ok(Arc::new(out) as ArrayRef)
        }),
    )
}

/// The id of a row of an export without ids (see [`derive_id`]).
fn derived_id() -> ScalarUDF {
    function(
        "eco_derived_id",
        vec![DataType::Utf8, DataType::Utf8, DataType::Utf8, DataType::Int32, DataType::Utf8, DataType::Utf8],
        DataType::Utf8,
        Arc::new(|args| {
            let text = |k: usize| typed::<StringArray>(&args[k], "id");
            let (marca, modelo, versao, motor, transmissao) = (text(0)?, text(1)?, text(2)?, text(4)?, text(5)?);
            let ano = typed::<Int32Array>(&args[3], "id")?;
            fn get(a: &StringArray, i: usize) -> Option<&str> {
                (!a.is_null(i)).then(|| a.value(i))
            }
            let out: StringArray = (0..marca.len())
                .map(|i| {
                    Some(
                        derive_id(
                            get(marca, i).unwrap_or(""),
                            get(modelo, i).unwrap_or(""),
                            get(versao, i).unwrap_or(""),
                            if ano.is_null(i) { 0 } else { ano.value(i) as i64 },
                            get(motor, i),
                            get(transmissao, i),
                        )
                        .to_string(),
                    )
                })
                .collect();
            Ok(Arc::new(out) as ArrayRef)
        }),
    )
}

/// The folded fuel name (lower case without accents), each distinct value folded once a batch.
fn fuel_fold() -> ScalarUDF {
    function(
        "eco_fuel_fold",
        vec![DataType::Utf8],
        DataType::Utf8,
        Arc::new(|args| {
            let values = typed::<StringArray>(&args[0], "combustivel_fold")?;
            let mut folded: HashMap<&str, String> = HashMap::new();
            let out: StringArray =
                values.iter().map(|v| v.map(|v| folded.entry(v).or_insert_with(|| fold(v)).clone())).collect();
            Ok(Arc::new(out) as ArrayRef)
        }),
    )
}

/// The number of rows of a Parquet file, from its footer.
fn rows_of(path: &Path) -> Result<usize, String> {
    use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open the export: {e}"))?;
    let reader = SerializedFileReader::new(file).map_err(|e| format!("cannot read the export: {e}"))?;
    Ok(reader.metadata().file_metadata().num_rows().max(0) as usize)
}

/// The views' statements of the folder `dir`.
pub fn statements(dir: &Path) -> Result<Statements, String> {
    std::fs::read(dir.join(STATEMENTS))
        .map_err(|e| format!("cannot read the views: {e}"))
        .and_then(|text| serde_json::from_slice(&text).map_err(|e| format!("the views' file is damaged: {e}")))
}

/// Registers the tables of the folder `dir` in `ctx`: `catalog` over the export and every view of
/// `statements`.
pub async fn register(
    ctx: &SessionContext,
    dir: &Path,
    tables: &[String],
    statements: &Statements,
) -> Result<Vec<super::pg_catalog::Offered>, String> {
    let rows = register_export(ctx, dir).await?;
    create_views(ctx, statements).await?;
    let definitions = statements.definitions();
    let mut offered = Vec::with_capacity(tables.len());
    for name in tables {
        let provider = ctx.table_provider(name.as_str()).await.map_err(|e| format!("no table {name}: {e}"))?;
        offered.push(super::pg_catalog::Offered {
            name: name.clone(),
            schema: provider.schema(),
            rows,
            view: name != "catalog",
            definition: definitions.get(name).cloned(),
        });
    }
    Ok(offered)
}

/// Registers `catalog` in `ctx`: the export of the folder `dir`, typed. Returns its rows.
pub async fn register_export(ctx: &SessionContext, dir: &Path) -> Result<usize, String> {
    let export = dir.join(EXPORT);
    let rows = rows_of(&export)?;
    let path = export.to_str().ok_or("the folder of tables has a path that is not UTF-8")?;
    let read = ctx
        .read_parquet(path, ParquetReadOptions::default())
        .await
        .map_err(|e| format!("cannot read the export: {e}"))?;
    let present: Vec<String> = read.schema().fields().iter().map(|f| f.name().clone()).collect();
    let has = |name: &str| present.iter().any(|p| p == name);
    let column = |name: &str| Expr::Column(Column::new_unqualified(name));
    let nan = nan_as_null();
    let value = |name: &str| -> Expr {
        let Some(spec) = COLUMNS.iter().find(|c| c.name == name) else { return lit(ScalarValue::Null) };
        let target = arrow_type(spec.kind);
        if !has(spec.name) {
            return lit(ScalarValue::try_from(&target).unwrap_or(ScalarValue::Null));
        }
        let e = datafusion::logical_expr::cast(column(spec.name), target);
        if spec.kind == Kind::Float {
            nan.call(vec![e])
        } else {
            e
        }
    };
    let id = if has(ID) {
        id_text().call(vec![datafusion::logical_expr::cast(column(ID), DataType::Utf8)])
    } else {
        derived_id()
            .call(["marca", "modelo", "versao", "ano", "motor", "transmissao_tipo"].iter().map(|n| value(n)).collect())
    };
    let mut exprs = vec![id.alias(ID)];
    exprs.extend(COLUMNS.iter().map(|spec| value(spec.name).alias(spec.name)));
    exprs.push(fuel_fold().call(vec![value("combustivel_tipo")]).alias(crate::engine::dataset::load::FUEL_FOLD));
    let catalog = read.select(exprs).map_err(|e| format!("cannot type the export: {e}"))?;
    ctx.register_table("catalog", catalog.into_view()).map_err(|e| e.to_string())?;
    Ok(rows)
}

/// Creates the views of `statements` in `ctx`, over its `catalog`, in order. The session parses
/// float literals as decimals for analysts; the views' statements are planned with float
/// literals as doubles, as the service computes them.
pub async fn create_views(ctx: &SessionContext, statements: &Statements) -> Result<(), String> {
    ctx.register_udf(round_published_udf());
    let parse_as_decimal = |on: bool| {
        ctx.state_ref().write().config_mut().options_mut().sql_parser.parse_float_as_decimal = on;
    };
    parse_as_decimal(false);
    let mut created = Ok(());
    for stmt in &statements.statements {
        let Some((name, query)) = created_table(stmt).and_then(|(n, rest)| Some((n, defining_query(rest)?))) else {
            continue;
        };
        let view = format!("CREATE VIEW \"{name}\" AS {query}");
        if let Err(e) = async { ctx.sql(&view).await?.collect().await }.await {
            created = Err(format!("cannot compute the view {name}: {e}"));
            break;
        }
    }
    parse_as_decimal(true);
    created
}

/// Writes the copy of an export that the workers read: its bytes, with the Arrow schema some
/// writers embed in the footer (`ARROW:schema`) left out, so the columns are read by their
/// Parquet types (Polars records its dictionary-encoded text there as a type the Parquet reader
/// cannot produce). The data pages are the export's own; a footer that cannot be read is copied
/// as it is (the load refuses such a file anyway).
pub fn write_export_copy(bytes: &[u8], path: &Path) -> std::io::Result<()> {
    use datafusion::parquet::file::metadata::{
        FileMetaData, ParquetMetaData, ParquetMetaDataReader, ParquetMetaDataWriter,
    };
    use std::io::Write;
    const HINT: &str = "ARROW:schema";
    let n = bytes.len();
    let footer = (n >= 12 && &bytes[n - 4..] == b"PAR1")
        .then(|| u32::from_le_bytes([bytes[n - 8], bytes[n - 7], bytes[n - 6], bytes[n - 5]]) as usize)
        .and_then(|len| (n - 8).checked_sub(len))
        .and_then(|start| Some((start, ParquetMetaDataReader::decode_metadata(&bytes[start..n - 8]).ok()?)));
    // Written around the page cache: the workers read back the few columns a query needs.
    let mut out = crate::process::direct::DirectFile::create(path)?;
    match footer {
        Some((start, metadata))
            if metadata.file_metadata().key_value_metadata().is_some_and(|kv| kv.iter().any(|k| k.key == HINT)) =>
        {
            let file = metadata.file_metadata();
            let kept: Vec<_> =
                file.key_value_metadata().into_iter().flatten().filter(|k| k.key != HINT).cloned().collect();
            let stripped = ParquetMetaData::new(
                FileMetaData::new(
                    file.version(),
                    file.num_rows(),
                    file.created_by().map(str::to_string),
                    (!kept.is_empty()).then_some(kept),
                    file.schema_descr_ptr(),
                    file.column_orders().cloned(),
                ),
                metadata.row_groups().to_vec(),
            );
            out.write_all(&bytes[..start])?;
            ParquetMetaDataWriter::new(&mut out, &stripped).finish().map_err(std::io::Error::other)?;
        }
        _ => out.write_all(bytes)?,
    }
    out.finish()
}

/// Plans the views' statements as the workers do, over an empty `catalog` of the input schema:
/// the reason a view cannot be read in analysts' SQL (a function Polars offers and DataFusion
/// does not, say), if any.
pub fn check_views(statements: &Statements) -> Result<(), String> {
    use datafusion::arrow::datatypes::{Field, Schema};
    let mut fields = vec![Field::new(ID, DataType::Utf8, true)];
    fields.extend(COLUMNS.iter().map(|c| Field::new(c.name, arrow_type(c.kind), true)));
    fields.push(Field::new(crate::engine::dataset::load::FUEL_FOLD, DataType::Utf8, true));
    let schema = Arc::new(Schema::new(fields));
    let ctx = context(1, 64 << 20)?;
    let empty = datafusion::catalog::MemTable::try_new(schema, vec![Vec::new()]).map_err(|e| e.to_string())?;
    ctx.register_table("catalog", Arc::new(empty)).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| format!("cannot start the SQL engine: {e}"))?;
    runtime.block_on(create_views(&ctx, statements))
}
