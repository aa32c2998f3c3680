//! The optional `nmog_nox_g_km` input column (NMOG+NOx together, as the tables from PROCONVE L7
//! on publish them) and the pollutants index that falls back to it (API-CONTRACT §1, §2): the
//! scores are computed here from the contract's formula, never read back from the views.

use polars::prelude::*;
use serde_json::{json, Value};

use crate::common::*;
use crate::expected;

/// The contract's limits: NMHC, CO, NOx when the three are present; PROCONVE L7 otherwise.
const NMHC: f64 = 0.05;
const CO: f64 = 1.3;
const NOX: f64 = 0.08;
/// PROCONVE L7 limits (`[limites_poluentes_l7]` as shipped).
const L7: Limits7 = Limits7 { nmog_nox: 0.08, co: 1.0 };

#[derive(Debug, Clone, Copy)]
struct Limits7 {
    nmog_nox: f64,
    co: f64,
}

fn clamp100(x: f64) -> f64 {
    x.clamp(0.0, 100.0)
}

/// indice_poluentes of a row whose NMOG+NOx is `nmog` (before the score is rounded).
fn indice_poluentes(r: &Row, nmog: Option<f64>, l7: Limits7) -> Option<f64> {
    match (r.nmhc_g_km, r.co_g_km, r.nox_g_km) {
        (Some(a), Some(b), Some(c)) => Some(clamp100(100.0 * (1.0 - (a / NMHC + b / CO + c / NOX) / 3.0))),
        (_, co, _) => match (nmog, co) {
            (Some(m), Some(b)) => Some(clamp100(100.0 * (1.0 - (m / l7.nmog_nox + b / l7.co) / 2.0))),
            _ => None,
        },
    }
}

/// The published eco score: indices from the unrounded inputs, weights 0.45/0.35/0.20
/// renormalised over the indices present, null without energy and CO2; one decimal, half to even.
fn eco_score(r: &Row, nmog: Option<f64>, l7: Limits7) -> Option<f64> {
    let energia = r.consumo_energetico_mj_km.map(|c| clamp100(100.0 * (3.0 - c) / 2.7));
    let co2 = r.co2_fossil_g_km.map(|c| clamp100(100.0 * (250.0 - c) / 250.0));
    if energia.is_none() && co2.is_none() {
        return None;
    }
    let (mut num, mut den) = (0.0, 0.0);
    for (index, weight) in [(energia, 0.45), (co2, 0.35), (indice_poluentes(r, nmog, l7), 0.20)] {
        if let Some(i) = index {
            num += weight * i;
            den += weight;
        }
    }
    Some(round(num / den, 1))
}

fn row(n: u32, mj: Option<f64>, co2: Option<f64>, pollutants: (Option<f64>, Option<f64>, Option<f64>)) -> Row {
    let mut r = Row::new(n, "Marca", &format!("Modelo {n:02}"), 2022, "Compacto", "Flex");
    r.consumo_energetico_mj_km = mj;
    r.co2_fossil_g_km = co2;
    (r.nmhc_g_km, r.co_g_km, r.nox_g_km) = pollutants;
    r
}

/// The rows and their NMOG+NOx:
/// 1. NMHC, CO, NOx only: the three-pollutant formula;
/// 2. NMOG+NOx and CO only: the PROCONVE L7 formula;
/// 3. NMOG+NOx without CO: no pollutants index, weights 0.45 and 0.35 renormalised;
/// 4. both sets: the three-pollutant formula wins;
/// 5. NMHC and CO but no NOx, with NMOG+NOx: the L7 formula;
/// 6. NMOG+NOx and CO far above the limits: the L7 index clamped to 0;
/// 7. no pollutant at all: no index;
/// 8. NMOG+NOx and CO but neither energy nor CO2: no score;
/// 9. NMOG+NOx of 0 and CO: an index near 100 (0 is a value, not a missing one).
fn fixture() -> Vec<(Row, Option<f64>)> {
    vec![
        (row(1, Some(1.4321), Some(104.5), (Some(0.012), Some(0.31), Some(0.021))), None),
        (row(2, Some(1.4321), Some(104.5), (None, Some(0.42), None)), Some(0.0312)),
        (row(3, Some(1.6187), Some(121.25), (None, None, None)), Some(0.0312)),
        (row(4, Some(1.2), Some(90.0), (Some(0.015), Some(0.5), Some(0.02))), Some(0.2)),
        (row(5, Some(1.9), Some(143.0), (Some(0.01), Some(0.2), None)), Some(0.0475)),
        (row(6, Some(2.2), Some(160.0), (None, Some(1.2), None)), Some(0.5)),
        (row(7, Some(2.05), Some(150.0), (None, None, None)), None),
        (row(8, None, None, (None, Some(0.3), None)), Some(0.02)),
        (row(9, Some(0.9), Some(0.0), (None, Some(0.05), None)), Some(0.0)),
    ]
}

fn frame_with_nmog(cases: &[(Row, Option<f64>)]) -> DataFrame {
    let rows: Vec<Row> = cases.iter().map(|(r, _)| r.clone()).collect();
    let mut df = frame(&rows);
    let nmog: Vec<Option<f64>> = cases.iter().map(|(_, m)| *m).collect();
    df.with_column(Column::new("nmog_nox_g_km".into(), nmog)).unwrap();
    df
}

fn serve_frame(mut df: DataFrame, tag: &str, extra: &[&str]) -> TestApp {
    let dir = temp_dir(tag);
    let data = dir.join("catalog.parquet");
    write_frame(&mut df, &data);
    TestApp::serve(&dir, &data, extra)
}

fn sql(app: &TestApp, query: &str) -> Vec<Value> {
    let (status, body) = app.post_json("/sql", &json!({ "sql": query }).to_string());
    assert_eq!(status, 200, "{query}: {body}");
    body["data"]["data"].as_array().cloned().unwrap()
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

#[test]
fn the_fixture_tells_the_formulas_apart() {
    let cases = fixture();
    let ix = |k: usize| indice_poluentes(&cases[k].0, cases[k].1, L7);
    // 2: mean(0.0312 / 0.08, 0.42 / 1.0) = 0.405 → 59.5.
    assert!((ix(1).unwrap() - 59.5).abs() < 1e-9, "{:?}", ix(1));
    assert_eq!((ix(2), ix(6)), (None, None));
    // 4: the L7 formula would give another index (and score) than the three-pollutant one.
    let (three, four) = (&cases[3].0, cases[3].1.unwrap());
    let l7_alone = clamp100(100.0 * (1.0 - (four / 0.08 + three.co_g_km.unwrap() / 1.0) / 2.0));
    assert!((ix(3).unwrap() - l7_alone).abs() > 10.0);
    assert_eq!(ix(5), Some(0.0));
    assert!((ix(8).unwrap() - 97.5).abs() < 1e-9);
    // With the column left out, the rows with NMOG+NOx score differently.
    for k in [1, 4, 5, 8] {
        assert_ne!(eco_score(&cases[k].0, cases[k].1, L7), eco_score(&cases[k].0, None, L7), "row {}", k + 1);
    }
    assert_eq!(eco_score(&cases[7].0, cases[7].1, L7), None);
    // The common model (three pollutants only) agrees where NMOG+NOx plays no part.
    for (r, _) in &cases {
        assert_eq!(eco_score(r, None, L7), expected::eco_score(r), "{}", r.versao);
    }
}

#[test]
fn scores_use_nmog_nox_when_nmhc_or_nox_is_missing() {
    let cases = fixture();
    let app = serve_frame(frame_with_nmog(&cases), "nmog", &[]);
    for (r, nmog) in &cases {
        let id = r.id.clone().unwrap();
        let want = eco_score(r, *nmog, L7);
        let d = app.data(&format!("/vehicles/{id}/eco-score"));
        assert_eq!(num(&d["eco_score"]), want, "{id}: {d}");
        assert_eq!(d["faixa"], want.map_or(Value::Null, |s| json!(expected::faixa(s))), "{id}");
        // The input the index used is published beside the other pollutants, nulls kept.
        let s = app.data(&format!("/vehicles/{id}/summary"));
        let emissoes = &s["summary"]["emissoes"];
        assert_eq!(num(&emissoes["nmog_nox_g_km"]), *nmog, "{id}: {emissoes}");
        assert!(emissoes.get("nmog_nox_g_km").is_some(), "the field is there even when null");
        assert_eq!(num(&emissoes["nmhc_g_km"]), r.nmhc_g_km);
    }

    // The SQL doors: the catalog table carries the column, the view the index it fed.
    let rows = sql(
        &app,
        "SELECT c.id, c.nmog_nox_g_km, v.indice_poluentes, v.eco_score \
         FROM catalog c JOIN vw_eco_score v ON v.id = c.id ORDER BY c.id",
    );
    assert_eq!(rows.len(), cases.len());
    for ((r, nmog), got) in cases.iter().zip(&rows) {
        assert_eq!(got["id"], json!(r.id.clone().unwrap()));
        assert_eq!(num(&got["nmog_nox_g_km"]), *nmog, "{got}");
        match (num(&got["indice_poluentes"]), indice_poluentes(r, *nmog, L7)) {
            (Some(a), Some(b)) => assert!((a - b).abs() < 1e-9, "{got}: {b}"),
            (a, b) => assert_eq!(a, b, "{got}"),
        }
        assert_eq!(num(&got["eco_score"]), eco_score(r, *nmog, L7), "{got}");
    }

    // The export carries the column with the other inputs.
    let csv = app.get_req("/catalog/export?format=csv").send();
    assert_eq!(csv.status, 200, "{}", csv.text());
    let text = csv.text();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name}: {header:?}"));
    assert_eq!(at("nmog_nox_g_km"), at("nox_g_km") + 1, "beside the other pollutants");
    let exported: Vec<(String, String)> = lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (cells[at("id")].to_string(), cells[at("nmog_nox_g_km")].to_string())
        })
        .collect();
    assert_eq!(exported.len(), cases.len());
    for (r, nmog) in &cases {
        let (_, cell) = exported.iter().find(|(id, _)| Some(id) == r.id.as_ref()).unwrap();
        match nmog {
            Some(m) => assert_eq!(cell.parse::<f64>().unwrap(), *m, "{}", r.versao),
            None => assert_eq!(cell, "", "{}", r.versao),
        }
    }
}

#[test]
fn an_export_without_the_column_is_valid_and_scores_as_before() {
    let cases = fixture();
    let rows: Vec<Row> = cases.iter().map(|(r, _)| r.clone()).collect();
    let dir = temp_dir("nmog-absent");
    let data = dir.join("catalog.parquet");
    write_rows(&rows, &data);
    let out = std::process::Command::new(binary()).arg("validate").arg(&data).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let app = TestApp::serve(&dir, &data, &[]);
    for r in &rows {
        let id = r.id.clone().unwrap();
        let d = app.data(&format!("/vehicles/{id}/eco-score"));
        assert_eq!(num(&d["eco_score"]), eco_score(r, None, L7), "{id}");
        assert_eq!(num(&d["eco_score"]), expected::eco_score(r), "{id}: the score of an export before the column");
        let s = app.data(&format!("/vehicles/{id}/summary"));
        assert_eq!(s["summary"]["emissoes"]["nmog_nox_g_km"], Value::Null, "{id}");
    }
    let nulls = sql(&app, "SELECT count(*) AS n FROM catalog WHERE nmog_nox_g_km IS NULL");
    assert_eq!(nulls[0]["n"], json!(rows.len()));
}

#[test]
fn a_wrong_typed_or_infinite_nmog_nox_column_is_refused_naming_it() {
    let cases = fixture();
    let dir = temp_dir("nmog-invalid");
    let mut text = frame_with_nmog(&cases);
    let as_text: Vec<Option<String>> = cases.iter().map(|(_, m)| m.map(|m| m.to_string())).collect();
    text.with_column(Column::new("nmog_nox_g_km".into(), as_text)).unwrap();
    let mut infinite = frame_with_nmog(&cases);
    let mut values: Vec<Option<f64>> = cases.iter().map(|(_, m)| *m).collect();
    values[2] = Some(f64::INFINITY);
    infinite.with_column(Column::new("nmog_nox_g_km".into(), values)).unwrap();
    let refused = [
        ("text", text, "column 'nmog_nox_g_km': expected type float, found str"),
        ("infinite", infinite, "column 'nmog_nox_g_km', row 3: infinite value"),
    ];
    for (name, mut df, needle) in refused {
        let path = dir.join(format!("{name}.parquet"));
        write_frame(&mut df, &path);
        let out = std::process::Command::new(binary()).arg("validate").arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(needle), "{name}: {stderr}");
        let reason = TestApp::refused_reason(&dir, &path);
        assert!(reason.contains(needle), "{name}: {reason}");
    }
    // Numbers as analysts' tools write them are accepted: Decimal, 32-bit floats.
    let mut decimal = frame_with_nmog(&cases);
    let column = decimal.column("nmog_nox_g_km").unwrap().cast(&DataType::Decimal(10, 4)).unwrap();
    decimal.with_column(column).unwrap();
    let mut narrow = frame_with_nmog(&cases);
    let column = narrow.column("nmog_nox_g_km").unwrap().cast(&DataType::Float32).unwrap();
    narrow.with_column(column).unwrap();
    for (name, mut df) in [("decimal", decimal), ("float32", narrow)] {
        let path = dir.join(format!("{name}.parquet"));
        write_frame(&mut df, &path);
        let out = std::process::Command::new(binary()).arg("validate").arg(&path).output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn methodology_publishes_the_l7_limits_and_the_views_read_them() {
    let cases = fixture();
    let app = serve_frame(frame_with_nmog(&cases), "nmog-methodology", &[]);
    let m = app.data("/methodology");
    let eco = &m["eco_score"];
    assert_eq!(eco["limites_poluentes"], json!({"nmhc_g_km": 0.05, "co_g_km": 1.3, "nox_g_km": 0.08}));
    assert_eq!(eco["limites_poluentes_l7"], json!({"nmog_nox_g_km": 0.08, "co_g_km": 1.0}));
    let indices = eco["indices"].as_array().unwrap();
    let text = indices.iter().find(|i| i["nome"] == "indice_poluentes").unwrap()["descricao"].as_str().unwrap();
    for needle in
        ["nmhc_g_km / 0,05", "co_g_km / 1,3", "nox_g_km / 0,08", "nmog_nox_g_km / 0,08", "co_g_km / 1)", "PROCONVE L7"]
    {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    drop(app);

    // An analyst edits the L7 limits: /methodology and the scores follow the file.
    let dir = temp_dir("nmog-edited");
    let queries = copy_queries(&dir);
    let file = queries.join("parametros.toml");
    let shipped = std::fs::read_to_string(&file).unwrap();
    let edited = shipped.replacen("nmog_nox_g_km = 0.08", "nmog_nox_g_km = 0.06", 1).replacen(
        "co_g_km = 1.0",
        "co_g_km = 2.0",
        1,
    );
    assert_eq!(edited.matches("= 0.06").count() + edited.matches("= 2.0").count(), 2, "both limits edited");
    std::fs::write(&file, edited).unwrap();
    let data = dir.join("catalog.parquet");
    write_frame(&mut frame_with_nmog(&cases), &data);
    let app = TestApp::serve(&dir, &data, &["--queries", queries.to_str().unwrap()]);
    let edited_l7 = Limits7 { nmog_nox: 0.06, co: 2.0 };
    let eco = app.data("/methodology")["eco_score"].clone();
    assert_eq!(eco["limites_poluentes_l7"], json!({"nmog_nox_g_km": 0.06, "co_g_km": 2.0}));
    for (r, nmog) in &cases {
        let id = r.id.clone().unwrap();
        let got = num(&app.data(&format!("/vehicles/{id}/eco-score"))["eco_score"]);
        assert_eq!(got, eco_score(r, *nmog, edited_l7), "{id}");
    }
    let (r, nmog) = &cases[1];
    assert_ne!(eco_score(r, *nmog, edited_l7), eco_score(r, *nmog, L7), "the edit changes a score");
}
