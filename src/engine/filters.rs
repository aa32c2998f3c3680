//! The common filters (API-CONTRACT §3) as Polars expressions, plus the ordering and paging
//! helpers every listing shares.

use polars::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};

use super::load::{folded_name, FOLDED};

/// Lower case, canonical decomposition, combining marks removed: "Elétrico" → "eletrico".
pub fn fold(e: Expr) -> Expr {
    e.str().normalize(UnicodeForm::NFD).str().replace_all(lit(r"\p{M}"), lit(""), false).str().to_lowercase()
}

/// Folds one filter value with exactly the expression used on the columns.
pub fn fold_value(value: &str) -> String {
    df!("v" => [value])
        .and_then(|df| df.lazy().select([fold(col("v"))]).collect())
        .ok()
        .and_then(|df| df.column("v").ok()?.str().ok()?.get(0).map(str::to_string))
        .unwrap_or_else(|| value.to_lowercase())
}

/// A case- and accent-insensitive literal substring filter on one catalog column.
#[derive(Debug, Clone, PartialEq)]
pub struct TextFilter {
    /// The query parameter, e.g. `combustivel`.
    pub param: &'static str,
    /// The catalog column it reads, e.g. `combustivel_tipo`.
    pub column: &'static str,
    /// The value as received (echoed in `filters_applied`).
    pub value: String,
    /// The folded value that is matched.
    pub folded: String,
}

impl TextFilter {
    /// A filter for a known parameter name (`None` for any other name).
    pub fn new(param: &str, value: &str) -> Option<TextFilter> {
        let (param, column) = FOLDED.iter().find(|(p, _)| *p == param)?;
        Some(TextFilter { param, column, value: value.to_string(), folded: fold_value(value) })
    }
}

/// The validated common filters of one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    pub text: Vec<TextFilter>,
    /// Exact year (exclusive with the bounds).
    pub ano: Option<i32>,
    pub ano_min: Option<i32>,
    pub ano_max: Option<i32>,
}

impl Filters {
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.ano.is_none() && self.ano_min.is_none() && self.ano_max.is_none()
    }

    /// The conjunction of every filter, or `None` when there is none.
    pub fn predicate(&self) -> Option<Expr> {
        let mut parts: Vec<Expr> = self
            .text
            .iter()
            .map(|f| col(folded_name(f.column)).str().contains_literal(lit(f.folded.clone())).fill_null(lit(false)))
            .collect();
        let (min, max) = match self.ano {
            Some(a) => (Some(a), Some(a)),
            None => (self.ano_min, self.ano_max),
        };
        if let Some(m) = min {
            parts.push(col("ano").gt_eq(lit(m)));
        }
        if let Some(m) = max {
            parts.push(col("ano").lt_eq(lit(m)));
        }
        parts.into_iter().reduce(|a, b| a.and(b))
    }

    pub fn apply(&self, lf: LazyFrame) -> LazyFrame {
        match self.predicate() {
            Some(p) => lf.filter(p),
            None => lf,
        }
    }

    /// The filters as received, with typed values, for `meta.filters_applied`.
    pub fn applied(&self) -> Map<String, Value> {
        let mut m = Map::new();
        for f in &self.text {
            m.insert(f.param.to_string(), Value::String(f.value.clone()));
        }
        for (k, v) in [("ano", self.ano), ("ano_min", self.ano_min), ("ano_max", self.ano_max)] {
            if let Some(v) = v {
                m.insert(k.to_string(), Value::from(v));
            }
        }
        m
    }
}

pub use super::publish::{published, published_mean};

/// A validated page request (page ≥ 1, 1 ≤ page_size ≤ 100).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub page: u64,
    pub page_size: u32,
}

impl Default for PageRequest {
    fn default() -> Self {
        PageRequest { page: 1, page_size: 20 }
    }
}

/// `meta.pagination`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Pagination {
    pub page: u64,
    pub page_size: u32,
    pub total: u64,
    pub total_pages: u64,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub pagination: Pagination,
}

/// Sorts `lf` by `keys` (column, descending), nulls last, with `id` ascending as the final
/// tie-breaker so every list has a total order.
pub fn sorted(lf: LazyFrame, keys: &[(&str, bool)]) -> LazyFrame {
    let mut exprs: Vec<Expr> = keys.iter().map(|(c, _)| col(*c)).collect();
    let mut desc: Vec<bool> = keys.iter().map(|(_, d)| *d).collect();
    exprs.push(col("id"));
    desc.push(false);
    lf.sort_by_exprs(exprs, SortMultipleOptions::default().with_order_descending_multi(desc).with_nulls_last(true))
}

/// Counts the rows of `lf` and collects the requested page of it (already sorted).
pub fn paginate(lf: LazyFrame, page: PageRequest) -> PolarsResult<(DataFrame, Pagination)> {
    let total = lf.clone().select([len().alias("n")]).collect()?;
    let total = total.column("n")?.cast(&DataType::UInt64)?.u64()?.get(0).unwrap_or(0);
    let size = page.page_size as u64;
    let offset = (page.page - 1).saturating_mul(size);
    let df = if offset >= total {
        lf.slice(0, 0).collect()?
    } else {
        lf.slice(offset as i64, page.page_size as IdxSize).collect()?
    };
    let pagination =
        Pagination { page: page.page, page_size: page.page_size, total, total_pages: total.div_ceil(size) };
    Ok((df, pagination))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_drops_case_and_accents() {
        assert_eq!(fold_value("Elétrico"), "eletrico");
        assert_eq!(fold_value("HÍBRIDO Plug-in"), "hibrido plug-in");
        assert_eq!(fold_value("Citroën"), "citroen");
        assert_eq!(fold_value("100%_.*"), "100%_.*");
    }

    #[test]
    fn unknown_text_filter_is_none() {
        assert!(TextFilter::new("cor", "azul").is_none());
        assert_eq!(TextFilter::new("combustivel", "x").unwrap().column, "combustivel_tipo");
    }

    #[test]
    fn exact_year_overrides_bounds_in_predicate() {
        let f = Filters { ano: Some(2020), ..Default::default() };
        let df = df!("ano" => [2019, 2020, 2021]).unwrap();
        let out = f.apply(df.lazy()).collect().unwrap();
        assert_eq!(out.height(), 1);
        let f = Filters { ano_min: Some(2020), ..Default::default() };
        let df = df!("ano" => [2019, 2020, 2021]).unwrap();
        assert_eq!(f.apply(df.lazy()).collect().unwrap().height(), 2);
    }

    #[test]
    fn applied_echoes_typed_values() {
        let f = Filters {
            text: vec![TextFilter::new("marca", "Fiat").unwrap()],
            ano_min: Some(2015),
            ..Default::default()
        };
        assert_eq!(serde_json::to_string(&f.applied()).unwrap(), r#"{"marca":"Fiat","ano_min":2015}"#);
    }

    #[test]
    fn pagination_past_the_end_is_empty() {
        let df = df!("id" => ["a", "b", "c"]).unwrap();
        let (page, p) = paginate(df.lazy(), PageRequest { page: 3, page_size: 2 }).unwrap();
        assert_eq!(page.height(), 0);
        assert_eq!((p.total, p.total_pages), (3, 2));
        let df = df!("id" => ["a", "b", "c"]).unwrap();
        let (page, _) = paginate(df.lazy(), PageRequest { page: 2, page_size: 2 }).unwrap();
        assert_eq!(page.height(), 1);
        let df = df!("id" => ["a"]).unwrap();
        let (_, p) = paginate(df.lazy(), PageRequest { page: u64::MAX, page_size: 100 }).unwrap();
        assert_eq!(p.total_pages, 1);
    }
}
