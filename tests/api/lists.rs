//! Lists that answer an analyst's question (API-CONTRACT §7): range filters on every filtered
//! operation, `sort`, `fields` and cursors. Expected answers come from the contract's formulas
//! applied to the fixture rows (`expected`), never from the service's own views.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;
use crate::expected;

/// Thirty vehicles with spread metrics, some nulls of each kind and two electric ones.
fn rows() -> Vec<Row> {
    let brands = ["Fiat", "BYD", "Volkswagen", "Toyota", "Renault"];
    let fuels = ["Flex", "Gasolina", "Diesel", "Etanol", "Flex"];
    (1..=30u32)
        .map(|i| {
            let k = i as f64;
            let mut r = Row::new(
                i,
                brands[(i % 5) as usize],
                &format!("M{:02}", (i * 7) % 11),
                2015 + (i % 9) as i32,
                if i % 3 == 0 { "SUV" } else { "Compacto" },
                fuels[(i % 4) as usize],
            );
            r.consumo_energetico_mj_km = Some(1.2 + (k * 0.137) % 1.6);
            r.co2_fossil_g_km = Some(60.0 + (k * 13.31) % 170.0);
            r.eficiencia_cidade_km_l = Some(8.0 + (k * 1.73) % 9.0);
            r.eficiencia_estrada_km_l = Some(9.5 + (k * 1.41) % 8.0);
            r.tanque_l = Some(40.0 + (i % 4) as f64 * 5.0);
            r.transmissao_marchas = if i % 4 == 0 { None } else { Some(4 + (i % 3) as i32) };
            if r.combustivel_tipo == "Flex" {
                r.eficiencia_cidade_etanol_km_l = Some(6.0 + (k * 0.91) % 4.0);
                r.eficiencia_estrada_etanol_km_l = Some(7.0 + (k * 0.77) % 4.0);
            }
            match i {
                7 => r.co2_fossil_g_km = None,
                11 => r.consumo_energetico_mj_km = None,
                13 => {
                    r.consumo_energetico_mj_km = None;
                    r.co2_fossil_g_km = None;
                }
                17 => {
                    r.eficiencia_cidade_km_l = None;
                    r.eficiencia_estrada_km_l = None;
                }
                _ => {}
            }
            if i == 20 || i == 25 {
                r.combustivel_tipo = "Elétrico".into();
                r.tipo_propulsao = "Elétrico".into();
                r.consumo_energetico_mj_km = Some(0.4 + k / 100.0);
                r.co2_fossil_g_km = Some(0.0);
                r.autonomia_eletrica_km = Some(250.0 + k * 3.333);
                r.tanque_l = None;
                (r.nmhc_g_km, r.co_g_km, r.nox_g_km) = (None, None, None);
            }
            r
        })
        .collect()
}

fn serve() -> (TestApp, Vec<Row>) {
    let rows = rows();
    (TestApp::with_rows(&rows), rows)
}

fn ids(items: &Value, key: &str) -> Vec<String> {
    items["items"].as_array().unwrap().iter().map(|i| i[key].as_str().unwrap().to_string()).collect()
}

fn id_set(rows: &[&Row]) -> BTreeSet<String> {
    rows.iter().map(|r| r.id.clone().unwrap()).collect()
}

/// A metric of the model, by range stem.
fn metric(stem: &str, r: &Row) -> Option<f64> {
    match stem {
        "eco_score" => expected::eco_score(r),
        "consumo" => expected::consumo(r),
        "co2" => expected::co2(r),
        "autonomia" => expected::autonomia(r),
        "eficiencia" => expected::eficiencia(r),
        "autonomia_eletrica" => r.autonomia_eletrica_km.map(|v| round(v, 2)),
        "custo" => expected::custo(r),
        _ => unreachable!("{stem}"),
    }
}

#[test]
fn range_filters_compare_published_values_inclusively_and_drop_nulls() {
    let (app, rows) = serve();
    for stem in ["eco_score", "consumo", "co2", "autonomia", "eficiencia", "autonomia_eletrica", "custo"] {
        let mut values: Vec<f64> = rows.iter().filter_map(|r| metric(stem, r)).collect();
        values.sort_by(f64::total_cmp);
        let (lo, hi) = (values[values.len() / 4], values[values.len() * 3 / 4]);
        // Bounds equal to published values (inclusive), one-sided and two-sided, and a bound
        // just past a value (exclusive of it).
        let cases = [
            (format!("{stem}_min={lo}"), Some(lo), None),
            (format!("{stem}_max={hi}"), None, Some(hi)),
            (format!("{stem}_min={lo}&{stem}_max={hi}"), Some(lo), Some(hi)),
            (format!("{stem}_min={lo}&{stem}_max={lo}"), Some(lo), Some(lo)),
            (format!("{stem}_min={}", lo + 0.005), Some(lo + 0.005), None),
        ];
        for (query, min, max) in cases {
            let want: Vec<&Row> = rows
                .iter()
                .filter(|r| metric(stem, r).is_some_and(|v| min.is_none_or(|m| v >= m) && max.is_none_or(|m| v <= m)))
                .collect();
            let (status, body) = app.get(&format!("/catalog/vehicles?page_size=100&{query}"));
            assert_eq!(status, 200, "{query}: {body}");
            let got: BTreeSet<String> = ids(&body["data"]["data"], "id").into_iter().collect();
            assert_eq!(got, id_set(&want), "{query}");
            assert_eq!(body["data"]["meta"]["pagination"]["total"], want.len(), "{query}");
            let applied = &body["data"]["meta"]["filters_applied"];
            if let Some(m) = min {
                // As a number (JSON float parsing may differ from Rust's by one ulp).
                let echoed = applied[format!("{stem}_min")].as_f64().unwrap_or(f64::NAN);
                assert!(close(echoed, m), "{query}: {applied}");
            }
            // The same filter on other operations: the eco score list, the custom ranking and
            // the summary's mean.
            let scored: Vec<&Row> = want.iter().copied().filter(|r| expected::eco_score(r).is_some()).collect();
            let list = app.data(&format!("/insights/eco-scores?page_size=100&{query}"));
            assert_eq!(ids(&list, "vehicleId").into_iter().collect::<BTreeSet<_>>(), id_set(&scored), "{query}");
            let top = app.data(&format!("/rankings/custom?top=100&{query}"));
            assert_eq!(ids(&top, "vehicleId").into_iter().collect::<BTreeSet<_>>(), id_set(&scored), "{query}");
            if !scored.is_empty() {
                let mean = scored.iter().map(|r| expected::eco_score(r).unwrap()).sum::<f64>() / scored.len() as f64;
                let summary = app.data(&format!("/insights/summary?{query}"));
                assert_eq!(summary["mediasGerais"]["ecoScoreMedio"].as_f64(), Some(round(mean, 2)), "{query}");
            }
        }
    }
    // Validation: not a finite number, min > max.
    for (query, needle) in [
        ("co2_min=abc", "'co2_min' deve ser um número finito"),
        ("custo_max=inf", "'custo_max' deve ser um número finito"),
        ("eco_score_min=NaN", "'eco_score_min' deve ser um número finito"),
        ("consumo_min=2&consumo_max=1", "'consumo_min' (2) não pode ser maior que 'consumo_max' (1)"),
    ] {
        for path in ["/catalog/vehicles", "/insights/summary", "/rankings/by-brand", "/facets"] {
            let message = assert_error(app.get(&format!("{path}?{query}")), 400, "VALIDATION_ERROR");
            assert!(message.contains(needle), "{path}?{query}: {message}");
        }
    }
}

/// The fixture's rows ordered as the contract says: keys in order, nulls last in either
/// direction, id ascending last.
/// One sort key of the model: the value of a row (None for null) and whether it is descending.
type ModelKey<'k> = (&'k dyn Fn(&Row) -> Option<Key>, bool);

fn sorted_by<'a>(rows: &[&'a Row], keys: &[ModelKey<'_>]) -> Vec<&'a Row> {
    let mut out = rows.to_vec();
    out.sort_by(|a, b| {
        for (key, desc) in keys {
            let ord = match (key(a), key(b)) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(x), Some(y)) => {
                    let o = x.partial_cmp(&y).unwrap();
                    if *desc {
                        o.reverse()
                    } else {
                        o
                    }
                }
            };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        a.id.cmp(&b.id)
    });
    out
}

#[derive(PartialEq, PartialOrd)]
enum Key {
    N(f64),
    T(String),
}

#[test]
fn sort_orders_by_item_fields_with_nulls_last_and_id_ties() {
    let (app, rows) = serve();
    let all: Vec<&Row> = rows.iter().collect();
    let ano = |r: &Row| Some(Key::N(r.ano as f64));
    let marca = |r: &Row| Some(Key::T(r.marca.clone()));
    let marchas = |r: &Row| r.transmissao_marchas.map(|m| Key::N(m as f64));
    let modelo = |r: &Row| Some(Key::T(r.modelo.clone()));
    let cases: Vec<(&str, Vec<ModelKey<'_>>)> = vec![
        ("-ano,marca", vec![(&ano, true), (&marca, false)]),
        ("transmissao_marchas,-ano", vec![(&marchas, false), (&ano, true)]),
        ("-transmissao_marchas", vec![(&marchas, true)]),
        ("modelo", vec![(&modelo, false)]),
        ("-id", vec![]),
    ];
    for (sort, keys) in cases {
        let mut want: Vec<String> = sorted_by(&all, &keys).iter().map(|r| r.id.clone().unwrap()).collect();
        if sort == "-id" {
            want.reverse();
        }
        let got = ids(&app.data(&format!("/catalog/vehicles?page_size=100&sort={sort}")), "id");
        assert_eq!(got, want, "sort={sort}");
    }
    // The efficiency list (vehicles with an efficiency) by consumption: the two without one last.
    let with_eff: Vec<&Row> = rows.iter().filter(|r| expected::eficiencia(r).is_some()).collect();
    let consumo = |r: &Row| expected::consumo(r).map(Key::N);
    for (sort, desc) in [("consumoReferencia", false), ("-consumoReferencia", true)] {
        let want: Vec<String> =
            sorted_by(&with_eff, &[(&consumo, desc)]).iter().map(|r| r.id.clone().unwrap()).collect();
        let got = ids(&app.data(&format!("/insights/efficiency?page_size=100&sort={sort}")), "vehicleId");
        assert_eq!(got, want, "sort={sort}");
        assert_eq!(got.last(), want.last());
        assert!(rows.iter().any(|r| r.id == Some(got[got.len() - 1].clone()) && expected::consumo(r).is_none()));
    }
    // Eco scores by band then score ascending.
    let scored: Vec<&Row> = rows.iter().filter(|r| expected::eco_score(r).is_some()).collect();
    let faixa = |r: &Row| expected::eco_score(r).map(|s| Key::T(expected::faixa(s).to_string()));
    let score = |r: &Row| expected::eco_score(r).map(Key::N);
    let want: Vec<String> =
        sorted_by(&scored, &[(&faixa, false), (&score, false)]).iter().map(|r| r.id.clone().unwrap()).collect();
    assert_eq!(ids(&app.data("/insights/eco-scores?page_size=100&sort=faixa,ecoScore"), "vehicleId"), want);
    for (query, needle) in [
        ("sort=cor", "campo 'cor' desconhecido"),
        ("sort=ano,-ano", "campo 'ano' repetido"),
        ("sort=ecoScore", "campo 'ecoScore' desconhecido"),
    ] {
        let message = assert_error(app.get(&format!("/catalog/vehicles?{query}")), 400, "VALIDATION_ERROR");
        assert!(message.contains(needle), "{query}: {message}");
    }
}

#[test]
fn fields_choose_and_order_the_item_fields_in_json_and_csv() {
    let (app, rows) = serve();
    let data = app.data("/catalog/vehicles?page_size=3&fields=ano,id,marca");
    for item in data["items"].as_array().unwrap() {
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["ano", "id", "marca"]);
        let row = rows.iter().find(|r| r.id.as_deref() == item["id"].as_str()).unwrap();
        assert_eq!(item["ano"], row.ano);
    }
    let csv = app.get_req("/insights/eco-scores?page_size=2&fields=ecoScore,vehicleId&format=csv").send();
    assert_eq!(csv.status, 200);
    let text = csv.text();
    assert_eq!(text.lines().next(), Some("ecoScore,vehicleId"), "{text}");
    let top = app.data("/rankings/custom?top=3&fields=vehicleId,ecoScore");
    for item in top["items"].as_array().unwrap() {
        assert_eq!(item.as_object().unwrap().keys().collect::<Vec<_>>(), ["vehicleId", "ecoScore"]);
    }
    for (path, query, needle) in [
        ("/catalog/vehicles", "fields=id,id", "campo 'id' repetido"),
        ("/catalog/vehicles", "fields=vehicleId", "campo 'vehicleId' desconhecido"),
        ("/rankings/custom", "fields=id", "campo 'id' desconhecido"),
    ] {
        let message = assert_error(app.get(&format!("{path}?{query}")), 400, "VALIDATION_ERROR");
        assert!(message.contains(needle), "{query}: {message}");
    }
}

/// Follows next_cursor from `first`, alternating page sizes and fields; returns every id seen
/// (by `key`) and the number of pages.
fn walk(app: &TestApp, path: &str, query: &str, key: &str) -> (Vec<String>, usize) {
    let mut seen = Vec::new();
    let mut pages = 0;
    let mut url = format!("{path}?{query}&page_size=7");
    loop {
        let (status, body) = app.get(&url);
        assert_eq!(status, 200, "{url}: {body}");
        pages += 1;
        let items = body["data"]["data"]["items"].as_array().unwrap();
        seen.extend(items.iter().map(|i| i[key].as_str().unwrap().to_string()));
        match body["data"]["meta"]["pagination"]["next_cursor"].as_str() {
            Some(next) => {
                let size = if pages % 2 == 0 { 7 } else { 4 };
                url = format!("{path}?{query}&page_size={size}&fields={key}&cursor={next}");
            }
            None => {
                assert!(body["data"]["meta"]["pagination"]["next_cursor"].is_null());
                return (seen, pages);
            }
        }
        assert!(pages < 100);
    }
}

#[test]
fn a_cursor_walk_is_the_whole_ordered_list() {
    let (app, rows) = serve();
    // A field the catalog's items do not have cannot order it.
    assert_error(app.get("/catalog/vehicles?sort=-co2_referencia_g_km"), 400, "VALIDATION_ERROR");
    // Gasolina and Etanol (the fuels whose folded name holds an "a"), newest first, walked whole
    // in pages of 7 and 4 items.
    let ano = |r: &Row| Some(Key::N(r.ano as f64));
    let matching: Vec<&Row> = rows.iter().filter(|r| fold(&r.combustivel_tipo).contains('a')).collect();
    let want: Vec<String> = sorted_by(&matching, &[(&ano, true)]).iter().map(|r| r.id.clone().unwrap()).collect();
    let (seen, pages) = walk(&app, "/catalog/vehicles", "combustivel=a&sort=-ano", "id");
    assert_eq!(seen, want);
    assert!(pages > 2, "{pages} pages");
    // The eco score list in its own order, walked whole, equals the ordered list.
    let scored: Vec<&Row> = rows.iter().filter(|r| expected::eco_score(r).is_some()).collect();
    let score = |r: &Row| expected::eco_score(r).map(Key::N);
    let want: Vec<String> = sorted_by(&scored, &[(&score, true)]).iter().map(|r| r.id.clone().unwrap()).collect();
    let (seen, _) = walk(&app, "/insights/eco-scores", "ano_min=2015", "vehicleId");
    assert_eq!(seen, want);
    // An exactly full last page has no next cursor.
    let n = scored.len();
    let body = app.data(&format!("/insights/eco-scores?page_size={n}"));
    let (_, full) = app.get(&format!("/insights/eco-scores?page_size={n}"));
    assert_eq!(body["items"].as_array().unwrap().len(), n);
    assert!(full["data"]["meta"]["pagination"]["next_cursor"].is_null(), "{full}");
}

/// The folded form the text filters match (lower case, no accents), for the fixture's names.
fn fold(s: &str) -> String {
    s.to_lowercase().replace('é', "e").replace('í', "i")
}

#[test]
fn cursors_are_bound_to_their_filters_sort_and_dataset_version() {
    let (app, rows) = serve();
    let (_, first) = app.get("/catalog/vehicles?marca=fiat&sort=-ano&page_size=2");
    let next = first["data"]["meta"]["pagination"]["next_cursor"].as_str().unwrap().to_string();
    assert_eq!(app.get(&format!("/catalog/vehicles?marca=fiat&sort=-ano&cursor={next}")).0, 200);
    for (query, needle) in [
        (format!("marca=byd&sort=-ano&cursor={next}"), "outros filtros"),
        (format!("marca=fiat&sort=ano&cursor={next}"), "outra ordenação"),
        (format!("marca=fiat&sort=-ano&page=2&cursor={next}"), "'page'"),
        (format!("marca=fiat&sort=-ano&cursor={}", next.replacen('3', "4", 1)), "'cursor' inválido"),
        ("cursor=zz".to_string(), "'cursor' inválido"),
    ] {
        let message = assert_error(app.get(&format!("/catalog/vehicles?{query}")), 400, "VALIDATION_ERROR");
        assert!(message.contains(needle), "{query}: {message}");
    }
    // Another list's cursor is another list's.
    let message = assert_error(
        app.get(&format!("/insights/eco-scores?marca=fiat&sort=-ano&cursor={next}")),
        400,
        "VALIDATION_ERROR",
    );
    assert!(message.contains("outra listagem"), "{message}");
    // The export changes: the old cursor answers 409, never a page of the new data.
    let v1 = app.raw("GET", "/readyz").send().json()["dataset"]["version"].as_str().unwrap().to_string();
    let mut changed = rows.clone();
    changed.truncate(25);
    let tmp = app.data.with_extension("tmp");
    write_rows(&changed, &tmp);
    std::fs::rename(&tmp, &app.data).unwrap();
    let start = Instant::now();
    while app.raw("GET", "/readyz").send().json()["dataset"]["version"].as_str() == Some(v1.as_str()) {
        assert!(start.elapsed() < Duration::from_secs(15), "no swap");
        std::thread::sleep(Duration::from_millis(50));
    }
    let message =
        assert_error(app.get(&format!("/catalog/vehicles?marca=fiat&sort=-ano&cursor={next}")), 409, "DATASET_CHANGED");
    assert!(message.contains(&v1), "{message}");
}
