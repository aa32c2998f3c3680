//! The rows of an answer as a table: a Polars frame whose columns are the JSON items' fields
//! (same names, same order, same values: the published, already rounded numbers; nulls stay
//! null), written with Polars' writers. NDJSON is the JSON item encoding itself, one item per line.
//!
//! The items of the list operations are flat (every field is a string, number, boolean or null),
//! so each field is one column. Were an item ever to hold an object, its members would become
//! columns named `parent.child`; the OpenAPI description states the same rule.

use std::io::Write;

use polars::prelude::*;
use serde::Serialize;

use crate::engine::table::Table;
use crate::http::contract::envelope::Items;
use crate::http::formats::encode::{self, Fields, RowWriter, Source};
use crate::http::wire::insights::BrandAggregate;

use super::Format;

/// Every column of the export: the input columns (as the catalog file names them) and the
/// published metrics, in that order.
pub const EXPORT_FIELDS: Fields = &[
    ("id", Source::Id),
    ("marca", Source::Text("marca")),
    ("modelo", Source::Text("modelo")),
    ("versao", Source::Text("versao")),
    ("ano", Source::I32("ano")),
    ("categoria", Source::Text("categoria")),
    ("motor", Source::Text("motor")),
    ("tipo_propulsao", Source::Text("tipo_propulsao")),
    ("combustivel_tipo", Source::Text("combustivel_tipo")),
    ("transmissao_tipo", Source::Text("transmissao_tipo")),
    ("transmissao_marchas", Source::I32("transmissao_marchas")),
    ("ar_condicionado", Source::Bool("ar_condicionado")),
    ("direcao_assistida_tipo", Source::Text("direcao_assistida_tipo")),
    ("eficiencia_cidade_km_l", Source::F64("eficiencia_cidade_km_l")),
    ("eficiencia_estrada_km_l", Source::F64("eficiencia_estrada_km_l")),
    ("eficiencia_cidade_etanol_km_l", Source::F64("eficiencia_cidade_etanol_km_l")),
    ("eficiencia_estrada_etanol_km_l", Source::F64("eficiencia_estrada_etanol_km_l")),
    ("consumo_energetico_mj_km", Source::F64("consumo_energetico_mj_km")),
    ("co2_fossil_g_km", Source::F64("co2_fossil_g_km")),
    ("nmhc_g_km", Source::F64("nmhc_g_km")),
    ("co_g_km", Source::F64("co_g_km")),
    ("nox_g_km", Source::F64("nox_g_km")),
    ("nmog_nox_g_km", Source::F64("nmog_nox_g_km")),
    ("autonomia_eletrica_km", Source::F64("autonomia_eletrica_km")),
    ("tanque_l", Source::F64("tanque_l")),
    ("classificacao_pbe_categoria", Source::Text("classificacao_pbe_categoria")),
    ("classificacao_pbe_geral", Source::Text("classificacao_pbe_geral")),
    ("eficiencia_media_referencia", Source::F64("eficiencia_media_referencia")),
    ("consumo_referencia", Source::F64("consumo_referencia")),
    ("co2_referencia_g_km", Source::F64("co2_referencia_g_km")),
    ("autonomia_km", Source::F64("autonomia_km")),
    ("custo_anual_estimado", Source::F64("custo_anual_estimado")),
    ("eco_score", Source::F64("eco_score")),
    ("eco_faixa", Source::Text("eco_faixa")),
];

/// `rows` of `table` as a frame with one column per field (the field's wire name), in order.
/// Text is plain (dictionaries decoded), numbers keep their published value, and a non-finite
/// float is null, exactly as the JSON encoder writes them.
pub fn frame_of(table: &Table, rows: &[u32], fields: &[(&'static str, Source)]) -> PolarsResult<DataFrame> {
    let take = IdxCa::from_vec(PlSmallStr::EMPTY, rows.to_vec());
    let column = |name: &str| -> PolarsResult<Column> { table.frame().column(name)?.take(&take) };
    let columns = fields
        .iter()
        .map(|(wire, source)| {
            let name = PlSmallStr::from_static(wire);
            Ok(match *source {
                Source::Id => {
                    let ids: Vec<String> = rows.iter().map(|&r| table.id_at(r).hyphenated().to_string()).collect();
                    Column::new(name, ids)
                }
                Source::Text(c) => column(c)?.cast(&DataType::String)?.with_name(name),
                Source::I32(c) => column(c)?.cast(&DataType::Int32)?.with_name(name),
                Source::Bool(c) => column(c)?.cast(&DataType::Boolean)?.with_name(name),
                Source::F64(c) => {
                    let values = column(c)?.cast(&DataType::Float64)?;
                    let finite: Vec<Option<f64>> = values.f64()?.iter().map(|v| v.filter(|x| x.is_finite())).collect();
                    Column::new(name, finite)
                }
            })
        })
        .collect::<PolarsResult<Vec<Column>>>()?;
    let mut df = DataFrame::new_infer_height(columns)?;
    df.rechunk_mut();
    Ok(df)
}

/// The items of `GET /aggregations/by-brand` as a frame (the fields of `BrandAggregate`).
pub fn brand_frame(items: &[BrandAggregate]) -> PolarsResult<DataFrame> {
    let text: Vec<&str> = items.iter().map(|b| b.grupo.as_str()).collect();
    let count: Vec<u64> = items.iter().map(|b| b.quantidade_veiculos).collect();
    let float = |f: fn(&BrandAggregate) -> Option<f64>| -> Vec<Option<f64>> { items.iter().map(f).collect() };
    DataFrame::new_infer_height(vec![
        Column::new("grupo".into(), text),
        Column::new("quantidadeVeiculos".into(), count),
        Column::new("consumoMedio".into(), float(|b| b.consumo_medio)),
        Column::new("emissaoMedia".into(), float(|b| b.emissao_media)),
        Column::new("ecoScoreMedio".into(), float(|b| b.eco_score_medio)),
    ])
}

/// A frame in one of the tabular formats (CSV with a header line, Parquet, Arrow IPC stream).
pub fn write_frame(df: &mut DataFrame, format: Format, out: impl Write) -> PolarsResult<()> {
    match format {
        Format::Csv => CsvWriter::new(out).include_header(true).finish(df),
        Format::Parquet => ParquetWriter::new(out).finish(df).map(|_| ()),
        // The oldest Arrow layout (plain and large strings, no views) reads everywhere.
        Format::Arrow => IpcStreamWriter::new(out).with_compat_level(CompatLevel::oldest()).finish(df),
        Format::Json | Format::Ndjson => polars_bail!(ComputeError: "{} is not a tabular format", format.name()),
    }
}

/// The data part of a list answer made of table rows: `{"items": [...]}` for JSON (the existing
/// encoder), one item per line for NDJSON, else the rows' frame in that format.
pub fn table_rows(
    table: &Table,
    rows: &[u32],
    fields: &[(&'static str, Source)],
    format: Format,
) -> PolarsResult<Vec<u8>> {
    match format {
        Format::Json => encode::items(table, rows, fields),
        Format::Ndjson => {
            let writer = RowWriter::new(table, fields)?;
            let mut out = Vec::with_capacity(rows.len() * 320);
            for &row in rows {
                writer.write(&mut out, row);
                out.push(b'\n');
            }
            Ok(out)
        }
        tabular => {
            let mut out = Vec::new();
            write_frame(&mut frame_of(table, rows, fields)?, tabular, &mut out)?;
            Ok(out)
        }
    }
}

/// The data part of a list answer made of serialised items (their frame built by `frame`).
pub fn serialized_rows<T: Serialize>(
    items: Vec<T>,
    frame: impl FnOnce(&[T]) -> PolarsResult<DataFrame>,
    format: Format,
) -> PolarsResult<Vec<u8>> {
    let json = |e: serde_json::Error| polars_err!(ComputeError: "{e}");
    match format {
        Format::Json => serde_json::to_vec(&Items { items }).map_err(json),
        Format::Ndjson => {
            let mut out = Vec::new();
            for item in &items {
                serde_json::to_writer(&mut out, item).map_err(json)?;
                out.push(b'\n');
            }
            Ok(out)
        }
        tabular => {
            let mut out = Vec::new();
            write_frame(&mut frame(&items)?, tabular, &mut out)?;
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::engine::load::load_bytes;
    use crate::engine::views::{CostConfig, Views};

    fn table() -> crate::engine::snapshot::Snapshot {
        let mut df = crate::sample::generate_catalog(200, 5).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap()
    }

    #[test]
    fn frames_hold_the_json_items_values() {
        let s = table();
        let rows: Vec<u32> = (0..s.len() as u32).rev().step_by(3).collect();
        for fields in [encode::CATALOG_VEHICLE, encode::RANKING_ITEM, EXPORT_FIELDS] {
            let df = frame_of(&s, &rows, fields).unwrap();
            let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
            let wire: Vec<&str> = fields.iter().map(|(w, _)| *w).collect();
            assert_eq!(names, wire);
            assert_eq!(df.height(), rows.len());
            let ndjson = table_rows(&s, &rows, fields, Format::Ndjson).unwrap();
            let lines: Vec<serde_json::Value> = ndjson
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_slice(l).unwrap())
                .collect();
            assert_eq!(lines.len(), rows.len());
            for (i, item) in lines.iter().enumerate() {
                for (c, (wire, _)) in df.columns().iter().zip(fields.iter()) {
                    let cell = c.get(i).unwrap();
                    let expected = &item[*wire];
                    let same = match cell {
                        AnyValue::Null => expected.is_null(),
                        AnyValue::String(v) => expected.as_str() == Some(v),
                        AnyValue::Int32(v) => expected.as_i64() == Some(v as i64),
                        AnyValue::Float64(v) => expected.as_f64() == Some(v),
                        AnyValue::Boolean(v) => expected.as_bool() == Some(v),
                        other => panic!("unexpected cell {other:?}"),
                    };
                    assert!(same, "{wire}: {cell:?} vs {expected}");
                }
            }
        }
    }

    #[test]
    fn every_tabular_format_is_written_and_an_empty_page_too() {
        let s = table();
        for rows in [vec![0u32, 1, 2], vec![]] {
            let csv = table_rows(&s, &rows, encode::ECO_SCORE_ITEM, Format::Csv).unwrap();
            let text = String::from_utf8(csv).unwrap();
            assert!(text.starts_with("vehicleId,marca,modelo,versao,ano,categoria,ecoScore,faixa\n"), "{text}");
            assert_eq!(text.lines().count(), rows.len() + 1);
            let parquet = table_rows(&s, &rows, encode::ECO_SCORE_ITEM, Format::Parquet).unwrap();
            assert_eq!(&parquet[..4], b"PAR1");
            let back = ParquetReader::new(std::io::Cursor::new(parquet)).finish().unwrap();
            assert_eq!(back.height(), rows.len());
            let arrow = table_rows(&s, &rows, encode::ECO_SCORE_ITEM, Format::Arrow).unwrap();
            let back = IpcStreamReader::new(std::io::Cursor::new(arrow)).finish().unwrap();
            assert_eq!(back.height(), rows.len());
            assert_eq!(back.get_column_names().len(), 8);
        }
    }
}
