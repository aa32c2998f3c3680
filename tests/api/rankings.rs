//! GET /rankings/*: custom, grouped (category, fuel, brand, year) and the fixed rankings.
//!
//! Expected answers come from the fixture's raw inputs through an independent model of the
//! contract's formulas (`Published`), never from the code under test; the small fixture's key
//! answers are also written out by hand.

use polars::prelude::*;
use serde_json::{json, Value};

use crate::common::*;

// ---------------------------------------------------------------------------------------------
// Independent model of the published values (API-CONTRACT §2)
// ---------------------------------------------------------------------------------------------

/// One vehicle with the values the service publishes, computed here from the raw row.
#[derive(Debug, Clone)]
struct Published {
    row: Row,
    id: String,
    eficiencia: Option<f64>,
    consumo: Option<f64>,
    co2: Option<f64>,
    autonomia: Option<f64>,
    eco: Option<f64>,
    /// The electric range as ranked (two decimals).
    autonomia_eletrica: Option<f64>,
}

fn fold(s: &str) -> String {
    s.to_lowercase()
        .chars()
        .map(|c| match c {
            'á' | 'à' | 'â' | 'ã' | 'ä' => 'a',
            'é' | 'ê' | 'è' | 'ë' => 'e',
            'í' | 'ì' | 'î' | 'ï' => 'i',
            'ó' | 'ò' | 'ô' | 'õ' | 'ö' => 'o',
            'ú' | 'ù' | 'û' | 'ü' => 'u',
            'ç' => 'c',
            other => other,
        })
        .collect()
}

fn mean2(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some((a + b) / 2.0),
        (Some(v), None) | (None, Some(v)) => Some(v),
        (None, None) => None,
    }
}

impl Published {
    fn of(r: &Row) -> Published {
        let efic_raw = mean2(r.eficiencia_cidade_km_l, r.eficiencia_estrada_km_l);
        let consumo = r.consumo_energetico_mj_km.map(|v| round(v, 2));
        let co2 = r.co2_fossil_g_km.map(|v| round(v, 2));
        let autonomia = if fold(&r.combustivel_tipo) == "eletrico" {
            r.autonomia_eletrica_km
        } else {
            match (r.tanque_l, efic_raw) {
                (Some(t), Some(e)) => Some(t * e + r.autonomia_eletrica_km.unwrap_or(0.0)),
                _ => None,
            }
        };
        let eco = crate::expected::eco_score(r);
        Published {
            row: r.clone(),
            id: r.id.clone().unwrap(),
            eficiencia: efic_raw.map(|v| round(v, 2)),
            consumo,
            co2,
            autonomia: autonomia.map(|v| round(v, 2)),
            eco,
            autonomia_eletrica: r.autonomia_eletrica_km.map(|v| round(v, 2)),
        }
    }

    /// The published value of a `metric` query value.
    fn metric(&self, metric: &str) -> Option<f64> {
        match metric {
            "eco_score" => self.eco,
            "consumo" => self.consumo,
            "co2" => self.co2,
            "autonomia" => self.autonomia,
            "eficiencia" => self.eficiencia,
            "autonomia_eletrica" => self.autonomia_eletrica,
            other => panic!("unknown metric {other}"),
        }
    }
}

/// The natural best-first direction (true = descending).
fn natural_desc(metric: &str) -> bool {
    !matches!(metric, "consumo" | "co2")
}

/// Vehicles with a value, by value in the direction, then id ascending.
fn rank<'a>(vs: impl IntoIterator<Item = &'a Published>, metric: &str, desc: bool) -> Vec<&'a Published> {
    let mut out: Vec<&Published> = vs.into_iter().filter(|p| p.metric(metric).is_some()).collect();
    out.sort_by(|a, b| {
        let (x, y) = (a.metric(metric).unwrap(), b.metric(metric).unwrap());
        let c = if desc { y.total_cmp(&x) } else { x.total_cmp(&y) };
        c.then_with(|| a.id.cmp(&b.id))
    });
    out
}

fn ids_of(ps: &[&Published]) -> Vec<String> {
    ps.iter().map(|p| p.id.clone()).collect()
}

fn item_ids(items: &Value, key: &str) -> Vec<String> {
    items.as_array().unwrap().iter().map(|v| v[key].as_str().unwrap().to_string()).collect()
}

fn uids(ns: &[u32]) -> Vec<String> {
    ns.iter().map(|&n| uid(n)).collect()
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// A ranking base item exactly as published for this vehicle (key order included).
fn assert_base_item(item: &Value, p: &Published) {
    let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
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
            "tipoPropulsao",
            "transmissaoTipo",
            "ecoScore",
            "consumoReferencia",
            "co2ReferenciaGKm",
            "autonomiaKm",
            "eficienciaMediaReferencia"
        ]
    );
    let r = &p.row;
    assert_eq!(item["vehicleId"], p.id.as_str());
    assert_eq!(item["marca"], r.marca.as_str());
    assert_eq!(item["modelo"], r.modelo.as_str());
    assert_eq!(item["versao"], r.versao.as_str());
    assert_eq!(item["ano"], r.ano);
    assert_eq!(item["categoria"], r.categoria.as_str());
    assert_eq!(item["combustivelTipo"], r.combustivel_tipo.as_str());
    assert_eq!(item["tipoPropulsao"], r.tipo_propulsao.as_str());
    assert_eq!(item["transmissaoTipo"], json!(r.transmissao_tipo));
    for (key, want) in [
        ("ecoScore", p.eco),
        ("consumoReferencia", p.consumo),
        ("co2ReferenciaGKm", p.co2),
        ("autonomiaKm", p.autonomia),
        ("eficienciaMediaReferencia", p.eficiencia),
    ] {
        match want {
            None => assert!(item[key].is_null(), "{key} must be null: {item}"),
            Some(w) => assert!(close(num(&item[key]).unwrap(), w), "{key}: {} vs {w}", item[key]),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The small fixture, built so every answer is known
// ---------------------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn car(
    n: u32,
    marca: &str,
    modelo: &str,
    ano: i32,
    categoria: &str,
    combustivel: &str,
    efic: Option<f64>,
    mj: Option<f64>,
    co2: Option<f64>,
) -> Row {
    let mut r = Row::new(n, marca, modelo, ano, categoria, combustivel);
    r.eficiencia_cidade_km_l = efic;
    r.eficiencia_estrada_km_l = efic;
    r.consumo_energetico_mj_km = mj;
    r.co2_fossil_g_km = co2;
    r
}

/// Published values (see the model): eco scores 4: 94.3, 12: 93.5, 14: 92.6, 7: 78.1, 11: 71.3,
/// 6: 70.6, 2: 65.2, 1/9/13: 62.8 (13's raw score 62.84 is highest of the three), 3: 59.7,
/// 5: 45.8, 8: 32.1, 10: null. Efficiency: 4: 50, 12: 45, 14: 40, 7: 20, 6: 17, 11: 16, 2: 15,
/// 1/9/13: 14 (13's raw 14.002), 3: 13, 5: 10, 8: 9. CO2: 4/12/14: 0, 7: 50, 6: 80, 11: 90,
/// 2: 95, 1/9: 100, 3: 110, 13: 120, 5: 150, 8: 200.25. Electric range: 12: 338, 4/14: 291.
fn fixture() -> Vec<Row> {
    let mut rows = vec![
        car(1, "Fiat", "Argo", 2020, "Compacto", "Flex", Some(14.0), Some(1.50), Some(100.0)),
        car(2, "Fiat", "Mobi", 2021, "Compacto", "Flex", Some(15.0), Some(1.40), Some(95.0)),
        car(3, "Volkswagen", "Polo", 2021, "Compacto", "Gasolina", Some(13.0), Some(1.60), Some(110.0)),
        car(4, "BYD", "Dolphin", 2024, "Compacto", "Elétrico", Some(50.0), Some(0.45), Some(0.0)),
        car(5, "Jeep", "Compass", 2022, "SUV", "Flex", Some(10.0), Some(2.10), Some(150.0)),
        car(6, "Toyota", "Corolla Cross", 2023, "SUV", "Gasolina", Some(17.0), Some(1.20), Some(80.0)),
        car(7, "BYD", "Song Plus", 2024, "SUV", "Gasolina", Some(20.0), Some(1.00), Some(50.0)),
        car(8, "Toyota", "Hilux", 2022, "Picape", "Diesel", Some(9.0), Some(2.50), Some(200.25)),
        // Same inputs as 1: ties on every metric.
        car(9, "Fiat", "Argo", 2022, "Compacto", "Flex", Some(14.0), Some(1.50), Some(100.0)),
        // No metric at all: left out of every ranking.
        car(10, "Renault", "Kwid", 2020, "Compacto", "Flex", None, None, None),
        // No energy figure: no consumo, but still a score (CO2 and pollutants).
        car(11, "Chevrolet", "Onix", 2023, "Compacto", "Flex", Some(16.0), None, Some(90.0)),
        car(12, "Volvo", "EX30", 2024, "SUV", "Elétrico", Some(45.0), Some(0.50), Some(0.0)),
        car(13, "Fiat", "Argo", 2020, "Compacto", "Flex", Some(14.0), Some(1.33), Some(120.0)),
        car(14, "Renault", "Megane E-Tech", 2024, "SUV", "Elétrico", Some(40.0), Some(0.55), Some(0.0)),
    ];
    // 14.002 is published as 14.00: tied with 1 and 9 on the published value.
    rows[12].eficiencia_cidade_km_l = Some(14.004);
    rows[5].tipo_propulsao = "Híbrido".into();
    rows[6].tipo_propulsao = "Híbrido Plug-in".into();
    rows[6].autonomia_eletrica_km = Some(51.0);
    rows[3].autonomia_eletrica_km = Some(291.0);
    rows[11].autonomia_eletrica_km = Some(338.0);
    // Published as 291.00: tied with 4.
    rows[13].autonomia_eletrica_km = Some(291.004);
    rows[13].transmissao_tipo = None;
    for r in rows.iter_mut().filter(|r| r.combustivel_tipo == "Elétrico") {
        r.tanque_l = None;
    }
    rows
}

fn model(rows: &[Row]) -> Vec<Published> {
    rows.iter().map(Published::of).collect()
}

/// The model reproduces the hand-computed values the fixture documents.
#[test]
fn fixture_model_matches_the_documented_values() {
    let m = model(&fixture());
    let eco: Vec<String> = ids_of(&rank(&m, "eco_score", true));
    assert_eq!(eco, uids(&[4, 12, 14, 7, 11, 6, 2, 1, 9, 13, 3, 5, 8]));
    assert_eq!(m[12].eco, Some(62.8));
    assert_eq!(m[12].eficiencia, Some(14.0));
    assert_eq!(m[13].autonomia_eletrica, Some(291.0));
}

#[test]
fn custom_ranking() {
    let rows = fixture();
    let m = model(&rows);
    let app = TestApp::with_rows(&rows);

    // Defaults: eco_score, desc, top 10; the 62.8 tie is broken by id, not by the raw score.
    let (status, body) = app.get("/rankings/custom");
    assert_eq!(status, 200);
    let items = &body["data"]["data"]["items"];
    assert_eq!(item_ids(items, "vehicleId"), uids(&[4, 12, 14, 7, 11, 6, 2, 1, 9, 13]));
    assert_eq!(body["data"]["meta"]["filters_applied"], json!({"metric": "eco_score", "order": "desc", "top": 10}));
    assert!(body["data"]["meta"].get("pagination").is_none());
    for item in items.as_array().unwrap() {
        let p = m.iter().find(|p| p.id == item["vehicleId"]).unwrap();
        assert_base_item(item, p);
    }
    // Nullable fields are null, not missing.
    let d = app.data("/rankings/custom?metric=autonomia&top=100");
    let megane = d["items"].as_array().unwrap().iter().find(|i| i["vehicleId"] == uid(14).as_str()).unwrap();
    assert!(megane["transmissaoTipo"].is_null());
    let d = app.data("/rankings/custom?metric=eficiencia&top=100");
    let onix = d["items"].as_array().unwrap().iter().find(|i| i["vehicleId"] == uid(11).as_str()).unwrap();
    assert!(onix["consumoReferencia"].is_null());
    assert_base_item(onix, &m[10]);

    // Hand-written answers for each metric's default order.
    let cases: [(&str, &str, Vec<u32>); 5] = [
        ("eficiencia", "desc", vec![4, 12, 14, 7, 6, 11, 2, 1, 9, 13]),
        ("co2", "asc", vec![4, 12, 14, 7, 6, 11, 2, 1, 9, 3]),
        ("consumo", "asc", vec![4, 12, 14, 7, 6, 13, 2, 1, 9, 3]),
        // Elétricos: the range; others: tank × efficiency (+ electric range).
        ("autonomia", "desc", vec![7, 6, 11, 2, 13, 1, 9, 3, 5, 8]),
        ("eco_score", "desc", vec![4, 12, 14, 7, 11, 6, 2, 1, 9, 13]),
    ];
    for (metric, order, want) in cases {
        let (_, body) = app.get(&format!("/rankings/custom?metric={metric}"));
        assert_eq!(item_ids(&body["data"]["data"]["items"], "vehicleId"), uids(&want), "{metric}");
        assert_eq!(body["data"]["meta"]["filters_applied"], json!({"metric": metric, "order": order, "top": 10}));
    }

    // Every metric × order × several tops against the model; nulls never appear.
    for metric in ["eco_score", "consumo", "co2", "autonomia", "eficiencia"] {
        for order in ["asc", "desc"] {
            for top in [1, 3, 12, 100] {
                let d = app.data(&format!("/rankings/custom?metric={metric}&order={order}&top={top}"));
                let want: Vec<String> =
                    rank(&m, metric, order == "desc").iter().take(top).map(|p| p.id.clone()).collect();
                assert_eq!(item_ids(&d["items"], "vehicleId"), want, "{metric} {order} {top}");
            }
        }
    }
    // Ascending keeps id ascending inside ties.
    let d = app.data("/rankings/custom?order=asc&top=6");
    assert_eq!(item_ids(&d["items"], "vehicleId"), uids(&[8, 5, 3, 1, 9, 13]));
    // All 13 scored vehicles; 10 (no score) is left out.
    let d = app.data("/rankings/custom?top=100");
    assert_eq!(d["items"].as_array().unwrap().len(), 13);
    let d = app.data("/rankings/custom?metric=consumo&top=100");
    assert_eq!(d["items"].as_array().unwrap().len(), 12, "10 and 11 have no consumo");

    // Filters apply before ranking and are echoed with the effective parameters.
    let (_, body) = app.get("/rankings/custom?combustivel=eletrico&metric=autonomia");
    assert_eq!(item_ids(&body["data"]["data"]["items"], "vehicleId"), uids(&[12, 4, 14]));
    assert_eq!(
        body["data"]["meta"]["filters_applied"],
        json!({"combustivel": "eletrico", "metric": "autonomia", "order": "desc", "top": 10})
    );
    let (_, body) = app.get("/rankings/custom?marca=fiat&ano_min=2021&top=2&order=asc");
    assert_eq!(item_ids(&body["data"]["data"]["items"], "vehicleId"), uids(&[9, 2]));
    assert_eq!(
        body["data"]["meta"]["filters_applied"],
        json!({"marca": "fiat", "ano_min": 2021, "metric": "eco_score", "order": "asc", "top": 2})
    );
    let d = app.data("/rankings/custom?categoria=suv&ano=2024&metric=co2");
    assert_eq!(item_ids(&d["items"], "vehicleId"), uids(&[12, 14, 7]));
    // A filter matching nothing, or matching only vehicles without the metric: empty list.
    let (status, body) = app.get("/rankings/custom?marca=nada");
    assert_eq!(status, 200);
    assert_eq!(body["data"]["data"], json!({"items": []}));
    let d = app.data("/rankings/custom?marca=renault&modelo=kwid");
    assert_eq!(d["items"], json!([]));
}

/// One group of a response, by grupo.
fn group<'a>(d: &'a Value, grupo: &str) -> &'a Value {
    d["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["grupo"] == grupo)
        .unwrap_or_else(|| panic!("no group {grupo}: {d}"))
}

fn grupos(d: &Value) -> Vec<String> {
    item_ids(&d["groups"], "grupo")
}

/// Checks every group of a grouped answer against the model, with full items.
fn check_groups(d: &Value, m: &[Published], key: &dyn Fn(&Published) -> String, metric: &str, desc: bool, top: usize) {
    check_large_groups(d, m, key, metric, desc, top);
    for g in d["groups"].as_array().unwrap() {
        let gkeys: Vec<&String> = g.as_object().unwrap().keys().collect();
        assert_eq!(gkeys, vec!["grupo", "mediaGrupo", "melhor", "pior", "topItems"]);
        let members: Vec<&Published> =
            m.iter().filter(|p| p.metric(metric).is_some() && key(p) == g["grupo"].as_str().unwrap()).collect();
        let ordered = rank(members.iter().copied(), metric, desc);
        for (item, p) in g["topItems"].as_array().unwrap().iter().zip(&ordered) {
            assert_base_item(item, p);
        }
        assert_base_item(&g["melhor"], rank(members.iter().copied(), metric, natural_desc(metric))[0]);
        assert_base_item(&g["pior"], rank(members.iter().copied(), metric, !natural_desc(metric))[0]);
    }
}

#[test]
fn grouped_rankings() {
    let rows = fixture();
    let m = model(&rows);
    let app = TestApp::with_rows(&rows);

    // Defaults: eco_score desc, top 5 per group. SUV 76.12, Compacto 478.9 / 7 = 68.41, Picape 32.1.
    let (_, body) = app.get("/rankings/by-category");
    let d = &body["data"]["data"];
    assert_eq!(grupos(d), vec!["SUV", "Compacto", "Picape"]);
    assert_eq!(
        body["data"]["meta"]["filters_applied"],
        json!({"metric": "eco_score", "order": "desc", "top": 5, "group_by": "categoria"})
    );
    let suv = group(d, "SUV");
    assert_eq!(suv["mediaGrupo"], 76.12);
    assert_eq!(item_ids(&suv["topItems"], "vehicleId"), uids(&[12, 14, 7, 6, 5]));
    assert_eq!(suv["melhor"]["vehicleId"], uid(12).as_str());
    assert_eq!(suv["pior"]["vehicleId"], uid(5).as_str());
    let compacto = group(d, "Compacto");
    assert_eq!(compacto["mediaGrupo"], 68.41);
    assert_eq!(item_ids(&compacto["topItems"], "vehicleId"), uids(&[4, 11, 2, 1, 9]));
    assert_eq!(compacto["pior"]["vehicleId"], uid(3).as_str());
    // A group with a single vehicle: it is the best, the worst and the whole top.
    let picape = group(d, "Picape");
    assert_eq!(picape["mediaGrupo"], 32.1);
    assert_eq!(item_ids(&picape["topItems"], "vehicleId"), uids(&[8]));
    assert_eq!(picape["melhor"]["vehicleId"], uid(8).as_str());
    assert_eq!(picape["pior"]["vehicleId"], uid(8).as_str());
    check_groups(d, &m, &|p| p.row.categoria.clone(), "eco_score", true, 5);

    // order=asc reverses the groups and the tops, but melhor/pior keep the natural direction.
    let d = app.data("/rankings/by-category?order=asc&top=2");
    assert_eq!(grupos(&d), vec!["Picape", "Compacto", "SUV"]);
    let compacto = group(&d, "Compacto");
    assert_eq!(item_ids(&compacto["topItems"], "vehicleId"), uids(&[3, 1]));
    assert_eq!(compacto["melhor"]["vehicleId"], uid(4).as_str());
    assert_eq!(compacto["pior"]["vehicleId"], uid(3).as_str());

    // By brand on CO2: Renault and Volvo tie at 0 (grupo ascending breaks it); Toyota's mean
    // (80 + 200.25) / 2 = 140.125 is published half to even as 140.12.
    let (_, body) = app.get("/rankings/by-brand?metric=co2");
    let d = &body["data"]["data"];
    assert_eq!(grupos(d), vec!["Renault", "Volvo", "BYD", "Chevrolet", "Fiat", "Volkswagen", "Toyota", "Jeep"]);
    assert_eq!(
        body["data"]["meta"]["filters_applied"],
        json!({"metric": "co2", "order": "asc", "top": 5, "group_by": "marca"})
    );
    assert_eq!(group(d, "Toyota")["mediaGrupo"], 140.12);
    assert_eq!(group(d, "Fiat")["mediaGrupo"], 103.75);
    // Renault's Kwid has no CO2: the group holds the Megane only.
    assert_eq!(item_ids(&group(d, "Renault")["topItems"], "vehicleId"), uids(&[14]));
    let fiat = group(d, "Fiat");
    assert_eq!(item_ids(&fiat["topItems"], "vehicleId"), uids(&[2, 1, 9, 13]));
    assert_eq!(
        (fiat["melhor"]["vehicleId"].as_str(), fiat["pior"]["vehicleId"].as_str()),
        (Some(uid(2).as_str()), Some(uid(13).as_str()))
    );
    check_groups(d, &m, &|p| p.row.marca.clone(), "co2", false, 5);
    let d = app.data("/rankings/by-brand?metric=co2&order=desc");
    assert_eq!(grupos(&d), vec!["Jeep", "Toyota", "Volkswagen", "Fiat", "Chevrolet", "BYD", "Renault", "Volvo"]);
    check_groups(&d, &m, &|p| p.row.marca.clone(), "co2", true, 5);

    // Worst with a tie on the published value: Fiat's 1, 9 and 13 all publish 14.00 → id 1.
    let d = app.data("/rankings/by-brand?metric=eficiencia&marca=fiat");
    assert_eq!(grupos(&d), vec!["Fiat"]);
    let fiat = group(&d, "Fiat");
    assert_eq!(fiat["melhor"]["vehicleId"], uid(2).as_str());
    assert_eq!(fiat["pior"]["vehicleId"], uid(1).as_str());
    assert_eq!(item_ids(&fiat["topItems"], "vehicleId"), uids(&[2, 1, 9, 13]));
    assert_eq!(fiat["mediaGrupo"], 14.25);

    // By fuel and by year, every metric, both orders, against the model.
    for metric in ["eco_score", "consumo", "co2", "autonomia", "eficiencia"] {
        for (order, desc) in [("asc", false), ("desc", true)] {
            let d = app.data(&format!("/rankings/by-fuel?metric={metric}&order={order}&top=2"));
            check_groups(&d, &m, &|p| p.row.combustivel_tipo.clone(), metric, desc, 2);
            let d = app.data(&format!("/rankings/by-year?metric={metric}&order={order}"));
            check_groups(&d, &m, &|p| p.row.ano.to_string(), metric, desc, 5);
            let d = app.data(&format!("/rankings/by-category?metric={metric}&order={order}&top=100"));
            check_groups(&d, &m, &|p| p.row.categoria.clone(), metric, desc, 100);
        }
    }

    // By year: grupo is the year as a string; 2023 on consumo holds 6 only (11 has no consumo).
    let (_, body) = app.get("/rankings/by-year?metric=consumo&top=1");
    let d = &body["data"]["data"];
    assert_eq!(grupos(d), vec!["2024", "2023", "2020", "2021", "2022"]);
    assert_eq!(item_ids(&group(d, "2023")["topItems"], "vehicleId"), uids(&[6]));
    assert_eq!(item_ids(&group(d, "2024")["topItems"], "vehicleId"), uids(&[4]));
    assert_eq!(body["data"]["meta"]["filters_applied"]["group_by"], "ano");
    assert_eq!(body["data"]["meta"]["filters_applied"]["top"], 1);
    let (_, body) = app.get("/rankings/by-fuel?combustivel=el%C3%A9trico");
    assert_eq!(grupos(&body["data"]["data"]), vec!["Elétrico"]);
    assert_eq!(
        body["data"]["meta"]["filters_applied"],
        json!({"combustivel": "elétrico", "metric": "eco_score", "order": "desc", "top": 5, "group_by": "combustivel"})
    );

    // Filters that empty the result: no group, never an error.
    for path in ["by-category", "by-fuel", "by-brand", "by-year"] {
        let d = app.data(&format!("/rankings/{path}?marca=nada"));
        assert_eq!(d, json!({"groups": []}), "{path}");
    }
    let d = app.data("/rankings/by-brand?marca=kwid");
    assert_eq!(d["groups"], json!([]));
    let d = app.data("/rankings/by-brand?modelo=kwid");
    assert_eq!(d["groups"], json!([]), "a vehicle without the metric makes no group");
}

/// Expected fixed-ranking rows: (id, value) of the top `n`.
fn fixed_expected<'a>(m: &'a [Published], metric: &str, desc: bool, n: usize) -> Vec<(&'a Published, f64)> {
    rank(m, metric, desc).into_iter().take(n).map(|p| (p, p.metric(metric).unwrap())).collect()
}

fn check_fixed_full(d: &Value, ranking_type: &str, name: &str, unit: &str, want: &[(&Published, f64)]) {
    assert_eq!(d["ranking_type"], ranking_type);
    let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["ranking_type", "items"]);
    let items = d["items"].as_array().unwrap();
    assert_eq!(items.len(), want.len(), "{d}");
    for (i, (item, (p, value))) in items.iter().zip(want).enumerate() {
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            vec![
                "ranking_posicao",
                "vehicle_id",
                "marca",
                "modelo",
                "versao",
                "ano",
                "categoria",
                "tipo_propulsao",
                "combustivel_tipo",
                "metric_name",
                "metric_unit",
                "metric_value"
            ]
        );
        assert_eq!(item["ranking_posicao"], i + 1);
        assert_eq!(item["vehicle_id"], p.id.as_str());
        assert_eq!(item["marca"], p.row.marca.as_str());
        assert_eq!(item["modelo"], p.row.modelo.as_str());
        assert_eq!(item["versao"], p.row.versao.as_str());
        assert_eq!(item["ano"], p.row.ano);
        assert_eq!(item["categoria"], p.row.categoria.as_str());
        assert_eq!(item["tipo_propulsao"], p.row.tipo_propulsao.as_str());
        assert_eq!(item["combustivel_tipo"], p.row.combustivel_tipo.as_str());
        assert_eq!(item["metric_name"], name);
        assert_eq!(item["metric_unit"], unit);
        assert!(close(item["metric_value"].as_f64().unwrap(), *value), "{item} vs {value}");
    }
}

fn check_co2(d: &Value, want: &[(&Published, f64)]) {
    assert_eq!(d["ranking_type"], "co2-menor");
    let items = d["items"].as_array().unwrap();
    assert_eq!(items.len(), want.len());
    for (i, (item, (p, value))) in items.iter().zip(want).enumerate() {
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        assert_eq!(keys, vec!["ranking_posicao", "vehicle_id", "metric_name", "metric_unit", "metric_value"]);
        assert_eq!(item["ranking_posicao"], i + 1);
        assert_eq!(item["vehicle_id"], p.id.as_str());
        assert_eq!(item["metric_name"], "co2_referencia_g_km");
        assert_eq!(item["metric_unit"], "g/km");
        assert!(close(item["metric_value"].as_f64().unwrap(), *value));
    }
}

fn check_overview(d: &Value, m: &[Published]) {
    let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["items"]);
    let mut want: Vec<(&str, u32, &Published, f64, &str)> = Vec::new();
    for (kind, metric, desc, unit) in [
        ("mais-economicos", "eficiencia", true, "km/unidade"),
        ("co2-menor", "co2", false, "g/km"),
        ("maior-autonomia-eletrica", "autonomia_eletrica", true, "km"),
        ("melhor-eco-score", "eco_score", true, "pontos"),
    ] {
        for (i, (p, v)) in fixed_expected(m, metric, desc, 5).into_iter().enumerate() {
            want.push((kind, i as u32 + 1, p, v, unit));
        }
    }
    let items = d["items"].as_array().unwrap();
    assert_eq!(items.len(), want.len());
    for (item, (kind, pos, p, value, unit)) in items.iter().zip(want) {
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            vec![
                "ranking_tipo",
                "ranking_posicao",
                "vehicle_id",
                "marca",
                "modelo",
                "versao",
                "ano",
                "categoria",
                "tipo_propulsao",
                "combustivel_tipo",
                "metrica_valor",
                "metrica_unidade"
            ]
        );
        assert_eq!(item["ranking_tipo"], kind);
        assert_eq!(item["ranking_posicao"], pos);
        assert_eq!(item["vehicle_id"], p.id.as_str(), "{kind} {pos}");
        assert_eq!(item["marca"], p.row.marca.as_str());
        assert_eq!(item["modelo"], p.row.modelo.as_str());
        assert_eq!(item["versao"], p.row.versao.as_str());
        assert_eq!(item["ano"], p.row.ano);
        assert_eq!(item["categoria"], p.row.categoria.as_str());
        assert_eq!(item["tipo_propulsao"], p.row.tipo_propulsao.as_str());
        assert_eq!(item["combustivel_tipo"], p.row.combustivel_tipo.as_str());
        assert!(close(item["metrica_valor"].as_f64().unwrap(), value));
        assert_eq!(item["metrica_unidade"], unit);
    }
}

#[test]
fn fixed_rankings_and_overview() {
    let rows = fixture();
    let m = model(&rows);
    let app = TestApp::with_rows(&rows);

    // Most economical: 1, 9 and 13 tie at 14.00; id breaks the tie, positions run 1..10.
    let (_, body) = app.get("/rankings/most-economical");
    assert!(body["data"]["meta"].get("filters_applied").is_none());
    assert!(body["data"]["meta"].get("pagination").is_none());
    let d = &body["data"]["data"];
    assert_eq!(item_ids(&d["items"], "vehicle_id"), uids(&[4, 12, 14, 7, 6, 11, 2, 1, 9, 13]));
    assert_eq!(d["items"][9]["metric_value"], 14.0);
    assert_eq!(d["items"][0]["metric_value"], 50.0);
    check_fixed_full(
        d,
        "mais-economicos",
        "eficiencia_media_referencia",
        "km/unidade",
        &fixed_expected(&m, "eficiencia", true, 10),
    );

    let (_, body) = app.get("/rankings/lowest-co2");
    assert!(body["data"]["meta"].get("filters_applied").is_none());
    let d = &body["data"]["data"];
    assert_eq!(item_ids(&d["items"], "vehicle_id"), uids(&[4, 12, 14, 7, 6, 11, 2, 1, 9, 3]));
    assert_eq!(d["items"][0]["metric_value"], 0.0);
    check_co2(d, &fixed_expected(&m, "co2", false, 10));

    // Electric range: only the four vehicles with one; 4 and 14 tie at 291.00.
    let (_, body) = app.get("/rankings/longest-electric-range");
    assert!(body["data"]["meta"].get("filters_applied").is_none());
    let d = &body["data"]["data"];
    assert_eq!(item_ids(&d["items"], "vehicle_id"), uids(&[12, 4, 14, 7]));
    assert_eq!(d["items"][2]["metric_value"], 291.0);
    assert_eq!(d["items"][3]["metric_value"], 51.0);
    check_fixed_full(
        d,
        "maior-autonomia-eletrica",
        "autonomia_eletrica_km",
        "km",
        &fixed_expected(&m, "autonomia_eletrica", true, 10),
    );

    let (_, body) = app.get("/rankings/overview");
    assert!(body["data"]["meta"].get("filters_applied").is_none());
    let d = &body["data"]["data"];
    let kinds: Vec<String> = item_ids(&d["items"], "ranking_tipo");
    let mut expected_kinds = vec!["mais-economicos"; 5];
    expected_kinds.extend(["co2-menor"; 5]);
    expected_kinds.extend(["maior-autonomia-eletrica"; 4]);
    expected_kinds.extend(["melhor-eco-score"; 5]);
    assert_eq!(kinds, expected_kinds);
    assert_eq!(item_ids(&d["items"], "vehicle_id")[14..], uids(&[4, 12, 14, 7, 11]));
    check_overview(d, &m);

    // These endpoints take no parameter.
    for path in ["most-economical", "lowest-co2", "longest-electric-range", "overview"] {
        for q in ["top=5", "marca=Fiat", "metric=co2", "page=1"] {
            let name = q.split('=').next().unwrap();
            let msg = assert_error(app.get(&format!("/rankings/{path}?{q}")), 400, "VALIDATION_ERROR");
            assert!(msg.contains(&format!("'{name}' não é aceito")), "{path}?{q}: {msg}");
        }
    }
}

/// A catalog without electric ranges or scores: the fixed rankings are empty lists, not errors.
#[test]
fn fixed_rankings_of_a_catalog_without_the_metrics() {
    let rows = vec![
        car(1, "Fiat", "Argo", 2020, "Compacto", "Flex", None, None, None),
        car(2, "Fiat", "Mobi", 2021, "Compacto", "Flex", Some(12.0), None, None),
    ];
    let app = TestApp::with_rows(&rows);
    let d = app.data("/rankings/longest-electric-range");
    assert_eq!(d, json!({"ranking_type": "maior-autonomia-eletrica", "items": []}));
    let d = app.data("/rankings/lowest-co2");
    assert_eq!(d, json!({"ranking_type": "co2-menor", "items": []}));
    let d = app.data("/rankings/most-economical");
    assert_eq!(item_ids(&d["items"], "vehicle_id"), uids(&[2]));
    let d = app.data("/rankings/overview");
    assert_eq!(item_ids(&d["items"], "ranking_tipo"), vec!["mais-economicos"]);
    assert_eq!(app.data("/rankings/custom"), json!({"items": []}));
    assert_eq!(app.data("/rankings/by-category"), json!({"groups": []}));
    let d = app.data("/rankings/by-category?metric=autonomia");
    assert_eq!(grupos(&d), vec!["Compacto"]);
    assert_eq!(group(&d, "Compacto")["mediaGrupo"], 600.0);
}

#[test]
fn parameter_rules_and_openapi() {
    let app = TestApp::with_rows(&fixture());
    let parameterised = ["custom", "by-category", "by-fuel", "by-brand", "by-year"];
    let cases = [
        ("top=0", "'top' deve estar entre 1 e 100"),
        ("top=101", "'top' deve estar entre 1 e 100"),
        ("top=-1", "'top' deve estar entre 1 e 100"),
        ("top=abc", "'top' deve ser um número inteiro"),
        ("top=2.5", "'top' deve ser um número inteiro"),
        ("metric=preco", "'metric' deve ser um de: eco_score, consumo, co2, autonomia, eficiencia"),
        ("metric=ECO_SCORE", "'metric' deve ser um de"),
        ("order=up", "'order' deve ser um de: asc, desc"),
        ("order=DESC", "'order' deve ser um de: asc, desc"),
        ("top=", "'top' não pode ser vazio"),
        ("metric=co2&metric=consumo", "'metric' informado mais de uma vez"),
        ("page=1", "'page' não é aceito"),
        ("group_by=marca", "'group_by' não é aceito"),
        ("ano=1899", "'ano' deve estar entre 1900 e 2100"),
        ("ano=2020&ano_max=2021", "'ano' não pode ser combinado"),
        ("ano_min=2022&ano_max=2020", "'ano_min' (2022) não pode ser maior"),
    ];
    for path in parameterised {
        for (q, expected) in cases {
            let msg = assert_error(app.get(&format!("/rankings/{path}?{q}")), 400, "VALIDATION_ERROR");
            assert!(msg.contains(expected), "{path}?{q}: {msg}");
        }
        // The bounds themselves are accepted, and top is echoed as a number.
        for top in [1, 100] {
            let (status, body) = app.get(&format!("/rankings/{path}?top={top}"));
            assert_eq!(status, 200, "{path} top={top}: {body}");
            assert_eq!(body["data"]["meta"]["filters_applied"]["top"], top);
        }
        for (metric, order) in
            [("eco_score", "desc"), ("consumo", "asc"), ("co2", "asc"), ("autonomia", "desc"), ("eficiencia", "desc")]
        {
            let (status, body) = app.get(&format!("/rankings/{path}?metric={metric}"));
            assert_eq!(status, 200);
            assert_eq!(body["data"]["meta"]["filters_applied"]["order"], order, "{path} {metric}");
            assert_eq!(body["data"]["meta"]["filters_applied"]["metric"], metric);
            let (_, body) = app.get(&format!("/rankings/{path}?metric={metric}&order=asc"));
            assert_eq!(body["data"]["meta"]["filters_applied"]["order"], "asc");
        }
    }
    // Default top: 10 for the custom ranking, 5 per group.
    assert_eq!(app.data("/rankings/custom")["items"].as_array().unwrap().len(), 10);
    let d = app.data("/rankings/by-category");
    assert_eq!(group(&d, "Compacto")["topItems"].as_array().unwrap().len(), 5);
    let d = app.data("/rankings/by-category?top=6");
    assert_eq!(group(&d, "Compacto")["topItems"].as_array().unwrap().len(), 6);
    assert_eq!(group(&d, "SUV")["topItems"].as_array().unwrap().len(), 5);

    // The OpenAPI document describes every endpoint and the ranking parameters.
    let (status, doc) = app.get("/openapi.json");
    assert_eq!(status, 200);
    for path in [
        "custom",
        "by-category",
        "by-fuel",
        "by-brand",
        "by-year",
        "most-economical",
        "lowest-co2",
        "longest-electric-range",
        "overview",
    ] {
        let op = &doc["paths"][format!("/rankings/{path}")]["get"];
        assert!(op.is_object(), "{path} is not documented");
        assert!(op["responses"]["200"].is_object() && op["responses"]["400"].is_object(), "{path}");
    }
    let params = doc["paths"]["/rankings/custom"]["get"]["parameters"].as_array().unwrap();
    let param = |name: &str| params.iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("no {name}"));
    assert_eq!(param("metric")["schema"]["enum"], json!(["eco_score", "consumo", "co2", "autonomia", "eficiencia"]));
    assert_eq!(param("metric")["schema"]["default"], "eco_score");
    assert_eq!(param("order")["schema"]["enum"], json!(["asc", "desc"]));
    assert_eq!(
        (param("top")["schema"]["minimum"].as_f64(), param("top")["schema"]["maximum"].as_f64()),
        (Some(1.0), Some(100.0))
    );
    assert_eq!(param("top")["schema"]["default"], 10);
    assert!(params.iter().any(|p| p["name"] == "marca"));
    let group_params = doc["paths"]["/rankings/by-year"]["get"]["parameters"].as_array().unwrap();
    let top = group_params.iter().find(|p| p["name"] == "top").unwrap();
    assert_eq!(top["schema"]["default"], 5);
}

// ---------------------------------------------------------------------------------------------
// A larger generated catalog
// ---------------------------------------------------------------------------------------------

fn strs(df: &DataFrame, name: &str) -> Vec<Option<String>> {
    df.column(name).unwrap().str().unwrap().iter().map(|v| v.map(str::to_string)).collect()
}

fn f64s(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    let c = df.column(name).unwrap().cast(&DataType::Float64).unwrap();
    c.f64().unwrap().iter().map(|v| v.filter(|x| x.is_finite())).collect()
}

fn i32s(df: &DataFrame, name: &str) -> Vec<Option<i32>> {
    let c = df.column(name).unwrap().cast(&DataType::Int32).unwrap();
    c.i32().unwrap().iter().collect()
}

/// The generated frame as fixture rows (so the same model applies).
fn rows_of_frame(df: &DataFrame) -> Vec<Row> {
    let (id, marca, modelo, versao) = (strs(df, "id"), strs(df, "marca"), strs(df, "modelo"), strs(df, "versao"));
    let (categoria, motor, prop, fuel) =
        (strs(df, "categoria"), strs(df, "motor"), strs(df, "tipo_propulsao"), strs(df, "combustivel_tipo"));
    let (trans, direcao, pbe_c, pbe_g) = (
        strs(df, "transmissao_tipo"),
        strs(df, "direcao_assistida_tipo"),
        strs(df, "classificacao_pbe_categoria"),
        strs(df, "classificacao_pbe_geral"),
    );
    let (ano, marchas) = (i32s(df, "ano"), i32s(df, "transmissao_marchas"));
    let ar: Vec<Option<bool>> = df.column("ar_condicionado").unwrap().bool().unwrap().iter().collect();
    let f = |n: &str| f64s(df, n);
    let (ec, ee, eec, eee) = (
        f("eficiencia_cidade_km_l"),
        f("eficiencia_estrada_km_l"),
        f("eficiencia_cidade_etanol_km_l"),
        f("eficiencia_estrada_etanol_km_l"),
    );
    let (mj, co2, nmhc, co, nox, aut, tanque) = (
        f("consumo_energetico_mj_km"),
        f("co2_fossil_g_km"),
        f("nmhc_g_km"),
        f("co_g_km"),
        f("nox_g_km"),
        f("autonomia_eletrica_km"),
        f("tanque_l"),
    );
    (0..df.height())
        .map(|i| Row {
            id: id[i].as_ref().map(|s| s.to_lowercase()),
            marca: marca[i].clone().unwrap(),
            modelo: modelo[i].clone().unwrap(),
            versao: versao[i].clone().unwrap(),
            ano: ano[i].unwrap(),
            categoria: categoria[i].clone().unwrap(),
            motor: motor[i].clone(),
            tipo_propulsao: prop[i].clone().unwrap(),
            combustivel_tipo: fuel[i].clone().unwrap(),
            transmissao_tipo: trans[i].clone(),
            transmissao_marchas: marchas[i],
            ar_condicionado: ar[i],
            direcao_assistida_tipo: direcao[i].clone().unwrap(),
            eficiencia_cidade_km_l: ec[i],
            eficiencia_estrada_km_l: ee[i],
            eficiencia_cidade_etanol_km_l: eec[i],
            eficiencia_estrada_etanol_km_l: eee[i],
            consumo_energetico_mj_km: mj[i],
            co2_fossil_g_km: co2[i],
            nmhc_g_km: nmhc[i],
            co_g_km: co[i],
            nox_g_km: nox[i],
            autonomia_eletrica_km: aut[i],
            tanque_l: tanque[i],
            classificacao_pbe_categoria: pbe_c[i].clone(),
            classificacao_pbe_geral: pbe_g[i].clone(),
        })
        .collect()
}

/// Groups of a large answer: same groups, tops, winners and means as the model; the order
/// follows the published means (in `order`) then grupo.
fn check_large_groups(
    d: &Value,
    m: &[Published],
    key: &dyn Fn(&Published) -> String,
    metric: &str,
    desc: bool,
    top: usize,
) {
    let with_value: Vec<&Published> = m.iter().filter(|p| p.metric(metric).is_some()).collect();
    let mut keys: Vec<String> = with_value.iter().map(|p| key(p)).collect();
    keys.sort();
    keys.dedup();
    let mut got = grupos(d);
    got.sort();
    assert_eq!(got, keys, "{metric}: one group per key with a value");
    for k in &keys {
        let members: Vec<&Published> = with_value.iter().copied().filter(|p| key(p) == *k).collect();
        let g = group(d, k);
        let mean = members.iter().map(|p| p.metric(metric).unwrap()).sum::<f64>() / members.len() as f64;
        // Summation order may differ in the last bit; the published mean is within half a cent.
        assert!((g["mediaGrupo"].as_f64().unwrap() - mean).abs() <= 0.005 + 1e-9, "{k}: {} vs {mean}", g["mediaGrupo"]);
        let want: Vec<String> =
            rank(members.iter().copied(), metric, desc).iter().take(top).map(|p| p.id.clone()).collect();
        assert_eq!(item_ids(&g["topItems"], "vehicleId"), want, "{metric} {k}");
        let best = rank(members.iter().copied(), metric, natural_desc(metric))[0];
        let worst = rank(members.iter().copied(), metric, !natural_desc(metric))[0];
        assert_eq!(g["melhor"]["vehicleId"], best.id.as_str());
        assert_eq!(g["pior"]["vehicleId"], worst.id.as_str());
    }
    let order: Vec<(f64, String)> = d["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["mediaGrupo"].as_f64().unwrap(), g["grupo"].as_str().unwrap().to_string()))
        .collect();
    for w in order.windows(2) {
        let c = if desc { w[1].0.total_cmp(&w[0].0) } else { w[0].0.total_cmp(&w[1].0) };
        assert!(c.then_with(|| w[0].1.cmp(&w[1].1)).is_lt(), "{metric}: groups out of order: {w:?}");
    }
}

#[test]
fn generated_catalog_matches_an_independent_recomputation() {
    let mut df = eco_insights::sample::generate_catalog(400, 2024).unwrap();
    let rows = rows_of_frame(&df);
    let m = model(&rows);
    assert!(m.iter().filter(|p| p.autonomia_eletrica.is_some()).count() >= 5, "the catalog has electric ranges");
    let dir = temp_dir("rankings-generated");
    let data = dir.join("catalog.parquet");
    write_frame(&mut df, &data);
    let app = TestApp::serve(&dir, &data, &[]);

    // Custom: every metric and order, top 100, values included.
    for metric in ["eco_score", "consumo", "co2", "autonomia", "eficiencia"] {
        for (order, desc) in [("asc", false), ("desc", true)] {
            let d = app.data(&format!("/rankings/custom?metric={metric}&order={order}&top=100"));
            let want = rank(&m, metric, desc);
            assert_eq!(item_ids(&d["items"], "vehicleId"), ids_of(&want[..100]), "{metric} {order}");
            for (item, p) in d["items"].as_array().unwrap().iter().zip(&want) {
                assert_base_item(item, p);
            }
        }
    }
    let d = app.data("/rankings/custom?combustivel=flex&ano_min=2020&metric=eficiencia&top=15");
    let want = rank(
        m.iter().filter(|p| fold(&p.row.combustivel_tipo).contains("flex") && p.row.ano >= 2020),
        "eficiencia",
        true,
    );
    assert_eq!(item_ids(&d["items"], "vehicleId"), ids_of(&want[..15]));

    // Grouped, on two keys and metrics.
    let d = app.data("/rankings/by-brand?metric=co2&top=3");
    check_large_groups(&d, &m, &|p| p.row.marca.clone(), "co2", false, 3);
    let d = app.data("/rankings/by-category?metric=eco_score&order=asc&top=4");
    check_large_groups(&d, &m, &|p| p.row.categoria.clone(), "eco_score", false, 4);
    let d = app.data("/rankings/by-year?metric=autonomia&categoria=suv");
    let suvs: Vec<Published> = m.iter().filter(|p| fold(&p.row.categoria).contains("suv")).cloned().collect();
    check_large_groups(&d, &suvs, &|p| p.row.ano.to_string(), "autonomia", true, 5);
    let d = app.data("/rankings/by-fuel?metric=consumo");
    check_large_groups(&d, &m, &|p| p.row.combustivel_tipo.clone(), "consumo", false, 5);

    // Fixed rankings and the overview.
    let d = app.data("/rankings/most-economical");
    check_fixed_full(
        &d,
        "mais-economicos",
        "eficiencia_media_referencia",
        "km/unidade",
        &fixed_expected(&m, "eficiencia", true, 10),
    );
    let d = app.data("/rankings/lowest-co2");
    check_co2(&d, &fixed_expected(&m, "co2", false, 10));
    let d = app.data("/rankings/longest-electric-range");
    check_fixed_full(
        &d,
        "maior-autonomia-eletrica",
        "autonomia_eletrica_km",
        "km",
        &fixed_expected(&m, "autonomia_eletrica", true, 10),
    );
    let d = app.data("/rankings/overview");
    assert_eq!(d["items"].as_array().unwrap().len(), 20);
    check_overview(&d, &m);
    let _ = std::fs::remove_dir_all(&dir);
}
