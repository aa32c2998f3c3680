//! The list query language over HTTP (API-CONTRACT §7) for `/catalog/vehicles`,
//! `/insights/efficiency` and `/insights/eco-scores`: `sort` over the items' fields, `fields` to
//! choose the fields (also on `/rankings/custom`), and `cursor` to follow a list page by page at
//! the same cost at any depth, bound to its filters, sort and dataset version.

use crate::engine::filters::{PageRequest, Window};
use crate::engine::order::{KeyColumn, SortKey};
use crate::http::contract::cursor::{self, Cursor};
use crate::http::contract::envelope::Pagination;
use crate::http::contract::error::ApiError;
use crate::http::contract::params::{QueryParams, FILTERS};
use crate::http::formats::encode::Source;

/// The parameters of a list with sort, fields and cursors.
pub const LIST: &[&str] = &["sort", "fields", "cursor"];
/// The parameter of a list with field selection only.
pub const FIELDS: &[&str] = &["fields"];

/// The items' fields, as the list's item type names them.
pub type ItemFields = [(&'static str, Source)];

/// A list request: its sort keys, its fields and which part of the list it asks for.
#[derive(Debug, Clone)]
pub struct ListRequest {
    pub keys: Vec<SortKey>,
    pub fields: Vec<(&'static str, Source)>,
    pub window: Window,
    page: PageRequest,
    cursor: Option<Cursor>,
    binding: String,
}

/// The names in a comma-separated list, refusing empty and repeated ones.
fn names<'a>(param: &str, raw: &'a str) -> Result<Vec<&'a str>, ApiError> {
    let mut out: Vec<&str> = Vec::new();
    for name in raw.split(',').map(str::trim) {
        if name.is_empty() || name == "-" {
            return Err(ApiError::validation(format!("Parâmetro '{param}' tem um nome de campo vazio")));
        }
        let bare = name.strip_prefix('-').unwrap_or(name);
        if out.iter().any(|n| n.strip_prefix('-').unwrap_or(n) == bare) {
            return Err(ApiError::validation(format!("Parâmetro '{param}': campo '{bare}' repetido")));
        }
        out.push(name);
    }
    Ok(out)
}

fn unknown(param: &str, name: &str, item: &ItemFields) -> ApiError {
    let known: Vec<&str> = item.iter().map(|(n, _)| *n).collect();
    ApiError::validation(format!("Parâmetro '{param}': campo '{name}' desconhecido (campos: {})", known.join(", ")))
}

/// `fields=a,b,…`: the named fields of `item`, in the order given (every field without it).
pub fn fields(params: &QueryParams, item: &ItemFields) -> Result<Vec<(&'static str, Source)>, ApiError> {
    let Some(raw) = params.get("fields") else { return Ok(item.to_vec()) };
    names("fields", raw)?
        .into_iter()
        .map(|name| {
            if name.starts_with('-') {
                return Err(unknown("fields", name, item));
            }
            item.iter().find(|(n, _)| *n == name).copied().ok_or_else(|| unknown("fields", name, item))
        })
        .collect()
}

/// `sort=a,-b,…`: sort keys over the fields of `item` (`-` for descending).
pub fn sort_keys(params: &QueryParams, item: &ItemFields) -> Result<Vec<SortKey>, ApiError> {
    let Some(raw) = params.get("sort") else { return Ok(Vec::new()) };
    names("sort", raw)?
        .into_iter()
        .map(|name| {
            let (descending, bare) = match name.strip_prefix('-') {
                Some(bare) => (true, bare),
                None => (false, name),
            };
            let (_, source) = item.iter().find(|(n, _)| *n == bare).ok_or_else(|| unknown("sort", bare, item))?;
            let column = match *source {
                Source::Id => KeyColumn::Id,
                Source::Text(c) => KeyColumn::Text(c),
                Source::I32(c) | Source::F64(c) | Source::Bool(c) => KeyColumn::Value(c),
            };
            Ok(SortKey { column, descending })
        })
        .collect()
}

impl ListRequest {
    /// Parses sort, fields, page and cursor of a list at `path` whose items are `item`. A cursor
    /// must come without `page`, and from this list with the same filters and sort.
    pub fn parse(params: &QueryParams, path: &str, item: &ItemFields) -> Result<ListRequest, ApiError> {
        let page = params.page()?;
        let keys = sort_keys(params, item)?;
        let fields = fields(params, item)?;
        let mut bound: Vec<(String, String)> =
            params.normalised().into_iter().filter(|(k, _)| FILTERS.contains(&k.as_str()) || k == "sort").collect();
        bound.sort();
        let binding = cursor::binding(path, &bound);
        let cursor = match params.get("cursor") {
            None => None,
            Some(token) => {
                if params.get("page").is_some() {
                    return Err(ApiError::validation(
                        "Parâmetro 'cursor' não pode ser combinado com 'page': siga o next_cursor sem page",
                    ));
                }
                let c = Cursor::parse(token)?;
                if c.binding != binding {
                    return Err(ApiError::validation(
                        "Parâmetro 'cursor' foi emitido para outra listagem, outros filtros ou outra ordenação (sort): \
                         repita os mesmos filtros e sort da página anterior",
                    ));
                }
                Some(c)
            }
        };
        let window = match &cursor {
            Some(c) => Window::From { position: c.position, size: page.page_size },
            None => Window::Page(page),
        };
        Ok(ListRequest { keys, fields, window, page, cursor, binding })
    }

    /// 409 DATASET_CHANGED when the cursor was made on another dataset version than `version`.
    pub fn check_version(&self, version: &str) -> Result<(), ApiError> {
        match &self.cursor {
            Some(c) if c.version != version => Err(ApiError::DatasetChanged(c.version.clone())),
            _ => Ok(()),
        }
    }

    /// The answer's pagination over a list of `total` items of dataset `version`, with the
    /// cursor of the next page (null at the end).
    pub fn pagination(&self, version: &str, total: usize) -> Pagination {
        let range = self.window.range(total);
        let next = (range.end < total).then(|| {
            Cursor { version: version.to_string(), binding: self.binding.clone(), position: range.end }.token()
        });
        let size = self.page.page_size;
        let page = match self.window {
            Window::Page(p) => p.page,
            Window::From { position, .. } => position as u64 / size as u64 + 1,
        };
        let mut p = Pagination::of(PageRequest { page, page_size: size }, total);
        p.next_cursor = Some(next);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::formats::encode::CATALOG_VEHICLE;

    fn parse(q: &str) -> Result<ListRequest, ApiError> {
        let params = QueryParams::parse(Some(q), &[FILTERS, crate::http::contract::params::PAGING, LIST]).unwrap();
        ListRequest::parse(&params, "/catalog/vehicles", CATALOG_VEHICLE)
    }

    fn message(r: Result<ListRequest, ApiError>) -> String {
        match r.unwrap_err() {
            ApiError::Validation(m) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sort_and_fields_name_known_fields_once() {
        let l = parse("sort=-ano,marca&fields=id,marca").unwrap();
        assert_eq!(
            l.keys,
            vec![
                SortKey { column: KeyColumn::Value("ano"), descending: true },
                SortKey { column: KeyColumn::Text("marca"), descending: false }
            ]
        );
        assert_eq!(l.fields.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec!["id", "marca"]);
        assert!(message(parse("sort=cor")).contains("campo 'cor' desconhecido"));
        assert!(message(parse("sort=ano,-ano")).contains("campo 'ano' repetido"));
        assert!(message(parse("fields=id,id")).contains("campo 'id' repetido"));
        assert!(message(parse("fields=-id")).contains("desconhecido"));
        assert!(message(parse("sort=ano,")).contains("vazio"));
    }

    #[test]
    fn cursors_follow_the_list_they_were_made_for() {
        let first = parse("marca=Fiat&sort=-ano&page_size=2").unwrap();
        let p = first.pagination("v1", 5);
        let token = p.next_cursor.clone().unwrap().unwrap();
        let next = parse(&format!("page_size=3&sort=-ano&marca=Fiat&cursor={token}")).unwrap();
        assert_eq!(next.window, Window::From { position: 2, size: 3 });
        assert!(next.check_version("v1").is_ok());
        assert_eq!(next.check_version("v2"), Err(ApiError::DatasetChanged("v1".into())));
        let last = next.pagination("v1", 5);
        assert_eq!(last.next_cursor, Some(None), "nothing follows the exactly full last page");
        assert!(message(parse(&format!("marca=Fiat&sort=ano&cursor={token}"))).contains("outra ordenação"));
        assert!(message(parse(&format!("marca=VW&sort=-ano&cursor={token}"))).contains("outros filtros"));
        assert!(message(parse(&format!("marca=Fiat&sort=-ano&page=2&cursor={token}"))).contains("'page'"));
        assert!(message(parse("cursor=abc")).contains("'cursor' inválido"));
    }
}
