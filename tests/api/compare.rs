//! POST /compare: winners, ties, null metrics, unknown ids and the overall score on one
//! fixture; content type, size and every malformed body.

use serde_json::{json, Value};

use crate::common::*;
use crate::vehicles::{custo, eco_score, eficiencia, faixa};

/// Rows with known metrics (eco, co2, efficiency, range):
/// 1 (71.1, 100, 13, 650), 2 (71.1, 100, 11, 550), 3 electric (96.7, 0, 37.5, 400),
/// 4 (null, null, 11, 880), 5 (everything null), 6 and 7 copies of 2, 9 (74.2, 90, 10, 500).
fn fixture() -> Vec<Row> {
    let mut one = Row::new(1, "Volkswagen", "Polo", 2021, "Compacto", "Gasolina");
    one.consumo_energetico_mj_km = Some(1.0);

    let copy_of_two = |n: u32| {
        let mut r = Row::new(n, "Chevrolet", "Onix", 2022, "Compacto", "Gasolina");
        r.consumo_energetico_mj_km = Some(1.0);
        r.eficiencia_cidade_km_l = Some(10.0);
        r.eficiencia_estrada_km_l = Some(12.0);
        r
    };

    let mut three = Row::new(3, "BYD", "Dolphin", 2024, "Compacto", "Elétrico");
    three.consumo_energetico_mj_km = Some(0.5);
    three.co2_fossil_g_km = Some(0.0);
    three.nmhc_g_km = Some(0.0);
    three.co_g_km = Some(0.0);
    three.nox_g_km = Some(0.0);
    three.eficiencia_cidade_km_l = Some(40.0);
    three.eficiencia_estrada_km_l = Some(35.0);
    three.autonomia_eletrica_km = Some(400.0);
    three.tanque_l = None;

    let mut four = Row::new(4, "Toyota", "Hilux", 2021, "Picape", "Diesel");
    four.consumo_energetico_mj_km = None;
    four.co2_fossil_g_km = None;
    four.eficiencia_cidade_km_l = Some(10.0);
    four.eficiencia_estrada_km_l = Some(12.0);
    four.tanque_l = Some(80.0);

    let mut five = Row::new(5, "Fiat", "Uno", 2010, "Compacto", "Gasolina");
    five.consumo_energetico_mj_km = None;
    five.co2_fossil_g_km = None;
    five.eficiencia_cidade_km_l = None;
    five.eficiencia_estrada_km_l = None;
    five.tanque_l = None;

    let mut nine = Row::new(9, "Hyundai", "HB20", 2023, "Compacto", "Gasolina");
    nine.consumo_energetico_mj_km = Some(0.9);
    nine.co2_fossil_g_km = Some(90.0);
    nine.eficiencia_cidade_km_l = Some(10.0);
    nine.eficiencia_estrada_km_l = Some(10.0);

    vec![one, copy_of_two(2), three, four, five, copy_of_two(6), copy_of_two(7), nine]
}

fn body(ns: &[u32]) -> String {
    let ids: Vec<String> = ns.iter().map(|n| uid(*n)).collect();
    json!({ "vehicle_ids": ids }).to_string()
}

fn uids(ns: &[u32]) -> Value {
    json!(ns.iter().map(|n| uid(*n)).collect::<Vec<_>>())
}

fn compare(app: &TestApp, ns: &[u32]) -> Value {
    let (status, res) = app.post_json("/compare", &body(ns));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["success"], true);
    res["data"]["data"].clone()
}

fn scores(d: &Value) -> Vec<(String, f64)> {
    d["summary"]["score_geral"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["vehicle_id"].as_str().unwrap().to_string(), s["score_geral_final"].as_f64().unwrap()))
        .collect()
}

fn winners(d: &Value, key: &str) -> Value {
    d["winner_by_criterion"][key].clone()
}

#[test]
fn fixture_metrics_are_as_designed() {
    let rows = fixture();
    let eco: Vec<Option<f64>> = rows.iter().map(eco_score).collect();
    assert_eq!(eco, vec![Some(71.1), Some(71.1), Some(96.7), None, None, Some(71.1), Some(71.1), Some(74.2)]);
    let efic: Vec<Option<f64>> = rows.iter().map(eficiencia).collect();
    assert_eq!(efic, vec![Some(13.0), Some(11.0), Some(37.5), Some(11.0), None, Some(11.0), Some(11.0), Some(10.0)]);
}

#[test]
fn comparisons() {
    let rows = fixture();
    let app = TestApp::with_rows(&rows);

    // 1, 2, 4: eco and co2 tied between 1 and 2 (4 has neither), 1 most efficient, 4 longest range.
    let d = compare(&app, &[1, 2, 4]);
    assert_eq!(
        d.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["vehicles", "criteria", "winner_by_criterion", "ties", "missing_data", "summary"]
    );
    assert_eq!(
        d["criteria"],
        json!([
            {"key": "eco_score", "direction": "max"},
            {"key": "co2_referencia_g_km", "direction": "min"},
            {"key": "eficiencia_media_referencia", "direction": "max"},
            {"key": "autonomia_km", "direction": "max"}
        ])
    );
    let first = &d["vehicles"][0];
    assert_eq!(first["vehicle_id"], uid(1));
    assert_eq!(first["eco_score"], 71.1);
    assert_eq!(first["eco_faixa"], faixa(71.1));
    assert_eq!(
        first["computed"],
        json!({
            "co2_referencia_g_km": 100.0, "eficiencia_media_referencia": 13.0, "autonomia_km": 650.0,
            "custo_anual_estimado": custo(&rows[0]).unwrap()
        })
    );
    let hilux = &d["vehicles"][2];
    assert_eq!(hilux["vehicle_id"], uid(4));
    assert!(hilux["eco_score"].is_null() && hilux["eco_faixa"].is_null(), "{hilux}");
    assert!(hilux["computed"]["co2_referencia_g_km"].is_null());
    assert_eq!(hilux["computed"]["autonomia_km"], 880.0);
    assert!(close(hilux["computed"]["custo_anual_estimado"].as_f64().unwrap(), custo(&rows[3]).unwrap()));
    assert_eq!(winners(&d, "eco_score"), uids(&[1, 2]));
    assert_eq!(winners(&d, "co2_referencia_g_km"), uids(&[1, 2]));
    assert_eq!(winners(&d, "eficiencia_media_referencia"), uids(&[1]));
    assert_eq!(winners(&d, "autonomia_km"), uids(&[4]));
    assert_eq!(
        d["ties"],
        json!([
            {"criterion": "eco_score", "vehicle_ids": uids(&[1, 2])},
            {"criterion": "co2_referencia_g_km", "vehicle_ids": uids(&[1, 2])}
        ])
    );
    assert_eq!(d["missing_data"], json!({"vehicles_not_found": []}));
    // Normalised (eco, co2, efficiency, range): 1 = (100, 100, 100, 100·(650−550)/(880−550)),
    // 2 = (100, 100, 0, 0), 4 = (0, 0, 0, 100): a null value counts 0.
    let expected = vec![(uid(1), round((300.0 + 100.0 * 100.0 / 330.0) / 4.0, 1)), (uid(2), 50.0), (uid(4), 25.0)];
    assert_eq!(scores(&d), expected);
    assert_eq!(expected[0].1, 82.6);
    assert_eq!(d["summary"]["vencedor_geral"], uid(1));

    // The electric one wins three criteria, 1 the range: 75 / 25; request order is kept.
    let d = compare(&app, &[3, 1]);
    assert_eq!(scores(&d), vec![(uid(3), 75.0), (uid(1), 25.0)]);
    assert_eq!(winners(&d, "co2_referencia_g_km"), uids(&[3]));
    assert_eq!(winners(&d, "autonomia_km"), uids(&[1]));
    assert_eq!(d["ties"], json!([]));
    assert_eq!(d["summary"]["vencedor_geral"], uid(3));
    assert_eq!(d["vehicles"][0]["eco_faixa"], "Excelente");

    // Two criteria each, 50 / 50: the higher eco score (9) wins although its id is larger.
    let d = compare(&app, &[1, 9]);
    assert_eq!(scores(&d), vec![(uid(1), 50.0), (uid(9), 50.0)]);
    assert_eq!(winners(&d, "eco_score"), uids(&[9]));
    assert_eq!(winners(&d, "eficiencia_media_referencia"), uids(&[1]));
    assert_eq!(d["summary"]["vencedor_geral"], uid(9));

    // Identical vehicles: every criterion tied, all-equal counts 100, the lowest id wins.
    let d = compare(&app, &[7, 6, 2]);
    for key in ["eco_score", "co2_referencia_g_km", "eficiencia_media_referencia", "autonomia_km"] {
        assert_eq!(winners(&d, key), uids(&[7, 6, 2]), "{key}");
    }
    assert_eq!(d["ties"].as_array().unwrap().len(), 4);
    assert_eq!(d["ties"][3], json!({"criterion": "autonomia_km", "vehicle_ids": uids(&[7, 6, 2])}));
    assert_eq!(scores(&d), vec![(uid(7), 100.0), (uid(6), 100.0), (uid(2), 100.0)]);
    assert_eq!(d["summary"]["vencedor_geral"], uid(2));

    // Null metrics: no eco or co2 value at all → empty winner lists; 4 alone has the others
    // (a single present value is "all equal" → 100).
    let d = compare(&app, &[4, 5]);
    assert_eq!(winners(&d, "eco_score"), json!([]));
    assert_eq!(winners(&d, "co2_referencia_g_km"), json!([]));
    assert_eq!(winners(&d, "eficiencia_media_referencia"), uids(&[4]));
    assert_eq!(winners(&d, "autonomia_km"), uids(&[4]));
    assert_eq!(d["ties"], json!([]));
    assert_eq!(scores(&d), vec![(uid(4), 50.0), (uid(5), 0.0)]);
    assert_eq!(d["summary"]["vencedor_geral"], uid(4));
    let uno = &d["vehicles"][1];
    for field in ["co2_referencia_g_km", "eficiencia_media_referencia", "autonomia_km", "custo_anual_estimado"] {
        assert!(uno["computed"][field].is_null(), "{field}: {uno}");
    }

    // Unknown ids are reported; the rest are still compared (four ids in all).
    let d = compare(&app, &[1, 998, 3, 999]);
    let found: Vec<&Value> = d["vehicles"].as_array().unwrap().iter().map(|v| &v["vehicle_id"]).collect();
    assert_eq!(found, vec![&json!(uid(1)), &json!(uid(3))]);
    assert_eq!(d["missing_data"]["vehicles_not_found"], uids(&[998, 999]));
    assert_eq!(scores(&d), vec![(uid(1), 25.0), (uid(3), 75.0)]);
    assert_eq!(d["summary"]["vencedor_geral"], uid(3));

    // Only unknown ids: nothing compared, no winner.
    let d = compare(&app, &[998, 999]);
    assert_eq!(d["vehicles"], json!([]));
    assert_eq!(d["missing_data"]["vehicles_not_found"], uids(&[998, 999]));
    for key in ["eco_score", "co2_referencia_g_km", "eficiencia_media_referencia", "autonomia_km"] {
        assert_eq!(winners(&d, key), json!([]), "{key}");
    }
    assert_eq!(d["ties"], json!([]));
    assert_eq!(d["summary"], json!({"score_geral": [], "vencedor_geral": null}));
    assert_eq!(d["criteria"].as_array().unwrap().len(), 4);

    // Ids are case-insensitive and answered in canonical form.
    let (status, res) = app.post_json("/compare", &json!({"vehicle_ids": [uid(1).to_uppercase(), uid(3)]}).to_string());
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["data"]["vehicles"][0]["vehicle_id"], uid(1));
    assert!(res["data"]["meta"].get("filters_applied").is_none());

    content_type_and_size(&app);
    malformed_bodies(&app);
}

fn post(app: &TestApp, content_type: Option<&str>, body: String) -> (u16, Value) {
    let mut req = app.raw("POST", "/compare").header("X-API-Key", KEY).header("X-API-Secret", SECRET);
    if let Some(ct) = content_type {
        req = req.header("Content-Type", ct);
    }
    into_json(req.body(body).send())
}

fn content_type_and_size(app: &TestApp) {
    let ok = body(&[1, 2]);
    let msg = assert_error(post(app, None, ok.clone()), 415, "UNSUPPORTED_MEDIA_TYPE");
    assert!(msg.contains("application/json"), "{msg}");
    for ct in ["text/plain", "application/x-www-form-urlencoded", "application/jsonp", "multipart/form-data"] {
        assert_error(post(app, Some(ct), ok.clone()), 415, "UNSUPPORTED_MEDIA_TYPE");
    }
    for ct in ["application/json; charset=utf-8", "application/json;charset=UTF-8", "Application/JSON"] {
        let (status, res) = post(app, Some(ct), ok.clone());
        assert_eq!(status, 200, "{ct}: {res}");
    }
    // More than 16 KiB.
    let big = json!({"vehicle_ids": [uid(1), "x".repeat(17 * 1024)]}).to_string();
    let msg = assert_error(post(app, Some("application/json"), big), 413, "PAYLOAD_TOO_LARGE");
    assert!(msg.contains("16384"), "{msg}");
    // Without credentials the body is never looked at.
    let res = app.raw("POST", "/compare").header("Content-Type", "application/json").body(ok).send();
    assert_error(into_json(res), 401, "UNAUTHORIZED");
}

fn malformed_bodies(app: &TestApp) {
    let (a, b) = (uid(1), uid(2));
    let five = body(&[1, 2, 3, 4, 9]);
    let cases = [
        (String::new(), "não é um JSON válido"),
        ("{\"vehicle_ids\": [".to_string(), "não é um JSON válido"),
        (format!("{{\"vehicle_ids\": [\"{a}\" \"{b}\"]}}"), "não é um JSON válido"),
        (format!("{{'vehicle_ids': ['{a}', '{b}']}}"), "não é um JSON válido"),
        (format!("[\"{a}\", \"{b}\"]"), "deve ser um objeto JSON"),
        ("{}".to_string(), "Campo 'vehicle_ids' é obrigatório"),
        (format!("{{\"ids\": [\"{a}\", \"{b}\"]}}"), "Campo 'ids' não é permitido"),
        (format!("{{\"vehicle_ids\": [\"{a}\", \"{b}\"], \"top\": 3}}"), "Campo 'top' não é permitido"),
        (format!("{{\"vehicle_ids\": [\"{a}\", \"{a}\"]}}"), "repetido"),
        (format!("{{\"vehicle_ids\": [\"{a}\"]}}"), "deve ter de 2 a 4 itens (recebidos: 1)"),
        (five, "deve ter de 2 a 4 itens (recebidos: 5)"),
        (format!("{{\"vehicle_ids\": [\"{a}\", \"abc\"]}}"), "'vehicle_ids[1]' deve ser um UUID válido"),
        (format!("{{\"vehicle_ids\": [1, \"{a}\"]}}"), "'vehicle_ids[0]' deve ser um UUID válido"),
        (format!("{{\"vehicle_ids\": \"{a}\"}}"), "Campo 'vehicle_ids' deve ser uma lista de 2 a 4 UUIDs"),
        ("{\"vehicle_ids\": null}".to_string(), "Campo 'vehicle_ids' deve ser uma lista"),
        (format!("{{\"vehicle_ids\": [\"{a}\", \"{b}\"], \"vehicle_ids\": []}}"), "mais de uma vez"),
    ];
    for (raw, expected) in cases {
        let msg = assert_error(app.post_json("/compare", &raw), 400, "VALIDATION_ERROR");
        assert!(msg.contains(expected), "{raw}: {msg}");
    }
    // The operation takes no query parameter.
    let msg = assert_error(app.post_json("/compare?foo=1", &body(&[1, 2])), 400, "VALIDATION_ERROR");
    assert!(msg.contains("'foo' não é aceito"), "{msg}");
}
