//! Published numbers at export precision: inputs with 3–4 decimals (as any export converted from
//! other units has) and exact decimal ties reached through binary noise, checked against the
//! contract's formulas computed here (raw inputs, half to even on the decimal value). Also the
//! types analysts' tools write: dictionary-encoded text, Decimal numbers, narrow integers.

use std::collections::BTreeMap;

use polars::prelude::*;
use serde_json::Value;

use crate::common::*;
use crate::expected;

fn scored(n: u32, marca: &str, categoria: &str, mj: Option<f64>, co2: Option<f64>) -> Row {
    let mut r = Row::new(n, marca, &format!("Modelo {n:02}"), 2018 + (n % 5) as i32, categoria, "Gasolina");
    r.consumo_energetico_mj_km = mj;
    r.co2_fossil_g_km = co2;
    // The Canadian-style rows carry no pollutant data: weights 0.45 and 0.35 renormalised.
    r.nmhc_g_km = None;
    r.co_g_km = None;
    r.nox_g_km = None;
    r
}

/// 17 scored vehicles and one without a score:
/// - 1: 1.4022 MJ/km, 96 g/km → exact 60.2375 → 60.2 (60.3 if the score read the consumption
///   already rounded to 1.40);
/// - 2: 2.052 / 138 → exact 39.35 → 39.4; 6: CO2 only, 151.5 → 39.4: a tie on the published
///   value although 6 is higher before rounding, so 2 ranks first (id);
/// - 3: 1.71 / 117 → exact 50.15 → 50.2;
/// - 4: CO2 only, 142 → 43.2; 5: 1.9152 / 132 → exact 43.25 → 43.2: tie, 4 first (id);
/// - 7: CO2 only, 99.875 → exact 60.05 → 60.0: band "40-60" and "Regular", not "60-80";
/// - 8 and 9 (brand "Media"): consumo 2.1349 and 2.1351 publish 2.13 and 2.14, whose mean is the
///   exact tie 2.135 → 2.14 (the double nearest 2.135 lies below it);
/// - 10–17: inputs with 3–4 decimals, pollutants on some; 18: no energy nor CO2 (no score).
///   N = 17 scored vehicles: percentil = 100 × (17 − global) / 16 ends in .25 or .75 for every
///   even global position (6.25 → 6.2, 18.75 → 18.8).
pub fn fixture() -> Vec<Row> {
    let mut rows = vec![
        scored(1, "Alfa", "Compacto", Some(1.4022), Some(96.0)),
        scored(2, "Alfa", "Compacto", Some(2.052), Some(138.0)),
        scored(3, "Beta", "Sedan", Some(1.71), Some(117.0)),
        scored(4, "Beta", "Sedan", None, Some(142.0)),
        scored(5, "Gama", "Sedan", Some(1.9152), Some(132.0)),
        scored(6, "Gama", "Compacto", None, Some(151.5)),
        scored(7, "Gama", "SUV", None, Some(99.875)),
        scored(8, "Media", "SUV", Some(2.1349), Some(120.125)),
        scored(9, "Media", "SUV", Some(2.1351), Some(140.375)),
    ];
    for n in 10..=17u32 {
        let k = (n - 10) as f64;
        let mut r = scored(n, if n % 2 == 0 { "Delta" } else { "Épsilon" }, "Picape", Some(1.2345 + 0.1731 * k), None);
        r.co2_fossil_g_km = Some(88.125 + 7.3125 * k);
        r.eficiencia_cidade_km_l = Some(10.2345 + 0.4321 * k);
        r.eficiencia_estrada_km_l = Some(12.0125 + 0.3333 * k);
        r.tanque_l = Some(47.5 + k);
        if n % 3 == 0 {
            r.nmhc_g_km = Some(0.0123);
            r.co_g_km = Some(0.4567);
            r.nox_g_km = Some(0.0234);
        }
        rows.push(r);
    }
    rows.push(scored(18, "Alfa", "Compacto", None, None));
    rows
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// Competition positions (best = 1, ties share the lowest) over the published scores.
fn positions(rows: &[Row]) -> BTreeMap<String, (u64, f64)> {
    let scores: Vec<(String, f64)> =
        rows.iter().filter_map(|r| expected::eco_score(r).map(|s| (r.id.clone().unwrap(), s))).collect();
    let n = scores.len() as f64;
    scores
        .iter()
        .map(|(id, s)| {
            let global = 1 + scores.iter().filter(|(_, o)| o > s).count() as u64;
            let pct = if n == 1.0 { 100.0 } else { round(100.0 * (n - global as f64) / (n - 1.0), 1) };
            (id.clone(), (global, pct))
        })
        .collect()
}

#[test]
fn fixture_is_as_designed() {
    let rows = fixture();
    let exact = |n: usize| expected::eco_score_raw(&rows[n - 1]).unwrap();
    // The exact values are decimal ties; the doubles computed land on either side of them.
    for (n, tie, published) in [(2, 39.35, 39.4), (3, 50.15, 50.2), (5, 43.25, 43.2), (7, 60.05, 60.0)] {
        assert!((exact(n) - tie).abs() < 1e-9, "row {n}: {}", exact(n));
        assert_eq!(expected::eco_score(&rows[n - 1]), Some(published), "row {n}");
    }
    assert!((exact(1) - 60.2375).abs() < 1e-9);
    assert_eq!(expected::eco_score(&rows[0]), Some(60.2));
    assert!(exact(6) > exact(2) && exact(5) > exact(4), "raw order differs from the published tie");
    assert_eq!(expected::eco_score(&rows[3]), expected::eco_score(&rows[4]));
    assert_eq!(expected::eco_score(&rows[1]), expected::eco_score(&rows[5]));
    // The by-brand mean of "Media" is a decimal tie that the double puts below.
    let (a, b) = (expected::consumo(&rows[7]).unwrap(), expected::consumo(&rows[8]).unwrap());
    assert_eq!((a, b), (2.13, 2.14));
    assert_eq!(((a + b) / 2.0 * 100.0).round_ties_even() / 100.0, 2.13, "binary rounding alone gets it wrong");
    assert_eq!(round((a + b) / 2.0, 2), 2.14);
    let pos = positions(&rows);
    assert_eq!(pos.len(), 17);
    assert!(pos.values().any(|(_, p)| *p == 6.2 || *p == 18.8 || *p == 31.2 || *p == 43.8));
}

#[test]
fn published_numbers_follow_the_contract_at_export_precision() {
    let rows = fixture();
    let app = TestApp::with_rows(&rows);

    // Every per-vehicle number: score, band, metrics, cost, positions and percentile.
    let pos = positions(&rows);
    for r in &rows {
        let id = r.id.clone().unwrap();
        let d = app.data(&format!("/vehicles/{id}/eco-score"));
        assert_eq!(num(&d["eco_score"]), expected::eco_score(r), "vehicle {id}: {d}");
        let faixa = expected::eco_score(r).map(expected::faixa);
        assert_eq!(d["faixa"].as_str(), faixa, "vehicle {id}: {d}");
        let s = app.data(&format!("/vehicles/{id}/summary"));
        let c = &s["summary"]["consumo"];
        assert_eq!(num(&c["eficiencia_media_referencia"]), expected::eficiencia(r), "{id}: {c}");
        assert_eq!(num(&c["autonomia_km"]), expected::autonomia(r), "{id}: {c}");
        assert_eq!(num(&c["custo_anual_estimado"]), expected::custo(r), "{id}: {c}");
        let p = app.data(&format!("/vehicles/{id}/ranking-positions"));
        match pos.get(&id) {
            Some((global, pct)) => {
                assert_eq!(p["global"].as_u64(), Some(*global), "{id}: {p}");
                assert_eq!(num(&p["percentil"]), Some(*pct), "{id}: {p}");
            }
            None => assert!(p["global"].is_null() && p["percentil"].is_null(), "{p}"),
        }
    }
    assert_eq!(app.data(&format!("/vehicles/{}/eco-score", uid(1)))["eco_score"], 60.2);
    assert_eq!(app.data(&format!("/vehicles/{}/eco-score", uid(7)))["faixa"], "Regular");

    // Ranking order on the published values: ties (2 and 6, 4 and 5) broken by id.
    let mut want: Vec<(f64, String)> =
        rows.iter().filter_map(|r| expected::eco_score(r).map(|s| (s, r.id.clone().unwrap()))).collect();
    want.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
    let got = app.data("/rankings/custom?metric=eco_score&top=20");
    let got: Vec<(f64, String)> = got["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["ecoScore"].as_f64().unwrap(), v["vehicleId"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(got, want);
    let order: Vec<&str> = got.iter().map(|(_, id)| id.as_str()).collect();
    let at = |n: u32| order.iter().position(|id| *id == uid(n)).unwrap();
    assert_eq!((at(4) + 1, at(2) + 1), (at(5), at(6)), "published ties keep id order");

    // Band counts over the published scores (60.05 → 60.0 is in "40-60").
    let summary = app.data("/insights/summary");
    let mut counts = [0u64; 4];
    for s in rows.iter().filter_map(expected::eco_score) {
        let band = if s <= 40.0 {
            0
        } else if s <= 60.0 {
            1
        } else if s <= 80.0 {
            2
        } else {
            3
        };
        counts[band] += 1;
    }
    let got: Vec<u64> =
        summary["distribuicaoEcoScore"].as_array().unwrap().iter().map(|b| b["total"].as_u64().unwrap()).collect();
    assert_eq!(got, counts.to_vec());
    let mean = |v: Vec<f64>| round(v.iter().sum::<f64>() / v.len() as f64, 2);
    let all_scores: Vec<f64> = rows.iter().filter_map(expected::eco_score).collect();
    assert_eq!(num(&summary["mediasGerais"]["ecoScoreMedio"]), Some(mean(all_scores)));

    // By-brand means of the published values, the "Media" tie included.
    let brands = app.data("/aggregations/by-brand");
    for item in brands["items"].as_array().unwrap() {
        let brand = item["grupo"].as_str().unwrap();
        let members: Vec<&Row> = rows.iter().filter(|r| r.marca == brand).collect();
        let consumo: Vec<f64> = members.iter().filter_map(|r| expected::consumo(r)).collect();
        let score: Vec<f64> = members.iter().filter_map(|r| expected::eco_score(r)).collect();
        assert_eq!(num(&item["consumoMedio"]), (!consumo.is_empty()).then(|| mean(consumo)), "{item}");
        assert_eq!(num(&item["ecoScoreMedio"]), (!score.is_empty()).then(|| mean(score)), "{item}");
    }
    let media = brands["items"].as_array().unwrap().iter().find(|i| i["grupo"] == "Media").unwrap().clone();
    assert_eq!(media["consumoMedio"], 2.14);
}

/// The fixture as analysts' tools write it: text dictionary-encoded (Categorical), numbers as
/// Decimal, the year as a 16-bit integer and the gear count as a float.
fn as_tools_write_it(df: DataFrame) -> DataFrame {
    let mut df = df;
    let names: Vec<String> = df.get_column_names().iter().map(|n| n.to_string()).collect();
    for name in names {
        let column = df.column(&name).unwrap().clone();
        let cast = match column.dtype() {
            DataType::String if name != "id" => column.cast(&DataType::from_categories(Categories::global())),
            DataType::Float64 => column.cast(&DataType::Decimal(12, 4)),
            DataType::Int32 if name == "ano" => column.cast(&DataType::Int16),
            DataType::Int32 => column.cast(&DataType::Float64),
            _ => continue,
        };
        df.with_column(cast.unwrap()).unwrap();
    }
    df
}

#[test]
fn dictionary_and_decimal_exports_serve_what_the_plain_file_serves() {
    let rows = fixture();
    let plain = TestApp::with_rows(&rows);
    let dir = temp_dir("typed");
    let data = dir.join("catalog.parquet");
    let mut typed = as_tools_write_it(frame(&rows));
    assert!(typed.column("marca").unwrap().dtype().is_categorical());
    assert!(typed.column("co2_fossil_g_km").unwrap().dtype().is_decimal());
    write_frame(&mut typed, &data);
    let out = std::process::Command::new(binary()).arg("validate").arg(&data).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let app = TestApp::serve(&dir, &data, &[]);
    for path in [
        "/catalog/vehicles?page_size=100",
        "/catalog/vehicles?marca=epsilon",
        "/rankings/custom?top=20",
        "/rankings/by-category?metric=consumo",
        "/insights/summary",
        "/insights/emissions",
        "/aggregations/by-brand",
        &format!("/vehicles/{}/summary", uid(1)),
        &format!("/vehicles/{}/ranking-positions", uid(5)),
    ] {
        assert_eq!(app.data(path), plain.data(path), "{path}");
    }
}

#[test]
fn an_infinite_value_is_refused_naming_column_and_row() {
    let mut rows = fixture();
    rows[2].co2_fossil_g_km = Some(f64::INFINITY);
    rows[4].eficiencia_cidade_km_l = Some(f64::NEG_INFINITY);
    let dir = temp_dir("inf");
    let data = dir.join("catalog.parquet");
    write_rows(&rows, &data);
    let out = std::process::Command::new(binary()).arg("validate").arg(&data).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("column 'co2_fossil_g_km', row 3: infinite value"), "{stderr}");
    assert!(stderr.contains("column 'eficiencia_cidade_km_l', row 5: infinite value"), "{stderr}");
    let log = refused_at_start(&data);
    assert!(log.contains("column 'co2_fossil_g_km', row 3: infinite value"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
