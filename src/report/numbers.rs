//! Numbers as the report prints them: the Brazilian format (1.234,56), in the page and the charts.

/// Groups the digits of a whole number by thousands with `.` (Brazilian format).
fn grouped(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('.');
        }
        out.push(c);
    }
    out
}

/// A whole number in the Brazilian format: 12.000.
pub fn integer(n: u64) -> String {
    grouped(&n.to_string())
}

/// A number with `places` decimals in the Brazilian format: 1.234,56.
pub fn decimal(value: f64, places: usize) -> String {
    let text = format!("{:.*}", places, value.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let sign = if value < 0.0 && text.bytes().any(|b| b.is_ascii_digit() && b != b'0') { "-" } else { "" };
    let mut out = format!("{sign}{}", grouped(int));
    if !frac.is_empty() {
        out.push(',');
        out.push_str(frac);
    }
    out
}
