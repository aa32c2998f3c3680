//! How putting a table's columns in catalog order scales: columns of 8-byte numbers put in a
//! random order the two ways the load can (`src/engine/dataset/reorder.rs`): one prefetched read
//! per row, and the two passes of its plan (which the load uses from 2^22 rows). Prints the
//! median of three rounds of each, every column on the pool's cores, and the time to make the
//! plan.
//!
//! `cargo run --release --example reorder -- ROWS [COLUMNS]` (16 columns unless given).

use std::time::{Duration, Instant};

use eco_insights::engine::dataset::reorder::Order;
use rayon::prelude::*;

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let (Some(Ok(rows)), columns) = (args.next(), args.next()) else {
        eprintln!("usage: reorder ROWS [COLUMNS]");
        std::process::exit(2);
    };
    let columns = columns.and_then(Result::ok).unwrap_or(16);
    // A random permutation of the rows (Fisher-Yates on a fixed xorshift stream).
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut order: Vec<u32> = (0..rows as u32).collect();
    for i in (1..rows).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    let data: Vec<Vec<f64>> = (0..columns).map(|c| (0..rows).map(|r| (r * (c + 1)) as f64).collect()).collect();
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2].as_secs_f64() * 1000.0
    };
    let mut line = format!("{rows} rows, {columns} columns:");
    let mut first: Option<Vec<Vec<f64>>> = None;
    for (name, plan) in [("one pass", false), ("two passes", true)] {
        let t = Instant::now();
        let order = Order::with_plan(&order, rows, plan).expect("a permutation");
        let planned = t.elapsed().as_secs_f64() * 1000.0;
        let mut times = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let out: Vec<Vec<f64>> = data.par_iter().map(|c| order.values(c).expect("a column per row")).collect();
            times.push(t.elapsed());
            match &first {
                Some(expected) => assert!(&out == expected, "the two ways put the rows in the same order"),
                None => first = Some(out),
            }
        }
        line += &format!(" {name} {:.0} ms (order checked and planned in {planned:.0} ms);", median(times));
    }
    println!("{}", line.trim_end_matches(';'));
}
