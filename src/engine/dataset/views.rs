//! The derived views: Polars SQL read from the `queries/` folder and run over the loaded catalog.
//!
//! Every `*.sql` file in the folder runs in file-name order, one statement per `;`. Each
//! statement is normally `CREATE TABLE <view> AS SELECT ...`; the table `catalog` holds the
//! validated input, and the service serves the table named [`FINAL_VIEW`]. Placeholders such as
//! `{{eco_score.peso_energia}}` are replaced by the formula constants of `parametros.toml` in the
//! same folder (see `formula`), and `{{km_ano}}` and `{{preco_*}}` by the server's cost
//! configuration, before the SQL runs.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use polars::prelude::*;
use polars::sql::SQLContext;
use sha2::{Digest, Sha256};

use super::assemble::assembled_as_made;
use super::formula::Parametros;
use super::schema::{COLUMNS, ID};

/// The view whose rows the service serves; also the `source` of every eco score.
pub const FINAL_VIEW: &str = "vw_eco_score";

/// Columns the final view must add to the catalog, with the dtype the engine reads.
pub const DERIVED_COLUMNS: &[&str] = &[
    "eficiencia_media_referencia",
    "consumo_referencia",
    "co2_referencia_g_km",
    "autonomia_km",
    "custo_anual_estimado",
    "eco_score",
    "eco_faixa",
];

/// Server-side inputs of the annual cost estimate (API-CONTRACT §2).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CostConfig {
    pub km_ano: f64,
    pub preco_gasolina: f64,
    pub preco_etanol: f64,
    pub preco_diesel: f64,
    pub preco_gnv: f64,
    pub preco_kwh: f64,
}

impl Default for CostConfig {
    fn default() -> Self {
        CostConfig {
            km_ano: 12_000.0,
            preco_gasolina: 6.20,
            preco_etanol: 4.10,
            preco_diesel: 6.00,
            preco_gnv: 4.80,
            preco_kwh: 0.85,
        }
    }
}

impl CostConfig {
    fn placeholders(&self) -> [(&'static str, f64); 6] {
        [
            ("{{km_ano}}", self.km_ano),
            ("{{preco_gasolina}}", self.preco_gasolina),
            ("{{preco_etanol}}", self.preco_etanol),
            ("{{preco_diesel}}", self.preco_diesel),
            ("{{preco_gnv}}", self.preco_gnv),
            ("{{preco_kwh}}", self.preco_kwh),
        ]
    }
}

/// The SQL files of the views, read once per snapshot so an edited formula takes effect on the
/// next reload.
#[derive(Debug, Clone)]
pub struct Views {
    pub statements: Vec<(PathBuf, String)>,
    /// SHA-256 of everything the views contribute to an answer: each file's name and text and
    /// the cost configuration. Part of the dataset version (see `load::version_of`).
    pub digest: [u8; 32],
    /// The cost configuration the statements were written with.
    pub cost: CostConfig,
    /// Each file's text without comments, before the cost placeholders are replaced: the same
    /// views with another cost configuration (see [`Views::with_cost`]).
    templates: Vec<(PathBuf, String)>,
    /// Each file's name and text as read: what the state folder keeps to serve the same views
    /// after a restart (see `state`).
    pub sources: Vec<(String, String)>,
    /// The formula constants of `parametros.toml`, checked.
    pub params: Parametros,
}

impl Views {
    /// Reads every `*.sql` file of `dir`, in file-name order.
    pub fn read(dir: &Path, cost: &CostConfig) -> Result<Views> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read the queries folder {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "sql"))
            .collect();
        files.sort();
        if files.is_empty() {
            bail!("the queries folder {} has no .sql file", dir.display());
        }
        let mut sources = Vec::with_capacity(files.len() + 1);
        let parameters = dir.join(super::formula::FILE);
        let text = std::fs::read_to_string(&parameters)
            .with_context(|| format!("cannot read the formula parameters {}", parameters.display()))?;
        sources.push((parameters, super::formula::FILE.to_string(), text));
        for file in files {
            let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            sources.push((file, name, text));
        }
        Views::compile_sources(sources, cost)
    }

    /// The views of files already read (name and text: the parameters file, then the SQL files
    /// in run order), e.g. as the state folder kept them: the same digest as [`Views::read`] of a
    /// folder holding those files.
    pub fn from_sources(sources: &[(String, String)], cost: &CostConfig) -> Result<Views> {
        let sources = sources.iter().map(|(name, text)| (PathBuf::from(name), name.clone(), text.clone())).collect();
        Views::compile_sources(sources, cost)
    }

    fn compile_sources(files: Vec<(PathBuf, String, String)>, cost: &CostConfig) -> Result<Views> {
        let mut templates = Vec::new();
        let mut kept = Vec::with_capacity(files.len());
        let mut hasher = Sha256::new();
        hasher.update(format!("{cost:?}").as_bytes());
        let mut params = None;
        for (_, name, text) in &files {
            for part in [name.as_bytes(), b"\0", text.as_bytes(), b"\0"] {
                hasher.update(part);
            }
            if name == super::formula::FILE {
                params = Some(Parametros::parse(text).map_err(anyhow::Error::msg)?);
            }
        }
        let Some(params) = params else { bail!("no {} among the views' files", super::formula::FILE) };
        let placeholders = params.placeholders();
        for (file, name, text) in files {
            kept.push((name.clone(), text.clone()));
            if name == super::formula::FILE {
                continue;
            }
            let mut sql = strip_comments(&text);
            for (key, value) in &placeholders {
                sql = sql.replace(key.as_str(), value);
            }
            if let Some(unknown) = unknown_placeholder(&sql) {
                bail!(
                    "{name}: the placeholder {unknown} is neither a key of {} nor a cost input",
                    super::formula::FILE
                );
            }
            templates.push((file, sql));
        }
        if templates.is_empty() {
            bail!("the views have no .sql file");
        }
        let statements = compile(&templates, cost);
        Ok(Views { statements, digest: hasher.finalize().into(), cost: cost.clone(), params, templates, sources: kept })
    }

    /// The same views with another cost configuration (a driving profile of one request): only
    /// the cost placeholders differ, so the cost formula stays the one in the SQL files. The
    /// digest is the original one; these views never build a snapshot.
    pub fn with_cost(&self, cost: &CostConfig) -> Views {
        Views {
            statements: compile(&self.templates, cost),
            digest: self.digest,
            cost: cost.clone(),
            templates: self.templates.clone(),
            sources: self.sources.clone(),
            params: self.params,
        }
    }

    /// Runs the views over `catalog` and returns the collected final view.
    pub fn apply(&self, catalog: LazyFrame) -> Result<DataFrame> {
        let (view, has_id) = self.plan(catalog)?;
        collected(view.select(served(has_id, true)))
    }

    /// [`Views::apply`] over a collected catalog, on every core: when the views compute each
    /// row from that row alone (only elementwise expressions over the catalog, as shipped), the
    /// derived columns are computed by parts of the rows side by side and put together, and the
    /// catalog's own columns are taken from the whole (as the views leave them). Views that are
    /// not row by row (an aggregate, a window, a sort, a join, a filter) run over the whole
    /// catalog at once. Either way, the frame [`Views::apply`] gives.
    pub fn apply_frame(&self, catalog: &DataFrame) -> Result<DataFrame> {
        let parts = (PARTS_PER_THREAD * rayon::current_num_threads()).max(catalog.height().div_ceil(PART_ROWS));
        if catalog.height() < PARALLEL_MIN_ROWS || parts < 2 {
            return self.apply(catalog.clone().lazy());
        }
        let (view, has_id) = self.plan(catalog.clone().lazy())?;
        let derived: Vec<Expr> = DERIVED_COLUMNS.iter().map(|c| col(*c)).collect();
        if !row_by_row(view.clone().select(derived.clone())) {
            tracing::debug!("the views are not row by row: computed over the whole catalog");
            return collected(view.select(served(has_id, true)));
        }
        tracing::debug!(parts, "the views computed by parts of the rows");
        let rows = catalog.height();
        let bounds: Vec<(i64, usize)> = (0..parts)
            .map(|k| (rows * k / parts, rows * (k + 1) / parts))
            .filter(|(start, end)| end > start)
            .map(|(start, end)| (start as i64, end - start))
            .collect();
        let part = |&(start, len): &(i64, usize)| -> Result<DataFrame> {
            let (view, _) = self.plan(catalog.slice(start, len).lazy())?;
            collected(view.select(derived.clone()))
        };
        // On Polars' own pool, where each part's plan runs its expressions: a part waits for no
        // other pool, and rayon's global pool stays free for the key orders computed meanwhile.
        let (own, derived) = polars_core::runtime::RAYON.install(|| {
            rayon::join(|| collected(view.clone().select(served(has_id, false))), || by_parts(&bounds, rows, part))
        });
        let (mut df, derived) = (own?, derived?);
        let Some(derived) = derived else {
            // Not one row per catalog row after all (e.g. a view of constants only).
            return collected(view.select(served(has_id, true)));
        };
        df.hstack_mut(derived.columns())?;
        // One chunk per column but text (the derived ones are; a catalog column the views
        // rewrote may not be): copying a text column's parts into one is one core's work (the
        // eco-score band at 10M rows: a third of a second with the other core idle), and the
        // table build encodes the band from its parts.
        let height = df.height();
        let columns =
            df.apply_columns_par(|c| if c.n_chunks() > 1 && !c.dtype().is_string() { c.rechunk() } else { c.clone() });
        drop(df);
        Ok(DataFrame::new(height, columns)?)
    }

    /// The final view over `catalog`, checked to have the derived columns, and whether it has
    /// the id column.
    fn plan(&self, catalog: LazyFrame) -> Result<(LazyFrame, bool)> {
        let mut ctx = SQLContext::new().with_function_registry(super::publish::sql_functions());
        ctx.register("catalog", catalog);
        for (file, stmt) in &self.statements {
            let _ = anyhow::Context::with_context(ctx.execute(stmt), || format!("error in {}", file.display()))?;
        }
        if !ctx.get_tables().iter().any(|t| t == FINAL_VIEW) {
            bail!("no query creates the table {FINAL_VIEW}");
        }
        let mut view = ctx.execute(&format!("SELECT * FROM {FINAL_VIEW}"))?;
        let schema = anyhow::Context::context(view.collect_schema(), "error in the views")?;
        for name in DERIVED_COLUMNS {
            if !schema.contains(name) {
                bail!("the view {FINAL_VIEW} has no column {name}");
            }
        }
        Ok((view, schema.contains(ID)))
    }
}

/// The served columns of the final view: the id (when it has one), the catalog's columns and,
/// with `derived`, the derived ones. Only those are computed: the views' intermediate columns are
/// pruned from the plan, never materialised.
fn served(has_id: bool, derived: bool) -> Vec<Expr> {
    let id = has_id.then_some(ID);
    let derived = DERIVED_COLUMNS.iter().copied().filter(|_| derived);
    id.into_iter().chain(COLUMNS.iter().map(|c| c.name)).chain(derived).map(col).collect()
}

fn collected(view: LazyFrame) -> Result<DataFrame> {
    anyhow::Context::context(view.collect(), "error while computing the views")
}

/// The derived columns of the parts `bounds` (first row, rows) of a catalog of `rows` rows,
/// computed by `part` a core's worth of parts at a time, each part copied into one buffer per
/// column while the next ones are computed, and freed (see [`assembled_as_made`]): the parts'
/// columns reuse the memory of the parts before them, where keeping every part until the end
/// faulted in a second copy of the derived columns (half a gigabyte at 10M rows). Text stays in
/// its parts' chunks (the table build encodes the band from them). `None` when a part does not
/// have one row per catalog row.
fn by_parts(
    bounds: &[(i64, usize)],
    rows: usize,
    part: impl Fn(&(i64, usize)) -> Result<DataFrame> + Sync,
) -> Result<Option<DataFrame>> {
    use rayon::prelude::*;
    let groups = bounds.chunks(rayon::current_num_threads().max(1));
    // Each group's parts with the rows each should have.
    let compute = |group: &[(i64, usize)]| -> Result<(Vec<usize>, Vec<DataFrame>)> {
        let pieces = group.par_iter().map(&part).collect::<Result<Vec<DataFrame>>>()?;
        Ok((group.iter().map(|(_, len)| *len).collect(), pieces))
    };
    let one_row_each = |(lens, pieces): (Vec<usize>, Vec<DataFrame>)| -> Result<Vec<DataFrame>> {
        match pieces.iter().zip(&lens).all(|(piece, len)| piece.height() == *len) {
            true => Ok(pieces),
            false => Err(NotOneRowPerRow.into()),
        }
    };
    match assembled_as_made(groups, rows, compute, one_row_each) {
        Ok(Some(all)) => Ok(Some(all.finish_text_by_batches()?)),
        Ok(None) => bail!("no part of the views was computed"),
        Err(e) if e.is::<NotOneRowPerRow>() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Why [`by_parts`] stopped: a part of the views without one row per catalog row.
#[derive(Debug, thiserror::Error)]
#[error("a part of the views does not have one row per catalog row")]
struct NotOneRowPerRow;

/// Catalogs below this many rows run the views in one piece (splitting costs more than it buys).
const PARALLEL_MIN_ROWS: usize = 65_536;

/// The most rows of a part when the views run by parts: each part's intermediate columns are
/// freed before the next part starts, which reuses their memory instead of faulting fresh pages.
const PART_ROWS: usize = 512 * 1024;

/// Parts of the rows per core when the views run by parts: more parts than cores, so a core that
/// finishes early takes another.
const PARTS_PER_THREAD: usize = 2;

/// Whether a plan computes each output row from the same input row alone: after optimisation,
/// only projections whose every expression is elementwise, down to the in-memory catalog.
/// Such a plan over parts of the rows, put together, equals the plan over all of them.
fn row_by_row(plan: LazyFrame) -> bool {
    use polars_plan::plans::{is_elementwise_rec, IR};
    let Ok(ir) = plan.to_alp_optimized() else { return false };
    let elementwise = |exprs: &[polars_plan::prelude::expr_ir::ExprIR]| {
        exprs.iter().all(|e| is_elementwise_rec(e.node(), &ir.expr_arena))
    };
    let mut node = ir.lp_top;
    loop {
        match ir.lp_arena.get(node) {
            IR::Select { input, expr, .. } if elementwise(expr) => node = *input,
            IR::HStack { input, exprs, .. } if elementwise(exprs) => node = *input,
            IR::SimpleProjection { input, .. } => node = *input,
            IR::DataFrameScan { .. } => return true,
            _ => return false,
        }
    }
}

/// The statements of the views: the cost placeholders replaced, split at `;`.
fn compile(templates: &[(PathBuf, String)], cost: &CostConfig) -> Vec<(PathBuf, String)> {
    let mut statements = Vec::new();
    for (file, template) in templates {
        let mut sql = template.clone();
        for (key, value) in cost.placeholders() {
            sql = sql.replace(key, &sql_number(value));
        }
        for stmt in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            statements.push((file.clone(), stmt.to_string()));
        }
    }
    statements
}

/// A number as a Polars SQL float literal: Rust's shortest round-trip form, always with a
/// decimal point (Polars SQL reads a literal without one as an integer, so `5e-324` must be
/// written `5.0e-324`).
fn sql_number(value: f64) -> String {
    let text = format!("{value:?}");
    if text.contains('.') {
        return text;
    }
    match text.find('e') {
        Some(i) => format!("{}.0{}", &text[..i], &text[i..]),
        None => format!("{text}.0"),
    }
}

/// A `{{name}}` left in a view's text once the formula constants are in: unknown unless it is
/// one of the cost inputs (replaced per cost configuration).
fn unknown_placeholder(sql: &str) -> Option<String> {
    let cost: Vec<&str> = CostConfig::default().placeholders().iter().map(|(k, _)| *k).collect();
    let mut rest = sql;
    while let Some(start) = rest.find("{{") {
        let end = rest[start..].find("}}").map(|e| start + e + 2).unwrap_or(rest.len());
        let name = &rest[start..end];
        if !cost.contains(&name) {
            return Some(name.to_string());
        }
        rest = &rest[end..];
    }
    None
}

fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("--") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_float_literals() {
        assert_eq!(sql_number(12_000.0), "12000.0");
        assert_eq!(sql_number(0.85), "0.85");
        assert_eq!(sql_number(5e-324), "5.0e-324");
        assert_eq!(sql_number(1.5e-7), "1.5e-7");
        assert_eq!(sql_number(1e21), "1.0e21");
        for v in [5e-324, 1.5e-7, 1e21, 6.2] {
            assert_eq!(sql_number(v).parse::<f64>().unwrap(), v);
        }
    }

    #[test]
    fn comments_are_stripped() {
        assert_eq!(strip_comments("a -- x; y\nb"), "a \nb");
    }

    #[test]
    fn placeholders_are_replaced_with_numbers() {
        let dir = std::env::temp_dir().join(format!("eco-views-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("01.sql"), "CREATE TABLE vw_eco_score AS SELECT {{km_ano}} AS k FROM catalog;")
            .unwrap();
        std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/queries/parametros.toml"), dir.join("parametros.toml"))
            .unwrap();
        let v = Views::read(&dir, &CostConfig::default()).unwrap();
        assert_eq!(v.statements.len(), 1);
        assert!(v.statements[0].1.contains("12000.0 AS k"));
        let pricier = CostConfig { preco_gasolina: 6.3, ..CostConfig::default() };
        assert_ne!(Views::read(&dir, &pricier).unwrap().digest, v.digest, "the cost configuration is in the digest");
        let farther = v.with_cost(&CostConfig { km_ano: 20_000.0, ..CostConfig::default() });
        assert!(farther.statements[0].1.contains("20000.0 AS k"));
        assert_eq!(farther.cost.km_ano, 20_000.0);
        assert_eq!(Views::read(&dir, &CostConfig::default()).unwrap().digest, v.digest);
        let err = v.apply(df!("a" => [1]).unwrap().lazy()).unwrap_err();
        assert!(err.to_string().contains("has no column"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn catalog(rows: usize, seed: u64) -> DataFrame {
        let raw = crate::sample::generate_catalog(rows, seed).unwrap();
        super::super::load::prepare(raw).unwrap().0
    }

    fn shipped() -> Views {
        Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap()
    }

    /// The shipped views are row by row: computed by parts of the rows, they give the frame
    /// computed over the whole catalog, column for column.
    #[test]
    fn views_by_parts_equal_the_whole() {
        let catalog = catalog(PARALLEL_MIN_ROWS * 2 + 123, 5);
        let views = shipped();
        let (view, _) = views.plan(catalog.clone().lazy()).unwrap();
        let derived: Vec<Expr> = DERIVED_COLUMNS.iter().map(|c| col(*c)).collect();
        assert!(row_by_row(view.select(derived)));
        let whole = views.apply(catalog.clone().lazy()).unwrap();
        let by_parts = views.apply_frame(&catalog).unwrap();
        assert_eq!(by_parts.get_column_names(), whole.get_column_names());
        assert!(by_parts.equals_missing(&whole));
        let scores = by_parts.column("eco_score").unwrap();
        assert!(scores.null_count() < scores.len() / 2, "the parts computed scores");
    }

    /// The shipped pollutants index (API-CONTRACT §2): NMHC, CO and NOx against
    /// `[limites_poluentes]` when the three are present; otherwise NMOG+NOx and CO against
    /// `[limites_poluentes_l7]` when both are; otherwise null (and left out of the score).
    #[test]
    fn the_pollutants_index_falls_back_to_the_proconve_l7_limits() {
        let views = shipped();
        let l = views.params.limites_poluentes;
        let l7 = views.params.limites_poluentes_l7;
        assert_eq!((l7.nmog_nox_g_km, l7.co_g_km), (0.08, 1.0));
        // (nmhc, co, nox, nmog_nox) per row.
        type Pollutants = (Option<f64>, Option<f64>, Option<f64>, Option<f64>);
        let inputs: [Pollutants; 7] = [
            (Some(0.02), Some(0.5), Some(0.03), None),
            (None, Some(0.5), None, Some(0.04)),
            (None, None, None, Some(0.04)),
            (Some(0.02), Some(0.5), Some(0.03), Some(0.2)),
            (Some(0.01), Some(2.0), None, Some(0.2)),
            (None, None, None, None),
            (Some(0.01), Some(0.3), None, Some(0.0123)),
        ];
        let clamp = |x: f64| x.clamp(0.0, 100.0);
        let expected: Vec<Option<f64>> = inputs
            .iter()
            .map(|&(nmhc, co, nox, nmog)| match (nmhc, co, nox, nmog) {
                (Some(a), Some(b), Some(c), _) => {
                    Some(clamp(100.0 * (1.0 - (a / l.nmhc_g_km + b / l.co_g_km + c / l.nox_g_km) / 3.0)))
                }
                (_, Some(b), _, Some(m)) => Some(clamp(100.0 * (1.0 - (m / l7.nmog_nox_g_km + b / l7.co_g_km) / 2.0))),
                _ => None,
            })
            .collect();
        assert_eq!(expected[1], Some(50.0));
        assert_eq!((expected[2], expected[4], expected[5]), (None, Some(0.0), None));

        let n = inputs.len();
        let mut df = catalog(n, 9);
        let column = |name: &str, values: Vec<Option<f64>>| Column::new(name.into(), values);
        df.with_column(column("nmhc_g_km", inputs.iter().map(|r| r.0).collect())).unwrap();
        df.with_column(column("co_g_km", inputs.iter().map(|r| r.1).collect())).unwrap();
        df.with_column(column("nox_g_km", inputs.iter().map(|r| r.2).collect())).unwrap();
        df.with_column(column("nmog_nox_g_km", inputs.iter().map(|r| r.3).collect())).unwrap();
        df.with_column(column("consumo_energetico_mj_km", vec![Some(1.5); n])).unwrap();
        df.with_column(column("co2_fossil_g_km", vec![Some(100.0); n])).unwrap();
        let (view, _) = views.plan(df.lazy()).unwrap();
        let out = view.select([col("indice_poluentes"), col("eco_score_raw"), col("nmog_nox_g_km")]).collect().unwrap();
        let got = |name: &str| -> Vec<Option<f64>> { out.column(name).unwrap().f64().unwrap().iter().collect() };
        let (indices, scores) = (got("indice_poluentes"), got("eco_score_raw"));
        let (energia, co2) = (100.0 * 1.5 / 2.7, 60.0);
        for k in 0..n {
            match (indices[k], expected[k]) {
                (Some(a), Some(b)) => assert!((a - b).abs() < 1e-9, "row {k}: {a} vs {b}"),
                (a, b) => assert_eq!(a, b, "row {k}"),
            }
            let score = match expected[k] {
                Some(p) => (0.45 * energia + 0.35 * co2 + 0.20 * p) / 1.0,
                None => (0.45 * energia + 0.35 * co2) / 0.80,
            };
            assert!((scores[k].unwrap() - score).abs() < 1e-9, "row {k}: {:?} vs {score}", scores[k]);
        }
        assert_eq!(got("nmog_nox_g_km"), inputs.iter().map(|r| r.3).collect::<Vec<_>>(), "the input passes through");
    }

    /// Parts assembled in their order, numbers in one chunk and text in its parts' chunks; a
    /// part without one row per catalog row gives `None`, and a failing part its error.
    #[test]
    fn parts_are_assembled_in_order_or_refused() {
        let bounds: Vec<(i64, usize)> = (0..5).map(|k| (k * 10, 10usize)).collect();
        let frame = |start: i64, len: usize| {
            let values: Vec<f64> = (start..start + len as i64).map(|i| i as f64).collect();
            let band: Vec<String> = values.iter().map(|v| format!("band {v}")).collect();
            df!("score" => values, "band" => band).unwrap()
        };
        let all = by_parts(&bounds, 50, |&(start, len)| Ok(frame(start, len))).unwrap().unwrap();
        assert!(all.equals_missing(&frame(0, 50)));
        assert_eq!(all.column("score").unwrap().n_chunks(), 1);
        assert_eq!(all.column("band").unwrap().n_chunks(), 5, "text stays in its parts");
        let short = by_parts(&bounds, 50, |&(start, len)| Ok(frame(start, len - (start == 30) as usize)));
        assert!(short.unwrap().is_none(), "a part short of its rows");
        let failed = by_parts(&bounds, 50, |&(start, len)| match start {
            40 => bail!("part at 40 failed"),
            _ => Ok(frame(start, len)),
        });
        assert!(failed.unwrap_err().to_string().contains("part at 40 failed"));
    }

    /// Views with a statement that is not row by row (a window over each brand's rows) are
    /// computed over the whole catalog: a part's brand maximum is not the catalog's.
    #[test]
    fn views_that_read_other_rows_run_over_the_whole_catalog() {
        let dir = std::env::temp_dir().join(format!("eco-views-window-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/queries/parametros.toml"), dir.join("parametros.toml"))
            .unwrap();
        let derived = DERIVED_COLUMNS
            .iter()
            .map(|c| match *c {
                "eco_score" => {
                    "co2_fossil_g_km - MAX(co2_fossil_g_km) OVER (PARTITION BY marca) AS eco_score".to_string()
                }
                "eco_faixa" => "'x' AS eco_faixa".to_string(),
                other => format!("1.0 AS {other}"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        std::fs::write(dir.join("01.sql"), format!("CREATE TABLE vw_eco_score AS SELECT *, {derived} FROM catalog;"))
            .unwrap();
        let views = Views::read(&dir, &CostConfig::default()).unwrap();
        let catalog = catalog(PARALLEL_MIN_ROWS * 2, 6);
        let (view, _) = views.plan(catalog.clone().lazy()).unwrap();
        assert!(!row_by_row(view.select([col("eco_score")])));
        let whole = views.apply(catalog.clone().lazy()).unwrap();
        assert!(views.apply_frame(&catalog).unwrap().equals_missing(&whole));
        // Over the first half alone, some brand's maximum differs: parts would have been wrong.
        let half = views.apply(catalog.slice(0, catalog.height() / 2).lazy()).unwrap();
        let first = whole.column("eco_score").unwrap().as_materialized_series().slice(0, half.height());
        assert!(!half.column("eco_score").unwrap().as_materialized_series().equals_missing(&first));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
