//! `eco-insights report`: the page's embedded numbers equal the API's answers on the same file,
//! the page loads nothing from the network and escapes the catalog's text, a bad input exits 2
//! with the validator's message, a failure to write exits 1.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Map, Value};

use crate::common::*;

const CATEGORIES: [&str; 4] = ["Compacto", "SUV", "Sedan <Luxo>", "Picape"];
const FUELS: [&str; 3] = ["Flex", "Gasolina", "Diesel"];
/// A brand and a model whose names are markup: they must come out as text.
const ODD_BRAND: &str = r#"Marca <b>&"Cia""#;
const ODD_MODEL: &str = "X</script><script>alert(1)</script>";

/// 18 vehicles over 4 categories, 3 fuels and 5 model years, with distinct efficiencies and
/// emissions (so both top 10 lists are full and ordered by their values) and a few gaps; vehicle 3
/// has the markup names and the best efficiency and CO2 (first in both tables).
fn fixture() -> Vec<Row> {
    (1..=18u32)
        .map(|n| {
            let i = n as usize;
            let mut r = Row::new(
                n,
                ["Fiat", "VW", "Toyota", "Honda"][i % 4],
                &format!("Modelo {n:02}"),
                2018 + (n % 5) as i32,
                CATEGORIES[i % 4],
                FUELS[i % 3],
            );
            r.eficiencia_cidade_km_l = Some(7.0 + n as f64 * 0.63);
            r.eficiencia_estrada_km_l = Some(9.0 + n as f64 * 0.41);
            r.consumo_energetico_mj_km = Some(0.9 + n as f64 * 0.117);
            r.co2_fossil_g_km = Some(70.0 + n as f64 * 9.37);
            if n == 3 {
                r.marca = ODD_BRAND.into();
                r.modelo = ODD_MODEL.into();
                r.eficiencia_cidade_km_l = Some(30.0);
                r.eficiencia_estrada_km_l = Some(32.0);
                r.co2_fossil_g_km = Some(40.0);
            }
            if n % 7 == 0 {
                // No efficiency and no CO2: left out of both lists and of the CO2 means.
                (r.eficiencia_cidade_km_l, r.eficiencia_estrada_km_l, r.co2_fossil_g_km) = (None, None, None);
            }
            r
        })
        .collect()
}

fn report(data: &Path, out: &Path) -> Output {
    Command::new(binary())
        .arg("report")
        .arg("--data")
        .arg(data)
        .arg("--out")
        .arg(out)
        .arg("--queries")
        .arg(repo().join("queries"))
        .output()
        .expect("cannot start the binary")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON of the `report-data` script element.
fn embedded(html: &str) -> Value {
    let open = r#"<script type="application/json" id="report-data">"#;
    let start = html.find(open).expect("no report-data element") + open.len();
    let end = start + html[start..].find("</script>").expect("report-data is not closed");
    let text = &html[start..end];
    assert!(!text.contains('<'), "raw '<' inside the script element: {text}");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("report-data is not JSON ({e}): {text}"))
}

/// Writes the fixture, reports on it and serves it: (page, server).
fn reported() -> (String, TestApp) {
    let dir = temp_dir("report");
    let data = dir.join("catalog.parquet");
    write_rows(&fixture(), &data);
    let out = dir.join("out").join("report.html");
    let run = report(&data, &out);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("18 rows"), "{stdout}");
    let html = std::fs::read_to_string(&out).unwrap();
    let app = TestApp::serve(&dir, &data, &[]);
    (html, app)
}

#[test]
fn report_numbers_are_the_apis_answers() {
    let (html, app) = reported();
    let page = embedded(&html);

    let ready = app.raw("GET", "/readyz").send().json();
    let version = ready["dataset"]["version"].as_str().unwrap();
    assert_eq!(page["versaoDados"], version, "same file, views and default costs: same version");
    assert_eq!(page["totalVeiculos"], ready["dataset"]["rows"]);
    assert_eq!(page["totalVeiculos"], 18);
    assert!(html.contains(&format!(r#"<code id="versao-dados">{version}</code>"#)));
    assert!(html.contains(r#"<strong id="total-veiculos">18</strong>"#));

    let summary = app.data("/insights/summary");
    assert_eq!(page["distribuicaoEcoScore"], summary["distribuicaoEcoScore"]);
    assert_eq!(page["mediasGerais"], summary["mediasGerais"]);
    let bands: u64 =
        page["distribuicaoEcoScore"].as_array().unwrap().iter().map(|b| b["total"].as_u64().unwrap()).sum();
    assert_eq!(bands, 18, "every vehicle has a score");

    let emissions = app.data("/insights/emissions");
    assert_eq!(page["mediaPorCategoria"], emissions["mediaPorCategoria"]);
    assert_eq!(page["mediaPorCategoria"].as_array().unwrap().len(), 4);
    assert_eq!(page["distribuicaoEmissoes"], emissions["distribuicao"]);

    let economical = app.data("/rankings/most-economical");
    assert_eq!(page["maisEconomicos"], economical["items"]);
    assert_eq!(page["maisEconomicos"].as_array().unwrap().len(), 10);
    assert_eq!(page["maisEconomicos"][0]["marca"], ODD_BRAND);
    assert_eq!(page["maisEconomicos"][0]["modelo"], ODD_MODEL);
    let lowest = app.data("/rankings/lowest-co2");
    assert_eq!(page["menorCo2"], lowest["items"]);
    assert_eq!(page["menorCo2"].as_array().unwrap().len(), 10);

    let by_year = app.data("/rankings/by-year");
    let api: Map<String, Value> = by_year["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["grupo"].as_str().unwrap().to_string(), g["mediaGrupo"].clone()))
        .collect();
    assert_eq!(api.len(), 5);
    assert_eq!(page["ecoScorePorAno"], Value::Object(api));
    let years: Vec<&String> = page["ecoScorePorAno"].as_object().unwrap().keys().collect();
    assert_eq!(years, ["2018", "2019", "2020", "2021", "2022"], "listed by year");
}

#[test]
fn report_page_is_self_contained_and_escapes_text() {
    let (html, _app) = reported();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains(r#"<html lang="pt-BR">"#));
    let lower = html.to_lowercase();
    for network in ["http://", "https://", "src=", "href=", "url(", "@import", "<link", "<img", "<iframe"] {
        assert!(!lower.contains(network), "the page references {network:?}");
    }
    assert_eq!(html.matches("<svg").count(), 4, "one inline SVG per chart");
    assert_eq!(html.matches("</svg>").count(), 4);
    for heading in [
        "Distribuição do eco score",
        "CO2 médio por categoria",
        "Distribuição das emissões",
        "Eco score médio por ano-modelo",
    ] {
        assert!(html.contains(heading), "{heading}");
    }
    assert!(html.contains("Os 10 mais econômicos") && html.contains("Os 10 com menor emissão de CO2"));
    assert!(html.contains("Metodologia") && html.contains("configuração de custos padrão"));

    // The markup in the catalog is text: escaped in the tables and the charts, never raw.
    assert_eq!(lower.matches("<script").count(), 1, "only the data element");
    assert_eq!(lower.matches("</script").count(), 1, "only the data element's end");
    assert!(!html.contains("<b>") && !html.contains("<Luxo>"));
    assert!(html.contains("Marca &lt;b&gt;&amp;&quot;Cia&quot;"));
    assert!(html.contains("X&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_eq!(html.matches("Marca &lt;b&gt;&amp;&quot;Cia&quot;").count(), 2, "first in both tables");
    assert!(html.contains("Sedan &lt;Luxo&gt;"), "the category's chart label");
}

#[test]
fn report_of_a_bad_file_exits_2_with_the_validators_message() {
    let dir = temp_dir("report-bad");
    let garbage = dir.join("garbage.parquet");
    std::fs::write(&garbage, b"not a parquet file").unwrap();
    let invalid = dir.join("invalid.parquet");
    let mut rows = fixture();
    rows[1].ano = 1850;
    let mut df = frame(&rows).drop("marca").unwrap();
    write_frame(&mut df, &invalid);
    let missing = dir.join("missing.parquet");
    let out = dir.join("report.html");
    for (file, expect) in [(&garbage, "not a readable Parquet file"), (&invalid, "marca"), (&missing, "cannot read")] {
        let validate = Command::new(binary()).arg("validate").arg(file).output().unwrap();
        assert_eq!(validate.status.code(), Some(1));
        let message = stderr(&validate);
        assert!(message.contains(expect), "{message}");
        let run = report(file, &out);
        assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
        assert_eq!(stderr(&run), message, "the validator's message, as validate prints it");
        assert!(!out.exists(), "nothing written");
    }
    assert!(stderr(&report(&invalid, &out)).contains("year out of range"), "every problem is listed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_that_cannot_be_written_exits_1() {
    let dir = temp_dir("report-unwritable");
    let data = dir.join("catalog.parquet");
    write_rows(&fixture(), &data);
    // A regular file where the output's folder should be.
    let out = data.join("report.html");
    let run = report(&data, &out);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    assert!(stderr(&run).starts_with("error: "), "{}", stderr(&run));
    assert!(stderr(&run).contains("catalog.parquet"), "{}", stderr(&run));
    // A queries folder that does not exist is not the input's fault either.
    let run = Command::new(binary())
        .args(["report", "--queries"])
        .arg(dir.join("no-queries"))
        .arg("--data")
        .arg(&data)
        .arg("--out")
        .arg(dir.join("r.html"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    assert!(!dir.join("r.html").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_help_names_every_variable() {
    let help = Command::new(binary()).args(["report", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    for needle in ["ECO_REPORT_DATA", "ECO_REPORT_OUT", "ECO_QUERIES", "default cost configuration", "Exits 2"] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}
