//! The analyst report (`eco-insights report`): one self-contained HTML page in Portuguese about a
//! catalog — charts as inline SVG drawn with plotters, tables, the fleet averages and the
//! numbers themselves as embedded JSON — readable offline and printable.
//!
//! The numbers come from the engine functions the API calls, converted by the API's wire types
//! (`src/http/wire/`), so on the same file (and the server's default cost configuration) they
//! are the API's answers, byte for byte. `charts` draws the SVG, `html` writes the page.

pub mod charts;
pub mod html;
pub mod numbers;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use polars::prelude::PolarsResult;
use serde_json::{Map, Value};

use crate::engine::dataset::load::{self, LoadError};
use crate::engine::dataset::snapshot::Snapshot;
use crate::engine::dataset::views::{CostConfig, Views};
use crate::engine::filters::Filters;
use crate::engine::insights;
use crate::engine::rankings::{self, GroupBy, Metric, RankingQuery};
use crate::engine::table::Vehicle;
use crate::http::wire::insights::{EmissionsSummary, InsightsSummary};
use crate::http::wire::rankings::{Co2RankingItem, FixedRanking, FixedRankingItem, RankingGroups};

/// The id of the `<script type="application/json">` element holding the numbers.
pub const DATA_ELEMENT_ID: &str = "report-data";

/// Everything the page shows, in the API's published shapes where the API publishes it.
#[derive(Debug, Clone)]
pub struct ReportData {
    /// The dataset version, exactly as the API reports it (`X-Dataset-Version`, `/readyz`).
    pub version: String,
    /// Number of vehicles in the catalog.
    pub rows: usize,
    /// File name of the catalog (no directory).
    pub source: String,
    /// `GET /insights/summary` without filters.
    pub summary: InsightsSummary,
    /// `GET /insights/emissions` without filters.
    pub emissions: EmissionsSummary,
    /// `GET /rankings/most-economical`.
    pub most_economical: FixedRanking<FixedRankingItem>,
    /// `GET /rankings/lowest-co2`.
    pub lowest_co2: FixedRanking<Co2RankingItem>,
    /// The vehicles of the lowest-CO2 ranking with their values (g/km), best first: the API's
    /// item carries only the id, the table shows the names.
    pub lowest_co2_vehicles: Vec<(Vehicle, f64)>,
    /// `mediaGrupo` of `GET /rankings/by-year` (metric eco_score) per model year, by year.
    pub eco_score_by_year: Vec<(i32, f64)>,
}

impl ReportData {
    /// Gathers the report's numbers from a loaded snapshot, with the API's own functions.
    pub fn gather(snapshot: &Snapshot) -> PolarsResult<ReportData> {
        let table = &snapshot.table;
        let none = Filters::default();
        let summary = InsightsSummary::from(&*insights::summary(table, &none)?);
        let emissions = EmissionsSummary::from(&*insights::emissions(table, &none)?);
        let fixed = rankings::fixed(table)?;
        // mediaGrupo does not depend on `top`: one vehicle per group is enough.
        let query = RankingQuery::new(Filters::default(), Some(Metric::EcoScore), None, 1);
        let groups = RankingGroups::of(&rankings::grouped(table, &query, GroupBy::Ano)?);
        let mut eco_score_by_year: Vec<(i32, f64)> =
            groups.groups.iter().filter_map(|g| Some((g.grupo.parse().ok()?, g.media_grupo))).collect();
        eco_score_by_year.sort_by_key(|(year, _)| *year);
        Ok(ReportData {
            version: snapshot.info.version.clone(),
            rows: snapshot.info.rows,
            source: snapshot.info.source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            summary,
            emissions,
            most_economical: FixedRanking::<FixedRankingItem>::from(&fixed.most_economical),
            lowest_co2: FixedRanking::<Co2RankingItem>::from(&fixed.lowest_co2),
            lowest_co2_vehicles: fixed.lowest_co2.entries.clone(),
            eco_score_by_year,
        })
    }

    /// The numbers embedded in the page: `distribuicaoEcoScore` and `mediasGerais` (as
    /// `/insights/summary`), `mediaPorCategoria` and `distribuicaoEmissoes` (`mediaPorCategoria`
    /// and `distribuicao` of `/insights/emissions`), `maisEconomicos` and `menorCo2` (the items
    /// of `/rankings/most-economical` and `/rankings/lowest-co2`), `ecoScorePorAno` (model year →
    /// `mediaGrupo` of `/rankings/by-year`), plus `versaoDados` and `totalVeiculos`.
    pub fn embedded(&self) -> serde_json::Result<Value> {
        let mut m = Map::new();
        m.insert("versaoDados".into(), Value::from(self.version.clone()));
        m.insert("totalVeiculos".into(), Value::from(self.rows));
        m.insert("distribuicaoEcoScore".into(), serde_json::to_value(&self.summary.distribuicao_eco_score)?);
        m.insert("mediasGerais".into(), serde_json::to_value(&self.summary.medias_gerais)?);
        m.insert("mediaPorCategoria".into(), serde_json::to_value(&self.emissions.media_por_categoria)?);
        m.insert("distribuicaoEmissoes".into(), serde_json::to_value(&self.emissions.distribuicao)?);
        m.insert("maisEconomicos".into(), serde_json::to_value(&self.most_economical.items)?);
        m.insert("menorCo2".into(), serde_json::to_value(&self.lowest_co2.items)?);
        let by_year: Map<String, Value> =
            self.eco_score_by_year.iter().map(|(year, mean)| (year.to_string(), Value::from(*mean))).collect();
        m.insert("ecoScorePorAno".into(), Value::Object(by_year));
        Ok(Value::Object(m))
    }
}

/// JSON text safe inside a `<script>` element: `<`, `>` and `&` (only ever inside strings in
/// JSON) become `\u003c`, `\u003e` and `\u0026`, so no value can close the element or open a
/// comment; `JSON.parse` gives the same values back.
pub fn script_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    out
}

/// Why a report was not written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The input file is missing, unreadable or invalid: the message is the one
    /// `eco-insights validate` prints for it.
    #[error("{0}")]
    Input(LoadError),
    /// Anything else (the queries folder, the views, the output file).
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl ReportError {
    /// The process exit status: 2 for a bad input file, 1 otherwise.
    pub fn exit_status(&self) -> u8 {
        match self {
            ReportError::Input(_) => 2,
            ReportError::Other(_) => 1,
        }
    }
}

/// What `run` wrote.
#[derive(Debug, Clone)]
pub struct Written {
    pub out: PathBuf,
    pub rows: usize,
    pub version: String,
    pub elapsed: Duration,
}

/// Loads `data` with the views of `queries` and the server's default cost configuration, and
/// writes the report to `out` atomically (a temporary file in the same folder, then a rename).
pub fn run(data: &Path, queries: &Path, out: &Path, limits: load::InputLimits) -> Result<Written, ReportError> {
    let started = Instant::now();
    let cost = CostConfig::default();
    let views = Views::read(queries, &cost)?;
    // As the server's cold start: freed pages are reused during the load, returned at its end.
    let snapshot =
        crate::process::memory::during_load(|| load::load_file_limited(data, &views, limits)).map_err(|e| match e {
            LoadError::Views { .. } => ReportError::Other(anyhow::Error::new(e)),
            e => ReportError::Input(e),
        })?;
    let drawn = crate::engine::contain::contained(|| -> anyhow::Result<_> {
        let report = ReportData::gather(&snapshot).context("cannot compute the report's numbers")?;
        let page = render(&report, &cost, Utc::now())?;
        Ok((report, page))
    });
    let (report, page) =
        drawn.map_err(|panic| anyhow::anyhow!("internal error while drawing the report: {panic}"))??;
    write_atomically(out, page.as_bytes())?;
    Ok(Written { out: out.to_path_buf(), rows: report.rows, version: report.version, elapsed: started.elapsed() })
}

/// The whole page.
pub fn render(report: &ReportData, cost: &CostConfig, generated_at: DateTime<Utc>) -> anyhow::Result<String> {
    let charts = charts::Charts::draw(report)?;
    let json = serde_json::to_string(&report.embedded()?)?;
    Ok(html::page(report, &charts, cost, generated_at, &script_safe(&json)))
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so a
/// reader sees the old file or the new one, never a part.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let name = path.file_name().with_context(|| format!("{} does not name a file", path.display()))?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create the folder {}", dir.display()))?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_safe_json_cannot_close_the_element() {
        let value = serde_json::json!({"marca": "</script><script>alert(1)</script> & <!-- x -->"});
        let safe = script_safe(&serde_json::to_string(&value).unwrap());
        assert!(!safe.contains('<') && !safe.contains('>') && !safe.contains('&'), "{safe}");
        assert_eq!(serde_json::from_str::<Value>(&safe).unwrap(), value);
    }

    #[test]
    fn atomic_write_replaces_and_reports_failures() {
        let dir = std::env::temp_dir().join(format!("eco-report-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = dir.join("sub").join("r.html");
        write_atomically(&out, b"one").unwrap();
        write_atomically(&out, b"two").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(out.parent().unwrap()).unwrap().count(), 1, "no temporary file left");
        // A folder where the file should be: the rename fails and the temporary file goes.
        let blocked = dir.join("blocked");
        std::fs::create_dir_all(blocked.join("x")).unwrap();
        assert!(write_atomically(&blocked, b"x").is_err());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
