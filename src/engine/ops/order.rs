//! Lists in an order the client chooses (API-CONTRACT §7, `sort`): one or more keys over the
//! table's columns, each ascending or descending, nulls last in either direction, the id
//! ascending as the final tie-breaker, text compared byte-wise. The answer is the whole ordered
//! list of row numbers, so any page of it (by number or by cursor) is a slice.

use polars::prelude::*;

use crate::engine::dataset::schema::{ID_RANK, ROW};
use crate::engine::dataset::table::{Table, ORDERED};

/// What a sort key compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyColumn {
    /// The vehicle id (its rank: ids compare as their text does).
    Id,
    /// A text column (dictionary-encoded in the table; compared as text, byte-wise).
    Text(&'static str),
    /// A numeric or boolean column.
    Value(&'static str),
}

/// One key of a sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub column: KeyColumn,
    pub descending: bool,
}

/// `rows` (every row when `None`) in the order of `keys`.
pub fn ordered(table: &Table, rows: Option<&[u32]>, keys: &[SortKey]) -> PolarsResult<Vec<u32>> {
    if let [SortKey { column: KeyColumn::Value(column), descending }] = keys {
        if ORDERED.contains(column) {
            return by_precomputed_order(table, rows, column, *descending);
        }
    }
    let mut names: Vec<&str> = Vec::new();
    let mut exprs: Vec<Expr> = Vec::new();
    let mut desc: Vec<bool> = Vec::new();
    for key in keys {
        let expr = match key.column {
            KeyColumn::Id => col(ID_RANK),
            KeyColumn::Text(c) => {
                names.push(c);
                col(c).cast(DataType::String)
            }
            KeyColumn::Value(c) => {
                names.push(c);
                col(c)
            }
        };
        exprs.push(expr);
        desc.push(key.descending);
    }
    exprs.push(col(ID_RANK));
    desc.push(false);
    let df = table
        .gather(rows, &names)?
        .sort_by_exprs(exprs, SortMultipleOptions::default().with_order_descending_multi(desc).with_nulls_last(true))
        .select([col(ROW)])
        .collect()?;
    let ca = df.column(ROW)?.u32()?;
    Ok(ca.into_no_null_iter().collect())
}

/// A single key on a column whose order the table keeps (computed once per snapshot): that
/// order restricted to `rows`, then the rows without a value in id order.
fn by_precomputed_order(table: &Table, rows: Option<&[u32]>, column: &str, descending: bool) -> PolarsResult<Vec<u32>> {
    let order = table.order(column, descending)?;
    let mut member = vec![rows.is_none(); table.len()];
    if let Some(rows) = rows {
        for &r in rows {
            member[r as usize] = true;
        }
    }
    let mut out: Vec<u32> = order.iter().copied().filter(|&r| member[r as usize]).collect();
    // The rows left are those without a value: nulls last, by id.
    for &r in order {
        member[r as usize] = false;
    }
    let mut nulls: Vec<u32> = (0..table.len() as u32).filter(|&r| member[r as usize]).collect();
    nulls.sort_unstable_by_key(|&r| table.id_at(r));
    out.extend(nulls);
    Ok(out)
}
