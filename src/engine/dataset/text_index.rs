//! The text filters' dictionaries: for each filterable column, its distinct values folded once
//! per snapshot (lower case, canonical decomposition, combining marks removed), a code per row
//! and the rows of each code. A filter value is matched against the dictionary, never against
//! the rows: it becomes a set of codes, and a row passes when its code is in the set.

use polars::prelude::*;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// The text filters of the API and the catalog column each one reads.
pub const FOLDED: &[(&str, &str)] = &[
    ("marca", "marca"),
    ("modelo", "modelo"),
    ("categoria", "categoria"),
    ("combustivel", "combustivel_tipo"),
    ("propulsao", "tipo_propulsao"),
    ("transmissao", "transmissao_tipo"),
];

/// Lower case without accents: canonical decomposition, combining marks removed, lower case
/// ("Elétrico" → "eletrico", "Citroën" → "citroen"). The one folding of filter values, filtered
/// columns and the views' `combustivel_fold`.
pub fn fold(value: &str) -> String {
    value.nfd().filter(|c| !is_combining_mark(*c)).collect::<String>().to_lowercase()
}

/// A text column as stored: plain, or dictionary-encoded (codes and their mapping).
#[derive(Debug)]
pub enum TextValues {
    Plain(StringChunked),
    Dictionary(UInt32Chunked, Arc<CategoricalMapping>),
}

impl TextValues {
    pub fn of(column: &Column) -> PolarsResult<TextValues> {
        Ok(match column.dtype() {
            DataType::Categorical(_, _) => {
                let cat = column.cat32()?;
                TextValues::Dictionary(cat.physical().clone(), cat.get_mapping().clone())
            }
            _ => TextValues::Plain(column.str()?.clone()),
        })
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        match self {
            TextValues::Plain(ca) => ca.get(i),
            TextValues::Dictionary(codes, mapping) => codes.get(i).and_then(|c| mapping.cat_to_str(c)),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            TextValues::Plain(ca) => ca.len(),
            TextValues::Dictionary(codes, _) => codes.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The code of a null value.
const NULL_CODE: u32 = u32::MAX;

/// The dictionary of one filterable column.
#[derive(Debug)]
pub struct TextColumn {
    pub param: &'static str,
    pub column: &'static str,
    /// Distinct values, in order of first appearance (catalog order).
    values: Vec<String>,
    /// The folded form of each value.
    folded: Vec<String>,
    /// The code of each row ([`NULL_CODE`] for a null).
    codes: Vec<u32>,
    /// The rows of each code, ascending (catalog order).
    rows: Vec<Vec<u32>>,
}

impl TextColumn {
    /// The dictionary of one column; its codes numbered in order of first appearance, each
    /// code's rows listed in row order (the catalog order of the table's rows).
    fn build(param: &'static str, column: &'static str, values: &TextValues) -> TextColumn {
        let mut distinct: Vec<&str> = Vec::new();
        let mut codes = vec![NULL_CODE; values.len()];
        let mut rows: Vec<Vec<u32>> = Vec::new();
        fn code_of<'v>(v: &'v str, distinct: &mut Vec<&'v str>, rows: &mut Vec<Vec<u32>>) -> u32 {
            distinct.push(v);
            rows.push(Vec::new());
            (distinct.len() - 1) as u32
        }
        match values {
            // Already a dictionary: its codes map to ours through a table.
            TextValues::Dictionary(physical, mapping) => {
                let mut ours: Vec<u32> = Vec::new();
                for (row, p) in physical.iter().enumerate() {
                    let Some(p) = p else { continue };
                    if ours.len() <= p as usize {
                        ours.resize(p as usize + 1, NULL_CODE);
                    }
                    if ours[p as usize] == NULL_CODE {
                        ours[p as usize] = code_of(mapping.cat_to_str(p).unwrap_or(""), &mut distinct, &mut rows);
                    }
                    let code = ours[p as usize];
                    rows[code as usize].push(row as u32);
                    codes[row] = code;
                }
            }
            TextValues::Plain(text) => {
                let mut lookup: PlHashMap<&str, u32> = PlHashMap::new();
                for (row, v) in text.iter().enumerate() {
                    let Some(v) = v else { continue };
                    let code = match lookup.get(v) {
                        Some(c) => *c,
                        None => {
                            let c = code_of(v, &mut distinct, &mut rows);
                            lookup.insert(v, c);
                            c
                        }
                    };
                    rows[code as usize].push(row as u32);
                    codes[row] = code;
                }
            }
        }
        let folded = distinct.iter().map(|v| fold(v)).collect();
        let values = distinct.into_iter().map(str::to_string).collect();
        TextColumn { param, column, values, folded, codes, rows }
    }

    /// The code of an exact value.
    pub fn code_of(&self, value: &str) -> Option<u32> {
        self.values.iter().position(|v| v == value).map(|c| c as u32)
    }

    /// The code of a row (`None` for a null).
    pub fn code_at(&self, row: u32) -> Option<u32> {
        Some(self.codes[row as usize]).filter(|c| *c != NULL_CODE)
    }

    /// The rows holding a code, in catalog order.
    pub fn rows(&self, code: u32) -> &[u32] {
        &self.rows[code as usize]
    }

    /// The distinct values.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Which codes contain the folded needle, literally.
    fn matching(&self, folded_needle: &str) -> Vec<bool> {
        self.folded.iter().map(|v| v.contains(folded_needle)).collect()
    }
}

/// Every filterable column's dictionary.
#[derive(Debug)]
pub struct TextIndex {
    columns: Vec<TextColumn>,
}

impl TextIndex {
    /// Builds the dictionaries of a frame's filterable columns, a column per task on every core
    /// of the pool. The frame's rows are in catalog order, so each code's rows are listed in it.
    pub fn build(df: &DataFrame) -> PolarsResult<TextIndex> {
        let inputs: Vec<(&'static str, &'static str, TextValues)> = FOLDED
            .iter()
            .map(|(param, column)| Ok((*param, *column, TextValues::of(df.column(column)?)?)))
            .collect::<PolarsResult<_>>()?;
        use rayon::prelude::*;
        let columns = inputs.par_iter().map(|(p, c, v)| TextColumn::build(p, c, v)).collect();
        Ok(TextIndex { columns })
    }

    /// Approximate memory held by the dictionaries.
    pub fn estimated_bytes(&self) -> usize {
        self.columns
            .iter()
            .map(|c| {
                c.codes.len() * 4
                    + c.rows.iter().map(|r| r.capacity() * 4 + 24).sum::<usize>()
                    + c.values.iter().chain(&c.folded).map(|v| v.capacity() + 24).sum::<usize>()
            })
            .sum()
    }

    /// The dictionary of a column.
    pub fn column(&self, column: &str) -> Option<&TextColumn> {
        self.columns.iter().find(|c| c.column == column)
    }
}

/// The common filters compiled against one table: per text filter the set of matching codes,
/// and the year bounds.
pub struct Matcher<'a> {
    text: Vec<(&'a TextColumn, Vec<bool>)>,
    ano: Option<(i32, i32)>,
    anos: &'a [i32],
    /// (published values by row, NaN for null; inclusive bounds).
    ranges: Vec<(&'a [f64], f64, f64)>,
}

impl<'a> Matcher<'a> {
    /// `text`: (column, folded needle) pairs; `ano`: inclusive year bounds; `ranges`: a
    /// column's published values by row (NaN for null) and inclusive bounds.
    pub fn new(
        index: &'a TextIndex,
        anos: &'a [i32],
        text: &[(&str, &str)],
        ano: Option<(i32, i32)>,
        ranges: Vec<(&'a [f64], f64, f64)>,
    ) -> Matcher<'a> {
        let text =
            text.iter().filter_map(|(column, needle)| index.column(column).map(|c| (c, c.matching(needle)))).collect();
        Matcher { text, ano, anos, ranges }
    }

    /// Whether a row passes every filter.
    pub fn matches(&self, row: u32) -> bool {
        if let Some((min, max)) = self.ano {
            let a = self.anos[row as usize];
            if a < min || a > max {
                return false;
            }
        }
        // NaN (null) fails both comparisons; a row past the values (unreadable column) fails.
        let in_range =
            |(values, lo, hi): &(&[f64], f64, f64)| values.get(row as usize).is_some_and(|v| *v >= *lo && *v <= *hi);
        self.ranges.iter().all(in_range)
            && self.text.iter().all(|(c, allowed)| c.code_at(row).is_some_and(|code| allowed[code as usize]))
    }

    /// The rows (ascending: the table's rows are in catalog order) of the most selective text
    /// filter, a superset of the matching rows; `None` without a text filter.
    pub fn candidates(&self) -> Option<Vec<u32>> {
        let size = |(c, allowed): &(&TextColumn, Vec<bool>)| -> usize {
            allowed.iter().enumerate().filter(|(_, a)| **a).map(|(code, _)| c.rows[code].len()).sum()
        };
        let (c, allowed) = self.text.iter().min_by_key(|f| size(f))?;
        let codes: Vec<usize> = allowed.iter().enumerate().filter(|(_, a)| **a).map(|(code, _)| code).collect();
        let mut rows: Vec<u32> = Vec::with_capacity(codes.iter().map(|code| c.rows[*code].len()).sum());
        for code in &codes {
            rows.extend_from_slice(&c.rows[*code]);
        }
        if codes.len() > 1 {
            rows.sort_unstable();
        }
        Some(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_drops_case_and_accents() {
        assert_eq!(fold("Elétrico"), "eletrico");
        assert_eq!(fold("HÍBRIDO Plug-in"), "hibrido plug-in");
        assert_eq!(fold("Citroën"), "citroen");
        assert_eq!(fold("100%_.*"), "100%_.*");
    }

    #[test]
    fn folding_matches_the_polars_expression() {
        let values = ["Elétrico", "AUTOMÁTICA", "Citroën", "São Paulo", "Ñandú", "x", "Ångström"];
        let df = df!("v" => values).unwrap();
        let out = df
            .lazy()
            .select([col("v")
                .str()
                .normalize(UnicodeForm::NFD)
                .str()
                .replace_all(lit(r"\p{M}"), lit(""), false)
                .str()
                .to_lowercase()])
            .collect()
            .unwrap();
        let polars: Vec<&str> = out.column("v").unwrap().str().unwrap().iter().map(|v| v.unwrap()).collect();
        let ours: Vec<String> = values.iter().map(|v| fold(v)).collect();
        assert_eq!(polars, ours);
    }

    #[test]
    fn filters_become_code_sets() {
        let df = df!(
            "marca" => ["Fiat", "FIAT", "Citroën", "Fiat"],
            "modelo" => ["Uno", "Argo", "C3", "Mobi"],
            "categoria" => ["A", "B", "A", "B"],
            "combustivel_tipo" => ["Flex", "Elétrico", "Flex", "Flex"],
            "tipo_propulsao" => ["C", "E", "C", "C"],
            "transmissao_tipo" => [Some("Manual"), None, Some("CVT"), Some("Manual")],
        )
        .unwrap();
        let index = TextIndex::build(&df).unwrap();
        let marca = index.column("marca").unwrap();
        assert_eq!(marca.values(), ["Fiat", "FIAT", "Citroën"]);
        assert_eq!(marca.rows(0), [0, 3]);
        assert_eq!(index.column("transmissao_tipo").unwrap().code_at(1), None);
        let anos = [2020, 2021, 2022, 2023];
        let rows = |text: &[(&str, &str)], ano: Option<(i32, i32)>| {
            let folded: Vec<(&str, String)> = text.iter().map(|(c, v)| (*c, fold(v))).collect();
            let pairs: Vec<(&str, &str)> = folded.iter().map(|(c, v)| (*c, v.as_str())).collect();
            let m = Matcher::new(&index, &anos, &pairs, ano, vec![]);
            (0..4u32).filter(|r| m.matches(*r)).collect::<Vec<_>>()
        };
        assert_eq!(rows(&[("marca", "fiat")], None), [0, 1, 3]);
        assert_eq!(rows(&[("marca", "fiat"), ("categoria", "b")], None), [1, 3]);
        assert_eq!(rows(&[("combustivel_tipo", "ELETRICO")], None), [1]);
        assert_eq!(rows(&[("transmissao_tipo", "a")], None), [0, 3], "null never matches");
        assert_eq!(rows(&[("marca", "citroen")], Some((2022, 2022))), [2]);
        assert_eq!(rows(&[("marca", "%")], None), Vec::<u32>::new());
        let m = Matcher::new(&index, &anos, &[("marca", "fiat"), ("modelo", "o")], None, vec![]);
        assert_eq!(m.candidates().unwrap(), [0, 1, 3], "the most selective filter gives the candidates");
        assert!(Matcher::new(&index, &anos, &[], Some((2020, 2020)), vec![]).candidates().is_none());
    }
}
