//! A dataset version's tables written ahead, for catalogs up to [`AHEAD_MAX_ROWS`] rows: the
//! typed `catalog` and each view's own columns as Arrow IPC files, computed by DataFusion from the
//! version's export in a process of its own (`eco-insights sql-tables`, at the idle priority),
//! so that neither the service's memory nor its CPU pays for them. Until they are complete, the
//! workers read the export itself (see [`super::tables`]); once the folder is renamed into place,
//! they map the files instead: the same values (one engine computes both), read without decoding.
//!
//! A view's file holds only the columns it does not share with the catalog, row for row (the
//! worker takes those from the catalog's file), when the view is a projection of the catalog;
//! otherwise its file holds every column.

use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::ipc::convert::fb_to_schema;
use datafusion::arrow::ipc::reader::{read_footer_length, FileDecoder};
use datafusion::arrow::ipc::root_as_footer;
use datafusion::catalog::MemTable;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

/// The most rows whose tables are written ahead (some 500 MB of files per million rows).
pub const AHEAD_MAX_ROWS: usize = 5_000_000;
/// The folder of the tables written ahead, in a version's folder.
pub const WRITTEN: &str = "tables";
/// The layouts of a version's views, beside their files.
const LAYOUT: &str = "layout.json";
/// Rows per record batch handed to DataFusion (slices of the files' batches, no copy).
const SLICE_ROWS: usize = 64 * 1024;

/// How a view's table is stored: its columns in order, and those that are the catalog's own
/// column of that name, row for row (not written again: the worker reads them from the catalog's
/// file). A view that is not a projection of the catalog shares none.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Layout {
    columns: Vec<String>,
    shared: Vec<String>,
}

/// An IPC file's bytes, mapped: the owner of the buffers of its batches.
struct Mapped(Arc<memmap2::Mmap>);

impl Mapped {
    fn open(path: &Path) -> Result<Mapped, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("cannot open a table: {e}"))?;
        // SAFETY: the file is the service's own, written once to a temporary name and renamed
        // into place; nothing writes it afterwards (a new version gets a folder of its own).
        let mmap = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("cannot map a table: {e}"))?;
        if mmap.is_empty() {
            return Err("cannot map an empty table file".into());
        }
        Ok(Mapped(Arc::new(mmap)))
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    /// Bytes `start..start + len` of the file (within it) as a buffer of their own: an
    /// allocation of that size in the engine's memory accounting, which counts a buffer's whole
    /// allocation once per batch. Sliced from one buffer of the whole file, every batch would
    /// count as the whole file, and a query keeping a few batches (a sort's top rows, a join's
    /// build side) would seem to outgrow the memory budget at once.
    fn range(&self, start: usize, len: usize) -> Buffer {
        let ptr = NonNull::new(self.0[start..start + len].as_ptr() as *mut u8).unwrap_or(NonNull::dangling());
        // SAFETY: the range lies within the mapping (sliced above), and the mapping lives as long
        // as the buffer (it is the buffer's owner).
        unsafe { Buffer::from_custom_allocation(ptr, len, Arc::clone(&self.0) as _) }
    }
}

/// The schema and record batches of a mapped IPC file (no copy: their buffers are the map's).
fn decode(path: &Path) -> Result<(SchemaRef, Vec<RecordBatch>), String> {
    let bad = |what: &str| format!("a table file is damaged ({what})");
    let file = Mapped::open(path)?;
    if file.len() < 10 {
        return Err(bad("too short"));
    }
    let trailer = file.len() - 10;
    let tail: [u8; 10] = file.0[trailer..].try_into().map_err(|_| bad("trailer"))?;
    let footer_len = read_footer_length(tail).map_err(|e| bad(&e.to_string()))?;
    let footer_start = trailer.checked_sub(footer_len).ok_or_else(|| bad("footer"))?;
    let footer = root_as_footer(&file.0[footer_start..trailer]).map_err(|e| bad(&e.to_string()))?;
    let schema = Arc::new(fb_to_schema(footer.schema().ok_or_else(|| bad("no schema"))?));
    // SAFETY: validation is skipped because the file is the service's own output (see `map`),
    // written by Polars from checked columns; validating would read every page of every column at
    // each worker's first query.
    let mut decoder = unsafe { FileDecoder::new(Arc::clone(&schema), footer.version()).with_skip_validation(true) };
    let block_of = |block: &datafusion::arrow::ipc::Block| -> Result<Buffer, String> {
        let start = usize::try_from(block.offset()).map_err(|_| bad("block"))?;
        let len = block.bodyLength() as usize + block.metaDataLength() as usize;
        if start.checked_add(len).is_none_or(|end| end > file.len()) {
            return Err(bad("block out of bounds"));
        }
        Ok(file.range(start, len))
    };
    for block in footer.dictionaries().iter().flatten() {
        decoder.read_dictionary(block, &block_of(block)?).map_err(|e| bad(&e.to_string()))?;
    }
    let mut batches = Vec::new();
    for block in footer.recordBatches().iter().flatten() {
        if let Some(batch) = decoder.read_record_batch(block, &block_of(block)?).map_err(|e| bad(&e.to_string()))? {
            batches.push(batch);
        }
    }
    Ok((schema, batches))
}

/// Record batches with the first row of each (in the table).
struct Rows {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    starts: Vec<usize>,
}

impl Rows {
    fn new((schema, batches): (SchemaRef, Vec<RecordBatch>)) -> Rows {
        let mut starts = Vec::with_capacity(batches.len());
        let mut n = 0;
        for b in &batches {
            starts.push(n);
            n += b.num_rows();
        }
        Rows { schema, batches, starts }
    }

    fn len(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// Rows `start..start + len`, within one batch (the segments are cut at every batch's end).
    fn slice(&self, start: usize, len: usize) -> RecordBatch {
        let i = self.starts.partition_point(|&s| s <= start).saturating_sub(1);
        self.batches[i].slice(start - self.starts[i], len)
    }
}

/// A table of the version: its own file's columns, and the columns it shares with the catalog
/// (`layout`) taken from the catalog's file, row for row; cut into slices of at most
/// [`SLICE_ROWS`] rows dealt into `partitions` partitions.
fn table(own: &Rows, catalog: Option<&Rows>, layout: Option<&Layout>, partitions: usize) -> Result<MemTable, String> {
    let shared: &[String] = layout.map(|l| l.shared.as_slice()).unwrap_or_default();
    let catalog = catalog.filter(|_| !shared.is_empty());
    let own_columns = own.schema.fields().len();
    let rows = match catalog {
        Some(c) if own_columns == 0 => c.len(),
        Some(c) if c.len() != own.len() => return Err("a view's rows do not match the catalog's".into()),
        _ => own.len(),
    };
    // Where every slice ends: each batch's end in either file, and every SLICE_ROWS rows.
    let mut ends: Vec<usize> = (1..=rows.div_ceil(SLICE_ROWS)).map(|k| (k * SLICE_ROWS).min(rows)).collect();
    let mut cut = |r: &Rows| ends.extend(r.starts.iter().skip(1).copied());
    if own_columns > 0 {
        cut(own);
    }
    if let Some(c) = catalog {
        cut(c);
    }
    ends.sort_unstable();
    ends.dedup();
    // The columns in the view's order, each from its file.
    let names: Vec<String> = match layout {
        Some(l) => l.columns.clone(),
        None => own.schema.fields().iter().map(|f| f.name().clone()).collect(),
    };
    let mut sources = Vec::with_capacity(names.len());
    let mut fields = Vec::with_capacity(names.len());
    for name in &names {
        let (from_catalog, rows_of) = match catalog {
            Some(c) if shared.contains(name) => (true, c),
            _ => (false, own),
        };
        let index = rows_of.schema.index_of(name).map_err(|_| format!("a table file lacks the column {name}"))?;
        fields.push(rows_of.schema.field(index).clone());
        sources.push((from_catalog, index));
    }
    let schema = Arc::new(Schema::new(fields));
    let mut parts: Vec<Vec<RecordBatch>> = vec![Vec::new(); partitions.max(1)];
    let count = parts.len();
    let mut start = 0;
    for (k, end) in ends.into_iter().enumerate() {
        let len = end - start;
        let own_slice = (own_columns > 0).then(|| own.slice(start, len));
        let catalog_slice = catalog.map(|c| c.slice(start, len));
        let columns: Vec<ArrayRef> = sources
            .iter()
            .map(|(from_catalog, index)| match (from_catalog, &catalog_slice, &own_slice) {
                (true, Some(c), _) => Arc::clone(c.column(*index)),
                (_, _, Some(o)) => Arc::clone(o.column(*index)),
                _ => unreachable!("a column comes from a file that has rows"),
            })
            .collect();
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns).map_err(|e| e.to_string())?;
        parts[k % count].push(batch);
        start = end;
    }
    MemTable::try_new(schema, parts).map_err(|e| e.to_string())
}

/// Registers the tables written ahead in the folder `written` in `ctx`, each over the mapped
/// files, dealt into `partitions` partitions.
pub fn register(
    ctx: &SessionContext,
    written: &Path,
    tables: &[String],
    partitions: usize,
    definitions: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<super::pg_catalog::Offered>, String> {
    let layouts: std::collections::BTreeMap<String, Layout> = std::fs::read(written.join(LAYOUT))
        .map_err(|e| format!("cannot read the tables' layout: {e}"))
        .and_then(|text| serde_json::from_slice(&text).map_err(|e| format!("the tables' layout is damaged: {e}")))?;
    let catalog = Rows::new(decode(&written.join("catalog.arrow"))?);
    let mut offered = Vec::with_capacity(tables.len());
    for name in tables {
        let (table, rows) = if name == "catalog" {
            (table(&catalog, None, None, partitions)?, catalog.len())
        } else {
            let own = Rows::new(decode(&written.join(format!("{name}.arrow")))?);
            let rows = if own.schema.fields().is_empty() { catalog.len() } else { own.len() };
            (table(&own, Some(&catalog), layouts.get(name), partitions)?, rows)
        };
        let schema = datafusion::catalog::TableProvider::schema(&table);
        offered.push(super::pg_catalog::Offered {
            name: name.clone(),
            schema,
            rows,
            view: name != "catalog",
            definition: definitions.get(name).cloned(),
        });
        ctx.register_table(name.as_str(), Arc::new(table)).map_err(|e| e.to_string())?;
    }
    Ok(offered)
}

/// Writes the stream of `frame` to the IPC file `path`, in record batches of [`SLICE_ROWS`] rows
/// (the engine's are smaller: a query over many small slices pays for each).
async fn write_file(path: &Path, frame: datafusion::dataframe::DataFrame) -> Result<usize, String> {
    let failed = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let schema: Schema = frame.schema().as_arrow().clone();
    let mut stream = frame.execute_stream().await.map_err(|e| failed(&e))?;
    let file = std::fs::File::create(path).map_err(|e| failed(&e))?;
    let mut writer =
        datafusion::arrow::ipc::writer::FileWriter::try_new(std::io::BufWriter::with_capacity(1 << 20, file), &schema)
            .map_err(|e| failed(&e))?;
    let (mut rows, mut pending, mut pending_rows) = (0, Vec::new(), 0);
    let schema = Arc::new(schema);
    let flush = |pending: &mut Vec<RecordBatch>, writer: &mut datafusion::arrow::ipc::writer::FileWriter<_>| {
        let batch = datafusion::arrow::compute::concat_batches(&schema, pending.iter()).map_err(|e| failed(&e))?;
        pending.clear();
        writer.write(&batch).map_err(|e| failed(&e))
    };
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| failed(&e))?;
        rows += batch.num_rows();
        pending_rows += batch.num_rows();
        pending.push(batch);
        if pending_rows >= SLICE_ROWS {
            flush(&mut pending, &mut writer)?;
            pending_rows = 0;
        }
    }
    if !pending.is_empty() {
        flush(&mut pending, &mut writer)?;
    }
    writer.finish().map_err(|e| failed(&e))?;
    Ok(rows)
}

/// For each output column of `plan`, the `catalog` column it passes on unchanged, if any; `None`
/// when the plan is not made of projections over the whole catalog (its rows might not be the
/// catalog's, one for one, in their order).
fn passed_on(plan: &LogicalPlan) -> Option<Vec<Option<String>>> {
    match plan {
        LogicalPlan::TableScan(scan)
            if scan.table_name.table() == "catalog" && scan.filters.is_empty() && scan.fetch.is_none() =>
        {
            Some(plan.schema().fields().iter().map(|f| Some(f.name().clone())).collect())
        }
        LogicalPlan::SubqueryAlias(alias) => passed_on(&alias.input),
        LogicalPlan::Projection(projection) => {
            let below = passed_on(&projection.input)?;
            let input = projection.input.schema();
            Some(
                projection
                    .expr
                    .iter()
                    .map(|e| match e.clone().unalias() {
                        datafusion::logical_expr::Expr::Column(c) => {
                            input.index_of_column(&c).ok().and_then(|i| below.get(i).cloned().flatten())
                        }
                        _ => None,
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Writes the tables of the version folder `dir` ahead (`eco-insights sql-tables DIR`): the typed
/// catalog from the export, then each view's own columns computed over the written catalog, in
/// one partition so that they follow its rows; into a temporary folder renamed into place once
/// complete (a folder already there is kept).
pub fn write_ahead(dir: &Path, tables: &[String]) -> Result<(), String> {
    let target = dir.join(WRITTEN);
    if target.is_dir() {
        return Ok(());
    }
    let tmp = dir.join(format!(".{WRITTEN}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .map_err(|e| format!("cannot start the SQL engine: {e}"))?;
    let written = runtime.block_on(async {
        // The catalog, read from the export on every core.
        let reading = super::tables::context(2, usize::MAX)?;
        let statements = super::tables::statements(dir)?;
        super::tables::register_export(&reading, dir).await?;
        let catalog = reading.table("catalog").await.map_err(|e| e.to_string())?;
        // In the served table's catalog order (marca, modelo, versao byte-wise, ano descending,
        // id): one brand's or model's rows are together, as filters and groups find them.
        let column = |name: &str| datafusion::logical_expr::col(datafusion::common::Column::new_unqualified(name));
        let order = vec![
            column("marca").sort(true, false),
            column("modelo").sort(true, false),
            column("versao").sort(true, false),
            column("ano").sort(false, false),
            column("id").sort(true, false),
        ];
        let catalog = catalog.sort(order).map_err(|e| e.to_string())?;
        let rows = write_file(&tmp.join("catalog.arrow"), catalog).await?;
        // The views over the written catalog, in one partition.
        let computing = super::tables::context(1, usize::MAX)?;
        let mapped = Rows::new(decode(&tmp.join("catalog.arrow"))?);
        computing.register_table("catalog", Arc::new(table(&mapped, None, None, 1)?)).map_err(|e| e.to_string())?;
        super::tables::create_views(&computing, &statements).await?;
        let mut layouts = std::collections::BTreeMap::new();
        for name in tables.iter().skip(1) {
            let view = computing.table(name.as_str()).await.map_err(|e| format!("no view {name}: {e}"))?;
            let plan = view.clone().into_optimized_plan().map_err(|e| e.to_string())?;
            // A column is the catalog's when the view passes the catalog's column of its name on
            // unchanged, through projections only.
            let passed = passed_on(&plan).unwrap_or_default();
            let columns: Vec<String> = view.schema().fields().iter().map(|f| f.name().clone()).collect();
            let (shared, own): (Vec<_>, Vec<_>) = columns
                .iter()
                .enumerate()
                .partition(|&(i, name)| passed.get(i).cloned().flatten().as_ref() == Some(name));
            let own: Vec<&str> = own.iter().map(|(_, n)| n.as_str()).collect();
            let file = tmp.join(format!("{name}.arrow"));
            let n = if own.is_empty() {
                // Every column is the catalog's: an empty file (the worker reads the catalog's).
                let out = std::fs::File::create(&file).map_err(|e| e.to_string())?;
                let mut writer = datafusion::arrow::ipc::writer::FileWriter::try_new(out, &Schema::empty())
                    .map_err(|e| e.to_string())?;
                writer.finish().map_err(|e| e.to_string())?;
                rows
            } else {
                write_file(&file, view.select_columns(&own).map_err(|e| e.to_string())?).await?
            };
            if !shared.is_empty() && n != rows {
                return Err(format!("the view {name} has {n} rows, the catalog {rows}"));
            }
            layouts
                .insert(name.clone(), Layout { shared: shared.into_iter().map(|(_, n)| n.clone()).collect(), columns });
        }
        let text = serde_json::to_vec(&layouts).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join(LAYOUT), text).map_err(|e| format!("cannot write the tables' layout: {e}"))
    });
    let renamed = written.and_then(|()| std::fs::rename(&tmp, &target).map_err(|e| e.to_string()));
    if renamed.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    renamed
}
