//! The wire shape of `GET /facets`.

use serde::Serialize;

use crate::engine::facets::{Count, Facets};

/// How many of the filtered vehicles hold one text value (`valor` null: the value is missing).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FacetValor {
    #[schema(required = true, example = "SUV")]
    pub valor: Option<String>,
    #[schema(minimum = 1)]
    pub total: u64,
}

/// How many of the filtered vehicles are of one model year.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FacetAno {
    #[schema(example = 2024)]
    pub valor: i32,
    #[schema(minimum = 1)]
    pub total: u64,
}

/// `data.data` of `GET /facets`: per grouping column, each value held by a filtered vehicle and
/// how many hold it, by total descending, then valor ascending (null after the values).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FacetsAnswer {
    /// Values of `categoria`.
    pub categoria: Vec<FacetValor>,
    /// Values of `combustivel_tipo`.
    pub combustivel: Vec<FacetValor>,
    /// Values of `tipo_propulsao`.
    pub propulsao: Vec<FacetValor>,
    /// Values of `transmissao_tipo` (null for vehicles without one).
    pub transmissao: Vec<FacetValor>,
    /// Values of `marca`.
    pub marca: Vec<FacetValor>,
    /// Model years (numbers).
    pub ano: Vec<FacetAno>,
    /// Eco-score bands: Baixo, Regular, Bom, Excelente (null for vehicles without a score).
    pub faixa: Vec<FacetValor>,
}

fn text(counts: &[Count<String>]) -> Vec<FacetValor> {
    counts.iter().map(|c| FacetValor { valor: c.valor.clone(), total: c.total }).collect()
}

impl From<&Facets> for FacetsAnswer {
    fn from(f: &Facets) -> Self {
        FacetsAnswer {
            categoria: text(&f.categoria),
            combustivel: text(&f.combustivel),
            propulsao: text(&f.propulsao),
            transmissao: text(&f.transmissao),
            marca: text(&f.marca),
            ano: f.ano.iter().filter_map(|c| c.valor.map(|valor| FacetAno { valor, total: c.total })).collect(),
            faixa: text(&f.faixa),
        }
    }
}
