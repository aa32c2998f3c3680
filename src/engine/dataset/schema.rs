//! The catalog input schema (what analysts drop in `data/`) and the checks an export must pass.

use std::fmt;

use polars::prelude::*;
use polars_arrow::array::Utf8ViewArray;
use uuid::Uuid;

use super::{bucket_sort, reorder};

/// Logical type of an input column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Integer,
    Float,
    Boolean,
}

impl Kind {
    fn describe(self) -> &'static str {
        match self {
            Kind::Text => "string",
            Kind::Integer => "integer",
            Kind::Float => "float",
            Kind::Boolean => "boolean",
        }
    }

    /// Whether a Parquet column of `dtype` can be read as this kind, the way analysts' tools
    /// write it: text plain or dictionary-encoded (pandas `category`, Polars Categorical/Enum);
    /// numbers of any integer or float width or Decimal. An integer column written as float or
    /// Decimal is accepted when every value is whole (checked per row, see [`check`]).
    fn accepts(self, dtype: &DataType) -> bool {
        match self {
            Kind::Text => dtype.is_string() || dtype.is_categorical() || dtype.is_enum(),
            Kind::Integer | Kind::Float => dtype.is_integer() || dtype.is_float() || dtype.is_decimal(),
            Kind::Boolean => matches!(dtype, DataType::Boolean),
        }
    }

    /// The dtype the engine works with after loading.
    pub fn canonical(self) -> DataType {
        match self {
            Kind::Text => DataType::String,
            Kind::Integer => DataType::Int32,
            Kind::Float => DataType::Float64,
            Kind::Boolean => DataType::Boolean,
        }
    }
}

/// One column of the input schema.
#[derive(Debug, Clone, Copy)]
pub struct ColumnSpec {
    pub name: &'static str,
    pub kind: Kind,
    pub nullable: bool,
    /// Whether a file may lack the column: it is then read as all null (see
    /// [`optional_col_spec`]). When present, it is checked like any other column.
    pub optional: bool,
}

const fn col_spec(name: &'static str, kind: Kind, nullable: bool) -> ColumnSpec {
    ColumnSpec { name, kind, nullable, optional: false }
}

/// A nullable column a file may lack (read as all null when absent): a column later exports
/// carry that earlier ones do not.
const fn optional_col_spec(name: &'static str, kind: Kind) -> ColumnSpec {
    ColumnSpec { name, kind, nullable: true, optional: true }
}

/// The optional id column; derived when absent.
pub const ID: &str = "id";
/// Served column holding each row's number (its index in the table, catalog order).
pub const ROW: &str = "row";
/// Served column holding the rank of each id (ascending): the integer every list's last
/// tie-breaker compares instead of the id text.
pub const ID_RANK: &str = "id_rank";
pub const ANO_MIN: i64 = 1900;
pub const ANO_MAX: i64 = 2100;

/// The text columns kept dictionary-encoded from the moment they are read (all but `versao`,
/// nearly one value per row, and `id`): a 4-byte code per row instead of a 16-byte string view.
/// The served table adds the eco-score band (`eco_faixa`).
pub const DICTIONARY_ENCODED: [&str; 10] = [
    "marca",
    "modelo",
    "categoria",
    "motor",
    "tipo_propulsao",
    "combustivel_tipo",
    "transmissao_tipo",
    "direcao_assistida_tipo",
    "classificacao_pbe_categoria",
    "classificacao_pbe_geral",
];

/// The namespace of [`dictionary_dtype`]'s categories.
const DICTIONARY_NAMESPACE: &str = "eco-insights";

/// A dictionary-encoded text type with a mapping of its own (freed with the data using it).
pub fn dictionary_dtype() -> DataType {
    DataType::from_categories(Categories::random(
        PlSmallStr::from_static(DICTIONARY_NAMESPACE),
        CategoricalPhysical::U32,
    ))
}

/// Whether a column's type is a [`dictionary_dtype`] (text encoded by this service, as a file is
/// read), which needs no cast.
pub fn is_dictionary_dtype(dtype: &DataType) -> bool {
    matches!(dtype, DataType::Categorical(cats, _) if cats.namespace() == DICTIONARY_NAMESPACE
        && cats.physical() == CategoricalPhysical::U32)
}

/// A code per row of a text column (`None` for a null), equal codes for equal strings, and the
/// distinct strings by code. Each chunk's rows are mapped by their 16-byte view first: equal
/// views hold equal strings (short strings are inline, long ones point at the same bytes, as a
/// Parquet dictionary's values do), so a string is hashed once per distinct view of a chunk
/// rather than once per row.
pub fn text_codes(text: &StringChunked) -> (Vec<Option<u32>>, Vec<&str>) {
    let mut codes: Vec<Option<u32>> = Vec::with_capacity(text.len());
    let mut coder = Coder::default();
    for arr in text.downcast_iter() {
        let mut by_view: PlHashMap<u128, u32> = PlHashMap::with_capacity(64);
        coder.by_view(arr, 0, arr.views(), &mut by_view, &mut codes);
    }
    (codes, coder.distinct)
}

/// The distinct strings of [`text_codes`] as they are found, with their codes.
#[derive(Default)]
struct Coder<'a> {
    distinct: Vec<&'a str>,
    by_text: PlHashMap<&'a str, u32>,
}

impl<'a> Coder<'a> {
    fn code(&mut self, value: &'a str) -> u32 {
        let distinct = &mut self.distinct;
        *self.by_text.entry(value).or_insert_with(|| {
            distinct.push(value);
            distinct.len() as u32 - 1
        })
    }

    /// Codes `views`, the rows of `arr` from `first` on, by their views first (a string hashed
    /// once per distinct view).
    #[inline(always)]
    fn by_view(
        &mut self,
        arr: &'a Utf8ViewArray,
        first: usize,
        views: &[polars_arrow::array::View],
        by_view: &mut PlHashMap<u128, u32>,
        codes: &mut Vec<Option<u32>>,
    ) {
        use polars_arrow::array::Array;
        for (k, view) in views.iter().enumerate() {
            let i = first + k;
            if !arr.is_valid(i) {
                codes.push(None);
                continue;
            }
            let code = *by_view.entry(view.as_u128()).or_insert_with(|| self.code(arr.value(i)));
            codes.push(Some(code));
        }
    }
}

/// A text column dictionary-encoded with a mapping of its own ([`dictionary_dtype`]), each
/// distinct string hashed once (see [`text_codes`]).
pub fn dictionary_encode(column: &Column) -> PolarsResult<Column> {
    dictionary_encode_as(column, dictionary_dtype())
}

/// [`dictionary_encode`] with a given [`dictionary_dtype`], so that the parts of one column
/// (a file's row groups, encoded as they are decoded) share one mapping.
pub fn dictionary_encode_as(column: &Column, dtype: DataType) -> PolarsResult<Column> {
    let DataType::Categorical(_, mapping) = &dtype else {
        polars_bail!(ComputeError: "the dictionary type is not categorical");
    };
    let (codes, distinct) = text_codes(column.str()?);
    let cats: Vec<u32> = distinct.iter().map(|v| mapping.insert_cat(v)).collect::<PolarsResult<_>>()?;
    Ok(categorical(physical(&codes, &cats).with_name(column.name().clone()), dtype))
}

/// [`dictionary_encode`] of a column in several chunks (a view computed by parts of the rows),
/// each chunk coded on a core of its own; one chunk of codes per chunk. The dictionary takes the
/// chunks' distinct values in the chunks' order: its codes are the ones one pass would give.
pub fn dictionary_encode_by_chunks(column: &Column) -> PolarsResult<Column> {
    use rayon::prelude::*;
    let dtype = dictionary_dtype();
    let DataType::Categorical(_, mapping) = &dtype else {
        polars_bail!(ComputeError: "the dictionary type is not categorical");
    };
    let text = column.str()?;
    let chunks: Vec<StringChunked> =
        text.downcast_iter().map(|arr| StringChunked::with_chunk(text.name().clone(), arr.clone())).collect();
    let found: Vec<(Vec<Option<u32>>, Vec<&str>)> = chunks.par_iter().map(text_codes).collect();
    let cats: Vec<Vec<u32>> = found
        .iter()
        .map(|(_, distinct)| distinct.iter().map(|v| mapping.insert_cat(v)).collect::<PolarsResult<_>>())
        .collect::<PolarsResult<_>>()?;
    let parts: Vec<UInt32Chunked> =
        found.par_iter().zip(&cats).map(|((codes, _), cats)| physical(codes, cats)).collect();
    let mut parts = parts.into_iter();
    let mut physical = parts.next().unwrap_or_else(|| UInt32Chunked::full_null(PlSmallStr::EMPTY, 0));
    for part in parts {
        physical.append(&part)?;
    }
    Ok(categorical(physical.with_name(column.name().clone()), dtype))
}

/// The dictionary's codes of [`text_codes`]' codes, `cats` holding the dictionary's code of each.
fn physical(codes: &[Option<u32>], cats: &[u32]) -> UInt32Chunked {
    codes.iter().map(|c| c.map(|c| cats[c as usize])).collect()
}

/// Codes of a [`dictionary_dtype`] as its column.
fn categorical(physical: UInt32Chunked, dtype: DataType) -> Column {
    // SAFETY: every code was returned by this dtype's own mapping.
    let encoded = unsafe { CategoricalChunked::<Categorical32Type>::from_cats_and_dtype_unchecked(physical, dtype) };
    encoded.into_series().into_column()
}

/// Every input column except `id`, in canonical order. `nmog_nox_g_km` (NMOG+NOx together, as
/// the tables from PROCONVE L7 on publish them instead of NMHC and NOx apart) is optional: a file
/// without it is read as if it were all null.
pub const COLUMNS: &[ColumnSpec] = &[
    col_spec("marca", Kind::Text, false),
    col_spec("modelo", Kind::Text, false),
    col_spec("versao", Kind::Text, false),
    col_spec("ano", Kind::Integer, false),
    col_spec("categoria", Kind::Text, false),
    col_spec("motor", Kind::Text, true),
    col_spec("tipo_propulsao", Kind::Text, false),
    col_spec("combustivel_tipo", Kind::Text, false),
    col_spec("transmissao_tipo", Kind::Text, true),
    col_spec("transmissao_marchas", Kind::Integer, true),
    col_spec("ar_condicionado", Kind::Boolean, true),
    col_spec("direcao_assistida_tipo", Kind::Text, false),
    col_spec("eficiencia_cidade_km_l", Kind::Float, true),
    col_spec("eficiencia_estrada_km_l", Kind::Float, true),
    col_spec("eficiencia_cidade_etanol_km_l", Kind::Float, true),
    col_spec("eficiencia_estrada_etanol_km_l", Kind::Float, true),
    col_spec("consumo_energetico_mj_km", Kind::Float, true),
    col_spec("co2_fossil_g_km", Kind::Float, true),
    col_spec("nmhc_g_km", Kind::Float, true),
    col_spec("co_g_km", Kind::Float, true),
    col_spec("nox_g_km", Kind::Float, true),
    optional_col_spec("nmog_nox_g_km", Kind::Float),
    col_spec("autonomia_eletrica_km", Kind::Float, true),
    col_spec("tanque_l", Kind::Float, true),
    col_spec("classificacao_pbe_categoria", Kind::Text, true),
    col_spec("classificacao_pbe_geral", Kind::Text, true),
];

/// One problem found in an export: which column, which row (1-based), which rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub column: Option<String>,
    pub row: Option<usize>,
    pub rule: String,
}

impl Problem {
    fn file(rule: impl Into<String>) -> Self {
        Problem { column: None, row: None, rule: rule.into() }
    }
    fn column(column: &str, rule: impl Into<String>) -> Self {
        Problem { column: Some(column.to_string()), row: None, rule: rule.into() }
    }
    fn cell(column: &str, row_index: usize, rule: impl Into<String>) -> Self {
        Problem { column: Some(column.to_string()), row: Some(row_index + 1), rule: rule.into() }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.column, self.row) {
            (Some(c), Some(r)) => write!(f, "column '{c}', row {r}: {}", self.rule),
            (Some(c), None) => write!(f, "column '{c}': {}", self.rule),
            _ => write!(f, "{}", self.rule),
        }
    }
}

/// At most this many row-level problems are listed per column and rule; the rest are counted.
const MAX_ROWS_PER_RULE: usize = 20;

fn push_rows(out: &mut Vec<Problem>, column: &str, rows: &[usize], rule: &str) {
    for &r in rows.iter().take(MAX_ROWS_PER_RULE) {
        out.push(Problem::cell(column, r, rule));
    }
    if rows.len() > MAX_ROWS_PER_RULE {
        out.push(Problem::column(column, format!("{rule} (and {} more rows)", rows.len() - MAX_ROWS_PER_RULE)));
    }
}

fn null_rows(s: &Column) -> Vec<usize> {
    if s.null_count() == 0 {
        return Vec::new();
    }
    let mask = s.is_null();
    mask.iter().enumerate().filter_map(|(i, v)| (v == Some(true)).then_some(i)).collect()
}

/// Checks a raw export against the input schema; returns every problem found (empty when valid).
pub fn check(df: &DataFrame) -> Vec<Problem> {
    check_keyed(df).0
}

/// [`check`], and the id order of an export whose `id` column is valid (parsed once, reused by
/// the table build).
pub fn check_keyed(df: &DataFrame) -> (Vec<Problem>, Option<IdOrder>) {
    use rayon::prelude::*;
    let mut problems = Vec::new();
    if df.height() == 0 {
        problems.push(Problem::file("the file has no rows"));
    }
    // The columns are checked in parallel, beside the ids; the problems keep the schema's order.
    let (columns, ids) = rayon::join(
        || COLUMNS.par_iter().map(|spec| check_column(df, spec)).collect::<Vec<_>>(),
        || {
            let mut problems = Vec::new();
            let order = df.column(ID).ok().and_then(|ids| check_ids(ids, &mut problems));
            (problems, order)
        },
    );
    problems.extend(columns.into_iter().flatten());
    problems.extend(ids.0);
    (problems, ids.1)
}

/// The problems of one input column.
fn check_column(df: &DataFrame, spec: &ColumnSpec) -> Vec<Problem> {
    let mut problems = Vec::new();
    let Ok(column) = df.column(spec.name) else {
        if !spec.optional {
            problems.push(Problem::column(spec.name, "required column is missing"));
        }
        return problems;
    };
    if !spec.kind.accepts(column.dtype()) {
        problems.push(Problem::column(
            spec.name,
            format!("expected type {}, found {}", spec.kind.describe(), column.dtype()),
        ));
        return problems;
    }
    if !spec.nullable {
        push_rows(&mut problems, spec.name, &null_rows(column), "null value in a required column");
    }
    if column.dtype().is_float() {
        check_finite(spec.name, column, &mut problems);
        if spec.kind == Kind::Integer {
            check_whole(spec.name, column, &mut problems);
        }
    } else if spec.kind == Kind::Integer && column.dtype().is_decimal() {
        check_whole(spec.name, column, &mut problems);
    }
    if spec.name == "ano" {
        check_ano(column, &mut problems);
    }
    problems
}

/// The rows of a numeric column whose value fails `bad`. The raw values are scanned first (a
/// tight loop the compiler vectorises); the rows, with their nulls, only when one of them fails.
fn rows_where(column: &Column, bad: impl Fn(f64) -> bool) -> Vec<usize> {
    let Ok(cast) = column.cast(&DataType::Float64) else { return Vec::new() };
    let Ok(values) = cast.f64() else { return Vec::new() };
    if !values.downcast_iter().any(|arr| arr.values().iter().fold(false, |any, &x| any | bad(x))) {
        return Vec::new();
    }
    values.iter().enumerate().filter_map(|(i, v)| v.filter(|x| bad(*x)).map(|_| i)).collect()
}

/// An infinite value (±inf, e.g. a division by zero upstream) makes the file invalid; NaN is read
/// as null.
fn check_finite(name: &str, column: &Column, problems: &mut Vec<Problem>) {
    let bad = rows_where(column, f64::is_infinite);
    push_rows(problems, name, &bad, "infinite value (±inf) is not a number the service can publish");
}

/// An integer column written as float or Decimal: every value must be whole.
fn check_whole(name: &str, column: &Column, problems: &mut Vec<Problem>) {
    let bad = rows_where(column, |x| x.is_finite() && (x.fract() != 0.0 || x.abs() > i32::MAX as f64));
    push_rows(problems, name, &bad, "not a whole number in an integer column");
}

fn check_ano(column: &Column, problems: &mut Vec<Problem>) {
    let bad = rows_where(column, |y| !(ANO_MIN as f64..=ANO_MAX as f64).contains(&y));
    push_rows(problems, "ano", &bad, &format!("year out of range {ANO_MIN}-{ANO_MAX}"));
}

fn check_ids(column: &Column, problems: &mut Vec<Problem>) -> Option<IdOrder> {
    if !Kind::Text.accepts(column.dtype()) {
        problems.push(Problem::column(ID, format!("expected type string (UUID), found {}", column.dtype())));
        return None;
    }
    push_rows(problems, ID, &null_rows(column), "null value in a required column");
    let text = column.cast(&DataType::String).ok()?;
    let values = text.str().ok()?;
    let (ids, bad) = parse_uuids(values);
    push_rows(problems, ID, &bad, "not a valid UUID");
    if !bad.is_empty() || column.null_count() > 0 {
        // Duplicates among the ids that parsed (a null or invalid id is not counted twice).
        let parsed: Vec<Uuid> = values
            .iter()
            .zip(ids)
            .filter_map(|(v, id)| v.is_some_and(|v| Uuid::parse_str(v).is_ok()).then_some(id))
            .collect();
        IdOrder::new(parsed).duplicates(problems);
        return None;
    }
    let order = IdOrder::new(ids);
    order.duplicates(problems);
    Some(order)
}

/// Every row's id parsed, in parallel (a chunk of rows per task), and the rows whose id is not
/// a UUID (a null or invalid id is the nil UUID in the first vector).
pub fn parse_uuids(values: &StringChunked) -> (Vec<Uuid>, Vec<usize>) {
    use rayon::prelude::*;
    let n = values.len();
    let chunk = n.div_ceil(rayon::current_num_threads().max(1) * 4).max(1);
    let parts: Vec<(Vec<Uuid>, Vec<usize>)> = (0..n)
        .step_by(chunk)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|start| {
            let mut ids = Vec::with_capacity(chunk);
            let mut bad = Vec::new();
            for i in start..(start + chunk).min(n) {
                match values.get(i).map(Uuid::parse_str) {
                    Some(Ok(u)) => ids.push(u),
                    Some(Err(_)) => {
                        ids.push(Uuid::nil());
                        bad.push(i);
                    }
                    None => ids.push(Uuid::nil()),
                }
            }
            (ids, bad)
        })
        .collect();
    let mut ids = Vec::with_capacity(n);
    let mut bad = Vec::new();
    for (part, part_bad) in parts {
        ids.extend(part);
        bad.extend(part_bad);
    }
    (ids, bad)
}

/// The rows' ids and the rows sorted by id (a UUID's byte order is the order of its lower-case
/// text, so this is the order of the ids as text).
#[derive(Debug, Clone)]
pub struct IdOrder {
    pub ids: Vec<Uuid>,
    pub by_id: Vec<u32>,
    /// Whether an id is used by more than one row (found while sorting).
    pub repeats: bool,
}

impl IdOrder {
    /// Sorts the rows by id (on every core, see [`bucket_sort`]). Each id is sorted with its row
    /// beside it (a UUID's byte order is its order as a big-endian integer): a sort of rows
    /// compared through their ids reads an id from anywhere in memory at every comparison,
    /// several times slower at 10M rows. An id and its row are five 32-bit words, most
    /// significant first (20 bytes a row, where a 128-bit integer beside the row would be aligned
    /// to 32). A repeated id is found among the sorted neighbours, read in memory order.
    pub fn new(ids: Vec<Uuid>) -> IdOrder {
        use rayon::prelude::*;
        let keyed = bucket_sort::sorted(
            ids.len(),
            |row| {
                let v = ids[row].as_u128();
                [(v >> 96) as u32, (v >> 64) as u32, (v >> 32) as u32, v as u32, row as u32]
            },
            |k| ((k[0] as u128) << 96) | ((k[1] as u128) << 64) | ((k[2] as u128) << 32) | k[3] as u128,
        );
        let repeats = keyed.par_windows(2).with_min_len(1 << 14).any(|w| w[0][..4] == w[1][..4]);
        let by_id: Vec<u32> = keyed.par_iter().map(|k| k[4]).collect();
        IdOrder { ids, by_id, repeats }
    }

    /// Each row's rank in the id order (its position in it), written on every core.
    pub fn ranks(&self) -> PolarsResult<Vec<u32>> {
        reorder::positions(&self.by_id, self.ids.len())
    }

    /// Reports every row whose id was already used by an earlier row (a repeated id is next to
    /// its other uses in the id order).
    pub fn duplicates(&self, problems: &mut Vec<Problem>) {
        if !self.repeats {
            return;
        }
        let id = |k: usize| self.ids[self.by_id[k] as usize];
        let mut dups: Vec<(usize, usize, Uuid)> = Vec::new();
        let mut start = 0;
        while start < self.by_id.len() {
            let mut end = start + 1;
            while end < self.by_id.len() && id(end) == id(start) {
                end += 1;
            }
            if end - start > 1 {
                let rows = &self.by_id[start..end];
                let first = *rows.iter().min().unwrap_or(&0) as usize;
                dups.extend(rows.iter().filter(|&&r| r as usize != first).map(|&r| (r as usize, first, id(start))));
            }
            start = end;
        }
        dups.sort_unstable();
        for &(row, first, id) in dups.iter().take(MAX_ROWS_PER_RULE) {
            problems.push(Problem::cell(ID, row, format!("duplicate id {id} (first used in row {})", first + 1)));
        }
        if dups.len() > MAX_ROWS_PER_RULE {
            problems
                .push(Problem::column(ID, format!("duplicate ids (and {} more rows)", dups.len() - MAX_ROWS_PER_RULE)));
        }
    }
}

/// Namespace of the ids derived for exports without an `id` column.
pub const ID_NAMESPACE: Uuid = Uuid::NAMESPACE_OID;

/// The deterministic id of a row without one: UUID v5 of marca, modelo, versao, ano, motor and
/// transmissao_tipo joined by `|` (null as empty), so re-exports keep the same ids.
pub fn derive_id(
    marca: &str,
    modelo: &str,
    versao: &str,
    ano: i64,
    motor: Option<&str>,
    transmissao: Option<&str>,
) -> Uuid {
    let key = format!("{marca}|{modelo}|{versao}|{ano}|{}|{}", motor.unwrap_or(""), transmissao.unwrap_or(""));
    Uuid::new_v5(&ID_NAMESPACE, key.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn valid_frame() -> DataFrame {
        let mut cols: Vec<Column> = Vec::new();
        for spec in COLUMNS {
            let c = match spec.kind {
                Kind::Text => Column::new(spec.name.into(), ["a", "b"]),
                Kind::Integer => Column::new(spec.name.into(), [2020i32, 2021]),
                Kind::Float => Column::new(spec.name.into(), [1.5f64, 2.5]),
                Kind::Boolean => Column::new(spec.name.into(), [true, false]),
            };
            cols.push(c);
        }
        DataFrame::new_infer_height(cols).unwrap()
    }

    /// Ids of many rows (sorted by buckets, see `bucket_sort`): the order is the ids' byte
    /// order, and a repeated id is reported once per later use, naming its first row.
    #[test]
    fn many_ids_are_ordered_and_their_repeats_found() {
        let n = 200_000usize;
        let ids: Vec<Uuid> = (0..n as u64)
            .map(|i| Uuid::from_u128((i.wrapping_mul(0x9E37_79B9_7F4A_7C15) as u128) << 64 | i as u128))
            .collect();
        let order = IdOrder::new(ids.clone());
        let mut problems = Vec::new();
        order.duplicates(&mut problems);
        assert!(problems.is_empty() && !order.repeats);
        let mut expected: Vec<u32> = (0..n as u32).collect();
        expected.sort_by_key(|&r| ids[r as usize].to_string());
        assert_eq!(order.by_id, expected);

        let mut repeated = ids;
        repeated[150_000] = repeated[7];
        repeated[199_999] = repeated[7];
        let order = IdOrder::new(repeated.clone());
        let mut problems = Vec::new();
        order.duplicates(&mut problems);
        let said: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("row 150001") && said[0].contains("first used in row 8"), "{said:?}");
        assert!(said[1].contains("row 200000") && said[1].contains(&repeated[7].to_string()), "{said:?}");
    }

    fn rules(p: &[Problem]) -> Vec<String> {
        p.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn valid_frame_has_no_problems() {
        assert!(check(&valid_frame()).is_empty());
    }

    #[test]
    fn missing_column_is_named() {
        let df = valid_frame().drop("categoria").unwrap();
        assert_eq!(rules(&check(&df)), vec!["column 'categoria': required column is missing"]);
    }

    #[test]
    fn the_optional_column_may_be_absent_but_is_checked_when_present() {
        let without = valid_frame().drop("nmog_nox_g_km").unwrap();
        assert!(check(&without).is_empty(), "{:?}", check(&without));
        let mut df = valid_frame();
        df.with_column(Column::new("nmog_nox_g_km".into(), ["0.03", "0.04"])).unwrap();
        assert_eq!(rules(&check(&df)), vec!["column 'nmog_nox_g_km': expected type float, found str"]);
        df.with_column(Column::new("nmog_nox_g_km".into(), [Some(0.03f64), Some(f64::INFINITY)])).unwrap();
        let r = rules(&check(&df));
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(r[0].starts_with("column 'nmog_nox_g_km', row 2: infinite value"), "{r:?}");
        df.with_column(Column::new("nmog_nox_g_km".into(), [None, Some(0.03f64)])).unwrap();
        assert!(check(&df).is_empty(), "nulls are fine");
    }

    #[test]
    fn wrong_type_is_named() {
        let mut df = valid_frame();
        df.with_column(Column::new("ano".into(), ["2020", "2021"])).unwrap();
        assert_eq!(rules(&check(&df)), vec!["column 'ano': expected type integer, found str"]);
    }

    #[test]
    fn dictionary_text_and_decimal_numbers_are_accepted() {
        let mut df = valid_frame();
        let cat =
            Column::new("marca".into(), ["a", "b"]).cast(&DataType::from_categories(Categories::global())).unwrap();
        df.with_column(cat).unwrap();
        let dec = Column::new("co2_fossil_g_km".into(), [96.5f64, 120.25]).cast(&DataType::Decimal(10, 2)).unwrap();
        df.with_column(dec).unwrap();
        let ano = Column::new("ano".into(), [2020i32, 2021]).cast(&DataType::Decimal(6, 0)).unwrap();
        df.with_column(ano).unwrap();
        assert!(check(&df).is_empty(), "{:?}", check(&df));
    }

    #[test]
    fn infinite_values_and_fractional_integers_are_named() {
        let mut df = valid_frame();
        df.with_column(Column::new("co2_fossil_g_km".into(), [f64::INFINITY, 1.0])).unwrap();
        df.with_column(Column::new("tanque_l".into(), [f64::NAN, f64::NEG_INFINITY])).unwrap();
        df.with_column(Column::new("transmissao_marchas".into(), [Some(5.0f64), Some(5.5)])).unwrap();
        let r = rules(&check(&df));
        assert_eq!(r.len(), 3, "{r:?}");
        assert!(r[0].starts_with("column 'transmissao_marchas', row 2: not a whole number"), "{r:?}");
        assert!(r[1].starts_with("column 'co2_fossil_g_km', row 1: infinite value"), "{r:?}");
        assert!(r[2].starts_with("column 'tanque_l', row 2: infinite value"), "{r:?}");
    }

    #[test]
    fn integers_are_accepted_as_floats_but_not_text() {
        let mut df = valid_frame();
        df.with_column(Column::new("co2_fossil_g_km".into(), [100i64, 120])).unwrap();
        assert!(check(&df).is_empty());
        df.with_column(Column::new("tanque_l".into(), ["50", "60"])).unwrap();
        assert_eq!(check(&df).len(), 1);
    }

    #[test]
    fn null_in_required_column_names_row() {
        let mut df = valid_frame();
        df.with_column(Column::new("marca".into(), [Some("x"), None])).unwrap();
        assert_eq!(rules(&check(&df)), vec!["column 'marca', row 2: null value in a required column"]);
    }

    #[test]
    fn null_in_nullable_column_is_fine() {
        let mut df = valid_frame();
        df.with_column(Column::new("motor".into(), [Some("1.0"), None])).unwrap();
        assert!(check(&df).is_empty());
    }

    #[test]
    fn ano_out_of_range() {
        let mut df = valid_frame();
        df.with_column(Column::new("ano".into(), [1899i32, 2101])).unwrap();
        let r = rules(&check(&df));
        assert_eq!(r.len(), 2);
        assert!(r[0].starts_with("column 'ano', row 1: year out of range"));
        assert!(r[1].starts_with("column 'ano', row 2"));
    }

    #[test]
    fn bad_and_duplicate_uuids() {
        let mut df = valid_frame();
        let u = "6f1c2f0e-8c4a-4f59-9d0a-1a2b3c4d5e6f";
        df.with_column(Column::new("id".into(), [u, "nope"])).unwrap();
        assert_eq!(rules(&check(&df)), vec!["column 'id', row 2: not a valid UUID"]);
        df.with_column(Column::new("id".into(), [u, u])).unwrap();
        let r = rules(&check(&df));
        assert_eq!(r, vec![format!("column 'id', row 2: duplicate id {u} (first used in row 1)")]);
    }

    #[test]
    fn an_id_used_three_times_names_its_first_row_twice() {
        let mut df = valid_frame();
        df = df.slice(0, 1);
        let mut big = df.clone();
        for _ in 1..5 {
            big.vstack_mut(&df).unwrap();
        }
        let (a, b) = ("6f1c2f0e-8c4a-4f59-9d0a-1a2b3c4d5e6f", "0b5e1c9a-2d3f-4a6b-8c7d-9e0f1a2b3c4d");
        big.with_column(Column::new("id".into(), [b, a, b, a, b])).unwrap();
        let r = rules(&check(&big));
        assert_eq!(
            r,
            vec![
                format!("column 'id', row 3: duplicate id {b} (first used in row 1)"),
                format!("column 'id', row 4: duplicate id {a} (first used in row 2)"),
                format!("column 'id', row 5: duplicate id {b} (first used in row 1)"),
            ]
        );
        // Valid ids come back with their order; none when an id is a problem.
        big.with_column(Column::new("id".into(), [b, a, "00000000-0000-4000-8000-000000000001", "Z", "0"])).unwrap();
        let (problems, order) = check_keyed(&big);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(order.is_none());
    }

    #[test]
    fn text_is_encoded_by_value_across_chunks_and_nulls() {
        let long = "a value longer than twelve bytes";
        let first = Column::new("t".into(), [Some("x"), Some(long), None, Some("x"), Some(long)]);
        let second = Column::new("t".into(), [Some(long), Some("y"), None, Some("x")]);
        let mut column = first.as_materialized_series().clone();
        column.append(second.as_materialized_series()).unwrap();
        assert_eq!(column.chunks().len(), 2);
        let encoded = dictionary_encode(&column.clone().into_column()).unwrap();
        assert!(encoded.dtype().is_categorical());
        let back: Vec<Option<String>> =
            encoded.cast(&DataType::String).unwrap().str().unwrap().iter().map(|v| v.map(String::from)).collect();
        let want: Vec<Option<String>> = column.str().unwrap().iter().map(|v| v.map(String::from)).collect();
        assert_eq!(back, want);
        let (codes, distinct) = text_codes(column.str().unwrap());
        assert_eq!(distinct, ["x", long, "y"]);
        assert_eq!(codes, [Some(0), Some(1), None, Some(0), Some(1), Some(1), Some(2), None, Some(0)]);
    }

    #[test]
    fn text_in_chunks_is_encoded_like_one_pass() {
        let long = |i: usize| format!("a band name longer than twelve bytes {}", i % 7);
        let mut column = Series::new("t".into(), [Some(long(3)), None, Some("A".into())]);
        for part in 0..40 {
            let values: Vec<Option<String>> = (0..500)
                .map(|i| (i % 13 != 0).then(|| if i % 3 == 0 { long(i + part) } else { format!("{}", (i + part) % 5) }))
                .collect();
            column.append(&Series::new("t".into(), values)).unwrap();
        }
        assert_eq!(column.n_chunks(), 41);
        let column = column.into_column();
        let one = dictionary_encode(&column).unwrap();
        let chunked = dictionary_encode_by_chunks(&column).unwrap();
        assert_eq!(chunked.n_chunks(), 41);
        assert_eq!(chunked.name(), column.name());
        let text = |c: &Column| -> Vec<Option<String>> {
            c.cast(&DataType::String).unwrap().str().unwrap().iter().map(|v| v.map(String::from)).collect()
        };
        assert_eq!(text(&chunked), text(&column));
        // The same codes as one pass: the dictionary takes the values in the order they come.
        let codes = |c: &Column| -> Vec<Option<u32>> {
            c.as_materialized_series().to_physical_repr().u32().unwrap().iter().collect()
        };
        assert_eq!(codes(&chunked), codes(&one));
        assert_eq!(codes(&chunked)[..3], [Some(0), None, Some(1)]);
    }

    #[test]
    fn many_problems_are_summarised() {
        let n = 50;
        let mut df = valid_frame();
        df = df.slice(0, 1);
        let mut big = df.clone();
        for _ in 1..n {
            big.vstack_mut(&df).unwrap();
        }
        big.with_column(Column::new("ano".into(), vec![1800i32; n])).unwrap();
        let p = check(&big);
        assert_eq!(p.len(), MAX_ROWS_PER_RULE + 1);
        assert!(p.last().unwrap().to_string().contains("and 30 more rows"));
    }

    #[test]
    fn empty_file_is_invalid() {
        let df = valid_frame().slice(0, 0);
        assert_eq!(rules(&check(&df)), vec!["the file has no rows"]);
    }

    #[test]
    fn derived_ids_are_stable_and_distinct() {
        let a = derive_id("Fiat", "Argo", "1.0", 2020, Some("1.0"), None);
        assert_eq!(a, derive_id("Fiat", "Argo", "1.0", 2020, Some("1.0"), None));
        assert_ne!(a, derive_id("Fiat", "Argo", "1.0", 2021, Some("1.0"), None));
        assert_eq!(a.get_version_num(), 5);
    }
}
