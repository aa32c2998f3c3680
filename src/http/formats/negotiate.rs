//! Which representation an answer takes: the `format` query parameter when given (it wins over
//! `Accept`), otherwise the best match of the `Accept` header among the formats the operation
//! offers (q-values, `type/*` and `*/*` wildcards; ties go to the range listed first, then to the
//! operation's default). No `Accept`, or one without a parseable range, means the default.

use axum::http::{header, HeaderMap};

use crate::http::contract::error::ApiError;
use crate::http::contract::params::QueryParams;

/// The query parameter that picks a format.
pub const PARAM: &[&str] = &["format"];

/// A representation of a list answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Parquet,
    Arrow,
    Ndjson,
}

/// The formats of the list operations, the default (JSON) first.
pub const LIST: &[Format] = &[Format::Json, Format::Csv, Format::Parquet, Format::Arrow, Format::Ndjson];
/// The formats of `GET /catalog/export`, the default (CSV) first.
pub const EXPORT: &[Format] = &[Format::Csv, Format::Parquet, Format::Arrow, Format::Ndjson];

impl Format {
    /// The value of the `format` parameter.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
            Format::Ndjson => "ndjson",
        }
    }

    /// The media type (as documented and matched against `Accept`).
    pub const fn media_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Csv => "text/csv",
            Format::Parquet => "application/vnd.apache.parquet",
            Format::Arrow => "application/vnd.apache.arrow.stream",
            Format::Ndjson => "application/x-ndjson",
        }
    }

    /// The `Content-Type` sent (the media type with its parameters).
    pub const fn content_type(self) -> &'static str {
        match self {
            Format::Csv => "text/csv; charset=utf-8; header=present",
            other => other.media_type(),
        }
    }

    /// File name extension of a download.
    pub const fn extension(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Parquet => "parquet",
            Format::Arrow => "arrows",
            Format::Ndjson => "ndjson",
        }
    }
}

/// The format of one request to an operation offering `offered` (its default first): the
/// `format` parameter (400 when it names no offered format), else `Accept` (406 when it accepts
/// none of them).
pub fn negotiate(params: &QueryParams, headers: &HeaderMap, offered: &[Format]) -> Result<Format, ApiError> {
    if let Some(raw) = params.get(PARAM[0]) {
        return offered.iter().copied().find(|f| f.name() == raw).ok_or_else(|| {
            let names: Vec<&str> = offered.iter().map(|f| f.name()).collect();
            ApiError::validation(format!(
                "Parâmetro 'format' deve ser um de: {} (recebido: '{}')",
                names.join(", "),
                raw.chars().take(40).collect::<String>()
            ))
        });
    }
    from_accept(headers, offered).ok_or_else(|| {
        let types: Vec<&str> = offered.iter().map(|f| f.media_type()).collect();
        ApiError::NotAcceptable(format!(
            "Nenhum formato aceito pelo cabeçalho Accept pode ser produzido por este endpoint (disponíveis: {})",
            types.join(", ")
        ))
    })
}

/// Whether a request's `Accept` picks JSON among the list formats (so an answer's tag can be
/// decided before the handler runs; see `middleware::authenticate`).
pub fn accepts_json_first(headers: &HeaderMap) -> bool {
    from_accept(headers, LIST) == Some(Format::Json)
}

/// One media range of an `Accept` header.
#[derive(Debug, Clone, PartialEq)]
struct Range {
    kind: String,
    subtype: String,
    q: f32,
}

impl Range {
    /// `type/subtype[;param]*[;q=x]`, lower-cased; `None` when malformed.
    fn parse(text: &str) -> Option<Range> {
        let mut parts = text.split(';').map(str::trim);
        let (kind, subtype) = parts.next()?.split_once('/')?;
        let (kind, subtype) = (kind.trim().to_ascii_lowercase(), subtype.trim().to_ascii_lowercase());
        if kind.is_empty() || subtype.is_empty() || (kind == "*" && subtype != "*") {
            return None;
        }
        let mut q = 1.0;
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                if k.trim().eq_ignore_ascii_case("q") {
                    q = v.trim().parse::<f32>().ok().filter(|q| (0.0..=1.0).contains(q))?;
                }
            }
        }
        Some(Range { kind, subtype, q })
    }

    /// 3 for an exact match, 2 for `type/*`, 1 for `*/*`, 0 for no match.
    fn specificity(&self, format: Format) -> u8 {
        let (kind, subtype) = format.media_type().split_once('/').unwrap_or_default();
        match (self.kind.as_str(), self.subtype.as_str()) {
            ("*", "*") => 1,
            (k, "*") if k == kind => 2,
            (k, s) if k == kind && s == subtype => 3,
            _ => 0,
        }
    }
}

/// The best offered format for `Accept`: for each format, the most specific range that matches
/// it decides its quality; the highest quality wins, then the earliest range, then the offered
/// order. `None` when every offered format has quality 0 or matches nothing.
fn from_accept(headers: &HeaderMap, offered: &[Format]) -> Option<Format> {
    let ranges: Vec<Range> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(Range::parse)
        .collect();
    if ranges.is_empty() {
        return offered.first().copied();
    }
    let mut best: Option<(Format, f32, usize)> = None;
    for &format in offered {
        let mut decisive: Option<(usize, &Range, u8)> = None;
        for (position, range) in ranges.iter().enumerate() {
            let s = range.specificity(format);
            if s > 0 && decisive.is_none_or(|(_, _, d)| s > d) {
                decisive = Some((position, range, s));
            }
        }
        let Some((position, range, _)) = decisive else { continue };
        if range.q <= 0.0 {
            continue;
        }
        if best.is_none_or(|(_, q, p)| range.q > q || (range.q == q && position < p)) {
            best = Some((format, range.q, position));
        }
    }
    best.map(|(f, _, _)| f)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn accept(values: &[&'static str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT, HeaderValue::from_static(v));
        }
        h
    }

    fn pick(values: &[&'static str], offered: &[Format]) -> Option<Format> {
        from_accept(&accept(values), offered)
    }

    #[test]
    fn accept_picks_by_quality_position_and_specificity() {
        use Format::*;
        assert_eq!(pick(&[], LIST), Some(Json));
        assert_eq!(pick(&["*/*"], LIST), Some(Json));
        assert_eq!(pick(&["*/*"], EXPORT), Some(Csv));
        assert_eq!(pick(&["text/csv"], LIST), Some(Csv));
        assert_eq!(pick(&["TEXT/CSV; charset=utf-8"], LIST), Some(Csv));
        assert_eq!(pick(&["text/*"], LIST), Some(Csv));
        assert_eq!(pick(&["application/vnd.apache.parquet"], LIST), Some(Parquet));
        assert_eq!(pick(&["application/vnd.apache.arrow.stream"], LIST), Some(Arrow));
        assert_eq!(pick(&["application/x-ndjson"], LIST), Some(Ndjson));
        assert_eq!(pick(&["text/csv;q=0.5, application/x-ndjson"], LIST), Some(Ndjson));
        assert_eq!(pick(&["text/csv, application/json"], LIST), Some(Csv), "earliest range on equal quality");
        assert_eq!(pick(&["application/json", "text/csv"], LIST), Some(Json), "several header lines");
        assert_eq!(
            pick(&["*/*;q=0.1, text/csv;q=0"], EXPORT),
            Some(Parquet),
            "q=0 excludes, the wildcard takes the rest"
        );
        assert_eq!(pick(&["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"], LIST), Some(Json));
        assert_eq!(pick(&["image/png"], LIST), None);
        assert_eq!(pick(&["application/json"], EXPORT), None);
        assert_eq!(pick(&["text/csv;q=0"], LIST), None);
        assert_eq!(pick(&["garbage"], LIST), Some(Json), "nothing parseable is no preference");
        assert_eq!(pick(&["text/csv;q=abc, application/x-ndjson"], LIST), Some(Ndjson), "a bad q drops its range");
    }

    #[test]
    fn the_parameter_wins_and_is_validated() {
        let params = |q: &str| QueryParams::parse(Some(q), &[PARAM]).unwrap();
        let png = accept(&["image/png"]);
        assert_eq!(negotiate(&params("format=parquet"), &png, LIST), Ok(Format::Parquet));
        assert_eq!(negotiate(&params("format=json"), &HeaderMap::new(), LIST), Ok(Format::Json));
        match negotiate(&params("format=xml"), &HeaderMap::new(), LIST) {
            Err(ApiError::Validation(m)) => {
                assert!(m.contains("'format'") && m.contains("xml") && m.contains("ndjson"), "{m}")
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(negotiate(&params("format=json"), &HeaderMap::new(), EXPORT), Err(ApiError::Validation(_))));
        match negotiate(&QueryParams::default(), &png, LIST) {
            Err(e @ ApiError::NotAcceptable(_)) => assert_eq!(e.status().as_u16(), 406),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn json_first_decides_the_early_tag() {
        assert!(accepts_json_first(&HeaderMap::new()));
        assert!(accepts_json_first(&accept(&["*/*"])));
        assert!(!accepts_json_first(&accept(&["text/csv"])));
        assert!(!accepts_json_first(&accept(&["image/png"])));
    }
}
