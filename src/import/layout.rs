//! From positioned words to a table: lines, the header band, the columns and the rows.
//!
//! Nothing here knows a year's layout. The columns are the x-ranges the data rows occupy
//! (a projection of every data line's words onto the x axis, so a column is found wherever its
//! values are printed); each column is then named by the header words printed above it. A data
//! row is a line with several numbers or null markers; a cell wrapped over two or three lines
//! prints its other lines just above and below that line, and those are joined to the nearest
//! row.

/// A word on a page: its text and its box, in points, y growing downwards from the page top.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    pub text: String,
    pub x0: f32,
    pub x1: f32,
    pub top: f32,
    pub bottom: f32,
}

impl Word {
    pub fn mid_y(&self) -> f32 {
        (self.top + self.bottom) / 2.0
    }
    pub fn height(&self) -> f32 {
        (self.bottom - self.top).max(0.1)
    }
}

/// One page of a PDF, as words.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// 1-based page number.
    pub number: usize,
    pub words: Vec<Word>,
}

/// Words that share a baseline band, left to right.
#[derive(Debug, Clone)]
pub struct Line {
    pub words: Vec<Word>,
    pub top: f32,
    pub bottom: f32,
}

impl Line {
    pub fn mid_y(&self) -> f32 {
        (self.top + self.bottom) / 2.0
    }
}

/// Groups a page's words into lines: a word joins a line when its vertical middle lies within
/// the line's band (the tallest word's band shrunk by a quarter), else it starts a new one.
pub fn lines(words: &[Word]) -> Vec<Line> {
    let mut sorted: Vec<&Word> = words.iter().filter(|w| w.x1.is_finite() && w.top.is_finite()).collect();
    sorted.sort_by(|a, b| a.mid_y().total_cmp(&b.mid_y()).then(a.x0.total_cmp(&b.x0)));
    let mut out: Vec<Line> = Vec::new();
    for w in sorted {
        let joins = out.last().is_some_and(|l| {
            let band = (l.bottom - l.top).max(w.height());
            (w.mid_y() - l.mid_y()).abs() <= band * 0.35
        });
        if joins {
            let l = out.last_mut().expect("a line");
            l.top = l.top.min(w.top);
            l.bottom = l.bottom.max(w.bottom);
            l.words.push(w.clone());
        } else {
            out.push(Line { words: vec![w.clone()], top: w.top, bottom: w.bottom });
        }
    }
    for l in &mut out {
        l.words.sort_by(|a, b| a.x0.total_cmp(&b.x0));
    }
    out
}

/// A null marker of the tables: `\`, `-`, `--`, `ND`, `N.A.`, `NA`, `N/A`.
pub fn is_null_marker(s: &str) -> bool {
    let t = s.trim();
    t.is_empty()
        || t.chars().all(|c| c == '-' || c == '\\' || c == '—' || c == '–')
        || matches!(t.to_ascii_uppercase().as_str(), "ND" | "N.D." | "N.A." | "NA" | "N/A" | "N.A" | "N/D")
}

/// A number as the tables print it: digits with a decimal comma or point (and, when both
/// occur, the last one is the decimal separator), an optional sign.
pub fn parse_number(s: &str) -> Option<f64> {
    let t = s.trim().trim_end_matches('%');
    if t.is_empty() || t.len() > 24 {
        return None;
    }
    let body = t.strip_prefix('-').unwrap_or(t);
    if body.is_empty() || !body.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '.') {
        return None;
    }
    if !body.chars().next().is_some_and(|c| c.is_ascii_digit() || c == ',' || c == '.') {
        return None;
    }
    let last_sep = body.rfind([',', '.']);
    let normalised: String = match last_sep {
        Some(i) => {
            let (int, frac) = body.split_at(i);
            let int: String = int.chars().filter(|c| c.is_ascii_digit()).collect();
            format!("{}.{}", if int.is_empty() { "0" } else { &int }, &frac[1..])
        }
        None => body.to_string(),
    };
    let v: f64 = normalised.parse().ok()?;
    let v = if t.starts_with('-') { -v } else { v };
    v.is_finite().then_some(v)
}

/// A token that fills a numeric cell: a number or a null marker.
fn is_cell_token(s: &str) -> bool {
    parse_number(s).is_some() || is_null_marker(s)
}

/// A data line: four or more numbers or null markers (a header, a legend or a wrapped cell's
/// other lines have fewer).
pub fn is_data_line(line: &Line) -> bool {
    line.words.iter().filter(|w| is_cell_token(&w.text)).count() >= 4
}

/// A column: the x-range its values occupy, and its share of the page between the midpoints of
/// the gaps to its neighbours.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub x0: f32,
    pub x1: f32,
    /// Left and right edges of the column's share of the page.
    pub left: f32,
    pub right: f32,
}

/// Columns from the data lines of every page: the x axis is cut where no more than `noise`
/// data words cross it (a long text overflowing into an empty neighbour now and then does not
/// merge two columns). Resolution half a point.
pub fn columns(data_lines: &[&Line]) -> Vec<Column> {
    let mut max_x: f32 = 0.0;
    for l in data_lines {
        for w in &l.words {
            max_x = max_x.max(w.x1);
        }
    }
    if data_lines.is_empty() || max_x.is_nan() || max_x <= 0.0 || max_x > 20_000.0 {
        return Vec::new();
    }
    let bins = (max_x * 2.0).ceil() as usize + 2;
    let mut count = vec![0u32; bins];
    for l in data_lines {
        for w in &l.words {
            let a = ((w.x0.max(0.0)) * 2.0) as usize;
            let b = ((w.x1.max(0.0)) * 2.0).ceil() as usize;
            for c in count.iter_mut().take(b.min(bins)).skip(a) {
                *c += 1;
            }
        }
    }
    // A page of few rows counts every word; on a page of hundreds, a word crossing a gap once
    // in a hundred lines is an overflow, not a column.
    let noise = data_lines.len() as u32 / 100;
    let mut spans: Vec<(f32, f32)> = Vec::new();
    let mut start: Option<usize> = None;
    for (i, &c) in count.iter().enumerate() {
        match (c > noise, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                spans.push((s as f32 / 2.0, i as f32 / 2.0));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s as f32 / 2.0, bins as f32 / 2.0));
    }
    // A gap narrower than a word space is the space between the words of one cell (rows of a
    // group printing the same text align their words), not the border of a column.
    let mut heights: Vec<f32> = data_lines.iter().flat_map(|l| l.words.iter().map(Word::height)).collect();
    heights.sort_by(f32::total_cmp);
    let word_space = heights.get(heights.len() / 2).copied().unwrap_or(0.0) * 0.6;
    let mut merged: Vec<(f32, f32)> = Vec::with_capacity(spans.len());
    for sp in spans {
        match merged.last_mut() {
            Some(last) if sp.0 - last.1 < word_space => last.1 = sp.1,
            _ => merged.push(sp),
        }
    }
    let spans = merged;
    let mut out: Vec<Column> = Vec::with_capacity(spans.len());
    for (i, &(x0, x1)) in spans.iter().enumerate() {
        let left = if i == 0 { f32::MIN } else { (spans[i - 1].1 + x0) / 2.0 };
        let right = if i + 1 == spans.len() { f32::MAX } else { (x1 + spans[i + 1].0) / 2.0 };
        out.push(Column { x0, x1, left, right });
    }
    out
}

/// The column a word falls in: the one whose share holds the word's middle.
pub fn column_of(cols: &[Column], w: &Word) -> Option<usize> {
    let mid = (w.x0 + w.x1) / 2.0;
    cols.iter().position(|c| mid >= c.left && mid < c.right)
}

/// Header phrases: words of one header line closer than about one space are one phrase.
fn phrases(line: &Line) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::new();
    for w in &line.words {
        let gap_limit = w.height() * 0.4;
        match out.last_mut() {
            Some(p) if w.x0 - p.x1 <= gap_limit => {
                p.text.push(' ');
                p.text.push_str(&w.text);
                p.x1 = p.x1.max(w.x1);
                p.top = p.top.min(w.top);
                p.bottom = p.bottom.max(w.bottom);
            }
            _ => out.push(w.clone()),
        }
    }
    out
}

/// Each column's header text, top to bottom: a phrase belongs to every column whose share it
/// overlaps by at least a quarter of the narrower of the two (a group header spanning several
/// columns names each of them).
pub fn header_texts(cols: &[Column], header_lines: &[&Line]) -> Vec<String> {
    let mut texts: Vec<Vec<String>> = vec![Vec::new(); cols.len()];
    for line in header_lines {
        for p in phrases(line) {
            let width = (p.x1 - p.x0).max(0.1);
            for (i, c) in cols.iter().enumerate() {
                let share_l = c.left.max(c.x0 - 40.0);
                let share_r = c.right.min(c.x1 + 40.0);
                let overlap = p.x1.min(share_r) - p.x0.max(share_l);
                if overlap > 0.0 && overlap >= 0.25 * width.min(share_r - share_l) {
                    texts[i].push(p.text.clone());
                }
            }
        }
    }
    texts.into_iter().map(|t| t.join(" ")).collect()
}

/// Splits a column that holds two of the header's text-column labels (Categoria, Marca,
/// Modelo, Versão, Motor): long texts of neighbouring columns can touch and merge in the
/// projection. The cut goes where the fewest data words cross, between the two labels.
pub fn split_at_labels(cols: Vec<Column>, data_lines: &[&Line], header_lines: &[&Line]) -> Vec<Column> {
    let labels: Vec<f32> = header_lines
        .iter()
        .flat_map(|l| l.words.iter())
        .filter(|w| {
            let n = super::roles::normalise(&w.text);
            ["categoria", "marca", "modelo", "versao", "motor"].iter().any(|k| n.starts_with(k))
        })
        .map(|w| (w.x0 + w.x1) / 2.0)
        .collect();
    let mut out: Vec<(f32, f32)> = Vec::new();
    for c in &cols {
        let mut inside: Vec<f32> = labels.iter().copied().filter(|x| *x >= c.x0 && *x <= c.x1).collect();
        inside.sort_by(f32::total_cmp);
        inside.dedup_by(|a, b| (*a - *b).abs() < 1.0);
        let mut start = c.x0;
        for pair in inside.windows(2) {
            // The x between the two labels crossed by the fewest data words.
            let (a, b) = (pair[0], pair[1]);
            let steps = ((b - a) * 2.0) as usize;
            let best = (1..steps.max(2)).map(|k| a + k as f32 / 2.0).min_by_key(|x| {
                data_lines.iter().flat_map(|l| l.words.iter()).filter(|w| w.x0 < *x && w.x1 > *x).count()
            });
            if let Some(x) = best {
                out.push((start, x));
                start = x;
            }
        }
        out.push((start, c.x1));
    }
    let mut result = Vec::with_capacity(out.len());
    for (i, &(x0, x1)) in out.iter().enumerate() {
        let left = if i == 0 { f32::MIN } else { (out[i - 1].1 + x0) / 2.0 };
        let right = if i + 1 == out.len() { f32::MAX } else { (x1 + out[i + 1].0) / 2.0 };
        result.push(Column { x0, x1, left, right });
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str, x0: f32, top: f32) -> Word {
        Word { text: text.into(), x0, x1: x0 + 6.0 * text.chars().count() as f32, top, bottom: top + 8.0 }
    }

    #[test]
    fn numbers_take_a_comma_or_a_point() {
        assert_eq!(parse_number("0,41"), Some(0.41));
        assert_eq!(parse_number("58.6"), Some(58.6));
        assert_eq!(parse_number("1.234,5"), Some(1234.5));
        assert_eq!(parse_number("280"), Some(280.0));
        assert_eq!(parse_number("#VALUE!"), None);
        assert_eq!(parse_number("A-6"), None);
        assert_eq!(parse_number(""), None);
        assert!(is_null_marker("\\") && is_null_marker("N.A.") && is_null_marker("--") && is_null_marker("ND"));
        assert!(!is_null_marker("0"));
    }

    #[test]
    fn columns_come_from_the_rows_and_are_named_by_their_headers() {
        let words = vec![
            w("Marca", 10.0, 0.0),
            w("Modelo", 100.0, 0.0),
            w("CO", 200.0, 0.0),
            w("NOx", 260.0, 0.0),
            w("MJ", 320.0, 0.0),
            w("Km", 380.0, 0.0),
            // row 1: the model wraps over two lines around the row line
            w("VIRTUS", 100.0, 16.0),
            w("FIAT", 10.0, 20.0),
            w("1,2", 200.0, 20.0),
            w("0,3", 260.0, 20.0),
            w("\\", 320.0, 20.0),
            w("ND", 380.0, 20.0),
            w("EXCLUSIVE", 100.0, 24.0),
            // row 2
            w("VW", 10.0, 40.0),
            w("UP", 100.0, 40.0),
            w("1,0", 200.0, 40.0),
            w("0,1", 260.0, 40.0),
            w("1,5", 320.0, 40.0),
            w("22", 380.0, 40.0),
        ];
        let ls = lines(&words);
        let data: Vec<&Line> = ls.iter().filter(|l| is_data_line(l)).collect();
        assert_eq!(data.len(), 2);
        // The model's column is found from the wrapped lines around the data lines.
        let rows: Vec<&Line> = ls.iter().skip(1).collect();
        let cols = columns(&rows);
        assert_eq!(cols.len(), 6, "{cols:?}");
        let header: Vec<&Line> = ls.iter().take(1).collect();
        let names = header_texts(&cols, &header);
        assert_eq!(names, vec!["Marca", "Modelo", "CO", "NOx", "MJ", "Km"]);
        assert_eq!(column_of(&cols, &w("EXCLUSIVE", 100.0, 24.0)), Some(1));
        assert_eq!(column_of(&cols, &w("ND", 380.0, 20.0)), Some(5));
    }
}
