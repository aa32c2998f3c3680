//! Test harness: fixture catalogs written as real Parquet files, and the real binary started on
//! port 0 against them.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use crate::http::{Req, Resp};
use polars::prelude::*;
use serde_json::Value;

pub const KEY: &str = "demo-key";
pub const SECRET: &str = "demo-secret";

/// The repository root (where `queries/` and `config/` live).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh temporary folder for one test.
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "eco-insights-test-{}-{}-{}",
        std::process::id(),
        tag,
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One catalog row of a fixture; `Row::new` fills every column with plausible values.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: Option<String>,
    pub marca: String,
    pub modelo: String,
    pub versao: String,
    pub ano: i32,
    pub categoria: String,
    pub motor: Option<String>,
    pub tipo_propulsao: String,
    pub combustivel_tipo: String,
    pub transmissao_tipo: Option<String>,
    pub transmissao_marchas: Option<i32>,
    pub ar_condicionado: Option<bool>,
    pub direcao_assistida_tipo: String,
    pub eficiencia_cidade_km_l: Option<f64>,
    pub eficiencia_estrada_km_l: Option<f64>,
    pub eficiencia_cidade_etanol_km_l: Option<f64>,
    pub eficiencia_estrada_etanol_km_l: Option<f64>,
    pub consumo_energetico_mj_km: Option<f64>,
    pub co2_fossil_g_km: Option<f64>,
    pub nmhc_g_km: Option<f64>,
    pub co_g_km: Option<f64>,
    pub nox_g_km: Option<f64>,
    pub autonomia_eletrica_km: Option<f64>,
    pub tanque_l: Option<f64>,
    pub classificacao_pbe_categoria: Option<String>,
    pub classificacao_pbe_geral: Option<String>,
}

/// A deterministic UUID for fixture row `n`: `00000000-0000-4000-8000-00000000000n`.
pub fn uid(n: u32) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

impl Row {
    pub fn new(n: u32, marca: &str, modelo: &str, ano: i32, categoria: &str, combustivel: &str) -> Row {
        Row {
            id: Some(uid(n)),
            marca: marca.into(),
            modelo: modelo.into(),
            versao: format!("V{n}"),
            ano,
            categoria: categoria.into(),
            motor: Some("1.0".into()),
            tipo_propulsao: if combustivel == "Elétrico" { "Elétrico".into() } else { "Combustão".into() },
            combustivel_tipo: combustivel.into(),
            transmissao_tipo: Some("Manual".into()),
            transmissao_marchas: Some(5),
            ar_condicionado: Some(true),
            direcao_assistida_tipo: "Elétrica".into(),
            eficiencia_cidade_km_l: Some(12.0),
            eficiencia_estrada_km_l: Some(14.0),
            eficiencia_cidade_etanol_km_l: None,
            eficiencia_estrada_etanol_km_l: None,
            consumo_energetico_mj_km: Some(1.5),
            co2_fossil_g_km: Some(100.0),
            nmhc_g_km: Some(0.01),
            co_g_km: Some(0.2),
            nox_g_km: Some(0.01),
            autonomia_eletrica_km: None,
            tanque_l: Some(50.0),
            classificacao_pbe_categoria: Some("A".into()),
            classificacao_pbe_geral: Some("B".into()),
        }
    }
}

fn s(v: &[Row], f: impl Fn(&Row) -> Option<String>) -> Vec<Option<String>> {
    v.iter().map(f).collect()
}
fn fl(v: &[Row], f: impl Fn(&Row) -> Option<f64>) -> Vec<Option<f64>> {
    v.iter().map(f).collect()
}

/// The rows as a frame with the input schema (`id` omitted when every row's id is `None`).
pub fn frame(rows: &[Row]) -> DataFrame {
    let mut cols: Vec<Column> = Vec::new();
    if rows.iter().any(|r| r.id.is_some()) {
        cols.push(Column::new("id".into(), s(rows, |r| r.id.clone())));
    }
    cols.push(Column::new("marca".into(), s(rows, |r| Some(r.marca.clone()))));
    cols.push(Column::new("modelo".into(), s(rows, |r| Some(r.modelo.clone()))));
    cols.push(Column::new("versao".into(), s(rows, |r| Some(r.versao.clone()))));
    cols.push(Column::new("ano".into(), rows.iter().map(|r| r.ano).collect::<Vec<i32>>()));
    cols.push(Column::new("categoria".into(), s(rows, |r| Some(r.categoria.clone()))));
    cols.push(Column::new("motor".into(), s(rows, |r| r.motor.clone())));
    cols.push(Column::new("tipo_propulsao".into(), s(rows, |r| Some(r.tipo_propulsao.clone()))));
    cols.push(Column::new("combustivel_tipo".into(), s(rows, |r| Some(r.combustivel_tipo.clone()))));
    cols.push(Column::new("transmissao_tipo".into(), s(rows, |r| r.transmissao_tipo.clone())));
    cols.push(Column::new(
        "transmissao_marchas".into(),
        rows.iter().map(|r| r.transmissao_marchas).collect::<Vec<Option<i32>>>(),
    ));
    cols.push(Column::new(
        "ar_condicionado".into(),
        rows.iter().map(|r| r.ar_condicionado).collect::<Vec<Option<bool>>>(),
    ));
    cols.push(Column::new("direcao_assistida_tipo".into(), s(rows, |r| Some(r.direcao_assistida_tipo.clone()))));
    cols.push(Column::new("eficiencia_cidade_km_l".into(), fl(rows, |r| r.eficiencia_cidade_km_l)));
    cols.push(Column::new("eficiencia_estrada_km_l".into(), fl(rows, |r| r.eficiencia_estrada_km_l)));
    cols.push(Column::new("eficiencia_cidade_etanol_km_l".into(), fl(rows, |r| r.eficiencia_cidade_etanol_km_l)));
    cols.push(Column::new("eficiencia_estrada_etanol_km_l".into(), fl(rows, |r| r.eficiencia_estrada_etanol_km_l)));
    cols.push(Column::new("consumo_energetico_mj_km".into(), fl(rows, |r| r.consumo_energetico_mj_km)));
    cols.push(Column::new("co2_fossil_g_km".into(), fl(rows, |r| r.co2_fossil_g_km)));
    cols.push(Column::new("nmhc_g_km".into(), fl(rows, |r| r.nmhc_g_km)));
    cols.push(Column::new("co_g_km".into(), fl(rows, |r| r.co_g_km)));
    cols.push(Column::new("nox_g_km".into(), fl(rows, |r| r.nox_g_km)));
    cols.push(Column::new("autonomia_eletrica_km".into(), fl(rows, |r| r.autonomia_eletrica_km)));
    cols.push(Column::new("tanque_l".into(), fl(rows, |r| r.tanque_l)));
    cols.push(Column::new("classificacao_pbe_categoria".into(), s(rows, |r| r.classificacao_pbe_categoria.clone())));
    cols.push(Column::new("classificacao_pbe_geral".into(), s(rows, |r| r.classificacao_pbe_geral.clone())));
    DataFrame::new_infer_height(cols).unwrap()
}

/// A copy of the shipped `queries/` folder in `dir` (for a test to edit): its path.
pub fn copy_queries(dir: &Path) -> PathBuf {
    let queries = dir.join("queries");
    std::fs::create_dir_all(&queries).unwrap();
    for entry in std::fs::read_dir(repo().join("queries")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, queries.join(path.file_name().unwrap())).unwrap();
    }
    queries
}

pub fn write_frame(df: &mut DataFrame, path: &Path) {
    let file = std::fs::File::create(path).unwrap();
    ParquetWriter::new(file).finish(df).unwrap();
}

pub fn write_rows(rows: &[Row], path: &Path) {
    write_frame(&mut frame(rows), path);
}

/// The real binary serving a catalog file on a free port; killed on drop.
pub struct TestApp {
    pub base: String,
    pub data: PathBuf,
    pub dir: PathBuf,
    child: Child,
    pub log: Arc<Mutex<String>>,
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_eco-insights")
}

impl TestApp {
    /// Serves `rows` (written to a fresh Parquet file).
    pub fn with_rows(rows: &[Row]) -> TestApp {
        let dir = temp_dir("app");
        let data = dir.join("catalog.parquet");
        write_rows(rows, &data);
        TestApp::serve(&dir, &data, &[])
    }

    /// Serves an existing file with extra command-line arguments.
    pub fn serve(dir: &Path, data: &Path, extra: &[&str]) -> TestApp {
        TestApp::try_serve(dir, data, extra).unwrap_or_else(|log| panic!("service did not start:\n{log}"))
    }

    /// Serves an existing file with extra arguments and environment variables.
    pub fn serve_env(dir: &Path, data: &Path, extra: &[&str], env: &[(&str, &str)]) -> TestApp {
        TestApp::try_serve_env(dir, data, extra, env).unwrap_or_else(|log| panic!("service did not start:\n{log}"))
    }

    /// Starts the service; `Err(stderr)` when it exits instead of listening.
    pub fn try_serve(dir: &Path, data: &Path, extra: &[&str]) -> Result<TestApp, String> {
        TestApp::try_serve_env(dir, data, extra, &[])
    }

    fn try_serve_env(dir: &Path, data: &Path, extra: &[&str], env: &[(&str, &str)]) -> Result<TestApp, String> {
        TestApp::start(dir, data, extra, env, None)
    }

    /// Starts the service on `127.0.0.1:port` (a port the caller found free) without waiting
    /// for it to say it listens: for what it answers while its first load runs. Its standard
    /// output goes to the log.
    pub fn launch_on(dir: &Path, data: &Path, port: u16) -> TestApp {
        let bind = format!("127.0.0.1:{port}");
        TestApp::start(dir, data, &[], &[], Some(&bind)).unwrap_or_else(|log| panic!("service did not start:\n{log}"))
    }

    /// Starts the service: on port 0, waiting for the line that gives its address (`Err(stderr)`
    /// when it exits instead), or on `bind` at once.
    fn start(
        dir: &Path,
        data: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
        bind: Option<&str>,
    ) -> Result<TestApp, String> {
        let mut cmd = Command::new(binary());
        cmd.envs(env.iter().copied());
        cmd.arg("serve");
        if !extra.contains(&"--reload-interval-ms") {
            cmd.args(["--reload-interval-ms", "200"]);
        }
        if !extra.contains(&"--queries") {
            cmd.arg("--queries").arg(repo().join("queries"));
        }
        if !extra.contains(&"--credentials") {
            cmd.arg("--credentials").arg(repo().join("config/credentials.json"));
        }
        let mut child = cmd
            .arg("--bind")
            .arg(bind.unwrap_or("127.0.0.1:0"))
            .arg("--data")
            .arg(data)
            .args(extra)
            .env("ECO_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start the binary");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        if let Some(bind) = bind {
            let sink = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in stdout.lines().map_while(Result::ok) {
                    let mut l = sink.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
            });
            return Ok(TestApp {
                base: format!("http://{bind}"),
                data: data.to_path_buf(),
                dir: dir.to_path_buf(),
                child,
                log,
            });
        }
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let Some(addr) = line.trim().strip_prefix("listening on ") else {
            let _ = child.wait();
            std::thread::sleep(Duration::from_millis(100));
            let text = log.lock().unwrap().clone();
            return Err(text);
        };
        let base = addr.to_string();
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stdout.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {}
        });
        Ok(TestApp { base, data: data.to_path_buf(), dir: dir.to_path_buf(), child, log })
    }

    /// Starts the service on an export it must refuse: it serves anyway, the API answers 503
    /// `SERVICE_UNAVAILABLE` and `/readyz` 503; returns the refusal `/readyz` reports. `dir`
    /// is kept (the service's own folder is a fresh one inside it).
    pub fn refused_reason(dir: &Path, data: &Path) -> String {
        let own = dir.join(format!("refused-{}", data.file_stem().unwrap_or_default().to_string_lossy()));
        std::fs::create_dir_all(&own).unwrap();
        let app = TestApp::serve(&own, data, &[]);
        assert_error(app.get("/catalog/vehicles"), 503, "SERVICE_UNAVAILABLE");
        let (status, body) = into_json(app.raw("GET", "/readyz").send());
        assert_eq!(status, 503, "{body}");
        assert_eq!(body["last_reload"]["result"], "refused", "{body}");
        body["last_reload"]["reason"].as_str().unwrap_or_default().to_string()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the service as a supervisor does (SIGTERM) and waits for it to exit (at most 30 s).
    pub fn stop(&mut self) -> std::process::ExitStatus {
        // SAFETY: sends a signal to the child this test started.
        assert_eq!(unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) }, 0, "kill failed");
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "the service did not stop; log:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn logs(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A GET with the demo credentials (add headers, then `.send()`).
    pub fn get_req(&self, path: &str) -> Req {
        self.raw("GET", path).header("X-API-Key", KEY).header("X-API-Secret", SECRET)
    }

    /// A request without credentials: `app.raw("DELETE", "/x").header(..).body(..).send()`.
    pub fn raw(&self, method: &str, path: &str) -> Req {
        Req::new(method, &self.base, path)
    }

    /// GET with credentials: status and JSON body.
    pub fn get(&self, path: &str) -> (u16, Value) {
        into_json(self.get_req(path).send())
    }

    /// GET expecting 200: `data.data`.
    pub fn data(&self, path: &str) -> Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "GET {path}: {body}");
        assert_eq!(body["success"], true);
        body["data"]["data"].clone()
    }

    /// POST a JSON body with credentials.
    pub fn post_json(&self, path: &str, body: &str) -> (u16, Value) {
        let res = self
            .raw("POST", path)
            .header("X-API-Key", KEY)
            .header("X-API-Secret", SECRET)
            .header("Content-Type", "application/json")
            .body(body)
            .send();
        into_json(res)
    }
}

/// Status and JSON body of a response (panics with the body when it is not JSON).
pub fn into_json(res: Resp) -> (u16, Value) {
    (res.status, res.json())
}

/// Asserts a failure envelope with this status and code; returns the message.
pub fn assert_error(res: (u16, Value), status: u16, code: &str) -> String {
    let (s, body) = res;
    assert_eq!(s, status, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    body["error"]["message"].as_str().unwrap().to_string()
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Rounds half to even at `d` decimals, as the service's views do.
pub fn round(x: f64, d: i32) -> f64 {
    // Written independently of the service: the value is printed with 6 guard decimals (exact
    // decimal formatting of the double), and the tie is decided on those decimal digits.
    let d = d as usize;
    let text = format!("{:.*}", d + 6, x.abs());
    let (int, frac) = text.split_once('.').unwrap();
    let (kept, rest) = frac.split_at(d);
    let mut digits: Vec<u8> = format!("{int}{kept}").bytes().map(|b| b - b'0').collect();
    let last_odd = digits.last().is_some_and(|v| v % 2 == 1);
    let up = match rest.as_bytes()[0].cmp(&b'5') {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => rest[1..].bytes().any(|b| b != b'0') || last_odd,
    };
    if up {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, 1);
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let s: String = digits.iter().map(|v| (v + b'0') as char).collect();
    let (i, f) = s.split_at(s.len() - d);
    let value: f64 = format!("{}{i}.{f}0", if x < 0.0 { "-" } else { "" }).parse().unwrap();
    if value == 0.0 {
        0.0
    } else {
        value
    }
}

/// Float comparison for published values.
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Waits until the log mentions `needle` (a refusal reason); panics after 15 s. Standard error
/// is read on a thread of its own, which may lag the service's answers.
pub fn wait_for_log(app: &TestApp, needle: &str) {
    let start = std::time::Instant::now();
    while !app.logs().contains(needle) {
        assert!(start.elapsed() < Duration::from_secs(15), "log never said {needle:?}:\n{}", app.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
}
