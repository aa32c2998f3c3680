//! The report's four charts, drawn with plotters' SVG backend into strings that the page
//! inlines: the eco-score distribution, the mean CO2 by category, the emissions distribution and
//! the mean eco score by model year. Labels are Portuguese, numbers in the Brazilian format.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::numbers::{decimal, integer};
use super::ReportData;

/// Size of a chart in SVG pixels (the page scales it to its column): half the page's width,
/// or all of it for the charts with many groups (categories, years).
const WIDTH: u32 = 640;
const WIDE: u32 = 1280;
const HEIGHT: u32 = 360;
/// Font sizes (plotters writes 1/1.24 of them as the SVG font size).
const LABEL: u32 = 18;
const DESC: u32 = 19;
const FONT: &str = "sans-serif";

const INK: RGBColor = RGBColor(0x1f, 0x29, 0x33);
const GRID: RGBColor = RGBColor(0xd8, 0xde, 0xe4);
const TEAL: RGBColor = RGBColor(0x1b, 0x7f, 0x79);
/// From bad to good: red, orange, light green, green.
const BAD_TO_GOOD: [RGBColor; 4] =
    [RGBColor(0xc0, 0x39, 0x2b), RGBColor(0xe6, 0x7e, 0x22), RGBColor(0x8b, 0xb1, 0x3a), RGBColor(0x2e, 0x7d, 0x32)];

/// The eco-score bands' qualitative names (the `faixa` of a vehicle in that band).
const ECO_BAND_NAMES: [&str; 4] = ["Baixo", "Regular", "Bom", "Excelente"];

/// The four charts as SVG documents.
#[derive(Debug, Clone)]
pub struct Charts {
    pub eco_score_distribution: String,
    pub co2_by_category: String,
    pub emissions_distribution: String,
    pub eco_score_by_year: String,
}

impl Charts {
    pub fn draw(report: &ReportData) -> anyhow::Result<Charts> {
        let eco_bands: Vec<(String, u64)> = report
            .summary
            .distribuicao_eco_score
            .iter()
            .enumerate()
            .map(|(i, b)| match ECO_BAND_NAMES.get(i) {
                Some(name) => (format!("{name} ({})", b.faixa), b.total),
                None => (b.faixa.clone(), b.total),
            })
            .collect();
        let co2_bands: Vec<(String, u64)> =
            report.emissions.distribuicao.iter().map(|b| (format!("{} g/km", b.faixa), b.total)).collect();
        // Low CO2 is good: the first band gets the good end of the scale.
        let mut good_to_bad = BAD_TO_GOOD;
        good_to_bad.reverse();
        let by_category: Vec<(String, f64)> =
            report.emissions.media_por_categoria.iter().map(|g| (g.grupo.clone(), g.media)).collect();
        Ok(Charts {
            eco_score_distribution: bands(&eco_bands, &BAD_TO_GOOD, "Faixa de eco score")?,
            co2_by_category: means_by_group(&by_category, "CO2 médio (g/km)")?,
            emissions_distribution: bands(&co2_bands, &good_to_bad, "Faixa de CO2")?,
            eco_score_by_year: by_year(&report.eco_score_by_year)?,
        })
    }

    /// The charts in the page's order: the two distributions side by side, then the wide ones.
    pub fn all(&self) -> [&str; 4] {
        [&self.eco_score_distribution, &self.emissions_distribution, &self.co2_by_category, &self.eco_score_by_year]
    }
}

/// A plotters error as text (its errors borrow the backend's error type).
fn text<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Runs `draw` on a white SVG canvas of `size` and returns the document. The namespace
/// attribute is dropped: the page inlines the SVG (HTML puts it in the SVG namespace itself) and
/// then references no URL at all.
fn svg(
    what: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> anyhow::Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE)
            .map_err(text)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(text))
            .map_err(|e| anyhow::anyhow!("cannot draw the chart {what}: {e}"))?;
    }
    Ok(out.replacen(r#" xmlns="http://www.w3.org/2000/svg""#, "", 1))
}

/// A chart with nothing to show: a framed "sem dados".
fn empty(root: &DrawingArea<SVGBackend, Shift>) -> Result<(), String> {
    let (w, h) = root.dim_in_pixel();
    let style = (FONT, 20).into_font().color(&INK).pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new("Sem dados", (w as i32 / 2, h as i32 / 2), style)).map_err(text)
}

/// Headroom above the largest value, so the value labels fit.
fn upper(max: f64) -> f64 {
    if max > 0.0 && max.is_finite() {
        max * 1.15
    } else {
        1.0
    }
}

/// A vertical bar per band with its count on top, bars coloured by `colors` in order.
fn bands(items: &[(String, u64)], colors: &[RGBColor; 4], x_desc: &str) -> anyhow::Result<String> {
    svg(x_desc, (WIDTH, HEIGHT), |root| {
        if items.is_empty() {
            return empty(root);
        }
        let n = items.len() as u32;
        let top = upper(items.iter().map(|(_, t)| *t as f64).fold(0.0, f64::max));
        let mut chart = ChartBuilder::on(root)
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d((0u32..n.max(2) - 1).into_segmented(), 0f64..top)
            .map_err(text)?;
        let label = |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(i) => items.get(*i as usize).map(|(l, _)| l.clone()).unwrap_or_default(),
            _ => String::new(),
        };
        let count = |v: &f64| integer(v.round() as u64);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID)
            .axis_style(INK)
            .x_labels(items.len())
            .y_labels(6)
            .x_label_formatter(&label)
            .y_label_formatter(&count)
            .label_style((FONT, LABEL).into_font().color(&INK))
            .axis_desc_style((FONT, DESC).into_font().color(&INK))
            .x_desc(x_desc)
            .y_desc("Veículos")
            .draw()
            .map_err(text)?;
        chart
            .draw_series(items.iter().enumerate().map(|(i, (_, total))| {
                let color = colors[i % colors.len()];
                let mut bar = Rectangle::new(
                    [(SegmentValue::Exact(i as u32), 0.0), (SegmentValue::Exact(i as u32 + 1), *total as f64)],
                    color.filled(),
                );
                bar.set_margin(0, 0, 14, 14);
                bar
            }))
            .map_err(text)?;
        let value_style = (FONT, LABEL).into_font().color(&INK).pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(items.iter().enumerate().map(|(i, (_, total))| {
                Text::new(integer(*total), (SegmentValue::CenterOf(i as u32), *total as f64), value_style.clone())
            }))
            .map_err(text)?;
        Ok(())
    })
}

/// A horizontal bar per group (first group on top) with its mean at the end of the bar.
fn means_by_group(groups: &[(String, f64)], x_desc: &str) -> anyhow::Result<String> {
    let rows = groups.len().max(1) as u32;
    let height = (90 + 32 * rows).max(HEIGHT);
    // Room for the longest name at the label size (about 9 px a character).
    let longest = groups.iter().map(|(g, _)| g.chars().count()).max().unwrap_or(0) as u32;
    let label_area = (longest * 9 + 16).clamp(72, 420);
    svg(x_desc, (WIDE, height), |root| {
        if groups.is_empty() {
            return empty(root);
        }
        let n = groups.len() as u32;
        let right = upper(groups.iter().map(|(_, m)| *m).fold(0.0, f64::max));
        let mut chart = ChartBuilder::on(root)
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(label_area)
            .build_cartesian_2d(0f64..right, (0u32..n.max(2) - 1).into_segmented())
            .map_err(text)?;
        // Slot 0 is the bottom of the chart: group i goes to slot n - 1 - i.
        let slot = |i: usize| n - 1 - i as u32;
        let label = |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(s) if *s < n => groups[(n - 1 - s) as usize].0.clone(),
            _ => String::new(),
        };
        let value = |v: &f64| decimal(*v, 0);
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID)
            .axis_style(INK)
            .y_labels(groups.len())
            .x_labels(6)
            .y_label_formatter(&label)
            .x_label_formatter(&value)
            .label_style((FONT, LABEL).into_font().color(&INK))
            .axis_desc_style((FONT, DESC).into_font().color(&INK))
            .x_desc(x_desc)
            .draw()
            .map_err(text)?;
        chart
            .draw_series(groups.iter().enumerate().map(|(i, (_, mean))| {
                let s = slot(i);
                let mut bar =
                    Rectangle::new([(0.0, SegmentValue::Exact(s)), (*mean, SegmentValue::Exact(s + 1))], TEAL.filled());
                bar.set_margin(5, 5, 0, 0);
                bar
            }))
            .map_err(text)?;
        let value_style = (FONT, LABEL).into_font().color(&INK).pos(Pos::new(HPos::Left, VPos::Center));
        chart
            .draw_series(groups.iter().enumerate().map(|(i, (_, mean))| {
                Text::new(
                    format!(" {}", decimal(*mean, 2)),
                    (*mean, SegmentValue::CenterOf(slot(i))),
                    value_style.clone(),
                )
            }))
            .map_err(text)?;
        Ok(())
    })
}

/// The mean eco score per model year: a line through one point per year, each labelled.
fn by_year(points: &[(i32, f64)]) -> anyhow::Result<String> {
    svg("Eco score médio por ano-modelo", (WIDE, 400), |root| {
        let (Some(first), Some(last)) = (points.first().map(|p| p.0), points.last().map(|p| p.0)) else {
            return empty(root);
        };
        let last = last.max(first + 1);
        let years = (last - first + 1) as usize;
        let mut chart = ChartBuilder::on(root)
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(56)
            .build_cartesian_2d((first..last).into_segmented(), 0f64..100f64)
            .map_err(text)?;
        // Every year when they fit, every other one when there are many.
        let step = if years > 30 { 2 } else { 1 };
        let label = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(y) if (y - first) % step == 0 => y.to_string(),
            _ => String::new(),
        };
        let score = |v: &f64| decimal(*v, 0);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID)
            .axis_style(INK)
            .x_labels(years)
            .y_labels(6)
            .x_label_formatter(&label)
            .y_label_formatter(&score)
            .label_style((FONT, LABEL).into_font().color(&INK))
            .axis_desc_style((FONT, DESC).into_font().color(&INK))
            .x_desc("Ano-modelo")
            .y_desc("Eco score médio")
            .draw()
            .map_err(text)?;
        let at = |(year, mean): &(i32, f64)| (SegmentValue::CenterOf(*year), *mean);
        chart.draw_series(LineSeries::new(points.iter().map(at), TEAL.stroke_width(3))).map_err(text)?;
        chart.draw_series(points.iter().map(|p| Circle::new(at(p), 4, TEAL.filled()))).map_err(text)?;
        if years <= 30 {
            let style = (FONT, 17).into_font().color(&INK).pos(Pos::new(HPos::Center, VPos::Bottom));
            chart.draw_series(points.iter().map(|p| Text::new(decimal(p.1, 1), at(p), style.clone()))).map_err(text)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_without_urls_and_escape_names() {
        let b = bands(&[("Baixo (0-40)".into(), 3), ("Bom".into(), 0)], &BAD_TO_GOOD, "x").unwrap();
        assert!(b.starts_with("<svg") && b.trim_end().ends_with("</svg>"), "{b}");
        assert!(!b.contains("http"), "{b}");
        let g = means_by_group(&[("A<b>&".into(), 10.5), ("C".into(), 120.25)], "CO2").unwrap();
        assert!(g.contains("A&lt;b&gt;&amp;") && !g.contains("A<b>"), "{g}");
        assert!(g.contains("120,25"), "{g}");
        let y = by_year(&[(2020, 50.0)]).unwrap();
        assert!(y.contains("2020") && y.contains("50,0"), "{y}");
        for none in [means_by_group(&[], "x").unwrap(), by_year(&[]).unwrap(), bands(&[], &BAD_TO_GOOD, "x").unwrap()] {
            assert!(none.contains("Sem dados"), "{none}");
        }
    }
}
