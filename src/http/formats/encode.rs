//! Lists written to JSON straight from the table's columns: an operation answers with the rows
//! it selected (in order) and this encoder writes each row's fields under their wire names,
//! reading the columns by index. Rows are never materialised as structs on the way.
//!
//! Each field list mirrors the response schema of its operation (the structs the OpenAPI
//! document shows); a unit test checks that both give the same bytes.

use polars::prelude::*;

use crate::engine::table::Table;
use crate::engine::text_index::TextValues;

/// Where a field's value comes from.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// The vehicle id.
    Id,
    Text(&'static str),
    I32(&'static str),
    F64(&'static str),
    Bool(&'static str),
}

/// The fields of one item: wire name and source, in output order.
pub type Fields = &'static [(&'static str, Source)];

/// An item of `GET /catalog/vehicles` (schema `CatalogVehicle`).
pub const CATALOG_VEHICLE: Fields = &[
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
];

/// A ranking base item (schema `RankingItem`).
pub const RANKING_ITEM: Fields = &[
    ("vehicleId", Source::Id),
    ("marca", Source::Text("marca")),
    ("modelo", Source::Text("modelo")),
    ("versao", Source::Text("versao")),
    ("ano", Source::I32("ano")),
    ("categoria", Source::Text("categoria")),
    ("combustivelTipo", Source::Text("combustivel_tipo")),
    ("tipoPropulsao", Source::Text("tipo_propulsao")),
    ("transmissaoTipo", Source::Text("transmissao_tipo")),
    ("ecoScore", Source::F64("eco_score")),
    ("consumoReferencia", Source::F64("consumo_referencia")),
    ("co2ReferenciaGKm", Source::F64("co2_referencia_g_km")),
    ("autonomiaKm", Source::F64("autonomia_km")),
    ("eficienciaMediaReferencia", Source::F64("eficiencia_media_referencia")),
];

/// An item of `GET /insights/efficiency` (schema `EfficiencyItem`).
pub const EFFICIENCY_ITEM: Fields = &[
    ("vehicleId", Source::Id),
    ("marca", Source::Text("marca")),
    ("modelo", Source::Text("modelo")),
    ("versao", Source::Text("versao")),
    ("ano", Source::I32("ano")),
    ("categoria", Source::Text("categoria")),
    ("combustivelTipo", Source::Text("combustivel_tipo")),
    ("eficienciaMediaReferencia", Source::F64("eficiencia_media_referencia")),
    ("consumoReferencia", Source::F64("consumo_referencia")),
    ("autonomiaKm", Source::F64("autonomia_km")),
];

/// An item of `GET /insights/eco-scores` (schema `EcoScoreItem`).
pub const ECO_SCORE_ITEM: Fields = &[
    ("vehicleId", Source::Id),
    ("marca", Source::Text("marca")),
    ("modelo", Source::Text("modelo")),
    ("versao", Source::Text("versao")),
    ("ano", Source::I32("ano")),
    ("categoria", Source::Text("categoria")),
    ("ecoScore", Source::F64("eco_score")),
    ("faixa", Source::Text("eco_faixa")),
];

/// A field resolved against one table.
enum Resolved {
    Id,
    Text(TextValues),
    I32(Int32Chunked),
    F64(Float64Chunked),
    Bool(BooleanChunked),
}

/// Writes rows of one table as JSON objects with a given field list.
pub struct RowWriter<'a> {
    table: &'a Table,
    fields: Vec<(&'static str, Resolved)>,
}

impl<'a> RowWriter<'a> {
    pub fn new(table: &'a Table, fields: &[(&'static str, Source)]) -> PolarsResult<RowWriter<'a>> {
        let column = |name: &str| table.frame().column(name);
        let fields = fields
            .iter()
            .map(|(wire, source)| {
                let resolved = match *source {
                    Source::Id => Resolved::Id,
                    Source::Text(c) => Resolved::Text(TextValues::of(column(c)?)?),
                    Source::I32(c) => Resolved::I32(column(c)?.cast(&DataType::Int32)?.i32()?.clone()),
                    Source::F64(c) => Resolved::F64(column(c)?.cast(&DataType::Float64)?.f64()?.clone()),
                    Source::Bool(c) => Resolved::Bool(column(c)?.bool()?.clone()),
                };
                Ok((*wire, resolved))
            })
            .collect::<PolarsResult<_>>()?;
        Ok(RowWriter { table, fields })
    }

    /// One row as a JSON object.
    pub fn write(&self, out: &mut Vec<u8>, row: u32) {
        let i = row as usize;
        out.push(b'{');
        for (n, (wire, value)) in self.fields.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            string(out, wire);
            out.push(b':');
            match value {
                Resolved::Id => {
                    out.push(b'"');
                    let mut buf = uuid::Uuid::encode_buffer();
                    out.extend_from_slice(self.table.id_at(row).hyphenated().encode_lower(&mut buf).as_bytes());
                    out.push(b'"');
                }
                Resolved::Text(t) => match t.get(i) {
                    Some(s) => string(out, s),
                    None => null(out),
                },
                Resolved::I32(c) => match c.get(i) {
                    Some(v) => out.extend_from_slice(itoa(v).as_bytes()),
                    None => null(out),
                },
                Resolved::F64(c) => match c.get(i).filter(|v| v.is_finite()) {
                    // serde_json's own formatting, so the bytes equal the typed answers'.
                    Some(v) => {
                        let _ = serde_json::to_writer(&mut *out, &v);
                    }
                    None => null(out),
                },
                Resolved::Bool(c) => match c.get(i) {
                    Some(true) => out.extend_from_slice(b"true"),
                    Some(false) => out.extend_from_slice(b"false"),
                    None => null(out),
                },
            }
        }
        out.push(b'}');
    }

    /// Rows as a JSON array.
    pub fn write_array(&self, out: &mut Vec<u8>, rows: &[u32]) {
        out.push(b'[');
        for (n, row) in rows.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            self.write(out, *row);
        }
        out.push(b']');
    }
}

/// `{"items":[...]}` of rows with a field list.
pub fn items(table: &Table, rows: &[u32], fields: &[(&'static str, Source)]) -> PolarsResult<Vec<u8>> {
    let writer = RowWriter::new(table, fields)?;
    let mut out = Vec::with_capacity(64 + rows.len() * 320);
    out.extend_from_slice(br#"{"items":"#);
    writer.write_array(&mut out, rows);
    out.push(b'}');
    Ok(out)
}

fn null(out: &mut Vec<u8>) {
    out.extend_from_slice(b"null");
}

fn string(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

fn itoa(v: i32) -> String {
    v.to_string()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::engine::load::load_bytes;
    use crate::engine::views::{CostConfig, Views};
    use crate::http::wire::catalog::CatalogVehicle;
    use crate::http::wire::insights::{EcoScoreItem, EfficiencyItem};
    use crate::http::wire::rankings::RankingItem;

    #[test]
    fn rows_encode_exactly_like_the_response_schemas() {
        let mut df = crate::sample::generate_catalog(300, 9).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        let s = load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap();
        let encode = |fields: Fields, row: u32| {
            let mut out = Vec::new();
            RowWriter::new(&s, fields).unwrap().write(&mut out, row);
            String::from_utf8(out).unwrap()
        };
        let mut nulls = 0;
        for row in 0..s.len() as u32 {
            let v = s.vehicle_at(row);
            nulls += v.motor.is_none() as usize + v.eco_score.is_none() as usize;
            assert_eq!(encode(CATALOG_VEHICLE, row), serde_json::to_string(&CatalogVehicle::from(&v)).unwrap());
            assert_eq!(encode(RANKING_ITEM, row), serde_json::to_string(&RankingItem::from(&v)).unwrap());
            if let (Some(e), Some(f)) = (v.eco_score, v.eco_faixa.clone()) {
                let item = EcoScoreItem {
                    vehicle_id: v.id,
                    marca: v.marca.clone(),
                    modelo: v.modelo.clone(),
                    versao: v.versao.clone(),
                    ano: v.ano,
                    categoria: v.categoria.clone(),
                    eco_score: e,
                    faixa: f,
                };
                assert_eq!(encode(ECO_SCORE_ITEM, row), serde_json::to_string(&item).unwrap());
            }
            if let Some(e) = v.eficiencia_media_referencia {
                let item = EfficiencyItem {
                    vehicle_id: v.id,
                    marca: v.marca.clone(),
                    modelo: v.modelo.clone(),
                    versao: v.versao.clone(),
                    ano: v.ano,
                    categoria: v.categoria.clone(),
                    combustivel_tipo: v.combustivel_tipo.clone(),
                    eficiencia_media_referencia: e,
                    consumo_referencia: v.consumo_referencia,
                    autonomia_km: v.autonomia_km,
                };
                assert_eq!(encode(EFFICIENCY_ITEM, row), serde_json::to_string(&item).unwrap());
            }
        }
        assert!(nulls > 0, "the sample should exercise null fields");
        let listed = items(&s, &[2, 0], RANKING_ITEM).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&listed).unwrap();
        assert_eq!(value["items"].as_array().unwrap().len(), 2);
    }
}
