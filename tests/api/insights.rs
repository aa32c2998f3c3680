//! GET /insights/summary, /insights/efficiency, /insights/eco-scores, /insights/emissions and
//! /aggregations/by-brand.
//!
//! Expected values are computed here from the fixture's raw inputs with the contract's formulas
//! (API-CONTRACT §2), independently of the service, and a few are also spelled out by hand.

use std::cmp::Ordering;

use serde_json::{json, Value};

use crate::common::*;
use crate::expected::{autonomia, co2, consumo, eco_score, eficiencia, faixa};

/// A row with the inputs that drive the metrics set explicitly.
#[allow(clippy::too_many_arguments)]
fn row(
    n: u32,
    marca: &str,
    modelo: &str,
    ano: i32,
    categoria: &str,
    combustivel: &str,
    consumo_mj: Option<f64>,
    co2: Option<f64>,
    eficiencia: (Option<f64>, Option<f64>),
) -> Row {
    let mut r = Row::new(n, marca, modelo, ano, categoria, combustivel);
    r.consumo_energetico_mj_km = consumo_mj;
    r.co2_fossil_g_km = co2;
    (r.eficiencia_cidade_km_l, r.eficiencia_estrada_km_l) = eficiencia;
    // Pollutants left out of the eco score unless a row sets them.
    (r.nmhc_g_km, r.co_g_km, r.nox_g_km) = (None, None, None);
    r
}

/// Eco scores by construction (see `eco_score`): consumo null and pollutants null leave only the
/// CO2 index, 0.4 × (250 − co2): co2 150 → 40.0, 100 → 60.0, 50 → 80.0, 250 → 0.0.
/// Eco-score band edges: 40.0, 60.0, 80.0 and 0; CO2 band edges: 100, 130, 180 and 0.
fn fixture() -> Vec<Row> {
    let mut rows = vec![
        // 40.0 (edge), co2 150
        row(1, "Fiat", "Argo", 2020, "Compacto", "Flex", None, Some(150.0), (Some(12.0), Some(14.0))),
        // 60.0 (edge), co2 100 (edge)
        row(2, "Fiat", "Mobi", 2021, "Compacto", "Flex", None, Some(100.0), (Some(14.0), Some(16.0))),
        // 80.0 (edge), co2 50
        row(3, "VW", "Polo", 2022, "Compacto", "Gasolina", None, Some(50.0), (Some(12.0), None)),
        // 0.0 (edge), co2 250
        row(4, "Toyota", "Hilux", 2021, "Picape", "Diesel", None, Some(250.0), (Some(9.0), Some(11.0))),
        // energy 100, CO2 100 → 100.0; co2 0 (edge); electric range missing → autonomia null
        row(5, "BYD", "Dolphin", 2024, "SUV", "Elétrico", Some(0.3), Some(0.0), (Some(40.0), Some(50.0))),
        // energy 50, CO2 48, pollutants 50 → 49.3; co2 130 (edge)
        row(6, "Toyota", "Corolla", 2022, "Sedan", "Flex", Some(1.65), Some(130.0), (Some(15.0), Some(16.0))),
        // energy 70, CO2 28 → (31.5 + 9.8) / 0.8 = 51.625 → 51.6; co2 180 (edge)
        row(7, "Honda", "Civic", 2023, "Sedan", "Gasolina", Some(1.11), Some(180.0), (None, Some(13.0))),
        // no score (no consumo, no CO2)
        row(8, "Honda", "Fit", 2019, "Compacto", "Flex", None, None, (Some(11.0), Some(12.0))),
        // no score, no efficiency, no CO2: a brand and a category with nothing to average
        row(9, "renault", "Kwid", 2022, "Subcompacto", "Flex", None, None, (None, None)),
        // energy 0, CO2 40 → 14 / 0.8 = 17.5; efficiency 13.002 published as 13.0 (ties with 1 and 7)
        row(10, "fiat", "Uno", 2018, "Compacto", "Flex", Some(3.0), Some(150.0), (Some(13.004), Some(13.0))),
        // 100.0 again (ties with 5), another category at 100
        row(11, "Peugeot", "e-208", 2023, "Hatch", "Elétrico", Some(0.3), Some(0.0), (Some(45.0), Some(45.0))),
    ];
    (rows[5].nmhc_g_km, rows[5].co_g_km, rows[5].nox_g_km) = (Some(0.025), Some(0.65), Some(0.04));
    rows[10].autonomia_eletrica_km = Some(300.0);
    rows
}

// ---------------------------------------------------------------------------------------------
// The contract's formulas, applied to raw rows.

/// Mean of the present values, 2 decimals; null when there is none.
fn mean2(values: impl IntoIterator<Item = Option<f64>>) -> Value {
    let present: Vec<f64> = values.into_iter().flatten().collect();
    if present.is_empty() {
        Value::Null
    } else {
        json!(round(present.iter().sum::<f64>() / present.len() as f64, 2))
    }
}

/// Counts per band: band i holds (edges[i-1], edges[i]]; the first also holds 0, the last
/// everything above the last edge.
fn band_totals(values: &[f64], labels: [&str; 4], edges: [f64; 3]) -> Value {
    let mut totals = [0u64; 4];
    for &v in values {
        let band = edges.iter().position(|&e| v <= e).unwrap_or(3);
        totals[band] += 1;
    }
    Value::Array(labels.iter().zip(totals).map(|(f, t)| json!({"faixa": f, "total": t})).collect())
}

fn distinct(rows: &[&Row], key: impl Fn(&Row) -> String) -> Vec<String> {
    let mut keys: Vec<String> = rows.iter().map(|r| key(r)).collect();
    keys.sort();
    keys.dedup();
    keys
}

/// (group, rounded mean) of every group with a value.
fn group_means(rows: &[&Row], key: impl Fn(&Row) -> String, value: impl Fn(&Row) -> Option<f64>) -> Vec<(String, f64)> {
    distinct(rows, &key)
        .into_iter()
        .filter_map(|g| {
            let m = mean2(rows.iter().filter(|r| key(r) == g).map(|r| value(r)));
            m.as_f64().map(|m| (g, m))
        })
        .collect()
}

fn by_mean(descending: bool) -> impl Fn(&(String, f64), &(String, f64)) -> Ordering {
    move |a, b| {
        let o = a.1.partial_cmp(&b.1).unwrap();
        (if descending { o.reverse() } else { o }).then_with(|| a.0.cmp(&b.0))
    }
}

fn expected_summary(rows: &[&Row]) -> Value {
    let cats = group_means(rows, |r| r.categoria.clone(), eco_score);
    let mut best = cats.clone();
    best.sort_by(by_mean(true));
    let mut worst = cats;
    worst.sort_by(by_mean(false));
    let list = |v: Vec<(String, f64)>| -> Value {
        v.into_iter().take(3).map(|(c, m)| json!({"categoria": c, "ecoScoreMedio": m})).collect()
    };
    let scores: Vec<f64> = rows.iter().filter_map(|r| eco_score(r)).collect();
    json!({
        "mediasGerais": {
            "ecoScoreMedio": mean2(rows.iter().map(|r| eco_score(r))),
            "consumoMedio": mean2(rows.iter().map(|r| consumo(r))),
            "emissaoMedia": mean2(rows.iter().map(|r| co2(r))),
        },
        "melhoresCategorias": list(best),
        "pioresCategorias": list(worst),
        "distribuicaoEcoScore": band_totals(&scores, ["0-40", "40-60", "60-80", "80-100"], [40.0, 60.0, 80.0]),
    })
}

fn expected_emissions(rows: &[&Row]) -> Value {
    let groups = |key: fn(&Row) -> String| -> Value {
        let mut g = group_means(rows, key, co2);
        g.sort_by(by_mean(false));
        g.into_iter().map(|(grupo, media)| json!({"grupo": grupo, "media": media})).collect()
    };
    let values: Vec<f64> = rows.iter().filter_map(|r| co2(r)).collect();
    json!({
        "mediaPorCategoria": groups(|r| r.categoria.clone()),
        "mediaPorCombustivel": groups(|r| r.combustivel_tipo.clone()),
        "distribuicao": band_totals(&values, ["0-100", "100-130", "130-180", "180+"], [100.0, 130.0, 180.0]),
    })
}

fn expected_brands(rows: &[&Row]) -> Value {
    let mut brands = distinct(rows, |r| r.marca.clone());
    brands.sort_by(|a, b| a.to_lowercase().cmp(&b.to_lowercase()).then_with(|| a.cmp(b)));
    let items: Vec<Value> = brands
        .into_iter()
        .map(|b| {
            let of: Vec<&&Row> = rows.iter().filter(|r| r.marca == b).collect();
            json!({
                "grupo": b,
                "quantidadeVeiculos": of.len(),
                "consumoMedio": mean2(of.iter().map(|r| consumo(r))),
                "emissaoMedia": mean2(of.iter().map(|r| co2(r))),
                "ecoScoreMedio": mean2(of.iter().map(|r| eco_score(r))),
            })
        })
        .collect();
    json!({ "items": items })
}

/// The rows with a metric, by the metric descending then id.
fn ranked<'a>(rows: &[&'a Row], metric: fn(&Row) -> Option<f64>) -> Vec<&'a Row> {
    let mut v: Vec<&Row> = rows.iter().copied().filter(|r| metric(r).is_some()).collect();
    v.sort_by(|a, b| metric(b).partial_cmp(&metric(a)).unwrap().then_with(|| a.id.cmp(&b.id)));
    v
}

fn efficiency_item(r: &Row) -> Value {
    json!({
        "vehicleId": r.id, "marca": r.marca, "modelo": r.modelo, "versao": r.versao, "ano": r.ano,
        "categoria": r.categoria, "combustivelTipo": r.combustivel_tipo,
        "eficienciaMediaReferencia": eficiencia(r), "consumoReferencia": consumo(r), "autonomiaKm": autonomia(r),
    })
}

fn eco_item(r: &Row) -> Value {
    let score = eco_score(r).unwrap();
    json!({
        "vehicleId": r.id, "marca": r.marca, "modelo": r.modelo, "versao": r.versao, "ano": r.ano,
        "categoria": r.categoria, "ecoScore": score, "faixa": faixa(score),
    })
}

fn ids(data: &Value) -> Vec<String> {
    data["items"].as_array().unwrap().iter().map(|v| v["vehicleId"].as_str().unwrap().to_string()).collect()
}

fn uids(ns: &[u32]) -> Vec<String> {
    ns.iter().map(|&n| uid(n)).collect()
}

/// A query, the rows it selects (decided here by hand) and the filters it echoes.
struct Scenario {
    query: &'static str,
    keep: fn(&Row) -> bool,
    applied: Value,
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario { query: "", keep: |_| true, applied: json!({}) },
        Scenario {
            query: "combustivel=flex",
            keep: |r| r.combustivel_tipo == "Flex",
            applied: json!({"combustivel": "flex"}),
        },
        Scenario { query: "marca=FIAT", keep: |r| r.marca.to_lowercase() == "fiat", applied: json!({"marca": "FIAT"}) },
        Scenario { query: "ano_min=2022", keep: |r| r.ano >= 2022, applied: json!({"ano_min": 2022}) },
        Scenario {
            query: "combustivel=eletrico&ano_max=2023",
            keep: |r| r.combustivel_tipo == "Elétrico" && r.ano <= 2023,
            applied: json!({"combustivel": "eletrico", "ano_max": 2023}),
        },
        Scenario {
            query: "categoria=SED&ano=2023",
            keep: |r| r.categoria == "Sedan" && r.ano == 2023,
            applied: json!({"categoria": "SED", "ano": 2023}),
        },
        Scenario { query: "marca=nada", keep: |_| false, applied: json!({"marca": "nada"}) },
    ]
}

fn with_query(path: &str, query: &str, extra: &str) -> String {
    let q: Vec<&str> = [query, extra].into_iter().filter(|s| !s.is_empty()).collect();
    if q.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", q.join("&"))
    }
}

/// GET expecting 200: (data.data, data.meta).
fn get_ok(app: &TestApp, path: &str) -> (Value, Value) {
    let (status, body) = app.get(path);
    assert_eq!(status, 200, "GET {path}: {body}");
    assert_eq!(body["success"], true);
    (body["data"]["data"].clone(), body["data"]["meta"].clone())
}

// ---------------------------------------------------------------------------------------------

/// Summary, emissions and the brand aggregation: hand-checked figures for the whole catalog and
/// the empty result, then every scenario against the independently computed expectation.
#[test]
fn aggregates_follow_the_contract() {
    let rows = fixture();
    let app = TestApp::with_rows(&rows);

    // Whole catalog, by hand. Scores: 40, 60, 80, 0, 100, 49.3, 51.6, -, -, 17.5, 100.
    let (summary, meta) = get_ok(&app, "/insights/summary");
    assert_eq!(meta["filters_applied"], json!({}));
    assert!(meta.get("pagination").is_none());
    assert_eq!(
        summary,
        json!({
            // 498.4 / 9; (0.3 + 1.65 + 1.11 + 3.0 + 0.3) / 5; 1010 / 9
            "mediasGerais": {"ecoScoreMedio": 55.38, "consumoMedio": 1.27, "emissaoMedia": 112.22},
            // Hatch and SUV tie at 100: categoria ascending. Sedan (49.3 + 51.6) / 2; Compacto
            // 197.5 / 4 = 49.375 → 49.38; Subcompacto has no score and is left out.
            "melhoresCategorias": [
                {"categoria": "Hatch", "ecoScoreMedio": 100.0},
                {"categoria": "SUV", "ecoScoreMedio": 100.0},
                {"categoria": "Sedan", "ecoScoreMedio": 50.45},
            ],
            "pioresCategorias": [
                {"categoria": "Picape", "ecoScoreMedio": 0.0},
                {"categoria": "Compacto", "ecoScoreMedio": 49.38},
                {"categoria": "Sedan", "ecoScoreMedio": 50.45},
            ],
            // 0-40: 40, 0, 17.5; 40-60: 60, 49.3, 51.6; 60-80: 80; 80-100: 100, 100
            "distribuicaoEcoScore": [
                {"faixa": "0-40", "total": 3}, {"faixa": "40-60", "total": 3},
                {"faixa": "60-80", "total": 1}, {"faixa": "80-100", "total": 2},
            ],
        })
    );

    let (emissions, meta) = get_ok(&app, "/insights/emissions");
    assert_eq!(meta["filters_applied"], json!({}));
    assert_eq!(
        emissions,
        json!({
            "mediaPorCategoria": [
                {"grupo": "Hatch", "media": 0.0}, {"grupo": "SUV", "media": 0.0},
                {"grupo": "Compacto", "media": 112.5}, {"grupo": "Sedan", "media": 155.0},
                {"grupo": "Picape", "media": 250.0},
            ],
            "mediaPorCombustivel": [
                {"grupo": "Elétrico", "media": 0.0}, {"grupo": "Gasolina", "media": 115.0},
                {"grupo": "Flex", "media": 132.5}, {"grupo": "Diesel", "media": 250.0},
            ],
            // 0-100: 100, 50, 0, 0; 100-130: 130; 130-180: 150, 180, 150; 180+: 250
            "distribuicao": [
                {"faixa": "0-100", "total": 4}, {"faixa": "100-130", "total": 1},
                {"faixa": "130-180", "total": 3}, {"faixa": "180+", "total": 1},
            ],
        })
    );

    let (brands, meta) = get_ok(&app, "/aggregations/by-brand");
    assert_eq!(meta["filters_applied"], json!({}));
    let b = |g: &str, n: u32, c: Value, e: Value, s: Value| json!({"grupo": g, "quantidadeVeiculos": n, "consumoMedio": c, "emissaoMedia": e, "ecoScoreMedio": s});
    assert_eq!(
        brands,
        json!({"items": [
            b("BYD", 1, json!(0.3), json!(0.0), json!(100.0)),
            b("Fiat", 2, Value::Null, json!(125.0), json!(50.0)),
            b("fiat", 1, json!(3.0), json!(150.0), json!(17.5)),
            b("Honda", 2, json!(1.11), json!(180.0), json!(51.6)),
            b("Peugeot", 1, json!(0.3), json!(0.0), json!(100.0)),
            b("renault", 1, Value::Null, Value::Null, Value::Null),
            b("Toyota", 2, json!(1.65), json!(190.0), json!(24.65)),
            b("VW", 1, Value::Null, json!(50.0), json!(80.0)),
        ]})
    );

    // A filter that matches nothing: empty lists, zero counts, null averages.
    let empty = app.data("/insights/summary?marca=nada");
    assert_eq!(
        empty,
        json!({
            "mediasGerais": {"ecoScoreMedio": null, "consumoMedio": null, "emissaoMedia": null},
            "melhoresCategorias": [], "pioresCategorias": [],
            "distribuicaoEcoScore": [
                {"faixa": "0-40", "total": 0}, {"faixa": "40-60", "total": 0},
                {"faixa": "60-80", "total": 0}, {"faixa": "80-100", "total": 0},
            ],
        })
    );
    let empty = app.data("/insights/emissions?ano=2100");
    assert_eq!(empty["mediaPorCategoria"], json!([]));
    assert_eq!(empty["mediaPorCombustivel"], json!([]));
    assert!(empty["distribuicao"].as_array().unwrap().iter().all(|b| b["total"] == 0));
    assert_eq!(empty["distribuicao"].as_array().unwrap().len(), 4);
    assert_eq!(app.data("/aggregations/by-brand?modelo=nada"), json!({"items": []}));

    // Every scenario: the whole payload equals the independently computed one.
    for s in scenarios() {
        let selected: Vec<&Row> = rows.iter().filter(|r| (s.keep)(r)).collect();
        for (path, expected) in [
            ("/insights/summary", expected_summary(&selected)),
            ("/insights/emissions", expected_emissions(&selected)),
            ("/aggregations/by-brand", expected_brands(&selected)),
        ] {
            let url = with_query(path, s.query, "");
            let (data, meta) = get_ok(&app, &url);
            assert_eq!(data, expected, "{url}");
            assert_eq!(meta["filters_applied"], s.applied, "{url}");
        }
    }

    // The filters really change every figure (spot checks against the whole catalog above).
    let flex = app.data("/insights/summary?combustivel=flex");
    // Flex scores: 40, 60, 49.3, 17.5 → 166.8 / 4 = 41.7; consumo 1.65, 3.0 → exactly 2.325, a tie
    // decided on the decimal value: 2.32 (the double computed, 2.3250000000000002, is above it);
    // co2 150, 100, 130, 150.
    assert_eq!(flex["mediasGerais"], json!({"ecoScoreMedio": 41.7, "consumoMedio": 2.32, "emissaoMedia": 132.5}));
    assert_eq!(
        flex["melhoresCategorias"],
        json!([{"categoria": "Sedan", "ecoScoreMedio": 49.3}, {"categoria": "Compacto", "ecoScoreMedio": 39.17}])
    );
    let totals: Vec<u64> =
        flex["distribuicaoEcoScore"].as_array().unwrap().iter().map(|b| b["total"].as_u64().unwrap()).collect();
    assert_eq!(totals, vec![2, 2, 0, 0]);
}

/// The two paginated lists: order (published values, id tie-breaker), items, pagination from the
/// first page to past the end, filters; then parameter validation and the OpenAPI entries.
#[test]
fn lists_order_paginate_and_validate() {
    let rows = fixture();
    let app = TestApp::with_rows(&rows);
    let all: Vec<&Row> = rows.iter().collect();

    // By hand: efficiency 45 (5), 45 (11), 15.5, 15, 13.0 (1, 7, and 10 whose raw 13.002 is
    // published as 13.0), 12, 11.5, 10; 9 has no efficiency.
    let (data, meta) = get_ok(&app, "/insights/efficiency");
    assert_eq!(ids(&data), uids(&[5, 11, 6, 2, 1, 7, 10, 3, 8, 4]));
    assert_eq!(
        meta["pagination"],
        json!({"page": 1, "page_size": 20, "total": 10, "total_pages": 1, "next_cursor": null})
    );
    assert_eq!(meta["filters_applied"], json!({}));
    let first = &data["items"][0];
    assert_eq!(first["autonomiaKm"], Value::Null, "electric without range: {first}");
    assert_eq!(first["consumoReferencia"], json!(0.3));
    assert_eq!(data["items"][1]["autonomiaKm"], json!(300.0));
    assert_eq!(data["items"][6]["autonomiaKm"], json!(650.1), "50 L × 13.002 km/L");
    assert_eq!(data["items"][4]["consumoReferencia"], Value::Null);
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        vec![
            "vehicleId",
            "marca",
            "modelo",
            "versao",
            "ano",
            "categoria",
            "combustivelTipo",
            "eficienciaMediaReferencia",
            "consumoReferencia",
            "autonomiaKm"
        ]
    );

    // By hand: scores 100 (5), 100 (11), 80, 60, 51.6, 49.3, 40, 17.5, 0; 8 and 9 unscored.
    let (data, meta) = get_ok(&app, "/insights/eco-scores");
    assert_eq!(ids(&data), uids(&[5, 11, 3, 2, 7, 6, 1, 10, 4]));
    assert_eq!(
        meta["pagination"],
        json!({"page": 1, "page_size": 20, "total": 9, "total_pages": 1, "next_cursor": null})
    );
    let faixas: Vec<&str> = data["items"].as_array().unwrap().iter().map(|i| i["faixa"].as_str().unwrap()).collect();
    assert_eq!(
        faixas,
        vec!["Excelente", "Excelente", "Bom", "Regular", "Regular", "Regular", "Baixo", "Baixo", "Baixo"]
    );
    assert_eq!(data["items"][4]["ecoScore"], json!(51.6));
    let keys: Vec<&String> = data["items"][0].as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["vehicleId", "marca", "modelo", "versao", "ano", "categoria", "ecoScore", "faixa"]);

    // Every scenario, every page (first, middle, last, past the end) against the expectation.
    type ListCase = (&'static str, fn(&Row) -> Option<f64>, fn(&Row) -> Value);
    let lists: [ListCase; 2] =
        [("/insights/efficiency", eficiencia, efficiency_item), ("/insights/eco-scores", eco_score, eco_item)];
    for s in scenarios() {
        let selected: Vec<&Row> = all.iter().copied().filter(|r| (s.keep)(r)).collect();
        for (path, metric, item) in lists {
            let expected: Vec<Value> = ranked(&selected, metric).into_iter().map(item).collect();
            let total = expected.len();
            let size = 4;
            let pages = total.div_ceil(size);
            for page in 1..=pages + 1 {
                let url = with_query(path, s.query, &format!("page={page}&page_size={size}"));
                let (data, meta) = get_ok(&app, &url);
                let want: Vec<Value> = expected.iter().skip((page - 1) * size).take(size).cloned().collect();
                assert_eq!(data, json!({ "items": want }), "{url}");
                // A next cursor exactly when a later item exists.
                let mut pagination = meta["pagination"].clone();
                let cursor = pagination.as_object_mut().unwrap().remove("next_cursor").unwrap();
                assert_eq!(cursor.is_string(), page * size < total, "{url}: {cursor}");
                assert_eq!(
                    pagination,
                    json!({"page": page, "page_size": size, "total": total, "total_pages": pages}),
                    "{url}"
                );
                assert_eq!(meta["filters_applied"], s.applied, "{url}");
            }
        }
    }

    // Pages by hand: 9 scored vehicles in pages of 4.
    let page = |p: u32| ids(&app.data(&format!("/insights/eco-scores?page={p}&page_size=4")));
    assert_eq!(page(1), uids(&[5, 11, 3, 2]));
    assert_eq!(page(2), uids(&[7, 6, 1, 10]));
    assert_eq!(page(3), uids(&[4]));
    assert!(page(4).is_empty());
    let (data, meta) = get_ok(&app, "/insights/efficiency?page=1000000&page_size=100");
    assert_eq!(data, json!({"items": []}));
    assert_eq!(
        meta["pagination"],
        json!({"page": 1000000, "page_size": 100, "total": 10, "total_pages": 1, "next_cursor": null})
    );

    // Parameters: FILTERS everywhere, PAGING only on the two lists.
    let cases = [
        ("/insights/summary?page=1", "'page' não é aceito"),
        ("/insights/emissions?page_size=5", "'page_size' não é aceito"),
        ("/aggregations/by-brand?metric=co2", "'metric' não é aceito"),
        ("/insights/summary?top=3", "'top' não é aceito"),
        ("/insights/efficiency?page=0", "'page' deve ser maior que 0"),
        ("/insights/eco-scores?page_size=101", "'page_size' deve estar entre 1 e 100"),
        ("/insights/eco-scores?order=asc", "'order' não é aceito"),
        ("/insights/efficiency?metric=eficiencia", "'metric' não é aceito"),
        ("/insights/summary?ano=2020&ano_min=2019", "'ano' não pode ser combinado"),
        ("/insights/emissions?ano_min=2023&ano_max=2020", "'ano_min' (2023) não pode ser maior"),
        ("/aggregations/by-brand?marca=", "'marca' não pode ser vazio"),
        ("/insights/eco-scores?ano=1800", "'ano' deve estar entre 1900 e 2100"),
        ("/insights/summary?marca=a&marca=b", "'marca' informado mais de uma vez"),
    ];
    for (url, expected) in cases {
        let msg = assert_error(app.get(url), 400, "VALIDATION_ERROR");
        assert!(msg.contains(expected), "{url}: {msg}");
    }

    // The OpenAPI document lists the five operations with their parameters and nullable fields.
    let (status, doc) = into_json(app.raw("GET", "/openapi.json").send());
    assert_eq!(status, 200);
    for (path, paged) in [
        ("/insights/summary", false),
        ("/insights/efficiency", true),
        ("/insights/eco-scores", true),
        ("/insights/emissions", false),
        ("/aggregations/by-brand", false),
    ] {
        let op = &doc["paths"][path]["get"];
        let names: Vec<&str> =
            op["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"marca") && names.contains(&"ano_max"), "{path}: {names:?}");
        assert_eq!(names.contains(&"page") && names.contains(&"page_size"), paged, "{path}: {names:?}");
        assert!(op["responses"]["200"].is_object() && op["responses"]["400"].is_object(), "{path}");
    }
    let schemas = &doc["components"]["schemas"];
    for (schema, field) in
        [("MediasGerais", "ecoScoreMedio"), ("BrandAggregate", "consumoMedio"), ("EfficiencyItem", "autonomiaKm")]
    {
        let s = &schemas[schema];
        assert!(s["required"].as_array().unwrap().contains(&json!(field)), "{schema}.{field} required: {s}");
        assert!(s["properties"][field].to_string().contains("null"), "{schema}.{field} nullable: {s}");
    }
    let eco = &schemas["EcoScoreItem"];
    assert!(!eco["properties"]["ecoScore"].to_string().contains("null"), "ecoScore is never null: {eco}");
}
