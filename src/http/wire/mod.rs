//! What the API publishes: the answers' field names, serde renames and OpenAPI schemas, built
//! from the engine's domain values (vehicles, rows, aggregates). The engine never sees them.

pub mod catalog;
pub mod compare;
pub mod facets;
pub mod insights;
pub mod labels;
pub mod methodology;
pub mod rankings;
pub mod vehicles;

use serde_json::{Map, Value};

use crate::engine::filters::Filters;

pub use crate::http::contract::envelope::{Pagination, PerfilCusto};

/// `meta.filters_applied` of the common filters: the filters as received, with typed values.
pub fn filters_applied(filters: &Filters) -> Map<String, Value> {
    let mut m = Map::new();
    for f in &filters.text {
        m.insert(f.param.to_string(), Value::String(f.value.clone()));
    }
    for (k, v) in [("ano", filters.ano), ("ano_min", filters.ano_min), ("ano_max", filters.ano_max)] {
        if let Some(v) = v {
            m.insert(k.to_string(), Value::from(v));
        }
    }
    for r in &filters.ranges {
        for (suffix, bound) in [("min", r.min), ("max", r.max)] {
            if let Some(v) = bound {
                m.insert(format!("{}_{suffix}", r.stem), Value::from(v));
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::filters::{PageRequest, TextFilter};

    #[test]
    fn applied_echoes_typed_values() {
        let f = Filters {
            text: vec![TextFilter::new("marca", "Fiat").unwrap()],
            ano_min: Some(2015),
            ..Default::default()
        };
        assert_eq!(serde_json::to_string(&filters_applied(&f)).unwrap(), r#"{"marca":"Fiat","ano_min":2015}"#);
    }

    #[test]
    fn pagination_counts_pages() {
        let p = PageRequest { page: 3, page_size: 2 };
        assert_eq!((Pagination::of(p, 3).total, Pagination::of(p, 3).total_pages), (3, 2));
        let last = PageRequest { page: u64::MAX, page_size: 100 };
        assert_eq!(Pagination::of(last, 1).total_pages, 1);
        assert_eq!(Pagination::of(last, 0).total_pages, 0);
    }
}
