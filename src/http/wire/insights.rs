//! The insights' and aggregations' wire shapes.

use serde::Serialize;
use uuid::Uuid;

use crate::engine::insights::{BandCount, BrandStats, Emissions, Means, Summary};

/// `mediasGerais`: means over the filtered vehicles (null when no vehicle has the value).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MediasGerais {
    /// Mean eco score (0–100), 2 decimals.
    #[schema(required = true, example = 55.38)]
    pub eco_score_medio: Option<f64>,
    /// Mean of consumo_referencia (MJ/km), 2 decimals.
    #[schema(required = true, example = 1.27)]
    pub consumo_medio: Option<f64>,
    /// Mean of co2_referencia_g_km (g/km), 2 decimals.
    #[schema(required = true, example = 112.22)]
    pub emissao_media: Option<f64>,
}

/// A category and its mean eco score.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CategoriaEcoScore {
    #[schema(example = "SUV")]
    pub categoria: String,
    /// Mean eco score of the category's scored vehicles, 2 decimals.
    #[schema(example = 72.45)]
    pub eco_score_medio: f64,
}

/// How many vehicles fall in one band.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FaixaTotal {
    /// Band label, e.g. "0-40" (lower bound exclusive, upper inclusive; 0 is in the first band).
    #[schema(example = "40-60")]
    pub faixa: String,
    pub total: u64,
}

/// `GET /insights/summary`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InsightsSummary {
    pub medias_gerais: MediasGerais,
    /// Up to 3 categories with the highest mean eco score, best first (ties: categoria ascending).
    pub melhores_categorias: Vec<CategoriaEcoScore>,
    /// Up to 3 categories with the lowest mean eco score, worst first (ties: categoria ascending).
    pub piores_categorias: Vec<CategoriaEcoScore>,
    /// Always the four bands "0-40", "40-60", "60-80", "80-100", in that order.
    pub distribuicao_eco_score: Vec<FaixaTotal>,
}

/// An item of `GET /insights/efficiency`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EfficiencyItem {
    pub vehicle_id: Uuid,
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
    #[schema(example = "Flex")]
    pub combustivel_tipo: String,
    /// Mean of city and highway efficiency (km/unidade), 2 decimals.
    #[schema(example = 13.5)]
    pub eficiencia_media_referencia: f64,
    /// MJ/km, 2 decimals.
    #[schema(required = true)]
    pub consumo_referencia: Option<f64>,
    /// km, 2 decimals.
    #[schema(required = true)]
    pub autonomia_km: Option<f64>,
}

/// An item of `GET /insights/eco-scores`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EcoScoreItem {
    pub vehicle_id: Uuid,
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
    /// Eco score 0–100, 1 decimal.
    #[schema(example = 63.4)]
    pub eco_score: f64,
    /// Band of the score: Baixo (≤ 40), Regular (≤ 60), Bom (≤ 80), Excelente (> 80).
    #[schema(value_type = super::labels::FaixaEcoScore, example = "Bom")]
    pub faixa: String,
}

/// A group and its mean.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct GrupoMedia {
    #[schema(example = "Flex")]
    pub grupo: String,
    /// Mean CO2 (g/km) of the group, 2 decimals.
    #[schema(example = 112.5)]
    pub media: f64,
}

/// `GET /insights/emissions`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmissionsSummary {
    /// Mean CO2 by categoria, ascending by media then grupo; categories without CO2 are left out.
    pub media_por_categoria: Vec<GrupoMedia>,
    /// Mean CO2 by combustivel_tipo, ascending by media then grupo; fuels without CO2 are left out.
    pub media_por_combustivel: Vec<GrupoMedia>,
    /// Always the four bands "0-100", "100-130", "130-180", "180+", in that order.
    pub distribuicao: Vec<FaixaTotal>,
}

/// An item of `GET /aggregations/by-brand`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrandAggregate {
    /// The brand (marca).
    #[schema(example = "Fiat")]
    pub grupo: String,
    /// Filtered vehicles of the brand.
    #[schema(example = 12)]
    pub quantidade_veiculos: u64,
    /// Mean consumo_referencia (MJ/km), 2 decimals; null when no vehicle of the brand has one.
    #[schema(required = true)]
    pub consumo_medio: Option<f64>,
    /// Mean co2_referencia_g_km (g/km), 2 decimals; null when no vehicle of the brand has one.
    #[schema(required = true)]
    pub emissao_media: Option<f64>,
    /// Mean eco score, 2 decimals; null when no vehicle of the brand has one.
    #[schema(required = true)]
    pub eco_score_medio: Option<f64>,
}

impl From<Means> for MediasGerais {
    fn from(m: Means) -> Self {
        MediasGerais { eco_score_medio: m.eco_score, consumo_medio: m.consumo, emissao_media: m.co2 }
    }
}

impl From<&BandCount> for FaixaTotal {
    fn from(b: &BandCount) -> Self {
        FaixaTotal { faixa: b.band.to_string(), total: b.total }
    }
}

fn categories(groups: &[(String, f64)]) -> Vec<CategoriaEcoScore> {
    groups
        .iter()
        .map(|(categoria, mean)| CategoriaEcoScore { categoria: categoria.clone(), eco_score_medio: *mean })
        .collect()
}

impl From<&Summary> for InsightsSummary {
    fn from(s: &Summary) -> Self {
        InsightsSummary {
            medias_gerais: s.means.into(),
            melhores_categorias: categories(&s.best_categories),
            piores_categorias: categories(&s.worst_categories),
            distribuicao_eco_score: s.eco_score_bands.iter().map(FaixaTotal::from).collect(),
        }
    }
}

fn groups(means: &[(String, f64)]) -> Vec<GrupoMedia> {
    means.iter().map(|(grupo, media)| GrupoMedia { grupo: grupo.clone(), media: *media }).collect()
}

impl From<&Emissions> for EmissionsSummary {
    fn from(e: &Emissions) -> Self {
        EmissionsSummary {
            media_por_categoria: groups(&e.by_category),
            media_por_combustivel: groups(&e.by_fuel),
            distribuicao: e.co2_bands.iter().map(FaixaTotal::from).collect(),
        }
    }
}

impl From<&BrandStats> for BrandAggregate {
    fn from(b: &BrandStats) -> Self {
        BrandAggregate {
            grupo: b.marca.clone(),
            quantidade_veiculos: b.vehicles,
            consumo_medio: b.means.consumo,
            emissao_media: b.means.co2,
            eco_score_medio: b.means.eco_score,
        }
    }
}
