//! Facets: how many of the filtered vehicles hold each value of the catalog's grouping columns
//! (categoria, combustivel_tipo, tipo_propulsao, transmissao_tipo, marca, ano, eco_faixa). The
//! text columns are counted by dictionary code (one counter per distinct value), never by text.

use std::cmp::Ordering;

use polars::prelude::*;

use super::filters::Filters;
use crate::engine::dataset::table::Table;
use crate::engine::dataset::text_index::TextValues;

/// How many vehicles hold one value (`None`: the value is null).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count<T> {
    pub valor: Option<T>,
    pub total: u64,
}

/// The counts of every faceted column, each list by total descending, then value ascending
/// (byte-wise for text), the null value after the others on equal totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facets {
    pub categoria: Vec<Count<String>>,
    pub combustivel: Vec<Count<String>>,
    pub propulsao: Vec<Count<String>>,
    pub transmissao: Vec<Count<String>>,
    pub marca: Vec<Count<String>>,
    pub ano: Vec<Count<i32>>,
    pub faixa: Vec<Count<String>>,
}

impl Facets {
    /// Its approximate size in bytes (for the answers kept per table).
    pub fn weight(&self) -> usize {
        let texts = [&self.categoria, &self.combustivel, &self.propulsao, &self.transmissao, &self.marca, &self.faixa];
        texts.iter().map(|c| c.len() * 64).sum::<usize>() + self.ano.len() * 32 + 128
    }
}

fn ordered<T: Ord>(mut counts: Vec<Count<T>>) -> Vec<Count<T>> {
    counts.retain(|c| c.total > 0);
    counts.sort_by(|a, b| {
        b.total.cmp(&a.total).then_with(|| match (&a.valor, &b.valor) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        })
    });
    counts
}

/// The counts of one column of the text index over `rows` (every row when `None`).
fn text_counts(table: &Table, column: &str, rows: Option<&[u32]>) -> PolarsResult<Vec<Count<String>>> {
    let index = table.index.column(column).ok_or_else(|| polars_err!(ComputeError: "no {column} index"))?;
    let values = index.values();
    let mut totals = vec![0u64; values.len()];
    let mut nulls = 0u64;
    match rows {
        // Every row: the index lists each value's rows already.
        None => {
            for (code, total) in totals.iter_mut().enumerate() {
                *total = index.rows(code as u32).len() as u64;
            }
            nulls = table.len() as u64 - totals.iter().sum::<u64>();
        }
        Some(rows) => {
            for &r in rows {
                match index.code_at(r) {
                    Some(code) => totals[code as usize] += 1,
                    None => nulls += 1,
                }
            }
        }
    }
    let mut counts: Vec<Count<String>> =
        values.iter().zip(totals).map(|(v, total)| Count { valor: Some(v.clone()), total }).collect();
    counts.push(Count { valor: None, total: nulls });
    Ok(ordered(counts))
}

/// The counts of the model years over `rows`.
fn year_counts(table: &Table, rows: Option<&[u32]>) -> Vec<Count<i32>> {
    let mut totals: std::collections::BTreeMap<i32, u64> = std::collections::BTreeMap::new();
    let mut add = |r: u32| *totals.entry(table.ano_at(r)).or_default() += 1;
    match rows {
        None => (0..table.len() as u32).for_each(&mut add),
        Some(rows) => rows.iter().copied().for_each(&mut add),
    }
    ordered(totals.into_iter().map(|(ano, total)| Count { valor: Some(ano), total }).collect())
}

/// The counts of the eco-score bands over `rows` (a vehicle without a score counts as null).
fn band_counts(table: &Table, rows: Option<&[u32]>) -> PolarsResult<Vec<Count<String>>> {
    let bands = TextValues::of(table.frame().column("eco_faixa")?)?;
    let mut totals: PlHashMap<Option<&str>, u64> = PlHashMap::new();
    let mut add = |r: u32| *totals.entry(bands.get(r as usize)).or_default() += 1;
    match rows {
        None => (0..table.len() as u32).for_each(&mut add),
        Some(rows) => rows.iter().copied().for_each(&mut add),
    }
    Ok(ordered(totals.into_iter().map(|(v, total)| Count { valor: v.map(str::to_string), total }).collect()))
}

fn compute(table: &Table, rows: Option<&[u32]>) -> PolarsResult<Facets> {
    Ok(Facets {
        categoria: text_counts(table, "categoria", rows)?,
        combustivel: text_counts(table, "combustivel_tipo", rows)?,
        propulsao: text_counts(table, "tipo_propulsao", rows)?,
        transmissao: text_counts(table, "transmissao_tipo", rows)?,
        marca: text_counts(table, "marca", rows)?,
        ano: year_counts(table, rows),
        faixa: band_counts(table, rows)?,
    })
}

/// The facets of the vehicles passing `filters` (without filters, computed once per table).
pub fn facets(table: &Table, filters: &Filters) -> PolarsResult<std::sync::Arc<Facets>> {
    if filters.is_empty() {
        return table.memo("facets", || compute(table, None));
    }
    let key = format!("facets|{}", filters.key());
    table.answers.get_or_compute(&key, Facets::weight, || {
        let rows = table.selection(&filters.rows()).unwrap_or_default();
        compute(table, Some(&rows))
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::engine::filters::TextFilter;
    use crate::engine::load::load_bytes;
    use crate::engine::views::{CostConfig, Views};
    use crate::sample::generate_catalog;

    #[test]
    fn counts_match_a_plain_count_of_the_vehicles() {
        let mut df = generate_catalog(500, 3).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        let s = load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap();
        let all = s.vehicles();
        for filters in [
            Filters::default(),
            Filters { text: vec![TextFilter::new("combustivel", "flex").unwrap()], ..Default::default() },
            Filters { ano_min: Some(2022), ..Default::default() },
        ] {
            let f = facets(&s, &filters).unwrap();
            let kept: Vec<_> = all
                .iter()
                .filter(|v| {
                    filters
                        .text
                        .iter()
                        .all(|t| crate::engine::text_index::fold(&v.combustivel_tipo).contains(&t.folded))
                        && filters.ano_min.is_none_or(|m| v.ano >= m)
                })
                .collect();
            let total: u64 = f.marca.iter().map(|c| c.total).sum();
            assert_eq!(total, kept.len() as u64);
            for c in &f.categoria {
                let n = kept.iter().filter(|v| Some(&v.categoria) == c.valor.as_ref()).count();
                assert_eq!(c.total, n as u64, "{:?}", c.valor);
            }
            for c in &f.faixa {
                let n = kept.iter().filter(|v| v.eco_faixa == c.valor).count();
                assert_eq!(c.total, n as u64, "{:?}", c.valor);
            }
            for w in f.ano.windows(2) {
                assert!(w[0].total > w[1].total || (w[0].total == w[1].total && w[0].valor < w[1].valor));
            }
        }
    }
}
