//! One PBEV table: its year, its cover's totals, its columns and its vehicle rows, with every
//! error of the table itself named by page and row.

use std::collections::BTreeMap;

use super::codes;
use super::layout::{self, is_null_marker, parse_number, Column, Line, Page, Word};
use super::roles::{self, mass_unit, normalise, MassUnit, Role};

/// A vehicle row in the catalog's columns (API-CONTRACT §1), before brand aliases and ids.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Record {
    pub page: usize,
    pub row: usize,
    pub marca: String,
    pub modelo: String,
    pub versao: String,
    pub categoria: String,
    pub motor: Option<String>,
    pub tipo_propulsao: String,
    pub combustivel_tipo: String,
    pub transmissao_tipo: Option<String>,
    pub transmissao_marchas: Option<i32>,
    pub ar_condicionado: Option<bool>,
    pub direcao_assistida_tipo: String,
    pub eficiencia_cidade_km_l: Option<f64>,
    pub eficiencia_estrada_km_l: Option<f64>,
    pub eficiencia_cidade_etanol_km_l: Option<f64>,
    pub eficiencia_estrada_etanol_km_l: Option<f64>,
    pub consumo_energetico_mj_km: Option<f64>,
    pub co2_fossil_g_km: Option<f64>,
    pub nmhc_g_km: Option<f64>,
    pub co_g_km: Option<f64>,
    pub nox_g_km: Option<f64>,
    pub nmog_nox_g_km: Option<f64>,
    pub autonomia_eletrica_km: Option<f64>,
    pub classificacao_pbe_categoria: Option<String>,
    pub classificacao_pbe_geral: Option<String>,
}

/// An error of the table itself.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Problem {
    pub pagina: usize,
    /// The row's position among the page's vehicle rows (None: a problem of a column or page).
    pub linha: Option<usize>,
    /// The vehicle, as the row prints it.
    pub veiculo: Option<String>,
    pub problema: String,
}

/// A table read from one PDF.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub year: i32,
    pub pages: usize,
    pub records: Vec<Record>,
    pub problems: Vec<Problem>,
    /// The totals the first page prints, label → value, in the order printed.
    pub cover: Vec<(String, i64)>,
    /// Headers of columns the importer does not know (their values are not imported).
    pub unknown_columns: Vec<String>,
}

/// Why a PDF is not a PBEV table.
#[derive(Debug, Clone, PartialEq)]
pub struct NotATable(pub String);

/// Roles every table must have for its rows to be catalog rows.
const REQUIRED: [Role; 3] = [Role::Marca, Role::Modelo, Role::Combustivel];

fn is_header_anchor(line: &Line) -> bool {
    let words: Vec<String> = line.words.iter().map(|w| normalise(&w.text)).collect();
    words.iter().any(|w| w.starts_with("marca")) && words.iter().any(|w| w.starts_with("modelo"))
}

/// The table year: "Tabela Ano NNNN" (or "Ano NNNN") on the first page.
fn find_year(lines: &[Line]) -> Option<i32> {
    for l in lines {
        let words: Vec<String> = l.words.iter().map(|w| normalise(&w.text)).collect();
        for (i, w) in words.iter().enumerate() {
            if w == "ano" || w == "ano:" {
                for next in words.iter().skip(i + 1).take(3) {
                    if let Ok(y) = next.parse::<i32>() {
                        if (1990..=2100).contains(&y) {
                            return Some(y);
                        }
                    }
                }
            }
        }
    }
    None
}

/// Totals the cover prints: "39 Marcas", "769 Modelos/Versões", "Elétricos (VE) 142 Modelos",
/// "Plug-in (VEHP) 94", "Híbridos 89", "Flex 233", "Gasolina 268", "Diesel 118".
fn find_cover(lines: &[&Line]) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = Vec::new();
    let labels = [
        ("eletricos", "Elétricos"),
        ("plug-in", "Plug-in"),
        ("hibridos", "Híbridos"),
        ("flex", "Flex"),
        ("gasolina", "Gasolina"),
        ("diesel", "Diesel"),
    ];
    for l in lines {
        let words: Vec<&Word> = l.words.iter().collect();
        let norm: Vec<String> = words.iter().map(|w| normalise(&w.text)).collect();
        for (i, n) in norm.iter().enumerate() {
            let number_before = || i.checked_sub(1).and_then(|j| norm[j].parse::<i64>().ok());
            if n == "marcas" {
                if let Some(v) = number_before() {
                    push_once(&mut out, "Marcas", v);
                }
            } else if n.starts_with("modelos")
                && (n.contains("versoes") || norm.get(i + 1).is_some_and(|x| x.contains("versoes") || x == "/"))
            {
                if let Some(v) = number_before() {
                    push_once(&mut out, "Modelos/Versões", v);
                }
            } else if let Some((_, label)) = labels.iter().find(|(k, _)| n == k) {
                let after = norm.iter().skip(i + 1).take(3).find_map(|x| x.parse::<i64>().ok());
                if let Some(v) = after {
                    push_once(&mut out, label, v);
                }
            }
        }
    }
    out
}

fn push_once(out: &mut Vec<(String, i64)>, label: &str, v: i64) {
    if !out.iter().any(|(l, _)| l == label) {
        out.push((label.to_string(), v));
    }
}

/// A page's parts: its header lines, its data region, and whether it printed a header.
struct PageParts<'a> {
    number: usize,
    header: Vec<&'a Line>,
    region: Vec<&'a Line>,
    above_header: Vec<&'a Line>,
    /// Where the header's "Marca" sits.
    marca_y: f32,
}

fn split_page(number: usize, lines: &[Line]) -> PageParts<'_> {
    let anchor = lines.iter().position(is_header_anchor);
    let first_data_after = |from: usize| (from..lines.len()).find(|&i| layout::is_data_line(&lines[i]));
    match anchor.and_then(|a| first_data_after(a).map(|d| (a, d))) {
        Some((a, d)) => {
            let half = (lines[d].top - lines[a].mid_y()).max(0.0);
            let line_h = lines[a].bottom - lines[a].top;
            let header_top = lines[a].mid_y() - half - line_h;
            // The band between "Marca"'s line and the first row; the first row's own lines
            // above its data line are sorted out by `leftovers_to_region`.
            let header: Vec<&Line> = lines[..d].iter().filter(|l| l.mid_y() >= header_top).collect();
            let region: Vec<&Line> = lines[d..].iter().collect();
            let above: Vec<&Line> = lines[..d].iter().filter(|l| l.mid_y() < header_top).collect();
            PageParts { number, header, region, above_header: above, marca_y: lines[a].mid_y() }
        }
        None => match anchor {
            // A header and no rows below it.
            Some(a) => PageParts {
                number,
                header: Vec::new(),
                region: Vec::new(),
                above_header: lines.iter().collect(),
                marca_y: lines[a].mid_y(),
            },
            None => PageParts {
                number,
                header: Vec::new(),
                region: lines.iter().collect(),
                above_header: Vec::new(),
                marca_y: 0.0,
            },
        },
    }
}

/// A row cut by a page break leaves its last lines under the next page's repeated header. The
/// header's own lines repeat on the other pages; lines at the foot of a page's header band
/// that no other page repeats (and that lie below the header's "Marca") are such leftovers:
/// they go to the data region, where the mend gives them back to their row.
fn leftovers_to_region(parts: &mut [PageParts]) {
    let with_header = parts.iter().filter(|p| !p.header.is_empty()).count();
    if with_header < 3 {
        return;
    }
    // Words (not whole lines: a page may group a header's words into lines a little
    // differently) that the header bands of most pages print.
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for p in parts.iter() {
        let mut keys: Vec<String> = p.header.iter().flat_map(|l| l.words.iter().map(|w| normalise(&w.text))).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            *seen.entry(k).or_default() += 1;
        }
    }
    for p in parts.iter_mut() {
        let common = |w: &Word| seen.get(&normalise(&w.text)).copied().unwrap_or(0) * 2 > with_header;
        let repeated = |l: &Line| l.words.iter().all(&common);
        // Leftovers are wrapped text cells: they lie under the text columns' labels.
        let text_right = p
            .header
            .iter()
            .flat_map(|l| l.words.iter())
            .filter(|w| {
                let n = normalise(&w.text);
                ["categoria", "marca", "modelo", "versao", "motor"].iter().any(|k| n.starts_with(k))
            })
            .map(|w| w.x1)
            .fold(f32::MIN, f32::max)
            + 20.0;
        let mut cut = p.header.len();
        while cut > 0 {
            let l = p.header[cut - 1];
            let in_text_columns = l.words.iter().all(|w| w.x1 <= text_right);
            if repeated(l) || !in_text_columns || l.mid_y() <= p.marca_y {
                break;
            }
            cut -= 1;
        }
        if cut < p.header.len() {
            let mut region: Vec<&Line> = p.header.drain(cut..).collect();
            region.append(&mut p.region);
            p.region = region;
        }
    }
}

/// How much farther (points) a centred cell may reach on one side of its data line than on the
/// other before the excess is taken for a neighbouring page's lines.
const CENTRED_SLACK: f32 = 2.5;

/// How far from a row's data line its wrapped lines lie, in line heights.
const ROW_REACH: f32 = 2.5;

/// Reads a table from its pages' words.
pub fn read(pages: &[Page], names: &codes::NamePatterns) -> Result<Table, NotATable> {
    let page_lines: Vec<Vec<Line>> = pages.iter().map(|p| layout::lines(&p.words)).collect();
    let mut parts: Vec<PageParts> = pages.iter().zip(&page_lines).map(|(p, ls)| split_page(p.number, ls)).collect();
    leftovers_to_region(&mut parts);
    let Some(first_header) = parts.iter().position(|p| !p.header.is_empty()) else {
        return Err(NotATable("nenhum cabeçalho de tabela PBEV (Marca, Modelo...) encontrado".into()));
    };
    let year = page_lines
        .first()
        .and_then(|ls| find_year(ls))
        .or_else(|| page_lines.iter().find_map(|ls| find_year(ls)))
        .ok_or_else(|| NotATable("o ano da tabela (\"Tabela Ano NNNN\") não foi encontrado".into()))?;
    let cover = find_cover(&parts[first_header].above_header);

    // Each page its own columns and header (pages of one table may be scaled differently); a
    // page without a header reads like the page before it.
    let mut problems: Vec<Problem> = Vec::new();
    let mut unknown_columns: Vec<String> = Vec::new();
    let mut models: Vec<Option<PageModel>> = Vec::new();
    let mut last: Option<PageModel> = None;
    let mut refusal: Option<String> = None;
    for (p, page) in parts.iter().zip(pages) {
        let data_lines: Vec<&Line> = p.region.iter().copied().filter(|l| layout::is_data_line(l)).collect();
        if data_lines.is_empty() {
            // A page of the table without rows is worth a line in the summary: its content may
            // be unreadable (a damaged stream reads as an empty page).
            problems.push(Problem {
                pagina: p.number,
                linha: None,
                veiculo: None,
                problema: if page.words.is_empty() {
                    "página sem texto legível: nenhuma linha importada dela".into()
                } else {
                    "página sem linhas de veículos".into()
                },
            });
            models.push(None);
            continue;
        }
        // The columns from the rows' lines: data lines and the wrapped lines around them (a
        // cell wrapped over two lines prints nothing on its row's data line).
        let near = row_lines(&p.region, &data_lines);
        let cols = layout::split_at_labels(layout::columns(&near), &near, &p.header);
        let model = if p.header.is_empty() {
            last.clone().map(|m| m.with_columns(cols))
        } else {
            match PageModel::new(p.number, cols, &p.header, &mut problems, &mut unknown_columns) {
                Ok(m) => Some(m),
                Err(why) => {
                    problems.push(Problem {
                        pagina: p.number,
                        linha: None,
                        veiculo: None,
                        problema: format!("{why}: as linhas da página não foram importadas"),
                    });
                    refusal.get_or_insert(why);
                    None
                }
            }
        };
        if model.is_some() {
            last.clone_from(&model);
        }
        models.push(model);
    }
    if models.iter().all(Option::is_none) {
        return Err(NotATable(refusal.unwrap_or_else(|| "nenhuma linha de veículo encontrada".into())));
    }
    unknown_columns.sort();
    unknown_columns.dedup();

    // Rows, page by page, with the lines of a row cut by a page break given back to it.
    let mut raw: Vec<Vec<RawRow>> = Vec::new();
    for (p, m) in parts.iter().zip(&models) {
        raw.push(match m {
            Some(m) => {
                let data_lines: Vec<&Line> = p.region.iter().copied().filter(|l| layout::is_data_line(l)).collect();
                let line_h = median_height(&data_lines).max(1.0);
                raw_rows(p.number, &m.cols, &p.region, ROW_REACH * line_h)
            }
            None => Vec::new(),
        });
    }
    mend_page_breaks(&mut raw, &models, &mut problems);
    let mut records = Vec::new();
    for (page_rows, m) in raw.iter().zip(&models) {
        let Some(m) = m else { continue };
        for r in page_rows {
            let cells = r.texts();
            if !r.stray.is_empty() {
                problems.push(Problem {
                    pagina: r.page,
                    linha: Some(r.index),
                    veiculo: None,
                    problema: format!("texto fora das colunas: {}", r.stray.join(" ")),
                });
            }
            let ctx = RowContext {
                cells: &cells,
                roles: &m.roles,
                headers: &m.headers,
                units: &m.units,
                e_is_electric: m.e_is_electric,
                names,
            };
            let (rec, mut row_problems) = ctx.record(r.page, r.index);
            problems.append(&mut row_problems);
            records.push(rec);
        }
    }
    let first = models.iter().flatten().next().expect("a page model");
    column_unit_checks(&mut records, &mut problems, &first.roles, &first.headers, &first.units);
    Ok(Table { year, pages: pages.len(), records, problems, cover, unknown_columns })
}

/// What a page's columns hold.
#[derive(Debug, Clone)]
struct PageModel {
    cols: Vec<Column>,
    roles: Vec<Option<Role>>,
    headers: Vec<String>,
    units: BTreeMap<usize, MassUnit>,
    e_is_electric: bool,
}

impl PageModel {
    fn new(
        page: usize,
        cols: Vec<Column>,
        header: &[&Line],
        problems: &mut Vec<Problem>,
        unknown: &mut Vec<String>,
    ) -> Result<Self, String> {
        let headers = layout::header_texts(&cols, header);
        let roles: Vec<Option<Role>> = headers.iter().map(|h| roles::role(h)).collect();
        // Neighbouring columns named alike are one column whose words the projection split.
        let (cols, headers, mut roles) = merge_alike(cols, headers, roles);
        // Some pages print the classification group's title without its two leaf headers:
        // its unnamed columns are, left to right, the class in the category and the overall one.
        let unnamed: Vec<usize> = (0..cols.len())
            .filter(|&i| roles[i].is_none() && normalise(&headers[i]).contains("classificacao"))
            .collect();
        let missing: Vec<Role> =
            [Role::PbeCategoria, Role::PbeGeral].into_iter().filter(|r| !roles.contains(&Some(*r))).collect();
        if !unnamed.is_empty() && unnamed.len() == missing.len() {
            for (&i, &r) in unnamed.iter().zip(&missing) {
                roles[i] = Some(r);
                problems.push(Problem {
                    pagina: page,
                    linha: None,
                    veiculo: None,
                    problema: format!(
                        "cabeçalho incompleto \"{}\": lido como {} pela ordem das colunas",
                        headers[i],
                        r.label()
                    ),
                });
            }
        }
        // Each role once: a second column claiming a role is not imported, and said so.
        for i in 0..roles.len() {
            if let Some(r) = roles[i] {
                if roles[..i].contains(&Some(r)) && !matches!(r, Role::Ignored(_)) {
                    problems.push(Problem {
                        pagina: page,
                        linha: None,
                        veiculo: None,
                        problema: format!(
                            "duas colunas lidas como {}: \"{}\" (a segunda não foi importada)",
                            r.label(),
                            headers[i]
                        ),
                    });
                    roles[i] = None;
                }
            } else if !headers[i].is_empty() {
                unknown.push(headers[i].clone());
            }
        }
        for r in REQUIRED {
            if !roles.contains(&Some(r)) {
                return Err(format!(
                    "a coluna {} não foi encontrada no cabeçalho da página {page} (colunas lidas: {})",
                    r.label(),
                    headers.iter().filter(|h| !h.is_empty()).cloned().collect::<Vec<_>>().join(" | ")
                ));
            }
        }
        let units: BTreeMap<usize, MassUnit> = (0..cols.len())
            .filter(|&i| matches!(roles[i], Some(Role::NmogNox | Role::Nmhc | Role::Co | Role::Nox)))
            .map(|i| (i, mass_unit(&headers[i]).unwrap_or(MassUnit::GKm)))
            .collect();
        let legend = roles
            .iter()
            .position(|x| *x == Some(Role::Combustivel))
            .map(|c| normalise(&headers[c]))
            .unwrap_or_default();
        // "Elétrico (E)" in the fuel column's legend: E is electric; "Etanol (E)": ethanol.
        let e_is_electric = !legend.contains("etanol") && legend.contains("eletrico");
        Ok(PageModel { cols, roles, headers, units, e_is_electric })
    }

    /// The same roles on a page without a header: each new column takes the role of the old
    /// column nearest to it.
    fn with_columns(&self, cols: Vec<Column>) -> PageModel {
        let mut roles = Vec::with_capacity(cols.len());
        let mut headers = Vec::with_capacity(cols.len());
        let mut units = BTreeMap::new();
        for (i, c) in cols.iter().enumerate() {
            let mid = (c.x0 + c.x1) / 2.0;
            let j = self
                .cols
                .iter()
                .enumerate()
                .min_by(|a, b| ((a.1.x0 + a.1.x1) / 2.0 - mid).abs().total_cmp(&((b.1.x0 + b.1.x1) / 2.0 - mid).abs()))
                .map(|(j, _)| j);
            match j {
                Some(j) if !roles.contains(&self.roles[j]) || self.roles[j].is_none() => {
                    roles.push(self.roles[j]);
                    headers.push(self.headers[j].clone());
                    if let Some(u) = self.units.get(&j) {
                        units.insert(i, *u);
                    }
                }
                _ => {
                    roles.push(None);
                    headers.push(String::new());
                }
            }
        }
        PageModel { cols, roles, headers, units, e_is_electric: self.e_is_electric }
    }
}

fn merge_alike(
    cols: Vec<Column>,
    headers: Vec<String>,
    roles: Vec<Option<Role>>,
) -> (Vec<Column>, Vec<String>, Vec<Option<Role>>) {
    let mut c2: Vec<Column> = Vec::with_capacity(cols.len());
    let mut h2: Vec<String> = Vec::with_capacity(cols.len());
    let mut r2: Vec<Option<Role>> = Vec::with_capacity(cols.len());
    for ((c, h), r) in cols.into_iter().zip(headers).zip(roles) {
        let same = r.is_some_and(|r| !matches!(r, Role::Ignored(_))) && r2.last() == Some(&r);
        if same {
            let last = c2.last_mut().expect("a column");
            last.x1 = c.x1;
            last.right = c.right;
        } else {
            c2.push(c);
            h2.push(h);
            r2.push(r);
        }
    }
    (c2, h2, r2)
}

/// The lines of a page's rows: its data lines and the lines within reach of one.
fn row_lines<'a>(region: &[&'a Line], data_lines: &[&Line]) -> Vec<&'a Line> {
    let h = median_height(data_lines).max(1.0);
    region
        .iter()
        .copied()
        .filter(|l| data_lines.iter().any(|d| (d.mid_y() - l.mid_y()).abs() <= ROW_REACH * h))
        .collect()
}

fn median_height(lines: &[&Line]) -> f32 {
    let mut h: Vec<f32> = lines.iter().flat_map(|l| l.words.iter().map(Word::height)).collect();
    if h.is_empty() {
        return 6.0;
    }
    h.sort_by(f32::total_cmp);
    h[h.len() / 2]
}

/// A row's words by column, each with its offset from the row's data line (negative above)
/// and its x, so a cell reads top to bottom, left to right.
#[derive(Debug, Clone)]
struct RawRow {
    page: usize,
    index: usize,
    cells: Vec<Vec<(f32, f32, String)>>,
    stray: Vec<String>,
}

impl RawRow {
    fn texts(&self) -> Vec<String> {
        self.cells
            .iter()
            .map(|c| {
                let mut c = c.clone();
                c.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
                c.into_iter().map(|(_, _, t)| t).collect::<Vec<_>>().join(" ")
            })
            .collect()
    }
}

fn raw_rows(page: usize, cols: &[Column], region: &[&Line], reach: f32) -> Vec<RawRow> {
    let anchors: Vec<usize> = (0..region.len()).filter(|&i| layout::is_data_line(region[i])).collect();
    let mut rows: Vec<RawRow> = anchors
        .iter()
        .enumerate()
        .map(|(k, _)| RawRow { page, index: k + 1, cells: vec![Vec::new(); cols.len()], stray: Vec::new() })
        .collect();
    let Some(&first) = anchors.first() else { return rows };
    let (Some(c0), Some(cn)) = (cols.first(), cols.last()) else { return rows };
    for (i, line) in region.iter().enumerate() {
        let (k, dist) = anchors
            .iter()
            .enumerate()
            .map(|(k, &a)| (k, line.mid_y() - region[a].mid_y()))
            .min_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            .expect("anchors");
        let own = anchors[k] == i;
        // Lines before the first row are a cut row's leftovers (sorted out by the mend); lines
        // after the last row beyond reach are the page's foot.
        let attach = own || dist.abs() <= reach || i < first;
        if !attach {
            continue;
        }
        let dy = if own { 0.0 } else { dist };
        for w in &line.words {
            // Furniture beside the table (page numbers, addresses) is not the row's.
            if w.x1 < c0.x0 - 2.0 || w.x0 > cn.x1 + 2.0 {
                if own {
                    rows[k].stray.push(w.text.clone());
                }
                continue;
            }
            match layout::column_of(cols, w) {
                Some(c) => rows[k].cells[c].push((dy, w.x0, w.text.clone())),
                None if own => rows[k].stray.push(w.text.clone()),
                None => {}
            }
        }
    }
    rows
}

/// A row cut by a page break prints part of a wrapped cell at the foot of one page and the
/// rest at the head of the next. A cell's text is centred on its row's data line, so a cell
/// reaching farther on one side than on the other lost the excess to the neighbouring page:
/// those words go back to the row across the break, into the column of the same role.
fn mend_page_breaks(pages: &mut [Vec<RawRow>], models: &[Option<PageModel>], problems: &mut Vec<Problem>) {
    let reach_of = |c: &[(f32, f32, String)]| {
        let top = c.iter().map(|w| w.0).fold(0.0f32, f32::min);
        let bottom = c.iter().map(|w| w.0).fold(0.0f32, f32::max);
        (top, bottom)
    };
    let mut prev_page: Option<usize> = None;
    for p in 0..pages.len() {
        if pages[p].is_empty() {
            continue;
        }
        let Some(q) = prev_page.replace(p) else { continue };
        let (Some(mq), Some(mp)) = (&models[q], &models[p]) else { continue };
        let mut to_prev: Vec<(Option<Role>, f32, f32, String)> = Vec::new();
        let mut to_next: Vec<(Option<Role>, f32, f32, String)> = Vec::new();
        {
            let first = &mut pages[p][0];
            for (c, cell) in first.cells.iter_mut().enumerate() {
                let (top, bottom) = reach_of(cell);
                let limit = bottom + CENTRED_SLACK;
                if -top > limit {
                    let role = mp.roles.get(c).copied().flatten();
                    cell.retain(|w| {
                        if w.0 < -limit {
                            to_prev.push((role, w.0, w.1, w.2.clone()));
                            false
                        } else {
                            true
                        }
                    });
                }
            }
        }
        {
            let last = pages[q].last_mut().expect("a row");
            for (c, cell) in last.cells.iter_mut().enumerate() {
                let (top, bottom) = reach_of(cell);
                let limit = -top + CENTRED_SLACK;
                if bottom > limit {
                    let role = mq.roles.get(c).copied().flatten();
                    cell.retain(|w| {
                        if w.0 > limit {
                            to_next.push((role, w.0, w.1, w.2.clone()));
                            false
                        } else {
                            true
                        }
                    });
                }
            }
        }
        let mut place =
            |row: &mut RawRow, model: &PageModel, words: Vec<(Option<Role>, f32, f32, String)>, shift: f32| {
                for (role, dy, x, text) in words {
                    match role.and_then(|r| model.roles.iter().position(|x| *x == Some(r))) {
                        Some(c) => row.cells[c].push((shift + dy, x, text)),
                        None => problems.push(Problem {
                            pagina: row.page,
                            linha: Some(row.index),
                            veiculo: None,
                            problema: format!(
                                "texto de uma linha cortada pela quebra de página sem coluna correspondente: {text}"
                            ),
                        }),
                    }
                }
            };
        if !to_prev.is_empty() {
            let last = pages[q].last_mut().expect("a row");
            place(last, mq, to_prev, 10_000.0);
        }
        if !to_next.is_empty() {
            let first = &mut pages[p][0];
            place(first, mp, to_next, -10_000.0);
        }
    }
    // The last row of the table: words below it reaching farther than its cells reach above
    // are the page's foot (a footnote right under the table), not the row's.
    if let Some(last) = pages.iter_mut().rev().find(|rows| !rows.is_empty()).and_then(|rows| rows.last_mut()) {
        for cell in last.cells.iter_mut() {
            let (top, bottom) = reach_of(cell);
            let limit = -top + CENTRED_SLACK;
            if bottom > limit {
                cell.retain(|w| w.0 <= limit);
            }
        }
    }
}

struct RowContext<'a> {
    cells: &'a [String],
    roles: &'a [Option<Role>],
    headers: &'a [String],
    units: &'a BTreeMap<usize, MassUnit>,
    e_is_electric: bool,
    names: &'a codes::NamePatterns,
}

impl RowContext<'_> {
    fn col(&self, r: Role) -> Option<usize> {
        self.roles.iter().position(|x| *x == Some(r))
    }
    fn text(&self, r: Role) -> Option<&str> {
        self.col(r).map(|c| self.cells[c].trim()).filter(|t| !is_null_marker(t))
    }

    fn record(&self, page: usize, row: usize) -> (Record, Vec<Problem>) {
        let mut problems = Vec::new();
        let marca = self.text(Role::Marca).unwrap_or("").to_string();
        let modelo = self.text(Role::Modelo).unwrap_or("").to_string();
        let versao = self.text(Role::Versao).unwrap_or("").to_string();
        let vehicle = format!("{marca} {modelo} {versao}").split_whitespace().collect::<Vec<_>>().join(" ");
        let mut problem = |what: String| {
            problems.push(Problem { pagina: page, linha: Some(row), veiculo: Some(vehicle.clone()), problema: what })
        };
        let mut rec = Record {
            page,
            row,
            marca,
            modelo,
            versao,
            categoria: self.text(Role::Categoria).unwrap_or("").to_string(),
            motor: self.text(Role::Motor).map(str::to_string),
            ..Record::default()
        };
        for (field, value) in [("marca", &rec.marca), ("modelo", &rec.modelo)] {
            if value.is_empty() {
                problem(format!("{field} em branco"));
            }
        }

        // Propulsion: the column when the table has one, else the fuel code and the names.
        let printed_prop = self.text(Role::Propulsao);
        let prop = match (self.col(Role::Propulsao), printed_prop) {
            (Some(_), Some(p)) => match codes::propulsion(p) {
                Some(p) => Some(p),
                None => {
                    problem(format!("tipo de propulsão desconhecido \"{p}\""));
                    None
                }
            },
            (Some(_), None) => {
                problem("tipo de propulsão em branco".into());
                None
            }
            (None, _) => None,
        };
        let fuel_code = self.text(Role::Combustivel).unwrap_or("");
        let motor_electric = rec.motor.as_deref().is_some_and(|m| normalise(m) == "eletrico");
        let electric_row = prop == Some("Elétrico");
        let fuel = if electric_row {
            if !matches!(normalise(fuel_code).as_str(), "e" | "eletrico") {
                problem(format!("combustível \"{fuel_code}\" contradiz a propulsão Elétrico: importado como Elétrico"));
            }
            Some("Elétrico")
        } else {
            // E on a row whose propulsion says otherwise is E of the legend; an E legend of
            // Elétrico on a combustion or hybrid row contradicts the row.
            let f = codes::fuel(fuel_code, self.e_is_electric && prop.is_none());
            if f == Some("Etanol") && self.e_is_electric {
                problem(format!(
                    "combustível \"{fuel_code}\" (Elétrico na legenda) num veículo {}: importado como Etanol",
                    prop.unwrap_or("")
                ));
            }
            match f {
                Some(f) => Some(f),
                None => {
                    problem(if fuel_code.is_empty() {
                        "combustível em branco".to_string()
                    } else {
                        format!("código de combustível desconhecido \"{fuel_code}\"")
                    });
                    None
                }
            }
        };
        if motor_electric && fuel.is_some_and(|f| f != "Elétrico") {
            problem(format!("motor Elétrico com combustível \"{fuel_code}\""));
        }
        let prop = match prop {
            Some(p) => p,
            None if fuel == Some("Elétrico") => "Elétrico",
            None => match self.names.classify(&rec.modelo, &rec.versao) {
                Some(p) => {
                    problem(format!("tabela sem coluna de propulsão: {p} pelo nome do modelo ou da versão"));
                    p
                }
                None => "Combustão",
            },
        };
        rec.tipo_propulsao = prop.to_string();
        rec.combustivel_tipo = fuel.unwrap_or("").to_string();

        if let Some(t) = self.text(Role::Transmissao) {
            match codes::transmission(t) {
                Some((tipo, marchas)) => {
                    rec.transmissao_tipo = Some(tipo.to_string());
                    rec.transmissao_marchas = marchas;
                }
                None => problem(format!("código de transmissão desconhecido \"{t}\"")),
            }
        }
        if let Some(a) = self.text(Role::ArCondicionado) {
            match codes::air_conditioning(a) {
                Some(v) => rec.ar_condicionado = Some(v),
                None => problem(format!("ar condicionado ilegível \"{a}\"")),
            }
        }
        match self.text(Role::Direcao) {
            Some(d) => match codes::steering(d) {
                Some(v) => rec.direcao_assistida_tipo = v.to_string(),
                None => problem(format!("direção assistida desconhecida \"{d}\"")),
            },
            None if self.col(Role::Direcao).is_some() => problem("direção assistida em branco".into()),
            None => {}
        }
        for (role, slot) in [
            (Role::PbeCategoria, &mut rec.classificacao_pbe_categoria),
            (Role::PbeGeral, &mut rec.classificacao_pbe_geral),
        ] {
            if let Some(c) = self.text(role) {
                match codes::pbe_class(c) {
                    Some(v) => *slot = Some(v.to_string()),
                    None => problem(format!("classificação PBE ilegível \"{c}\"")),
                }
            }
        }

        let num = |role: Role, problem: &mut dyn FnMut(String)| -> Option<f64> {
            let c = self.col(role)?;
            let t = self.cells[c].trim();
            if is_null_marker(t) {
                return None;
            }
            match parse_number(t) {
                Some(v) if v < 0.0 => {
                    problem(format!("valor negativo em \"{}\": {t}", self.headers[c]));
                    None
                }
                Some(v) => Some(match self.units.get(&c) {
                    Some(MassUnit::MgKm) => v / 1000.0,
                    _ => v,
                }),
                None => {
                    problem(format!("célula ilegível em {}: \"{t}\"", role.label()));
                    None
                }
            }
        };
        let is_flex = fuel == Some("Flex");
        let is_ethanol = fuel == Some("Etanol");
        let electric = prop == "Elétrico";
        let (kc, ke) = (num(Role::KmlCidade, &mut problem), num(Role::KmlEstrada, &mut problem));
        let (ec, ee) = (num(Role::KmlEtanolCidade, &mut problem), num(Role::KmlEtanolEstrada, &mut problem));
        let (vc, ve) = (num(Role::KmlEletricoCidade, &mut problem), num(Role::KmlEletricoEstrada, &mut problem));
        if electric {
            // km/le: its own columns when the table has them, else the gasoline pair.
            let has_own = self.col(Role::KmlEletricoCidade).is_some();
            (rec.eficiencia_cidade_km_l, rec.eficiencia_estrada_km_l) = if has_own { (vc, ve) } else { (kc, ke) };
            if ec.is_some() || ee.is_some() {
                problem("quilometragem de etanol impressa para um veículo elétrico (não importada)".into());
            }
        } else if is_ethanol {
            (rec.eficiencia_cidade_km_l, rec.eficiencia_estrada_km_l) = (ec.or(kc), ee.or(ke));
        } else {
            (rec.eficiencia_cidade_km_l, rec.eficiencia_estrada_km_l) = (kc, ke);
            if is_flex {
                (rec.eficiencia_cidade_etanol_km_l, rec.eficiencia_estrada_etanol_km_l) = (ec, ee);
            }
        }
        rec.consumo_energetico_mj_km = num(Role::ConsumoMj, &mut problem);
        let co2 = num(Role::Co2Fossil, &mut problem);
        let co2_e = num(Role::Co2Etanol, &mut problem);
        rec.co2_fossil_g_km = if electric {
            Some(0.0)
        } else if is_ethanol {
            co2_e.or(co2)
        } else {
            co2
        };
        rec.nmhc_g_km = num(Role::Nmhc, &mut problem);
        rec.co_g_km = num(Role::Co, &mut problem);
        rec.nox_g_km = num(Role::Nox, &mut problem);
        rec.nmog_nox_g_km = num(Role::NmogNox, &mut problem);
        rec.autonomia_eletrica_km = num(Role::Autonomia, &mut problem);
        if rec.direcao_assistida_tipo.is_empty() {
            problem("direção assistida ausente: importada como texto vazio".into());
        }
        (rec, problems)
    }
}

/// Values that do not fit their header's unit. A pollutant column headed g/km whose values are
/// those of mg/km (most above 2 g/km, where the PROCONVE limits are a tenth of that) is read as
/// mg/km, and the summary says so; single implausible values are named row by row.
fn column_unit_checks(
    records: &mut [Record],
    problems: &mut Vec<Problem>,
    roles: &[Option<Role>],
    headers: &[String],
    units: &BTreeMap<usize, MassUnit>,
) {
    type Get = fn(&mut Record) -> &mut Option<f64>;
    let pollutants: [(Role, Get); 4] = [
        (Role::NmogNox, |r| &mut r.nmog_nox_g_km),
        (Role::Nmhc, |r| &mut r.nmhc_g_km),
        (Role::Co, |r| &mut r.co_g_km),
        (Role::Nox, |r| &mut r.nox_g_km),
    ];
    for (role, get) in pollutants {
        let Some(c) = roles.iter().position(|x| *x == Some(role)) else { continue };
        if units.get(&c) != Some(&MassUnit::GKm) {
            continue;
        }
        let mut values: Vec<f64> = records.iter_mut().filter_map(|r| *get(r)).filter(|v| *v > 0.0).collect();
        if values.len() < 5 {
            continue;
        }
        values.sort_by(f64::total_cmp);
        let median = values[values.len() / 2];
        let mg_like = if role == Role::Co { 5.0 } else { 0.5 };
        if median > mg_like {
            for r in records.iter_mut() {
                if let Some(v) = get(r) {
                    *v /= 1000.0;
                }
            }
            problems.push(Problem {
                pagina: records.first().map_or(1, |r| r.page),
                linha: None,
                veiculo: None,
                problema: format!(
                    "a coluna \"{}\" diz g/km, mas seus valores são de mg/km (mediana {median}): importados como mg/km",
                    headers[c]
                ),
            });
        }
    }
    for r in records.iter_mut() {
        let vehicle = format!("{} {} {}", r.marca, r.modelo, r.versao);
        let mut check = |what: &str, v: Option<f64>, lo: f64, hi: f64| {
            if let Some(v) = v {
                if v < lo || v > hi {
                    problems.push(Problem {
                        pagina: r.page,
                        linha: Some(r.row),
                        veiculo: Some(vehicle.clone()),
                        problema: format!("{what} {v} fora do plausível ({lo}–{hi}): importado como impresso"),
                    });
                }
            }
        };
        let electric = r.tipo_propulsao == "Elétrico";
        let (lo, hi) = if electric { (5.0, 300.0) } else { (2.0, 80.0) };
        check("eficiência na cidade (km/l)", r.eficiencia_cidade_km_l, lo, hi);
        check("eficiência na estrada (km/l)", r.eficiencia_estrada_km_l, lo, hi);
        check("eficiência na cidade com etanol (km/l)", r.eficiencia_cidade_etanol_km_l, 1.5, 60.0);
        check("eficiência na estrada com etanol (km/l)", r.eficiencia_estrada_etanol_km_l, 1.5, 60.0);
        check("consumo energético (MJ/km)", r.consumo_energetico_mj_km, 0.05, 10.0);
        check("CO2 fóssil (g/km)", r.co2_fossil_g_km, 0.0, 800.0);
        for (name, v) in [("NMHC", r.nmhc_g_km), ("CO", r.co_g_km), ("NOx", r.nox_g_km), ("NMOG+NOx", r.nmog_nox_g_km)]
        {
            check(&format!("{name} (g/km)"), v, 0.0, 5.0);
        }
        let mut missing = |what: &str| {
            problems.push(Problem {
                pagina: r.page,
                linha: Some(r.row),
                veiculo: Some(vehicle.clone()),
                problema: format!("{what} em branco (importado como nulo)"),
            })
        };
        if r.eficiencia_cidade_km_l.is_none() && r.eficiencia_estrada_km_l.is_none() {
            missing("quilometragem por litro");
        }
        if r.combustivel_tipo == "Flex"
            && r.eficiencia_cidade_etanol_km_l.is_none()
            && r.eficiencia_estrada_etanol_km_l.is_none()
        {
            missing("quilometragem com etanol de um Flex");
        }
        if !electric && r.co2_fossil_g_km.is_none() {
            missing("CO2 fóssil");
        }
        if r.consumo_energetico_mj_km.is_none() {
            missing("consumo energético");
        }
        if !electric && r.co2_fossil_g_km == Some(0.0) && r.tipo_propulsao == "Combustão" {
            problems.push(Problem {
                pagina: r.page,
                linha: Some(r.row),
                veiculo: Some(vehicle.clone()),
                problema: "CO2 fóssil 0 num veículo a combustão".into(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str, x0: f32, top: f32) -> Word {
        Word { text: text.into(), x0, x1: x0 + 4.0 * text.chars().count() as f32, top, bottom: top + 6.0 }
    }

    fn header(y: f32) -> Vec<Word> {
        vec![
            w("Marca", 10.0, y),
            w("Modelo", 60.0, y),
            w("Versão", 110.0, y),
            w("Combustível", 160.0, y),
            w("CO", 215.0, y),
            w("(g/km)", 222.0, y + 7.0),
            w("MJ/km", 260.0, y),
            w("Cidade", 310.0, y),
            w("(km/l)", 310.0, y + 7.0),
            w("Estrada", 360.0, y),
            w("(km/l)", 360.0, y + 7.0),
        ]
    }

    fn row(y: f32, marca: &str, modelo: &str, fuel: &str, nums: [&str; 4]) -> Vec<Word> {
        vec![
            w(marca, 10.0, y),
            w(modelo, 60.0, y),
            w(fuel, 165.0, y),
            w(nums[0], 215.0, y),
            w(nums[1], 262.0, y),
            w(nums[2], 312.0, y),
            w(nums[3], 362.0, y),
        ]
    }

    fn page(number: usize, words: Vec<Vec<Word>>) -> Page {
        Page { number, words: words.into_iter().flatten().collect() }
    }

    #[test]
    fn a_row_cut_by_a_page_break_gets_its_lines_back_and_codes_become_words() {
        let p1 = page(
            1,
            vec![
                vec![w("Tabela", 10.0, -40.0), w("Ano", 40.0, -40.0), w("2030", 60.0, -40.0)],
                header(0.0),
                // A version wrapped over two lines around its row.
                vec![w("WAY", 110.0, 26.0), w("1.0", 110.0, 34.0)],
                row(30.0, "FIAT", "UNO", "F", ["0,5", "1,2", "12,3", "14,5"]),
                // The last row: the first half of its version here, the rest on page 2.
                vec![w("ATTRACTIVE", 110.0, 56.0)],
                row(60.0, "FIAT", "PALIO", "F", ["0,6", "1,3", "11,0", "13,0"]),
            ],
        );
        let p2 = page(
            2,
            vec![
                header(0.0),
                vec![w("1.4", 110.0, 20.0)],
                row(40.0, "VW", "GOL", "G", ["0,4", "1,3", "13", "15"]),
                vec![w("TRENDLINE", 110.0, 40.0)],
            ],
        );
        let p3 = page(3, vec![header(0.0), row(30.0, "VW", "UP", "D", ["ND", "\\", "13", "15"])]);
        let t = read(&[p1, p2, p3], &codes::NamePatterns::default()).unwrap();
        assert_eq!(t.year, 2030, "{:?}", t.problems);
        let got: Vec<(String, String, String)> =
            t.records.iter().map(|r| (r.modelo.clone(), r.versao.clone(), r.combustivel_tipo.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("UNO".into(), "WAY 1.0".into(), "Flex".into()),
                ("PALIO".into(), "ATTRACTIVE 1.4".into(), "Flex".into()),
                ("GOL".into(), "TRENDLINE".into(), "Gasolina".into()),
                ("UP".into(), "".into(), "Diesel".into()),
            ]
        );
        assert_eq!(t.records[0].co_g_km, Some(0.5));
        assert_eq!(t.records[0].consumo_energetico_mj_km, Some(1.2));
        assert_eq!(
            (t.records[2].eficiencia_cidade_km_l, t.records[2].eficiencia_estrada_km_l),
            (Some(13.0), Some(15.0))
        );
        assert_eq!(t.records[3].co_g_km, None);
        assert_eq!(t.records[3].consumo_energetico_mj_km, None);
        assert_eq!((t.records[3].page, t.records[3].row), (3, 1));
        // The blank MJ/km of the last row is named with its page and row.
        assert!(t
            .problems
            .iter()
            .any(|p| p.pagina == 3 && p.linha == Some(1) && p.problema.contains("consumo energético")));
    }

    #[test]
    fn a_document_without_the_headers_is_not_a_table() {
        let p = page(1, vec![vec![w("Relatório", 10.0, 0.0), w("de", 60.0, 0.0), w("vendas", 80.0, 0.0)]]);
        assert!(read(&[p], &codes::NamePatterns::default()).is_err());
    }
}
