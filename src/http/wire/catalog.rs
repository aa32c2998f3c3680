//! The catalog item: the input columns of one vehicle, in the spec's order.

use serde::Serialize;
use uuid::Uuid;

use crate::engine::table::Vehicle;

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
