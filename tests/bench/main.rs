//! `make bench`: latency and throughput of the real binary serving the bundled sample, printed
//! beside the baselines in `tests/bench/baselines.json`. Not part of `make test`: figures are
//! measured and reported, never asserted.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../api/http.rs"]
mod http;

use http::Req;

const WARMUP: usize = 20;
const SAMPLES: usize = 200;
const CONCURRENCY: usize = 8;
const LOAD_SECONDS: u64 = 3;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn main() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let baselines: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("tests/bench/baselines.json")).unwrap()).unwrap();
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_eco-insights"))
        .args(["serve", "--bind", "127.0.0.1:0", "--log", "warn"])
        .current_dir(&repo)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("cannot start the service");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let startup_ms = started.elapsed().as_secs_f64() * 1000.0;
    let base = line.trim().strip_prefix("listening on ").expect("no listening line").to_string();
    let get =
        |path: &str| Req::new("GET", &base, path).header("X-API-Key", "demo-key").header("X-API-Secret", "demo-secret");

    let first: Value = get("/catalog/vehicles?page_size=3").send().json();
    let ids: Vec<String> = first["data"]["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect();
    let id = ids[0].clone();
    let compare_body = serde_json::json!({ "vehicle_ids": ids }).to_string();

    let cases: Vec<(String, String)> = vec![
        ("catalog page (50)".into(), "/catalog/vehicles?page_size=50".into()),
        ("catalog filtered".into(), "/catalog/vehicles?combustivel=eletrico&ano_min=2020".into()),
        ("rankings/custom co2".into(), "/rankings/custom?metric=co2&top=50".into()),
        ("rankings/by-brand".into(), "/rankings/by-brand".into()),
        ("rankings/most-economical".into(), "/rankings/most-economical".into()),
        ("rankings/overview".into(), "/rankings/overview".into()),
        ("insights/summary".into(), "/insights/summary".into()),
        ("insights/emissions".into(), "/insights/emissions".into()),
        ("aggregations/by-brand".into(), "/aggregations/by-brand".into()),
        ("vehicle summary".into(), format!("/vehicles/{id}/summary")),
        ("vehicle compare-similar".into(), format!("/vehicles/{id}/compare-similar?top=20")),
        ("POST /compare".into(), "POST".into()),
    ];

    println!("Eco Insights benchmark — bundled sample, sequential requests (new connection each) ({SAMPLES} after {WARMUP} warm-up)");
    println!("start-up to listening: {startup_ms:.0} ms (baseline {})", baselines["startup_ms"]);
    println!();
    println!(
        "{:<26} {:>9} {:>9} {:>9} | {:>13} {:>13}",
        "operation", "p50 ms", "p95 ms", "p99 ms", "base p95 ms", "target p95 ms"
    );
    for (name, path) in &cases {
        let send = || {
            let res = if path == "POST" {
                Req::new("POST", &base, "/compare")
                    .header("X-API-Key", "demo-key")
                    .header("X-API-Secret", "demo-secret")
                    .header("Content-Type", "application/json")
                    .body(compare_body.clone())
                    .send()
            } else {
                get(path).send()
            };
            assert_eq!(res.status, 200, "{name}: {}", res.text());
        };
        for _ in 0..WARMUP {
            send();
        }
        let mut times: Vec<f64> = (0..SAMPLES)
            .map(|_| {
                let t = Instant::now();
                send();
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let b = &baselines["operations"][name.as_str()];
        println!(
            "{:<26} {:>9.2} {:>9.2} {:>9.2} | {:>13} {:>13}",
            name,
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            percentile(&times, 0.99),
            b["p95_ms"],
            b["target_p95_ms"]
        );
    }

    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(LOAD_SECONDS);
    let threads: Vec<_> = (0..CONCURRENCY)
        .map(|i| {
            let (base, done) = (base.clone(), Arc::clone(&done));
            std::thread::spawn(move || {
                let paths = ["/rankings/custom?metric=eco_score", "/catalog/vehicles?marca=fiat", "/insights/summary"];
                let mut n = 0usize;
                while Instant::now() < deadline {
                    let res = Req::new("GET", &base, paths[(i + n) % paths.len()])
                        .header("X-API-Key", "demo-key")
                        .header("X-API-Secret", "demo-secret")
                        .send();
                    assert_eq!(res.status, 200);
                    done.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let rps = done.load(Ordering::Relaxed) as f64 / LOAD_SECONDS as f64;
    println!();
    println!(
        "mixed load, {CONCURRENCY} clients for {LOAD_SECONDS} s: {rps:.0} req/s (baseline {}, target {})",
        baselines["mixed_rps"], baselines["target_mixed_rps"]
    );
    let _ = child.kill();
    let _ = child.wait();
}
