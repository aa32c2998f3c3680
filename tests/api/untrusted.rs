//! Untrusted exports (API-CONTRACT §1): damaged copies of real exports — a few bit flips, a run
//! of random bytes, a truncation, a footer length changed, metadata bytes zeroed, two regions
//! swapped — fed to the decoder and to every command, which must end with its documented status
//! and a message naming the file, never a panic, an abort or a hang. Then the service itself on
//! broken files (at start, on reload, with a decompression bomb) and the state folder that keeps
//! the last good dataset across restarts.
//!
//! `FUZZ_CASES` sets how many mutations each property test tries (`make fuzz` runs thousands);
//! `FUZZ_SEED` moves the seeds, so a longer run explores other inputs.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eco_insights::engine::load;
use eco_insights::engine::views::{CostConfig, Views};
use polars::prelude::*;

use crate::common::*;

// ---------------------------------------------------------------------------------------------
// Mutations

/// splitmix64: a small, seeded generator (the same seed always gives the same file).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// What a damaged copy can look like: what a half-copied file, a bad disk or a buggy export job
/// produces. Returns the bytes and a description for failure messages.
fn mutate(base: &[u8], seed: u64) -> (Vec<u8>, String) {
    let mut rng = Rng(seed);
    let mut b = base.to_vec();
    let n = b.len();
    // The footer (metadata) is where a few bytes do the most damage: aim there half the time.
    let footer_len = u32::from_le_bytes(b[n - 8..n - 4].try_into().unwrap()) as usize;
    let footer = n.saturating_sub(8 + footer_len)..n - 8;
    let place = |rng: &mut Rng| {
        if rng.below(2) == 0 && !footer.is_empty() {
            footer.start + rng.below(footer.len())
        } else {
            rng.below(n)
        }
    };
    let kind = rng.below(6);
    let what = match kind {
        0 => {
            let flips = 1 + rng.below(8);
            for _ in 0..flips {
                let at = place(&mut rng);
                b[at] ^= 1 << rng.below(8);
            }
            format!("{flips} bit flips")
        }
        1 => {
            let at = place(&mut rng);
            let len = (1 + rng.below(64)).min(n - at);
            for x in &mut b[at..at + len] {
                *x = rng.next() as u8;
            }
            format!("{len} random bytes at {at}")
        }
        2 => {
            let at = rng.below(n);
            b.truncate(at);
            format!("truncated at {at}")
        }
        3 => {
            let len = match rng.below(3) {
                0 => rng.next() as u32,
                1 => footer_len as u32 ^ (1 << rng.below(32)),
                _ => (footer_len as u32).wrapping_add(rng.below(64) as u32).wrapping_sub(32),
            };
            b[n - 8..n - 4].copy_from_slice(&len.to_le_bytes());
            format!("footer length {footer_len} -> {len}")
        }
        4 => {
            let at = place(&mut rng);
            let len = (1 + rng.below(32)).min(n - at);
            b[at..at + len].fill(0);
            format!("{len} bytes zeroed at {at}")
        }
        _ => {
            let len = 1 + rng.below(256.min(n / 4));
            let x = rng.below(n - len);
            let y = rng.below(n - len);
            let (lo, hi) = (x.min(y), x.max(y));
            if hi >= lo + len {
                let first = b[lo..lo + len].to_vec();
                let second = b[hi..hi + len].to_vec();
                b[lo..lo + len].copy_from_slice(&second);
                b[hi..hi + len].copy_from_slice(&first);
            }
            format!("{len} bytes at {lo} and {hi} swapped")
        }
    };
    (b, format!("seed {seed}: {what}"))
}

fn cases(default: u64) -> u64 {
    std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn first_seed() -> u64 {
    std::env::var("FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The real exports the mutations start from: the bundled sample (12,000 rows) and a small one
/// of the generator's (quick to decode, so many more cases per second).
fn bases() -> Vec<(String, Vec<u8>)> {
    let sample = std::fs::read(repo().join("data/catalog.parquet")).unwrap();
    vec![("sample".into(), sample), ("small".into(), small_export())]
}

/// A 300-row export of the sample generator, without the `id` column on every other run of
/// the generator's choice (ids derived) — written by Polars as any analyst's tool would.
fn small_export() -> Vec<u8> {
    let mut df = eco_insights::sample::generate_catalog(300, 7).unwrap();
    let mut out = Vec::new();
    ParquetWriter::new(&mut out).with_row_group_size(Some(100)).finish(&mut df).unwrap();
    out
}

// ---------------------------------------------------------------------------------------------
// The decoder, in process

/// Every mutated copy either loads or is refused with a message naming the file; none panics
/// (a panic here fails the test) and none takes longer than a minute.
#[test]
fn mutated_exports_are_refused_or_loaded_never_a_panic() {
    let views = Views::read(&repo().join("queries"), &CostConfig::default()).unwrap();
    let dir = temp_dir("fuzz-inproc");
    let per_base = cases(300);
    let (mut refused, mut loaded, mut crashed) = (0u64, 0u64, 0u64);
    let all = bases();
    let base_of = |name: &str| all.iter().find(|(n, _)| n == name).unwrap().1.clone();
    for (name, base) in bases() {
        let seeds: Vec<u64> = (first_seed()..first_seed() + per_base).collect();
        // Two workers; each case has a deadline, so a hang is a failure with its seed.
        for chunk in seeds.chunks(2) {
            let mut handles = Vec::new();
            for &seed in chunk {
                let (bytes, what) = mutate(&base, seed);
                let path = dir.join(format!("mutated-{name}-{seed}.parquet"));
                std::fs::write(&path, &bytes).unwrap();
                let views = views.clone();
                let (done, wait) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    let validated = load::validate_file(&path).map_err(|e| e.to_string());
                    let built = load::load_file(&path, &views).map(|s| s.info.rows).map_err(|e| e.to_string());
                    let _ = std::fs::remove_file(&path);
                    let _ = done.send((validated, built));
                });
                handles.push((wait, what, name.clone(), seed));
            }
            for (wait, what, name, seed) in handles {
                let (validated, built) = wait
                    .recv_timeout(Duration::from_secs(60))
                    .unwrap_or_else(|_| panic!("{name} {what}: no answer within 60 s (a hang)"));
                let file = format!("mutated-{name}-{seed}.parquet");
                match (&validated, &built) {
                    (Ok(rows), Ok(built)) => {
                        assert_eq!(rows, built, "{what}");
                        loaded += 1;
                    }
                    (Err(v), Err(b)) => {
                        // A refusal that contained a panic of the decoder: kept for the fixtures
                        // when FUZZ_CRASHERS_DIR names a folder.
                        if v.contains("the decoder failed") {
                            crashed += 1;
                            if let Some(keep) = std::env::var_os("FUZZ_CRASHERS_DIR") {
                                let keep = PathBuf::from(keep);
                                std::fs::create_dir_all(&keep).unwrap();
                                std::fs::write(keep.join(&file), mutate(&base_of(&name), seed).0).unwrap();
                                eprintln!("{file}: {what}: {v}");
                            }
                        }
                        for msg in [v, b] {
                            assert!(msg.contains(&file), "{what}: the message names the file: {msg}");
                            assert!(!msg.contains("panicked"), "{what}: {msg}");
                        }
                        refused += 1;
                    }
                    // `validate` and a load apply the same checks.
                    _ => panic!("{what}: validate said {validated:?}, the load said {built:?}"),
                }
            }
        }
    }
    eprintln!("{loaded} mutated exports loaded, {refused} refused ({crashed} inside the decoder)");
    assert!(refused > per_base, "most mutations damage the file ({refused} refused)");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// The commands

struct Ran {
    status: Option<i32>,
    stderr: String,
    max_rss_kb: i64,
    elapsed: Duration,
}

/// Runs the binary with a deadline (a hang is killed and reported as `status: None`), and its
/// peak memory from the kernel's own accounting of that child (reaped with `wait4`, which
/// clippy does not see).
#[allow(clippy::zombie_processes)]
fn run_bounded(args: &[&str], deadline: Duration) -> Ran {
    let started = Instant::now();
    let mut child = Command::new(binary())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("RUST_BACKTRACE")
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let pid = child.id() as libc::pid_t;
    loop {
        let mut status: libc::c_int = 0;
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for this test's own child, with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            let code = if libc::WIFEXITED(status) {
                Some(libc::WEXITSTATUS(status))
            } else {
                Some(128 + libc::WTERMSIG(status))
            };
            let stderr = reader.join().unwrap();
            return Ran { status: code, stderr, max_rss_kb: usage.ru_maxrss, elapsed: started.elapsed() };
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ran { status: None, stderr: reader.join().unwrap(), max_rss_kb: 0, elapsed: started.elapsed() };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// No panic message, backtrace or abort text ever reaches an operator.
fn assert_clean(ran: &Ran, what: &str) {
    for needle in ["panicked", "backtrace", "RUST_BACKTRACE", "memory allocation of", "SIGSEGV", "core dumped"] {
        assert!(!ran.stderr.contains(needle), "{what}: {needle:?} in\n{}", ran.stderr);
    }
}

/// `validate` (0 or 1), `report` (0 or 2) and `diff` (0 or 2) on mutated exports: each ends
/// with its documented status, and a refusal names the file.
#[test]
fn every_command_ends_with_its_documented_status_on_mutated_exports() {
    let dir = temp_dir("fuzz-commands");
    let queries = repo().join("queries");
    let queries = queries.to_str().unwrap();
    let good = dir.join("good.parquet");
    let small = small_export();
    std::fs::write(&good, &small).unwrap();
    let n = cases(40);
    let bases = bases();
    for seed in first_seed()..first_seed() + n {
        let (name, base) = &bases[(seed % 2) as usize];
        let (bytes, what) = mutate(base, seed.wrapping_mul(7919));
        let file = dir.join(format!("cmd-{name}-{seed}.parquet"));
        std::fs::write(&file, &bytes).unwrap();
        let shown = file.to_str().unwrap();
        let out = dir.join(format!("report-{seed}.html"));
        let runs = [
            ("validate", vec!["validate", shown], [0, 1]),
            ("report", vec!["report", "--data", shown, "--queries", queries, "--out", out.to_str().unwrap()], [0, 2]),
            ("diff", vec!["diff", good.to_str().unwrap(), shown, "--queries", queries], [0, 2]),
        ];
        // The report and diff build everything: one seed in four is enough for them.
        for (command, args, allowed) in runs.iter().filter(|(c, _, _)| *c == "validate" || seed % 4 == 0) {
            let ran = run_bounded(args, Duration::from_secs(120));
            let label = format!("{command} on {name} {what}");
            let status = ran.status.unwrap_or_else(|| panic!("{label}: still running after 120 s"));
            assert!(allowed.contains(&status), "{label}: exit {status}, stderr:\n{}", ran.stderr);
            assert_clean(&ran, &label);
            if status != 0 {
                assert!(ran.stderr.contains(&format!("cmd-{name}-{seed}.parquet")), "{label}: {}", ran.stderr);
            }
        }
        let _ = std::fs::remove_file(&file);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The files that made the decoder panic before it was contained (found by the fuzzer, kept
/// under `tests/fixtures/untrusted/`): every command refuses each with its documented status.
#[test]
fn files_that_crashed_the_decoder_are_refused_by_every_command() {
    let fixtures = repo().join("tests/fixtures/untrusted");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixture in {}", fixtures.display());
    let dir = temp_dir("crashers");
    let good = dir.join("good.parquet");
    std::fs::write(&good, small_export()).unwrap();
    let queries = repo().join("queries");
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let shown = file.to_str().unwrap();
        let out = dir.join("r.html");
        for (command, args, want) in [
            ("validate", vec!["validate", shown], 1),
            (
                "report",
                vec!["report", "--data", shown, "--queries", queries.to_str().unwrap(), "--out", out.to_str().unwrap()],
                2,
            ),
            ("diff", vec!["diff", good.to_str().unwrap(), shown, "--queries", queries.to_str().unwrap()], 2),
        ] {
            let ran = run_bounded(&args, Duration::from_secs(120));
            let label = format!("{command} {name}");
            assert_eq!(ran.status, Some(want), "{label}: {}", ran.stderr);
            assert_clean(&ran, &label);
            assert!(ran.stderr.contains(&name), "{label}: the message names the file: {}", ran.stderr);
        }
        // The service starts on it, answers 503 and says why.
        let reason = TestApp::refused_reason(&dir, file);
        assert!(reason.contains(&name), "{name}: {reason}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Broken files of each kind, at start and on reload

/// The byte where the first column chunk's data starts (a page header), from the file's own
/// metadata.
fn first_page_offset(bytes: &[u8]) -> usize {
    let mut reader = ParquetReader::new(Cursor::new(bytes.to_vec()));
    let meta = reader.get_metadata().unwrap().clone();
    let chunk = &meta.row_groups[0].parquet_columns()[0];
    chunk.dictionary_page_offset().unwrap_or(chunk.data_page_offset()) as usize
}

/// Each kind of broken export, made from `good`: (kind, bytes, what the reason must say).
fn broken_kinds(good: &[u8]) -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let n = good.len();
    let truncated = good[..n / 2].to_vec();
    let mut footer = good.to_vec();
    footer[n - 8..n - 4].copy_from_slice(&(n as u32 * 4).to_le_bytes());
    let mut page = good.to_vec();
    let at = first_page_offset(good);
    page[at..at + 24].fill(0xFF);
    let mut metadata = good.to_vec();
    let footer_len = u32::from_le_bytes(good[n - 8..n - 4].try_into().unwrap()) as usize;
    let start = n - 8 - footer_len;
    metadata[start..start + footer_len / 2].fill(0);
    vec![
        ("truncated", truncated, "PAR1"),
        ("footer length", footer, "footer length"),
        ("damaged page", page, "column '"),
        ("zeroed metadata", metadata, "metadata"),
        ("not parquet", b"marca,modelo\nFiat,Argo\n".repeat(10), "PAR1"),
    ]
}

fn readyz(app: &TestApp) -> (u16, serde_json::Value) {
    into_json(app.raw("GET", "/readyz").send())
}

fn wait_until(app: &TestApp, what: &str, ok: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let (_, body) = readyz(app);
        if ok(&body) {
            return body;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{what} never happened: {body}\n{}", app.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Replaces `path` by a rename, as export jobs do.
fn replace(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn serve_on_a_broken_export_answers_503_with_the_reason_and_recovers() {
    let good = small_export();
    for (kind, bytes, needle) in broken_kinds(&good) {
        let dir = temp_dir("broken-start");
        let data = dir.join("catalog.parquet");
        std::fs::write(&data, &bytes).unwrap();
        let app = TestApp::serve(&dir, &data, &[]);
        assert_error(app.get("/catalog/vehicles"), 503, "SERVICE_UNAVAILABLE");
        let (status, body) = readyz(&app);
        assert_eq!(status, 503, "{kind}: {body}");
        let reason = body["last_reload"]["reason"].as_str().unwrap();
        assert!(reason.contains("catalog.parquet") && reason.contains(needle), "{kind}: {reason}");
        assert!(!reason.contains(dir.to_str().unwrap()), "{kind}: no folder in a public answer: {reason}");
        assert!(body["error"]["message"].as_str().unwrap().contains(needle), "{kind}: {body}");
        // A valid export appears: it is loaded and served.
        replace(&data, &good);
        let body = wait_until(&app, "recovery", |b| b["status"] == "ready");
        assert_eq!(body["dataset"]["rows"], 300);
        assert_eq!(body["dataset"]["origin"], "export");
        assert_eq!(app.get("/catalog/vehicles?page_size=1").0, 200, "{kind}");
        assert!(!app.logs().contains("panicked"), "{kind}: {}", app.logs());
    }
}

#[test]
fn a_reload_of_each_kind_of_broken_export_keeps_the_version_and_says_why() {
    let good = small_export();
    let dir = temp_dir("broken-reload");
    let data = dir.join("catalog.parquet");
    std::fs::write(&data, &good).unwrap();
    let app = TestApp::serve(&dir, &data, &[]);
    let (_, body) = readyz(&app);
    let version = body["dataset"]["version"].as_str().unwrap().to_string();
    let mut kinds = broken_kinds(&good);
    kinds.push(("over --max-rows", bomb(25_000_000, 100_000), "--max-rows"));
    for (kind, bytes, needle) in kinds {
        let before = readyz(&app).1["last_reload"]["at"].clone();
        replace(&data, &bytes);
        let body = wait_until(&app, &format!("the refusal of {kind}"), |b| {
            b["last_reload"]["result"] == "refused" && b["last_reload"]["at"] != before
        });
        let reason = body["last_reload"]["reason"].as_str().unwrap();
        assert!(reason.contains("catalog.parquet") && reason.contains(needle), "{kind}: {reason}");
        assert!(!reason.contains("thread"), "{kind}: {reason}");
        assert_eq!(body["dataset"]["version"], version.as_str(), "{kind}: the served version stays");
        let (status, page) = app.get("/catalog/vehicles?page_size=1");
        assert_eq!(status, 200, "{kind}: {page}");
        assert_eq!(page["data"]["meta"]["pagination"]["total"], 300);
    }
    assert!(!app.logs().contains("panicked"), "{}", app.logs());
}

// ---------------------------------------------------------------------------------------------
// The row limit

/// An export of `rows` identical rows, written in batches of `batch` (so writing it never holds
/// more than one batch): a few megabytes of Parquet that would decode to gigabytes.
fn bomb(rows: usize, batch: usize) -> Vec<u8> {
    let one: Vec<Row> = (0..batch)
        .map(|_| {
            let mut r = Row::new(1, "Fiat", "Argo", 2022, "Compacto", "Flex");
            r.id = None;
            r
        })
        .collect();
    let df = frame(&one);
    let mut out = Vec::new();
    {
        let mut writer = ParquetWriter::new(&mut out).batched(df.schema()).unwrap();
        for _ in 0..rows / batch {
            writer.write_batch(&df).unwrap();
        }
        writer.finish().unwrap();
    }
    out
}

#[test]
fn the_row_limit_refuses_a_decompression_bomb_before_decoding_it() {
    let dir = temp_dir("bomb");
    let data = dir.join("catalog.parquet");
    let bytes = bomb(30_000_000, 100_000);
    assert!(bytes.len() < 20 * 1024 * 1024, "a bomb is small: {} bytes", bytes.len());
    std::fs::write(&data, &bytes).unwrap();
    let shown = data.to_str().unwrap();

    let ran = run_bounded(&["validate", shown], Duration::from_secs(60));
    assert_eq!(ran.status, Some(1), "{}", ran.stderr);
    assert_clean(&ran, "validate bomb");
    assert!(ran.stderr.contains("30000000 rows") && ran.stderr.contains("--max-rows"), "{}", ran.stderr);
    // Decoding 30M rows takes tens of seconds and gigabytes; the refusal, neither.
    assert!(ran.max_rss_kb < 400 * 1024, "validate peaked at {} KB", ran.max_rss_kb);
    assert!(ran.elapsed < Duration::from_secs(20), "{:?}", ran.elapsed);

    // A lower limit from the environment or the flag refuses a smaller file the same way.
    let small = dir.join("small.parquet");
    std::fs::write(&small, small_export()).unwrap();
    let ran = run_bounded(&["validate", small.to_str().unwrap(), "--max-rows", "299"], Duration::from_secs(60));
    assert_eq!(ran.status, Some(1), "{}", ran.stderr);
    assert!(ran.stderr.contains("300 rows") && ran.stderr.contains("limit of 299 rows"), "{}", ran.stderr);
    assert_eq!(
        run_bounded(&["validate", small.to_str().unwrap(), "--max-rows", "300"], Duration::from_secs(60)).status,
        Some(0)
    );

    let out = dir.join("r.html");
    let q = repo().join("queries");
    let ran = run_bounded(
        &["report", "--data", shown, "--out", out.to_str().unwrap(), "--queries", q.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(ran.status, Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("--max-rows"), "{}", ran.stderr);

    // The service starts on it at once, stays small, and says why.
    let app = TestApp::serve(&dir, &data, &[]);
    let (status, body) = readyz(&app);
    assert_eq!(status, 503, "{body}");
    assert!(body["last_reload"]["reason"].as_str().unwrap().contains("--max-rows"), "{body}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", app.pid())).unwrap();
    let hwm: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(hwm < 400 * 1024, "serve peaked at {hwm} KB on a refused bomb");
}

// ---------------------------------------------------------------------------------------------
// The state folder

fn served_version(app: &TestApp) -> (String, String) {
    let (status, body) = readyz(app);
    assert_eq!(status, 200, "{body}\n{}", app.logs());
    (body["dataset"]["version"].as_str().unwrap().to_string(), body["dataset"]["origin"].as_str().unwrap().to_string())
}

fn etag(app: &TestApp) -> String {
    app.get_req("/rankings/most-economical").send().header("etag").unwrap().to_string()
}

/// Restarts after a broken export and after a deleted one serve the kept dataset, with its own
/// version and ETags; `/readyz` says it is the kept one and why the export was refused.
#[test]
fn a_restart_serves_the_kept_dataset_when_the_export_is_broken_or_gone() {
    let dir = temp_dir("state");
    let data = dir.join("catalog.parquet");
    let state = dir.join("state");
    let good = small_export();
    std::fs::write(&data, &good).unwrap();
    let args = ["--state-dir", state.to_str().unwrap()];
    let (version, tag) = {
        let app = TestApp::serve(&temp_dir("state-run"), &data, &args);
        let (v, origin) = served_version(&app);
        assert_eq!(origin, "export");
        (v, etag(&app))
    };
    assert!(state.join("manifest.json").is_file());

    // An export job writes a broken file over the export, then the host restarts.
    let n = good.len();
    std::fs::write(&data, &good[..n - 100]).unwrap();
    {
        let app = TestApp::serve(&temp_dir("state-run"), &data, &args);
        let (v, origin) = served_version(&app);
        assert_eq!((v.as_str(), origin.as_str()), (version.as_str(), "state"));
        assert_eq!(etag(&app), tag, "the kept dataset keeps its ETags");
        let (_, body) = readyz(&app);
        assert_eq!(body["last_reload"]["result"], "refused", "{body}");
        assert!(body["last_reload"]["reason"].as_str().unwrap().contains("catalog.parquet"), "{body}");
        assert_eq!(app.get("/catalog/vehicles?page_size=1").1["data"]["meta"]["pagination"]["total"], 300);
        // The export is fixed: served from the export again, same version.
        replace(&data, &good);
        let body = wait_until(&app, "the export served again", |b| b["dataset"]["origin"] == "export");
        assert_eq!(body["dataset"]["version"], version.as_str());
    }

    // The export is deleted, then the service restarts.
    std::fs::remove_file(&data).unwrap();
    {
        let app = TestApp::serve(&temp_dir("state-run"), &data, &args);
        assert_eq!(served_version(&app), (version.clone(), "state".to_string()));
        let (_, body) = readyz(&app);
        assert!(body["last_reload"]["reason"].as_str().unwrap().contains("cannot read catalog.parquet"), "{body}");
    }

    // Without the state folder, the same restart has nothing to serve.
    let app = TestApp::serve(&temp_dir("state-run"), &data, &[]);
    assert_eq!(readyz(&app).0, 503);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The answers of a few operations, without what differs per request.
fn answers(app: &TestApp) -> Vec<(String, Option<String>)> {
    let paths = [
        "/rankings/most-economical",
        "/insights/summary?ano_min=2015",
        "/rankings/by-brand?metric=co2&top=3",
        "/catalog/vehicles?page=2&page_size=7&sort=-ano,marca",
        "/insights/eco-scores?page=3&page_size=5",
        "/facets?categoria=compacto",
    ];
    paths
        .iter()
        .map(|p| {
            let res = app.get_req(p).send();
            assert_eq!(res.status, 200, "{p}: {}", res.text());
            let mut body = res.json();
            for volatile in ["request_id", "timestamp", "generated_at"] {
                if let Some(meta) = body.get_mut("data").and_then(|d| d.get_mut("meta")) {
                    meta.as_object_mut().map(|m| m.remove(volatile));
                }
            }
            (body.to_string(), res.header("etag").map(str::to_string))
        })
        .collect()
}

fn wait_for_file(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.is_file() {
        assert!(std::time::Instant::now() < deadline, "{} was never written", path.display());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A restart on an unchanged export maps the table prepared in the state folder and answers
/// exactly as the load from the export did; a damaged prepared table is never used (the export
/// is loaded instead, with the same answers) and is written again.
#[test]
fn a_restart_on_an_unchanged_export_maps_the_prepared_table() {
    let dir = temp_dir("prepared");
    let data = dir.join("catalog.parquet");
    let state = dir.join("state");
    std::fs::write(&data, small_export()).unwrap();
    let args = ["--state-dir", state.to_str().unwrap()];
    let (version, loaded) = {
        let app = TestApp::serve(&temp_dir("prepared-run"), &data, &args);
        let (v, _) = served_version(&app);
        wait_for_file(&state.join(format!("table-{v}.sums.json")));
        (v, answers(&app))
    };
    let table = state.join(format!("table-{version}.arrow"));
    {
        let app = TestApp::serve(&temp_dir("prepared-run"), &data, &args);
        assert_eq!(served_version(&app), (version.clone(), "export".to_string()));
        wait_for_log(&app, "prepared table mapped from the state folder");
        assert_eq!(answers(&app), loaded, "the mapped table answers as the loaded one");
    }
    // One flipped byte in the prepared table: refused by its checksums, the export is loaded.
    let mut bytes = std::fs::read(&table).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&table, &bytes).unwrap();
    {
        let app = TestApp::serve(&temp_dir("prepared-run"), &data, &args);
        assert_eq!(served_version(&app), (version.clone(), "export".to_string()));
        wait_for_log(&app, "checksums do not match");
        assert!(!app.logs().contains("prepared table mapped from the state folder"), "{}", app.logs());
        assert_eq!(answers(&app), loaded);
        // Written again from the loaded table.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::fs::read(&table).map(|b| b == bytes).unwrap_or(true) {
            assert!(std::time::Instant::now() < deadline, "the prepared table was not written again");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        wait_for_file(&state.join(format!("table-{version}.sums.json")));
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let app = TestApp::serve(&temp_dir("prepared-run"), &data, &args);
    wait_for_log(&app, "prepared table mapped from the state folder");
    assert_eq!(answers(&app), loaded);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A newer good export is kept in place of the older one; a broken export after it, then a
/// restart, serves the newer. A damaged kept copy is refused with a log line, never served.
#[test]
fn the_kept_dataset_is_the_last_accepted_one_and_a_damaged_copy_is_never_served() {
    let dir = temp_dir("state-newer");
    let data = dir.join("catalog.parquet");
    let state = dir.join("state");
    let args = ["--state-dir", state.to_str().unwrap()];
    let first = small_export();
    let mut df = eco_insights::sample::generate_catalog(250, 11).unwrap();
    let mut second = Vec::new();
    ParquetWriter::new(&mut second).finish(&mut df).unwrap();
    std::fs::write(&data, &first).unwrap();
    let newer = {
        let app = TestApp::serve(&temp_dir("state-newer-run"), &data, &args);
        let (v1, _) = served_version(&app);
        replace(&data, &second);
        let body = wait_until(&app, "the newer export", |b| b["dataset"]["version"] != v1.as_str());
        assert_eq!(body["dataset"]["rows"], 250);
        // The newer export is kept before it is served.
        let manifest = std::fs::read_to_string(state.join("manifest.json")).unwrap();
        let v2 = body["dataset"]["version"].as_str().unwrap().to_string();
        assert!(manifest.contains(&v2), "{manifest}");
        // Then a broken export: refused, the newer one keeps serving and stays kept.
        replace(&data, b"PAR1 not really parquet PAR1");
        wait_until(&app, "the refusal", |b| b["last_reload"]["result"] == "refused");
        v2
    };
    let exports: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".parquet"))
        .collect();
    assert_eq!(exports.len(), 1, "only the last accepted export is kept: {exports:?}");
    {
        let app = TestApp::serve(&temp_dir("state-newer-run"), &data, &args);
        assert_eq!(served_version(&app), (newer.clone(), "state".to_string()));
        assert_eq!(app.get("/catalog/vehicles?page_size=1").1["data"]["meta"]["pagination"]["total"], 250);
    }
    // One flipped byte in the kept copy: refused with a log line, nothing served.
    let kept = state.join(&exports[0]);
    let mut bytes = std::fs::read(&kept).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&kept, &bytes).unwrap();
    let app = TestApp::serve(&temp_dir("state-newer-run"), &data, &args);
    assert_eq!(readyz(&app).0, 503);
    wait_for_log(&app, "SHA-256");
    let _ = std::fs::remove_dir_all(&dir);
}
