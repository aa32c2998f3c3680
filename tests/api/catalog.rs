//! GET /catalog/vehicles, the envelope, credentials, errors, and start-up validation.

use serde_json::Value;

use crate::common::*;

fn fixture() -> Vec<Row> {
    let mut rows = vec![
        Row::new(1, "Fiat", "Argo", 2020, "Compacto", "Flex"),
        Row::new(2, "Fiat", "Argo", 2022, "Compacto", "Flex"),
        Row::new(3, "BYD", "Dolphin", 2024, "Compacto", "Elétrico"),
        Row::new(4, "Citroën", "C3", 2019, "Compacto", "Gasolina"),
        Row::new(5, "fiat", "mobi", 2018, "Subcompacto", "Flex"),
        Row::new(6, "Toyota", "Hilux 100%_.*", 2021, "Picape", "Diesel"),
    ];
    // Same marca/modelo/versao and ano: the id breaks the tie.
    rows[0].versao = "1.0".into();
    rows[1].versao = "1.0".into();
    let mut twin = Row::new(7, "Fiat", "Argo", 2022, "Compacto", "Flex");
    twin.versao = "1.0".into();
    rows.push(twin);
    rows[2].motor = None;
    rows[2].transmissao_tipo = None;
    rows[2].transmissao_marchas = None;
    rows[2].ar_condicionado = None;
    rows
}

fn ids(data: &Value) -> Vec<String> {
    data["items"].as_array().unwrap().iter().map(|v| v["id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn envelope_order_and_nulls() {
    let app = TestApp::with_rows(&fixture());
    let res = app.get_req("/catalog/vehicles").send();
    let header_id = res.header("x-request-id").unwrap().to_string();
    assert!(res.header("x-dataset-version").is_some());
    let (status, body) = into_json(res);
    assert_eq!(status, 200);
    assert_eq!(body["success"], true);
    let meta = &body["data"]["meta"];
    assert_eq!(meta["request_id"], header_id.as_str());
    assert!(uuid::Uuid::parse_str(&header_id).is_ok());
    let generated = meta["generated_at"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(generated).is_ok() && generated.ends_with('Z'), "{generated}");
    assert!(meta.get("filters_applied").is_none(), "no filters → no filters_applied: {meta}");
    // The whole list on one page: no cursor follows it.
    assert_eq!(
        meta["pagination"],
        serde_json::json!({"page": 1, "page_size": 20, "total": 7, "total_pages": 1, "next_cursor": null})
    );

    // marca, modelo, versao byte-wise ("BYD" < "Citroën" < "Fiat" < "Toyota" < "fiat"), ano desc, id.
    let data = &body["data"]["data"];
    assert_eq!(ids(data), vec![uid(3), uid(4), uid(2), uid(7), uid(1), uid(6), uid(5)]);

    let byd = &data["items"][0];
    for field in ["motor", "transmissao_tipo", "transmissao_marchas", "ar_condicionado"] {
        assert!(byd[field].is_null(), "{field} must be null: {byd}");
    }
    assert_eq!(byd["marca"], "BYD");
    assert_eq!(byd["ano"], 2024);
    assert_eq!(byd["combustivel_tipo"], "Elétrico");
    let keys: Vec<&String> = byd.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        vec![
            "id",
            "marca",
            "modelo",
            "versao",
            "ano",
            "categoria",
            "motor",
            "tipo_propulsao",
            "combustivel_tipo",
            "transmissao_tipo",
            "transmissao_marchas",
            "ar_condicionado",
            "direcao_assistida_tipo"
        ]
    );
}

#[test]
fn filters_are_accent_and_case_insensitive_literals() {
    let app = TestApp::with_rows(&fixture());
    let d = app.data("/catalog/vehicles?combustivel=eletrico");
    assert_eq!(ids(&d), vec![uid(3)]);
    let d = app.data("/catalog/vehicles?marca=CITROEN");
    assert_eq!(ids(&d), vec![uid(4)]);
    let d = app.data("/catalog/vehicles?marca=fiat&modelo=ARG");
    assert_eq!(ids(&d), vec![uid(2), uid(7), uid(1)]);
    // Pattern characters match themselves only.
    for q in ["modelo=100%25_.*", "modelo=%25", "modelo=_", "modelo=.*"] {
        let d = app.data(&format!("/catalog/vehicles?{q}"));
        assert_eq!(ids(&d), vec![uid(6)], "{q}");
    }
    let d = app.data("/catalog/vehicles?modelo=.");
    assert_eq!(ids(&d), vec![uid(6)]);
    let d = app.data("/catalog/vehicles?propulsao=el%C3%A9TRICO&categoria=compacto");
    assert_eq!(ids(&d), vec![uid(3)]);
    let d = app.data("/catalog/vehicles?transmissao=manual");
    assert_eq!(d["items"].as_array().unwrap().len(), 6, "null transmission never matches");
}

#[test]
fn year_filters_and_filters_applied() {
    let app = TestApp::with_rows(&fixture());
    let (_, body) = app.get("/catalog/vehicles?ano=2022");
    assert_eq!(ids(&body["data"]["data"]), vec![uid(2), uid(7)]);
    assert_eq!(body["data"]["meta"]["filters_applied"], serde_json::json!({"ano": 2022}));
    let (_, body) = app.get("/catalog/vehicles?ano_min=2020&ano_max=2021&marca=fiat");
    assert_eq!(ids(&body["data"]["data"]), vec![uid(1)]);
    assert_eq!(
        body["data"]["meta"]["filters_applied"],
        serde_json::json!({"marca": "fiat", "ano_min": 2020, "ano_max": 2021})
    );
    let d = app.data("/catalog/vehicles?ano_min=2025");
    assert_eq!(d["items"], serde_json::json!([]));
}

#[test]
fn pagination_pages_and_past_the_end() {
    let app = TestApp::with_rows(&fixture());
    let (_, body) = app.get("/catalog/vehicles?page=2&page_size=3");
    assert_eq!(ids(&body["data"]["data"]), vec![uid(7), uid(1), uid(6)]);
    let mut pagination = body["data"]["meta"]["pagination"].clone();
    assert!(pagination["next_cursor"].is_string(), "a later page holds items: {pagination}");
    pagination.as_object_mut().unwrap().remove("next_cursor");
    assert_eq!(pagination, serde_json::json!({"page": 2, "page_size": 3, "total": 7, "total_pages": 3}));
    let (_, body) = app.get("/catalog/vehicles?page=3&page_size=3");
    assert!(body["data"]["meta"]["pagination"]["next_cursor"].is_null());
    assert_eq!(ids(&body["data"]["data"]), vec![uid(5)]);
    let (_, body) = app.get("/catalog/vehicles?page=9&page_size=3");
    assert_eq!(body["data"]["data"]["items"], serde_json::json!([]));
    assert_eq!(body["data"]["meta"]["pagination"]["total_pages"], 3);
    let (_, body) = app.get("/catalog/vehicles?marca=nada");
    assert_eq!(
        body["data"]["meta"]["pagination"],
        serde_json::json!({"page": 1, "page_size": 20, "total": 0, "total_pages": 0, "next_cursor": null})
    );
}

#[test]
fn bad_parameters_name_the_parameter() {
    let app = TestApp::with_rows(&fixture());
    let cases = [
        ("page=0", "'page' deve ser maior que 0"),
        ("page=abc", "'page'"),
        ("page_size=101", "'page_size' deve estar entre 1 e 100"),
        ("page_size=0", "'page_size'"),
        ("ano=1899", "'ano' deve estar entre 1900 e 2100"),
        ("ano_min=2101", "'ano_min'"),
        ("ano=2020&ano_min=2019", "'ano' não pode ser combinado"),
        ("ano_min=2022&ano_max=2020", "'ano_min' (2022) não pode ser maior"),
        ("marca=", "'marca' não pode ser vazio"),
        ("marca=a&marca=b", "'marca' informado mais de uma vez"),
        ("cor=azul", "'cor' não é aceito"),
        ("metric=co2", "'metric' não é aceito"),
        ("page=%FF", "'page'"),
    ];
    for (q, expected) in cases {
        let msg = assert_error(app.get(&format!("/catalog/vehicles?{q}")), 400, "VALIDATION_ERROR");
        assert!(msg.contains(expected), "{q}: {msg}");
    }
}

#[test]
fn credentials_are_required_with_one_answer() {
    let app = TestApp::with_rows(&fixture());
    let none = into_json(app.raw("GET", "/catalog/vehicles").send());
    let key_only = into_json(app.raw("GET", "/catalog/vehicles").header("X-API-Key", KEY).send());
    let wrong =
        into_json(app.raw("GET", "/catalog/vehicles").header("X-API-Key", KEY).header("X-API-Secret", "nope").send());
    let unknown =
        into_json(app.raw("GET", "/catalog/vehicles").header("X-API-Key", "x").header("X-API-Secret", SECRET).send());
    let messages: Vec<String> =
        [none, key_only, wrong, unknown].into_iter().map(|r| assert_error(r, 401, "UNAUTHORIZED")).collect();
    assert!(messages.windows(2).all(|w| w[0] == w[1]), "one message for every case: {messages:?}");
    // Credentials are checked before parameters.
    let r = into_json(app.raw("GET", "/catalog/vehicles?page=0").send());
    assert_error(r, 401, "UNAUTHORIZED");
}

#[test]
fn framework_rejections_use_the_envelope() {
    let app = TestApp::with_rows(&fixture());
    assert_error(app.get("/nao-existe"), 404, "NOT_FOUND");
    let res = app.raw("DELETE", "/catalog/vehicles").header("X-API-Key", KEY).header("X-API-Secret", SECRET).send();
    assert!(res.header("allow").is_some());
    assert_error(into_json(res), 405, "METHOD_NOT_ALLOWED");
    let res = app.raw("POST", "/catalog/vehicles").send();
    assert_error(into_json(res), 405, "METHOD_NOT_ALLOWED");
}

#[test]
fn health_and_readiness_need_no_credentials() {
    let app = TestApp::with_rows(&fixture());
    let (s, body) = into_json(app.raw("GET", "/healthz").send());
    assert_eq!((s, body["status"].as_str()), (200, Some("ok")));
    let (s, body) = into_json(app.raw("GET", "/readyz").send());
    assert_eq!(s, 200);
    assert_eq!(body["dataset"]["rows"], 7);
    assert_eq!(body["dataset"]["version"].as_str().unwrap().len(), 16);
}

#[test]
fn ids_are_derived_when_the_column_is_absent() {
    let mut rows = fixture();
    for r in &mut rows {
        r.id = None;
        r.versao = format!("{}-{}", r.versao, r.ano);
    }
    rows[6].versao = "1.0-2022b".into();
    let app = TestApp::with_rows(&rows);
    let first = app.data("/catalog/vehicles");
    let again = TestApp::with_rows(&rows).data("/catalog/vehicles");
    assert_eq!(ids(&first), ids(&again), "derived ids are stable across loads");
    let expected = eco_insights::engine::schema::derive_id("BYD", "Dolphin", "V3-2024", 2024, None, None);
    assert_eq!(ids(&first)[0], expected.to_string());
}

/// Each kind of invalid export: the service refuses to start and `validate` prints the problem.
#[test]
fn invalid_exports_are_refused_with_the_reason() {
    let dir = temp_dir("invalid");
    let base = fixture();
    let mut cases: Vec<(&str, polars::prelude::DataFrame, &str)> = Vec::new();
    cases.push(("missing", frame(&base).drop("categoria").unwrap(), "column 'categoria': required column is missing"));
    let mut wrong = frame(&base);
    let ano_text: Vec<String> = base.iter().map(|r| r.ano.to_string()).collect();
    wrong.with_column(polars::prelude::Column::new("ano".into(), ano_text)).unwrap();
    cases.push(("wrongtype", wrong, "column 'ano': expected type integer, found str"));
    let mut nulls = base.clone();
    nulls[2].combustivel_tipo = String::new();
    let mut null_frame = frame(&nulls);
    let fuel: Vec<Option<&str>> =
        nulls.iter().map(|r| (!r.combustivel_tipo.is_empty()).then_some(r.combustivel_tipo.as_str())).collect();
    null_frame.with_column(polars::prelude::Column::new("combustivel_tipo".into(), fuel)).unwrap();
    cases.push(("null", null_frame, "column 'combustivel_tipo', row 3: null value in a required column"));
    let mut dup = base.clone();
    dup[4].id = dup[1].id.clone();
    cases.push(("dup", frame(&dup), "column 'id', row 5: duplicate id"));
    let mut bad = base.clone();
    bad[0].id = Some("not-a-uuid".into());
    cases.push(("baduuid", frame(&bad), "column 'id', row 1: not a valid UUID"));
    let mut old = base.clone();
    old[3].ano = 1850;
    cases.push(("ano", frame(&old), "column 'ano', row 4: year out of range 1900-2100"));

    for (name, mut df, expected) in cases {
        let path = dir.join(format!("{name}.parquet"));
        write_frame(&mut df, &path);
        let out = std::process::Command::new(binary()).arg("validate").arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: validate must fail");
        assert!(stderr.contains(expected), "{name}: {stderr}");
        let reason = TestApp::refused_reason(&dir, &path);
        assert!(reason.contains(expected), "{name}: {reason}");
    }
    let good = dir.join("good.parquet");
    write_rows(&base, &good);
    let out = std::process::Command::new(binary()).arg("validate").arg(&good).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("valid (7 rows)"));
    let garbage = dir.join("garbage.parquet");
    std::fs::write(&garbage, b"PAR1 not really").unwrap();
    let out = std::process::Command::new(binary()).arg("validate").arg(&garbage).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a readable Parquet file"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn per_key_quota_answers_429_with_retry_after() {
    let dir = temp_dir("quota");
    let data = dir.join("catalog.parquet");
    write_rows(&fixture(), &data);
    let hash = |s: &str| {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(s.as_bytes()))
    };
    let creds = dir.join("credentials.json");
    let text = serde_json::json!({"credentials": [
        {"key": "limited", "name": "limited client", "secret_sha256": hash("s3cret"), "quota_per_minute": 3},
        {"key": KEY, "name": "demo", "secret_sha256": hash(SECRET)},
    ]});
    std::fs::write(&creds, text.to_string()).unwrap();
    let app = TestApp::serve(&dir, &data, &["--credentials", creds.to_str().unwrap()]);
    let limited =
        || app.raw("GET", "/catalog/vehicles").header("X-API-Key", "limited").header("X-API-Secret", "s3cret");
    for _ in 0..3 {
        assert_eq!(limited().send().status, 200);
    }
    let res = limited().send();
    let retry: u64 = res.header("retry-after").expect("Retry-After").parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let msg = assert_error(into_json(res), 429, "RATE_LIMITED");
    assert!(msg.contains("Cota"), "{msg}");
    // Quotas are per key: the other key is not affected.
    assert_eq!(app.get("/catalog/vehicles").0, 200);
    // A wrong secret for the limited key is still 401, not 429.
    let res = app.raw("GET", "/catalog/vehicles").header("X-API-Key", "limited").header("X-API-Secret", "x").send();
    assert_error(into_json(res), 401, "UNAUTHORIZED");
    assert!(app.logs().contains("demo credentials"), "the demo pair is listed: start-up warns");
}

#[test]
fn cost_configuration_reaches_the_estimates() {
    let dir = temp_dir("cost");
    let data = dir.join("catalog.parquet");
    write_rows(&fixture(), &data);
    let app = TestApp::serve(&dir, &data, &["--km-ano", "10000", "--preco-gasolina", "5", "--preco-kwh", "1"]);
    // Citroën C3, Gasolina, 12 and 14 km/l: 10,000 / 13 × 5.
    let d = app.data(&format!("/vehicles/{}/summary", uid(4)));
    assert!(close(d["summary"]["consumo"]["custo_anual_estimado"].as_f64().unwrap(), round(10_000.0 / 13.0 * 5.0, 2)));
    // BYD Dolphin, Elétrico, 1.5 MJ/km: 10,000 × 1.5 / 3.6 × 1.
    let d = app.data(&format!("/vehicles/{}/summary", uid(3)));
    assert!(close(d["summary"]["consumo"]["custo_anual_estimado"].as_f64().unwrap(), round(10_000.0 * 1.5 / 3.6, 2)));
    // Flex without ethanol figures: a missing input gives no cost.
    let d = app.data(&format!("/vehicles/{}/summary", uid(1)));
    assert!(d["summary"]["consumo"]["custo_anual_estimado"].is_null(), "{d}");
    // Invalid configuration is refused at start-up.
    let err = TestApp::try_serve(&dir, &data, &["--preco-diesel", "0"]).err().expect("must refuse");
    assert!(err.contains("--preco-diesel must be a positive number"), "{err}");
}
