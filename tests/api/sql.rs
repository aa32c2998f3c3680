//! Analysts' own questions in SQL (API-CONTRACT §7): answers checked against the fixture rows
//! computed here, the sandbox (one read-only statement, allow-listed functions, offered tables
//! only, no path in any message) and the limits (rows, time, memory) with other clients served
//! meanwhile.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use polars::prelude::DataType;
use serde_json::{json, Value};

use crate::common::*;
use crate::expected;

fn fixture() -> Vec<Row> {
    let brands = ["Fiat", "BYD", "Toyota", "Renault"];
    (1..=24u32)
        .map(|i| {
            let mut r = Row::new(
                i,
                brands[(i % 4) as usize],
                &format!("M{}", i % 5),
                2012 + (i % 10) as i32,
                "Compacto",
                "Flex",
            );
            r.co2_fossil_g_km = Some(80.0 + (i as f64 * 7.3) % 90.0);
            r.consumo_energetico_mj_km = Some(1.1 + (i as f64 * 0.17) % 1.4);
            if i % 6 == 0 {
                r.co2_fossil_g_km = None;
            }
            r
        })
        .collect()
}

fn post(app: &TestApp, sql: &str) -> (u16, Value) {
    app.post_json("/sql", &json!({ "sql": sql }).to_string())
}

fn rows_of(body: &Value) -> Vec<Value> {
    body["data"]["data"].as_array().cloned().unwrap_or_default()
}

#[test]
fn analyst_queries_answer_what_the_rows_say() {
    let rows = fixture();
    let app = TestApp::with_rows(&rows);
    // Mean CO2 by brand since 2015, brands with at least two vehicles.
    let (status, body) = post(
        &app,
        "SELECT marca, COUNT(*) AS n, AVG(co2_fossil_g_km) AS co2 FROM catalog WHERE ano >= 2015 \
         GROUP BY marca HAVING COUNT(*) >= 2 ORDER BY marca",
    );
    assert_eq!(status, 200, "{body}");
    let mut want: BTreeMap<String, (u64, f64, u64)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.ano >= 2015) {
        let e = want.entry(r.marca.clone()).or_default();
        e.0 += 1;
        if let Some(c) = r.co2_fossil_g_km {
            e.1 += c;
            e.2 += 1;
        }
    }
    let want: Vec<(String, u64, f64)> =
        want.into_iter().filter(|(_, v)| v.0 >= 2).map(|(k, v)| (k, v.0, v.1 / v.2 as f64)).collect();
    let got = rows_of(&body);
    assert_eq!(got.len(), want.len(), "{body}");
    for (g, (marca, n, co2)) in got.iter().zip(&want) {
        assert_eq!(g["marca"], marca.as_str());
        assert_eq!(g["n"], *n);
        assert!((g["co2"].as_f64().unwrap() - co2).abs() < 1e-9, "{g} vs {co2}");
    }
    let meta = &body["data"]["meta"];
    assert_eq!(
        meta["columns"],
        json!([{"name": "marca", "type": "string"}, {"name": "n", "type": "integer"}, {"name": "co2", "type": "float"}])
    );
    assert_eq!((meta["row_count"].as_u64(), meta["truncated"].as_bool()), (Some(want.len() as u64), Some(false)));

    // A join of the catalog with its own eco scores (a view), a CTE, CASE, CAST, DISTINCT, UNION.
    let (status, body) = post(
        &app,
        "WITH best AS (SELECT marca, MAX(eco_score) AS top FROM vw_eco_score GROUP BY marca) \
         SELECT c.id, CAST(c.ano AS VARCHAR) AS ano, CASE WHEN e.eco_score >= 60 THEN 'alto' ELSE 'baixo' END AS nivel, \
         e.eco_score, b.top FROM catalog c JOIN vw_eco_score e ON c.id = e.id JOIN best b ON b.marca = c.marca \
         WHERE c.marca = 'Fiat' ORDER BY c.id",
    );
    assert_eq!(status, 200, "{body}");
    let fiat: Vec<&Row> = rows.iter().filter(|r| r.marca == "Fiat").collect();
    let top = fiat.iter().filter_map(|r| expected::eco_score(r)).fold(f64::MIN, f64::max);
    let got = rows_of(&body);
    assert_eq!(got.len(), fiat.len());
    for (g, r) in got.iter().zip(&fiat) {
        let score = expected::eco_score(r);
        assert_eq!(g["id"], r.id.clone().unwrap().as_str());
        assert_eq!(g["ano"], r.ano.to_string().as_str());
        assert_eq!(g["eco_score"].as_f64(), score, "{g}");
        assert_eq!(g["nivel"], if score.unwrap() >= 60.0 { "alto" } else { "baixo" });
        assert_eq!(g["top"].as_f64(), Some(top));
    }
    let (_, body) = post(&app, "SELECT DISTINCT marca FROM catalog UNION SELECT 'Nova' AS marca ORDER BY marca");
    let got: Vec<String> = rows_of(&body).iter().map(|r| r["marca"].as_str().unwrap().to_string()).collect();
    assert_eq!(got, vec!["BYD", "Fiat", "Nova", "Renault", "Toyota"]);
    // A subquery in WHERE; GET with CSV.
    let sql = "SELECT COUNT(*) AS n FROM catalog WHERE ano IN (SELECT ano FROM catalog WHERE marca = 'BYD')";
    let n = rows.iter().filter(|r| rows.iter().any(|b| b.marca == "BYD" && b.ano == r.ano)).count();
    let res = app.get_req(&format!("/sql?sql={}&format=csv", form(sql))).send();
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), format!("n\n{n}\n"));
    assert!(res.header("etag").is_some(), "a GET answer is cacheable");
}

fn form(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[test]
fn the_sandbox_refuses_all_but_one_read_only_query_and_names_no_path() {
    let app = TestApp::with_rows(&fixture());
    for sql in [
        "DROP TABLE catalog",
        "CREATE TABLE x AS SELECT * FROM catalog",
        "INSERT INTO catalog SELECT * FROM catalog",
        "COPY catalog TO '/tmp/out.csv'",
        "SET polars_streaming = true",
        "SELECT 1; SELECT 2",
        "SELECT * FROM read_parquet('/etc/passwd')",
        "SELECT * FROM read_csv('https://example.com/data.csv')",
        "SELECT * FROM read_ipc('/root/x.arrow')",
        "SELECT * FROM read_json('/root/x.json')",
        "COPY (SELECT * FROM catalog) TO '/tmp/out.parquet' STORED AS PARQUET",
        "CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '/etc/passwd'",
        "SET datafusion.execution.target_partitions = 1",
        "SELECT * FROM generate_series(1, 3)",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM 'file:///etc/hosts'",
        "SELECT * FROM information_schema.secrets",
        "SELECT * FROM pg_catalog.pg_authid",
        "EXPLAIN SELECT * FROM catalog",
        "PREPARE p AS SELECT 1",
        "SELECT * FROM secrets",
        "SELECT nope FROM catalog",
        "SELEC marca FROM catalog",
        "",
    ] {
        let message = assert_error(post(&app, sql), 400, "VALIDATION_ERROR");
        assert!(message.starts_with("Consulta SQL"), "{sql}: {message}");
        for path in ["/etc", "/root", "/tmp", "eco-insights-sql", ".arrow"] {
            assert!(!message.contains(path), "{sql}: a path leaked: {message}");
        }
    }
    assert!(assert_error(post(&app, "SELECT * FROM secrets"), 400, "VALIDATION_ERROR").contains("'secrets'"));
    // The system catalog is read as PostgreSQL's: `catalog` a base table in schema public.
    let (status, body) = post(
        &app,
        "SELECT table_type FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'catalog'",
    );
    assert_eq!(status, 200, "{body:?}");
    assert_eq!(rows_of(&body), vec![json!({"table_type": "BASE TABLE"})], "{body:?}");
    // The body is strict; the content type required.
    let res = app
        .raw("POST", "/sql")
        .header("X-API-Key", KEY)
        .header("X-API-Secret", SECRET)
        .body("{\"sql\": \"SELECT 1\"}")
        .send();
    assert_eq!(res.status, 415);
    assert_error(app.post_json("/sql", r#"{"sql": "SELECT 1", "x": 1}"#), 400, "VALIDATION_ERROR");
    assert_error(app.get("/sql"), 400, "VALIDATION_ERROR");
    assert_eq!(app.raw("GET", "/sql?sql=SELECT%201").send().status, 401, "credentials as everywhere");
}

/// PostgreSQL's semantics where engines differ (API-CONTRACT §7, SQL dialect), the expected
/// values computed here from the fixture rows: integer division, a cast of a fraction to an
/// integer rounding (half to even for a double, half away from zero for the average of
/// integers), nulls first in a descending order, byte-wise text order, output column names.
#[test]
fn queries_are_answered_as_postgresql_answers_them() {
    let rows = fixture();
    let app = TestApp::with_rows(&rows);
    // Integer division and the names PostgreSQL gives unnamed columns.
    let (status, body) =
        post(&app, "SELECT ano / 5, count(*), min(ano) % 4 AS m, avg(ano) FROM catalog GROUP BY ano / 5 ORDER BY 1");
    assert_eq!(status, 200, "{body}");
    let names: Vec<&str> =
        body["data"]["meta"]["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["?column?", "count", "m", "avg"]);
    let mut groups: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for r in &rows {
        groups.entry(r.ano / 5).or_default().push(r.ano);
    }
    let got = rows_of(&body);
    assert_eq!(got.len(), groups.len());
    for (g, (q, years)) in got.iter().zip(&groups) {
        assert_eq!(g["?column?"], *q);
        assert_eq!(g["count"], years.len());
        assert_eq!(g["m"], years.iter().min().unwrap() % 4);
        let mean = years.iter().map(|&y| y as f64).sum::<f64>() / years.len() as f64;
        assert!((g["avg"].as_f64().unwrap() - mean).abs() < 1e-9, "{g}");
    }
    // PostgreSQL would answer two columns of one name; rows keyed by name cannot: refused, named.
    let message = assert_error(post(&app, "SELECT count(*), count(motor) FROM catalog"), 400, "VALIDATION_ERROR");
    assert!(message.contains("\"count\""), "{message}");
    // Casts of fractions round: 2.5 -> 2 and 3.5 -> 4 as doubles (half to even), the average of
    // 2015 and 2016 -> 2016 as a numeric (half away from zero); -2.5 -> -2.
    let (status, body) = post(
        &app,
        "SELECT CAST(2.5::float8 AS INTEGER) AS a, 3.5::float8::int AS b, (-2.5)::float8::int AS c, \
         CAST(2.7 AS INTEGER) AS d, (SELECT CAST(avg(x) AS INTEGER) FROM (VALUES (2015), (2016)) t(x)) AS e, \
         round(2.675::float8, 2) AS f, round(2.5::float8) AS g, 7 / 2 AS h, -7 / 2 AS i, 7.0 / 2 AS j",
    );
    assert_eq!(status, 200, "{body}");
    let r = &rows_of(&body)[0];
    assert_eq!(
        (r["a"].as_i64(), r["b"].as_i64(), r["c"].as_i64(), r["d"].as_i64()),
        (Some(2), Some(4), Some(-2), Some(3))
    );
    assert_eq!(r["e"].as_i64(), Some(2016), "{r}");
    assert_eq!((r["f"].as_f64(), r["g"].as_f64()), (Some(2.68), Some(2.0)), "{r}");
    assert_eq!((r["h"].as_i64(), r["i"].as_i64(), r["j"].as_f64()), (Some(3), Some(-3), Some(3.5)), "{r}");
    // A descending order puts nulls first, an ascending one last, unless told.
    let (_, body) = post(&app, "SELECT id, co2_fossil_g_km AS co2 FROM catalog ORDER BY co2 DESC, id");
    let got = rows_of(&body);
    let nulls = rows.iter().filter(|r| r.co2_fossil_g_km.is_none()).count();
    assert!(nulls > 0);
    assert!(got[..nulls].iter().all(|g| g["co2"].is_null()), "nulls first descending");
    assert!(got[nulls..].windows(2).all(|w| w[0]["co2"].as_f64() >= w[1]["co2"].as_f64()));
    let (_, body) = post(&app, "SELECT co2_fossil_g_km AS co2 FROM catalog ORDER BY co2");
    assert!(rows_of(&body)[rows.len() - nulls..].iter().all(|g| g["co2"].is_null()), "nulls last ascending");
    // Text compares byte-wise: 'Z' < 'a' < 'É'.
    let (_, body) = post(&app, "SELECT x FROM (VALUES ('a'), ('É'), ('Z'), ('e')) t(x) ORDER BY x");
    let got: Vec<String> = rows_of(&body).iter().map(|r| r["x"].as_str().unwrap().to_string()).collect();
    assert_eq!(got, ["Z", "a", "e", "É"]);
    // Ordered-set aggregates and a window frame.
    let (status, body) = post(
        &app,
        "SELECT mode() WITHIN GROUP (ORDER BY marca) AS m, percentile_disc(0.5) WITHIN GROUP (ORDER BY ano) AS p, \
         percentile_cont(0.5) WITHIN GROUP (ORDER BY ano) AS c FROM catalog",
    );
    assert_eq!(status, 200, "{body}");
    let mut years: Vec<i32> = rows.iter().map(|r| r.ano).collect();
    years.sort();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        *counts.entry(r.marca.as_str()).or_default() += 1;
    }
    let most = counts.values().max().unwrap();
    let mode = counts.iter().find(|(_, n)| *n == most).unwrap().0;
    let n = years.len();
    let median = (years[(n - 1) / 2] as f64 + years[n / 2] as f64) / 2.0;
    let r = &rows_of(&body)[0];
    assert_eq!(r["m"], *mode);
    assert_eq!(r["p"], years[(n as f64 * 0.5).ceil() as usize - 1]);
    assert_eq!(r["c"].as_f64(), Some(median));
}

/// A service with tight SQL limits.
fn tight(extra: &[&str]) -> TestApp {
    let dir = temp_dir("sql-limits");
    let data = dir.join("catalog.parquet");
    let rows: Vec<Row> =
        (1..=3000u32).map(|i| Row::new(i, "Fiat", &format!("M{i}"), 2020, "Compacto", "Flex")).collect();
    write_rows(&rows, &data);
    TestApp::serve(&dir, &data, extra)
}

#[test]
fn rows_past_the_limit_are_cut_and_said() {
    let app = tight(&["--sql-max-rows", "5"]);
    let (status, body) = post(&app, "SELECT id FROM catalog ORDER BY id");
    assert_eq!(status, 200, "{body}");
    assert_eq!(rows_of(&body).len(), 5);
    assert_eq!(body["data"]["meta"]["row_count"], 5);
    assert_eq!(body["data"]["meta"]["truncated"], true);
    let (_, body) = post(&app, "SELECT id FROM catalog ORDER BY id LIMIT 5");
    assert_eq!(body["data"]["meta"]["truncated"], false);
}

/// An answer of more than 8 MB comes through the file the worker writes and the service maps:
/// the same rows, in order, as small answers give, and no file left behind. (Read as Arrow: a
/// test holding a large JSON answer would swell this process, whose size the children it
/// starts for other tests inherit until they exec.)
#[test]
fn large_answers_come_whole_through_the_answer_file() {
    use polars::prelude::{IpcStreamReader, SerReader};
    let app = tight(&["--sql-max-rows", "500000"]);
    let (_, body) = post(&app, "SELECT id FROM catalog ORDER BY id");
    let ids: Vec<String> = rows_of(&body).iter().map(|r| r["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), 3000);
    let copies = 60usize;
    let values: Vec<String> = (1..=copies).map(|k| format!("({k})")).collect();
    let sql = format!(
        "SELECT c.id, c.modelo, c.marca, c.versao, g.k FROM catalog c CROSS JOIN (VALUES {}) AS g(k) ORDER BY g.k, c.id",
        values.join(", ")
    );
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("sql", &sql)
        .append_pair("format", "arrow")
        .finish();
    let arrow = app.get_req(&format!("/sql?{query}")).send();
    assert_eq!(arrow.status, 200, "{}", String::from_utf8_lossy(&arrow.body[..300.min(arrow.body.len())]));
    assert!(arrow.body.len() > 8 * 1024 * 1024, "{} bytes", arrow.body.len());
    let frame = IpcStreamReader::new(std::io::Cursor::new(arrow.body)).finish().unwrap();
    assert_eq!(frame.height(), 3000 * copies);
    let id = frame.column("id").unwrap().str().unwrap().clone();
    let k = frame.column("k").unwrap().cast(&polars::prelude::DataType::Int64).unwrap();
    let k = k.i64().unwrap();
    for copy in [1, copies] {
        let at = (copy - 1) * 3000;
        let block: Vec<String> = (at..at + 3000).map(|r| id.get(r).unwrap().to_string()).collect();
        assert_eq!(block, ids, "copy {copy} in id order");
        assert!((at..at + 3000).all(|r| k.get(r) == Some(copy as i64)), "copy {copy}");
    }
    let answers = std::path::Path::new("/dev/shm").join(format!("eco-insights-answers-{}", app.pid()));
    if answers.is_dir() {
        let left: Vec<_> = std::fs::read_dir(&answers).unwrap().flatten().map(|e| e.path()).collect();
        assert!(left.is_empty(), "answer files left: {left:?}");
    }
}

/// A catalog of `rows` generated by the binary into `out`: not in this process, since a test
/// process that grew by hundreds of MB would show in the peak memory other tests read of the
/// commands they start (a child's peak counts its parent's until the exec).
fn generate(rows: usize, seed: u64, out: &std::path::Path) {
    let generated = std::process::Command::new(binary())
        .args(["generate", "--rows", &rows.to_string(), "--seed", &seed.to_string(), "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(generated.success());
}

/// The query workers the service `pid` runs (its `sql-worker` children).
fn workers_of(pid: u32) -> Vec<u32> {
    let mut workers: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            let parent = stat.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
            parent == Some(pid) && cmdline.split(|&b| b == 0).any(|arg| arg == b"sql-worker")
        })
        .collect();
    workers.sort_unstable();
    workers
}

/// Whether every thread of the process `pid` is in the idle scheduling class (`SCHED_IDLE`, 5:
/// the 41st field of its stat).
fn all_threads_idle(pid: u32) -> bool {
    let tasks: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    !tasks.is_empty()
        && tasks.iter().all(|tid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).unwrap_or_default();
            let policy = stat.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').nth(38).map(str::to_string));
            policy.as_deref() == Some("5")
        })
}

fn vm_hwm_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// Hostile queries stop at the limits in about the time limit, while a client of the fixed
/// operations keeps getting every answer, and the service's own memory stays bounded.
#[test]
fn hostile_queries_stop_at_the_limits_and_everyone_else_is_served() {
    let app = tight(&["--sql-timeout-ms", "300", "--sql-memory-mb", "256"]);
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let slowest = Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let client = {
        let (stop, ok, failed, slowest, base) =
            (Arc::clone(&stop), Arc::clone(&ok), Arc::clone(&failed), Arc::clone(&slowest), app.base.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let res = Req::new("GET", &base, "/catalog/vehicles?page_size=5")
                    .header("X-API-Key", KEY)
                    .header("X-API-Secret", SECRET)
                    .try_send();
                match res {
                    Ok(r) if r.status == 200 => ok.fetch_add(1, Ordering::Relaxed),
                    _ => failed.fetch_add(1, Ordering::Relaxed),
                };
                let mut s = slowest.lock().unwrap();
                *s = (*s).max(t.elapsed());
            }
        })
    };
    let hostile = [
        // A self cross join (9M rows) grouped by a text of each pair (9M groups): memory, or time.
        "SELECT a.versao || b.versao AS s, count(*) AS n FROM catalog a CROSS JOIN catalog b GROUP BY 1",
        // A 27G-row cross join ordered (a top-k sort: little memory, so time).
        "SELECT a.versao || b.versao || c.versao AS s FROM catalog a CROSS JOIN catalog b CROSS JOIN catalog c ORDER BY s",
        // A 900M-row cross join, counted: time, or memory.
        "SELECT COUNT(*) AS n FROM catalog a CROSS JOIN catalog b CROSS JOIN (SELECT ano FROM catalog LIMIT 100) c \
         WHERE a.modelo < b.modelo",
        // A huge string.
        "SELECT LPAD('x', 2000000000, 'y') AS s",
    ];
    for sql in hostile {
        let t = Instant::now();
        let (status, body) = post(&app, sql);
        let took = t.elapsed();
        assert_eq!(status, 422, "{sql}: {body}");
        assert_eq!(body["error"]["code"], "QUERY_TOO_EXPENSIVE");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("tempo limite de 300 ms") || message.contains("limite de memória de 256 MB"),
            "{message}"
        );
        assert!(took < Duration::from_secs(5), "{sql}: stopped after {took:?}");
    }
    // No worker is left running.
    std::thread::sleep(Duration::from_millis(200));
    let workers = std::process::Command::new("pgrep").args(["-f", "sql-worker", "-P", &app.pid().to_string()]).output();
    if let Ok(out) = workers {
        assert!(String::from_utf8_lossy(&out.stdout).trim().is_empty(), "a worker outlived its query");
    }
    stop.store(true, Ordering::Relaxed);
    client.join().unwrap();
    assert_eq!(failed.load(Ordering::Relaxed), 0);
    assert!(ok.load(Ordering::Relaxed) > 10, "{} answers", ok.load(Ordering::Relaxed));
    assert!(*slowest.lock().unwrap() < Duration::from_secs(2), "slowest answer {:?}", slowest.lock().unwrap());
    // The queries ran in workers: the service itself never held their data.
    assert!(vm_hwm_kb(app.pid()) < 400 * 1024, "service peaked at {} KB", vm_hwm_kb(app.pid()));
    // And it still answers SQL.
    assert_eq!(post(&app, "SELECT COUNT(*) AS n FROM catalog").1["data"]["data"][0]["n"], 3000);
}

/// A version answers SQL from the moment it serves: its first query after `/readyz`, on the
/// catalog and on the views, is answered at once with the default limits (nothing is written or
/// computed ahead, no 503 while it would be); the views are computed in the worker, so the
/// service's own peak memory does not grow with them; and what the worker reads is the very file
/// the version was loaded from, kept byte for byte, even once the file at `--data` is replaced.
#[test]
fn a_version_answers_sql_from_the_moment_it_serves() {
    let dir = temp_dir("sql-at-once");
    let data = dir.join("catalog.parquet");
    generate(500_000, 3, &data);
    let loaded = std::fs::read(&data).unwrap();
    let app = TestApp::serve(&dir, &data, &[]);
    let (_, ready) = app.get("/readyz");
    let version = ready["dataset"]["version"].as_str().unwrap().to_string();
    // A worker was readied on the export while the load went on, at the normal priority (no
    // API answer waited behind it); the first query on the served version lowers it, every
    // thread of it, to the idle scheduling class like every worker.
    let readied = format!("SQL worker readied while the dataset loads version={version}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !app.logs().contains(&readied) {
        assert!(Instant::now() < deadline, "no worker readied early; log:\n{}", app.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
    let early = workers_of(app.pid());
    assert!(!early.is_empty(), "no SQL worker runs");
    assert!(early.iter().all(|&w| !all_threads_idle(w)), "the readied worker was lowered before any query");
    let before = vm_hwm_kb(app.pid());
    let (status, body) = post(&app, "SELECT COUNT(*) AS n FROM catalog");
    assert_eq!(status, 200, "{body}");
    assert_eq!(rows_of(&body)[0]["n"], 500_000, "{body}");
    let (status, body) = post(&app, "SELECT count(*) AS n, count(DISTINCT eco_faixa) AS faixas FROM vw_eco_score");
    assert_eq!(status, 200, "{body}");
    assert_eq!(rows_of(&body)[0]["n"], 500_000, "{body}");
    assert_eq!(rows_of(&body)[0]["faixas"], 4, "{body}");
    let now = workers_of(app.pid());
    assert!(early.iter().all(|w| now.contains(w)), "the readied worker is gone: {early:?} then {now:?}");
    assert!(now.iter().all(|&w| all_threads_idle(w)), "a worker runs at the normal priority");
    let grown = vm_hwm_kb(app.pid()).saturating_sub(before);
    assert!(grown < 64 * 1024, "the service's peak grew by {grown} KB with the first queries");
    let kept =
        std::env::temp_dir().join(format!("eco-insights-sql-{}", app.pid())).join(&version).join("export.parquet");
    // The loaded export's data pages, byte for byte; only its footer is rewritten (without the
    // Arrow schema the writer embedded).
    let copy = std::fs::read(&kept).unwrap();
    let n = loaded.len();
    let footer = u32::from_le_bytes(loaded[n - 8..n - 4].try_into().unwrap()) as usize;
    let pages = n - 8 - footer;
    assert!(copy[..pages] == loaded[..pages], "{} does not hold the loaded export's pages", kept.display());
    assert!(copy.ends_with(b"PAR1") && !copy[pages..].windows(12).any(|w| w == b"ARROW:schema"));
    // The file at --data replaced by another export: until the new version serves, SQL answers
    // the old one's rows, read from its kept copy.
    let replaced = dir.join("next.parquet");
    generate(1000, 4, &replaced);
    std::fs::rename(&replaced, &data).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = post(&app, "SELECT COUNT(*) AS n FROM catalog");
        assert_eq!(status, 200, "{body}");
        let n = rows_of(&body)[0]["n"].as_i64().unwrap();
        assert!(n == 500_000 || n == 1000, "{body}");
        if n == 1000 {
            break;
        }
        assert!(Instant::now() < deadline, "the new export never served");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A first export that is valid Parquet but fails the checks (an id twice) had its version
/// known, its copy kept and a worker readied on it while it was checked: once it is refused,
/// that worker is stopped and the copy removed, and a valid export then serves SQL as usual.
#[test]
fn a_refused_first_export_leaves_no_worker_and_no_copy() {
    let dir = temp_dir("sql-refused-first");
    let data = dir.join("catalog.parquet");
    let mut rows = fixture();
    rows[4].id = rows[1].id.clone();
    write_rows(&rows, &data);
    let app = TestApp::serve(&dir, &data, &[]);
    assert_error(app.get("/catalog/vehicles"), 503, "SERVICE_UNAVAILABLE");
    // The readying ends either way: readied, then removed; or stopped by the refusal removing
    // its folder under it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let ended = ["SQL worker readied while the dataset loads", "no SQL worker could be readied early"];
    while !ended.iter().any(|line| app.logs().contains(line)) {
        assert!(Instant::now() < deadline, "the early worker's readying never ended; log:\n{}", app.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
    let scratch = std::env::temp_dir().join(format!("eco-insights-sql-{}", app.pid()));
    let left = || -> Vec<String> {
        let mut left: Vec<String> = files_under(&scratch).into_iter().map(|p| p.display().to_string()).collect();
        left.extend(workers_of(app.pid()).iter().map(|w| format!("worker {w}")));
        left
    };
    while !left().is_empty() {
        assert!(Instant::now() < deadline, "left after the refusal: {:?}; log:\n{}", left(), app.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
    let valid = dir.join("next.parquet");
    generate(2000, 6, &valid);
    std::fs::rename(&valid, &data).unwrap();
    loop {
        let (status, body) = post(&app, "SELECT COUNT(*) AS n FROM catalog");
        if status == 200 {
            assert_eq!(rows_of(&body)[0]["n"], 2000, "{body}");
            break;
        }
        assert!(Instant::now() < deadline + Duration::from_secs(30), "the valid export never served SQL: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Analysts' SQL answers from the moment the first load has accepted the export (checked, its
/// views computed), while the API's table is still built: the API answers 503 meanwhile, and the
/// version SQL read is the one the API then serves.
#[test]
fn sql_answers_the_accepted_export_before_the_api_serves() {
    let dir = temp_dir("sql-early");
    let data = dir.join("catalog.parquet");
    // Large enough for the table build to take a while after the views.
    let rows = 3_000_000;
    generate(rows, 12, &data);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let app = TestApp::launch_on(&dir, &data, port);
    // The ports are bound before the load starts.
    wait_for_log(&app, "loading dataset");
    let sql = "SELECT COUNT(*) AS n FROM catalog";
    let deadline = Instant::now() + Duration::from_secs(120);
    let (answer, version) = loop {
        assert!(Instant::now() < deadline, "SQL never answered; log:\n{}", app.logs());
        let res = app
            .raw("POST", "/sql")
            .header("X-API-Key", KEY)
            .header("X-API-Secret", SECRET)
            .header("Content-Type", "application/json")
            .body(json!({ "sql": sql }).to_string())
            .send();
        let version = res.header("x-dataset-version").map(str::to_string);
        let (status, body) = into_json(res);
        if status == 200 {
            break (body, version);
        }
        // Before the load has accepted the export: that no dataset is loaded yet.
        assert_error((status, body), 503, "SERVICE_UNAVAILABLE");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Asked right after the answer: the API does not serve yet.
    let (ready, not_ready) = into_json(app.raw("GET", "/readyz").send());
    assert_eq!(ready, 503, "the API was serving already when SQL first answered: {not_ready}; log:\n{}", app.logs());
    assert_error(app.get("/catalog/vehicles?page_size=1"), 503, "SERVICE_UNAVAILABLE");
    assert!(app.logs().contains("export accepted"), "{}", app.logs());
    assert!(!app.logs().contains("listening on http://"), "said it listens before the API served: {}", app.logs());
    assert_eq!(rows_of(&answer), vec![json!({ "n": rows })], "{answer}");
    // The API then serves the version SQL read, and "listening" is said.
    wait_for_log(&app, "listening on http://");
    let (status, readyz) = into_json(app.raw("GET", "/readyz").send());
    assert_eq!(status, 200, "{readyz}");
    assert_eq!(version.as_deref(), readyz["dataset"]["version"].as_str(), "{readyz}");
    let (status, again) = post(&app, sql);
    assert_eq!((status, rows_of(&again)), (200, rows_of(&answer)), "{again}");
}

/// Over the tables written ahead (memory-mapped files), a query that keeps many of their batches
/// (a sort's top rows, a join's build side) is answered within the memory budget, as over the
/// export: the engine counts each batch it keeps, not the whole file once per batch. Expected
/// values from the export itself, read here.
#[test]
fn sorts_and_joins_over_the_tables_written_ahead_stay_within_the_budget() {
    use polars::prelude::{ParquetReader, SerReader};
    let dir = temp_dir("sql-ahead-budget");
    let data = dir.join("catalog.parquet");
    generate(300_000, 9, &data);
    let export = ParquetReader::new(std::fs::File::open(&data).unwrap()).finish().unwrap();
    let mut modelos: Vec<String> =
        export.column("modelo").unwrap().str().unwrap().iter().map(|v| v.unwrap().to_string()).collect();
    modelos.sort();
    let mut per_marca = BTreeMap::<String, u64>::new();
    for marca in export.column("marca").unwrap().str().unwrap().iter().map(Option::unwrap) {
        *per_marca.entry(marca.to_string()).or_default() += 1;
    }
    let app = TestApp::serve(&dir, &data, &["--sql-memory-mb", "256"]);
    let written = std::env::temp_dir().join(format!("eco-insights-sql-{}", app.pid()));
    let deadline = Instant::now() + Duration::from_secs(120);
    while !std::fs::read_dir(&written)
        .map(|d| d.flatten().any(|e| e.path().join("tables").join("layout.json").is_file()))
        .unwrap_or(false)
    {
        assert!(Instant::now() < deadline, "the tables were never written ahead; log:\n{}", app.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    // Every column, sorted: the first 10,000 rows (the default row limit), cut.
    let (status, body) = post(&app, "SELECT * FROM catalog ORDER BY modelo");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["meta"]["truncated"], true, "{}", body["data"]["meta"]);
    let got: Vec<String> = rows_of(&body).iter().map(|r| r["modelo"].as_str().unwrap().to_string()).collect();
    assert_eq!(got, modelos[..10_000], "the first models in order");
    let (status, body) = post(&app, "SELECT id, eco_score FROM vw_eco_score ORDER BY eco_score DESC NULLS LAST, id");
    assert_eq!((status, rows_of(&body).len()), (200, 10_000), "{body}");
    // A join of the catalog with a view, on every row.
    let (status, body) = post(
        &app,
        "SELECT c.marca, count(*) AS n FROM catalog c JOIN vw_metrics m ON m.id = c.id GROUP BY c.marca ORDER BY c.marca",
    );
    assert_eq!(status, 200, "{body}");
    let got: BTreeMap<String, u64> =
        rows_of(&body).iter().map(|r| (r["marca"].as_str().unwrap().to_string(), r["n"].as_u64().unwrap())).collect();
    assert_eq!(got, per_marca);
}

/// The files under `dir` (none when it is missing).
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A stopped service leaves no scratch folder behind (the SQL tables it wrote, the folder of
/// large answers), and the folders a gone process left are removed by the next start.
#[test]
fn scratch_folders_go_with_the_service_and_leftovers_are_removed() {
    // A gone process's tables, as a crash leaves them.
    let gone = {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let leftover = std::env::temp_dir().join(format!("eco-insights-sql-{gone}"));
    std::fs::create_dir_all(leftover.join("v1")).unwrap();
    std::fs::write(leftover.join("v1").join("catalog.arrow"), vec![7u8; 1 << 20]).unwrap();
    let mut app = TestApp::with_rows(&fixture());
    let (status, body) = post(&app, "SELECT COUNT(*) AS n FROM catalog");
    assert_eq!(status, 200, "{body}");
    assert_eq!(rows_of(&body)[0]["n"], 24, "{body}");
    let tables = std::env::temp_dir().join(format!("eco-insights-sql-{}", app.pid()));
    assert!(tables.is_dir(), "the SQL tables are made under {}", tables.display());
    let start = Instant::now();
    while leftover.exists() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!leftover.exists(), "the gone process's folder {} is still there", leftover.display());
    let pid = app.pid();
    let status = app.stop();
    assert!(status.success(), "{status:?}; log:\n{}", app.logs());
    assert!(!tables.exists(), "{} is left after the service stopped", tables.display());
    for parent in [std::path::PathBuf::from("/dev/shm"), std::env::temp_dir()] {
        let answers = parent.join(format!("eco-insights-answers-{pid}"));
        assert!(!answers.exists(), "{} is left after the service stopped", answers.display());
    }
}

/// An analyst's own view in `queries/` is answered alike from the export and, once they are
/// written ahead, from the mapped tables: a column it redefines under a catalog column's name
/// keeps its own values (it is not taken for the catalog's), and a view with other rows than
/// the catalog's keeps them.
#[test]
fn an_analysts_view_is_answered_alike_before_and_after_the_tables_are_written() {
    let dir = temp_dir("sql-own-view");
    let queries = copy_queries(&dir);
    std::fs::write(
        queries.join("03_vw_marcas.sql"),
        "CREATE TABLE vw_marcas AS SELECT id, UPPER(marca) AS marca, ano FROM catalog WHERE ano >= 2019;\n\
         CREATE TABLE vw_renomeada AS SELECT *, modelo AS versao_modelo FROM vw_metrics;\n\
         CREATE TABLE vw_maiusculas AS SELECT id, LOWER(modelo) AS modelo FROM catalog;\n",
    )
    .unwrap();
    let data = dir.join("catalog.parquet");
    write_rows(&fixture(), &data);
    let app = TestApp::serve(&dir, &data, &["--queries", queries.to_str().unwrap()]);
    let ask = |sql: &str| {
        let (status, body) = post(&app, sql);
        assert_eq!(status, 200, "{sql}: {body}");
        rows_of(&body)
    };
    let expected_marcas: Vec<Value> = {
        let mut rows: Vec<(String, String)> = fixture()
            .iter()
            .filter(|r| r.ano >= 2019)
            .map(|r| (r.id.clone().unwrap(), r.marca.to_uppercase()))
            .collect();
        rows.sort();
        rows.into_iter().map(|(id, marca)| json!({"id": id, "marca": marca})).collect()
    };
    assert!(!expected_marcas.is_empty() && expected_marcas.len() < fixture().len());
    let written = std::env::temp_dir().join(format!("eco-insights-sql-{}", app.pid()));
    let mut phases = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ahead = std::fs::read_dir(&written)
            .map(|d| d.flatten().any(|e| e.path().join("tables").join("layout.json").is_file()))
            .unwrap_or(false);
        assert_eq!(ask("SELECT id, marca FROM vw_marcas ORDER BY id"), expected_marcas, "tables ahead: {ahead}");
        let renamed =
            ask("SELECT count(*) AS n, count(*) FILTER (WHERE versao_modelo = modelo) AS iguais FROM vw_renomeada");
        assert_eq!(renamed[0]["n"], fixture().len(), "tables ahead: {ahead}");
        assert_eq!(renamed[0]["iguais"], fixture().len(), "tables ahead: {ahead}");
        // Same name and type as the catalog's column, other values: the view's own.
        let lower = ask("SELECT count(*) FILTER (WHERE modelo LIKE 'm%') AS n FROM vw_maiusculas");
        assert_eq!(lower[0]["n"], fixture().len(), "tables ahead: {ahead}");
        phases += 1;
        if ahead {
            break;
        }
        assert!(Instant::now() < deadline, "the tables were never written ahead");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(phases >= 1);
}

/// `catalog` in SQL is the export as the service loads it, from the export itself and from the
/// tables written ahead alike: ids derived as API-CONTRACT §1 says when the export has none
/// (UUID v5 of `marca|modelo|versao|ano|motor|transmissao_tipo`), integers stored wider read as
/// `integer`, dictionary-encoded text as text, NaN as null, an optional column the file lacks as
/// all null, and the folded fuel name.
#[test]
fn the_catalog_in_sql_is_the_export_as_the_service_loads_it() {
    let mut rows = fixture();
    for r in &mut rows {
        r.id = None;
    }
    rows[3].co2_fossil_g_km = Some(f64::NAN);
    rows[4].eficiencia_cidade_km_l = Some(f64::NAN);
    rows[5].combustivel_tipo = "Elétrico".into();
    let mut df = frame(&rows);
    let ano = df.column("ano").unwrap().cast(&DataType::Int64).unwrap();
    df.with_column(ano).unwrap();
    let marca = df.column("marca").unwrap().cast(&eco_insights::engine::schema::dictionary_dtype()).unwrap();
    df.with_column(marca).unwrap();
    let dir = temp_dir("sql-typed");
    let data = dir.join("catalog.parquet");
    write_frame(&mut df, &data);
    let app = TestApp::serve(&dir, &data, &[]);
    let mut expected: Vec<Value> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let key = format!(
                "{}|{}|{}|{}|{}|{}",
                r.marca,
                r.modelo,
                r.versao,
                r.ano,
                r.motor.clone().unwrap_or_default(),
                r.transmissao_tipo.clone().unwrap_or_default()
            );
            let co2 = if i == 3 { Value::Null } else { json!(r.co2_fossil_g_km) };
            let cidade = if i == 4 { Value::Null } else { json!(r.eficiencia_cidade_km_l) };
            json!({
                "id": uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, key.as_bytes()).to_string(),
                "marca": r.marca, "ano": r.ano, "co2_fossil_g_km": co2, "eficiencia_cidade_km_l": cidade,
                "nmog_nox_g_km": null, "combustivel_fold": if i == 5 { "eletrico" } else { "flex" },
            })
        })
        .collect();
    expected.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let written = std::env::temp_dir().join(format!("eco-insights-sql-{}", app.pid()));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ahead = std::fs::read_dir(&written)
            .map(|d| d.flatten().any(|e| e.path().join("tables").join("layout.json").is_file()))
            .unwrap_or(false);
        let (status, body) = post(
            &app,
            "SELECT id, marca, ano, co2_fossil_g_km, eficiencia_cidade_km_l, nmog_nox_g_km, combustivel_fold \
             FROM catalog ORDER BY id",
        );
        assert_eq!(status, 200, "{body}");
        assert_eq!(rows_of(&body), expected, "tables ahead: {ahead}");
        let types: Vec<&str> =
            body["data"]["meta"]["columns"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            ["string", "string", "integer", "float", "float", "float", "string"],
            "tables ahead: {ahead}"
        );
        if ahead {
            break;
        }
        assert!(Instant::now() < deadline, "the tables were never written ahead");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The API serves the same ids.
    let (_, page) = app.get("/catalog/vehicles?page_size=100");
    let mut ids: Vec<&str> =
        page["data"]["data"]["items"].as_array().unwrap().iter().map(|v| v["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    let sql_ids: Vec<&str> = expected.iter().map(|v| v["id"].as_str().unwrap()).collect();
    assert_eq!(ids, sql_ids);
}
