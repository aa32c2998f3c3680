//! How ranking a text column's distinct values scales, the way the load ranks the versions of a
//! catalog (`src/engine/dataset/text_rank.rs`): the column's rows are cut in parts, each part's
//! distinct values found, and all the parts' values ranked together, once by a comparison sort
//! of the strings and once eight bytes at a time; then the rows ranked as the load ranks them
//! (sorted by hash, `row_ranks`), which must agree. Prints the median of three rounds of each.
//!
//! `cargo run --release --example text_rank -- FILE.parquet [COLUMN]` (`versao` unless given).

use std::time::{Duration, Instant};

use eco_insights::engine::dataset::schema::text_codes;
use eco_insights::engine::dataset::text_rank::{dense_ranks, row_ranks};
use polars::prelude::*;
use rayon::prelude::*;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(file), column) = (args.next(), args.next()) else {
        eprintln!("usage: text_rank FILE.parquet [COLUMN]");
        std::process::exit(2);
    };
    let column = column.unwrap_or_else(|| "versao".into());
    let file = std::fs::File::open(&file).expect("a readable file");
    let frame = ParquetReader::new(file)
        .with_columns(Some(vec![column.clone()]))
        .finish()
        .expect("a Parquet file with that column");
    let text = frame.column(&column).expect("the column").str().expect("a text column").rechunk();
    let n = text.len();
    let step = n.div_ceil(rayon::current_num_threads().max(1) * 4).max(1);
    let parts: Vec<StringChunked> = (0..n).step_by(step).map(|start| text.slice(start as i64, step)).collect();
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2].as_secs_f64() * 1000.0
    };
    let t = Instant::now();
    let local: Vec<(Vec<Option<u32>>, Vec<&str>)> = parts.par_iter().map(|p| text_codes(p)).collect();
    let codes_ms = t.elapsed().as_secs_f64() * 1000.0;
    let all: Vec<&str> = local.iter().flat_map(|(_, distinct)| distinct.iter().copied()).collect();
    let compared = |values: &[&str]| -> Vec<u32> {
        let mut order: Vec<(&str, u32)> = values.iter().enumerate().map(|(i, v)| (*v, i as u32)).collect();
        order.par_sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut ranks = vec![0u32; values.len()];
        let mut rank = 0u32;
        for j in 0..order.len() {
            rank += (j > 0 && order[j - 1].0 != order[j].0) as u32;
            ranks[order[j].1 as usize] = rank;
        }
        ranks
    };
    let mut line = format!("{n} rows, parts' distinct values {} (found in {codes_ms:.0} ms):", all.len());
    let mut first: Option<Vec<u32>> = None;
    for (name, rank) in [("compared", &compared as &dyn Fn(&[&str]) -> Vec<u32>), ("8 bytes at a time", &dense_ranks)] {
        let mut times = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let ranks = rank(&all);
            times.push(t.elapsed());
            match &first {
                Some(first) => assert_eq!(first, &ranks, "the two ways rank alike"),
                None => first = Some(ranks),
            }
        }
        line.push_str(&format!(" {name} {:.0} ms;", median(times)));
    }
    // The rows' ranks as the load finds them (sorted by hash, see `row_ranks`), checked against
    // the parts' values ranked above.
    let ranks = first.expect("ranked");
    let mut at = 0;
    let mut by_parts: Vec<u32> = Vec::with_capacity(n);
    for (codes, distinct) in &local {
        by_parts.extend(codes.iter().map(|c| c.map_or(0, |c| ranks[at + c as usize])));
        at += distinct.len();
    }
    let mut times = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let rows = row_ranks(&text);
        times.push(t.elapsed());
        assert_eq!(rows, by_parts, "the rows rank alike");
    }
    line.push_str(&format!(" rows ranked by hash {:.0} ms", median(times)));
    println!("{line}");
}
