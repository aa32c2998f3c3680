//! What changed between two loaded exports, vehicle by vehicle (matched by id): the vehicles
//! added, removed and changed, and for a changed one each field that differs, published metrics
//! included. Used by `eco-insights diff` and by the reload's log line.
//!
//! Compared fields: every input column (the catalog fields and the raw measurements) and the
//! published metrics of the views (eficiencia_media_referencia, consumo_referencia,
//! co2_referencia_g_km, autonomia_km, custo_anual_estimado, eco_score, eco_faixa). The ranking
//! positions are left out: they depend on the whole catalog, so one added vehicle would move
//! those of many others.

use polars::prelude::*;
use uuid::Uuid;

use super::schema::COLUMNS;
use super::table::{Table, Vehicle};
use super::text_index::TextValues;
use super::views::DERIVED_COLUMNS;

/// The vehicles of two tables, matched by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delta {
    /// Rows of the new table whose id the old one lacks, by id ascending.
    pub added: Vec<u32>,
    /// Rows of the old table whose id the new one lacks, by id ascending.
    pub removed: Vec<u32>,
    /// (old row, new row) of the vehicles with a field that differs, by id ascending.
    pub changed: Vec<(u32, u32)>,
    /// How many vehicles are in both with every compared field equal.
    pub unchanged: usize,
}

/// The counts of a [`Delta`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub added: usize,
    pub removed: usize,
    pub changed: usize,
    pub unchanged: usize,
}

impl Delta {
    pub fn counts(&self) -> Counts {
        Counts {
            added: self.added.len(),
            removed: self.removed.len(),
            changed: self.changed.len(),
            unchanged: self.unchanged,
        }
    }
}

/// The compared columns: every input column and the published metrics.
fn compared_columns() -> impl Iterator<Item = &'static str> {
    COLUMNS.iter().map(|c| c.name).chain(DERIVED_COLUMNS.iter().copied())
}

fn is_text(c: &Column) -> bool {
    matches!(c.dtype(), DataType::Categorical(_, _) | DataType::String)
}

/// Marks the matched pairs whose values of one column differ. Text columns (whose dictionary
/// codes differ from table to table) compare their values in place, without materialising
/// strings; the others are gathered and compared by Polars (null equals null).
fn mark_differences(
    x: &Column,
    y: &Column,
    old_rows: &[u32],
    new_rows: &[u32],
    differs: &mut [bool],
) -> PolarsResult<()> {
    if is_text(x) && is_text(y) {
        let (a, b) = (TextValues::of(x)?, TextValues::of(y)?);
        for (k, (&o, &n)) in old_rows.iter().zip(new_rows).enumerate() {
            if a.get(o as usize) != b.get(n as usize) {
                differs[k] = true;
            }
        }
        return Ok(());
    }
    let x = x.take(&IdxCa::from_vec(PlSmallStr::EMPTY, old_rows.to_vec()))?;
    let y = y.take(&IdxCa::from_vec(PlSmallStr::EMPTY, new_rows.to_vec()))?;
    let (x, y) = (x.as_materialized_series(), y.as_materialized_series());
    let same = if x.dtype() == y.dtype() {
        x.equal_missing(y)?
    } else {
        x.cast(&DataType::String)?.equal_missing(&y.cast(&DataType::String)?)?
    };
    for (k, eq) in same.iter().enumerate() {
        if eq != Some(true) {
            differs[k] = true;
        }
    }
    Ok(())
}

/// Matches the two tables' vehicles by id and finds the changed ones, column by column over the
/// matched rows (no row is materialised).
pub fn compare(old: &Table, new: &Table) -> PolarsResult<Delta> {
    let (a, b) = (old.rows_by_id(), new.rows_by_id());
    let mut delta = Delta::default();
    let (mut old_rows, mut new_rows) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let order = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) => old.id_at(x).cmp(&new.id_at(y)),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                delta.removed.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                delta.added.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                old_rows.push(a[i]);
                new_rows.push(b[j]);
                i += 1;
                j += 1;
            }
        }
    }
    let mut differs = vec![false; old_rows.len()];
    if !old_rows.is_empty() {
        for name in compared_columns() {
            mark_differences(old.frame().column(name)?, new.frame().column(name)?, &old_rows, &new_rows, &mut differs)?;
        }
    }
    for (k, d) in differs.iter().enumerate() {
        if *d {
            delta.changed.push((old_rows[k], new_rows[k]));
        } else {
            delta.unchanged += 1;
        }
    }
    Ok(delta)
}

/// One field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Null => write!(f, "null"),
            Value::Text(s) => write!(f, "{s:?}"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
        }
    }
}

/// One field that differs: its name, the old and the new value.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldChange {
    pub field: &'static str,
    pub old: Value,
    pub new: Value,
}

/// The compared fields of a vehicle, in the order of [`compared_columns`].
pub fn fields(v: &Vehicle) -> Vec<(&'static str, Value)> {
    let t = |s: &str| Value::Text(s.to_string());
    let ot = |s: &Option<String>| s.as_deref().map_or(Value::Null, t);
    let of = |x: Option<f64>| x.map_or(Value::Null, Value::Float);
    vec![
        ("marca", t(&v.marca)),
        ("modelo", t(&v.modelo)),
        ("versao", t(&v.versao)),
        ("ano", Value::Int(v.ano as i64)),
        ("categoria", t(&v.categoria)),
        ("motor", ot(&v.motor)),
        ("tipo_propulsao", t(&v.tipo_propulsao)),
        ("combustivel_tipo", t(&v.combustivel_tipo)),
        ("transmissao_tipo", ot(&v.transmissao_tipo)),
        ("transmissao_marchas", v.transmissao_marchas.map_or(Value::Null, |m| Value::Int(m as i64))),
        ("ar_condicionado", v.ar_condicionado.map_or(Value::Null, Value::Bool)),
        ("direcao_assistida_tipo", t(&v.direcao_assistida_tipo)),
        ("eficiencia_cidade_km_l", of(v.eficiencia_cidade_km_l)),
        ("eficiencia_estrada_km_l", of(v.eficiencia_estrada_km_l)),
        ("eficiencia_cidade_etanol_km_l", of(v.eficiencia_cidade_etanol_km_l)),
        ("eficiencia_estrada_etanol_km_l", of(v.eficiencia_estrada_etanol_km_l)),
        ("consumo_energetico_mj_km", of(v.consumo_energetico_mj_km)),
        ("co2_fossil_g_km", of(v.co2_fossil_g_km)),
        ("nmhc_g_km", of(v.nmhc_g_km)),
        ("co_g_km", of(v.co_g_km)),
        ("nox_g_km", of(v.nox_g_km)),
        ("nmog_nox_g_km", of(v.nmog_nox_g_km)),
        ("autonomia_eletrica_km", of(v.autonomia_eletrica_km)),
        ("tanque_l", of(v.tanque_l)),
        ("classificacao_pbe_categoria", ot(&v.classificacao_pbe_categoria)),
        ("classificacao_pbe_geral", ot(&v.classificacao_pbe_geral)),
        ("eficiencia_media_referencia", of(v.eficiencia_media_referencia)),
        ("consumo_referencia", of(v.consumo_referencia)),
        ("co2_referencia_g_km", of(v.co2_referencia_g_km)),
        ("autonomia_km", of(v.autonomia_km)),
        ("custo_anual_estimado", of(v.custo_anual_estimado)),
        ("eco_score", of(v.eco_score)),
        ("eco_faixa", ot(&v.eco_faixa)),
    ]
}

/// The fields that differ between two versions of one vehicle.
pub fn field_changes(old: &Vehicle, new: &Vehicle) -> Vec<FieldChange> {
    fields(old)
        .into_iter()
        .zip(fields(new))
        .filter(|((_, a), (_, b))| a != b)
        .map(|((field, old), (_, new))| FieldChange { field, old, new })
        .collect()
}

/// One changed vehicle: its id, both versions and the fields that differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Changed {
    pub id: Uuid,
    pub old: Vehicle,
    pub new: Vehicle,
    pub fields: Vec<FieldChange>,
}

/// The changed vehicles of a delta with their field changes, by id ascending.
pub fn changes(old: &Table, new: &Table, delta: &Delta) -> Vec<Changed> {
    delta
        .changed
        .iter()
        .map(|&(o, n)| {
            let (old, new) = (old.vehicle_at(o), new.vehicle_at(n));
            Changed { id: old.id, fields: field_changes(&old, &new), old, new }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::engine::load::load_bytes;
    use crate::engine::views::{CostConfig, Views};
    use crate::sample::generate_catalog;

    fn load(df: &mut DataFrame) -> crate::engine::snapshot::Snapshot {
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(df).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap()
    }

    #[test]
    fn added_removed_and_changed_vehicles() {
        let base = generate_catalog(60, 4).unwrap();
        let old = load(&mut base.slice(0, 50));
        // Rows 10..60: 10 removed, 10 added; row 20 gets another CO2 value.
        let co2 = base.column("co2_fossil_g_km").unwrap().cast(&DataType::Float64).unwrap();
        let bumped: Vec<Option<f64>> =
            co2.f64().unwrap().iter().enumerate().map(|(i, v)| if i == 20 { Some(321.0) } else { v }).collect();
        let mut changed = base.clone();
        changed.with_column(Column::new("co2_fossil_g_km".into(), bumped)).unwrap();
        let new = load(&mut changed.slice(10, 50));
        let delta = compare(&old, &new).unwrap();
        assert_eq!(delta.counts(), Counts { added: 10, removed: 10, changed: 1, unchanged: 39 });
        let c = &changes(&old, &new, &delta)[0];
        let names: Vec<&str> = c.fields.iter().map(|f| f.field).collect();
        assert!(names.contains(&"co2_fossil_g_km") && names.contains(&"co2_referencia_g_km"), "{names:?}");
        assert_eq!(c.fields.iter().find(|f| f.field == "co2_fossil_g_km").unwrap().new, Value::Float(321.0));
        assert_eq!(compare(&old, &old).unwrap().counts(), Counts { unchanged: 50, ..Counts::default() });
    }
}
