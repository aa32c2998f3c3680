//! The tables' codes in the catalog's words (API-CONTRACT §8).

use super::roles::normalise;

/// Fuel code: F/G/E/D. `e_is_electric` comes from the table's legend ("Elétrico (E)") or from
/// the row itself (an electric propulsion or motor).
pub fn fuel(code: &str, e_is_electric: bool) -> Option<&'static str> {
    let n = normalise(code);
    Some(match n.as_str() {
        "f" | "flex" => "Flex",
        "g" | "gasolina" => "Gasolina",
        "d" | "diesel" => "Diesel",
        "e" if e_is_electric => "Elétrico",
        "e" | "etanol" | "alcool" => "Etanol",
        "eletrico" | "el" | "ev" => "Elétrico",
        "gnv" => "GNV",
        _ => return None,
    })
}

/// Propulsion word, with or without accents, in any case.
pub fn propulsion(word: &str) -> Option<&'static str> {
    let n = normalise(word).replace(' ', "");
    Some(match n.as_str() {
        "combustao" | "convencional" => "Combustão",
        "hibrido" | "hev" => "Híbrido",
        "plug-in" | "plugin" | "hibridoplug-in" | "hibridoplugin" | "phev" | "vehp" => "Híbrido Plug-in",
        "eletrico" | "ve" | "bev" => "Elétrico",
        _ => return None,
    })
}

/// A transmission code (M-5, A-6, A, CVT, CVT-7, DCT-7, MTA, AMT-5, eCVT, "A - 6",
/// "Automática"...) as (transmissao_tipo, transmissao_marchas). None for a code not known.
pub fn transmission(code: &str) -> Option<(&'static str, Option<i32>)> {
    // "Automática (A)": the legend's word with its code in parentheses.
    let code = match code.find('(') {
        Some(i) if i > 0 => &code[..i],
        _ => code,
    };
    let n = normalise(code).replace([' ', '\u{ad}'], "");
    // A spelled-out legend word: "automatica", "automatica(a)", "manual".
    let (kind, gears) = match n.find(|c: char| c.is_ascii_digit()) {
        Some(i) => (n[..i].trim_end_matches(['-', '/', '.']), n[i..].parse::<i32>().ok()),
        None => (n.trim_end_matches(['-', '/', '.']), None),
    };
    if n.find(|c: char| c.is_ascii_digit()).is_some() && gears.is_none() {
        return None;
    }
    let kind = kind.trim_end_matches("(a)").trim_end_matches("(m)");
    let tipo = match kind {
        "m" | "mt" | "manual" => "Manual",
        "a" | "at" | "auto" | "automatica" => "Automática",
        "cvt" | "ecvt" | "e-cvt" => "CVT",
        "dct" | "dsg" | "pdk" => "Automática Dupla Embreagem",
        "mta" | "amt" | "automatizada" => "Automatizada",
        _ => return None,
    };
    Some((tipo, gears))
}

/// Air conditioning S/N.
pub fn air_conditioning(code: &str) -> Option<bool> {
    match normalise(code).as_str() {
        "s" | "sim" => Some(true),
        "n" | "nao" => Some(false),
        _ => None,
    }
}

/// Power steering H/M/E/E-H.
pub fn steering(code: &str) -> Option<&'static str> {
    let n = normalise(code).replace([' ', '\u{ad}'], "");
    Some(match n.as_str() {
        "h" | "hidraulica" => "Hidráulica",
        "m" | "mecanica" => "Mecânica",
        "e" | "eletrica" => "Elétrica",
        "e-h" | "eh" | "e/h" | "eletro-hidraulica" => "Eletro-hidráulica",
        _ => return None,
    })
}

/// A PBE class letter A–E.
pub fn pbe_class(code: &str) -> Option<&'static str> {
    match code.trim().to_ascii_uppercase().as_str() {
        "A" => Some("A"),
        "B" => Some("B"),
        "C" => Some("C"),
        "D" => Some("D"),
        "E" => Some("E"),
        _ => None,
    }
}

/// Name patterns for tables without a propulsion column (`data/pbev/propulsao.toml`).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct NamePatterns {
    #[serde(default)]
    pub plug_in: Vec<String>,
    #[serde(default)]
    pub hibrido: Vec<String>,
}

/// The list bundled with the repository, used when no other is given.
pub const DEFAULT_NAME_PATTERNS: &str = include_str!("../../data/pbev/propulsao.toml");

impl NamePatterns {
    pub fn parse(text: &str) -> Result<NamePatterns, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    pub fn bundled() -> NamePatterns {
        Self::parse(DEFAULT_NAME_PATTERNS).unwrap_or_default()
    }

    /// Híbrido Plug-in or Híbrido when the names match a pattern; None otherwise.
    pub fn classify(&self, modelo: &str, versao: &str) -> Option<&'static str> {
        let text = fold(&format!("{modelo} {versao}"));
        let words: Vec<&str> = text.split([' ', '(', ')', ',', '/']).filter(|w| !w.is_empty()).collect();
        let hit = |patterns: &[String]| patterns.iter().any(|p| matches_words(&words, p));
        if hit(&self.plug_in) {
            Some("Híbrido Plug-in")
        } else if hit(&self.hibrido) {
            Some("Híbrido")
        } else {
            None
        }
    }
}

fn matches_words(words: &[&str], pattern: &str) -> bool {
    let p = fold(pattern);
    let pw: Vec<&str> = p.split(' ').filter(|w| !w.is_empty()).collect();
    if pw.is_empty() || pw.len() > words.len() {
        return false;
    }
    words.windows(pw.len()).any(|win| win.iter().zip(&pw).all(|(w, p)| glob(w.as_bytes(), p.as_bytes())))
}

/// Upper case without accents.
fn fold(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    s.nfd().filter(|c| !unicode_normalization::char::is_combining_mark(*c)).collect::<String>().to_uppercase()
}

/// `*` any run, `#` one digit, anything else itself.
fn glob(w: &[u8], p: &[u8]) -> bool {
    match (p.first(), w.first()) {
        (None, None) => true,
        (None, Some(_)) => false,
        (Some(b'*'), _) => glob(w, &p[1..]) || (!w.is_empty() && glob(&w[1..], p)),
        (Some(b'#'), Some(c)) if c.is_ascii_digit() => glob(&w[1..], &p[1..]),
        (Some(a), Some(b)) if a == b => glob(&w[1..], &p[1..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_become_words() {
        assert_eq!(fuel("F", false), Some("Flex"));
        assert_eq!(fuel("E", false), Some("Etanol"));
        assert_eq!(fuel("E", true), Some("Elétrico"));
        assert_eq!(fuel("g", false), Some("Gasolina"));
        assert_eq!(fuel("X", false), None);
        assert_eq!(propulsion("Hibrido"), Some("Híbrido"));
        assert_eq!(propulsion("ELÉTRICO"), Some("Elétrico"));
        assert_eq!(propulsion("Plug-in"), Some("Híbrido Plug-in"));
        assert_eq!(transmission("M-5"), Some(("Manual", Some(5))));
        assert_eq!(transmission("A - 6"), Some(("Automática", Some(6))));
        assert_eq!(transmission("A"), Some(("Automática", None)));
        assert_eq!(transmission("A-"), Some(("Automática", None)));
        assert_eq!(transmission("CVT-7"), Some(("CVT", Some(7))));
        assert_eq!(transmission("DCT - 7"), Some(("Automática Dupla Embreagem", Some(7))));
        assert_eq!(transmission("MTA"), Some(("Automatizada", None)));
        assert_eq!(transmission("MT-5"), Some(("Manual", Some(5))));
        assert_eq!(transmission("A\u{ad}6"), Some(("Automática", Some(6))));
        assert_eq!(transmission("Automática"), Some(("Automática", None)));
        assert_eq!(transmission("Automática (A)"), Some(("Automática", None)));
        assert_eq!(transmission("?"), None);
        assert_eq!(air_conditioning("S"), Some(true));
        assert_eq!(air_conditioning("?}"), None);
        assert_eq!(steering("E -H"), Some("Eletro-hidráulica"));
        assert_eq!(steering("M"), Some("Mecânica"));
        let names = NamePatterns::bundled();
        assert!(!names.plug_in.is_empty() && !names.hibrido.is_empty());
        assert_eq!(names.classify("Panamera", "4EHYB"), Some("Híbrido Plug-in"));
        assert_eq!(names.classify("X5", "xDrive 45e"), Some("Híbrido Plug-in"));
        assert_eq!(names.classify("745Le", ""), Some("Híbrido Plug-in"));
        assert_eq!(names.classify("Countryman", "ALL4 SE"), Some("Híbrido Plug-in"));
        assert_eq!(names.classify("Countryman", "Cooper S ALL4"), None);
        assert_eq!(names.classify("NX300H", "F-Sport"), Some("Híbrido"));
        assert_eq!(names.classify("Corolla", "Altis Premium H"), Some("Híbrido"));
        assert_eq!(names.classify("XC40", "T5 Momentum"), None);
        assert_eq!(names.classify("Gol", "1.0"), None);
    }
}
