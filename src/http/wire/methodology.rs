//! The wire shapes of `GET /methodology` and of the driving profile (`meta.perfil_custo`). The
//! texts are written from the formula constants the snapshot's views ran with (its
//! `parametros.toml`, see `engine::formula`) and its own cost configuration, never copied.

use serde::Serialize;

use crate::engine::dataset::publish::round_published;
use crate::engine::formula::CASAS_GUARDA;
use crate::engine::snapshot::Snapshot;
use crate::engine::views::FINAL_VIEW;
pub use crate::http::contract::envelope::PerfilCusto;

/// The dataset the answer describes.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct DatasetMetodologia {
    /// The dataset version (as in X-Dataset-Version).
    pub versao: String,
    /// Number of vehicles.
    pub linhas: u64,
    /// When the snapshot was loaded (ISO 8601 UTC).
    pub carregado_em: String,
}

/// How one published metric is computed.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Formula {
    /// The published field.
    #[schema(example = "eficiencia_media_referencia")]
    pub campo: &'static str,
    #[schema(example = "km/unidade")]
    pub unidade: &'static str,
    /// The formula in words (Portuguese).
    pub descricao: String,
}

/// The weights of the eco score's indices.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Pesos {
    pub energia: f64,
    pub co2: f64,
    pub poluentes: f64,
}

/// One index of the eco score, 0–100.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Indice {
    #[schema(example = "indice_energia")]
    pub nome: &'static str,
    /// Input value at (and beyond) which the index is 0; null for the pollutants index.
    #[schema(required = true)]
    pub zero_em: Option<f64>,
    /// Input value at (and below) which the index is 100; null for the pollutants index.
    #[schema(required = true)]
    pub cem_em: Option<f64>,
    #[schema(example = "MJ/km")]
    pub unidade: &'static str,
    pub descricao: String,
}

/// The reference limits (g/km) of the pollutants index when NMHC, CO and NOx are all present.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct LimitesPoluentes {
    pub nmhc_g_km: f64,
    pub co_g_km: f64,
    pub nox_g_km: f64,
}

/// The PROCONVE L7 reference limits (g/km) of the pollutants index, used when one of NMHC, CO
/// and NOx is missing and NMOG+NOx (`nmog_nox_g_km`) and CO are present.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct LimitesPoluentesL7 {
    pub nmog_nox_g_km: f64,
    pub co_g_km: f64,
}

/// One band of the eco score: scores above `acima_de` (null: from 0) up to `ate` (inclusive;
/// null: up to 100).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FaixaMetodologia {
    #[schema(value_type = super::labels::FaixaEcoScore, example = "Bom")]
    pub faixa: &'static str,
    #[schema(required = true)]
    pub acima_de: Option<f64>,
    #[schema(required = true)]
    pub ate: Option<f64>,
}

/// The eco score.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct EcoScoreMetodologia {
    pub descricao: String,
    /// The view that computes it.
    #[schema(example = "vw_eco_score")]
    pub fonte: &'static str,
    pub pesos: Pesos,
    pub indices: Vec<Indice>,
    pub limites_poluentes: LimitesPoluentes,
    pub limites_poluentes_l7: LimitesPoluentesL7,
    pub faixas: Vec<FaixaMetodologia>,
}

/// The rounding rule of published numbers.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Arredondamento {
    pub regra: String,
    /// Decimals of metrics, costs and averages.
    pub casas_metricas: u32,
    /// Decimals of eco scores, percentiles and score_geral_final.
    pub casas_eco_score: u32,
    /// Decimals kept beyond the published ones before the tie is decided.
    pub casas_guarda: u32,
}

/// `data.data` of `GET /methodology`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Methodology {
    pub dataset: DatasetMetodologia,
    /// The per-vehicle metrics, in words.
    pub metricas: Vec<Formula>,
    pub eco_score: EcoScoreMetodologia,
    pub arredondamento: Arredondamento,
    /// The cost configuration in force (server configuration; a request may override it on
    /// /vehicles/{vehicle_id}/summary and POST /compare).
    pub custo: PerfilCusto,
}

/// A number as the texts show it (Portuguese decimal comma).
fn num(x: f64) -> String {
    format!("{}", round_published(x, 6)).replace('.', ",")
}

/// A price as the texts show it: two decimals, decimal comma.
fn price(x: f64) -> String {
    format!("{:.2}", round_published(x, 2)).replace('.', ",")
}

impl Methodology {
    pub fn of(snapshot: &Snapshot) -> Methodology {
        let cost = &snapshot.info.views.cost;
        let p = &snapshot.info.views.params;
        let (energia_zero_mj_km, energia_escala_mj_km) = (p.indice_energia.zero_mj_km, p.indice_energia.escala_mj_km);
        let co2_zero_g_km = p.indice_co2.zero_g_km;
        let (limite_nmhc_g_km, limite_co_g_km, limite_nox_g_km) =
            (p.limites_poluentes.nmhc_g_km, p.limites_poluentes.co_g_km, p.limites_poluentes.nox_g_km);
        let (limite_l7_nmog_nox_g_km, limite_l7_co_g_km) =
            (p.limites_poluentes_l7.nmog_nox_g_km, p.limites_poluentes_l7.co_g_km);
        let (peso_energia, peso_co2, peso_poluentes) =
            (p.eco_score.peso_energia, p.eco_score.peso_co2, p.eco_score.peso_poluentes);
        let (casas_metricas, casas_eco_score) = (p.casas.metricas, p.casas.eco_score);
        let energia_cem = round_published(energia_zero_mj_km - energia_escala_mj_km, 6);
        let metricas = vec![
            Formula {
                campo: "eficiencia_media_referencia",
                unidade: "km/unidade",
                descricao: "Média dos valores não nulos de eficiencia_cidade_km_l e eficiencia_estrada_km_l (km por \
                    unidade do combustível de referência); nula quando ambos são nulos."
                    .into(),
            },
            Formula {
                campo: "consumo_referencia",
                unidade: "MJ/km",
                descricao: "consumo_energetico_mj_km (menor é melhor).".into(),
            },
            Formula { campo: "co2_referencia_g_km", unidade: "g/km", descricao: "co2_fossil_g_km.".into() },
            Formula {
                campo: "autonomia_km",
                unidade: "km",
                descricao: "Elétrico: autonomia_eletrica_km; demais: tanque_l × eficiência média de referência, mais \
                    autonomia_eletrica_km quando presente; nula quando falta um dado."
                    .into(),
            },
            Formula {
                campo: "custo_anual_estimado",
                unidade: "R$/ano",
                descricao: format!(
                    "Elétrico: km_ano × consumo_energetico_mj_km / 3,6 × preço do kWh; Flex: o menor entre gasolina \
                     (km_ano / eficiência média de referência × preço da gasolina) e etanol (km_ano / média das \
                     eficiências a etanol × preço do etanol); Gasolina, Etanol, Diesel e GNV: km_ano / eficiência \
                     média de referência × preço do combustível. Outro combustível ou dado ausente: nulo. Em vigor: \
                     {} km/ano; gasolina R$ {}/L, etanol R$ {}/L, diesel R$ {}/L, GNV R$ {}/m³, eletricidade R$ {}/kWh.",
                    num(cost.km_ano),
                    price(cost.preco_gasolina),
                    price(cost.preco_etanol),
                    price(cost.preco_diesel),
                    price(cost.preco_gnv),
                    price(cost.preco_kwh),
                ),
            },
        ];
        let indices = vec![
            Indice {
                nome: "indice_energia",
                zero_em: Some(energia_zero_mj_km),
                cem_em: Some(energia_cem),
                unidade: "MJ/km",
                descricao: format!(
                    "100 × ({} − consumo_energetico_mj_km) / {}, limitado a 0–100; nulo sem consumo.",
                    num(energia_zero_mj_km),
                    num(energia_escala_mj_km)
                ),
            },
            Indice {
                nome: "indice_co2",
                zero_em: Some(co2_zero_g_km),
                cem_em: Some(0.0),
                unidade: "g/km",
                descricao: format!(
                    "100 × ({} − co2_fossil_g_km) / {}, limitado a 0–100; nulo sem CO2.",
                    num(co2_zero_g_km),
                    num(co2_zero_g_km)
                ),
            },
            Indice {
                nome: "indice_poluentes",
                zero_em: None,
                cem_em: None,
                unidade: "g/km",
                descricao: format!(
                    "Com nmhc_g_km, co_g_km e nox_g_km presentes: 100 × (1 − média(nmhc_g_km / {}, co_g_km / {}, \
                     nox_g_km / {})), limitado a 0–100. Senão, com nmog_nox_g_km (NMOG+NOx, como as tabelas \
                     publicam a partir do PROCONVE L7) e co_g_km presentes: 100 × (1 − média(nmog_nox_g_km / {}, \
                     co_g_km / {})), limitado a 0–100 (limites do PROCONVE L7). Senão, nulo.",
                    num(limite_nmhc_g_km),
                    num(limite_co_g_km),
                    num(limite_nox_g_km),
                    num(limite_l7_nmog_nox_g_km),
                    num(limite_l7_co_g_km)
                ),
            },
        ];
        let mut faixas = Vec::new();
        let mut below = None;
        for (faixa, ate) in p.faixas() {
            faixas.push(FaixaMetodologia { faixa, acima_de: below, ate });
            below = ate;
        }
        Methodology {
            dataset: DatasetMetodologia {
                versao: snapshot.info.version.clone(),
                linhas: snapshot.info.rows as u64,
                carregado_em: snapshot.info.loaded_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            },
            metricas,
            eco_score: EcoScoreMetodologia {
                descricao: format!(
                    "Média ponderada dos índices não nulos, pesos {} (energia), {} (CO2) e {} (poluentes), \
                     renormalizados sobre os índices presentes; nulo quando faltam os índices de energia e de CO2. \
                     Cada índice lê os dados do arquivo sem arredondamento.",
                    num(peso_energia),
                    num(peso_co2),
                    num(peso_poluentes)
                ),
                fonte: FINAL_VIEW,
                pesos: Pesos { energia: peso_energia, co2: peso_co2, poluentes: peso_poluentes },
                indices,
                limites_poluentes: LimitesPoluentes {
                    nmhc_g_km: limite_nmhc_g_km,
                    co_g_km: limite_co_g_km,
                    nox_g_km: limite_nox_g_km,
                },
                limites_poluentes_l7: LimitesPoluentesL7 {
                    nmog_nox_g_km: limite_l7_nmog_nox_g_km,
                    co_g_km: limite_l7_co_g_km,
                },
                faixas,
            },
            arredondamento: Arredondamento {
                regra: format!(
                    "Meia para par (ABNT NBR 5891), decidida no valor decimal: o valor é levado antes a {} casas a \
                     mais que as publicadas. Métricas, custos e médias com {} casas; eco scores, percentis e \
                     score_geral_final com {}. Só o valor publicado é arredondado: nenhuma fórmula lê um valor \
                     arredondado.",
                    CASAS_GUARDA, casas_metricas, casas_eco_score
                ),
                casas_metricas,
                casas_eco_score,
                casas_guarda: CASAS_GUARDA,
            },
            custo: PerfilCusto::from(cost),
        }
    }
}
