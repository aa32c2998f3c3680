//! Closed sets of labels the API publishes, declared once so the OpenAPI document lists them
//! as enums. The values themselves come from the views (`eco_faixa`) and the rankings.

use serde::Serialize;

/// Qualitative band of an eco score: ≤ 40 Baixo, ≤ 60 Regular, ≤ 80 Bom,
/// > 80 Excelente.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub enum FaixaEcoScore {
    Baixo,
    Regular,
    Bom,
    Excelente,
}

/// The ranking types of the fixed rankings and the overview.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub enum RankingTipo {
    #[serde(rename = "mais-economicos")]
    MaisEconomicos,
    #[serde(rename = "co2-menor")]
    Co2Menor,
    #[serde(rename = "maior-autonomia-eletrica")]
    MaiorAutonomiaEletrica,
    #[serde(rename = "melhor-eco-score")]
    MelhorEcoScore,
}
