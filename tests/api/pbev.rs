//! `import pbev` on INMETRO's official tables (data/pbev/), checked against what a person read
//! off the rendered pages (tests/pbev/expected/YEAR.toml): the rows counted on the pages by
//! fuel and propulsion, and 20+ rows per year field by field. Then all five years at once
//! (unique ids, `validate`, served, an eco score from the contract's L7 formula), and the
//! refusals: files that are not PBEV tables, and mutated copies of a real one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use polars::prelude::*;
use serde_json::Value;

use crate::common::*;

const YEARS: [i32; 5] = [2020, 2022, 2023, 2024, 2026];

fn pdf(year: i32) -> PathBuf {
    repo().join(format!("data/pbev/pbev-{year}.pdf"))
}

/// Runs `import pbev` and returns (exit code, stdout, stderr).
fn import(out: &Path, pdfs: &[PathBuf], extra: &[&str]) -> (i32, String, String) {
    let o = Command::new(binary())
        .args(["import", "pbev", "--out"])
        .arg(out)
        .arg("--marcas")
        .arg(repo().join("data/pbev/marcas.toml"))
        .args(extra)
        .args(pdfs)
        .output()
        .expect("cannot run import");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn read(path: &Path) -> DataFrame {
    let f = std::fs::File::open(path).unwrap();
    ParquetReader::new(f).finish().unwrap()
}

/// The brand as the catalog spells it, from the alias list analysts edit (not from the
/// importer): its alias, else the printed name in capitals.
fn canonical_brand(printed: &str) -> String {
    let list: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo().join("data/pbev/marcas.toml")).unwrap()).unwrap();
    let up = printed.split_whitespace().collect::<Vec<_>>().join(" ").to_uppercase();
    let strip = |s: &str| {
        s.to_uppercase()
            .replace(['Á', 'À', 'Â', 'Ã'], "A")
            .replace(['É', 'Ê'], "E")
            .replace('Í', "I")
            .replace(['Ó', 'Ô', 'Õ'], "O")
            .replace('Ú', "U")
            .replace('Ç', "C")
            .replace('Ë', "E")
    };
    if let Some(aliases) = list.get("aliases").and_then(|a| a.as_table()) {
        for (from, to) in aliases {
            if strip(from) == strip(&up) {
                return to.as_str().unwrap().to_string();
            }
        }
    }
    up
}

#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Text(String),
    Num(f64),
    Bool(bool),
}

const TEXT: [&str; 9] = [
    "modelo",
    "versao",
    "categoria",
    "motor",
    "tipo_propulsao",
    "combustivel_tipo",
    "transmissao_tipo",
    "direcao_assistida_tipo",
    "classificacao_pbe_categoria",
];
const NUMBERS: [&str; 14] = [
    "transmissao_marchas",
    "eficiencia_cidade_km_l",
    "eficiencia_estrada_km_l",
    "eficiencia_cidade_etanol_km_l",
    "eficiencia_estrada_etanol_km_l",
    "consumo_energetico_mj_km",
    "co2_fossil_g_km",
    "nmhc_g_km",
    "co_g_km",
    "nox_g_km",
    "nmog_nox_g_km",
    "autonomia_eletrica_km",
    "ano",
    "tanque_l",
];

fn cell(df: &DataFrame, col: &str, i: usize) -> Cell {
    let s = df.column(col).unwrap().as_materialized_series();
    match s.get(i).unwrap() {
        AnyValue::Null => Cell::Null,
        AnyValue::String(v) => Cell::Text(v.to_string()),
        AnyValue::StringOwned(v) => Cell::Text(v.to_string()),
        AnyValue::Boolean(b) => Cell::Bool(b),
        v => Cell::Num(v.extract::<f64>().unwrap()),
    }
}

/// The catalog value a hand-read row expects for a column: a missing key is null (the empty
/// text for the columns the catalog requires).
fn expected_cell(row: &toml::Table, col: &str) -> Cell {
    match row.get(col) {
        None if matches!(col, "versao" | "categoria" | "direcao_assistida_tipo" | "modelo") => {
            Cell::Text(String::new())
        }
        None => Cell::Null,
        Some(toml::Value::String(s)) => Cell::Text(s.clone()),
        Some(toml::Value::Integer(n)) => Cell::Num(*n as f64),
        Some(toml::Value::Float(f)) => Cell::Num(*f),
        Some(toml::Value::Boolean(b)) => Cell::Bool(*b),
        Some(v) => panic!("unexpected value {v:?} for {col}"),
    }
}

fn same(a: &Cell, b: &Cell) -> bool {
    match (a, b) {
        (Cell::Num(x), Cell::Num(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        _ => a == b,
    }
}

/// Columns compared for each hand-read row.
fn compared() -> Vec<&'static str> {
    let mut v: Vec<&str> = TEXT.to_vec();
    v.push("classificacao_pbe_geral");
    v.push("ar_condicionado");
    v.extend(NUMBERS.iter().filter(|c| **c != "ano" && **c != "tanque_l"));
    v
}

/// Checks one year against its hand-read file; returns the failures (empty when all agree).
fn check_year(year: i32, df: &DataFrame) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join(format!("tests/pbev/expected/{year}.toml"))).unwrap();
    let expected: toml::Table = toml::from_str(&text).unwrap();
    let mut failures = Vec::new();
    let n = df.height();
    let want_rows = expected["linhas"].as_integer().unwrap() as usize;
    if n != want_rows {
        failures.push(format!("{year}: {n} rows imported, {want_rows} on the pages"));
    }
    for (key, col) in [("por_combustivel", "combustivel_tipo"), ("por_propulsao", "tipo_propulsao")] {
        let mut got: BTreeMap<String, i64> = BTreeMap::new();
        for i in 0..n {
            if let Cell::Text(t) = cell(df, col, i) {
                *got.entry(t).or_default() += 1;
            }
        }
        let want: BTreeMap<String, i64> =
            expected[key].as_table().unwrap().iter().map(|(k, v)| (k.clone(), v.as_integer().unwrap())).collect();
        let want: BTreeMap<String, i64> = want.into_iter().filter(|(_, v)| *v > 0).collect();
        if got != want {
            failures.push(format!("{year} {key}: imported {got:?}, on the pages {want:?}"));
        }
    }
    for i in 0..n {
        if cell(df, "ano", i) != Cell::Num(year as f64) {
            failures.push(format!("{year}: row {i} has ano {:?}", cell(df, "ano", i)));
            break;
        }
    }
    let cols = compared();
    let rows = expected["linha"].as_array().unwrap();
    assert!(rows.len() >= 20, "{year}: at least 20 hand-read rows");
    for row in rows {
        let row = row.as_table().unwrap();
        let marca = canonical_brand(row["marca"].as_str().unwrap());
        let modelo = expected_cell(row, "modelo");
        let versao = expected_cell(row, "versao");
        // Candidates: same brand, model and version; the row agrees with one of them in every
        // column (a repeated row prints the same values).
        let mut best: Option<(usize, Vec<String>)> = None;
        for i in 0..n {
            if cell(df, "marca", i) != Cell::Text(marca.clone())
                || !same(&cell(df, "modelo", i), &modelo)
                || !same(&cell(df, "versao", i), &versao)
            {
                continue;
            }
            let diffs: Vec<String> = cols
                .iter()
                .filter(|c| !same(&cell(df, c, i), &expected_cell(row, c)))
                .map(|c| format!("{c}: imported {:?}, on the page {:?}", cell(df, c, i), expected_cell(row, c)))
                .collect();
            if best.as_ref().is_none_or(|(_, d)| diffs.len() < d.len()) {
                best = Some((i, diffs));
            }
        }
        let at = format!(
            "{year} p. {:?} ({}) {marca} {:?} {:?}",
            row["pagina"],
            row.get("onde").and_then(|o| o.as_str()).unwrap_or(""),
            modelo,
            versao
        );
        match best {
            None => failures.push(format!("{at}: no imported row with this brand, model and version")),
            Some((_, d)) if !d.is_empty() => failures.push(format!("{at}: {}", d.join("; "))),
            _ => {}
        }
    }
    failures
}

fn import_year(year: i32) -> (PathBuf, DataFrame, Value) {
    let dir = temp_dir(&format!("pbev-{year}"));
    let out = dir.join("catalog.parquet");
    let (code, stdout, stderr) = import(&out, &[pdf(year)], &["--format", "json"]);
    assert_eq!(code, 0, "import of {year} failed: {stderr}");
    let summary: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (out.clone(), read(&out), summary)
}

fn year_matches_the_pages(year: i32) {
    let (_, df, summary) = import_year(year);
    let t = &summary["tabelas"][0];
    assert_eq!(t["ano"], year);
    assert_eq!(t["linhas"], df.height());
    let failures = check_year(year, &df);
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
    // The first page's totals are printed beside the counts imported, a difference named.
    let expected: toml::Table =
        toml::from_str(&std::fs::read_to_string(repo().join(format!("tests/pbev/expected/{year}.toml"))).unwrap())
            .unwrap();
    let capa = t["capa"].as_array().unwrap();
    let printed_rows = capa.iter().find(|c| c["rotulo"] == "Modelos/Versões").expect("the cover's row total");
    assert_eq!(printed_rows["importado"], df.height());
    let pages_rows = expected["linhas"].as_integer().unwrap();
    match printed_rows["capa"].as_i64().unwrap() {
        v if v == pages_rows => assert!(printed_rows["diferenca"].is_null()),
        v => assert_eq!(printed_rows["diferenca"], pages_rows - v, "{printed_rows}"),
    }
}

#[test]
fn the_2020_table_matches_its_pages() {
    year_matches_the_pages(2020);
}

#[test]
fn the_2022_table_matches_its_pages() {
    year_matches_the_pages(2022);
}

#[test]
fn the_2023_table_matches_its_pages() {
    year_matches_the_pages(2023);
}

#[test]
fn the_2024_table_matches_its_pages() {
    year_matches_the_pages(2024);
}

#[test]
fn the_2026_table_matches_its_pages() {
    year_matches_the_pages(2026);
}

/// The eco score of a row from the contract (§2), computed here from the hand-read values.
fn contract_eco_score(row: &toml::Table) -> Option<f64> {
    let f = |k: &str| row.get(k).and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)));
    let clamp = |x: f64| x.clamp(0.0, 100.0);
    let energia = f("consumo_energetico_mj_km").map(|c| clamp(100.0 * (3.0 - c) / 2.7));
    let co2 = f("co2_fossil_g_km").map(|c| clamp(100.0 * (250.0 - c) / 250.0));
    let pol = match (f("nmhc_g_km"), f("co_g_km"), f("nox_g_km"), f("nmog_nox_g_km")) {
        (Some(a), Some(b), Some(c), _) => Some(clamp(100.0 * (1.0 - (a / 0.05 + b / 1.3 + c / 0.08) / 3.0))),
        (_, Some(b), _, Some(m)) => Some(clamp(100.0 * (1.0 - (m / 0.08 + b / 1.0) / 2.0))),
        _ => None,
    };
    if energia.is_none() && co2.is_none() {
        return None;
    }
    let (mut num, mut den) = (0.0, 0.0);
    for (i, w) in [(energia, 0.45), (co2, 0.35), (pol, 0.20)] {
        if let Some(i) = i {
            num += w * i;
            den += w;
        }
    }
    Some(round(num / den, 1))
}

#[test]
fn five_years_at_once_are_one_valid_catalog_the_service_serves() {
    let dir = temp_dir("pbev-all");
    let out = dir.join("catalog.parquet");
    let pdfs: Vec<PathBuf> = YEARS.iter().map(|y| pdf(*y)).collect();
    let (code, stdout, stderr) = import(&out, &pdfs, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("linhas gravadas em"), "{stdout}");
    let df = read(&out);
    let total: i64 = YEARS
        .iter()
        .map(|y| {
            let t: toml::Table =
                toml::from_str(&std::fs::read_to_string(repo().join(format!("tests/pbev/expected/{y}.toml"))).unwrap())
                    .unwrap();
            t["linhas"].as_integer().unwrap()
        })
        .sum();
    assert_eq!(df.height() as i64, total);
    let ids = df.column("id").unwrap().as_materialized_series().clone();
    assert_eq!(ids.n_unique().unwrap(), df.height(), "ids are unique");
    assert_eq!(ids.null_count(), 0);
    // A re-import gives the same ids.
    let again = dir.join("again.parquet");
    assert_eq!(import(&again, &pdfs, &[]).0, 0);
    assert!(read(&again).column("id").unwrap().as_materialized_series().equals(&ids));

    let v =
        Command::new(binary()).arg("validate").arg(&out).arg("--queries").arg(repo().join("queries")).output().unwrap();
    assert!(v.status.success(), "validate: {}", String::from_utf8_lossy(&v.stderr));

    let app = TestApp::serve(&dir, &out, &[]);
    let (status, listed) = app.get("/catalog/vehicles?page_size=1");
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["data"]["meta"]["pagination"]["total"], total, "{listed}");
    // An eco score from NMOG+NOx and CO (2026 has no NMHC or NOx apart): a hand-read 2026 row
    // with both, its id from the export, its score from the service.
    let expected: toml::Table =
        toml::from_str(&std::fs::read_to_string(repo().join("tests/pbev/expected/2026.toml")).unwrap()).unwrap();
    let mut checked = 0;
    for row in expected["linha"].as_array().unwrap() {
        let row = row.as_table().unwrap();
        if row.get("nmog_nox_g_km").is_none()
            || row.get("co_g_km").is_none()
            || row.get("consumo_energetico_mj_km").is_none()
        {
            continue;
        }
        let marca = canonical_brand(row["marca"].as_str().unwrap());
        let want = contract_eco_score(row).unwrap();
        let matches: Vec<usize> = (0..df.height())
            .filter(|&i| {
                cell(&df, "ano", i) == Cell::Num(2026.0)
                    && cell(&df, "marca", i) == Cell::Text(marca.clone())
                    && same(&cell(&df, "modelo", i), &expected_cell(row, "modelo"))
                    && same(&cell(&df, "versao", i), &expected_cell(row, "versao"))
                    && same(&cell(&df, "nmog_nox_g_km", i), &expected_cell(row, "nmog_nox_g_km"))
                    && same(&cell(&df, "consumo_energetico_mj_km", i), &expected_cell(row, "consumo_energetico_mj_km"))
            })
            .collect();
        let Some(&i) = matches.first() else { continue };
        let Cell::Text(id) = cell(&df, "id", i) else { panic!("id") };
        let d = app.data(&format!("/vehicles/{id}/eco-score"));
        let got = d["ecoScore"].as_f64().or_else(|| d["eco_score"].as_f64()).unwrap_or_else(|| panic!("{d}"));
        assert_eq!(got, want, "{marca} {:?}: {d}", row.get("versao"));
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} hand-read 2026 rows with NMOG+NOx checked");
}

/// A small valid PDF that is not a PBEV table.
fn letter_pdf() -> Vec<u8> {
    let content = b"BT /F1 12 Tf 72 720 Td (Relatorio trimestral de vendas - Ano 2024) Tj ET";
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_string(),
        format!("<< /Length {} >>\nstream\n{}\nendstream", content.len(), String::from_utf8_lossy(content)),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes(),
    );
    out
}

/// A refused import: exit 2, the file named with a reason, no panic text, the old export left
/// as it was and no temporary file left behind.
fn assert_refused(dir: &Path, input: &Path, reason_has: &str) {
    let out = dir.join("catalog.parquet");
    std::fs::write(&out, b"old export").unwrap();
    let (code, stdout, stderr) = import(&out, &[input.to_path_buf()], &[]);
    assert_eq!(code, 2, "{}: stdout {stdout} stderr {stderr}", input.display());
    assert!(stderr.contains(&input.display().to_string()), "{stderr}");
    assert!(stderr.contains(reason_has), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(std::fs::read(&out).unwrap(), b"old export");
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn files_that_are_not_pbev_tables_are_refused_naming_the_file() {
    let dir = temp_dir("pbev-refused");
    let letter = dir.join("carta.pdf");
    std::fs::write(&letter, letter_pdf()).unwrap();
    assert_refused(&dir, &letter, "não é uma tabela PBEV");
    let empty = dir.join("vazio.pdf");
    std::fs::write(&empty, b"").unwrap();
    assert_refused(&dir, &empty, "arquivo vazio");
    let parquet = dir.join("export.pdf");
    std::fs::copy(repo().join("data/catalog.parquet"), &parquet).unwrap();
    assert_refused(&dir, &parquet, "não é um PDF");
    let missing = dir.join("nao-existe.pdf");
    assert_refused(&dir, &missing, "não foi possível abrir");
    // Truncated in its middle: the cross-reference table and most pages are gone.
    let bytes = std::fs::read(pdf(2026)).unwrap();
    let half = dir.join("metade.pdf");
    std::fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    let out = dir.join("catalog.parquet");
    let (code, _, stderr) = import(&out, std::slice::from_ref(&half), &[]);
    assert!(code == 2 || code == 0, "{stderr}");
    if code == 2 {
        assert!(stderr.contains("metade.pdf"), "{stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    // One bad file among good ones: nothing is written.
    std::fs::write(&out, b"old export").unwrap();
    let (code, _, stderr) = import(&out, &[pdf(2022), letter.clone()], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(std::fs::read(&out).unwrap(), b"old export");
}

/// Mutated copies of a real table (bytes flipped, runs overwritten, cut short): each import
/// ends with exit 2 naming the file, or a valid export; never a panic, a hang or half a file.
/// `FUZZ_CASES` (default 40) and `FUZZ_SEED` explore more.
#[test]
fn mutated_tables_never_panic_nor_leave_half_a_file() {
    let cases: u64 =
        std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).map(|n: u64| (n / 100).max(40)).unwrap_or(40);
    let seed: u64 = std::env::var("FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(57);
    let dir = temp_dir("pbev-fuzz");
    let original = std::fs::read(pdf(2022)).unwrap();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for case in 0..cases {
        let mut bytes = original.clone();
        match next() % 4 {
            0 => {
                for _ in 0..1 + next() % 64 {
                    let i = (next() as usize) % bytes.len();
                    bytes[i] ^= 1 << (next() % 8);
                }
            }
            1 => {
                let i = (next() as usize) % bytes.len();
                let len = (1 + next() % 4096) as usize;
                for b in bytes.iter_mut().skip(i).take(len) {
                    *b = (next() % 256) as u8;
                }
            }
            2 => {
                let cut = (next() as usize) % bytes.len();
                bytes.truncate(cut.max(1));
            }
            _ => {
                // A number in the text turned into an unreadable cell, or an object number shifted.
                let i = (next() as usize) % bytes.len();
                bytes.splice(i..i, b"#VALUE! 9999999 0 obj".iter().copied());
            }
        }
        let input = dir.join(format!("mutado-{case}.pdf"));
        std::fs::write(&input, &bytes).unwrap();
        let out = dir.join(format!("out-{case}.parquet"));
        let (code, _, stderr) = import(&out, std::slice::from_ref(&input), &["--read-timeout", "20"]);
        assert!(!stderr.contains("panicked"), "case {case}: {stderr}");
        match code {
            0 => {
                let v = Command::new(binary()).arg("validate").arg(&out).output().unwrap();
                assert!(v.status.success(), "case {case}: {}", String::from_utf8_lossy(&v.stderr));
            }
            2 => {
                assert!(stderr.contains(&format!("mutado-{case}.pdf")), "case {case}: {stderr}");
                assert!(!out.exists(), "case {case}: an output after a refusal");
            }
            other => panic!("case {case}: exit {other}: {stderr}"),
        }
        let _ = std::fs::remove_file(&input);
        let _ = std::fs::remove_file(&out);
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
