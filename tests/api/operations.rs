//! HTTP operations: metrics, JSON logs, compression with weak ETags, panics, and the limits
//! (URL and header sizes, encodings, the head deadline, the request timeout, requests in flight).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

fn rows(n: u32) -> Vec<Row> {
    let brands = ["Fiat", "BYD", "Toyota", "Renault"];
    (1..=n)
        .map(|i| {
            let fuel = if i % 3 == 0 { "Elétrico" } else { "Flex" };
            let mut r = Row::new(
                i,
                brands[i as usize % brands.len()],
                &format!("Modelo {i}"),
                2020 + (i % 5) as i32,
                "Compacto",
                fuel,
            );
            r.eficiencia_cidade_km_l = Some(10.0 + f64::from(i % 7));
            r
        })
        .collect()
}

/// The service on `n` rows with extra arguments and environment.
fn start(n: u32, extra: &[&str], env: &[(&str, &str)]) -> TestApp {
    let dir = temp_dir("ops");
    let data = dir.join("catalog.parquet");
    write_rows(&rows(n), &data);
    TestApp::serve_env(&dir, &data, extra, env)
}

fn addr(app: &TestApp) -> String {
    app.base.trim_start_matches("http://").to_string()
}

/// Reads one response (head and a `Content-Length` body) from a kept-alive connection.
fn read_response(stream: &mut TcpStream) -> Resp {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).unwrap();
        assert!(n > 0, "connection closed in the head: {}", String::from_utf8_lossy(&raw));
        raw.push(byte[0]);
    }
    let head = String::from_utf8(raw.clone()).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Resp { status, headers, body }
}

/// Sends raw bytes on a new connection and reads until the server closes it.
fn raw_exchange(app: &TestApp, bytes: &[u8]) -> Resp {
    let mut stream = TcpStream::connect(addr(app)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(bytes).unwrap();
    read_response(&mut stream)
}

fn failure(res: &Resp, status: u16, code: &str) -> String {
    assert_eq!(res.status, status, "{}", res.text());
    assert!(res.header("x-request-id").is_some());
    assert_error((res.status, res.json()), status, code)
}

/// A POST /compare whose head and part of its body are sent; the rest is returned.
fn start_trickled_compare(app: &TestApp) -> (TcpStream, Vec<u8>) {
    let body = json!({ "vehicle_ids": [uid(1), uid(2)] }).to_string().into_bytes();
    let mut stream = TcpStream::connect(addr(app)).unwrap();
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

fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn metrics_count_route_templates_unmatched_paths_and_the_dataset() {
    let app = start(3, &[], &[]);
    assert_eq!(app.get(&format!("/vehicles/{}/summary", uid(1))).0, 200);
    assert_eq!(app.get(&format!("/vehicles/{}/summary", uid(2))).0, 200);
    assert_eq!(app.raw("GET", "/no/such/path").send().status, 404);
    let version = app.raw("GET", "/readyz").send().json()["dataset"]["version"].as_str().unwrap().to_string();

    let res = app.raw("GET", "/metrics").send();
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(res.header("content-type").unwrap().starts_with("application/openmetrics-text"));
    let text = res.text();
    for needle in [
        r#"eco_http_requests_total{route="/vehicles/{vehicle_id}/summary",method="GET",status="200"} 2"#.to_string(),
        r#"eco_http_requests_total{route="unmatched",method="GET",status="404"} 1"#.to_string(),
        r#"eco_http_request_duration_seconds_count{route="/vehicles/{vehicle_id}/summary"} 2"#.to_string(),
        "eco_dataset_rows 3".to_string(),
        format!(r#"eco_dataset_info{{version="{version}"}} 1"#),
        r#"eco_dataset_reloads_total{result="ok"} 1"#.to_string(),
        r#"eco_dataset_reloads_total{result="refused"} 0"#.to_string(),
        "eco_dataset_loaded_timestamp_seconds ".to_string(),
        "eco_rate_limited_total 0".to_string(),
        // The scrape itself is in flight.
        "eco_http_in_flight 1".to_string(),
    ] {
        assert!(text.contains(&needle), "no {needle} in:\n{text}");
    }
    // Unauthenticated, never limited, and counted under its own route.
    let text = app.raw("GET", "/metrics").send().text();
    assert!(text.contains(r#"eco_http_requests_total{route="/metrics",method="GET",status="200"} 1"#), "{text}");

    // A swap counts one more successful reload and names the new version.
    let next = app.dir.join("next.parquet");
    write_rows(&rows(4), &next);
    std::fs::rename(&next, &app.data).unwrap();
    eventually("the swap", || app.raw("GET", "/readyz").send().json()["dataset"]["rows"] == 4);
    let text = app.raw("GET", "/metrics").send().text();
    assert!(text.contains(r#"eco_dataset_reloads_total{result="ok"} 2"#), "{text}");
    assert!(text.contains("eco_dataset_rows 4"), "{text}");
    assert!(!text.contains(&version), "{text}");
}

#[test]
fn answers_429_are_counted() {
    let creds = temp_dir("ops-quota").join("credentials.json");
    std::fs::write(
        &creds,
        format!(
            r#"{{"credentials":[{{"key":"q-key","name":"quota client","secret_sha256":"{}","quota_per_minute":1}}]}}"#,
            sha2_hex("q-secret")
        ),
    )
    .unwrap();
    let app = start(3, &["--credentials", creds.to_str().unwrap()], &[]);
    let get =
        || app.raw("GET", "/catalog/vehicles").header("X-API-Key", "q-key").header("X-API-Secret", "q-secret").send();
    assert_eq!(get().status, 200);
    assert_eq!(get().status, 429);
    assert_eq!(get().status, 429);
    let text = app.raw("GET", "/metrics").send().text();
    assert!(text.contains("eco_rate_limited_total 2"), "{text}");
    assert!(
        text.contains(r#"eco_http_requests_total{route="/catalog/vehicles",method="GET",status="429"} 2"#),
        "{text}"
    );
    // The refused requests' log lines name the client, never its secret.
    eventually("the 429 log lines", || {
        app.logs().lines().filter(|l| l.contains("status=429") && l.contains(r#"key="quota client""#)).count() == 2
    });
    assert!(!app.logs().contains("q-secret"));
}

#[test]
fn json_logs_carry_the_request_fields_and_never_the_secret() {
    const OPS_SECRET: &str = "ops-secret-6f1d2c";
    let creds = temp_dir("ops-creds").join("credentials.json");
    let hash = sha2_hex(OPS_SECRET);
    std::fs::write(
        &creds,
        format!(r#"{{"credentials":[{{"key":"ops-key","name":"ops client","secret_sha256":"{hash}"}}]}}"#),
    )
    .unwrap();
    let app = start(3, &["--log-format", "json", "--credentials", creds.to_str().unwrap()], &[]);
    let res = app
        .raw("GET", "/catalog/vehicles?page_size=1")
        .header("X-API-Key", "ops-key")
        .header("X-API-Secret", OPS_SECRET)
        .header("X-Request-Id", "trace-abc.123")
        .send();
    assert_eq!(res.status, 200);
    assert_eq!(res.header("x-request-id"), Some("trace-abc.123"));
    let res = app.raw("GET", "/catalog/vehicles").header("X-Request-Id", "other-id").send();
    assert_eq!(res.status, 401);
    // An id that is not a sane token is replaced by a generated UUID.
    let long = "x".repeat(200);
    let res = app.raw("GET", "/healthz").header("X-Request-Id", &long).send();
    let generated = res.header("x-request-id").unwrap().to_string();
    assert!(uuid_like(&generated), "{generated}");

    let request_line = |id: &str| -> Option<Value> {
        app.logs()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["message"] == "request" && v["request_id"] == id)
    };
    eventually("the request lines", || request_line(&generated).is_some());
    for line in app.logs().lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("not a JSON line: {line}"));
        assert!(v["level"].is_string() && v["timestamp"].is_string(), "{line}");
        assert!(!line.contains(OPS_SECRET), "the secret is logged: {line}");
    }
    let ok = request_line("trace-abc.123").unwrap();
    assert_eq!(ok["method"], "GET");
    assert_eq!(ok["route"], "/catalog/vehicles");
    assert_eq!(ok["status"], 200);
    assert!(ok["latency_ms"].as_f64().unwrap() >= 0.0, "{ok}");
    assert_eq!(ok["key"], "ops client", "{ok}");
    let denied = request_line("other-id").unwrap();
    assert_eq!(denied["status"], 401);
    assert!(denied.get("key").is_none(), "{denied}");
    let health = request_line(&generated).unwrap();
    assert_eq!(health["route"], "/healthz");
}

fn sha2_hex(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

/// The answer without its per-request members.
fn without_meta_ids(mut v: Value) -> Value {
    if let Some(meta) = v["data"]["meta"].as_object_mut() {
        meta.remove("request_id");
        meta.remove("generated_at");
    }
    v
}

fn which(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

/// Decodes with the command-line tool of `encoding`, when it is installed.
fn decode(encoding: &str, body: &[u8]) -> Option<Vec<u8>> {
    let tool = match encoding {
        "gzip" => "gzip",
        "br" => "brotli",
        "zstd" => "zstd",
        _ => unreachable!(),
    };
    if !which(tool) {
        eprintln!("{tool} is not installed: the {encoding} body is not decoded");
        return None;
    }
    let dir = temp_dir("decode");
    let input = dir.join("body");
    std::fs::write(&input, body).unwrap();
    let out = Command::new(tool).arg("-d").arg("-c").arg(&input).output().unwrap();
    assert!(out.status.success(), "{tool} -d failed: {}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    Some(out.stdout)
}

#[test]
fn big_answers_are_compressed_by_accept_encoding_and_keep_a_weak_etag() {
    let app = start(40, &[], &[]);
    let path = "/catalog/vehicles?page_size=40";
    let plain = app.get_req(path).send();
    assert_eq!(plain.status, 200);
    assert!(plain.body.len() >= 1024, "the fixture answer is too small: {}", plain.body.len());
    assert_eq!(plain.header("content-encoding"), None);
    let tag = plain.header("etag").unwrap().to_string();
    assert!(tag.starts_with("W/\"") && tag.ends_with('"'), "{tag}");
    assert!(plain.header("vary").unwrap().to_ascii_lowercase().contains("accept-encoding"));
    let expected = without_meta_ids(plain.json());

    for encoding in ["gzip", "br", "zstd"] {
        let res = app.get_req(path).header("Accept-Encoding", encoding).send();
        assert_eq!(res.status, 200);
        assert_eq!(res.header("content-encoding"), Some(encoding));
        assert_eq!(res.header("etag"), Some(tag.as_str()), "{encoding}");
        assert!(res.header("vary").unwrap().to_ascii_lowercase().contains("accept-encoding"));
        assert_ne!(res.body, plain.body);
        if let Some(decoded) = decode(encoding, &res.body) {
            let v: Value = serde_json::from_slice(&decoded).unwrap();
            assert_eq!(without_meta_ids(v), expected, "{encoding}");
        }
        // The tag revalidates whatever the encoding, in its weak and strong forms.
        let strong = tag.trim_start_matches("W/").to_string();
        for sent in [tag.as_str(), strong.as_str(), &format!("\"nope\", {tag}")] {
            let res = app.get_req(path).header("Accept-Encoding", encoding).header("If-None-Match", sent).send();
            assert_eq!(res.status, 304, "{encoding} {sent}");
            assert!(res.body.is_empty());
            assert_eq!(res.header("etag"), Some(tag.as_str()));
        }
    }
    // Small answers (under 1 KiB) are sent as they are.
    let small = app.raw("GET", "/healthz").header("Accept-Encoding", "gzip, br, zstd").send();
    assert_eq!((small.status, small.header("content-encoding")), (200, None));
    let err = app.get_req("/catalog/vehicles?page=x").header("Accept-Encoding", "gzip").send();
    assert_eq!((err.status, err.header("content-encoding")), (400, None));
    // Preferences are honoured.
    let res = app.get_req(path).header("Accept-Encoding", "gzip;q=0.5, zstd;q=1").send();
    assert_eq!(res.header("content-encoding"), Some("zstd"));
    // Nothing acceptable, not even identity: 406 in the envelope.
    let res = app.get_req(path).header("Accept-Encoding", "identity;q=0").send();
    assert_eq!(assert_error((res.status, res.json()), 406, "NOT_ACCEPTABLE"), res.json()["error"]["message"]);
}

#[test]
fn a_panic_answers_500_in_the_envelope_and_the_connection_keeps_serving() {
    let app = start(3, &[], &[("ECO_TEST_PANIC_ROUTE", "1")]);
    let mut stream = TcpStream::connect(addr(&app)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(b"GET /__test/panic HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let res = read_response(&mut stream);
    let message = failure(&res, 500, "INTERNAL_ERROR");
    assert_eq!(message, "Erro interno do servidor");
    assert!(!res.text().contains("deliberate"), "the panic message leaked: {}", res.text());
    let id = res.header("x-request-id").unwrap().to_string();
    // The same connection answers the next request.
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let next = read_response(&mut stream);
    assert_eq!(next.status, 200, "{}", next.text());
    eventually("the panic log line", || {
        app.logs().lines().any(|l| l.contains("panic") && l.contains(&id) && l.contains("deliberate"))
    });
    // Without the variable the route does not exist.
    let plain = start(3, &[], &[]);
    assert_eq!(plain.raw("GET", "/__test/panic").send().status, 404);
}

#[test]
fn oversized_urls_and_headers_answer_414_and_431_in_the_envelope() {
    let app = start(3, &[], &[]);
    // Over the limit but within hyper's buffer: answered by the middleware.
    let long = format!("/catalog/vehicles?marca={}", "a".repeat(9 * 1024));
    let res = app.get_req(&long).send();
    let message = failure(&res, 414, "URI_TOO_LONG");
    assert!(message.contains("8192"), "{message}");
    let res = app.get_req("/catalog/vehicles").header("X-Padding", &"p".repeat(17 * 1024)).send();
    let message = failure(&res, 431, "HEADERS_TOO_LARGE");
    assert!(message.contains("16384"), "{message}");
    // Just under both limits is fine.
    let res = app.get_req(&format!("/catalog/vehicles?marca={}", "a".repeat(7 * 1024))).send();
    assert_eq!(res.status, 200);
    // Beyond what hyper accepts at all (a 100 KiB URL, a 300 KiB header block): still the envelope.
    let huge = format!("GET /catalog/vehicles?marca={} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(100 * 1024));
    failure(&raw_exchange(&app, huge.as_bytes()), 414, "URI_TOO_LONG");
    let huge = format!("GET /catalog/vehicles HTTP/1.1\r\nHost: x\r\nX-Padding: {}\r\n\r\n", "p".repeat(300 * 1024));
    failure(&raw_exchange(&app, huge.as_bytes()), 431, "HEADERS_TOO_LARGE");
    // A malformed request line too.
    failure(&raw_exchange(&app, b"GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n"), 400, "VALIDATION_ERROR");
    // The service is still fine.
    assert_eq!(app.get("/catalog/vehicles").0, 200);
}

#[test]
fn bad_utf8_and_bad_percent_encoding_name_the_parameter() {
    let app = start(3, &[], &[]);
    for (path, name) in [
        ("/catalog/vehicles?marca=%FF", "'marca'"),
        ("/catalog/vehicles?marca=Fiat&modelo=%C3%28", "'modelo'"),
        ("/catalog/vehicles?marca=%G1", "'marca'"),
        ("/catalog/vehicles?marca=abc%", "'marca'"),
        ("/vehicles/%FF/summary", "'vehicle_id'"),
        ("/vehicles/%ZZ/eco-score", "'vehicle_id'"),
    ] {
        let message = assert_error(app.get(path), 400, "VALIDATION_ERROR");
        assert!(message.contains(name), "{path}: {message}");
    }
    // Valid encodings still work.
    assert_eq!(app.get("/catalog/vehicles?marca=Citro%C3%ABn").0, 200);
}

#[test]
fn a_head_trickled_past_the_header_timeout_is_closed() {
    let app = start(3, &["--header-timeout-ms", "1000"], &[]);
    let mut stream = TcpStream::connect(addr(&app)).unwrap();
    stream.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").unwrap();
    // One header line every 300 ms: each one arrives well within the timeout, but the head
    // never completes. A hang (the timeout restarting on every line) shows as no close at all.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut lines = 0;
    let closed = loop {
        if Instant::now() > deadline {
            break false;
        }
        if stream.write_all(format!("X-Line-{lines}: a\r\n").as_bytes()).is_err() {
            break true;
        }
        lines += 1;
        let mut buf = [0u8; 512];
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => panic!("unexpected answer: {}", String::from_utf8_lossy(&buf[..n])),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break true,
        }
    };
    assert!(closed, "the connection was still open after {lines} header lines");
    assert!(lines >= 2, "closed before the trickle started ({lines} lines)");
}

#[test]
fn an_idle_kept_alive_connection_is_closed_after_the_header_timeout_and_not_before() {
    let app = start(3, &["--header-timeout-ms", "1000"], &[]);
    let mut stream = TcpStream::connect(addr(&app)).unwrap();
    let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    // Each answer restarts the clock: four requests 600 ms apart (2.4 s in all, over twice the
    // timeout) all get their answer on the same connection.
    for round in 0..4 {
        if round > 0 {
            std::thread::sleep(Duration::from_millis(600));
        }
        stream.write_all(request).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(read_response(&mut stream).status, 200, "round {round}");
    }
    // Then nothing: the connection is closed within 1.25 timeouts (checked four times per
    // timeout), well before 4 s.
    let idle = Instant::now();
    let mut buf = [0u8; 64];
    let closed = match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(n) => panic!("unexpected bytes: {}", String::from_utf8_lossy(&buf[..n])),
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    };
    let waited = idle.elapsed();
    assert!(closed, "still open after {waited:?}");
    assert!(waited >= Duration::from_millis(900), "closed after only {waited:?}");
    assert!(waited < Duration::from_secs(4), "closed after {waited:?}");
}

#[test]
fn a_request_over_the_request_timeout_answers_503() {
    let app = start(3, &["--request-timeout-ms", "500"], &[]);
    let (mut stream, _rest) = start_trickled_compare(&app);
    let res = read_response(&mut stream);
    let message = failure(&res, 503, "SERVICE_UNAVAILABLE");
    assert!(message.contains("500 ms"), "{message}");
    // Quick requests are unaffected.
    assert_eq!(app.get("/catalog/vehicles").0, 200);
}

#[test]
fn requests_over_max_in_flight_answer_503_with_retry_after_at_once() {
    let app = start(3, &["--max-in-flight", "1"], &[]);
    let (mut stream, rest) = start_trickled_compare(&app);
    // The compare holds the only permit while its body trickles.
    eventually("the compare in flight", || app.raw("GET", "/metrics").send().text().contains("eco_http_in_flight 2"));
    let res = app.get_req("/catalog/vehicles").send();
    let message = failure(&res, 503, "SERVICE_UNAVAILABLE");
    assert_eq!(res.header("retry-after"), Some("1"), "{message}");
    // Probes, metrics and the document are exempt.
    for path in ["/healthz", "/readyz", "/metrics", "/openapi.json"] {
        assert_eq!(app.raw("GET", path).send().status, 200, "{path}");
    }
    stream.write_all(&rest).unwrap();
    let done = read_response(&mut stream);
    assert_eq!(done.status, 200, "{}", done.text());
    // The permit is back.
    assert_eq!(app.get("/catalog/vehicles").0, 200);
}

/// The fixed rankings and the overview, asked plainly, are answered ahead of the router; asked
/// with anything the full stack must decide (here `Accept-Encoding: identity`, which changes
/// nothing in the answer), they go through every layer. Both answers must be the same.
#[test]
fn fixed_answers_are_the_same_ahead_of_the_router_and_through_it() {
    let creds = temp_dir("ops-fast").join("credentials.json");
    std::fs::write(
        &creds,
        format!(
            r#"{{"credentials":[{{"key":"f-key","name":"fast client","secret_sha256":"{}","quota_per_minute":12}},
                {{"key":"p-key","name":"plain client","secret_sha256":"{}"}}]}}"#,
            sha2_hex("f-secret"),
            sha2_hex("p-secret")
        ),
    )
    .unwrap();
    let app = start(12, &["--credentials", creds.to_str().unwrap()], &[]);
    let get = |path: &str| app.raw("GET", path).header("X-API-Key", "f-key").header("X-API-Secret", "f-secret");
    let per_request = ["date", "x-request-id", "ratelimit-remaining", "ratelimit-reset"];
    let comparable = |res: &Resp| -> Vec<(String, String)> {
        let mut h: Vec<_> = res.headers.iter().filter(|(k, _)| !per_request.contains(&k.as_str())).cloned().collect();
        h.sort();
        h
    };
    for path in
        ["/rankings/most-economical", "/rankings/lowest-co2", "/rankings/longest-electric-range", "/rankings/overview"]
    {
        let plain = get(path).send();
        let full = get(path).header("Accept-Encoding", "identity").send();
        assert_eq!((plain.status, full.status), (200, 200), "{path}");
        assert_eq!(comparable(&plain), comparable(&full), "{path}");
        let (a, b) = (plain.json(), full.json());
        assert_eq!(a["data"]["data"], b["data"]["data"], "{path}");
        // These rows have no electric range: that ranking is empty, the others are not.
        let items = a["data"]["data"]["items"].as_array().map(Vec::len);
        assert_eq!(items == Some(0), path.ends_with("electric-range"), "{path}: {a}");
        let keys = |v: &Value| v["data"]["meta"].as_object().map(|m| m.keys().cloned().collect::<Vec<_>>());
        assert_eq!(keys(&a), Some(vec!["generated_at".to_string(), "request_id".to_string()]), "{path}");
        assert_eq!(keys(&a), keys(&b), "{path}");
        assert_eq!(a["data"]["meta"]["request_id"].as_str(), plain.header("x-request-id"), "{path}");
        assert_eq!(a["success"], true);
        // The tag of the plain answer revalidates through the full stack.
        let tag = plain.header("etag").unwrap().to_string();
        assert!(tag.starts_with("W/\""), "{tag}");
        let again = get(path).header("If-None-Match", &tag).send();
        assert_eq!(again.status, 304, "{path}");
        assert_eq!(again.header("etag"), Some(tag.as_str()));
    }
    // Four routes, three requests each, on a quota of twelve: the quota counts the plain answers
    // like the others, and a plain request over it is refused by the full stack (a token may
    // have come back meanwhile: a few tries).
    let refused = (0..4).map(|_| get("/rankings/most-economical").send()).find(|r| r.status != 200).unwrap();
    assert_eq!(refused.status, 429, "{}", refused.text());
    assert_eq!(refused.json()["error"]["code"], "RATE_LIMITED");
    assert_eq!(refused.header("cache-control"), Some("no-store"));
    // A wrong secret and a parameter are decided by the full stack too.
    let wrong = app.raw("GET", "/rankings/lowest-co2").header("X-API-Key", "f-key").header("X-API-Secret", "x").send();
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.json()["error"]["code"], "UNAUTHORIZED");
    let with_param =
        app.raw("GET", "/rankings/overview?x=1").header("X-API-Key", "p-key").header("X-API-Secret", "p-secret");
    assert_error(into_json(with_param.send()), 400, "VALIDATION_ERROR");
    // Counted and logged like every request, under their route.
    let text = app.raw("GET", "/metrics").send().text();
    assert!(
        text.contains(r#"eco_http_requests_total{route="/rankings/overview",method="GET",status="200"} 2"#),
        "{text}"
    );
    assert!(text.contains(r#"eco_http_request_duration_seconds_count{route="/rankings/lowest-co2"} 4"#), "{text}");
    eventually("the plain answers' log lines", || {
        app.logs()
            .lines()
            .filter(|l| l.contains("/rankings/longest-electric-range") && l.contains(r#"key="fast client""#))
            .count()
            >= 3
    });
}

/// The process's `THP_enabled` line in `/proc/<pid>/status` (Linux 6.x), if the kernel shows it.
fn thp_enabled(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("THP_enabled:")).map(|v| v.trim().to_string())
}

#[test]
fn the_service_runs_without_transparent_huge_pages_unless_the_environment_allows_them() {
    let app = start(3, &[], &[]);
    let Some(default) = thp_enabled(app.pid()) else {
        eprintln!("skipped: this kernel does not show THP_enabled in /proc/<pid>/status");
        return;
    };
    assert_eq!(default, "0", "huge pages are off by default");
    assert_eq!(app.get("/rankings/most-economical").0, 200);
    let allowed = start(3, &[], &[("MIMALLOC_ALLOW_THP", "1")]);
    assert_eq!(thp_enabled(allowed.pid()).as_deref(), Some("1"), "MIMALLOC_ALLOW_THP=1 keeps them");
    assert_eq!(allowed.get("/rankings/most-economical").0, 200);
}
