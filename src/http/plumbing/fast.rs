//! Dataset-only answers served ahead of the router.
//!
//! The fixed rankings and the overview take no parameter and depend only on the dataset: their
//! `data.data` is serialised once per snapshot and their ETag is known before any request. A
//! plain `GET` of one of them — no query, no conditional, no compression asked, credentials
//! that pass — is answered here, by the serving loop before the router (none of axum's routing
//! or layers), with exactly the answer the router and its layers would give (same status, headers and body; only
//! the per-request `meta`, the request id and the quota state differ from one request to the
//! next). Everything else — a refused key, a parameter, `If-None-Match`, `Accept-Encoding`, a
//! dataset not loaded yet, no capacity left — goes down the full stack, which decides it.

use std::sync::Arc;

use axum::http::{header, HeaderMap, Method, Request};
use axum::response::Response;
use uuid::Uuid;

use crate::engine::snapshot::Snapshot;

use crate::http::contract::envelope::RawReply;
use crate::http::contract::headers::{cache_headers, etag, granted};
use crate::http::contract::state::AppState;
use crate::http::plumbing::limits::{header_bytes, Guard, MAX_HEADER_BYTES};
use crate::http::plumbing::middleware::{Exchange, Front};
use crate::http::wire::rankings::{fixed_answers, FixedAnswers};

/// Picks the `data.data` of one route out of a snapshot's fixed answers.
type Pick = fn(&FixedAnswers) -> &Arc<str>;

/// The routes answered here, with the part of the fixed answers each one serves.
const ROUTES: [(&str, Pick); 4] = [
    ("/rankings/most-economical", |a| &a.most_economical),
    ("/rankings/lowest-co2", |a| &a.lowest_co2),
    ("/rankings/longest-electric-range", |a| &a.longest_electric_range),
    ("/rankings/overview", |a| &a.overview),
];

/// The answers of one snapshot: for each route, its `data.data` and its ETag.
struct Answers {
    entries: Vec<(&'static str, Arc<str>, String)>,
}

fn answers(snapshot: &Snapshot) -> Option<Arc<Answers>> {
    snapshot
        .memo("http/fast", || {
            let fixed = fixed_answers(snapshot)?;
            let version = &snapshot.info.version;
            let entries = ROUTES
                .iter()
                .map(|(path, data)| (*path, Arc::clone(data(&fixed)), etag(version, path, None)))
                .collect();
            Ok(Answers { entries })
        })
        .ok()
}

/// Prepares the answers of a new snapshot before it serves (see `http::warm`).
pub fn warm(snapshot: &Snapshot) {
    let _ = answers(snapshot);
}

/// The whole answer to `req` — request id, metrics and access log included, as the router's
/// `request_context` gives them — when it is a plain request of a dataset-only route that
/// passes the credentials; `None` leaves the request to the router.
pub fn exchange<B>(front: &Front, req: &Request<B>) -> Option<Response> {
    let index = candidate(req)?;
    let exchange = Exchange::begin(req.method(), req.headers());
    let uuid = exchange.uuid;
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        answer(&front.state, &front.guard, req.headers(), index, uuid)
    })) {
        Ok(Some((res, route))) => Some(exchange.finish(res, route)),
        // Dropped unfinished: the router counts and logs the request.
        Ok(None) => None,
        Err(payload) => Some(exchange.finish(crate::http::plumbing::panics::answer(payload), ROUTES[index].0)),
    }
}

/// The index in [`ROUTES`] of a request that may be answered here: a `GET` of one of them, no
/// query, no compression or conditional asked, headers within the limit.
fn candidate<B>(req: &Request<B>) -> Option<usize> {
    if req.method() != Method::GET || req.uri().query().is_some() {
        return None;
    }
    let path = req.uri().path();
    let index = ROUTES.iter().position(|(route, _)| *route == path)?;
    let headers = req.headers();
    if headers.contains_key(header::ACCEPT_ENCODING)
        || headers.contains_key(header::IF_NONE_MATCH)
        || header_bytes(req) > MAX_HEADER_BYTES
    {
        return None;
    }
    Some(index)
}

/// The answer to candidate `req` (route `index`), with its route template; `None` when the
/// dataset, the capacity or the credentials say the router must decide.
fn answer(
    state: &AppState,
    guard: &Guard,
    headers: &HeaderMap,
    index: usize,
    request_id: Uuid,
) -> Option<(Response, &'static str)> {
    state.store().with_current(|snapshot| {
        let snapshot = snapshot?;
        ANSWERS.with(|cached| {
            let mut cached = cached.borrow_mut();
            // The answers of the serving snapshot, kept per serving thread: no lock and no shared
            // reference count per request. The weak reference keeps the snapshot's allocation
            // (not its data) alive, so an equal address is the same snapshot.
            if cached.as_ref().is_none_or(|(of, _)| of.as_ptr() != Arc::as_ptr(snapshot)) {
                *cached = Some((Arc::downgrade(snapshot), answers(snapshot)?));
            }
            let (_, answers) = cached.as_ref()?;
            let (route, data, tag) = answers.entries.get(index)?;
            // A request over the capacity is refused by the full stack.
            let _permit = guard.try_enter()?;
            // Only a granted request is answered here: a refusal takes no token, so the full stack
            // refuses it the same way.
            let key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
            let secret = headers.get("x-api-secret").and_then(|v| v.to_str().ok());
            let grant = state.with_credentials(|c| c.authorize(key, secret)).ok()?;
            let mut res = RawReply::respond(data, request_id, &snapshot.info.version);
            cache_headers(&mut res, tag);
            granted(&mut res, grant);
            Some((res, *route))
        })
    })
}

thread_local! {
    /// The snapshot whose answers this serving thread last used, and those answers.
    static ANSWERS: std::cell::RefCell<Option<(std::sync::Weak<Snapshot>, Arc<Answers>)>> =
        const { std::cell::RefCell::new(None) };
}
