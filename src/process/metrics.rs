//! The process's metrics, encoded by prometheus-client in the OpenMetrics text format (served by
//! `GET /metrics`). Every front door records here.
//!
//! The request metrics live in a static (routes, methods and statuses are closed sets, so memory
//! is bounded); the dataset figures are handed in at scrape time ([`DatasetFigures`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use chrono::{DateTime, Utc};
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// Content type of the OpenMetrics text format prometheus-client writes.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Route label of requests that matched no route.
pub const UNMATCHED: &str = "unmatched";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

type HistogramFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

struct HttpMetrics {
    requests: Family<RequestLabels, Counter>,
    duration: HistogramFamily,
    in_flight: Gauge,
    rate_limited: Counter,
    pg_queries: Family<ResultLabels, Counter>,
    flight_queries: Family<ResultLabels, Counter>,
    source_polls: Family<ResultLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

/// The outcomes a PostgreSQL-protocol query is counted under (a closed set).
pub const PG_RESULTS: [&str; 5] = ["ok", "invalid", "refused", "stopped", "error"];

fn duration_histogram() -> Histogram {
    // 0.5 ms to about 16 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

static METRICS: LazyLock<HttpMetrics> = LazyLock::new(|| HttpMetrics {
    requests: Family::default(),
    duration: Family::new_with_constructor(duration_histogram as fn() -> Histogram),
    in_flight: Gauge::default(),
    rate_limited: Counter::default(),
    pg_queries: Family::default(),
    flight_queries: Family::default(),
    source_polls: Family::default(),
});

/// The results of one poll of a remote source.
pub const SOURCE_POLL_RESULTS: [&str; 3] = ["unchanged", "downloaded", "error"];

/// Counts one poll of the remote source (`result`: one of [`SOURCE_POLL_RESULTS`]).
pub fn record_source_poll(result: &'static str) {
    let result = SOURCE_POLL_RESULTS.iter().copied().find(|r| *r == result).unwrap_or("error");
    METRICS.source_polls.get_or_create(&ResultLabels { result }).inc();
}

/// Counts one query answered over the PostgreSQL protocol (`result`: one of [`PG_RESULTS`]).
pub fn pg_query(result: &'static str) {
    let result = PG_RESULTS.iter().copied().find(|r| *r == result).unwrap_or("error");
    METRICS.pg_queries.get_or_create(&ResultLabels { result }).inc();
}

/// Counts one query answered over Arrow Flight SQL (`result`: one of [`PG_RESULTS`], the same
/// closed set as the PostgreSQL door's).
pub fn flight_query(result: &'static str) {
    let result = PG_RESULTS.iter().copied().find(|r| *r == result).unwrap_or("error");
    METRICS.flight_queries.get_or_create(&ResultLabels { result }).inc();
}

/// Log lines dropped because the log writer fell behind (see `crate::logging`).
static LOG_LINES_DROPPED: AtomicU64 = AtomicU64::new(0);

/// Counts one answer `429 RATE_LIMITED`.
pub fn rate_limited() {
    METRICS.rate_limited.inc();
}

/// Counts one log line dropped instead of blocking a request.
pub fn log_line_dropped() {
    LOG_LINES_DROPPED.fetch_add(1, Ordering::Relaxed);
}

/// The method label: the standard methods by name, anything else as `other`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}

/// The series of one route, as a thread keeps them at hand.
struct RouteSeries {
    duration: Histogram,
    requests: Vec<((&'static str, u16), Counter)>,
}

thread_local! {
    /// Handles on the series this thread has recorded, by route (routes, methods and statuses
    /// are closed sets): a request is counted without taking the families' locks or allocating.
    static SERIES: std::cell::RefCell<std::collections::HashMap<String, RouteSeries>> = Default::default();
}

/// Records one answered request: `route` is the matched path template (or [`UNMATCHED`]).
pub fn observe(route: &str, method: &Method, status: StatusCode, elapsed: Duration) {
    let (method, status) = (method_label(method), status.as_u16());
    SERIES.with_borrow_mut(|series| {
        if !series.contains_key(route) {
            let duration = METRICS.duration.get_or_create(&RouteLabels { route: route.to_string() }).clone();
            series.insert(route.to_string(), RouteSeries { duration, requests: Vec::new() });
        }
        let Some(entry) = series.get_mut(route) else { return };
        entry.duration.observe(elapsed.as_secs_f64());
        match entry.requests.iter().find(|(k, _)| *k == (method, status)) {
            Some((_, counter)) => {
                counter.inc();
            }
            None => {
                let labels = RequestLabels { route: route.to_string(), method, status };
                let counter = METRICS.requests.get_or_create(&labels).clone();
                counter.inc();
                entry.requests.push(((method, status), counter));
            }
        }
    });
}

/// A request in flight, counted in `eco_http_in_flight` until dropped.
pub struct InFlight(());

impl InFlight {
    pub fn enter() -> InFlight {
        METRICS.in_flight.inc();
        InFlight(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        METRICS.in_flight.dec();
    }
}

/// The dataset being served, as the metrics show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Serving {
    pub rows: usize,
    pub version: String,
    pub loaded_at: DateTime<Utc>,
}

/// The dataset figures at scrape time: the dataset serving (if any) and the loads so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatasetFigures {
    pub serving: Option<Serving>,
    pub reloads_ok: u64,
    pub reloads_refused: u64,
    /// The remote source, when the export is pulled from one.
    pub source: Option<SourceFigures>,
}

/// A remote source as the metrics show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFigures {
    pub reachable: bool,
    /// Since when its polls fail.
    pub unreachable_since: Option<DateTime<Utc>>,
}

/// The metrics text: the request metrics plus the dataset figures now.
pub fn render(dataset: &DatasetFigures) -> Result<String, std::fmt::Error> {
    let m = &*METRICS;
    let mut r = Registry::default();
    r.register("eco_http_requests", "HTTP requests answered, by route template, method and status", m.requests.clone());
    r.register(
        "eco_http_request_duration_seconds",
        "Time from the request head to the answer's head, by route template",
        m.duration.clone(),
    );
    r.register("eco_http_in_flight", "HTTP requests being handled now", m.in_flight.clone());
    r.register(
        "eco_pg_queries",
        "Queries answered over the PostgreSQL protocol, by result (ok, invalid, refused, stopped, error)",
        m.pg_queries.clone(),
    );
    r.register(
        "eco_flight_queries",
        "Queries answered over Arrow Flight SQL, by result (ok, invalid, refused, stopped, error)",
        m.flight_queries.clone(),
    );
    r.register(
        "eco_rate_limited",
        "Requests answered 429 RATE_LIMITED (a key's quota exhausted)",
        m.rate_limited.clone(),
    );
    let dropped = Counter::<u64>::default();
    dropped.inc_by(LOG_LINES_DROPPED.load(Ordering::Relaxed));
    r.register("eco_log_lines_dropped", "Log lines dropped because the log writer fell behind", dropped);
    if let Some(snapshot) = &dataset.serving {
        let rows = Gauge::<i64>::default();
        rows.set(i64::try_from(snapshot.rows).unwrap_or(i64::MAX));
        r.register("eco_dataset_rows", "Vehicles in the dataset being served", rows);
        let info = Family::<Vec<(String, String)>, Gauge>::default();
        info.get_or_create(&vec![("version".to_string(), snapshot.version.clone())]).set(1);
        r.register("eco_dataset_info", "The dataset being served (value 1), by version", info);
        let loaded = Gauge::<f64, AtomicU64>::default();
        loaded.set(snapshot.loaded_at.timestamp_millis() as f64 / 1000.0);
        r.register(
            "eco_dataset_loaded_timestamp_seconds",
            "When the dataset being served was loaded (Unix time)",
            loaded,
        );
    }
    let (ok, refused) = (dataset.reloads_ok, dataset.reloads_refused);
    let reloads = Family::<Vec<(String, String)>, Counter>::default();
    reloads.get_or_create(&vec![("result".to_string(), "ok".to_string())]).inc_by(ok);
    reloads.get_or_create(&vec![("result".to_string(), "refused".to_string())]).inc_by(refused);
    r.register("eco_dataset_reloads", "Loads of the data file (start-up and reloads), by result", reloads);
    if let Some(source) = &dataset.source {
        r.register(
            "eco_source_polls",
            "Polls of the remote source (--data s3:// or https://), by result (unchanged, downloaded, error)",
            m.source_polls.clone(),
        );
        let up = Gauge::<i64>::default();
        up.set(i64::from(source.reachable));
        r.register(
            "eco_source_reachable",
            "Whether the last poll of the remote source reached the object (1) or not (0)",
            up,
        );
        let since = Gauge::<f64, AtomicU64>::default();
        since.set(source.unreachable_since.map(|t| t.timestamp_millis() as f64 / 1000.0).unwrap_or(0.0));
        r.register(
            "eco_source_unreachable_since_timestamp_seconds",
            "Since when the remote source's polls fail (Unix time; 0 while they succeed)",
            since,
        );
    }
    let mut out = String::new();
    encode(&mut out, &r)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_request_and_dataset_metrics() {
        observe("/x/{id}", &Method::GET, StatusCode::OK, Duration::from_millis(3));
        observe(UNMATCHED, &Method::from_bytes(b"BREW").unwrap(), StatusCode::NOT_FOUND, Duration::from_millis(1));
        rate_limited();
        let text = render(&DatasetFigures::default()).unwrap();
        assert!(text.contains(r#"eco_http_requests_total{route="/x/{id}",method="GET",status="200"} 1"#), "{text}");
        assert!(text.contains(r#"eco_http_requests_total{route="unmatched",method="other",status="404"} 1"#), "{text}");
        assert!(text.contains(r#"eco_http_request_duration_seconds_count{route="/x/{id}"} "#), "{text}");
        assert!(text.contains("eco_rate_limited_total "), "{text}");
        assert!(text.contains(r#"eco_dataset_reloads_total{result="refused"} 0"#), "{text}");
        assert!(!text.contains("eco_dataset_rows"), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }
}
