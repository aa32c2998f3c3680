//! Query-string parsing: raw pairs are checked once (unknown, repeated, empty) and turned into
//! the engine's typed, validated values. Every rule answers VALIDATION_ERROR naming the parameter.

use crate::engine::filters::{Filters, PageRequest, RangeFilter, TextFilter, RANGES};
use crate::engine::schema::{ANO_MAX, ANO_MIN};

use crate::http::contract::error::ApiError;

/// The common filter parameters: text, year and range filters (`<stem>_min` / `<stem>_max` for
/// each stem of `engine::filters::RANGES`).
pub const FILTERS: &[&str] = &[
    "marca",
    "modelo",
    "categoria",
    "combustivel",
    "propulsao",
    "transmissao",
    "ano",
    "ano_min",
    "ano_max",
    "eco_score_min",
    "eco_score_max",
    "consumo_min",
    "consumo_max",
    "co2_min",
    "co2_max",
    "autonomia_min",
    "autonomia_max",
    "eficiencia_min",
    "eficiencia_max",
    "autonomia_eletrica_min",
    "autonomia_eletrica_max",
    "custo_min",
    "custo_max",
];
/// The pagination parameters.
pub const PAGING: &[&str] = &["page", "page_size"];
/// Largest page size.
pub const MAX_PAGE_SIZE: i64 = 100;

/// Why a raw (percent-encoded) component cannot be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodingProblem {
    /// A `%` not followed by two hexadecimal digits.
    Percent,
    /// The decoded bytes are not UTF-8.
    Utf8,
}

/// Checks that a raw URL component is valid percent-encoding of UTF-8 text.
pub fn check_encoding(raw: &str) -> Result<(), EncodingProblem> {
    let bytes = raw.as_bytes();
    if !bytes.contains(&b'%') {
        return Ok(());
    }
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let value =
                hex.filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit())).and_then(|h| u8::from_str_radix(h, 16).ok());
            decoded.push(value.ok_or(EncodingProblem::Percent)?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    std::str::from_utf8(&decoded).map(|_| ()).map_err(|_| EncodingProblem::Utf8)
}

/// Rejects a query string with a parameter that is not valid percent-encoded UTF-8, naming it.
fn check_query_encoding(raw: &str) -> Result<(), ApiError> {
    for pair in raw.split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let problem = match (check_encoding(name), check_encoding(value)) {
            (Err(p), _) => {
                return Err(ApiError::validation(match p {
                    EncodingProblem::Percent => "Nome de parâmetro com codificação percentual inválida",
                    EncodingProblem::Utf8 => "Nome de parâmetro não é UTF-8 válido",
                }))
            }
            (Ok(()), Err(p)) => p,
            (Ok(()), Ok(())) => continue,
        };
        let name = form_urlencoded::parse(name.as_bytes()).next().map(|(k, _)| k.into_owned()).unwrap_or_default();
        let rule = match problem {
            EncodingProblem::Percent => "contém codificação percentual inválida",
            EncodingProblem::Utf8 => "não é UTF-8 válido",
        };
        return Err(ApiError::validation(format!("Parâmetro '{name}' {rule}")));
    }
    Ok(())
}

/// The decoded query parameters of one request.
#[derive(Debug, Clone, Default)]
pub struct QueryParams {
    pairs: Vec<(String, String)>,
}

impl QueryParams {
    /// Decodes a raw query string and rejects parameters outside `allowed`, repeated ones and
    /// empty values (and anything that is not valid percent-encoded UTF-8).
    pub fn parse(raw: Option<&str>, allowed: &[&[&str]]) -> Result<QueryParams, ApiError> {
        check_query_encoding(raw.unwrap_or(""))?;
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            let (k, v) = (k.into_owned(), v.into_owned());
            if k.is_empty() && v.is_empty() {
                continue;
            }
            if !allowed.iter().any(|set| set.contains(&k.as_str())) {
                let mut names: Vec<&str> = allowed.iter().flat_map(|s| s.iter().copied()).collect();
                names.sort_unstable();
                let accepted = if names.is_empty() { "nenhum".to_string() } else { names.join(", ") };
                return Err(ApiError::validation(format!(
                    "Parâmetro '{k}' não é aceito por este endpoint (aceitos: {accepted})"
                )));
            }
            if pairs.iter().any(|(p, _)| *p == k) {
                return Err(ApiError::validation(format!("Parâmetro '{k}' informado mais de uma vez")));
            }
            if v.trim().is_empty() {
                return Err(ApiError::validation(format!("Parâmetro '{k}' não pode ser vazio")));
            }
            pairs.push((k, v));
        }
        Ok(QueryParams { pairs })
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The pairs in normalised order (by name), e.g. for cache keys.
    pub fn normalised(&self) -> Vec<(String, String)> {
        let mut p = self.pairs.clone();
        p.sort();
        p
    }

    /// An optional integer within `min..=max`.
    pub fn int(&self, name: &str, min: i64, max: i64) -> Result<Option<i64>, ApiError> {
        let Some(raw) = self.get(name) else { return Ok(None) };
        let value: i64 =
            raw.parse().map_err(|_| ApiError::validation(format!("Parâmetro '{name}' deve ser um número inteiro")))?;
        if value < min || value > max {
            let rule = if max == i64::MAX {
                format!("deve ser maior ou igual a {min}")
            } else {
                format!("deve estar entre {min} e {max}")
            };
            return Err(ApiError::validation(format!("Parâmetro '{name}' {rule}")));
        }
        Ok(Some(value))
    }

    /// An optional value from a closed list.
    pub fn choice<T: Copy>(&self, name: &str, options: &[(&str, T)]) -> Result<Option<T>, ApiError> {
        let Some(raw) = self.get(name) else { return Ok(None) };
        match options.iter().find(|(k, _)| *k == raw) {
            Some((_, v)) => Ok(Some(*v)),
            None => {
                let names: Vec<&str> = options.iter().map(|(k, _)| *k).collect();
                Err(ApiError::validation(format!("Parâmetro '{name}' deve ser um de: {}", names.join(", "))))
            }
        }
    }

    /// The common filters (API-CONTRACT §3).
    pub fn filters(&self) -> Result<Filters, ApiError> {
        let year = |n: &str| -> Result<Option<i32>, ApiError> { Ok(self.int(n, ANO_MIN, ANO_MAX)?.map(|y| y as i32)) };
        let (ano, ano_min, ano_max) = (year("ano")?, year("ano_min")?, year("ano_max")?);
        if ano.is_some() && (ano_min.is_some() || ano_max.is_some()) {
            let other = if ano_min.is_some() { "ano_min" } else { "ano_max" };
            return Err(ApiError::validation(format!(
                "Parâmetro 'ano' não pode ser combinado com '{other}': use ano sozinho ou ano_min/ano_max"
            )));
        }
        if let (Some(lo), Some(hi)) = (ano_min, ano_max) {
            if lo > hi {
                return Err(ApiError::validation(format!(
                    "Parâmetro 'ano_min' ({lo}) não pode ser maior que 'ano_max' ({hi})"
                )));
            }
        }
        let text = FILTERS.iter().filter_map(|name| self.get(name).and_then(|v| TextFilter::new(name, v))).collect();
        let mut ranges = Vec::new();
        for (stem, column) in RANGES {
            let (lo_name, hi_name) = (format!("{stem}_min"), format!("{stem}_max"));
            let (min, max) = (self.number(&lo_name)?, self.number(&hi_name)?);
            if let (Some(lo), Some(hi)) = (min, max) {
                if lo > hi {
                    return Err(ApiError::validation(format!(
                        "Parâmetro '{lo_name}' ({lo}) não pode ser maior que '{hi_name}' ({hi})"
                    )));
                }
            }
            if min.is_some() || max.is_some() {
                ranges.push(RangeFilter { stem, column, min, max });
            }
        }
        Ok(Filters { text, ano, ano_min, ano_max, ranges })
    }

    /// An optional finite number (a bound of a range filter).
    pub fn number(&self, name: &str) -> Result<Option<f64>, ApiError> {
        let Some(raw) = self.get(name) else { return Ok(None) };
        match raw.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(ApiError::validation(format!("Parâmetro '{name}' deve ser um número finito"))),
        }
    }

    /// page (≥ 1, default 1) and page_size (1–100, default 20).
    pub fn page(&self) -> Result<PageRequest, ApiError> {
        let page = match self.get("page") {
            Some(raw) => {
                let v: i64 = raw
                    .parse()
                    .map_err(|_| ApiError::validation("Parâmetro 'page' deve ser um número inteiro maior que 0"))?;
                if v < 1 {
                    return Err(ApiError::validation("Parâmetro 'page' deve ser maior que 0"));
                }
                v as u64
            }
            None => PageRequest::default().page,
        };
        let page_size = self.int("page_size", 1, MAX_PAGE_SIZE)?.map_or(PageRequest::default().page_size, |v| v as u32);
        Ok(PageRequest { page, page_size })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(q: &str) -> Result<QueryParams, ApiError> {
        QueryParams::parse(Some(q), &[FILTERS, PAGING])
    }

    fn message(r: Result<impl std::fmt::Debug, ApiError>) -> String {
        match r.unwrap_err() {
            ApiError::Validation(m) => m,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn unknown_repeated_and_empty_are_rejected() {
        assert!(message(parse("cor=azul")).contains("'cor' não é aceito"));
        assert!(message(parse("marca=a&marca=b")).contains("'marca' informado mais de uma vez"));
        assert!(message(parse("marca=")).contains("'marca' não pode ser vazio"));
        assert!(message(parse("marca=%20%20")).contains("'marca' não pode ser vazio"));
        assert!(message(QueryParams::parse(Some("x=1"), &[])).contains("aceitos: nenhum"));
    }

    #[test]
    fn empty_query_and_stray_ampersands_are_fine() {
        assert!(parse("").unwrap().get("marca").is_none());
        assert_eq!(parse("&marca=Fiat&").unwrap().get("marca"), Some("Fiat"));
    }

    #[test]
    fn values_are_percent_decoded() {
        let p = parse("marca=Citro%C3%ABn&modelo=C4+Cactus").unwrap();
        assert_eq!(p.get("marca"), Some("Citroën"));
        assert_eq!(p.get("modelo"), Some("C4 Cactus"));
    }

    #[test]
    fn bad_encodings_name_the_parameter() {
        assert_eq!(message(parse("marca=%FF")), "Parâmetro 'marca' não é UTF-8 válido");
        assert_eq!(message(parse("marca=a&modelo=%C3%28")), "Parâmetro 'modelo' não é UTF-8 válido");
        assert_eq!(message(parse("marca=%G1")), "Parâmetro 'marca' contém codificação percentual inválida");
        assert_eq!(message(parse("marca=ab%")), "Parâmetro 'marca' contém codificação percentual inválida");
        assert!(message(parse("%FF=1")).contains("Nome de parâmetro"));
        assert_eq!(parse("marca=Citro%C3%ABn").unwrap().get("marca"), Some("Citroën"));
        assert_eq!(check_encoding("%e2%82%ac"), Ok(()));
    }

    #[test]
    fn year_rules() {
        assert_eq!(parse("ano=2020").unwrap().filters().unwrap().ano, Some(2020));
        assert!(message(parse("ano=1899").unwrap().filters()).contains("'ano' deve estar entre 1900 e 2100"));
        assert!(message(parse("ano_max=2101").unwrap().filters()).contains("'ano_max'"));
        assert!(message(parse("ano=abc").unwrap().filters()).contains("'ano' deve ser um número inteiro"));
        assert!(message(parse("ano=2020&ano_min=2019").unwrap().filters())
            .contains("'ano' não pode ser combinado com 'ano_min'"));
        assert!(message(parse("ano=2020&ano_max=2021").unwrap().filters()).contains("'ano_max'"));
        assert!(message(parse("ano_min=2021&ano_max=2020").unwrap().filters())
            .contains("'ano_min' (2021) não pode ser maior"));
        let f = parse("ano_min=2020&ano_max=2020").unwrap().filters().unwrap();
        assert_eq!((f.ano_min, f.ano_max), (Some(2020), Some(2020)));
    }

    #[test]
    fn range_rules() {
        let f = parse("co2_max=120&eco_score_min=70.5").unwrap().filters().unwrap();
        assert_eq!(f.ranges.len(), 2);
        assert_eq!((f.ranges[0].stem, f.ranges[0].min, f.ranges[0].max), ("eco_score", Some(70.5), None));
        assert_eq!((f.ranges[1].column, f.ranges[1].max), ("co2_referencia_g_km", Some(120.0)));
        for bad in ["custo_min=abc", "custo_min=inf", "custo_min=NaN", "custo_min=1e400", "custo_min=-infinity"] {
            assert_eq!(
                message(parse(bad).unwrap().filters()),
                "Parâmetro 'custo_min' deve ser um número finito",
                "{bad}"
            );
        }
        assert_eq!(
            message(parse("consumo_min=2&consumo_max=1.5").unwrap().filters()),
            "Parâmetro 'consumo_min' (2) não pode ser maior que 'consumo_max' (1.5)"
        );
        let equal = parse("autonomia_eletrica_min=50&autonomia_eletrica_max=50").unwrap().filters().unwrap();
        assert_eq!(equal.ranges[0].column, "autonomia_eletrica_km");
    }

    #[test]
    fn text_filters_keep_order_of_the_contract() {
        let f = parse("combustivel=eletrico&marca=BYD").unwrap().filters().unwrap();
        let names: Vec<&str> = f.text.iter().map(|t| t.param).collect();
        assert_eq!(names, vec!["marca", "combustivel"]);
        assert_eq!(f.text[1].folded, "eletrico");
    }

    #[test]
    fn paging_rules() {
        assert_eq!(parse("").unwrap().page().unwrap(), PageRequest { page: 1, page_size: 20 });
        assert_eq!(parse("page=3&page_size=100").unwrap().page().unwrap(), PageRequest { page: 3, page_size: 100 });
        assert!(message(parse("page=0").unwrap().page()).contains("'page' deve ser maior que 0"));
        assert!(message(parse("page=-1").unwrap().page()).contains("'page' deve ser maior que 0"));
        assert!(message(parse("page=1.5").unwrap().page()).contains("'page' deve ser um número inteiro"));
        assert!(message(parse("page_size=0").unwrap().page()).contains("'page_size' deve estar entre 1 e 100"));
        assert!(message(parse("page_size=101").unwrap().page()).contains("'page_size' deve estar entre 1 e 100"));
        assert!(message(parse("page=99999999999999999999").unwrap().page()).contains("'page'"));
    }

    #[test]
    fn choices() {
        let p = QueryParams::parse(Some("order=up"), &[&["order"]]).unwrap();
        let r = p.choice("order", &[("asc", 1), ("desc", 2)]);
        assert_eq!(message(r), "Parâmetro 'order' deve ser um de: asc, desc");
    }
}
