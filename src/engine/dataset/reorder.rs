//! Putting a frame's rows in another order (the catalog order of the served table): each column
//! gathered in one chunk, on every core.
//!
//! Reading a column's values in an order that jumps across it waits on memory for each value.
//! While a column fits in the processor's caches that costs little; past them (tens of megabytes:
//! a catalog of several million rows) every read is a trip to memory, and a 10M-row frame took
//! 20 times as long as a 1M-row one. Large frames are therefore put in order in two passes that
//! each read their input in memory order ([`Dealt`]): the values are dealt, in the order they are
//! stored, to the blocks of rows they go to (one sequential stream per block), then each block,
//! small enough for the caches, is written out in order. A column nothing else holds is written
//! back into its own memory ([`Order::reordered`]): a second copy of every column is fresh memory a
//! 10M-row load would fault in.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};

use polars::prelude::*;
use polars_arrow::array::{Array, PrimitiveArray, Utf8ViewArray};
use polars_arrow::bitmap::Bitmap;

use super::bucket_sort::slots_of_parts;

/// Frames from this many rows are put in order in two passes ([`Dealt`]); smaller ones in one
/// prefetched read per row, which is faster while a column fits in the caches (a 1M-row column
/// of numbers is 8 MB).
const DEALT_MIN_ROWS: usize = 1 << 22;

/// The frame's rows put in `order` (made for its height), each unordered source released as
/// soon as it is gathered: the peak is one frame plus a column per core. A large frame's columns
/// held by nothing else are put in order in their own memory (see [`gather`]).
pub fn reorder(mut frame: DataFrame, order: &Order) -> PolarsResult<DataFrame> {
    use rayon::prelude::*;
    let names: Vec<PlSmallStr> = frame.get_column_names_owned();
    let sources: Vec<Column> = names.iter().map(|n| frame.drop_in_place(n)).collect::<PolarsResult<_>>()?;
    drop(frame);
    // Column by column on every core, each source dropped once gathered (so about one column
    // per core is held twice at a time), no core waiting on another's column.
    let columns = sources.into_par_iter().map(|c| gather(c, order)).collect::<PolarsResult<Vec<Column>>>()?;
    DataFrame::new_infer_height(columns)
}

/// A permutation of a frame's rows and, when the frame is large, the plan of its two-pass gather
/// (with each row's position, which the plan is made from).
pub struct Order<'a> {
    rows: &'a [u32],
    position: Option<Vec<u32>>,
    dealt: Option<Dealt>,
}

impl<'a> Order<'a> {
    /// `rows` (the row at each position) as the order of a frame of `height` rows: refused when
    /// it names a row outside the frame or (with the plan, which needs a permutation) a row twice.
    /// Without the plan a row listed twice is found by [`Order::positions`].
    pub fn new(rows: &'a [u32], height: usize) -> PolarsResult<Order<'a>> {
        Order::with_plan(rows, height, rows.len() >= DEALT_MIN_ROWS)
    }

    /// [`Order::new`], with the two-pass plan or without it whatever the size.
    pub fn with_plan(rows: &'a [u32], height: usize, dealt: bool) -> PolarsResult<Order<'a>> {
        if rows.len() != height {
            polars_bail!(ComputeError: "the catalog order is not a permutation of the rows");
        }
        if !dealt {
            if rows.iter().any(|&i| i as usize >= height) {
                polars_bail!(ComputeError: "the catalog order names a row outside the frame");
            }
            return Ok(Order { rows, position: None, dealt: None });
        }
        let position = positions(rows, height)?;
        let dealt = Some(Dealt::new(&position));
        Ok(Order { rows, position: Some(position), dealt })
    }

    /// The position of each row in this order; an error when a row is listed twice.
    pub fn positions(&self) -> PolarsResult<std::borrow::Cow<'_, [u32]>> {
        match &self.position {
            Some(position) => Ok(position.into()),
            None => positions(self.rows, self.rows.len()).map(Into::into),
        }
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    /// `values` (one per row) in this order. With the two-pass plan they are put in order in
    /// their own memory (only the dealt copy is allocated, and freed once they are written back):
    /// a second copy of a 10M-row column is fresh memory to fault in. Without it (a frame small
    /// enough for the caches) they are read into a new vector, which is quicker than a copy back.
    pub fn reordered<V: Copy>(&self, mut values: Vec<V>) -> PolarsResult<Vec<V>> {
        match self.in_place(&mut values)? {
            true => Ok(values),
            false => self.values(&values),
        }
    }

    /// Puts `values` in this order where they are when the two-pass plan is made (`true`);
    /// without it leaves them as they are (`false`).
    fn in_place<V: Copy>(&self, values: &mut [V]) -> PolarsResult<bool> {
        if values.len() != self.len() {
            polars_bail!(ComputeError: "a column is not as long as the catalog order");
        }
        let Some(dealt) = &self.dealt else { return Ok(false) };
        let runs = dealt.deal(values);
        // SAFETY: `&mut [V]` slots are initialised, and `MaybeUninit<V>` has `V`'s layout.
        let slots = unsafe { &mut *(values as *mut [V] as *mut [MaybeUninit<V>]) };
        dealt.place(&runs, slots);
        Ok(true)
    }

    /// `values` (one per row) read in this order.
    pub fn values<V: Copy>(&self, values: &[V]) -> PolarsResult<Vec<V>> {
        if values.len() != self.len() {
            polars_bail!(ComputeError: "a column is not as long as the catalog order");
        }
        Ok(match &self.dealt {
            Some(dealt) => dealt.gather(values),
            None => gather_values(values, self.rows),
        })
    }
}

/// The position of each of `height` rows in `rows`: refused unless `rows` lists each once.
/// Written on every core, by parts of `rows`, in one pass that also marks each row in the part's
/// own bitmap (an eighth of a byte a row, which stays in the caches where the positions do not,
/// and is written with plain stores: an atomic one would wait for the positions' stores before
/// it). A row is listed twice when its bit is already set in its part's bitmap or set in two
/// parts' bitmaps. The slots are atomics written with plain stores: an atomic swap per row
/// would wait for each slot's cache line in turn, several times slower than one core.
pub fn positions(rows: &[u32], height: usize) -> PolarsResult<Vec<u32>> {
    use rayon::prelude::*;
    if rows.len() != height {
        polars_bail!(ComputeError: "the catalog order is not a permutation of the rows");
    }
    let position: Vec<AtomicU32> = (0..height).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    let words = height.div_ceil(64);
    let part = height.div_ceil(rayon::current_num_threads().max(1)).max(1);
    let marked: Vec<Option<Vec<u64>>> = rows
        .par_chunks(part)
        .enumerate()
        .map(|(k, part_rows)| {
            let mut seen = vec![0u64; words];
            for (i, &row) in part_rows.iter().enumerate() {
                let row = row as usize;
                if row >= height {
                    return None;
                }
                position[row].store((k * part + i) as u32, Ordering::Relaxed);
                let (word, bit) = (&mut seen[row / 64], 1u64 << (row % 64));
                if *word & bit != 0 {
                    return None;
                }
                *word |= bit;
            }
            Some(seen)
        })
        .collect();
    let Some(marked) = marked.into_iter().collect::<Option<Vec<_>>>() else {
        if rows.par_iter().any(|&row| row as usize >= height) {
            polars_bail!(ComputeError: "the catalog order is not a permutation of the rows");
        }
        polars_bail!(ComputeError: "the catalog order names a row twice");
    };
    let once = (0..words).into_par_iter().all(|w| {
        let mut all = 0u64;
        marked.iter().all(|seen| {
            let clash = all & seen[w] != 0;
            all |= seen[w];
            !clash
        })
    });
    if !once {
        polars_bail!(ComputeError: "the catalog order names a row twice");
    }
    Ok(position.into_iter().map(AtomicU32::into_inner).collect())
}

/// A column's rows in `order`, in one chunk. Numbers, dictionary codes and text views are
/// gathered here, values and validity apart: Polars gathers a numeric column with nulls one
/// `Option` at a time, which was the larger part of putting a 1M-row frame in catalog order.
/// Values that nothing else holds (the column was its only holder) are put in order in their
/// own memory where [`Order::reordered`] does; values shared with another column are read into
/// new memory and left as they were.
pub fn gather(column: Column, order: &Order) -> PolarsResult<Column> {
    if order.len() != column.len() {
        polars_bail!(ComputeError: "the catalog order is not a permutation of the rows");
    }
    if column.is_empty() {
        return Ok(column);
    }
    let dtype = column.dtype().clone();
    // One chunk (the column's own when it has one); the column itself is released here, so its
    // values' only holder is now `series` when nothing else held them.
    let series = column.take_materialized_series().rechunk();
    let out = match &dtype {
        DataType::Float64 => gather_numeric(owned::<Float64Type>(series)?, order)?.into_series(),
        DataType::Int32 => gather_numeric(owned::<Int32Type>(series)?, order)?.into_series(),
        DataType::UInt32 => gather_numeric(owned::<UInt32Type>(series)?, order)?.into_series(),
        // Dictionary-encoded text: its codes gathered like numbers, under the same dictionary.
        DataType::Categorical(cats, _) if cats.physical() == CategoricalPhysical::U32 => {
            let codes = series.cat32()?.physical().clone();
            drop(series);
            let codes = gather_numeric(codes, order)?;
            // SAFETY: the codes are the column's own, under its own dictionary.
            unsafe { CategoricalChunked::<Categorical32Type>::from_cats_and_dtype_unchecked(codes, dtype.clone()) }
                .into_series()
        }
        // Text: its views gathered, over the same buffers.
        DataType::String => {
            let ca = owned::<StringType>(series)?;
            let name = ca.name().clone();
            let arr = one_chunk(ca)?;
            let arrow_dtype = arr.dtype().clone();
            let (views, buffers, validity, total_bytes_len, total_buffer_len) = arr.into_inner();
            let validity = validity.map(|bits| gather_bits(&bits, order.rows));
            let views = reordered_buffer(views, order)?;
            // SAFETY: the array's own views, each still pointing into the same buffers (valid
            // UTF-8 there), in another order; lengths and buffers unchanged.
            let arr = unsafe {
                Utf8ViewArray::new_unchecked(arrow_dtype, views, buffers, validity, total_bytes_len, total_buffer_len)
            };
            StringChunked::with_chunk(name, arr).into_series()
        }
        _ => return series.take(&IdxCa::from_slice(PlSmallStr::EMPTY, order.rows)).map(Series::into_column),
    };
    Ok(out.into_column())
}

/// The typed column of `series`, `series` released (so the column holds its values alone when
/// `series` did).
fn owned<T: PolarsPhysicalType>(series: Series) -> PolarsResult<ChunkedArray<T>> {
    series.unpack::<T>().cloned()
}

/// The array of a column in one chunk.
fn one_chunk<T: PolarsDataType>(ca: ChunkedArray<T>) -> PolarsResult<T::Array> {
    match ca.downcast_into_iter().next() {
        Some(arr) => Ok(arr),
        None => polars_bail!(ComputeError: "a column has no chunk"),
    }
}

/// [`gather`] of a numeric column in one chunk.
fn gather_numeric<T: PolarsNumericType>(ca: ChunkedArray<T>, order: &Order) -> PolarsResult<ChunkedArray<T>> {
    let name = ca.name().clone();
    let (arrow_dtype, values, validity) = one_chunk(ca)?.into_inner();
    let validity = validity.map(|bits| gather_bits(&bits, order.rows));
    let values = reordered_buffer(values, order)?;
    Ok(ChunkedArray::with_chunk(name, PrimitiveArray::new(arrow_dtype, values, validity)))
}

/// A buffer's values in `order`: in its own memory when nothing else holds it and
/// [`Order::reordered`] would, otherwise read into a new buffer.
fn reordered_buffer<V: Copy>(
    mut values: polars_buffer::Buffer<V>,
    order: &Order,
) -> PolarsResult<polars_buffer::Buffer<V>> {
    let done = match values.get_mut_slice() {
        Some(own) => order.in_place(own)?,
        None => false,
    };
    match done {
        true => Ok(values),
        false => Ok(order.values(values.as_slice())?.into()),
    }
}

/// How many rows ahead [`gather_values`] asks for the value it will read.
const PREFETCH_AHEAD: usize = 32;

/// `values` read in `order`. The order jumps across the column, so each read is announced to the
/// processor a few dozen rows ahead: the reads wait on memory side by side rather than one after
/// the other.
fn gather_values<V: Copy>(values: &[V], order: &[u32]) -> Vec<V> {
    order
        .iter()
        .enumerate()
        .map(|(p, &row)| {
            if let Some(&ahead) = order.get(p + PREFETCH_AHEAD) {
                prefetch(values, ahead as usize);
            }
            values[row as usize]
        })
        .collect()
}

/// A hint that `values[i]` (when it exists) is read soon.
#[inline(always)]
pub(super) fn prefetch<V>(values: &[V], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(v) = values.get(i) {
        // SAFETY: a prefetch only hints at a load; the address is inside `values`.
        #[allow(unused_unsafe)]
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((v as *const V).cast::<i8>())
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (values, i);
}

/// The bits of `bits` read in `order`, packed eight at a time (not pushed one by one). A
/// column's validity is an eighth of a byte a row: it stays in the caches.
fn gather_bits(bits: &Bitmap, order: &[u32]) -> Bitmap {
    let bytes = order.chunks(8).map(|rows| packed_byte(rows, |&r| bits.get_bit(r as usize))).collect();
    Bitmap::from_u8_vec(bytes, order.len())
}

/// The byte of a bitmap holding `bit` of each of (up to) eight items, the first in its lowest bit.
pub fn packed_byte<T>(eight: &[T], bit: impl Fn(&T) -> bool) -> u8 {
    eight.iter().enumerate().fold(0u8, |byte, (j, item)| byte | (bit(item) as u8) << j)
}

/// Rows per block of the output in [`Dealt`]: 2 MiB of 8-byte values, about a core's own cache.
/// On a 2-core Xeon with 2 MiB of L2 a core, alternating 10M-row cold starts put the table in
/// order in 1.35 s with these blocks and 1.95 s with blocks of 2^16 rows (which `examples/reorder`
/// alone, on numbers only, prefers: the service's measure decided).
const BLOCK_BITS: u32 = 18;

/// The plan of a two-pass gather, shared by every column of a frame: the output block each row
/// goes to, and each block's offsets listed in the order their rows are stored.
struct Dealt {
    /// The block (of `1 << BLOCK_BITS` positions) each row goes to.
    block_of: Vec<u16>,
    /// Where each block's rows start among the dealt values (one more entry than blocks).
    starts: Vec<usize>,
    /// Each dealt value's offset in its block.
    offsets: Vec<u32>,
}

impl Dealt {
    /// The plan of an order given by each row's position in it (a permutation of its length),
    /// made on every core: the rows listed by block (see [`listed_by_key`]), each as its offset in
    /// its block.
    fn new(position: &[u32]) -> Dealt {
        use rayon::prelude::*;
        let blocks = position.len().div_ceil(1 << BLOCK_BITS);
        // Positions are below 2^32: blocks below 2^14.
        let block_of: Vec<u16> = position.par_iter().map(|&p| (p >> BLOCK_BITS) as u16).collect();
        let (offsets, starts) = listed_by_key(
            position,
            blocks,
            1 << 20,
            |_, p| Some((p >> BLOCK_BITS) as usize),
            |p| p & ((1 << BLOCK_BITS) - 1),
        );
        Dealt { block_of, starts, offsets }
    }

    /// `values` (one per row, as many as the plan's rows) in the plan's order.
    fn gather<V: Copy>(&self, values: &[V]) -> Vec<V> {
        let runs = self.deal(values);
        // SAFETY: `place` writes every one of the `n` slots.
        unsafe { filled(values.len(), |slots| self.place(&runs, slots)) }
    }

    /// First pass: each value, in storage order, appended to its block's run.
    fn deal<V: Copy>(&self, values: &[V]) -> Vec<V> {
        let n = self.block_of.len();
        assert_eq!(values.len(), n, "a column is not as long as the order");
        let mut next = self.starts.clone();
        // SAFETY: the plan comes from a permutation of `n` rows and there are `n` values: each
        // block's run is written exactly (the runs' lengths are the blocks' counts, which sum to
        // `n`).
        unsafe {
            filled(n, |slots| {
                for (&v, &block) in values.iter().zip(&self.block_of) {
                    let at = &mut next[block as usize];
                    slots[*at].write(v);
                    *at += 1;
                }
            })
        }
    }

    /// Second pass: each block's run (from [`Dealt::deal`]) written to its offsets, within the
    /// block. Every one of `slots` (one per row) is written once: a block's offsets are those of
    /// its positions, each listed once (the order is a permutation).
    fn place<V: Copy>(&self, runs: &[V], slots: &mut [MaybeUninit<V>]) {
        assert_eq!(runs.len(), slots.len(), "a column is not as long as the order");
        for (b, block) in slots.chunks_mut(1 << BLOCK_BITS).enumerate() {
            let run = self.starts[b]..self.starts[b + 1];
            for (&offset, &v) in self.offsets[run.clone()].iter().zip(&runs[run]) {
                block[offset as usize].write(v);
            }
        }
    }
}

/// A stable counting sort on every core: `value(item)` for each of `items` that has a key
/// (`key(i, item)` for the `i`-th item, below `keys`), listed by key, each key's items in their
/// order in `items`; with where each key's run starts (one more entry than keys). Parts of `part` items count their items per key
/// side by side, then each part writes its items from its own place in each key's run. The slots
/// are atomics written with plain stores, each exactly once.
pub fn listed_by_key(
    items: &[u32],
    keys: usize,
    part: usize,
    key: impl Fn(usize, u32) -> Option<usize> + Sync,
    value: impl Fn(u32) -> u32 + Sync,
) -> (Vec<u32>, Vec<usize>) {
    use rayon::prelude::*;
    let part = part.max(1);
    let counts: Vec<Vec<usize>> = items
        .par_chunks(part)
        .enumerate()
        .map(|(p, items)| {
            let mut count = vec![0usize; keys];
            items.iter().enumerate().filter_map(|(i, &item)| key(p * part + i, item)).for_each(|k| count[k] += 1);
            count
        })
        .collect();
    let (starts, firsts) = slots_of_parts(&counts, keys);
    let listed: Vec<AtomicU32> = (0..starts[keys]).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    items.par_chunks(part).enumerate().zip(firsts).for_each(|((p, items), mut next)| {
        for (i, &item) in items.iter().enumerate() {
            if let Some(k) = key(p * part + i, item) {
                listed[next[k]].store(value(item), Ordering::Relaxed);
                next[k] += 1;
            }
        }
    });
    (listed.into_iter().map(AtomicU32::into_inner).collect(), starts)
}

/// A vector of `n` values written by `write` into its uninitialised slots.
///
/// # Safety
/// `write` must write every one of the `n` slots it is given.
unsafe fn filled<V: Copy>(n: usize, write: impl FnOnce(&mut [MaybeUninit<V>])) -> Vec<V> {
    let mut vec = Vec::with_capacity(n);
    write(&mut vec.spare_capacity_mut()[..n]);
    // SAFETY: the caller's `write` initialised the first `n` slots.
    unsafe { vec.set_len(n) };
    vec
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::dataset::schema;

    fn gather_both(column: &Column, rows: &[u32]) -> PolarsResult<Column> {
        let one = gather(column.clone(), &Order::with_plan(rows, column.len(), false)?)?;
        let two = gather(column.clone(), &Order::with_plan(rows, column.len(), true)?)?;
        assert_eq!(format!("{one:?}"), format!("{two:?}"), "{}: one pass and two give the same", column.name());
        assert_eq!(one.null_count(), two.null_count());
        Ok(one)
    }

    #[test]
    fn positions_are_the_inverse_and_repeats_are_refused() {
        // Several words of the bitmap, rows in a scattered order.
        let n = 1000u32;
        let rows: Vec<u32> = (0..n).map(|p| (p * 389 + 17) % n).collect();
        let position = positions(&rows, n as usize).unwrap();
        for (p, &row) in rows.iter().enumerate() {
            assert_eq!(position[row as usize], p as u32);
        }
        // A row listed twice (another missing), wherever in the order; rows outside the frame.
        for (at, from) in [(1usize, 0usize), (999, 0), (64, 63), (500, 900)] {
            let mut twice = rows.clone();
            twice[at] = twice[from];
            let e = positions(&twice, n as usize).unwrap_err().to_string();
            assert!(e.contains("names a row twice"), "{e}");
        }
        let mut outside = rows.clone();
        outside[700] = n;
        let e = positions(&outside, n as usize).unwrap_err().to_string();
        assert!(e.contains("not a permutation"), "{e}");
        assert!(positions(&rows[1..], n as usize).is_err());
        assert!(positions(&[], 0).unwrap().is_empty());
    }

    #[test]
    fn numeric_columns_are_gathered_with_their_nulls_like_polars_take() {
        let order = [3u32, 0, 4, 1, 2];
        let idx = IdxCa::from_vec(PlSmallStr::EMPTY, order.to_vec());
        let columns = [
            Column::new("f".into(), [Some(1.5), None, Some(-0.0), Some(f64::NAN), None]),
            Column::new("i".into(), [None, Some(7i32), Some(-3), None, Some(0)]),
            Column::new("u".into(), [5u32, 4, 3, 2, 1]),
            Column::new("s".into(), [Some("a"), None, Some("c"), Some("d"), Some("e")]),
            // Dictionary-encoded text, as loaded: its codes gathered under the same dictionary.
            schema::dictionary_encode_as(
                &Column::new("d".into(), [Some("x"), Some("y"), None, Some("x"), Some("z")]),
                schema::dictionary_dtype(),
            )
            .unwrap(),
        ];
        for c in &columns {
            let ours = gather_both(c, &order).unwrap();
            let theirs = c.take(&idx).unwrap();
            assert_eq!(ours.dtype(), theirs.dtype());
            assert_eq!(ours.name(), c.name());
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{}", c.name());
            assert_eq!(ours.null_count(), theirs.null_count());
        }
        // Columns in several chunks (a file's row groups), long strings among them.
        let chunked = |a: Series, b: Series| {
            let mut s = a;
            s.append(&b).unwrap();
            assert_eq!(s.n_chunks(), 2);
            s.into_column()
        };
        let long = |i: usize| format!("a version name longer than twelve bytes #{i}");
        let columns = [
            chunked(Series::new("f".into(), [Some(1.5), None, Some(2.5)]), Series::new("f".into(), [Some(4.0), None])),
            chunked(Series::new("u".into(), [1u32, 2]), Series::new("u".into(), [3u32, 4, 5])),
            chunked(
                Series::new("s".into(), [Some(long(0)), None]),
                Series::new("s".into(), [Some("short".to_string()), Some(long(3)), Some(long(4))]),
            ),
            {
                let dtype = schema::dictionary_dtype();
                let part = |values: &[Option<&str>]| {
                    let c = Column::new("d".into(), values);
                    schema::dictionary_encode_as(&c, dtype.clone()).unwrap().take_materialized_series()
                };
                chunked(part(&[Some("b"), None]), part(&[Some("a"), Some("b"), Some("c")]))
            },
        ];
        for c in &columns {
            let ours = gather_both(c, &order).unwrap();
            let theirs = c.take(&idx).unwrap();
            assert_eq!(ours.n_chunks(), 1);
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{}", c.name());
            assert_eq!(ours.null_count(), theirs.null_count());
        }
        for dealt in [false, true] {
            assert!(Order::with_plan(&[0, 1], 5, dealt).is_err(), "an order that is not a permutation is refused");
            assert!(Order::with_plan(&[0, 1, 2, 3, 5], 5, dealt).is_err(), "a row outside the frame is refused");
            let twice = Order::with_plan(&[0, 1, 1, 3, 4], 5, dealt);
            assert!(twice.is_err() || twice.unwrap().positions().is_err(), "a row listed twice is refused");
            let order = Order::with_plan(&[1, 0], 2, dealt).unwrap();
            assert!(gather(columns[0].clone(), &order).is_err(), "a column longer than the order is refused");
        }
        // Longer than a validity byte and than the prefetch distance: nulls in every byte of the
        // packed validity, and reads announced ahead.
        let n = 1000u32;
        let order: Vec<u32> = (0..n).map(|p| (p * 389 + 17) % n).collect();
        let idx = IdxCa::from_vec(PlSmallStr::EMPTY, order.clone());
        let columns = [
            Column::new("f".into(), (0..n).map(|i| (i % 7 != 3).then_some(i as f64 / 4.0)).collect::<Vec<_>>()),
            Column::new("i".into(), (0..n).map(|i| (i % 5 != 0).then_some(i as i32 - 500)).collect::<Vec<_>>()),
        ];
        for c in &columns {
            let ours = gather_both(c, &order).unwrap();
            let theirs = c.take(&idx).unwrap();
            assert!(ours.as_materialized_series().equals_missing(theirs.as_materialized_series()), "{}", c.name());
            assert_eq!(ours.null_count(), theirs.null_count());
        }
    }

    #[test]
    fn large_frames_are_put_in_order_in_blocks_like_polars_take() {
        // Several blocks of the two-pass plan, the last one partial, and several parts of the
        // rows making the plan.
        let n = (1 << 21) + 4321;
        let order: Vec<u32> = (0..n as u64).map(|p| ((p * 1_000_003 + 77) % n as u64) as u32).collect();
        let idx = IdxCa::from_vec(PlSmallStr::EMPTY, order.clone());
        let columns = [
            Column::new("f".into(), (0..n).map(|i| (i % 7 != 3).then_some(i as f64 / 4.0)).collect::<Vec<_>>()),
            Column::new("u".into(), (0..n as u32).collect::<Vec<_>>()),
            Column::new(
                "s".into(),
                (0..n).map(|i| (i % 11 != 0).then(|| format!("version {i} of a long name"))).collect::<Vec<_>>(),
            ),
        ];
        for c in &columns {
            let ours = gather_both(c, &order).unwrap();
            let theirs = c.take(&idx).unwrap();
            assert!(ours.as_materialized_series().equals_missing(theirs.as_materialized_series()), "{}", c.name());
        }
        let frame = DataFrame::new_infer_height(columns.to_vec()).unwrap();
        let ordered = reorder(frame.clone(), &Order::with_plan(&order, n, true).unwrap()).unwrap();
        assert!(ordered.equals_missing(&frame.take(&idx).unwrap()));
    }

    #[test]
    fn owned_columns_are_put_in_order_in_their_own_memory() {
        let n = (1 << 19) + 321;
        let order: Vec<u32> = (0..n as u64).map(|p| ((p * 1_000_003 + 5) % n as u64) as u32).collect();
        let idx = IdxCa::from_vec(PlSmallStr::EMPTY, order.clone());
        let plan = Order::with_plan(&order, n, true).unwrap();
        // A copy of a column that nothing else holds (its values in new memory).
        let identity = IdxCa::from_vec(PlSmallStr::EMPTY, (0..n as u32).collect());
        let long = |i: usize| format!("a version name longer than twelve bytes #{i}");
        let columns = [
            Column::new("f".into(), (0..n).map(|i| (i % 7 != 3).then_some(i as f64 / 4.0)).collect::<Vec<_>>()),
            Column::new("i".into(), (0..n).map(|i| (i % 5 != 0).then_some(i as i32 - 500)).collect::<Vec<_>>()),
            Column::new("u".into(), (0..n as u32).collect::<Vec<_>>()),
            Column::new("s".into(), (0..n).map(|i| (i % 11 != 0).then(|| long(i))).collect::<Vec<_>>()),
            schema::dictionary_encode_as(
                &Column::new(
                    "d".into(),
                    (0..n).map(|i| (i % 13 != 0).then(|| format!("v{}", i % 50))).collect::<Vec<_>>(),
                ),
                schema::dictionary_dtype(),
            )
            .unwrap(),
        ];
        // The address of a column's values (views for text, codes for dictionaries).
        let address = |c: &Column| -> usize {
            let s = c.as_materialized_series().to_physical_repr().into_owned();
            match s.dtype() {
                DataType::String => s.str().unwrap().downcast_as_array().views().as_ptr() as usize,
                DataType::Float64 => s.f64().unwrap().downcast_as_array().values().as_ptr() as usize,
                DataType::Int32 => s.i32().unwrap().downcast_as_array().values().as_ptr() as usize,
                _ => s.u32().unwrap().downcast_as_array().values().as_ptr() as usize,
            }
        };
        for c in &columns {
            let want = c.take(&idx).unwrap();
            // Held elsewhere too: gathered anew, the original left as it was.
            let shared = gather(c.clone(), &plan).unwrap();
            assert_ne!(address(&shared), address(c), "{}: a shared column is not overwritten", c.name());
            assert!(shared.as_materialized_series().equals_missing(want.as_materialized_series()), "{}", c.name());
            // Held by nothing else: the same memory, in order.
            let own = c.take(&identity).unwrap();
            let before = address(&own);
            let ordered = gather(own, &plan).unwrap();
            assert_eq!(address(&ordered), before, "{}: an owned column is put in order in place", c.name());
            assert_eq!(ordered.dtype(), c.dtype());
            assert_eq!(ordered.name(), c.name());
            assert!(ordered.as_materialized_series().equals_missing(want.as_materialized_series()), "{}", c.name());
            assert_eq!(ordered.null_count(), want.null_count());
        }
        // Plain values: in their own memory with the plan, read into new memory without it.
        let values: Vec<u64> = (0..n as u64).map(|i| i * 3).collect();
        for dealt in [true, false] {
            let own = values.clone();
            let before = own.as_ptr();
            let order_of = Order::with_plan(&order, n, dealt).unwrap();
            let ordered = order_of.reordered(own).unwrap();
            assert_eq!(ordered.as_ptr() == before, dealt, "in place exactly with the plan");
            assert!(ordered.iter().zip(&order).all(|(&v, &row)| v == values[row as usize]));
            assert!(order_of.reordered(values[1..].to_vec()).is_err(), "a wrong length is refused");
        }
    }

    #[test]
    fn items_listed_by_key_keep_their_order_within_a_key() {
        let items: Vec<u32> = (0..1000).map(|i| (i * 7919) % 1000).collect();
        // Keys 0-4 by the item's last digit (5-9 have none), in parts of 64 items.
        let key = |item: u32| ((item % 10) < 5).then_some((item % 10) as usize);
        let (listed, starts) = listed_by_key(&items, 5, 64, |_, item| key(item), |item| item * 2);
        let mut want: Vec<u32> = Vec::new();
        let mut want_starts = vec![0];
        for k in 0..5 {
            want.extend(items.iter().filter(|&&i| key(i) == Some(k)).map(|i| i * 2));
            want_starts.push(want.len());
        }
        assert_eq!(listed, want);
        assert_eq!(starts, want_starts);
    }
}
