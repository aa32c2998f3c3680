//! The catalog listing: filters, the contract's order, one page.

use std::sync::Arc;

use polars::prelude::PolarsResult;

use super::filters::{page_key, Filters, Page, Window};
use super::order::{ordered, SortKey};
use crate::engine::dataset::table::Table;

/// One page of the filtered catalog: the rows of the page. Without sort keys, in catalog order
/// (marca, modelo, versao byte-wise, ano descending, id): the table stores its rows in that
/// order and a selection keeps it, so a page is a slice with no per-request sort. With keys,
/// the selection in their order (see `order`).
/// Pages of filtered or sorted lists are kept per table (see `answers`).
pub fn list(table: &Table, filters: &Filters, window: Window, keys: &[SortKey]) -> PolarsResult<Arc<Page<u32>>> {
    if filters.is_empty() && keys.is_empty() {
        // A slice of the table's order: nothing to keep.
        return page(table, filters, window, keys).map(Arc::new);
    }
    let key = page_key("catalog/vehicles", filters, window, keys);
    table.answers.get_or_compute(&key, Page::weight, || page(table, filters, window, keys))
}

fn page(table: &Table, filters: &Filters, window: Window, keys: &[SortKey]) -> PolarsResult<Page<u32>> {
    let selection = table.selection(&filters.rows());
    if !keys.is_empty() {
        let all = ordered(table, selection.as_deref(), keys)?;
        let range = window.range(all.len());
        return Ok(Page { items: all[range].to_vec(), total: all.len() });
    }
    let (rows, total): (Vec<u32>, usize) = match selection {
        None => (window.range(table.len()).map(|r| r as u32).collect(), table.len()),
        Some(rows) => (rows[window.range(rows.len())].to_vec(), rows.len()),
    };
    Ok(Page { items: rows, total })
}
