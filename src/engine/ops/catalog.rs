//! The catalog listing: filters, the contract's order, one page.

use super::filters::{Filters, Page, PageRequest};
use crate::engine::dataset::table::Table;

/// One page of the filtered catalog in catalog order (marca, modelo, versao byte-wise, ano
/// descending, id): the rows of the page. The table stores its rows in that order and a
/// selection keeps it, so a page is a slice: no per-request sort.
pub fn list(table: &Table, filters: &Filters, page: PageRequest) -> Page<u32> {
    let (rows, total): (Vec<u32>, usize) = match table.selection(&filters.rows()) {
        None => (page.range(table.len()).map(|r| r as u32).collect(), table.len()),
        Some(rows) => (rows[page.range(rows.len())].to_vec(), rows.len()),
    };
    Page { items: rows, total }
}
