//! What a column holds, from the words of its header: never from its position.
//!
//! The tables word their headers differently from year to year ("Tipo de Propulsão",
//! "Combustível", "NMOG+NOx (mg/km)", "Gasolina ou Diesel ou Elétrico (km/l equivalente) Cidade",
//! "Elétrico (km/le) para VE ou VEHP Cidade"...). A header is read as a bag of normalised words
//! (lower case, no accents) and matched against the rules below, most specific first.

/// A column the importer knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Categoria,
    Marca,
    Modelo,
    Versao,
    Motor,
    Propulsao,
    Transmissao,
    ArCondicionado,
    Direcao,
    Combustivel,
    NmogNox,
    Nmhc,
    Co,
    Nox,
    Co2Etanol,
    Co2Fossil,
    KmlEtanolCidade,
    KmlEtanolEstrada,
    KmlCidade,
    KmlEstrada,
    KmlEletricoCidade,
    KmlEletricoEstrada,
    ConsumoMj,
    Autonomia,
    PbeCategoria,
    PbeGeral,
    /// A column the catalog has no place for (aldehydes, the emissions grade, CO2e of plug-ins,
    /// the CONPET seal): read, not imported.
    Ignored(&'static str),
}

impl Role {
    /// The name the summary gives a column.
    pub fn label(self) -> &'static str {
        match self {
            Role::Categoria => "categoria",
            Role::Marca => "marca",
            Role::Modelo => "modelo",
            Role::Versao => "versao",
            Role::Motor => "motor",
            Role::Propulsao => "tipo_propulsao",
            Role::Transmissao => "transmissao",
            Role::ArCondicionado => "ar_condicionado",
            Role::Direcao => "direcao_assistida_tipo",
            Role::Combustivel => "combustivel_tipo",
            Role::NmogNox => "nmog_nox",
            Role::Nmhc => "nmhc",
            Role::Co => "co",
            Role::Nox => "nox",
            Role::Co2Etanol => "co2_fossil_etanol",
            Role::Co2Fossil => "co2_fossil",
            Role::KmlEtanolCidade => "km_l_etanol_cidade",
            Role::KmlEtanolEstrada => "km_l_etanol_estrada",
            Role::KmlCidade => "km_l_cidade",
            Role::KmlEstrada => "km_l_estrada",
            Role::KmlEletricoCidade => "km_le_cidade",
            Role::KmlEletricoEstrada => "km_le_estrada",
            Role::ConsumoMj => "consumo_energetico_mj_km",
            Role::Autonomia => "autonomia_eletrica_km",
            Role::PbeCategoria => "classificacao_pbe_categoria",
            Role::PbeGeral => "classificacao_pbe_geral",
            Role::Ignored(what) => what,
        }
    }
}

/// Lower case, accents removed, punctuation other than `+ / - .` turned into spaces, spaces
/// collapsed; "CO 2" and "CO2" both read "co2".
pub fn normalise(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let folded: String = s
        .nfd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .map(|c| match c {
            '₂' => '2',
            c if c.is_alphanumeric() || matches!(c, '+' | '/' | '-' | '.') => c.to_ascii_lowercase(),
            _ => ' ',
        })
        .collect();
    let joined = folded.split_whitespace().collect::<Vec<_>>().join(" ");
    joined.replace("co 2", "co2").replace("km/l e", "km/le").replace("km /l", "km/l")
}

fn has_word(text: &str, word: &str) -> bool {
    text.split([' ', '/', '(', ')']).any(|t| t == word)
}

/// A pollutant column's unit, from its header: milligrams or grams per km.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MassUnit {
    MgKm,
    GKm,
}

/// The unit a header names for a mass per km (None when it names neither).
pub fn mass_unit(header: &str) -> Option<MassUnit> {
    let n = normalise(header);
    if n.contains("mg/km") {
        Some(MassUnit::MgKm)
    } else if n.contains("g/km") {
        Some(MassUnit::GKm)
    } else {
        None
    }
}

/// The role of a column, from its header text (None: a header the importer does not know).
pub fn role(header: &str) -> Option<Role> {
    // Addresses printed near a header (the cover's www.conpet.gov.br) name nothing.
    let n: String = normalise(header)
        .split(' ')
        .filter(|w| !(w.contains("www") || w.contains("http") || w.contains(".gov") || w.contains(".br")))
        .collect::<Vec<_>>()
        .join(" ");
    if n.is_empty() {
        return None;
    }
    let city = has_word(&n, "cidade");
    let road = has_word(&n, "estrada");
    // Classes and seal first: their headers also say "categoria" or "energetica".
    if n.contains("selo") || n.contains("conpet") {
        return Some(Role::Ignored("selo_conpet"));
    }
    if n.contains("relativa na categoria")
        || (n.contains("comparacao") && (n.contains("categoria") || has_word(&n, "relativa")))
    {
        return Some(Role::PbeCategoria);
    }
    if n.contains("absoluta") || (n.contains("comparacao") && n.contains("geral")) {
        return Some(Role::PbeGeral);
    }
    if n.contains("reducao") || n.contains("relativa ao limite") || n.contains("nota verde") {
        return Some(Role::Ignored("nota_verde"));
    }
    if city || road {
        let etanol = has_word(&n, "etanol");
        let gas = has_word(&n, "gasolina") || has_word(&n, "diesel");
        let electric = n.contains("km/le") || n.contains("eletrico") || n.contains("equivalente");
        let kind = if etanol && !gas {
            0
        } else if gas {
            1
        } else if electric {
            2
        } else if n.contains("km/l") {
            1
        } else {
            return None;
        };
        return Some(match (kind, city) {
            (0, true) => Role::KmlEtanolCidade,
            (0, false) => Role::KmlEtanolEstrada,
            (1, true) => Role::KmlCidade,
            (1, false) => Role::KmlEstrada,
            (_, true) => Role::KmlEletricoCidade,
            (_, false) => Role::KmlEletricoEstrada,
        });
    }
    if n.contains("co2") || n.contains("fossil") {
        if n.contains("co2e") || has_word(&n, "vehp") {
            return Some(Role::Ignored("co2e_vehp"));
        }
        let etanol = has_word(&n, "etanol");
        let gas = has_word(&n, "gasolina") || has_word(&n, "diesel");
        return Some(if etanol && !gas { Role::Co2Etanol } else { Role::Co2Fossil });
    }
    if n.contains("nmog") {
        return Some(Role::NmogNox);
    }
    if n.contains("nmhc") || has_word(&n, "thc") {
        return Some(Role::Nmhc);
    }
    if has_word(&n, "nox") {
        return Some(Role::Nox);
    }
    if has_word(&n, "cho") || n.contains("aldeid") {
        return Some(Role::Ignored("cho"));
    }
    if has_word(&n, "co") {
        return Some(Role::Co);
    }
    if n.contains("mj") {
        return Some(Role::ConsumoMj);
    }
    if n.contains("autonomia") {
        return Some(Role::Autonomia);
    }
    if n.contains("propulsao") {
        return Some(Role::Propulsao);
    }
    if n.contains("transmissao") || n.contains("velocidades") || n.contains("cambio") {
        return Some(Role::Transmissao);
    }
    if has_word(&n, "ar") && n.contains("cond") {
        return Some(Role::ArCondicionado);
    }
    if n.contains("direcao") {
        return Some(Role::Direcao);
    }
    if n.contains("combustivel") {
        return Some(Role::Combustivel);
    }
    if n.contains("categoria") {
        return Some(Role::Categoria);
    }
    if n.contains("marca") {
        return Some(Role::Marca);
    }
    if n.contains("modelo") {
        return Some(Role::Modelo);
    }
    if n.contains("versao") {
        return Some(Role::Versao);
    }
    if n.contains("motor") {
        return Some(Role::Motor);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_of_several_years_name_their_columns() {
        assert_eq!(role("Marca(?)"), Some(Role::Marca));
        assert_eq!(role("Tipo de Propulsão Combustão Híbrido Plug-in Elétrico"), Some(Role::Propulsao));
        assert_eq!(
            role("Transmissão Velocidades (nº) Manual (M) Automática (A) Automática Dupla Embreagem (DCT)"),
            Some(Role::Transmissao)
        );
        assert_eq!(role("Ar Cond. Sim (S) Não (N)"), Some(Role::ArCondicionado));
        assert_eq!(role("Direção Assistida Hidráulica (H) Mecânica (M) Elétrica (E)"), Some(Role::Direcao));
        assert_eq!(role("Combustível Etanol (E) Gasolina (G) Flex (F) Diesel (D)"), Some(Role::Combustivel));
        assert_eq!(role("Emissões no Escapamento Poluentes NMOG+NOx (mg/km)"), Some(Role::NmogNox));
        assert_eq!(role("Emissões no Escapamento Poluentes CO (mg/km)"), Some(Role::Co));
        assert_eq!(role("Poluentes NOx (g/km)"), Some(Role::Nox));
        assert_eq!(role("Poluentes CHO (mg/km)"), Some(Role::Ignored("cho")));
        assert_eq!(role("Gás Efeito Estufa Etanol CO 2 fóssil (g/km)"), Some(Role::Co2Etanol));
        assert_eq!(role("Gás Efeito Estufa Gasolina ou Diesel CO2 fóssil (g/km)"), Some(Role::Co2Fossil));
        assert_eq!(role("VEHP CO2e fóssil (g/km)"), Some(Role::Ignored("co2e_vehp")));
        assert_eq!(role("Quilometragem por Litro Etanol Cidade (km/l)"), Some(Role::KmlEtanolCidade));
        assert_eq!(role("Gasolina ou Diesel ou Elétrico (km/l equivalente) Estrada (km/l)"), Some(Role::KmlEstrada));
        assert_eq!(role("Elétrico (km/le) para VE ou VEHP Cidade (km/l e)"), Some(Role::KmlEletricoCidade));
        assert_eq!(role("Consumo Energético (MJ /km)"), Some(Role::ConsumoMj));
        assert_eq!(role("Autonomia no modo Elétrico (km)"), Some(Role::Autonomia));
        assert_eq!(role("Classificação PBE Comparação Relativa na Categoria"), Some(Role::PbeCategoria));
        assert_eq!(role("Classificação PBE Comparação Absoluta Geral"), Some(Role::PbeGeral));
        assert_eq!(role("Selo CONPET de Eficiência Energética"), Some(Role::Ignored("selo_conpet")));
        assert_eq!(role("Categoria"), Some(Role::Categoria));
        assert_eq!(role("Versão"), Some(Role::Versao));
        assert_eq!(role("Motor"), Some(Role::Motor));
        assert_eq!(role("Preço"), None);
        assert_eq!(mass_unit("NMOG+NOx (mg/km)"), Some(MassUnit::MgKm));
        assert_eq!(mass_unit("NOx (g/km)"), Some(MassUnit::GKm));
    }
}
