//! The common filters (API-CONTRACT §3) as Polars expressions, plus the ordering and paging
//! helpers every listing shares.

use polars::prelude::*;

use crate::engine::dataset::schema::ID_RANK;
use crate::engine::dataset::table::RowFilter;
use crate::engine::dataset::text_index::{fold, FOLDED};

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
        Some(TextFilter { param, column, value: value.to_string(), folded: fold(value) })
    }
}

/// The range filters (API-CONTRACT §7): the parameter's stem (`eco_score` for `eco_score_min`
/// and `eco_score_max`) and the published column it bounds.
pub const RANGES: [(&str, &str); 7] = [
    ("eco_score", "eco_score"),
    ("consumo", "consumo_referencia"),
    ("co2", "co2_referencia_g_km"),
    ("autonomia", "autonomia_km"),
    ("eficiencia", "eficiencia_media_referencia"),
    ("autonomia_eletrica", "autonomia_eletrica_km"),
    ("custo", "custo_anual_estimado"),
];

/// Inclusive bounds on one published metric; a vehicle whose value is null fails any bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangeFilter {
    /// The parameters' stem, e.g. `co2`.
    pub stem: &'static str,
    /// The published column, e.g. `co2_referencia_g_km`.
    pub column: &'static str,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// The validated common filters of one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    pub text: Vec<TextFilter>,
    /// Exact year (exclusive with the bounds).
    pub ano: Option<i32>,
    pub ano_min: Option<i32>,
    pub ano_max: Option<i32>,
    /// Range filters, in the order of [`RANGES`].
    pub ranges: Vec<RangeFilter>,
}

impl Filters {
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
            && self.ano.is_none()
            && self.ano_min.is_none()
            && self.ano_max.is_none()
            && self.ranges.is_empty()
    }

    /// The rows these filters select, as the table matches them.
    pub fn rows(&self) -> RowFilter {
        RowFilter {
            text: self.text.iter().map(|f| (f.column, f.folded.clone())).collect(),
            ano: self.ano_bounds(),
            ranges: self
                .ranges
                .iter()
                .map(|r| (r.column, r.min.unwrap_or(f64::NEG_INFINITY), r.max.unwrap_or(f64::INFINITY)))
                .collect(),
        }
    }

    /// The question these filters ask, normalised (the folded needles in order, the year
    /// bounds, the ranges): filters that select the same rows the same way have the same key.
    pub fn key(&self) -> String {
        let rows = self.rows();
        let mut text = rows.text;
        text.sort();
        format!("{text:?}|{:?}|{:?}", rows.ano, rows.ranges)
    }

    /// The inclusive year bounds (an exact year is both), or `None` without a year filter.
    pub fn ano_bounds(&self) -> Option<(i32, i32)> {
        let (min, max) = match self.ano {
            Some(a) => (Some(a), Some(a)),
            None => (self.ano_min, self.ano_max),
        };
        if min.is_none() && max.is_none() {
            return None;
        }
        Some((min.unwrap_or(i32::MIN), max.unwrap_or(i32::MAX)))
    }
}

pub use crate::engine::dataset::publish::{published, published_mean};

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

/// One page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// How many items the whole list has.
    pub total: usize,
}

impl<T> Page<T> {
    /// Its approximate size in bytes (for the answers kept per table).
    pub fn weight(&self) -> usize {
        self.items.len() * std::mem::size_of::<T>() + 64
    }
}

/// The question of a page of a list: the filters, the window and the sort keys.
pub fn page_key(op: &str, filters: &Filters, window: Window, keys: &[super::order::SortKey]) -> String {
    format!("{op}|{}|{window:?}|{keys:?}", filters.key())
}

/// Sorts `lf` by `keys` (column, descending), nulls last, with the id ascending (its rank,
/// [`ID_RANK`]) as the final tie-breaker so every list has a total order.
pub fn sorted(lf: LazyFrame, keys: &[(&str, bool)]) -> LazyFrame {
    let mut exprs: Vec<Expr> = keys.iter().map(|(c, _)| col(*c)).collect();
    let mut desc: Vec<bool> = keys.iter().map(|(_, d)| *d).collect();
    exprs.push(col(ID_RANK));
    desc.push(false);
    lf.sort_by_exprs(exprs, SortMultipleOptions::default().with_order_descending_multi(desc).with_nulls_last(true))
}

/// Which part of a list one request answers: a page by number, or `size` items from a position
/// (a cursor's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Page(PageRequest),
    From { position: usize, size: u32 },
}

impl Window {
    /// The positions it covers in a list of `total` items (empty past the end).
    pub fn range(&self, total: usize) -> std::ops::Range<usize> {
        match *self {
            Window::Page(p) => p.range(total),
            Window::From { position, size } => {
                let start = position.min(total);
                start..start.saturating_add(size as usize).min(total)
            }
        }
    }
}

impl PageRequest {
    /// The range of positions of this page in a list of `total` items (empty past the end).
    pub fn range(&self, total: usize) -> std::ops::Range<usize> {
        let start = (self.page - 1).saturating_mul(self.page_size as u64).min(total as u64) as usize;
        start..(start + self.page_size as usize).min(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_text_filter_is_none() {
        assert!(TextFilter::new("cor", "azul").is_none());
        let f = TextFilter::new("combustivel", "Elétrico").unwrap();
        assert_eq!((f.column, f.folded.as_str()), ("combustivel_tipo", "eletrico"));
    }

    #[test]
    fn keys_ignore_case_accents_and_order() {
        let a = Filters {
            text: vec![TextFilter::new("marca", "Citroën").unwrap(), TextFilter::new("categoria", "SUV").unwrap()],
            ..Default::default()
        };
        let b = Filters {
            text: vec![TextFilter::new("categoria", "suv").unwrap(), TextFilter::new("marca", "CITROEN").unwrap()],
            ..Default::default()
        };
        assert_eq!(a.key(), b.key());
        let c = Filters { ano_min: Some(2020), ..b.clone() };
        assert_ne!(a.key(), c.key());
    }

    #[test]
    fn exact_year_overrides_bounds() {
        let f = Filters { ano: Some(2020), ano_min: Some(1990), ..Default::default() };
        assert_eq!(f.ano_bounds(), Some((2020, 2020)));
        let f = Filters { ano_min: Some(2020), ..Default::default() };
        assert_eq!(f.ano_bounds(), Some((2020, i32::MAX)));
        assert_eq!(Filters::default().ano_bounds(), None);
    }

    #[test]
    fn pagination_past_the_end_is_empty() {
        let p = PageRequest { page: 3, page_size: 2 };
        assert_eq!(p.range(3), 3..3);
        assert_eq!(PageRequest { page: 2, page_size: 2 }.range(3), 2..3);
        let last = PageRequest { page: u64::MAX, page_size: 100 };
        assert_eq!(last.range(1), 1..1);
    }
}
