//! GET /vehicles/{vehicle_id}/summary, /eco-score, /ranking-positions, /compare-similar and
//! /best-alternative: known answers on one fixture, and every path and query error.

use serde_json::{json, Value};

use crate::common::*;

pub use crate::expected::{custo, eco_score, eficiencia_raw as eficiencia, faixa};

/// Catalog rows with known answers:
/// - Compacto: 1 (71.1), 2 and 3 (62.8, tied), 4 (54.5), 5 (no score) → positions 1, 2, 2, 4.
/// - Sedan: 6 and 9 (96.7, tied; 9 more efficient), 7 (67.8).
/// - Picape: 8 alone (47.8).
fn fixture() -> Vec<Row> {
    let mut argo = Row::new(1, "Fiat", "Argo", 2020, "Compacto", "Flex");
    argo.consumo_energetico_mj_km = Some(1.0);
    argo.eficiencia_cidade_etanol_km_l = Some(8.4);
    argo.eficiencia_estrada_etanol_km_l = Some(9.8);

    let mut polo = Row::new(2, "Volkswagen", "Polo", 2021, "Compacto", "Gasolina");
    polo.consumo_energetico_mj_km = Some(1.5);

    let mut kwid = Row::new(3, "Renault", "Kwid", 2019, "Compacto", "Flex");
    kwid.consumo_energetico_mj_km = Some(1.5);

    let mut onix = Row::new(4, "Chevrolet", "Onix", 2023, "Compacto", "Flex");
    onix.consumo_energetico_mj_km = Some(2.0);

    let mut mobi = Row::new(5, "Fiat", "Mobi", 2021, "Compacto", "Flex");
    mobi.motor = None;
    mobi.transmissao_tipo = None;
    mobi.transmissao_marchas = None;
    mobi.ar_condicionado = None;
    mobi.eficiencia_cidade_km_l = None;
    mobi.eficiencia_estrada_km_l = None;
    mobi.consumo_energetico_mj_km = None;
    mobi.co2_fossil_g_km = None;
    mobi.nmhc_g_km = None;
    mobi.tanque_l = None;
    mobi.classificacao_pbe_categoria = None;
    mobi.classificacao_pbe_geral = None;

    let electric = |n: u32, marca: &str, modelo: &str, cidade: f64, estrada: f64, alcance: f64| {
        let mut r = Row::new(n, marca, modelo, 2024, "Sedan", "Elétrico");
        r.consumo_energetico_mj_km = Some(0.5);
        r.co2_fossil_g_km = Some(0.0);
        r.nmhc_g_km = Some(0.0);
        r.co_g_km = Some(0.0);
        r.nox_g_km = Some(0.0);
        r.eficiencia_cidade_km_l = Some(cidade);
        r.eficiencia_estrada_km_l = Some(estrada);
        r.autonomia_eletrica_km = Some(alcance);
        r.tanque_l = None;
        r.motor = None;
        r.transmissao_tipo = Some("Automática".into());
        r.transmissao_marchas = Some(1);
        r
    };
    let seal = electric(6, "BYD", "Seal", 40.0, 35.0, 400.0);

    let mut civic = Row::new(7, "Honda", "Civic", 2022, "Sedan", "Gasolina");
    civic.consumo_energetico_mj_km = Some(1.2);

    let mut hilux = Row::new(8, "Toyota", "Hilux", 2021, "Picape", "Diesel");
    hilux.consumo_energetico_mj_km = Some(2.4);
    hilux.eficiencia_cidade_km_l = Some(10.0);
    hilux.eficiencia_estrada_km_l = Some(12.0);

    let han = electric(9, "BYD", "Han", 45.0, 40.0, 500.0);

    vec![argo, polo, kwid, onix, mobi, seal, civic, hilux, han]
}

fn row(rows: &[Row], n: u32) -> &Row {
    rows.iter().find(|r| r.id.as_deref() == Some(uid(n).as_str())).unwrap()
}

fn ids(items: &Value) -> Vec<String> {
    items.as_array().unwrap().iter().map(|v| v["vehicleId"].as_str().unwrap().to_string()).collect()
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn fixture_scores_are_as_designed() {
    // Guards the fixture itself: the known answers below rely on these scores.
    let rows = fixture();
    let scores: Vec<Option<f64>> = rows.iter().map(eco_score).collect();
    assert_eq!(
        scores,
        vec![Some(71.1), Some(62.8), Some(62.8), Some(54.5), None, Some(96.7), Some(67.8), Some(47.8), Some(96.7)]
    );
}

#[test]
fn per_vehicle_views() {
    let rows = fixture();
    let app = TestApp::with_rows(&rows);
    summary(&app, &rows);
    eco_scores(&app, &rows);
    ranking_positions(&app);
    compare_similar(&app, &rows);
    best_alternative(&app);
    path_and_query_errors(&app);
}

fn summary(app: &TestApp, rows: &[Row]) {
    let d = app.data(&format!("/vehicles/{}/summary", uid(1)));
    assert_eq!(keys(&d), vec!["vehicle_id", "summary"]);
    assert_eq!(d["vehicle_id"], uid(1));
    let s = &d["summary"];
    assert_eq!(keys(s), vec!["veiculo", "consumo", "emissoes"]);
    assert_eq!(
        s["veiculo"],
        json!({
            "id": uid(1), "marca": "Fiat", "modelo": "Argo", "versao": "V1", "ano": 2020, "categoria": "Compacto",
            "motor": "1.0", "tipo_propulsao": "Combustão", "combustivel_tipo": "Flex", "transmissao_tipo": "Manual",
            "transmissao_marchas": 5, "ar_condicionado": true, "direcao_assistida_tipo": "Elétrica"
        })
    );
    assert_eq!(
        keys(&s["consumo"]),
        vec![
            "eficiencia_cidade_km_l",
            "eficiencia_estrada_km_l",
            "eficiencia_cidade_etanol_km_l",
            "eficiencia_estrada_etanol_km_l",
            "eficiencia_media_referencia",
            "consumo_energetico_mj_km",
            "autonomia_km",
            "custo_anual_estimado"
        ]
    );
    let c = &s["consumo"];
    assert_eq!((num(&c["eficiencia_cidade_km_l"]), num(&c["eficiencia_estrada_km_l"])), (12.0, 14.0));
    assert_eq!((num(&c["eficiencia_cidade_etanol_km_l"]), num(&c["eficiencia_estrada_etanol_km_l"])), (8.4, 9.8));
    assert_eq!(num(&c["eficiencia_media_referencia"]), 13.0);
    assert_eq!(num(&c["consumo_energetico_mj_km"]), 1.0);
    assert_eq!(num(&c["autonomia_km"]), 50.0 * 13.0);
    assert_eq!(
        s["emissoes"],
        json!({
            "co2_fossil_g_km": 100.0, "nmhc_g_km": 0.01, "co_g_km": 0.2, "nox_g_km": 0.01,
            "nmog_nox_g_km": null, "classificacao_pbe_categoria": "A", "classificacao_pbe_geral": "B"
        })
    );

    // custo_anual_estimado from the contract formula and default prices, per fuel.
    // Flex: min(12000 / 13 × 6.20, 12000 / 9.1 × 4.10) = 5406.59 (ethanol is cheaper).
    assert!(close(custo(row(rows, 1)).unwrap(), round(12_000.0 / 9.1 * 4.10, 2)));
    for n in [1, 2, 6, 8] {
        let d = app.data(&format!("/vehicles/{}/summary", uid(n)));
        let expected = custo(row(rows, n)).unwrap();
        let got = num(&d["summary"]["consumo"]["custo_anual_estimado"]);
        assert!(close(got, expected), "vehicle {n} ({}): {got} != {expected}", row(rows, n).combustivel_tipo);
    }
    // The electric one: range is the electric range, efficiency the mean of the columns.
    let d = app.data(&format!("/vehicles/{}/summary", uid(6)));
    assert_eq!(num(&d["summary"]["consumo"]["autonomia_km"]), 400.0);
    assert_eq!(num(&d["summary"]["consumo"]["eficiencia_media_referencia"]), 37.5);
    assert!(d["summary"]["consumo"]["eficiencia_cidade_etanol_km_l"].is_null());
    let d = app.data(&format!("/vehicles/{}/summary", uid(8)));
    assert_eq!(num(&d["summary"]["consumo"]["autonomia_km"]), 50.0 * 11.0);

    // Nulls are kept as null, never dropped or defaulted.
    let d = app.data(&format!("/vehicles/{}/summary", uid(5)));
    let s = &d["summary"];
    for field in ["motor", "transmissao_tipo", "transmissao_marchas", "ar_condicionado"] {
        assert!(s["veiculo"][field].is_null(), "veiculo.{field}: {s}");
    }
    assert_eq!(keys(&s["veiculo"]).len(), 13);
    for field in keys(&s["consumo"]) {
        assert!(s["consumo"][&field].is_null(), "consumo.{field}: {s}");
    }
    assert_eq!(keys(&s["consumo"]).len(), 8);
    for field in
        ["co2_fossil_g_km", "nmhc_g_km", "nmog_nox_g_km", "classificacao_pbe_categoria", "classificacao_pbe_geral"]
    {
        assert!(s["emissoes"][field].is_null(), "emissoes.{field}: {s}");
    }
    assert_eq!(num(&s["emissoes"]["co_g_km"]), 0.2);
}

fn eco_scores(app: &TestApp, rows: &[Row]) {
    let d = app.data(&format!("/vehicles/{}/eco-score", uid(1)));
    assert_eq!(
        d,
        json!({
            "vehicle_id": uid(1), "marca": "Fiat", "modelo": "Argo", "versao": "V1", "ano": 2020,
            "categoria": "Compacto", "eco_score": 71.1, "faixa": "Bom", "source": "vw_eco_score"
        })
    );
    for n in [2, 4, 6, 7, 8, 9] {
        let d = app.data(&format!("/vehicles/{}/eco-score", uid(n)));
        let expected = eco_score(row(rows, n)).unwrap();
        assert_eq!(num(&d["eco_score"]), expected, "vehicle {n}");
        assert_eq!(d["faixa"], faixa(expected), "vehicle {n}");
        assert_eq!(d["source"], "vw_eco_score");
    }
    let d = app.data(&format!("/vehicles/{}/eco-score", uid(5)));
    assert!(d["eco_score"].is_null() && d["faixa"].is_null(), "{d}");
    assert_eq!(d["marca"], "Fiat");
}

fn ranking_positions(app: &TestApp) {
    // Scores: 6 = 9 = 96.7, 1 = 71.1, 7 = 67.8, 2 = 3 = 62.8, 4 = 54.5, 8 = 47.8; 5 has none.
    // N = 8 scored vehicles; percentil = 100 × (N − global) / (N − 1).
    let pct = |global: f64| round(100.0 * (8.0 - global) / 7.0, 1);
    let expected = [
        (1, 3, 1, 1),
        (2, 5, 2, 2), // Gasolina: 7 (67.8) then 2
        (3, 5, 2, 2), // Flex: 1 (71.1) then 3
        (4, 7, 4, 3),
        (6, 1, 1, 1),
        (7, 4, 3, 1),
        (8, 8, 1, 1),
        (9, 1, 1, 1),
    ];
    for (n, global, categoria, combustivel) in expected {
        let d = app.data(&format!("/vehicles/{}/ranking-positions", uid(n)));
        assert_eq!(keys(&d), vec!["vehicleId", "global", "naCategoria", "noCombustivel", "percentil"]);
        assert_eq!(d["vehicleId"], uid(n));
        assert_eq!(
            (&d["global"], &d["naCategoria"], &d["noCombustivel"]),
            (&json!(global), &json!(categoria), &json!(combustivel)),
            "vehicle {n}: {d}"
        );
        assert!(close(num(&d["percentil"]), pct(global as f64)), "vehicle {n}: {d}");
    }
    // Compacto shows the competition ranking 1, 2, 2, 4.
    let cat: Vec<Value> = [1, 2, 3, 4]
        .iter()
        .map(|n| app.data(&format!("/vehicles/{}/ranking-positions", uid(*n)))["naCategoria"].clone())
        .collect();
    assert_eq!(cat, vec![json!(1), json!(2), json!(2), json!(4)]);
    assert_eq!(pct(1.0), 100.0);
    assert_eq!(pct(8.0), 0.0);

    let d = app.data(&format!("/vehicles/{}/ranking-positions", uid(5)));
    assert_eq!(
        d,
        json!({"vehicleId": uid(5), "global": null, "naCategoria": null, "noCombustivel": null, "percentil": null})
    );
}

fn compare_similar(app: &TestApp, rows: &[Row]) {
    // Base 2 (62.8, 2021): 3 (Δ 0), then 1 and 4 (both Δ 8.3) by |Δ ano|: 1 (1 year), 4 (2 years).
    let (status, body) = app.get(&format!("/vehicles/{}/compare-similar", uid(2)));
    assert_eq!(status, 200, "{body}");
    let d = &body["data"]["data"];
    assert_eq!(ids(&d["items"]), vec![uid(3), uid(1), uid(4)]);
    assert_eq!(body["data"]["meta"]["filters_applied"], json!({"vehicle_id": uid(2), "top": 5}));
    assert!(body["data"]["meta"].get("pagination").is_none());

    let item = &d["items"][1];
    assert_eq!(
        keys(item),
        vec![
            "vehicleId",
            "marca",
            "modelo",
            "versao",
            "ano",
            "categoria",
            "combustivelTipo",
            "tipoPropulsao",
            "transmissaoTipo",
            "ecoScore",
            "consumoReferencia",
            "co2ReferenciaGKm",
            "autonomiaKm",
            "eficienciaMediaReferencia"
        ]
    );
    let argo = row(rows, 1);
    assert_eq!(
        item,
        &json!({
            "vehicleId": uid(1), "marca": "Fiat", "modelo": "Argo", "versao": "V1", "ano": 2020,
            "categoria": "Compacto", "combustivelTipo": "Flex", "tipoPropulsao": "Combustão",
            "transmissaoTipo": "Manual", "ecoScore": eco_score(argo).unwrap(), "consumoReferencia": 1.0,
            "co2ReferenciaGKm": 100.0, "autonomiaKm": 650.0, "eficienciaMediaReferencia": eficiencia(argo).unwrap()
        })
    );

    let (_, body) = app.get(&format!("/vehicles/{}/compare-similar?top=2", uid(2)));
    assert_eq!(ids(&body["data"]["data"]["items"]), vec![uid(3), uid(1)]);
    assert_eq!(body["data"]["meta"]["filters_applied"], json!({"vehicle_id": uid(2), "top": 2}));
    let d = app.data(&format!("/vehicles/{}/compare-similar?top=20", uid(2)));
    assert_eq!(d["items"].as_array().unwrap().len(), 3);

    // Base 5 has no score: by |Δ ano| from 2021 (2: 0, 1: 1, 3 and 4: 2), then id.
    let d = app.data(&format!("/vehicles/{}/compare-similar", uid(5)));
    assert_eq!(ids(&d["items"]), vec![uid(2), uid(1), uid(3), uid(4)]);
    // Base 7 (67.8, 2022): 6 and 9 tie on Δ score (28.9) and Δ ano (2): id decides.
    let d = app.data(&format!("/vehicles/{}/compare-similar", uid(7)));
    assert_eq!(ids(&d["items"]), vec![uid(6), uid(9)]);
    // Base 6: its twin 9 (Δ 0) first; the base itself never appears.
    let d = app.data(&format!("/vehicles/{}/compare-similar", uid(6)));
    assert_eq!(ids(&d["items"]), vec![uid(9), uid(7)]);
    // A category of one: nothing similar.
    let d = app.data(&format!("/vehicles/{}/compare-similar", uid(8)));
    assert_eq!(d, json!({"items": []}));
    // Vehicles without a score are never proposed (5 is in Compacto).
    let d = app.data(&format!("/vehicles/{}/compare-similar", uid(1)));
    assert_eq!(ids(&d["items"]), vec![uid(2), uid(3), uid(4)]);
}

fn best_alternative(app: &TestApp) {
    let cases = [
        (2, Some(1)), // 71.1 is the only score above 62.8 in Compacto
        (4, Some(1)),
        (5, Some(1)), // no score: the best-scored of the category
        (1, None),    // already the best of Compacto
        (7, Some(9)), // 6 and 9 tie at 96.7: 9 is more efficient (42.5 vs 37.5)
        (6, None),    // 9 ties, it is not strictly better
        (9, None),
        (8, None), // alone in Picape
    ];
    for (base, expected) in cases {
        let (status, body) = app.get(&format!("/vehicles/{}/best-alternative", uid(base)));
        assert_eq!(status, 200, "{body}");
        let d = &body["data"]["data"];
        match expected {
            Some(n) => assert_eq!(d["vehicleId"], uid(n), "base {base}: {d}"),
            None => assert!(d.is_null(), "base {base}: {d}"),
        }
        assert_eq!(body["data"]["meta"]["filters_applied"], json!({"vehicle_id": uid(base)}));
    }
    let d = app.data(&format!("/vehicles/{}/best-alternative", uid(7)));
    assert_eq!(d["ecoScore"], 96.7);
    assert_eq!(d["eficienciaMediaReferencia"], 42.5);
    assert_eq!(d["autonomiaKm"], 500.0);
    assert_eq!(d["categoria"], "Sedan");
}

fn path_and_query_errors(app: &TestApp) {
    let endpoints = ["summary", "eco-score", "ranking-positions", "compare-similar", "best-alternative"];
    for endpoint in endpoints {
        for bad in ["not-a-uuid", "123", "00000000-0000-4000-8000-00000000000g", "%C3%A9"] {
            let msg = assert_error(app.get(&format!("/vehicles/{bad}/{endpoint}")), 400, "VALIDATION_ERROR");
            assert_eq!(msg, "Parâmetro 'vehicle_id' deve ser um UUID válido", "{endpoint} {bad}");
        }
        // A segment that does not decode to UTF-8 is named as such.
        let msg = assert_error(app.get(&format!("/vehicles/%FF/{endpoint}")), 400, "VALIDATION_ERROR");
        assert_eq!(msg, "Parâmetro 'vehicle_id' não é UTF-8 válido", "{endpoint}");
        let unknown = uid(999);
        let msg = assert_error(app.get(&format!("/vehicles/{unknown}/{endpoint}")), 404, "NOT_FOUND");
        assert!(msg.contains(&unknown) && msg.contains("não encontrado"), "{endpoint}: {msg}");
        // Case does not matter in a UUID.
        let (status, _) = app.get(&format!("/vehicles/{}/{endpoint}", uid(1).to_uppercase()));
        assert_eq!(status, 200, "{endpoint}");
    }
    for endpoint in ["summary", "eco-score", "ranking-positions", "best-alternative"] {
        let msg = assert_error(app.get(&format!("/vehicles/{}/{endpoint}?top=5", uid(1))), 400, "VALIDATION_ERROR");
        assert!(msg.contains("'top' não é aceito"), "{endpoint}: {msg}");
    }
    let base = format!("/vehicles/{}/compare-similar", uid(1));
    let cases = [
        ("top=0", "'top' deve estar entre 1 e 20"),
        ("top=21", "'top' deve estar entre 1 e 20"),
        ("top=-1", "'top' deve estar entre 1 e 20"),
        ("top=abc", "'top' deve ser um número inteiro"),
        ("top=1.5", "'top' deve ser um número inteiro"),
        ("top=", "'top' não pode ser vazio"),
        ("top=2&top=3", "'top' informado mais de uma vez"),
        ("page=1", "'page' não é aceito"),
        ("marca=Fiat", "'marca' não é aceito"),
    ];
    for (q, expected) in cases {
        let msg = assert_error(app.get(&format!("{base}?{q}")), 400, "VALIDATION_ERROR");
        assert!(msg.contains(expected), "{q}: {msg}");
    }
    // The path is checked before the query.
    let msg = assert_error(app.get("/vehicles/x/compare-similar?top=0"), 400, "VALIDATION_ERROR");
    assert!(msg.contains("'vehicle_id'"), "{msg}");
}
