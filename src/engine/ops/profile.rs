//! A driving profile per request: the annual cost of a few vehicles under another cost
//! configuration (km per year and prices). The cost formula stays the one in the SQL views: the
//! snapshot's own views run again, with the request's configuration, over the concerned rows
//! only. Only `custo_anual_estimado` depends on the configuration (the eco score does not).

use polars::prelude::*;
use uuid::Uuid;

use crate::engine::dataset::load::FUEL_FOLD;
use crate::engine::dataset::schema::{COLUMNS, ID};
use crate::engine::dataset::snapshot::Snapshot;
use crate::engine::dataset::table::Vehicle;
use crate::engine::dataset::text_index::{fold, TextValues};
use crate::engine::views::CostConfig;

/// The published annual cost of each vehicle of `ids` under `cost` (`None` for an unknown id or
/// a vehicle without a cost), in the order of `ids`.
pub fn annual_costs(snapshot: &Snapshot, ids: &[Uuid], cost: &CostConfig) -> PolarsResult<Vec<Option<f64>>> {
    let found: Vec<(Uuid, u32)> = ids.iter().filter_map(|id| snapshot.row_of(id).map(|r| (*id, r))).collect();
    if found.is_empty() {
        return Ok(vec![None; ids.len()]);
    }
    let rows = IdxCa::from_vec(PlSmallStr::EMPTY, found.iter().map(|(_, r)| *r).collect());
    let names: Vec<&str> = COLUMNS.iter().map(|c| c.name).collect();
    let mut input = snapshot.frame().select(names)?.take(&rows)?;
    let fuels = TextValues::of(input.column("combustivel_tipo")?)?;
    let folded: StringChunked = (0..fuels.len()).map(|i| fuels.get(i).map(fold)).collect();
    input.with_column(folded.with_name(FUEL_FOLD.into()).into_column())?;
    let id_text: Vec<String> = found.iter().map(|(id, _)| id.to_string()).collect();
    input.insert_column(0, Column::new(ID.into(), id_text))?;

    let views = snapshot.info.views.with_cost(cost);
    let out = views.apply(input.lazy()).map_err(|e| polars_err!(ComputeError: "{e:#}"))?;
    let out_ids = out.column(ID)?.cast(&DataType::String)?;
    let out_ids = out_ids.str()?;
    let costs = out.column("custo_anual_estimado")?.cast(&DataType::Float64)?;
    let costs = costs.f64()?;
    let by_id: PlHashMap<&str, Option<f64>> =
        out_ids.iter().zip(costs.iter()).filter_map(|(id, c)| id.map(|id| (id, c.filter(|x| x.is_finite())))).collect();
    Ok(ids.iter().map(|id| by_id.get(id.to_string().as_str()).copied().flatten()).collect())
}

/// Puts the annual cost under `cost` into each vehicle (the other fields are unchanged).
pub fn apply(snapshot: &Snapshot, vehicles: &mut [Vehicle], cost: &CostConfig) -> PolarsResult<()> {
    let ids: Vec<Uuid> = vehicles.iter().map(|v| v.id).collect();
    for (v, c) in vehicles.iter_mut().zip(annual_costs(snapshot, &ids, cost)?) {
        v.custo_anual_estimado = c;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::engine::load::load_bytes;
    use crate::engine::views::Views;
    use crate::sample::generate_catalog;

    #[test]
    fn the_server_configuration_gives_the_served_costs_and_another_one_scales_them() {
        let mut df = generate_catalog(200, 9).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        let views =
            Views::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries"), &CostConfig::default()).unwrap();
        let s = load_bytes(&bytes, Path::new("generated.parquet"), &views).unwrap();
        let all = s.vehicles();
        let ids: Vec<Uuid> = all.iter().take(40).map(|v| v.id).collect();
        let same = annual_costs(&s, &ids, &CostConfig::default()).unwrap();
        for (v, c) in all.iter().zip(&same) {
            assert_eq!(v.custo_anual_estimado, *c, "{}", v.id);
        }
        let double = CostConfig { km_ano: 24_000.0, ..CostConfig::default() };
        let doubled = annual_costs(&s, &ids, &double).unwrap();
        for (v, c) in all.iter().zip(&doubled) {
            match (v.custo_anual_estimado, c) {
                (Some(a), Some(b)) => assert!((2.0 * a - b).abs() <= 0.011, "{}: {a} {b}", v.id),
                (a, b) => assert_eq!(a, *b),
            }
        }
        let unknown = annual_costs(&s, &[Uuid::from_u128(7), ids[0]], &double).unwrap();
        assert_eq!(unknown, vec![None, doubled[0]]);
    }
}
