//! Per-vehicle views (API-CONTRACT §4) that search the catalog: the vehicles similar to a base
//! vehicle and its best alternative. The summary, eco score and positions are the base's own row
//! (`Table::vehicle`).

use polars::prelude::*;
use uuid::Uuid;

use super::filters::sorted;
use crate::engine::dataset::table::{row_numbers, Table, Vehicle, ROW};

/// Default number of similar vehicles (`top` of compare-similar).
pub const SIMILAR_DEFAULT: u32 = 5;
/// Largest `top` of compare-similar.
pub const SIMILAR_MAX: u32 = 20;

/// The other scored vehicles of the base's categoria, as a lazy frame: the categoria's rows come
/// from the text index, so only they are gathered.
fn same_category_scored(snapshot: &Table, base: &Vehicle, row: u32, columns: &[&str]) -> PolarsResult<LazyFrame> {
    let categoria =
        snapshot.index.column("categoria").ok_or_else(|| polars_err!(ComputeError: "no categoria index"))?;
    let rows: &[u32] = match categoria.code_of(&base.categoria) {
        Some(code) => categoria.rows(code),
        None => &[],
    };
    let mut columns = columns.to_vec();
    columns.push("eco_score");
    Ok(snapshot.gather(Some(rows), &columns)?.filter(col("eco_score").is_not_null().and(col(ROW).neq(lit(row)))))
}

/// Up to `top` vehicles most similar to the base (`None`: unknown id): other scored vehicles of
/// its categoria by |Δ eco score| ascending, then |Δ ano|, then id; without a base score, by
/// |Δ ano| then id.
pub fn similar(snapshot: &Table, id: &Uuid, top: u32) -> PolarsResult<Option<Vec<u32>>> {
    let Some(row) = snapshot.row_of(id) else { return Ok(None) };
    let base = snapshot.vehicle_at(row);
    let mut deltas = vec![(col("ano") - lit(base.ano)).abs().alias("delta_ano")];
    let mut keys = vec![("delta_ano", false)];
    if let Some(score) = base.eco_score {
        // Both scores are published with one decimal: round the difference back to one decimal
        // so equal gaps (71.1 − 62.8 and 62.8 − 54.5) compare equal despite binary noise.
        deltas.push(
            super::filters::published((col("eco_score") - lit(score)).abs(), snapshot.casas.eco_score)
                .alias("delta_score"),
        );
        keys.insert(0, ("delta_score", false));
    }
    let lf = same_category_scored(snapshot, &base, row, &["ano"])?.with_columns(deltas);
    let df = sorted(lf, &keys).select([col(ROW)]).limit(top).collect()?;
    Ok(Some(row_numbers(&df)?))
}

/// The best alternative to the base (`None`: unknown id; `Some(None)`: nothing better): the
/// vehicle of its categoria with the highest eco score strictly above the base's (any scored one
/// when the base has no score); ties by higher eficienciaMediaReferencia, then id.
pub fn best_alternative(snapshot: &Table, id: &Uuid) -> PolarsResult<Option<Option<Vehicle>>> {
    let Some(row) = snapshot.row_of(id) else { return Ok(None) };
    let base = snapshot.vehicle_at(row);
    let mut lf = same_category_scored(snapshot, &base, row, &["eficiencia_media_referencia"])?;
    if let Some(score) = base.eco_score {
        lf = lf.filter(col("eco_score").gt(lit(score)));
    }
    let df = sorted(lf, &[("eco_score", true), ("eficiencia_media_referencia", true)])
        .select([col(ROW)])
        .limit(1)
        .collect()?;
    Ok(Some(snapshot.rows_of(&df)?.into_iter().next()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::engine::load::load_bytes;
    use crate::engine::views::{CostConfig, Views};
    use crate::sample::generate_catalog;

    /// A generated catalog where every 7th vehicle has neither energy nor CO2 data (no score).
    fn snapshot(rows: usize, seed: u64) -> crate::engine::snapshot::Snapshot {
        let unscored = (col("i") % lit(7)).eq(lit(0));
        let blank = |name: &str| {
            when(unscored.clone()).then(lit(NULL).cast(DataType::Float64)).otherwise(col(name)).alias(name)
        };
        let mut df = generate_catalog(rows, seed)
            .unwrap()
            .lazy()
            .with_row_index("i", None)
            .with_columns([blank("consumo_energetico_mj_km"), blank("co2_fossil_g_km")])
            .drop(cols(["i"]))
            .collect()
            .unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap()
    }

    /// A published one-decimal score in integer tenths, so gaps compare exactly.
    fn tenths(x: f64) -> i64 {
        (x * 10.0).round() as i64
    }

    /// Plain-Rust reference of `similar`.
    fn reference_similar<'a>(all: &'a [Vehicle], base: &Vehicle, top: usize) -> Vec<&'a Vehicle> {
        let mut out: Vec<&Vehicle> =
            all.iter().filter(|v| v.id != base.id && v.categoria == base.categoria && v.eco_score.is_some()).collect();
        let key = |v: &Vehicle| {
            let d_score = base.eco_score.map(|b| (tenths(v.eco_score.unwrap()) - tenths(b)).abs());
            (d_score, (v.ano - base.ano).abs(), v.id)
        };
        out.sort_by_key(|v| key(v));
        out.truncate(top);
        out
    }

    /// Plain-Rust reference of `best_alternative`.
    fn reference_best<'a>(all: &'a [Vehicle], base: &Vehicle) -> Option<&'a Vehicle> {
        let mut out: Vec<&Vehicle> = all
            .iter()
            .filter(|v| v.id != base.id && v.categoria == base.categoria)
            .filter(|v| match (v.eco_score, base.eco_score) {
                (Some(x), Some(b)) => tenths(x) > tenths(b),
                (Some(_), None) => true,
                _ => false,
            })
            .collect();
        out.sort_by(|a, b| {
            let eff = match (a.eficiencia_media_referencia, b.eficiencia_media_referencia) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                (x, y) => y.is_some().cmp(&x.is_some()),
            };
            tenths(b.eco_score.unwrap()).cmp(&tenths(a.eco_score.unwrap())).then(eff).then(a.id.cmp(&b.id))
        });
        out.first().copied()
    }

    #[test]
    fn similar_and_best_alternative_match_a_plain_reference() {
        let s = snapshot(400, 11);
        let all = s.vehicles();
        assert!(all.iter().any(|v| v.eco_score.is_none()), "the fixture should hold unscored vehicles");
        for base in all.iter().take(120) {
            for top in [1, 5, 20] {
                let got = similar(&s, &base.id, top).unwrap().unwrap();
                let want: Vec<Uuid> = reference_similar(&all, base, top as usize).iter().map(|v| v.id).collect();
                let got: Vec<Uuid> = got.iter().map(|r| s.id_at(*r)).collect();
                assert_eq!(got, want, "similar to {} (top {top})", base.id);
            }
            let got = best_alternative(&s, &base.id).unwrap().unwrap().map(|v| v.id);
            assert_eq!(got, reference_best(&all, base).map(|v| v.id), "best alternative to {}", base.id);
        }
    }

    #[test]
    fn unknown_ids_are_none() {
        let s = snapshot(30, 3);
        let unknown = Uuid::from_u128(42);
        assert!(s.vehicle(&unknown).is_none());
        assert!(similar(&s, &unknown, 5).unwrap().is_none());
        assert!(best_alternative(&s, &unknown).unwrap().is_none());
    }
}
