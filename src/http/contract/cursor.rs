//! List cursors (API-CONTRACT §7): an opaque token naming a position in one ordered list, bound
//! to the filters and sort it was made for and to the dataset version it was made on. The
//! position is exact within a version (a version's data and orders never change), so following
//! cursors walks the whole list with no row skipped or repeated; another version answers 409.
//!
//! The token is the hex of `1|version|binding|position|check`, where `binding` is a hash of the
//! list's path, filters and sort, and `check` a hash of the rest: a token changed by hand is
//! refused (400), never read as another position.

use sha2::{Digest, Sha256};

use super::error::ApiError;

/// A cursor, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub version: String,
    pub binding: String,
    pub position: usize,
}

fn short_hash(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update(b"\0");
    }
    hex::encode(&h.finalize()[..8])
}

/// The binding of a list: its path and its filters and sort (name=value pairs, in a normalised
/// order). Pagination, fields and format are not part of it: they may change between pages.
pub fn binding(path: &str, pairs: &[(String, String)]) -> String {
    let mut parts: Vec<String> = vec![path.to_string()];
    parts.extend(pairs.iter().map(|(k, v)| format!("{k}={v}")));
    short_hash(&parts.iter().map(String::as_str).collect::<Vec<_>>())
}

fn check(version: &str, binding: &str, position: &str) -> String {
    short_hash(&["eco-insights cursor 1", version, binding, position])
}

impl Cursor {
    /// The token of this cursor.
    pub fn token(&self) -> String {
        let position = self.position.to_string();
        let sum = check(&self.version, &self.binding, &position);
        hex::encode(format!("1|{}|{}|{position}|{sum}", self.version, self.binding))
    }

    /// Reads a token; anything but a token this service made is a validation error.
    pub fn parse(token: &str) -> Result<Cursor, ApiError> {
        let tampered =
            || ApiError::validation("Parâmetro 'cursor' inválido: use o next_cursor de uma resposta anterior");
        let bytes = hex::decode(token.trim()).map_err(|_| tampered())?;
        let text = String::from_utf8(bytes).map_err(|_| tampered())?;
        let fields: Vec<&str> = text.split('|').collect();
        let [tag, version, binding, position, sum] = fields[..] else { return Err(tampered()) };
        if tag != "1" || sum != check(version, binding, position) {
            return Err(tampered());
        }
        let position = position.parse::<usize>().map_err(|_| tampered())?;
        Ok(Cursor { version: version.to_string(), binding: binding.to_string(), position })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_reads_back_and_any_change_is_refused() {
        let c = Cursor {
            version: "abc123".into(),
            binding: binding("/x", &[("marca".into(), "Fiat".into())]),
            position: 40,
        };
        let token = c.token();
        assert_eq!(Cursor::parse(&token).unwrap(), c);
        // Every single-character change of the token is refused, none reads as another cursor.
        for i in 0..token.len() {
            let mut t: Vec<u8> = token.bytes().collect();
            t[i] = if t[i] == b'0' { b'1' } else { b'0' };
            let t = String::from_utf8(t).unwrap();
            assert!(matches!(Cursor::parse(&t), Err(ApiError::Validation(_))), "{t}");
        }
        // A hand-made token with another position and no valid check: refused.
        let forged = hex::encode(format!("1|abc123|{}|80|0000000000000000", c.binding));
        assert!(Cursor::parse(&forged).is_err());
        for junk in ["", "zz", "31", &hex::encode("1|a|b|c|d|e")] {
            assert!(Cursor::parse(junk).is_err(), "{junk}");
        }
        assert_ne!(binding("/x", &[]), binding("/y", &[]));
        assert_ne!(binding("/x", &[("sort".into(), "ano".into())]), binding("/x", &[("sort".into(), "-ano".into())]));
    }
}
