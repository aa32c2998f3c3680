//! Hot reload: exports replaced by rename, by overwrite, half-written, broken; SIGHUP; ETags.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

fn rows(n: u32) -> Vec<Row> {
    (1..=n).map(|i| Row::new(i, "Fiat", &format!("Modelo {i:02}"), 2020, "Compacto", "Flex")).collect()
}

fn version(app: &TestApp) -> String {
    let r = app.raw("GET", "/readyz").send();
    r.json()["dataset"]["version"].as_str().unwrap().to_string()
}

fn total(app: &TestApp) -> u64 {
    let (_, body) = app.get("/catalog/vehicles?page_size=1");
    body["data"]["meta"]["pagination"]["total"].as_u64().unwrap()
}

/// Waits until the served version differs from `old`; panics after 15 s.
fn wait_for_new_version(app: &TestApp, old: &str) -> String {
    let start = Instant::now();
    loop {
        let v = version(app);
        if v != old {
            return v;
        }
        assert!(start.elapsed() < Duration::from_secs(15), "no swap within 15 s; log:\n{}", app.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A client loop that records every answer (version header → total) and every failure.
struct Load {
    stop: Arc<AtomicBool>,
    failures: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<(String, u64)>>>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(app: &TestApp, clients: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handles = (0..clients)
            .map(|_| {
                let (stop, failures, seen) = (Arc::clone(&stop), Arc::clone(&failures), Arc::clone(&seen));
                let base = app.base.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let res = Req::new("GET", &base, "/catalog/vehicles?page_size=100")
                            .header("X-API-Key", KEY)
                            .header("X-API-Secret", SECRET)
                            .try_send();
                        match res {
                            Ok(r) if r.status == 200 => {
                                let body: Value = r.json();
                                let items = body["data"]["data"]["items"].as_array().unwrap().len() as u64;
                                let total = body["data"]["meta"]["pagination"]["total"].as_u64().unwrap();
                                assert_eq!(items, total, "a page is never a mix");
                                let v = r.header("x-dataset-version").unwrap().to_string();
                                seen.lock().unwrap().push((v, total));
                            }
                            _ => {
                                failures.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                })
            })
            .collect();
        Load { stop, failures, seen, handles }
    }

    /// Stops the clients; returns (failures, answers).
    fn finish(self) -> (usize, Vec<(String, u64)>) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles {
            h.join().unwrap();
        }
        let seen = self.seen.lock().unwrap().clone();
        (self.failures.load(Ordering::Relaxed), seen)
    }
}

fn assert_consistent(answers: &[(String, u64)], expected: &[(&str, u64)]) {
    assert!(!answers.is_empty());
    for (v, t) in answers {
        let want = expected.iter().find(|(ev, _)| ev == v).unwrap_or_else(|| panic!("unknown version {v}"));
        assert_eq!(*t, want.1, "version {v} always answers its own data");
    }
}

#[test]
fn swap_by_rename_and_by_overwrite_under_load() {
    let dir = temp_dir("reload");
    let data = dir.join("catalog.parquet");
    write_rows(&rows(5), &data);
    let app = TestApp::serve(&dir, &data, &[]);
    let v1 = version(&app);
    assert_eq!(total(&app), 5);

    let load = Load::start(&app, 3);
    std::thread::sleep(Duration::from_millis(300));
    let staged = dir.join("incoming.parquet");
    write_rows(&rows(8), &staged);
    std::fs::rename(&staged, &data).unwrap();
    let v2 = wait_for_new_version(&app, &v1);
    std::thread::sleep(Duration::from_millis(300));

    // In-place overwrite (truncate + write).
    write_rows(&rows(3), &data);
    let v3 = wait_for_new_version(&app, &v2);
    std::thread::sleep(Duration::from_millis(300));
    let (failures, answers) = load.finish();
    assert_eq!(failures, 0, "no request fails because of a swap");
    assert_consistent(&answers, &[(&v1, 5), (&v2, 8), (&v3, 3)]);
    assert!(answers.iter().any(|(v, _)| *v == v2), "the renamed file was served");
    assert_eq!(total(&app), 3);
    assert!(app.logs().contains("dataset swapped in"));
}

#[test]
fn broken_exports_never_replace_good_data() {
    let dir = temp_dir("reload-bad");
    let data = dir.join("catalog.parquet");
    write_rows(&rows(5), &data);
    let app = TestApp::serve(&dir, &data, &[]);
    let v1 = version(&app);

    // Corrupt bytes.
    std::fs::write(&data, b"this is not parquet at all").unwrap();
    wait_for_log(&app, "is not a readable Parquet file");
    assert_eq!((version(&app), total(&app)), (v1.clone(), 5));

    // A required column missing.
    let mut df = frame(&rows(6)).drop("categoria").unwrap();
    write_frame(&mut df, &data);
    wait_for_log(&app, "column 'categoria': required column is missing");
    assert_eq!((version(&app), total(&app)), (v1.clone(), 5));

    // Duplicate ids.
    let mut dup = rows(6);
    dup[5].id = dup[0].id.clone();
    write_rows(&dup, &data);
    wait_for_log(&app, "column 'id', row 6: duplicate id");
    assert_eq!((version(&app), total(&app)), (v1.clone(), 5));
    assert!(app.logs().contains("new dataset refused; the previous one keeps serving"));

    // Half-written: the first half, a pause longer than the settle time, then the rest.
    let full_path = dir.join("full.parquet");
    write_rows(&rows(9), &full_path);
    let bytes = std::fs::read(&full_path).unwrap();
    let half = bytes.len() / 2;
    std::fs::write(&data, &bytes[..half]).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!((version(&app), total(&app)), (v1.clone(), 5), "a half-written file is never served");
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&data).unwrap();
        f.write_all(&bytes[half..]).unwrap();
    }
    wait_for_new_version(&app, &v1);
    assert_eq!(total(&app), 9);
}

#[test]
fn sighup_reloads_and_etags_follow_the_dataset() {
    let dir = temp_dir("reload-hup");
    let data = dir.join("catalog.parquet");
    write_rows(&rows(4), &data);
    // Polling effectively off: only SIGHUP can trigger the reload.
    let app = TestApp::serve(&dir, &data, &["--reload-interval-ms", "3600000"]);
    let v1 = version(&app);

    let first = app.get_req("/catalog/vehicles?page_size=2&marca=fiat").send();
    assert_eq!(first.status, 200);
    let tag = first.header("etag").unwrap().to_string();
    assert!(tag.starts_with("W/\"") && tag.ends_with('"'), "{tag}");
    assert_eq!(first.header("cache-control"), Some("private, no-cache"));
    assert_eq!(first.header("x-dataset-version"), Some(v1.as_str()));
    // Same request, parameters in another order: same tag; 304 without a body.
    let again = app.get_req("/catalog/vehicles?marca=fiat&page_size=2").header("If-None-Match", &tag).send();
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(tag.as_str()));
    let other = app.get_req("/catalog/vehicles?page_size=3").header("If-None-Match", &tag).send();
    assert_eq!(other.status, 200);
    // Errors are not cached.
    let bad = app.get_req("/catalog/vehicles?page=0").send();
    assert_eq!((bad.status, bad.header("etag"), bad.header("cache-control")), (400, None, Some("no-store")));

    write_rows(&rows(7), &data);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(version(&app), v1, "no polling: nothing changes before SIGHUP");
    let status = std::process::Command::new("kill").arg("-HUP").arg(app.pid().to_string()).status().unwrap();
    assert!(status.success());
    let v2 = wait_for_new_version(&app, &v1);
    assert!(app.logs().contains("SIGHUP"));
    assert_eq!(total(&app), 7);

    let after = app.get_req("/catalog/vehicles?page_size=2&marca=fiat").header("If-None-Match", &tag).send();
    assert_eq!(after.status, 200, "the old tag no longer matches");
    assert_ne!(after.header("etag"), Some(tag.as_str()));
    assert_eq!(after.header("x-dataset-version"), Some(v2.as_str()));
}

#[test]
fn the_version_covers_the_cost_configuration() {
    let dir = temp_dir("version-cost");
    let data = dir.join("catalog.parquet");
    let gasolina: Vec<Row> =
        (1..=3).map(|i| Row::new(i, "Fiat", &format!("Modelo {i:02}"), 2020, "Compacto", "Gasolina")).collect();
    write_rows(&gasolina, &data);
    let app = TestApp::serve(&dir, &data, &[]);
    let pricier = TestApp::serve(&temp_dir("version-cost-2"), &data, &["--preco-gasolina", "6.5"]);
    let path = format!("/vehicles/{}/summary", uid(1));
    let first = app.get_req(&path).send();
    let tag = first.header("etag").unwrap().to_string();
    // Same export, another price: another version, another tag, no 304 with stale costs.
    let other = pricier.get_req(&path).header("If-None-Match", &tag).send();
    assert_eq!(other.status, 200, "a tag from another cost configuration never matches");
    assert_ne!(other.header("etag"), Some(tag.as_str()));
    assert_ne!(other.header("x-dataset-version"), first.header("x-dataset-version"));
    assert_ne!(version(&app), version(&pricier));
    let cost = |r: &Resp| r.json()["data"]["data"]["summary"]["consumo"]["custo_anual_estimado"].as_f64().unwrap();
    assert!(cost(&other) > cost(&first));
    // The same configuration gives the same version (restarts keep clients' tags valid).
    let same = TestApp::serve(&temp_dir("version-cost-3"), &data, &[]);
    assert_eq!(version(&same), version(&app));
    let again = same.get_req(&path).header("If-None-Match", &tag).send();
    assert_eq!(again.status, 304);
}

#[test]
fn an_edited_view_is_applied_by_sighup_with_the_same_export() {
    let dir = temp_dir("edited-view");
    let queries = copy_queries(&dir);
    let data = dir.join("catalog.parquet");
    let mut only = Row::new(1, "Fiat", "Uno", 2020, "Compacto", "Gasolina");
    only.consumo_energetico_mj_km = None;
    only.nmhc_g_km = None;
    only.co2_fossil_g_km = Some(100.0);
    write_rows(&[only], &data);
    let q = queries.to_str().unwrap();
    let app = TestApp::serve(&dir, &data, &["--queries", q, "--reload-interval-ms", "3600000"]);
    let v1 = version(&app);
    let path = format!("/vehicles/{}/eco-score", uid(1));
    let first = app.get_req(&path).send();
    // CO2 index only (no energy, no pollutants): 100 × (250 − 100) / 250 = 60.
    assert_eq!(first.json()["data"]["data"]["eco_score"], 60.0);
    let tag = first.header("etag").unwrap().to_string();

    // An analyst moves the CO2 bound from 250 to 300 g/km: 100 × (300 − 100) / 300 = 66.666… → 66.7.
    let file = queries.join("02_vw_eco_score.sql");
    let sql = std::fs::read_to_string(&file).unwrap();
    let edited = sql.replace(
        "100.0 * ({{indice_co2.zero_g_km}} - co2_fossil_g_km) / {{indice_co2.zero_g_km}}",
        "100.0 * (300.0 - co2_fossil_g_km) / 300.0",
    );
    assert_ne!(edited, sql, "the view has the CO2 formula this test edits");
    std::fs::write(&file, edited).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(version(&app), v1, "no polling: nothing changes before SIGHUP");
    let status = std::process::Command::new("kill").arg("-HUP").arg(app.pid().to_string()).status().unwrap();
    assert!(status.success());
    let v2 = wait_for_new_version(&app, &v1);
    let after = app.get_req(&path).header("If-None-Match", &tag).send();
    assert_eq!(after.status, 200, "the edited view changes the version and every tag");
    assert_eq!(after.json()["data"]["data"]["eco_score"], 66.7);
    assert_eq!(after.header("x-dataset-version"), Some(v2.as_str()));
}

/// An analyst edits a weight in `queries/parametros.toml` and sends SIGHUP: `/methodology`, the
/// eco scores and the version change together. A broken edit is refused with the key named, and
/// the previous dataset keeps serving.
#[test]
fn an_edited_parameter_changes_methodology_scores_and_version_together() {
    let dir = temp_dir("reload-params");
    let queries = copy_queries(&dir);
    let data = dir.join("catalog.parquet");
    // Energy index 100 × (3 − 1.5) / 2.7 = 55.555…; CO2 index 100 × (250 − 100) / 250 = 60;
    // pollutants 100 × (1 − (0.01/0.05 + 0.2/1.3 + 0.01/0.08) / 3) = 84.038…
    let only = Row::new(1, "Fiat", "Uno", 2020, "Compacto", "Gasolina");
    write_rows(&[only], &data);
    let (energia, co2, poluentes) = (100.0 * 1.5 / 2.7, 60.0, 100.0 * (1.0 - (0.2 + 0.2 / 1.3 + 0.125) / 3.0));
    let score = |pe: f64, pc: f64, pp: f64| round(pe * energia + pc * co2 + pp * poluentes, 1);
    let q = queries.to_str().unwrap();
    let app = TestApp::serve(&dir, &data, &["--queries", q, "--reload-interval-ms", "3600000"]);
    let v1 = version(&app);
    let path = format!("/vehicles/{}/eco-score", uid(1));
    assert_eq!(app.data(&path)["eco_score"], score(0.45, 0.35, 0.20));
    let pesos = |app: &TestApp| app.data("/methodology")["eco_score"]["pesos"].clone();
    assert_eq!(pesos(&app), serde_json::json!({"energia": 0.45, "co2": 0.35, "poluentes": 0.20}));

    let file = queries.join("parametros.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let edited = text.replacen("peso_energia = 0.45", "peso_energia = 0.55", 1).replacen(
        "peso_poluentes = 0.20",
        "peso_poluentes = 0.10",
        1,
    );
    assert_ne!(edited, text);
    std::fs::write(&file, &edited).unwrap();
    let hup = || {
        let status = std::process::Command::new("kill").arg("-HUP").arg(app.pid().to_string()).status().unwrap();
        assert!(status.success());
    };
    hup();
    let v2 = wait_for_new_version(&app, &v1);
    let answer = app.get_req(&path).send();
    assert_eq!(answer.header("x-dataset-version"), Some(v2.as_str()));
    assert_eq!(answer.json()["data"]["data"]["eco_score"], score(0.55, 0.35, 0.10));
    assert_ne!(score(0.55, 0.35, 0.10), score(0.45, 0.35, 0.20), "the edit changes the score");
    assert_eq!(pesos(&app), serde_json::json!({"energia": 0.55, "co2": 0.35, "poluentes": 0.10}));
    let methodology = app.get_req("/methodology").send();
    assert_eq!(methodology.header("x-dataset-version"), Some(v2.as_str()));

    // Weights that do not sum to 1: refused with the key named; v2 keeps serving.
    std::fs::write(&file, edited.replacen("peso_co2 = 0.35", "peso_co2 = 0.45", 1)).unwrap();
    hup();
    wait_for_log(&app, "eco_score.peso_energia + peso_co2 + peso_poluentes must sum to 1");
    let (_, ready) = into_json(app.raw("GET", "/readyz").send());
    assert_eq!(ready["last_reload"]["result"], "refused", "{ready}");
    assert!(ready["last_reload"]["reason"].as_str().unwrap().contains("parametros.toml"), "{ready}");
    assert_eq!(version(&app), v2);
    assert_eq!(app.data(&path)["eco_score"], score(0.55, 0.35, 0.10));
    // A value of the wrong type: refused, the key named.
    std::fs::write(&file, edited.replacen("zero_g_km = 250.0", "zero_g_km = \"250\"", 1)).unwrap();
    hup();
    wait_for_log(&app, "zero_g_km");
    assert_eq!(version(&app), v2);
}

#[test]
fn an_infinite_value_in_a_new_export_keeps_the_previous_one() {
    let dir = temp_dir("reload-inf");
    let data = dir.join("catalog.parquet");
    write_rows(&rows(3), &data);
    let app = TestApp::serve(&dir, &data, &[]);
    let v1 = version(&app);
    let mut bad = rows(4);
    bad[3].co2_fossil_g_km = Some(f64::INFINITY);
    write_rows(&bad, &data);
    wait_for_log(&app, "column 'co2_fossil_g_km', row 4: infinite value");
    assert_eq!((version(&app), total(&app)), (v1, 3));
}

/// The fixed rankings answered ahead of the router follow a swap at once, on every serving
/// thread: each keeps the answers of the snapshot it last served, and a new snapshot replaces
/// them (many keep-alive clients, so that both serving threads answer before and after).
#[test]
fn plain_fixed_answers_follow_a_swap_on_every_serving_thread() {
    let dir = temp_dir("reload-fast");
    let data = dir.join("catalog.parquet");
    write_rows(&rows(4), &data);
    let app = TestApp::serve(&dir, &data, &[]);
    let v1 = version(&app);
    let plain = |app: &TestApp| -> Vec<(u16, Option<String>, usize)> {
        (0..16)
            .map(|_| {
                let res = app.get_req("/rankings/most-economical").send();
                let items = res.json()["data"]["data"]["items"].as_array().map_or(0, Vec::len);
                (res.status, res.header("x-dataset-version").map(String::from), items)
            })
            .collect()
    };
    assert!(plain(&app).iter().all(|(s, v, n)| *s == 200 && v.as_deref() == Some(v1.as_str()) && *n == 4));
    write_rows(&rows(7), &data);
    let v2 = wait_for_new_version(&app, &v1);
    let after = plain(&app);
    assert!(after.iter().all(|(s, v, n)| *s == 200 && v.as_deref() == Some(v2.as_str()) && *n == 7), "{after:?}");
    // The same answer as through every layer.
    let full = app.get_req("/rankings/most-economical").header("Accept-Encoding", "identity").send();
    let plain_one = app.get_req("/rankings/most-economical").send();
    assert_eq!(full.json()["data"]["data"], plain_one.json()["data"]["data"]);
    assert_eq!(full.header("etag"), plain_one.header("etag"));
}
