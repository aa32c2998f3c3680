//! The catalog input schema (what analysts drop in `data/`) and the checks an export must pass.

use rayon::slice::ParallelSliceMut;
use std::fmt;

use polars::prelude::*;
use uuid::Uuid;

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
}

const fn col_spec(name: &'static str, kind: Kind, nullable: bool) -> ColumnSpec {
    ColumnSpec { name, kind, nullable }
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

/// A dictionary-encoded text type with a mapping of its own (freed with the data using it).
pub fn dictionary_dtype() -> DataType {
    DataType::from_categories(Categories::random(PlSmallStr::from_static("eco-insights"), CategoricalPhysical::U32))
}

/// Every input column except `id`, in canonical order.
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
    let mut problems = Vec::new();
    if df.height() == 0 {
        problems.push(Problem::file("the file has no rows"));
    }
    for spec in COLUMNS {
        let Ok(column) = df.column(spec.name) else {
            problems.push(Problem::column(spec.name, "required column is missing"));
            continue;
        };
        if !spec.kind.accepts(column.dtype()) {
            problems.push(Problem::column(
                spec.name,
                format!("expected type {}, found {}", spec.kind.describe(), column.dtype()),
            ));
            continue;
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
    }
    if let Ok(ids) = df.column(ID) {
        check_ids(ids, &mut problems);
    }
    problems
}

/// An infinite value (±inf, e.g. a division by zero upstream) makes the file invalid; NaN is read
/// as null.
fn check_finite(name: &str, column: &Column, problems: &mut Vec<Problem>) {
    let Ok(cast) = column.cast(&DataType::Float64) else { return };
    let Ok(values) = cast.f64() else { return };
    let bad: Vec<usize> =
        values.iter().enumerate().filter_map(|(i, v)| v.filter(|x| x.is_infinite()).map(|_| i)).collect();
    push_rows(problems, name, &bad, "infinite value (±inf) is not a number the service can publish");
}

/// An integer column written as float or Decimal: every value must be whole.
fn check_whole(name: &str, column: &Column, problems: &mut Vec<Problem>) {
    let Ok(cast) = column.cast(&DataType::Float64) else { return };
    let Ok(values) = cast.f64() else { return };
    let bad: Vec<usize> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.filter(|x| x.is_finite() && (x.fract() != 0.0 || x.abs() > i32::MAX as f64)).map(|_| i))
        .collect();
    push_rows(problems, name, &bad, "not a whole number in an integer column");
}

fn check_ano(column: &Column, problems: &mut Vec<Problem>) {
    let Ok(cast) = column.cast(&DataType::Float64) else { return };
    let Ok(values) = cast.f64() else { return };
    let bad: Vec<usize> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.filter(|y| !(ANO_MIN as f64..=ANO_MAX as f64).contains(y)).map(|_| i))
        .collect();
    push_rows(problems, "ano", &bad, &format!("year out of range {ANO_MIN}-{ANO_MAX}"));
}

fn check_ids(column: &Column, problems: &mut Vec<Problem>) {
    if !Kind::Text.accepts(column.dtype()) {
        problems.push(Problem::column(ID, format!("expected type string (UUID), found {}", column.dtype())));
        return;
    }
    push_rows(problems, ID, &null_rows(column), "null value in a required column");
    let Ok(text) = column.cast(&DataType::String) else { return };
    let Ok(values) = text.str() else { return };
    let mut bad = Vec::new();
    let mut parsed = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        match v.map(Uuid::parse_str) {
            Some(Ok(u)) => parsed.push((u, i)),
            Some(Err(_)) => bad.push(i),
            None => {}
        }
    }
    push_rows(problems, ID, &bad, "not a valid UUID");
    duplicate_rows(&parsed, problems);
}

/// Reports every row whose id was already used by an earlier row (ids sorted with their rows,
/// so a repeated id is next to its first use).
pub fn duplicate_rows(ids: &[(Uuid, usize)], problems: &mut Vec<Problem>) {
    let mut sorted = ids.to_vec();
    sorted.par_sort_unstable();
    let mut dups = Vec::new();
    let mut first: Option<(Uuid, usize)> = None;
    for &(id, row) in &sorted {
        match first {
            Some((f, first_row)) if f == id => dups.push((row, first_row, id)),
            _ => first = Some((id, row)),
        }
    }
    dups.sort_unstable();
    for &(row, first, id) in dups.iter().take(MAX_ROWS_PER_RULE) {
        problems.push(Problem::cell(ID, row, format!("duplicate id {id} (first used in row {})", first + 1)));
    }
    if dups.len() > MAX_ROWS_PER_RULE {
        problems.push(Problem::column(ID, format!("duplicate ids (and {} more rows)", dups.len() - MAX_ROWS_PER_RULE)));
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
