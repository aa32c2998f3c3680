//! A PDF's pages as positioned words, through `pdf_oxide` (characters with their boxes, fonts
//! decoded through their ToUnicode maps and encodings).
//!
//! A PDF is untrusted input: the reader runs under `catch_unwind`, and a file it cannot read
//! (not a PDF, encrypted, truncated, corrupted) is an error naming the reason, never a panic.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::layout::{Page, Word};

/// Most pages read from one file (the tables have 7 to 47).
pub const MAX_PAGES: usize = 500;

/// Most characters read from one page (a table page holds some 25,000).
const MAX_CHARS_PER_PAGE: usize = 400_000;

/// Reads the pages of a PDF held in memory.
pub fn read(bytes: Vec<u8>) -> Result<Vec<Page>, String> {
    if bytes.is_empty() {
        return Err("arquivo vazio".into());
    }
    let head = &bytes[..bytes.len().min(1024)];
    if !head.windows(5).any(|w| w == b"%PDF-") {
        return Err("não é um PDF (falta a assinatura %PDF-)".into());
    }
    match catch_unwind(AssertUnwindSafe(|| read_unguarded(bytes))) {
        Ok(r) => r,
        Err(_) => Err("PDF corrompido: o leitor de PDF não conseguiu interpretá-lo".into()),
    }
}

fn read_unguarded(bytes: Vec<u8>) -> Result<Vec<Page>, String> {
    let doc = pdf_oxide::PdfDocument::from_bytes(bytes).map_err(|e| format!("PDF ilegível ({e})"))?;
    if doc.is_encrypted() {
        // An owner password alone (printing rights) still opens with the empty user password.
        let opened = doc.authenticate(b"").unwrap_or(false);
        if !opened {
            return Err("PDF cifrado (protegido por senha)".into());
        }
    }
    let n = doc.page_count().map_err(|e| format!("PDF ilegível: sem páginas ({e})"))?;
    if n == 0 {
        return Err("PDF sem páginas".into());
    }
    if n > MAX_PAGES {
        return Err(format!("PDF com {n} páginas (o limite é {MAX_PAGES})"));
    }
    let mut pages = Vec::with_capacity(n);
    for i in 0..n {
        let chars = doc.extract_chars(i).map_err(|e| format!("página {} ilegível ({e})", i + 1))?;
        if chars.len() > MAX_CHARS_PER_PAGE {
            return Err(format!("página {} com {} caracteres (o limite é {MAX_CHARS_PER_PAGE})", i + 1, chars.len()));
        }
        pages.push(Page { number: i + 1, words: words(&chars) });
    }
    Ok(pages)
}

/// A glyph: its text and box (y down), and its font size.
#[derive(Debug, Clone)]
struct Glyph {
    c: char,
    x0: f32,
    x1: f32,
    top: f32,
    bottom: f32,
    size: f32,
}

/// Characters into words: by baseline, then split at spaces and at gaps wider than a fifth of
/// the font size. White text (hidden cells of a spreadsheet) is not printed, so not read.
fn words(chars: &[pdf_oxide::layout::TextChar]) -> Vec<Word> {
    let mut glyphs: Vec<Glyph> = chars
        .iter()
        .filter(|c| !(c.color.r > 0.95 && c.color.g > 0.95 && c.color.b > 0.95))
        .filter(|c| {
            c.bbox.x.is_finite() && c.bbox.y.is_finite() && c.bbox.width.is_finite() && c.bbox.height.is_finite()
        })
        .map(|c| {
            let size =
                if c.font_size.is_finite() && c.font_size > 0.0 { c.font_size } else { c.bbox.height.abs().max(1.0) };
            Glyph {
                c: if c.char == '\u{ad}' { '-' } else { c.char },
                x0: c.bbox.x,
                x1: c.bbox.x + c.bbox.width.max(0.0),
                top: -(c.bbox.y + c.bbox.height.abs()),
                bottom: -c.bbox.y,
                size: size.min(200.0),
            }
        })
        .collect();
    glyphs.sort_by(|a, b| {
        let (ma, mb) = ((a.top + a.bottom) / 2.0, (b.top + b.bottom) / 2.0);
        ma.total_cmp(&mb).then(a.x0.total_cmp(&b.x0))
    });
    // Lines of glyphs: a glyph joins the current line when its middle is within a third of the
    // line's height of the line's middle.
    let mut lines: Vec<Vec<Glyph>> = Vec::new();
    for g in glyphs {
        let mid = (g.top + g.bottom) / 2.0;
        let joins = lines.last().is_some_and(|l| {
            let first = &l[0];
            let lmid = (first.top + first.bottom) / 2.0;
            let h = (first.bottom - first.top).max(g.bottom - g.top).max(0.5);
            (mid - lmid).abs() <= h * 0.4
        });
        if joins {
            lines.last_mut().expect("a line").push(g);
        } else {
            lines.push(vec![g]);
        }
    }
    let mut out = Vec::new();
    for mut line in lines {
        line.sort_by(|a, b| a.x0.total_cmp(&b.x0));
        let mut cur: Option<Word> = None;
        let mut last_x1 = f32::MIN;
        for g in line {
            if g.c.is_whitespace() {
                if let Some(w) = cur.take() {
                    out.push(w);
                }
                continue;
            }
            let gap = g.x0 - last_x1;
            let split = gap > g.size * 0.2 || gap < -g.size * 2.0;
            match (&mut cur, split) {
                (Some(w), false) => {
                    w.text.push(g.c);
                    w.x1 = w.x1.max(g.x1);
                    w.top = w.top.min(g.top);
                    w.bottom = w.bottom.max(g.bottom);
                }
                _ => {
                    if let Some(w) = cur.take() {
                        out.push(w);
                    }
                    cur = Some(Word { text: g.c.to_string(), x0: g.x0, x1: g.x1, top: g.top, bottom: g.bottom });
                }
            }
            last_x1 = g.x1;
        }
        if let Some(w) = cur.take() {
            out.push(w);
        }
    }
    out
}
