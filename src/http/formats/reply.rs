//! The answer of a list operation in its negotiated format. JSON keeps the envelope; the other
//! formats carry only the rows, so what the envelope's meta would say moves to headers:
//! `X-Total-Count` (the items of the whole list: every page) on every list answer, and `Link` with
//! the `next` / `prev` pages on paginated ones (RFC 8288, targets relative to the request).

use axum::http::{header, HeaderValue, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::http::contract::envelope::Answers;
use crate::http::contract::state::DATASET_VERSION;
use crate::http::wire::Pagination;

use super::{Format, TOTAL_COUNT};

/// A list answer: `data` is the envelope's `data.data` for JSON, the whole body otherwise;
/// `total` is the length of the whole list (the pagination total on paginated operations).
/// Header carrying `meta.pagination.next_cursor` (for CSV, NDJSON, Parquet and Arrow answers,
/// which have no `meta`; JSON answers carry it too).
pub const NEXT_CURSOR: &str = "x-next-cursor";

pub fn list_reply(
    ctx: &impl Answers,
    uri: &Uri,
    format: Format,
    data: Vec<u8>,
    filters: Option<Map<String, Value>>,
    pagination: Option<Pagination>,
    total: usize,
) -> Response {
    let ctx = ctx.answering();
    let mut res = match format {
        Format::Json => ctx.reply_json(data, filters, pagination.clone()).into_response(),
        other => {
            let mut res = data.into_response();
            let h = res.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(other.content_type()));
            if let Ok(v) = HeaderValue::from_str(ctx.version) {
                h.insert(DATASET_VERSION, v);
            }
            res
        }
    };
    let h = res.headers_mut();
    h.insert(TOTAL_COUNT, HeaderValue::from(total as u64));
    if let Some(Some(next)) = pagination.as_ref().and_then(|p| p.next_cursor.as_ref()) {
        if let Ok(v) = HeaderValue::from_str(next) {
            h.insert(NEXT_CURSOR, v);
        }
    }
    if let Some(link) = pagination.and_then(|p| links(uri, &p)) {
        if let Ok(v) = HeaderValue::from_str(&link) {
            h.insert(header::LINK, v);
        }
    }
    res
}

/// `Link` of a page: `next` when a later page holds items, `prev` when the page is not the first
/// (for a page past the end, `prev` is the last page that holds items, or page 1).
///
/// A page asked by cursor links only `next`, by the next cursor (no page numbers).
pub fn links(uri: &Uri, p: &Pagination) -> Option<String> {
    let by_cursor = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()).any(|(k, _)| k == "cursor");
    if by_cursor {
        let next = p.next_cursor.as_ref()?.as_ref()?;
        return Some(format!("<{}>; rel=\"next\"", cursor_target(uri, next)));
    }
    let mut rels = Vec::new();
    if p.page < p.total_pages {
        rels.push((p.page + 1, "next"));
    }
    if p.page > 1 {
        rels.push(((p.page - 1).min(p.total_pages).max(1), "prev"));
    }
    if rels.is_empty() {
        return None;
    }
    let parts: Vec<String> =
        rels.into_iter().map(|(page, rel)| format!("<{}>; rel=\"{rel}\"", page_target(uri, page))).collect();
    Some(parts.join(", "))
}

/// The request's path and query with `cursor` set to `cursor` (other parameters kept, in order).
fn cursor_target(uri: &Uri, cursor: &str) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()) {
        if k == "cursor" {
            query.append_pair("cursor", cursor);
        } else if !(k.is_empty() && v.is_empty()) {
            query.append_pair(&k, &v);
        }
    }
    format!("{}?{}", uri.path(), query.finish())
}

/// The request's path and query with `page` set to `page` (other parameters kept, in order).
fn page_target(uri: &Uri, page: u64) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    let mut replaced = false;
    for (k, v) in form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()) {
        if k == "page" {
            if !replaced {
                query.append_pair("page", &page.to_string());
                replaced = true;
            }
        } else if !(k.is_empty() && v.is_empty()) {
            query.append_pair(&k, &v);
        }
    }
    if !replaced {
        query.append_pair("page", &page.to_string());
    }
    format!("{}?{}", uri.path(), query.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pagination(page: u64, total: u64) -> Pagination {
        Pagination { page, page_size: 10, total, total_pages: total.div_ceil(10), next_cursor: None }
    }

    #[test]
    fn links_name_next_and_prev_keeping_the_other_parameters() {
        let uri: Uri = "/catalog/vehicles?marca=Citro%C3%ABn&page=2&page_size=10&format=csv".parse().unwrap();
        assert_eq!(
            links(&uri, &pagination(2, 35)).unwrap(),
            "</catalog/vehicles?marca=Citro%C3%ABn&page=3&page_size=10&format=csv>; rel=\"next\", \
             </catalog/vehicles?marca=Citro%C3%ABn&page=1&page_size=10&format=csv>; rel=\"prev\""
        );
        let first: Uri = "/insights/efficiency".parse().unwrap();
        assert_eq!(links(&first, &pagination(1, 35)).unwrap(), "</insights/efficiency?page=2>; rel=\"next\"");
        assert_eq!(links(&first, &pagination(1, 5)), None);
        let past: Uri = "/insights/efficiency?page=9".parse().unwrap();
        assert_eq!(links(&past, &pagination(9, 35)).unwrap(), "</insights/efficiency?page=4>; rel=\"prev\"");
        assert_eq!(links(&past, &pagination(9, 0)).unwrap(), "</insights/efficiency?page=1>; rel=\"prev\"");
    }
}
