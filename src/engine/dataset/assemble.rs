//! A frame decoded a batch of rows at a time, assembled into one chunk per column as the batches
//! arrive. Each column's values are copied into one buffer sized for the whole file, and each
//! batch's own buffers are freed before the next batch is decoded (and reuse their memory):
//! stacking the batches first and copying them into one chunk afterwards held the file's columns
//! twice at once, and faulted in a second copy of them.

use polars::prelude::*;
use polars_arrow::array::{BooleanArray, PrimitiveArray};
use polars_arrow::bitmap::{BitmapBuilder, OptBitmapBuilder};

/// The columns of the batches seen so far, in one buffer each.
pub struct Assembled {
    columns: Vec<Part>,
    rows: usize,
}

/// One column being assembled. Numbers, booleans and dictionary codes are copied into one
/// buffer; any other type (text) is stacked as it comes and copied into one chunk at the end
/// (a text column's chunks share their string data: only its 16-byte views are copied).
enum Part {
    F64(Numbers<Float64Type>),
    F32(Numbers<Float32Type>),
    I64(Numbers<Int64Type>),
    I32(Numbers<Int32Type>),
    /// The codes of a dictionary-encoded column, with its (categorical) type.
    Codes(Numbers<UInt32Type>, DataType),
    Bool {
        name: PlSmallStr,
        values: BitmapBuilder,
        validity: OptBitmapBuilder,
    },
    Stacked(Series),
}

/// A numeric column's values and validity (no validity until a batch brings a null).
struct Numbers<T: PolarsNumericType> {
    name: PlSmallStr,
    values: Vec<T::Native>,
    validity: OptBitmapBuilder,
}

/// A validity with room for `capacity` rows.
fn validity(capacity: usize) -> OptBitmapBuilder {
    let mut validity = OptBitmapBuilder::default();
    validity.reserve(capacity);
    validity
}

impl<T: PolarsNumericType> Numbers<T> {
    fn new(name: &PlSmallStr, capacity: usize) -> Numbers<T> {
        Numbers { name: name.clone(), values: Vec::with_capacity(capacity), validity: validity(capacity) }
    }

    fn extend(&mut self, ca: &ChunkedArray<T>) {
        for array in ca.downcast_iter() {
            self.values.extend_from_slice(array.values().as_slice());
            self.validity.subslice_extend_from_opt_validity(array.validity(), 0, array.len());
        }
    }

    fn finish(self) -> ChunkedArray<T> {
        let array = PrimitiveArray::from_vec(self.values).with_validity(self.validity.into_opt_validity());
        ChunkedArray::with_chunk(self.name, array)
    }
}

impl Part {
    fn new(column: &Column, capacity: usize) -> Part {
        let name = column.name();
        match column.dtype() {
            DataType::Float64 => Part::F64(Numbers::new(name, capacity)),
            DataType::Float32 => Part::F32(Numbers::new(name, capacity)),
            DataType::Int64 => Part::I64(Numbers::new(name, capacity)),
            DataType::Int32 => Part::I32(Numbers::new(name, capacity)),
            DataType::Boolean => Part::Bool {
                name: name.clone(),
                values: BitmapBuilder::with_capacity(capacity),
                validity: validity(capacity),
            },
            dtype @ DataType::Categorical(cats, _) if cats.physical() == CategoricalPhysical::U32 => {
                Part::Codes(Numbers::new(name, capacity), dtype.clone())
            }
            dtype => Part::Stacked(Series::new_empty(name.clone(), dtype)),
        }
    }

    fn name(&self) -> &PlSmallStr {
        match self {
            Part::F64(n) => &n.name,
            Part::F32(n) => &n.name,
            Part::I64(n) => &n.name,
            Part::I32(n) => &n.name,
            Part::Codes(n, _) => &n.name,
            Part::Bool { name, .. } => name,
            Part::Stacked(s) => s.name(),
        }
    }

    /// Appends a batch's column (of the type this part was made for).
    fn extend(&mut self, column: &Column) -> PolarsResult<()> {
        let series = column.as_materialized_series();
        match self {
            Part::F64(n) => n.extend(series.f64()?),
            Part::F32(n) => n.extend(series.f32()?),
            Part::I64(n) => n.extend(series.i64()?),
            Part::I32(n) => n.extend(series.i32()?),
            // Codes under another dictionary than the earlier batches' would read as other text
            // (Polars refuses to stack such columns too).
            Part::Codes(_, dtype) if series.dtype() != dtype => {
                polars_bail!(SchemaMismatch: "column '{}' changes its dictionary between batches of rows", series.name())
            }
            Part::Codes(n, _) => n.extend(series.cat32()?.physical()),
            Part::Bool { values, validity, .. } => {
                for array in series.bool()?.downcast_iter() {
                    values.extend_from_bitmap(array.values());
                    validity.subslice_extend_from_opt_validity(array.validity(), 0, array.len());
                }
            }
            Part::Stacked(all) => {
                all.append(series)?;
            }
        }
        Ok(())
    }

    /// The column in one chunk; text too with `one_text_chunk`, else in its batches' chunks.
    fn finish(self, one_text_chunk: bool) -> PolarsResult<Column> {
        let series = match self {
            Part::F64(n) => n.finish().into_series(),
            Part::F32(n) => n.finish().into_series(),
            Part::I64(n) => n.finish().into_series(),
            Part::I32(n) => n.finish().into_series(),
            Part::Codes(n, dtype) => {
                // SAFETY: the codes are the column's own, every batch under the same dictionary
                // (checked as they were appended).
                unsafe { CategoricalChunked::<Categorical32Type>::from_cats_and_dtype_unchecked(n.finish(), dtype) }
                    .into_series()
            }
            Part::Bool { name, values, validity } => {
                let array = BooleanArray::new(ArrowDataType::Boolean, values.freeze(), validity.into_opt_validity());
                BooleanChunked::with_chunk(name, array).into_series()
            }
            Part::Stacked(all) if one_text_chunk || !all.dtype().is_string() => all.rechunk(),
            Part::Stacked(all) => all,
        };
        Ok(series.into_column())
    }
}

impl Assembled {
    /// Columns shaped like `first` (the first batch), with room for `capacity` rows (a hint:
    /// more rows still fit), holding the first batch's rows.
    pub fn new(first: DataFrame, capacity: usize) -> PolarsResult<Assembled> {
        let columns = first.columns().iter().map(|c| Part::new(c, capacity.max(first.height()))).collect();
        let mut assembled = Assembled { columns, rows: 0 };
        assembled.append(first)?;
        Ok(assembled)
    }

    /// Appends a batch with the first batch's columns (names and types), on every core; the
    /// batch is freed here.
    pub fn append(&mut self, batch: DataFrame) -> PolarsResult<()> {
        use rayon::prelude::*;
        let same = batch.width() == self.columns.len()
            && batch.columns().iter().zip(&self.columns).all(|(c, part)| part.name() == c.name());
        if !same {
            polars_bail!(ComputeError: "a batch of rows does not have the columns of the first");
        }
        self.columns.par_iter_mut().zip(batch.columns().par_iter()).try_for_each(|(part, c)| part.extend(c))?;
        self.rows += batch.height();
        Ok(())
    }

    /// The frame: every column in one chunk.
    pub fn finish(self) -> PolarsResult<DataFrame> {
        self.finish_with(true)
    }

    /// The frame: every column in one chunk but text, whose batches stay its chunks (copying a
    /// text column's views into one chunk is one core's work).
    pub fn finish_text_by_batches(self) -> PolarsResult<DataFrame> {
        self.finish_with(false)
    }

    fn finish_with(self, one_text_chunk: bool) -> PolarsResult<DataFrame> {
        use rayon::prelude::*;
        let columns: Vec<Column> =
            self.columns.into_par_iter().map(|part| part.finish(one_text_chunk)).collect::<PolarsResult<_>>()?;
        DataFrame::new(self.rows, columns)
    }
}

/// Frames made one item at a time, assembled in their order into columns with room for
/// `capacity` rows: `make` makes the next item while the one before is made `ready` (a frame or
/// several) and appended, both on every core, and each frame is freed once appended (see
/// [`Assembled`]). `None` when there is no item.
pub fn assembled_as_made<I, T, E>(
    mut items: impl Iterator<Item = I> + Send,
    capacity: usize,
    make: impl Fn(I) -> Result<T, E> + Sync,
    ready: impl Fn(T) -> Result<Vec<DataFrame>, E> + Sync,
) -> Result<Option<Assembled>, E>
where
    I: Send,
    T: Send,
    E: From<PolarsError> + Send,
{
    let mut out: Option<Assembled> = None;
    let mut next = items.next().map(&make).transpose()?;
    while let Some(made) = next.take() {
        let (appended, following) = rayon::join(
            || -> Result<(), E> {
                for frame in ready(made)? {
                    match out.as_mut() {
                        None => out = Some(Assembled::new(frame, capacity)?),
                        Some(all) => all.append(frame)?,
                    }
                }
                Ok(())
            },
            || items.next().map(&make).transpose(),
        );
        appended?;
        next = following?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches assembled column by column equal the batches stacked, nulls, dictionaries and
    /// text included, each column in one chunk; a null first met in a later batch keeps the
    /// earlier rows valid.
    #[test]
    fn assembled_batches_equal_the_stacked_batches() {
        let dtype = crate::engine::dataset::schema::dictionary_dtype();
        let batch = |k: i32, rows: i32| -> DataFrame {
            let values: Vec<i32> = (0..rows).map(|i| k * 1000 + i).collect();
            let text: Vec<Option<String>> = values
                .iter()
                .map(|v| (v % 7 != 3).then(|| format!("a text value longer than twelve bytes {}", v % 13)))
                .collect();
            let codes = crate::engine::dataset::schema::dictionary_encode_as(
                &Column::new("d".into(), values.iter().map(|v| ["x", "y", "z"][*v as usize % 3]).collect::<Vec<_>>()),
                dtype.clone(),
            )
            .unwrap();
            DataFrame::new_infer_height(vec![
                // Nulls only from the second batch on.
                Column::new(
                    "f".into(),
                    values.iter().map(|v| (k == 0 || v % 5 != 0).then_some(*v as f64 / 8.0)).collect::<Vec<_>>(),
                ),
                Column::new("g".into(), values.iter().map(|v| *v as f32).collect::<Vec<_>>()),
                Column::new("i".into(), values.iter().map(|v| (v % 4 != 1).then_some(*v)).collect::<Vec<_>>()),
                Column::new("l".into(), values.iter().map(|v| *v as i64 * 3).collect::<Vec<_>>()),
                Column::new("b".into(), values.iter().map(|v| (v % 6 != 2).then_some(v % 2 == 0)).collect::<Vec<_>>()),
                Column::new("s".into(), text),
                codes,
                Column::new("u".into(), values.iter().map(|v| *v as u64).collect::<Vec<_>>()),
            ])
            .unwrap()
        };
        let batches = [batch(0, 37), batch(1, 100), batch(2, 0), batch(3, 61)];
        let mut stacked = batches[0].clone();
        for b in &batches[1..] {
            stacked.vstack_mut(b).unwrap();
        }
        let mut assembled = Assembled::new(batches[0].clone(), 10).unwrap();
        for b in &batches[1..] {
            assembled.append(b.clone()).unwrap();
        }
        let assembled = assembled.finish().unwrap();
        assert_eq!(assembled.height(), 198);
        assert_eq!(assembled.schema(), stacked.schema());
        for (a, s) in assembled.columns().iter().zip(stacked.columns()) {
            assert_eq!(a.n_chunks(), 1, "{}", a.name());
            assert!(a.as_materialized_series().equals_missing(s.as_materialized_series()), "{}", a.name());
            assert_eq!(a.null_count(), s.null_count(), "{}", a.name());
        }
        assert!(assembled.column("f").unwrap().null_count() > 0);
        // A batch under another dictionary is refused, as Polars refuses to stack it.
        let under = |values: &[&str], dtype: &DataType| {
            let c = Column::new("d".into(), values);
            let encoded = crate::engine::dataset::schema::dictionary_encode_as(&c, dtype.clone()).unwrap();
            DataFrame::new_infer_height(vec![encoded]).unwrap()
        };
        let first = under(&["x", "y"], &dtype);
        let other = under(&["y", "z", "x"], &crate::engine::dataset::schema::dictionary_dtype());
        assert!(first.clone().vstack_mut(&other).is_err());
        let mut mixed = Assembled::new(first, 5).unwrap();
        assert!(mixed.append(other).is_err());
        // A batch with other columns is refused.
        let mut other = Assembled::new(batches[0].clone(), 0).unwrap();
        assert!(other.append(batches[1].select(["f", "i"]).unwrap()).is_err());
    }
}
