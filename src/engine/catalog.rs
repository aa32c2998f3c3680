//! The catalog listing: filters, the contract's order, one page.

use polars::prelude::*;
use serde::Serialize;
use uuid::Uuid;

use super::filters::{paginate, sorted, Filters, Page, PageRequest};
use super::snapshot::{Snapshot, Vehicle, ROW};

/// An item of `GET /catalog/vehicles`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct CatalogVehicle {
    pub id: Uuid,
    #[schema(example = "Fiat")]
    pub marca: String,
    #[schema(example = "Argo")]
    pub modelo: String,
    #[schema(example = "1.0 MT")]
    pub versao: String,
    #[schema(example = 2024)]
    pub ano: i32,
    #[schema(example = "Compacto")]
    pub categoria: String,
    pub motor: Option<String>,
    #[schema(example = "Combustão")]
    pub tipo_propulsao: String,
    #[schema(example = "Flex")]
    pub combustivel_tipo: String,
    pub transmissao_tipo: Option<String>,
    pub transmissao_marchas: Option<i32>,
    pub ar_condicionado: Option<bool>,
    #[schema(example = "Elétrica")]
    pub direcao_assistida_tipo: String,
}

impl From<&Vehicle> for CatalogVehicle {
    fn from(v: &Vehicle) -> Self {
        CatalogVehicle {
            id: v.id,
            marca: v.marca.clone(),
            modelo: v.modelo.clone(),
            versao: v.versao.clone(),
            ano: v.ano,
            categoria: v.categoria.clone(),
            motor: v.motor.clone(),
            tipo_propulsao: v.tipo_propulsao.clone(),
            combustivel_tipo: v.combustivel_tipo.clone(),
            transmissao_tipo: v.transmissao_tipo.clone(),
            transmissao_marchas: v.transmissao_marchas,
            ar_condicionado: v.ar_condicionado,
            direcao_assistida_tipo: v.direcao_assistida_tipo.clone(),
        }
    }
}

/// The catalog order: marca, modelo, versao (byte order), ano descending, then id.
pub const ORDER: &[(&str, bool)] = &[("marca", false), ("modelo", false), ("versao", false), ("ano", true)];

/// Sorts a frame in [`ORDER`] (id last).
pub fn in_catalog_order(lf: LazyFrame) -> LazyFrame {
    sorted(lf, ORDER)
}

/// One page of the filtered catalog in [`ORDER`]. The snapshot's frame is stored in that order
/// (see `Snapshot::build`) and filtering keeps relative order, so no per-request sort is needed.
pub fn list(snapshot: &Snapshot, filters: &Filters, page: PageRequest) -> PolarsResult<Page<CatalogVehicle>> {
    let lf = filters.apply(snapshot.lazy()).select([col(ROW)]);
    let (df, pagination) = paginate(lf, page)?;
    let items = snapshot.rows_of(&df)?.into_iter().map(CatalogVehicle::from).collect();
    Ok(Page { items, pagination })
}
