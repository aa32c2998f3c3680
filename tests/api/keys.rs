//! Keys and operations: token-bucket quotas and their headers, the `credentials` command, hot
//! credentials, the demo pair on a public address, start-up without a dataset, SIGHUP during
//! start-up, the data size limit, and graceful shutdown.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

/// The real binary started by a test with full control of its arguments; killed on drop.
struct Server {
    child: Child,
    base: String,
    log: Arc<Mutex<String>>,
}

/// `serve` with the repository's views and a fast reload interval, plus `args`.
fn serve_cmd(args: &[&str]) -> Command {
    let mut cmd = Command::new(binary());
    cmd.arg("serve")
        .arg("--queries")
        .arg(repo().join("queries"))
        .args(["--reload-interval-ms", "200"])
        .args(args)
        .env("ECO_LOG", "info")
        .env_remove("ECO_ALLOW_DEMO_CREDENTIALS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

impl Server {
    fn start(args: &[&str]) -> Server {
        Server::try_start(serve_cmd(args), |_, _| {}).unwrap_or_else(|(log, _)| panic!("service did not start:\n{log}"))
    }

    /// Starts `cmd`; `on_line(pid, line)` sees every log line. `Err((log, exit status))` when the
    /// process exits instead of listening.
    fn try_start(
        mut cmd: Command,
        on_line: impl Fn(u32, &str) + Send + 'static,
    ) -> Result<Server, (String, Option<ExitStatus>)> {
        let mut child = cmd.spawn().expect("cannot start the binary");
        let pid = child.id();
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                on_line(pid, &line);
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let Some(addr) = line.trim().strip_prefix("listening on http://") else {
            let status = child.wait().ok();
            std::thread::sleep(Duration::from_millis(200));
            let text = log.lock().unwrap().clone();
            return Err((text, status));
        };
        // A server bound to every interface is reached on loopback.
        let base = format!("http://{}", addr.replace("0.0.0.0", "127.0.0.1"));
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stdout.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {}
        });
        Ok(Server { child, base, log })
    }

    fn logs(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn addr(&self) -> String {
        self.base.trim_start_matches("http://").to_string()
    }

    fn get(&self, path: &str, key: &str, secret: &str) -> Resp {
        Req::new("GET", &self.base, path).header("X-API-Key", key).header("X-API-Secret", secret).send()
    }

    fn readyz(&self) -> (u16, Value) {
        into_json(Req::new("GET", &self.base, "/readyz").send())
    }

    fn signal(&self, signal: i32) {
        // SAFETY: sends a signal to the child this test started.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(rc, 0, "kill failed");
    }

    /// Waits for the process to exit; panics (with the log) after `limit`, which would be a hang.
    fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < limit, "the process did not exit within {limit:?}; log:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rows(n: u32) -> Vec<Row> {
    (1..=n).map(|i| Row::new(i, "Fiat", &format!("Modelo {i:02}"), 2020, "Compacto", "Flex")).collect()
}

/// A credentials file with these (key, secret, quota) entries.
fn write_credentials(path: &Path, entries: &[(&str, &str, Option<u32>)]) {
    let list: Vec<Value> = entries
        .iter()
        .map(|(key, secret, quota)| {
            let hash = sha256_hex(secret);
            json!({"key": key, "name": format!("client {key}"), "secret_sha256": hash, "quota_per_minute": quota})
        })
        .collect();
    std::fs::write(path, json!({ "credentials": list }).to_string()).unwrap();
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// Replaces `path` atomically with `text`.
fn replace_file(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Runs `eco-insights credentials ...`.
fn credentials(args: &[&str]) -> Output {
    Command::new(binary()).arg("credentials").args(args).env_remove("ECO_CREDENTIALS").output().unwrap()
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Polls `check` every 50 ms until it holds; panics with `what` and the log after 15 s.
fn eventually(server: &Server, what: &str, check: impl Fn() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "{what} did not happen within 15 s; log:\n{}",
            server.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn header_u64(r: &Resp, name: &str) -> u64 {
    r.header(name).unwrap_or_else(|| panic!("no {name} header: {:?}", r.headers)).parse().unwrap()
}

/// A folder with a 3-row catalog and a credentials file.
fn setup(tag: &str, entries: &[(&str, &str, Option<u32>)]) -> (PathBuf, PathBuf, PathBuf) {
    let dir = temp_dir(tag);
    let data = dir.join("catalog.parquet");
    write_rows(&rows(3), &data);
    let creds = dir.join("credentials.json");
    write_credentials(&creds, entries);
    (dir, data, creds)
}

#[test]
fn quota_is_a_token_bucket_with_ratelimit_headers_and_429() {
    let (_dir, data, creds) = setup("quota", &[("limited", "s1", Some(3)), (KEY, SECRET, None)]);
    let server =
        Server::start(&["--bind", "127.0.0.1:0", "--data", path_str(&data), "--credentials", path_str(&creds)]);
    let path = "/catalog/vehicles?page_size=1";
    // The burst is the whole quota; each answer says what is left.
    for expected in [2, 1, 0] {
        let r = server.get(path, "limited", "s1");
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(header_u64(&r, "ratelimit-limit"), 3);
        assert_eq!(header_u64(&r, "ratelimit-remaining"), expected);
        // One token comes back every 20 s: the bucket is full again within (3 - left) × 20 s.
        let reset = header_u64(&r, "ratelimit-reset");
        assert!(reset >= 1 && reset <= (3 - expected) * 20, "reset {reset} with {expected} left");
    }
    let r = server.get(path, "limited", "s1");
    let retry = header_u64(&r, "retry-after");
    assert!((1..=20).contains(&retry), "Retry-After {retry}");
    assert_eq!(header_u64(&r, "ratelimit-remaining"), 0);
    assert!(header_u64(&r, "ratelimit-reset") >= retry);
    let message = assert_error(into_json(r), 429, "RATE_LIMITED");
    assert!(message.contains("Cota"), "{message}");
    // Another key is not affected and carries no quota headers; a wrong secret is 401 without
    // quota state, even for a key over its quota.
    let r = server.get(path, KEY, SECRET);
    assert_eq!(r.status, 200);
    assert!(r.header("ratelimit-limit").is_none() && r.header("ratelimit-remaining").is_none());
    let r = server.get(path, "limited", "wrong");
    assert!(r.header("ratelimit-limit").is_none());
    assert_error(into_json(r), 401, "UNAUTHORIZED");
    let r = server.get(path, "unknown", "s1");
    assert_error(into_json(r), 401, "UNAUTHORIZED");
}

#[test]
fn credentials_command_and_hot_reload_without_restart() {
    let dir = temp_dir("keys-cli");
    let data = dir.join("catalog.parquet");
    write_rows(&rows(3), &data);
    let creds = dir.join("credentials.json");
    let file = path_str(&creds);

    // `add` creates the missing file, mode 0600, and prints the pair once.
    let out = credentials(&["add", "--file", file, "--name", "first client"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let first: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (key1, secret1) = (first["key"].as_str().unwrap().to_string(), first["secret"].as_str().unwrap().to_string());
    assert!(key1.starts_with("eco_") && key1.len() == 36, "{key1}");
    assert_eq!(secret1.len(), 64);
    assert!(secret1.bytes().all(|b| b.is_ascii_hexdigit()));
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let stored = std::fs::read_to_string(&creds).unwrap();
    assert!(!stored.contains(&secret1) && stored.contains(&sha256_hex(&secret1)));

    let server = Server::start(&["--bind", "127.0.0.1:0", "--data", path_str(&data), "--credentials", file]);
    let path = "/catalog/vehicles?page_size=1";
    assert_eq!(server.get(path, &key1, &secret1).status, 200);
    assert_eq!(server.get(path, KEY, SECRET).status, 401, "the demo pair is not in this file");

    // A key added while the service runs works without a restart.
    let out = credentials(&["add", "--file", file, "--name", "second", "--quota-per-minute", "100"]);
    assert!(out.status.success());
    let second: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (key2, secret2) = (second["key"].as_str().unwrap().to_string(), second["secret"].as_str().unwrap().to_string());
    eventually(&server, "the new key working", || server.get(path, &key2, &secret2).status == 200);
    assert_eq!(header_u64(&server.get(path, &key2, &secret2), "ratelimit-limit"), 100);

    // `list` shows keys, names, quotas and whether a SCRAM verifier is kept, never a secret, its
    // hash or its verifier.
    let out = credentials(&["list", "--file", file]);
    assert!(out.status.success());
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        listed,
        json!([
            {"key": key1, "name": "first client", "quota_per_minute": null, "scram": true},
            {"key": key2, "name": "second", "quota_per_minute": 100, "scram": true}
        ])
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains(&sha256_hex(&secret1)) && !text.contains("secret") && !text.contains("SCRAM-SHA-256$"));

    // A revoked key stops working; the others keep theirs.
    let out = credentials(&["revoke", "--file", file, &key1]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    eventually(&server, "the revoked key refused", || server.get(path, &key1, &secret1).status == 401);
    assert_eq!(server.get(path, &key2, &secret2).status, 200);
    let out = credentials(&["revoke", "--file", file, &key1]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not in"), "{}", String::from_utf8_lossy(&out.stderr));

    // A broken file is refused: the last good set keeps working, the log says why.
    replace_file(&creds, "{\"credentials\": [ {\"key\": ");
    eventually(&server, "the refusal logged", || server.logs().contains("new credentials file refused"));
    assert_eq!(server.get(path, &key2, &secret2).status, 200);
    assert_eq!(server.get(path, &key1, &secret1).status, 401);
    let out = credentials(&["add", "--file", file, "--name", "third"]);
    assert!(!out.status.success(), "add must not overwrite a file it cannot read");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_pair_on_a_public_address_is_refused_unless_allowed() {
    let dir = temp_dir("demo");
    let data = dir.join("catalog.parquet");
    write_rows(&rows(3), &data);
    let demo = repo().join("config/credentials.json");
    let args = ["--bind", "0.0.0.0:0", "--data", path_str(&data), "--credentials", path_str(&demo)];
    let Err((log, status)) = Server::try_start(serve_cmd(&args), |_, _| {}) else {
        panic!("the demo pair was accepted on 0.0.0.0")
    };
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{log}");
    assert!(log.contains("demo") && log.contains("--allow-demo-credentials"), "{log}");

    let mut allowed: Vec<&str> = args.to_vec();
    allowed.push("--allow-demo-credentials");
    let server = Server::start(&allowed);
    assert_eq!(server.get("/catalog/vehicles?page_size=1", KEY, SECRET).status, 200);
    drop(server);
    let mut cmd = serve_cmd(&args);
    cmd.env("ECO_ALLOW_DEMO_CREDENTIALS", "true");
    let server = Server::try_start(cmd, |_, _| {}).unwrap_or_else(|(log, _)| panic!("{log}"));
    assert_eq!(server.readyz().0, 200);
    drop(server);

    // Loopback needs no flag; other credentials need none anywhere.
    let server = Server::start(&["--bind", "127.0.0.1:0", "--data", path_str(&data), "--credentials", path_str(&demo)]);
    assert_eq!(server.readyz().0, 200);
    let creds = dir.join("credentials.json");
    write_credentials(&creds, &[("real", "s", None)]);
    let server2 = Server::start(&["--bind", "0.0.0.0:0", "--data", path_str(&data), "--credentials", path_str(&creds)]);
    assert_eq!(server2.get("/catalog/vehicles?page_size=1", "real", "s").status, 200);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn starts_without_data_then_serves_when_a_valid_export_appears() {
    let (dir, _, creds) = setup("no-data", &[(KEY, SECRET, None)]);
    let data = dir.join("missing.parquet");
    let server =
        Server::start(&["--bind", "127.0.0.1:0", "--data", path_str(&data), "--credentials", path_str(&creds)]);
    let path = "/catalog/vehicles?page_size=1";
    assert_error(into_json(server.get(path, KEY, SECRET)), 503, "SERVICE_UNAVAILABLE");
    let (status, body) = server.readyz();
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["success"], false);
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("recusada") && message.contains("missing.parquet"), "{message}");
    assert_eq!(body["last_reload"]["result"], "refused");
    let reason = body["last_reload"]["reason"].as_str().unwrap();
    assert!(reason.contains("missing.parquet"), "{reason}");
    assert!(!reason.contains(path_str(&dir)), "the public reason shows the folder: {reason}");

    // An invalid file is refused too, with its reason.
    replace_file(&data, "not parquet");
    eventually(&server, "the invalid file refused", || {
        server.readyz().1["last_reload"]["reason"].as_str().is_some_and(|r| r.contains("not a readable Parquet"))
    });
    assert_eq!(server.readyz().0, 503);

    // A valid export is loaded although nothing was served before.
    let tmp = dir.join("next.parquet");
    write_rows(&rows(4), &tmp);
    std::fs::rename(&tmp, &data).unwrap();
    eventually(&server, "readiness", || server.readyz().0 == 200);
    let (_, body) = server.readyz();
    assert_eq!(body["dataset"]["rows"], 4);
    assert_eq!(body["last_reload"]["result"], "ok");
    assert_eq!(body["last_reload"]["reason"], Value::Null);
    let r = server.get(path, KEY, SECRET);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["data"]["meta"]["pagination"]["total"], 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sighup_during_start_up_does_not_stop_the_process() {
    let dir = temp_dir("hup");
    let data = dir.join("catalog.parquet");
    // Big enough that the first load takes a while.
    let out = Command::new(binary())
        .args(["generate", "--rows", "60000", "--seed", "7", "--out", path_str(&data)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let demo = repo().join("config/credentials.json");
    let cmd = serve_cmd(&["--bind", "127.0.0.1:0", "--data", path_str(&data), "--credentials", path_str(&demo)]);
    let sent = Arc::new(Mutex::new(0));
    let counter = Arc::clone(&sent);
    let server = Server::try_start(cmd, move |pid, line| {
        if line.contains("loading dataset") {
            for _ in 0..3 {
                // SAFETY: signals the child this test started.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGHUP) };
                *counter.lock().unwrap() += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    })
    .unwrap_or_else(|(log, status)| panic!("the service did not survive SIGHUP during start-up ({status:?}):\n{log}"));
    assert_eq!(*sent.lock().unwrap(), 3);
    let (status, body) = server.readyz();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["dataset"]["rows"], 60000);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exports_over_max_data_bytes_are_refused() {
    let (dir, data, creds) = setup("max-bytes", &[(KEY, SECRET, None)]);
    let small = std::fs::metadata(&data).unwrap().len();
    let big = dir.join("big.parquet");
    write_rows(&rows(3000), &big);
    let big_len = std::fs::metadata(&big).unwrap().len();
    let limit = small + (big_len - small) / 2;
    assert!(big_len > limit && small <= limit);

    let out = Command::new(binary())
        .args(["validate", "--max-data-bytes", &limit.to_string(), path_str(&big)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("over the limit"), "{out:?}");
    let out = Command::new(binary())
        .args(["validate", "--max-data-bytes", &limit.to_string(), path_str(&data)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    // At start-up: served without data, readiness says why.
    let server = Server::start(&[
        "--bind",
        "127.0.0.1:0",
        "--data",
        path_str(&big),
        "--credentials",
        path_str(&creds),
        "--max-data-bytes",
        &limit.to_string(),
    ]);
    let (status, body) = server.readyz();
    assert_eq!(status, 503);
    assert!(body["last_reload"]["reason"].as_str().unwrap().contains("--max-data-bytes"), "{body}");
    drop(server);

    // On reload: the previous dataset keeps serving.
    let server = Server::start(&[
        "--bind",
        "127.0.0.1:0",
        "--data",
        path_str(&data),
        "--credentials",
        path_str(&creds),
        "--max-data-bytes",
        &limit.to_string(),
    ]);
    let version = server.readyz().1["dataset"]["version"].clone();
    std::fs::rename(&big, &data).unwrap();
    eventually(&server, "the big export refused", || server.readyz().1["last_reload"]["result"] == "refused");
    let (status, body) = server.readyz();
    assert_eq!(status, 200);
    assert_eq!(body["dataset"]["version"], version);
    assert_eq!(body["dataset"]["rows"], 3);
    eventually(&server, "the refusal logged", || server.logs().contains("over the limit"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Opens a POST /compare whose body is sent only in part.
fn start_trickled_compare(server: &Server) -> (TcpStream, Vec<u8>) {
    let body = json!({ "vehicle_ids": [uid(1), uid(2)] }).to_string().into_bytes();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "POST /compare HTTP/1.1\r\nHost: x\r\nX-API-Key: {KEY}\r\nX-API-Secret: {SECRET}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body[..10]).unwrap();
    (stream, body[10..].to_vec())
}

#[test]
fn sigterm_finishes_requests_in_flight_refuses_new_ones_and_exits_0() {
    let (dir, data, creds) = setup("shutdown", &[(KEY, SECRET, None)]);
    let mut server =
        Server::start(&["--bind", "127.0.0.1:0", "--data", path_str(&data), "--credentials", path_str(&creds)]);
    let (mut stream, rest) = start_trickled_compare(&server);
    std::thread::sleep(Duration::from_millis(300));
    server.signal(libc::SIGTERM);
    eventually(&server, "shutdown started", || server.logs().contains("shutting down"));
    std::thread::sleep(Duration::from_millis(200));
    assert!(TcpStream::connect(server.addr()).is_err(), "a new connection was accepted after SIGTERM");
    // The request in flight still completes.
    for chunk in rest.chunks(5) {
        stream.write_all(chunk).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"success\":true"), "{text}");
    let status = server.wait_exit(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "{}", server.logs());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shutdown_grace_bounds_a_request_that_never_finishes() {
    let (dir, data, creds) = setup("grace", &[(KEY, SECRET, None)]);
    let mut server = Server::start(&[
        "--bind",
        "127.0.0.1:0",
        "--data",
        path_str(&data),
        "--credentials",
        path_str(&creds),
        "--shutdown-grace-ms",
        "300",
    ]);
    let (_stream, _never_sent) = start_trickled_compare(&server);
    std::thread::sleep(Duration::from_millis(200));
    server.signal(libc::SIGTERM);
    // A hang would show as no exit at all; the grace is 300 ms.
    let status = server.wait_exit(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "{}", server.logs());
    assert!(server.logs().contains("shutdown grace elapsed"), "{}", server.logs());
    let _ = std::fs::remove_dir_all(&dir);
}
