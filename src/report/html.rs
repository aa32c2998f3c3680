//! The report page: Portuguese text, inline CSS and the charts' inline SVG, nothing loaded from
//! anywhere, laid out for the screen and for print. Every text value is HTML-escaped; the
//! embedded JSON comes in already made safe for a `<script>` element (see `script_safe`).

use std::fmt::Write;

use chrono::{DateTime, Utc};

use super::charts::Charts;
pub use super::numbers::{decimal, integer};
use super::{ReportData, DATA_ELEMENT_ID};
use crate::engine::dataset::views::CostConfig;
use crate::engine::table::Vehicle;
use crate::http::wire::insights::CategoriaEcoScore;
use crate::http::wire::rankings::FixedRankingItem;

/// `text` with `&`, `<`, `>`, `"` and `'` replaced by character references: safe as element
/// content and inside a quoted attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An optional mean (2 decimals), "—" when there is none.
fn mean(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_string(), |v| decimal(v, 2))
}

const STYLE: &str = r#"
:root { --ink: #1f2933; --muted: #52606d; --line: #d8dee4; --accent: #1b7f79; --panel: #f5f7fa; }
* { box-sizing: border-box; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 28px 40px; }
header { border-bottom: 3px solid var(--accent); padding-bottom: 12px; margin-bottom: 20px; }
h1 { font-size: 28px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 28px 0 10px; }
.meta { color: var(--muted); margin: 0; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.95em; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); gap: 12px; }
.card { background: var(--panel); border-left: 4px solid var(--accent); padding: 10px 14px; }
.card .label { color: var(--muted); font-size: 13px; }
.card .value { font-size: 26px; font-weight: 600; }
.card .unit { font-size: 14px; color: var(--muted); font-weight: 400; }
.categories { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 12px; margin-top: 12px; }
.categories p { margin: 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: 18px; }
figure { margin: 0; border: 1px solid var(--line); padding: 10px; break-inside: avoid; page-break-inside: avoid; }
figcaption { font-weight: 600; margin-bottom: 6px; }
figure.wide { grid-column: 1 / -1; }
figure svg { display: block; width: 100%; height: auto; }
table { border-collapse: collapse; width: 100%; font-size: 14px; break-inside: avoid; page-break-inside: avoid; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); }
th { background: var(--panel); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.notes { margin-top: 32px; border-top: 1px solid var(--line); padding-top: 10px; color: var(--muted); font-size: 13px; }
.notes p { margin: 6px 0; }
@page { size: A4; margin: 12mm; }
@media print {
  body { font-size: 11pt; }
  main { max-width: none; padding: 0; }
  .charts { grid-template-columns: 1fr 1fr; }
  h2 { break-after: avoid; page-break-after: avoid; }
}
"#;

/// The whole page. `json` is the embedded data, already safe for a `<script>` element.
pub fn page(
    report: &ReportData,
    charts: &Charts,
    cost: &CostConfig,
    generated_at: DateTime<Utc>,
    json: &str,
) -> String {
    let mut h = String::with_capacity(64 * 1024 + charts.all().iter().map(|c| c.len()).sum::<usize>());
    let rows = integer(report.rows as u64);
    let version = escape(&report.version);
    let _ = write!(
        h,
        r#"<!DOCTYPE html>
<html lang="pt-BR">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Relatório da frota — versão {version}</title>
<style>{STYLE}</style>
</head>
<body>
<main>
<header>
<h1>Relatório de eficiência da frota</h1>
<p class="meta">Versão dos dados <code id="versao-dados">{version}</code> · <strong id="total-veiculos">{rows}</strong> veículos · arquivo <code>{source}</code> · gerado em {generated} (UTC)</p>
</header>
"#,
        source = escape(&report.source),
        generated = generated_at.format("%d/%m/%Y %H:%M"),
    );
    averages(&mut h, report);
    let [eco, emissions, co2_by_category, by_year] = charts.all();
    h.push_str("<h2>Gráficos</h2>\n<section class=\"charts\">\n");
    for (caption, class, svg) in [
        ("Distribuição do eco score (veículos por faixa)", "", eco),
        ("Distribuição das emissões de CO2 (veículos por faixa)", "", emissions),
        ("CO2 médio por categoria (g/km)", " class=\"wide\"", co2_by_category),
        ("Eco score médio por ano-modelo", " class=\"wide\"", by_year),
    ] {
        let _ = write!(h, "<figure{class}>\n<figcaption>{}</figcaption>\n{svg}</figure>\n", escape(caption));
    }
    h.push_str("</section>\n");
    most_economical(&mut h, &report.most_economical.items);
    lowest_co2(&mut h, &report.lowest_co2_vehicles);
    notes(&mut h, report, cost);
    let _ = write!(
        h,
        "</main>\n<script type=\"application/json\" id=\"{DATA_ELEMENT_ID}\">{json}</script>\n</body>\n</html>\n"
    );
    h
}

fn averages(h: &mut String, report: &ReportData) {
    let m = &report.summary.medias_gerais;
    h.push_str("<h2>Médias da frota</h2>\n<section class=\"cards\">\n");
    for (label, value, unit) in [
        ("Eco score médio", mean(m.eco_score_medio), "de 0 a 100"),
        ("Consumo energético médio", mean(m.consumo_medio), "MJ/km"),
        ("Emissão média de CO2", mean(m.emissao_media), "g/km"),
        ("Veículos no catálogo", integer(report.rows as u64), ""),
    ] {
        let _ = writeln!(
            h,
            "<div class=\"card\"><div class=\"label\">{}</div><div class=\"value\">{} <span class=\"unit\">{}</span></div></div>",
            escape(label),
            escape(&value),
            escape(unit)
        );
    }
    h.push_str("</section>\n<section class=\"categories\">\n");
    let list = |items: &[CategoriaEcoScore]| {
        if items.is_empty() {
            return "—".to_string();
        }
        items
            .iter()
            .map(|c| format!("{} ({})", escape(&c.categoria), decimal(c.eco_score_medio, 2)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = write!(
        h,
        "<p><strong>Melhores categorias</strong> (eco score médio): {}</p>\n<p><strong>Piores categorias</strong>: {}</p>\n</section>\n",
        list(&report.summary.melhores_categorias),
        list(&report.summary.piores_categorias)
    );
}

const VEHICLE_HEADERS: &str =
    "<th class=\"num\">#</th><th>Marca</th><th>Modelo</th><th>Versão</th><th class=\"num\">Ano</th><th>Categoria</th><th>Combustível</th>";

#[allow(clippy::too_many_arguments)]
fn vehicle_row(
    h: &mut String,
    position: u32,
    marca: &str,
    modelo: &str,
    versao: &str,
    ano: i32,
    categoria: &str,
    combustivel: &str,
    value: f64,
) {
    let _ = writeln!(
        h,
        "<tr><td class=\"num\">{position}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{ano}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
        escape(marca),
        escape(modelo),
        escape(versao),
        escape(categoria),
        escape(combustivel),
        decimal(value, 2)
    );
}

fn most_economical(h: &mut String, items: &[FixedRankingItem]) {
    let _ = write!(
        h,
        "<h2>Os 10 mais econômicos</h2>\n<table id=\"mais-economicos\">\n<thead><tr>{VEHICLE_HEADERS}<th class=\"num\">Eficiência (km/unidade)</th></tr></thead>\n<tbody>\n"
    );
    for i in items {
        vehicle_row(
            h,
            i.ranking_posicao,
            &i.marca,
            &i.modelo,
            &i.versao,
            i.ano,
            &i.categoria,
            &i.combustivel_tipo,
            i.metric_value,
        );
    }
    if items.is_empty() {
        h.push_str("<tr><td colspan=\"8\">Nenhum veículo com eficiência informada.</td></tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
}

fn lowest_co2(h: &mut String, entries: &[(Vehicle, f64)]) {
    let _ = write!(
        h,
        "<h2>Os 10 com menor emissão de CO2</h2>\n<table id=\"menor-co2\">\n<thead><tr>{VEHICLE_HEADERS}<th class=\"num\">CO2 (g/km)</th></tr></thead>\n<tbody>\n"
    );
    for (i, (v, value)) in entries.iter().enumerate() {
        vehicle_row(h, i as u32 + 1, &v.marca, &v.modelo, &v.versao, v.ano, &v.categoria, &v.combustivel_tipo, *value);
    }
    if entries.is_empty() {
        h.push_str("<tr><td colspan=\"8\">Nenhum veículo com CO2 informado.</td></tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
}

fn notes(h: &mut String, report: &ReportData, cost: &CostConfig) {
    let _ = write!(
        h,
        r#"<section class="notes">
<p><strong>Metodologia.</strong> Os números são calculados pelas mesmas funções que produzem as respostas da API, sobre o mesmo arquivo, e são idênticos a elas: <code>/insights/summary</code> (médias e distribuição do eco score), <code>/insights/emissions</code> (CO2 por categoria e distribuição das emissões), <code>/rankings/most-economical</code>, <code>/rankings/lowest-co2</code> e <code>/rankings/by-year</code> (eco score médio por ano-modelo). Vão também embutidos nesta página em JSON (elemento <code>{DATA_ELEMENT_ID}</code>).</p>
<p>As métricas por veículo vêm das visões SQL da pasta <code>queries/</code>, com a configuração de custos padrão do servidor ({km} km/ano; gasolina R$ {gasolina}/L; etanol R$ {etanol}/L; diesel R$ {diesel}/L; GNV R$ {gnv}/m³; eletricidade R$ {kwh}/kWh), que também entra na versão dos dados <code>{version}</code>. O eco score (0 a 100) é a média ponderada dos índices de energia (0,45), de CO2 (0,35) e de poluentes (0,20) disponíveis.</p>
<p>As médias são calculadas sobre os valores publicados por veículo, ignoram valores ausentes e são arredondadas a 2 casas decimais (metade para o par). Faixas do eco score: Baixo (até 40), Regular (acima de 40 até 60), Bom (acima de 60 até 80), Excelente (acima de 80). Faixas de CO2: até 100, acima de 100 até 130, acima de 130 até 180 e acima de 180 g/km. Os mais econômicos são os 10 veículos de maior eficiência média de referência (km por unidade do combustível de referência); os de menor CO2, os 10 de menor CO2 de referência; empates são desfeitos pelo identificador do veículo.</p>
</section>
"#,
        km = integer(cost.km_ano.round() as u64),
        gasolina = decimal(cost.preco_gasolina, 2),
        etanol = decimal(cost.preco_etanol, 2),
        diesel = decimal(cost.preco_diesel, 2),
        gnv = decimal(cost.preco_gnv, 2),
        kwh = decimal(cost.preco_kwh, 2),
        version = escape(&report.version),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brazilian_number_format() {
        assert_eq!(integer(0), "0");
        assert_eq!(integer(999), "999");
        assert_eq!(integer(12_000), "12.000");
        assert_eq!(integer(1_000_000), "1.000.000");
        assert_eq!(decimal(1234.5, 2), "1.234,50");
        assert_eq!(decimal(55.38, 2), "55,38");
        assert_eq!(decimal(-0.001, 2), "0,00");
        assert_eq!(decimal(-12.5, 1), "-12,5");
        assert_eq!(decimal(99.6, 0), "100");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<a href="x">Tom & 'Jerry'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
    }
}
