//! Facets, the methodology, the driving profile per request, the `diff` command and the reload
//! log line that says what a swap changed.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;
use crate::expected;

// ---------------------------------------------------------------------------------------------
// Fixtures

/// A vehicle with a low score (high consumption and CO2).
fn thirsty(mut r: Row) -> Row {
    r.consumo_energetico_mj_km = Some(2.5);
    r.co2_fossil_g_km = Some(200.0);
    r
}

/// An electric vehicle.
fn electric(mut r: Row) -> Row {
    r.eficiencia_cidade_km_l = Some(48.0);
    r.eficiencia_estrada_km_l = Some(41.0);
    r.consumo_energetico_mj_km = Some(0.43);
    r.co2_fossil_g_km = Some(0.0);
    r.nmhc_g_km = None;
    r.co_g_km = None;
    r.nox_g_km = None;
    r.tanque_l = None;
    r.autonomia_eletrica_km = Some(291.0);
    r
}

/// A flex vehicle with its ethanol efficiencies.
fn flex(mut r: Row, cidade: f64, estrada: f64, etanol_cidade: f64, etanol_estrada: f64) -> Row {
    r.eficiencia_cidade_km_l = Some(cidade);
    r.eficiencia_estrada_km_l = Some(estrada);
    r.eficiencia_cidade_etanol_km_l = Some(etanol_cidade);
    r.eficiencia_estrada_etanol_km_l = Some(etanol_estrada);
    r
}

fn facet_rows() -> Vec<Row> {
    let mut rows = vec![
        flex(Row::new(1, "Fiat", "Argo", 2022, "Compacto", "Flex"), 13.1, 14.9, 9.2, 10.4),
        flex(Row::new(2, "Fiat", "Mobi", 2021, "Subcompacto", "Flex"), 13.5, 15.0, 9.5, 10.6),
        Row::new(3, "Fiat", "Pulse", 2023, "SUV", "Gasolina"),
        electric(Row::new(4, "BYD", "Dolphin", 2024, "Compacto", "Elétrico")),
        flex(Row::new(5, "Volkswagen", "Polo", 2022, "Compacto", "Flex"), 12.0, 14.0, 8.4, 9.8),
        thirsty(flex(Row::new(6, "Volkswagen", "Nivus", 2023, "SUV", "Flex"), 11.0, 13.0, 7.7, 9.1)),
        flex(Row::new(7, "Toyota", "Corolla", 2022, "Médio", "Flex"), 11.5, 13.5, 8.0, 9.4),
        thirsty(Row::new(8, "Renault", "Kwid", 2021, "Subcompacto", "Gasolina")),
        thirsty(Row::new(9, "Fiat", "Toro", 2024, "Picape", "Diesel")),
        electric(Row::new(10, "BYD", "Seal", 2024, "Médio", "Elétrico")),
    ];
    rows[2].transmissao_tipo = None;
    rows[7].transmissao_tipo = None;
    rows[4].transmissao_tipo = Some("Automática".into());
    rows[6].transmissao_tipo = Some("CVT".into());
    // No energy and no CO2 data: no eco score, so no band.
    rows[6].consumo_energetico_mj_km = None;
    rows[6].co2_fossil_g_km = None;
    rows
}

// ---------------------------------------------------------------------------------------------
// Facets

/// The facet of one field, counted here from the fixture rows: by total descending, then value
/// ascending, null after the values.
fn count(rows: &[&Row], key: impl Fn(&Row) -> Option<String>) -> Vec<(Option<String>, u64)> {
    let mut totals: BTreeMap<Option<String>, u64> = BTreeMap::new();
    for r in rows {
        *totals.entry(key(r)).or_default() += 1;
    }
    let mut out: Vec<(Option<String>, u64)> = totals.into_iter().collect();
    out.sort_by(|a, b| {
        b.1.cmp(&a.1).then_with(|| match (&a.0, &b.0) {
            (Some(x), Some(y)) => x.cmp(y),
            (x, y) => x.is_none().cmp(&y.is_none()),
        })
    });
    out
}

fn as_json(counts: Vec<(Option<String>, u64)>) -> Value {
    Value::Array(counts.into_iter().map(|(v, t)| json!({"valor": v, "total": t})).collect())
}

fn expected_facets(rows: &[&Row]) -> Value {
    let years = count(rows, |r| Some(format!("{:04}", r.ano)));
    json!({
        "categoria": as_json(count(rows, |r| Some(r.categoria.clone()))),
        "combustivel": as_json(count(rows, |r| Some(r.combustivel_tipo.clone()))),
        "propulsao": as_json(count(rows, |r| Some(r.tipo_propulsao.clone()))),
        "transmissao": as_json(count(rows, |r| r.transmissao_tipo.clone())),
        "marca": as_json(count(rows, |r| Some(r.marca.clone()))),
        "ano": Value::Array(
            years.into_iter().map(|(v, t)| json!({"valor": v.unwrap().parse::<i64>().unwrap(), "total": t})).collect()
        ),
        "faixa": as_json(count(rows, |r| expected::eco_score(r).map(|s| expected::faixa(s).to_string()))),
    })
}

#[test]
fn facets_count_the_filtered_vehicles() {
    let rows = facet_rows();
    let app = TestApp::with_rows(&rows);
    let all: Vec<&Row> = rows.iter().collect();

    let want = expected_facets(&all);
    assert_eq!(app.data("/facets"), want);
    // The fixture exercises what it should: ties ordered by value, null values, several bands.
    assert_eq!(
        want["transmissao"],
        json!([
            {"valor": "Manual", "total": 6}, {"valor": null, "total": 2},
            {"valor": "Automática", "total": 1}, {"valor": "CVT", "total": 1},
        ])
    );
    assert!(want["faixa"].as_array().unwrap().contains(&json!({"valor": null, "total": 1})), "{}", want["faixa"]);
    assert!(want["faixa"].as_array().unwrap().len() >= 4, "{}", want["faixa"]);
    let anos = app.data("/facets")["ano"].clone();
    assert_eq!(anos[0], json!({"valor": 2022, "total": 3}));
    assert_eq!(anos[1], json!({"valor": 2024, "total": 3}), "equal totals: the earlier year first");

    let flex_rows: Vec<&Row> = rows.iter().filter(|r| r.combustivel_tipo == "Flex").collect();
    let (status, body) = app.get("/facets?combustivel=FLEX");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["data"], expected_facets(&flex_rows));
    assert_eq!(body["data"]["meta"]["filters_applied"], json!({"combustivel": "FLEX"}));

    let recent_fiat: Vec<&Row> = rows.iter().filter(|r| r.marca == "Fiat" && r.ano >= 2022).collect();
    let (_, body) = app.get("/facets?marca=fiat&ano_min=2022");
    assert_eq!(body["data"]["data"], expected_facets(&recent_fiat));
    assert_eq!(body["data"]["meta"]["filters_applied"], json!({"marca": "fiat", "ano_min": 2022}));
    let totals: u64 =
        body["data"]["data"]["marca"].as_array().unwrap().iter().map(|c| c["total"].as_u64().unwrap()).sum();
    assert_eq!(totals, recent_fiat.len() as u64);

    // Nothing matches: every list is empty.
    let none = app.data("/facets?marca=inexistente");
    for key in ["categoria", "combustivel", "propulsao", "transmissao", "marca", "ano", "faixa"] {
        assert_eq!(none[key], json!([]), "{key}");
    }

    assert!(assert_error(app.get("/facets?cor=azul"), 400, "VALIDATION_ERROR").contains("'cor'"));
    assert!(assert_error(app.get("/facets?ano=1800"), 400, "VALIDATION_ERROR").contains("'ano'"));
    let unauthenticated = app.raw("GET", "/facets").send();
    assert_eq!(unauthenticated.status, 401);

    let first = app.get_req("/facets?marca=fiat").send();
    let tag = first.header("etag").expect("an ETag").to_string();
    let again = app.get_req("/facets?marca=fiat").header("If-None-Match", &tag).send();
    assert_eq!(again.status, 304);
}

// ---------------------------------------------------------------------------------------------
// Driving profile

/// A cost configuration, written independently of the service.
#[derive(Debug, Clone, Copy)]
struct Profile {
    km_ano: f64,
    gasolina: f64,
    etanol: f64,
    diesel: f64,
    gnv: f64,
    kwh: f64,
}

const DEFAULTS: Profile =
    Profile { km_ano: 12_000.0, gasolina: 6.20, etanol: 4.10, diesel: 6.00, gnv: 4.80, kwh: 0.85 };

/// The contract's custo_anual_estimado (API-CONTRACT §2) under `p`, published at 2 decimals.
fn custo(r: &Row, p: Profile) -> Option<f64> {
    let mean = |a: Option<f64>, b: Option<f64>| expected::mean_present(a, b).filter(|e| *e > 0.0);
    let gas = mean(r.eficiencia_cidade_km_l, r.eficiencia_estrada_km_l);
    let per_unit = |price: f64| gas.map(|e| p.km_ano / e * price);
    let cost = match r.combustivel_tipo.as_str() {
        "Elétrico" => r.consumo_energetico_mj_km.map(|c| p.km_ano * c / 3.6 * p.kwh),
        "Flex" => {
            let eth = mean(r.eficiencia_cidade_etanol_km_l, r.eficiencia_estrada_etanol_km_l)?;
            Some(per_unit(p.gasolina)?.min(p.km_ano / eth * p.etanol))
        }
        "Gasolina" => per_unit(p.gasolina),
        "Etanol" => per_unit(p.etanol),
        "Diesel" => per_unit(p.diesel),
        "GNV" => per_unit(p.gnv),
        _ => None,
    };
    cost.map(|c| round(c, 2))
}

fn profile_json(p: Profile) -> Value {
    json!({
        "km_ano": p.km_ano, "preco_gasolina": p.gasolina, "preco_etanol": p.etanol,
        "preco_diesel": p.diesel, "preco_gnv": p.gnv, "preco_kwh": p.kwh,
    })
}

fn assert_cost(got: &Value, want: Option<f64>, label: &str) {
    match want {
        Some(w) => assert!(close(got.as_f64().unwrap_or(f64::NAN), w), "{label}: got {got}, want {w}"),
        None => assert!(got.is_null(), "{label}: got {got}, want null"),
    }
}

#[test]
fn a_driving_profile_recomputes_the_costs() {
    let rows = vec![
        Row::new(1, "Fiat", "Pulse", 2023, "SUV", "Gasolina"),
        // Ethanol is the cheaper fuel at the default prices, gasoline with a cheap gasoline.
        flex(Row::new(2, "Fiat", "Argo", 2022, "Compacto", "Flex"), 13.1, 14.9, 9.8, 11.1),
        electric(Row::new(3, "BYD", "Dolphin", 2024, "Compacto", "Elétrico")),
        thirsty(Row::new(4, "Fiat", "Toro", 2024, "Picape", "Diesel")),
    ];
    let app = TestApp::with_rows(&rows);
    let profiles = [
        ("", DEFAULTS),
        ("?km_ano=20000", Profile { km_ano: 20_000.0, ..DEFAULTS }),
        (
            "?km_ano=8500.5&preco_gasolina=4.1&preco_kwh=1.37",
            Profile { km_ano: 8_500.5, gasolina: 4.1, kwh: 1.37, ..DEFAULTS },
        ),
        (
            "?preco_etanol=5.9&preco_diesel=7.25&preco_gnv=3&preco_kwh=100&km_ano=200000",
            Profile { km_ano: 200_000.0, etanol: 5.9, diesel: 7.25, gnv: 3.0, kwh: 100.0, ..DEFAULTS },
        ),
    ];
    // The flex vehicle's cheaper fuel changes with the prices: the minimum is really taken.
    let gas_only = |r: &Row, p: Profile| {
        round(
            p.km_ano / expected::mean_present(r.eficiencia_cidade_km_l, r.eficiencia_estrada_km_l).unwrap()
                * p.gasolina,
            2,
        )
    };
    assert_ne!(custo(&rows[1], DEFAULTS), Some(gas_only(&rows[1], DEFAULTS)));
    assert_eq!(custo(&rows[1], profiles[2].1), Some(gas_only(&rows[1], profiles[2].1)));

    for (query, p) in profiles {
        for (i, r) in rows.iter().enumerate() {
            let (status, body) = app.get(&format!("/vehicles/{}/summary{query}", uid(i as u32 + 1)));
            assert_eq!(status, 200, "{body}");
            let consumo = &body["data"]["data"]["summary"]["consumo"];
            assert_cost(
                &consumo["custo_anual_estimado"],
                custo(r, p),
                &format!("summary {} {query}", r.combustivel_tipo),
            );
            assert_eq!(body["data"]["meta"]["perfil_custo"], profile_json(p), "{query}");
            assert_eq!(consumo["eficiencia_media_referencia"], json!(expected::eficiencia(r)));
        }
        let ids = json!({"vehicle_ids": [uid(1), uid(2), uid(3), uid(4)]}).to_string();
        let (status, body) = app.post_json(&format!("/compare{query}"), &ids);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"]["meta"]["perfil_custo"], profile_json(p), "{query}");
        for (v, r) in body["data"]["data"]["vehicles"].as_array().unwrap().iter().zip(&rows) {
            assert_cost(
                &v["computed"]["custo_anual_estimado"],
                custo(r, p),
                &format!("compare {} {query}", r.combustivel_tipo),
            );
            assert_eq!(v["eco_score"], json!(expected::eco_score(r)), "the eco score does not depend on the profile");
        }
        assert_eq!(body["data"]["data"]["summary"]["vencedor_geral"], json!(uid(3)));
    }

    // The smallest positive price is a price like any other (written into the SQL as a float).
    let tiny = Profile { gasolina: 5e-324, etanol: 5e-324, kwh: 1.5e-7, ..DEFAULTS };
    for (i, r) in rows.iter().enumerate().take(3) {
        let path = format!(
            "/vehicles/{}/summary?preco_gasolina=5e-324&preco_etanol=5e-324&preco_kwh=1.5e-7",
            uid(i as u32 + 1)
        );
        let (status, body) = app.get(&path);
        assert_eq!(status, 200, "{body}");
        assert_cost(&body["data"]["data"]["summary"]["consumo"]["custo_anual_estimado"], custo(r, tiny), &path);
    }

    // Other operations carry no profile.
    let (_, body) = app.get("/insights/summary");
    assert!(body["data"]["meta"].get("perfil_custo").is_none(), "{body}");

    let bad = [
        ("km_ano=0", "km_ano"),
        ("km_ano=200001", "km_ano"),
        ("km_ano=muito", "km_ano"),
        ("km_ano=NaN", "km_ano"),
        ("preco_gasolina=0", "preco_gasolina"),
        ("preco_etanol=-2", "preco_etanol"),
        ("preco_diesel=100.5", "preco_diesel"),
        ("preco_gnv=inf", "preco_gnv"),
        ("preco_kwh=1e999", "preco_kwh"),
        ("preco_kwh=", "preco_kwh"),
        ("km_ano=1000&km_ano=2000", "km_ano"),
        ("preco_luz=1", "preco_luz"),
    ];
    for (query, name) in bad {
        let m = assert_error(app.get(&format!("/vehicles/{}/summary?{query}", uid(1))), 400, "VALIDATION_ERROR");
        assert!(m.contains(&format!("'{name}'")), "summary ?{query}: {m}");
        let body = json!({"vehicle_ids": [uid(1), uid(2)]}).to_string();
        let m = assert_error(app.post_json(&format!("/compare?{query}"), &body), 400, "VALIDATION_ERROR");
        assert!(m.contains(&format!("'{name}'")), "compare ?{query}: {m}");
    }
    // The body stays strict: a profile in the body is an unknown field.
    let m = assert_error(
        app.post_json("/compare", &json!({"vehicle_ids": [uid(1), uid(2)], "km_ano": 1000}).to_string()),
        400,
        "VALIDATION_ERROR",
    );
    assert!(m.contains("'km_ano'"), "{m}");
    // Other per-vehicle operations do not take the profile.
    let m = assert_error(app.get(&format!("/vehicles/{}/eco-score?km_ano=1000", uid(1))), 400, "VALIDATION_ERROR");
    assert!(m.contains("'km_ano'"), "{m}");
    assert_error(app.get(&format!("/vehicles/{}/summary?km_ano=1000", uid(99))), 404, "NOT_FOUND");
}

// ---------------------------------------------------------------------------------------------
// Methodology (and a server-side cost configuration seen through the profile defaults)

#[test]
fn methodology_shows_the_configuration_and_the_dataset_in_force() {
    let rows = facet_rows();
    let dir = temp_dir("methodology");
    let data = dir.join("catalog.parquet");
    write_rows(&rows, &data);
    let app = TestApp::serve(&dir, &data, &["--km-ano", "15000", "--preco-gasolina", "5.79"]);

    let res = app.get_req("/methodology").send();
    assert_eq!(res.status, 200, "{}", res.text());
    let version = res.header("x-dataset-version").unwrap().to_string();
    let body = res.json();
    let m = &body["data"]["data"];
    let server = Profile { km_ano: 15_000.0, gasolina: 5.79, ..DEFAULTS };
    assert_eq!(m["custo"], profile_json(server));
    assert_eq!(m["dataset"]["versao"], json!(version));
    let ready = app.raw("GET", "/readyz").send().json();
    assert_eq!(m["dataset"]["versao"], ready["dataset"]["version"]);
    assert_eq!(m["dataset"]["linhas"], json!(rows.len()));
    let loaded = m["dataset"]["carregado_em"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(loaded).is_ok(), "{loaded}");
    let cost_text = m["metricas"].as_array().unwrap().iter().find(|f| f["campo"] == "custo_anual_estimado").unwrap();
    let text = cost_text["descricao"].as_str().unwrap();
    assert!(text.contains("15000 km/ano") && text.contains("5,79"), "{text}");
    assert_eq!(m["eco_score"]["pesos"], json!({"energia": 0.45, "co2": 0.35, "poluentes": 0.2}));
    assert_eq!(m["eco_score"]["fonte"], "vw_eco_score");
    assert_eq!(m["eco_score"]["limites_poluentes"], json!({"nmhc_g_km": 0.05, "co_g_km": 1.3, "nox_g_km": 0.08}));
    let indices = m["eco_score"]["indices"].as_array().unwrap();
    assert_eq!((indices[0]["zero_em"].as_f64(), indices[0]["cem_em"].as_f64()), (Some(3.0), Some(0.3)));
    assert_eq!((indices[1]["zero_em"].as_f64(), indices[1]["cem_em"].as_f64()), (Some(250.0), Some(0.0)));
    let faixas: Vec<(String, Value, Value)> = m["eco_score"]["faixas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["faixa"].as_str().unwrap().to_string(), f["acima_de"].clone(), f["ate"].clone()))
        .collect();
    assert_eq!(
        faixas,
        vec![
            ("Baixo".into(), Value::Null, json!(40.0)),
            ("Regular".into(), json!(40.0), json!(60.0)),
            ("Bom".into(), json!(60.0), json!(80.0)),
            ("Excelente".into(), json!(80.0), Value::Null),
        ]
    );
    // Every published band agrees with the bounds the methodology states.
    for r in &rows {
        if let Some(score) = expected::eco_score(r) {
            let band = faixas.iter().find(|(_, _, ate)| ate.as_f64().is_none_or(|a| score <= a)).unwrap();
            assert_eq!(band.0, expected::faixa(score));
        }
    }
    assert_eq!(m["arredondamento"]["casas_metricas"], 2);
    assert_eq!(m["arredondamento"]["casas_eco_score"], 1);
    assert!(m["arredondamento"]["regra"].as_str().unwrap().contains("ABNT NBR 5891"));

    assert_error(app.get("/methodology?x=1"), 400, "VALIDATION_ERROR");
    assert_eq!(app.raw("GET", "/methodology").send().status, 401);

    // The server's configuration is the profile's default.
    let (_, body) = app.get(&format!("/vehicles/{}/summary", uid(3)));
    assert_eq!(body["data"]["meta"]["perfil_custo"], profile_json(server));
    assert_cost(&body["data"]["data"]["summary"]["consumo"]["custo_anual_estimado"], custo(&rows[2], server), "server");
    let (_, body) = app.get(&format!("/vehicles/{}/summary?preco_kwh=0.5", uid(4)));
    assert_eq!(body["data"]["meta"]["perfil_custo"], profile_json(Profile { kwh: 0.5, ..server }));
}

// ---------------------------------------------------------------------------------------------
// diff

fn run_diff(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(binary())
        .arg("diff")
        .args(args)
        .arg("--queries")
        .arg(repo().join("queries"))
        .output()
        .expect("cannot run diff");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Old: vehicles 1–4; new: 2–5, vehicle 3 with more CO2.
fn diff_fixtures(with_ids: bool) -> (Vec<Row>, Vec<Row>) {
    let all: Vec<Row> = (1..=5)
        .map(|n| {
            let mut r = Row::new(n, "Fiat", &format!("Modelo {n}"), 2020 + n as i32, "Compacto", "Gasolina");
            if !with_ids {
                r.id = None;
            }
            r
        })
        .collect();
    let old = all[0..4].to_vec();
    let mut new = all[1..5].to_vec();
    new[1].co2_fossil_g_km = Some(130.0);
    (old, new)
}

#[test]
fn diff_reports_added_removed_and_changed_vehicles() {
    let dir = temp_dir("diff");
    let (old_rows, new_rows) = diff_fixtures(true);
    let (old, new) = (dir.join("old.parquet"), dir.join("new.parquet"));
    write_rows(&old_rows, &old);
    write_rows(&new_rows, &new);
    let (old_s, new_s) = (old.to_str().unwrap(), new.to_str().unwrap());

    let (code, out, err) = run_diff(&[old_s, new_s, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out}"));
    assert_eq!(
        (&report["added"], &report["removed"], &report["changed"], &report["unchanged"]),
        (&json!(1), &json!(1), &json!(1), &json!(2))
    );
    assert_eq!(report["added_ids"], json!([uid(5)]));
    assert_eq!(report["removed_ids"], json!([uid(1)]));
    let changes = report["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0]["id"], json!(uid(3)));
    // The expected field changes, from the contract's formulas applied to both rows.
    let (before, after) = (&old_rows[2], &new_rows[1]);
    let mut want = vec![
        json!({"field": "co2_fossil_g_km", "old": 100.0, "new": 130.0}),
        json!({"field": "co2_referencia_g_km", "old": expected::co2(before), "new": expected::co2(after)}),
    ];
    let (s0, s1) = (expected::eco_score(before).unwrap(), expected::eco_score(after).unwrap());
    assert_ne!(s0, s1);
    want.push(json!({"field": "eco_score", "old": s0, "new": s1}));
    if expected::faixa(s0) != expected::faixa(s1) {
        want.push(json!({"field": "eco_faixa", "old": expected::faixa(s0), "new": expected::faixa(s1)}));
    }
    assert_eq!(changes[0]["fields"], Value::Array(want));

    let (code, text, _) = run_diff(&[old_s, new_s]);
    assert_eq!(code, 0);
    assert!(text.contains("1 added, 1 removed, 1 changed, 2 unchanged"), "{text}");
    assert!(text.contains(&format!("added    {}  Fiat Modelo 5 V5 2025", uid(5))), "{text}");
    assert!(text.contains(&format!("removed  {}  Fiat Modelo 1 V1 2021", uid(1))), "{text}");
    assert!(text.contains(&format!("changed  {}  Fiat Modelo 3 V3 2023", uid(3))), "{text}");
    assert!(text.contains("    co2_fossil_g_km: 100 -> 130"), "{text}");

    // The same file: nothing changed.
    let (_, out, _) = run_diff(&[old_s, old_s, "--format", "json"]);
    let same: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((&same["changed"], &same["unchanged"], &same["changes"]), (&json!(0), &json!(4), &json!([])));

    // Without an id column the ids are derived from the vehicle's fields, so they match too.
    let (old_rows, new_rows) = diff_fixtures(false);
    write_rows(&old_rows, &old);
    write_rows(&new_rows, &new);
    let (code, out, err) = run_diff(&[old_s, new_s, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let derived: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((&derived["added"], &derived["removed"], &derived["changed"]), (&json!(1), &json!(1), &json!(1)));
    assert_eq!(derived["changes"][0]["fields"][0]["field"], "co2_fossil_g_km");
}

#[test]
fn diff_of_a_broken_file_exits_2_with_the_validators_message() {
    let dir = temp_dir("diff-bad");
    let good = dir.join("good.parquet");
    write_rows(&diff_fixtures(true).0, &good);
    // A required column missing.
    let bad = dir.join("bad.parquet");
    let mut df = frame(&diff_fixtures(true).1);
    let _ = df.drop_in_place("categoria").unwrap();
    write_frame(&mut df, &bad);
    let junk = dir.join("junk.parquet");
    std::fs::write(&junk, b"not parquet").unwrap();

    for broken in [&bad, &junk] {
        let validate = Command::new(binary()).arg("validate").arg(broken).output().unwrap();
        let message = String::from_utf8_lossy(&validate.stderr).trim().to_string();
        assert!(!message.is_empty());
        for args in
            [[good.to_str().unwrap(), broken.to_str().unwrap()], [broken.to_str().unwrap(), good.to_str().unwrap()]]
        {
            let (code, out, err) = run_diff(&args);
            assert_eq!(code, 2, "{err}");
            assert!(out.is_empty(), "{out}");
            assert_eq!(err.trim(), message);
        }
    }
    assert!(run_diff(&[good.to_str().unwrap(), bad.to_str().unwrap()]).2.contains("categoria"));
    let (code, _, err) = run_diff(&[good.to_str().unwrap(), dir.join("missing.parquet").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
}

// ---------------------------------------------------------------------------------------------
// The reload log line

#[test]
fn the_reload_log_line_says_what_the_swap_changed() {
    let dir = temp_dir("reload-diff");
    let data = dir.join("catalog.parquet");
    let (old_rows, new_rows) = diff_fixtures(true);
    write_rows(&old_rows, &data);
    let app = TestApp::serve(&dir, &data, &[]);
    let staged = dir.join("incoming.parquet");
    write_rows(&new_rows, &staged);
    std::fs::rename(&staged, &data).unwrap();
    let start = Instant::now();
    let line = loop {
        if let Some(line) = app.logs().lines().find(|l| l.contains("dataset swap changed")).map(str::to_string) {
            break line;
        }
        assert!(start.elapsed() < Duration::from_secs(15), "no swap within 15 s:\n{}", app.logs());
        std::thread::sleep(Duration::from_millis(50));
    };
    for field in ["added=1", "removed=1", "changed=1", "unchanged=2"] {
        assert!(line.contains(field), "{field} missing from: {line}");
    }
    let version = app.raw("GET", "/readyz").send().json()["dataset"]["version"].as_str().unwrap().to_string();
    assert!(line.contains(&format!("to={version}")), "{line}");
    assert!(app.logs().contains("dataset swapped in"));
}

/// A view edited while the service runs into one analysts' SQL cannot read: the reload that
/// applies it says so in the log, as the first start does, and the API serves it.
#[test]
fn an_edited_view_sql_cannot_read_is_named_on_reload() {
    let dir = temp_dir("view-sql-edited");
    let queries = copy_queries(&dir);
    let data = dir.join("catalog.parquet");
    write_rows(&facet_rows(), &data);
    let app = TestApp::serve(&dir, &data, &["--queries", queries.to_str().unwrap()]);
    assert_eq!(app.get("/catalog/vehicles").0, 200);
    assert!(!app.logs().contains(SQL_CANNOT_READ), "{}", app.logs());
    add_a_view_sql_cannot_read(&queries);
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(app.pid() as libc::pid_t, libc::SIGHUP) }, 0);
    // The views are checked before the export is loaded: the warning comes before the swap.
    wait_for_log(&app, "dataset swapped in");
    assert!(app.logs().contains(SQL_CANNOT_READ) && app.logs().contains("vw_log"), "{}", app.logs());
    assert_eq!(app.get("/catalog/vehicles").0, 200);
}

/// What the log says of views analysts' SQL cannot read.
const SQL_CANNOT_READ: &str = "cannot be read in analysts' SQL";

/// Adds to `queries` the view `vw_log`, which Polars computes but analysts' SQL cannot read (LOG1P
/// is a Polars function DataFusion lacks).
fn add_a_view_sql_cannot_read(queries: &std::path::Path) {
    std::fs::write(
        queries.join("03_vw_log.sql"),
        "CREATE TABLE vw_log AS SELECT id, LOG1P(co2_fossil_g_km) AS log_co2 FROM catalog;\n",
    )
    .unwrap();
}

/// A view that Polars computes but analysts' SQL cannot read (LOG1P is a Polars function
/// DataFusion lacks): `validate --queries` refuses the folder naming the view, and `serve`
/// serves the API and says so in its log; the shipped views pass.
#[test]
fn a_view_sql_cannot_read_is_named_by_validate_and_serve() {
    let dir = temp_dir("view-sql-only-polars");
    let queries = copy_queries(&dir);
    let data = dir.join("catalog.parquet");
    write_rows(&facet_rows(), &data);
    let shipped = Command::new(binary()).arg("validate").arg(&data).arg("--queries").arg(&queries).output().unwrap();
    assert!(shipped.status.success(), "{}", String::from_utf8_lossy(&shipped.stderr));
    add_a_view_sql_cannot_read(&queries);
    let out = Command::new(binary()).arg("validate").arg(&data).arg("--queries").arg(&queries).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(SQL_CANNOT_READ) && stderr.contains("vw_log"), "{stderr}");
    let app = TestApp::serve(&dir, &data, &["--queries", queries.to_str().unwrap()]);
    assert_eq!(app.get("/catalog/vehicles").0, 200);
    // The views are checked on a thread of their own beside the first load: the line may follow
    // the first answers.
    wait_for_log(&app, SQL_CANNOT_READ);
    assert!(app.logs().contains("vw_log"), "{}", app.logs());
}
