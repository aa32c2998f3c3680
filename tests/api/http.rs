//! A minimal blocking HTTP/1.1 client over `std::net` for the black-box tests and the benchmark
//! (one connection per request, `Connection: close`). It keeps the test build free of extra
//! dependencies, so tests and the service share one compiled dependency graph.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

/// A request being built: `Req::new("GET", base, path).header(k, v).body(b).send()`.
#[derive(Debug, Clone)]
pub struct Req {
    method: String,
    addr: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A complete response.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Req {
    /// `base` is `http://host:port`; `path` starts with `/` and may carry a raw query string.
    pub fn new(method: &str, base: &str, path: &str) -> Req {
        let addr = base.trim_start_matches("http://").trim_end_matches('/').to_string();
        Req { method: method.to_string(), addr, path: path.to_string(), headers: Vec::new(), body: Vec::new() }
    }

    pub fn header(mut self, name: &str, value: &str) -> Req {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Req {
        self.body = body.into();
        self
    }

    /// Sends the request and reads the whole response; panics on I/O errors.
    pub fn send(self) -> Resp {
        self.try_send().unwrap_or_else(|e| panic!("{} {}: {e}", self.method, self.path))
    }

    pub fn try_send(&self) -> std::io::Result<Resp> {
        let mut stream = TcpStream::connect(&self.addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        stream.set_nodelay(true)?;
        let mut head =
            format!("{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", self.method, self.path, self.addr);
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !self.body.is_empty() || self.method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        stream.write_all(&bytes)?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        parse(&raw).ok_or_else(|| std::io::Error::other("malformed HTTP response"))
    }
}

fn parse(raw: &[u8]) -> Option<Resp> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked { dechunk(rest)? } else { rest.to_vec() };
    Some(Resp { status, headers, body })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

impl Resp {
    /// The first value of a header (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; panics with the body when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|_| panic!("not JSON ({}): {}", self.status, self.text()))
    }
}

#[cfg(test)]
mod tests {
    #[allow(unused_imports)] // unused when the benchmark includes this file without a harness
    use super::*;

    #[test]
    fn parses_plain_and_chunked_bodies() {
        let r = parse(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello").unwrap();
        assert_eq!((r.status, r.header("content-type"), r.text().as_str()), (200, Some("text/plain"), "hello"));
        let r = parse(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
            .unwrap();
        assert_eq!((r.status, r.text().as_str()), (404, "abcde"));
    }
}
