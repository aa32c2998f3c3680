//! `eco-insights import pbev`: INMETRO's official PBEV tables (PDF, as published) into one
//! catalog export (API-CONTRACT §8).
//!
//! `pdf` turns a file into positioned words, `layout` words into lines, columns and rows,
//! `roles` names a column from its header words, `codes` turns the tables' codes into the
//! catalog's words, `table` reads one table with its own errors, and this module puts the
//! tables together: brand aliases, ids, the summary and the export, written under a temporary
//! name and renamed when complete.

pub mod codes;
pub mod layout;
pub mod pdf;
pub mod roles;
pub mod table;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use polars::prelude::*;
use serde::Serialize;
use uuid::Uuid;

use crate::config::{ImportFormat, ImportPbevArgs};
use table::{Problem, Record, Table};

/// Reads one PDF as a PBEV table: every failure is a sentence naming why.
pub fn read_table(path: &Path, names: &codes::NamePatterns) -> Result<Table, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("não foi possível abrir: {e}"))?;
    if meta.is_dir() {
        return Err("é uma pasta, não um PDF".into());
    }
    if meta.len() > MAX_PDF_BYTES {
        return Err(format!("arquivo de {} bytes (o limite é {MAX_PDF_BYTES})", meta.len()));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("não foi possível ler: {e}"))?;
    let pages = pdf::read(bytes)?;
    // The layout of a hostile file is untrusted too: a fault in reading it is an error, not a
    // panic.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| table::read(&pages, names))) {
        Ok(t) => t.map_err(|e| format!("não é uma tabela PBEV: {}", e.0)),
        Err(_) => Err("tabela ilegível: a disposição das páginas não pôde ser interpretada".into()),
    }
}

/// Largest PDF read (the official tables weigh 0.5–2 MB).
pub const MAX_PDF_BYTES: u64 = 200 * 1024 * 1024;

/// Brand spellings made one (`data/pbev/marcas.toml`).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Brands {
    /// Printed spelling (any case, accents ignored) → catalog spelling.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
    /// The catalog spellings known; a brand outside them is listed in the summary.
    #[serde(default)]
    pub conhecidas: Vec<String>,
}

impl Brands {
    pub fn read(path: &Path) -> anyhow::Result<Brands> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("lendo a lista de marcas {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("lista de marcas {} inválida", path.display()))
    }

    fn key(s: &str) -> String {
        roles::normalise(s).to_uppercase()
    }

    /// The catalog spelling of a printed brand: its alias, else the printed name in capitals
    /// with its spaces collapsed.
    pub fn canonical(&self, printed: &str) -> String {
        let k = Self::key(printed);
        for (from, to) in &self.aliases {
            if Self::key(from) == k {
                return to.clone();
            }
        }
        printed.split_whitespace().collect::<Vec<_>>().join(" ").to_uppercase()
    }

    pub fn is_known(&self, canonical: &str) -> bool {
        let k = Self::key(canonical);
        self.conhecidas.iter().any(|c| Self::key(c) == k) || self.aliases.values().any(|c| Self::key(c) == k)
    }
}

/// The id of a row (API-CONTRACT §8): UUID v5 of marca, modelo, versao, ano, motor,
/// transmissao_tipo, transmissao_marchas, combustivel_tipo and tipo_propulsao joined by `|`
/// (null as empty), with `|N` added for the N-th occurrence (N ≥ 2) of a row that repeats.
pub fn row_id(r: &Record, ano: i32, occurrence: usize) -> Uuid {
    let mut key = format!(
        "{}|{}|{}|{}|{}|{}|{}|{}|{}",
        r.marca,
        r.modelo,
        r.versao,
        ano,
        r.motor.as_deref().unwrap_or(""),
        r.transmissao_tipo.as_deref().unwrap_or(""),
        r.transmissao_marchas.map(|m| m.to_string()).unwrap_or_default(),
        r.combustivel_tipo,
        r.tipo_propulsao
    );
    if occurrence >= 2 {
        key.push_str(&format!("|{occurrence}"));
    }
    Uuid::new_v5(&crate::engine::dataset::schema::ID_NAMESPACE, key.as_bytes())
}

/// The summary of one table.
#[derive(Debug, Clone, Serialize)]
pub struct TableSummary {
    pub arquivo: String,
    pub ano: i32,
    pub paginas: usize,
    pub linhas: usize,
    pub por_propulsao: BTreeMap<String, usize>,
    pub por_combustivel: BTreeMap<String, usize>,
    pub marcas: Vec<String>,
    pub marcas_desconhecidas: Vec<String>,
    pub colunas_desconhecidas: Vec<String>,
    /// The first page's totals beside the counts imported.
    pub capa: Vec<CoverLine>,
    pub problemas: Vec<Problem>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CoverLine {
    pub rotulo: String,
    pub capa: i64,
    pub importado: Option<i64>,
    /// Imported minus printed (None when the two agree or nothing compares).
    pub diferenca: Option<i64>,
}

/// The whole import's summary.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub tabelas: Vec<TableSummary>,
    pub linhas: usize,
    pub saida: String,
}

/// The imported catalog: the rows of every table, aliases applied and ids given.
pub struct Imported {
    pub summary: Summary,
    pub frame: DataFrame,
}

/// Imports tables already read.
pub fn assemble(tables: Vec<(String, Table)>, brands: &Brands, out: &Path) -> anyhow::Result<Imported> {
    let mut summaries = Vec::new();
    let mut rows: Vec<(i32, Record)> = Vec::new();
    for (file, mut t) in tables {
        for r in &mut t.records {
            r.marca = brands.canonical(&r.marca);
        }
        // Rows the table prints twice are kept (one catalog row per table row) and named.
        let mut first_seen: HashMap<String, (usize, usize)> = HashMap::new();
        for r in &t.records {
            let key = format!("{:?}", Record { page: 0, row: 0, ..r.clone() });
            match first_seen.get(&key) {
                Some(&(p, l)) => t.problems.push(Problem {
                    pagina: r.page,
                    linha: Some(r.row),
                    veiculo: Some(format!("{} {} {}", r.marca, r.modelo, r.versao)),
                    problema: format!("linha repetida (igual à p. {p}, linha {l}): mantida, com id próprio"),
                }),
                None => {
                    first_seen.insert(key, (r.page, r.row));
                }
            }
        }
        let mut por_propulsao: BTreeMap<String, usize> = BTreeMap::new();
        let mut por_combustivel: BTreeMap<String, usize> = BTreeMap::new();
        let mut marcas: BTreeSet<String> = BTreeSet::new();
        for r in &t.records {
            *por_propulsao.entry(r.tipo_propulsao.clone()).or_default() += 1;
            *por_combustivel.entry(r.combustivel_tipo.clone()).or_default() += 1;
            marcas.insert(r.marca.clone());
        }
        let desconhecidas: Vec<String> = marcas.iter().filter(|m| !brands.is_known(m)).cloned().collect();
        let n = t.records.len();
        let capa = t
            .cover
            .iter()
            .map(|(label, printed)| {
                let imported = match label.as_str() {
                    "Marcas" => Some(marcas.len()),
                    "Modelos/Versões" => Some(n),
                    "Elétricos" => Some(*por_propulsao.get("Elétrico").unwrap_or(&0)),
                    "Plug-in" => Some(*por_propulsao.get("Híbrido Plug-in").unwrap_or(&0)),
                    "Híbridos" => Some(*por_propulsao.get("Híbrido").unwrap_or(&0)),
                    "Flex" | "Gasolina" | "Diesel" => Some(*por_combustivel.get(label.as_str()).unwrap_or(&0)),
                    _ => None,
                }
                .map(|v| v as i64);
                CoverLine {
                    rotulo: label.clone(),
                    capa: *printed,
                    importado: imported,
                    diferenca: imported.filter(|v| v != printed).map(|v| v - printed),
                }
            })
            .collect();
        summaries.push(TableSummary {
            arquivo: file,
            ano: t.year,
            paginas: t.pages,
            linhas: n,
            por_propulsao,
            por_combustivel,
            marcas: marcas.into_iter().collect(),
            marcas_desconhecidas: desconhecidas,
            colunas_desconhecidas: t.unknown_columns.clone(),
            capa,
            problemas: t.problems.clone(),
        });
        rows.extend(t.records.into_iter().map(|r| (t.year, r)));
    }
    let frame = frame(&rows)?;
    let total = rows.len();
    Ok(Imported { summary: Summary { tabelas: summaries, linhas: total, saida: out.display().to_string() }, frame })
}

fn frame(rows: &[(i32, Record)]) -> anyhow::Result<DataFrame> {
    let mut seen: HashMap<Uuid, usize> = HashMap::new();
    let ids: Vec<String> = rows
        .iter()
        .map(|(ano, r)| {
            let base = row_id(r, *ano, 1);
            let n = seen.entry(base).or_insert(0);
            *n += 1;
            row_id(r, *ano, *n).to_string()
        })
        .collect();
    let s = |f: fn(&Record) -> &str| rows.iter().map(|(_, r)| f(r).to_string()).collect::<Vec<String>>();
    let o = |f: fn(&Record) -> Option<&str>| {
        rows.iter().map(|(_, r)| f(r).map(str::to_string)).collect::<Vec<Option<String>>>()
    };
    let x = |f: fn(&Record) -> Option<f64>| rows.iter().map(|(_, r)| f(r)).collect::<Vec<Option<f64>>>();
    let columns = vec![
        Column::new("id".into(), ids),
        Column::new("marca".into(), s(|r| &r.marca)),
        Column::new("modelo".into(), s(|r| &r.modelo)),
        Column::new("versao".into(), s(|r| &r.versao)),
        Column::new("categoria".into(), s(|r| &r.categoria)),
        Column::new("ano".into(), rows.iter().map(|(a, _)| *a).collect::<Vec<i32>>()),
        Column::new("motor".into(), o(|r| r.motor.as_deref())),
        Column::new("tipo_propulsao".into(), s(|r| &r.tipo_propulsao)),
        Column::new("combustivel_tipo".into(), s(|r| &r.combustivel_tipo)),
        Column::new("transmissao_tipo".into(), o(|r| r.transmissao_tipo.as_deref())),
        Column::new(
            "transmissao_marchas".into(),
            rows.iter().map(|(_, r)| r.transmissao_marchas).collect::<Vec<Option<i32>>>(),
        ),
        Column::new(
            "ar_condicionado".into(),
            rows.iter().map(|(_, r)| r.ar_condicionado).collect::<Vec<Option<bool>>>(),
        ),
        Column::new("direcao_assistida_tipo".into(), s(|r| &r.direcao_assistida_tipo)),
        Column::new("eficiencia_cidade_km_l".into(), x(|r| r.eficiencia_cidade_km_l)),
        Column::new("eficiencia_estrada_km_l".into(), x(|r| r.eficiencia_estrada_km_l)),
        Column::new("eficiencia_cidade_etanol_km_l".into(), x(|r| r.eficiencia_cidade_etanol_km_l)),
        Column::new("eficiencia_estrada_etanol_km_l".into(), x(|r| r.eficiencia_estrada_etanol_km_l)),
        Column::new("consumo_energetico_mj_km".into(), x(|r| r.consumo_energetico_mj_km)),
        Column::new("co2_fossil_g_km".into(), x(|r| r.co2_fossil_g_km)),
        Column::new("nmhc_g_km".into(), x(|r| r.nmhc_g_km)),
        Column::new("co_g_km".into(), x(|r| r.co_g_km)),
        Column::new("nox_g_km".into(), x(|r| r.nox_g_km)),
        Column::new("nmog_nox_g_km".into(), x(|r| r.nmog_nox_g_km)),
        Column::new("autonomia_eletrica_km".into(), x(|r| r.autonomia_eletrica_km)),
        Column::new("tanque_l".into(), vec![None::<f64>; rows.len()]),
        Column::new("classificacao_pbe_categoria".into(), o(|r| r.classificacao_pbe_categoria.as_deref())),
        Column::new("classificacao_pbe_geral".into(), o(|r| r.classificacao_pbe_geral.as_deref())),
    ];
    Ok(DataFrame::new(rows.len(), columns)?)
}

/// Writes the export under a temporary name beside `out`, then renames it into place (the
/// report's atomic write): a running service never sees half a file, and a failure leaves the
/// old file untouched.
pub fn write_atomically(df: &mut DataFrame, out: &Path) -> anyhow::Result<()> {
    let bytes = crate::sample::parquet_bytes(df)?;
    crate::report::write_atomically(out, &bytes)
}

fn text_summary(s: &Summary) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    for t in &s.tabelas {
        let _ =
            writeln!(o, "{}: Tabela Ano {}, {} páginas, {} linhas importadas", t.arquivo, t.ano, t.paginas, t.linhas);
        let list =
            |m: &BTreeMap<String, usize>| m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ");
        let _ = writeln!(o, "  por propulsão: {}", list(&t.por_propulsao));
        let _ = writeln!(o, "  por combustível: {}", list(&t.por_combustivel));
        let _ = writeln!(o, "  marcas: {}", t.marcas.len());
        if !t.marcas_desconhecidas.is_empty() {
            let _ = writeln!(o, "  marcas fora da lista de marcas: {}", t.marcas_desconhecidas.join(", "));
        }
        for c in &t.colunas_desconhecidas {
            let _ = writeln!(o, "  coluna não importada (cabeçalho desconhecido): {c}");
        }
        if t.capa.is_empty() {
            let _ = writeln!(o, "  capa: nenhum total impresso encontrado");
        } else {
            let _ = writeln!(o, "  capa (impresso na primeira página) x importado:");
        }
        for c in &t.capa {
            let cmp = match (c.importado, c.diferenca) {
                (Some(i), Some(d)) => format!("importado {i}: DIFERENÇA {d:+}"),
                (Some(i), None) => format!("importado {i}: confere"),
                _ => "sem contagem comparável".into(),
            };
            let _ = writeln!(o, "    {:<16} capa {:>5}  {cmp}", c.rotulo, c.capa);
        }
        let _ = writeln!(o, "  problemas da tabela: {}", t.problemas.len());
        for p in &t.problemas {
            let at = match (p.linha, &p.veiculo) {
                (Some(l), Some(v)) => format!("p. {}, linha {l} ({v})", p.pagina),
                (Some(l), None) => format!("p. {}, linha {l}", p.pagina),
                _ => format!("p. {}", p.pagina),
            };
            let _ = writeln!(o, "    {at}: {}", p.problema);
        }
    }
    let _ = writeln!(o, "{} linhas gravadas em {}", s.linhas, s.saida);
    o
}

/// The brand list bundled with the binary.
pub const DEFAULT_BRANDS: &str = include_str!("../../data/pbev/marcas.toml");

/// The brand aliases and the propulsion name patterns: the files given, else the repository's
/// (data/pbev/) when run from it, else the lists the binary was built with.
fn lists(args: &ImportPbevArgs) -> anyhow::Result<(Brands, codes::NamePatterns)> {
    let pick = |given: &Option<PathBuf>, default: &str| -> Option<PathBuf> {
        given.clone().or_else(|| Some(PathBuf::from(default)).filter(|p| p.is_file()))
    };
    let brands = match pick(&args.marcas, "data/pbev/marcas.toml") {
        Some(p) => Brands::read(&p)?,
        None => toml::from_str(DEFAULT_BRANDS).context("a lista de marcas embutida")?,
    };
    let names = match pick(&args.propulsao, "data/pbev/propulsao.toml") {
        Some(p) => {
            let text = std::fs::read_to_string(&p).with_context(|| format!("lendo {}", p.display()))?;
            codes::NamePatterns::parse(&text).map_err(|e| anyhow::anyhow!("{} inválido: {e}", p.display()))?
        }
        None => codes::NamePatterns::bundled(),
    };
    Ok((brands, names))
}

/// `eco-insights import pbev`: exit 0 when written, 2 when an input is not a readable PBEV
/// table (nothing written), 1 on any other failure.
pub fn run(args: &ImportPbevArgs) -> ExitCode {
    if args.pdfs.is_empty() {
        eprintln!("erro: nenhum PDF indicado");
        return ExitCode::from(2);
    }
    let (brands, names) = match lists(args) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("erro: {e:#}");
            return ExitCode::from(2);
        }
    };
    // A reader panic is contained and reported as a corrupted file, without the panic's text.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut tables = Vec::new();
    for path in &args.pdfs {
        let deadline = Duration::from_secs(args.read_timeout);
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let watchdog = {
            let shown = path.display().to_string();
            std::thread::spawn(move || {
                // Ends when the read is done (a message, or the sender dropped) or the deadline passes.
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(deadline) {
                    eprintln!(
                        "erro: {shown}: leitura interrompida após {} s (PDF danificado?); nada foi gravado",
                        deadline.as_secs()
                    );
                    std::process::exit(2);
                }
            })
        };
        let read = read_table(path, &names);
        let _ = done.send(());
        let _ = watchdog.join();
        match read {
            Ok(t) => tables.push((path.display().to_string(), t)),
            Err(why) => {
                std::panic::set_hook(default_hook);
                eprintln!("erro: {}: {why}; nada foi gravado", path.display());
                return ExitCode::from(2);
            }
        }
    }
    std::panic::set_hook(default_hook);
    let mut imported = match assemble(tables, &brands, &args.out) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("erro: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = write_atomically(&mut imported.frame, &args.out) {
        eprintln!("erro: {e:#}");
        return ExitCode::FAILURE;
    }
    match args.format {
        ImportFormat::Text => print!("{}", text_summary(&imported.summary)),
        ImportFormat::Json => match serde_json::to_string_pretty(&imported.summary) {
            Ok(j) => println!("{j}"),
            Err(e) => {
                eprintln!("erro: {e}");
                return ExitCode::FAILURE;
            }
        },
    }
    ExitCode::SUCCESS
}

/// The PDFs of a folder, sorted by name (for `make data`'s `data/pbev/*.pdf`).
pub fn pdfs_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("pdf")))
        .collect();
    v.sort();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_catalog_is_what_make_data_imports() {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/data/pbev"));
        let names = codes::NamePatterns::bundled();
        let brands: Brands = toml::from_str(DEFAULT_BRANDS).unwrap();
        let tables: Vec<(String, Table)> = pdfs_in(dir)
            .unwrap()
            .into_iter()
            .map(|p| (p.display().to_string(), read_table(&p, &names).unwrap()))
            .collect();
        assert_eq!(tables.len(), 5);
        let imported = assemble(tables, &brands, Path::new("catalog.parquet")).unwrap();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/catalog.parquet");
        let bundled = ParquetReader::new(std::fs::File::open(path).unwrap()).finish().unwrap();
        assert!(
            bundled.equals_missing(&imported.frame),
            "data/catalog.parquet differs from the import of data/pbev (run make data)"
        );
    }

    #[test]
    fn brands_are_made_one_and_ids_are_stable() {
        let brands: Brands = toml::from_str(DEFAULT_BRANDS).unwrap();
        assert_eq!(brands.canonical("Chev"), "CHEVROLET");
        assert_eq!(brands.canonical("vw"), "VOLKSWAGEN");
        assert_eq!(brands.canonical("Mercedes-Benz"), "MERCEDES-BENZ");
        assert_eq!(brands.canonical("Land  Rover"), "LAND ROVER");
        assert!(brands.is_known("LAND ROVER") && !brands.is_known("ACME"));
        let r = Record { marca: "FIAT".into(), modelo: "MOBI".into(), versao: "LIKE".into(), ..Record::default() };
        // UUID v5 of the key the contract names, joined by `|` (null as empty).
        let key = "FIAT|MOBI|LIKE|2024|||||";
        assert_eq!(row_id(&r, 2024, 1), Uuid::new_v5(&Uuid::NAMESPACE_OID, key.as_bytes()));
        assert_eq!(row_id(&r, 2024, 2), Uuid::new_v5(&Uuid::NAMESPACE_OID, format!("{key}|2").as_bytes()));
    }
}
