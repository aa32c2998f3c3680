//! The rank of many strings in byte order, sorted eight bytes at a time.
//!
//! A comparison sort of a million strings that lie anywhere in memory waits on memory at almost
//! every comparison, and the strings of a large export (the versions of a 10M-row catalog: a
//! million distinct values sharing long prefixes, such as `LX 1.6 TURBO HÍBRIDO AT Série 114`)
//! outgrow the caches. Here the strings are sorted by their first eight bytes held in the sorted
//! integers themselves; only the strings that share those eight bytes are read again, for their
//! next eight, and sorted among themselves (a most-significant-digit radix sort with 64-bit
//! digits). Each round reads each string it still needs once, in a loop whose reads do not wait
//! on each other.

use rayon::prelude::*;

use super::bucket_sort::Slots;
use super::reorder::prefetch;

/// Segments of at least this many strings are sorted, and their parts refined, on every core.
const PAR_MIN: usize = 1 << 14;

/// Rounds of eight bytes before the strings still tied are compared whole (past their shared
/// prefix): bounds the recursion whatever the strings' length.
const MAX_ROUNDS: usize = 16;

/// What a key's low 32 bits hold: the string's index.
const INDEX_BITS: u32 = 32;

/// The dense rank of each string among the distinct strings, in byte order (the smallest 0).
/// At most `u32::MAX` strings.
pub fn dense_ranks(values: &[&str]) -> Vec<u32> {
    let n = values.len();
    assert!(n <= u32::MAX as usize, "too many strings to rank");
    let mut items: Vec<u128> = values.par_iter().enumerate().map(|(i, v)| key(v, 0, i as u32)).collect();
    let mut starts = vec![false; n];
    refine(values, &mut items, &mut starts, 0);
    let mut ranks = vec![0u32; n];
    let mut rank = 0u32;
    for (j, (&item, &start)) in items.iter().zip(&starts).enumerate() {
        rank += (start && j > 0) as u32;
        ranks[index(item)] = rank;
    }
    ranks
}

/// A string's sort key for round `round`: its bytes `8 * round ..` (eight of them, zero-padded,
/// most significant first), then how many of them it has (9: more than eight), then its index.
/// Within strings that share their first `8 * round` bytes, the keys order them as their bytes
/// do up to these eight, and equal keys up to the index are equal strings unless both go on.
fn key(value: &str, round: usize, index: u32) -> u128 {
    let rest = value.as_bytes().get(round * 8..).unwrap_or_default();
    let mut word = [0u8; 8];
    let taken = rest.len().min(8);
    word[..taken].copy_from_slice(&rest[..taken]);
    let length = if rest.len() > 8 { 9 } else { rest.len() as u128 };
    (u64::from_be_bytes(word) as u128) << 64 | length << INDEX_BITS | index as u128
}

fn index(item: u128) -> usize {
    item as u32 as usize
}

/// Whether a key says its string goes on past its eight bytes.
fn goes_on(item: u128) -> bool {
    (item >> INDEX_BITS) as u32 & 0xff == 9
}

/// Sorts `items` (keys of round `round` for strings sharing their first `8 * round` bytes) into
/// byte order, marking in `starts` the first item of each run of equal strings.
fn refine(values: &[&str], items: &mut [u128], starts: &mut [bool], round: usize) {
    if items.len() >= PAR_MIN {
        items.par_sort_unstable();
    } else {
        items.sort_unstable();
    }
    // Runs of equal keys (index aside): equal strings, or strings to read further.
    let mut tied: Vec<(usize, usize)> = Vec::new();
    let mut begin = 0;
    while begin < items.len() {
        let prefix = items[begin] >> INDEX_BITS;
        let end = begin + items[begin..].iter().take_while(|&&k| k >> INDEX_BITS == prefix).count();
        starts[begin] = true;
        if end - begin > 1 && goes_on(items[begin]) {
            tied.push((begin, end));
        }
        begin = end;
    }
    // The tied runs are disjoint: each is refined on its own, side by side when there are many.
    let mut runs: Vec<(&mut [u128], &mut [bool])> = Vec::with_capacity(tied.len());
    let (mut rest_items, mut rest_starts, mut at) = (items, starts, 0);
    for (begin, end) in tied {
        let (_, after) = std::mem::take(&mut rest_items).split_at_mut(begin - at);
        let (run, after) = after.split_at_mut(end - begin);
        rest_items = after;
        let (_, after) = std::mem::take(&mut rest_starts).split_at_mut(begin - at);
        let (run_starts, after) = after.split_at_mut(end - begin);
        rest_starts = after;
        at = end;
        runs.push((run, run_starts));
    }
    let next = |(run, run_starts): (&mut [u128], &mut [bool])| {
        if round + 1 >= MAX_ROUNDS {
            compare_whole(values, run, run_starts, (round + 1) * 8);
            return;
        }
        for item in run.iter_mut() {
            let i = index(*item);
            *item = key(values[i], round + 1, i as u32);
        }
        refine(values, run, run_starts, round + 1);
    };
    if runs.len() > 1 && runs.iter().map(|(run, _)| run.len()).sum::<usize>() >= PAR_MIN {
        runs.into_par_iter().for_each(next);
    } else {
        runs.into_iter().for_each(next);
    }
}

/// Sorts strings that share their first `shared` bytes by the rest, comparing them whole, and
/// marks the first of each run of equal ones.
fn compare_whole(values: &[&str], run: &mut [u128], starts: &mut [bool], shared: usize) {
    let rest = |item: &u128| &values[index(*item)].as_bytes()[shared..];
    run.sort_unstable_by(|a, b| rest(a).cmp(rest(b)));
    for j in 0..run.len() {
        starts[j] = j == 0 || rest(&run[j - 1]) != rest(&run[j]);
    }
}

/// The rank of each row of a text column among its distinct values in byte order (a null ranks
/// 0, as the smallest value does), found without a table of all the distinct values.
///
/// A table of a million distinct strings (the versions of a 10M-row catalog) is tens of megabytes:
/// each row's lookup, and the comparison with the string it finds, wait on memory, and coding a
/// 10M-row column that way took 22 times as long as a 1M-row one. Here each row's string is hashed
/// in row order (the strings of a Parquet row group lie together, so these reads stay in the
/// caches), the rows are sorted by their hash (see [`super::bucket_sort`]), which puts the rows of
/// one value side by side, and each run of equal hashes is split into its distinct values by
/// comparing each row with the values the run already holds (equal views need no read of the
/// text). Only the distinct values are then ranked (see [`dense_ranks`]).
pub fn row_ranks(text: &polars::prelude::StringChunked) -> Vec<u32> {
    use std::hash::BuildHasher;
    let hasher = polars::prelude::PlRandomState::default();
    // A seed of its own each time: a file cannot be made to crowd its values into one hash.
    row_ranks_by(text, |s: &str| (hasher.hash_one(s) >> 32) as u32)
}

/// [`row_ranks`] with the hash it sorts the rows by (any function of the text: equal hashes of
/// different values are told apart by their text).
fn row_ranks_by(text: &polars::prelude::StringChunked, hash: impl Fn(&str) -> u32 + Sync) -> Vec<u32> {
    use polars_arrow::array::{Array, Utf8ViewArray};
    let text = text.rechunk();
    let arr: &Utf8ViewArray = text.downcast_as_array();
    let n = arr.len();
    if n == 0 {
        return Vec::new();
    }
    assert!(n <= u32::MAX as usize, "too many rows to rank");
    let hashes: Vec<u32> = (0..n)
        .into_par_iter()
        .with_min_len(1 << 12)
        .map(|i| if arr.is_valid(i) { hash(arr.value(i)) } else { 0 })
        .collect();
    let keys: Vec<u64> = super::bucket_sort::sorted(n, |i| (hashes[i] as u64) << 32 | i as u64, |k| *k as u128);
    drop(hashes);
    let row = |k: u64| k as u32 as usize;
    // Runs of equal hashes never straddle two pieces: each piece is split on its own.
    let threads = rayon::current_num_threads().max(1);
    let step = n.div_ceil(threads * 4).max(1);
    let mut bounds = vec![0usize];
    while let Some(&last) = bounds.last() {
        if last >= n {
            break;
        }
        let mut end = (last + step).min(n);
        while end < n && keys[end] >> 32 == keys[end - 1] >> 32 {
            end += 1;
        }
        bounds.push(end);
    }
    let pieces: Vec<(Vec<u32>, Vec<&str>)> =
        bounds.par_windows(2).map(|w| split_runs(arr, &keys[w[0]..w[1]], &row)).collect();
    let all: Vec<&str> = pieces.iter().flat_map(|(_, distinct)| distinct.iter().copied()).collect();
    let ranks = dense_ranks(&all);
    // Each piece's first value among all of them.
    let firsts: Vec<usize> = pieces
        .iter()
        .scan(0, |at, (_, distinct)| {
            let first = *at;
            *at += distinct.len();
            Some(first)
        })
        .collect();
    let mut out: Vec<u32> = Vec::with_capacity(n);
    let slots = Slots(out.spare_capacity_mut()[..n].as_mut_ptr());
    bounds.par_windows(2).zip(pieces.par_iter()).zip(firsts.par_iter()).for_each(|((w, (codes, _)), &first)| {
        for (&k, &code) in keys[w[0]..w[1]].iter().zip(codes) {
            let rank = if code == NULL_CODE { 0 } else { ranks[first + code as usize] };
            // SAFETY: the keys name each row once (their low bits are the row, 0..n, one key a
            // row), so each of the `n` slots is written by one piece only.
            unsafe { slots.write(row(k), rank) };
        }
    });
    // SAFETY: the pieces cover all `n` keys, and the keys all `n` rows: every slot is written.
    unsafe { out.set_len(n) };
    out
}

/// A null row's code in [`split_runs`].
const NULL_CODE: u32 = u32::MAX;

/// Runs of equal hashes with more distinct values than this are coded by a map.
const RUN_HEADS_MAX: usize = 8;

/// The rows of `keys` (sorted by hash, then row) coded by their text: a code per key into the
/// distinct values found ([`NULL_CODE`] for a null). Within a run of equal hashes a row is
/// compared with the run's values so far (almost always one); a run of many values (hashes that
/// collide a lot) is coded by a map.
fn split_runs<'a>(
    arr: &'a polars_arrow::array::Utf8ViewArray,
    keys: &[u64],
    row: &impl Fn(u64) -> usize,
) -> (Vec<u32>, Vec<&'a str>) {
    use polars_arrow::array::Array;
    let (views, buffers) = (arr.views(), arr.data_buffers());
    let mut codes = Vec::with_capacity(keys.len());
    let mut distinct: Vec<&str> = Vec::new();
    // The current run's values: (view, code) of the first row that held each.
    let mut heads: Vec<(u128, u32)> = Vec::new();
    let mut map: Option<polars::prelude::PlHashMap<&str, u32>> = None;
    let mut hash = None;
    for (j, &k) in keys.iter().enumerate() {
        if let Some(&ahead) = keys.get(j + PREFETCH_AHEAD) {
            prefetch(views, row(ahead));
        }
        if let Some(&ahead) = keys.get(j + PREFETCH_AHEAD / 2) {
            prefetch_text(&views[row(ahead)], buffers);
        }
        let i = row(k);
        if hash != Some(k >> 32) {
            hash = Some(k >> 32);
            heads.clear();
            map = None;
        }
        if !arr.is_valid(i) {
            codes.push(NULL_CODE);
            continue;
        }
        let view = views[i].as_u128();
        let value = arr.value(i);
        let known = heads.iter().find(|(v, code)| *v == view || distinct[*code as usize] == value).map(|h| h.1);
        let code = match (known, map.as_mut()) {
            (Some(code), _) => code,
            (None, Some(map)) => *map.entry(value).or_insert_with(|| {
                distinct.push(value);
                distinct.len() as u32 - 1
            }),
            (None, None) => {
                distinct.push(value);
                let code = distinct.len() as u32 - 1;
                if heads.len() < RUN_HEADS_MAX {
                    heads.push((view, code));
                } else {
                    map = Some(heads.iter().map(|(_, c)| (distinct[*c as usize], *c)).chain([(value, code)]).collect());
                }
                code
            }
        };
        codes.push(code);
    }
    (codes, distinct)
}

/// How many keys ahead [`split_runs`] announces a row's view; its text is announced half as
/// far ahead (by then its view is in the caches).
const PREFETCH_AHEAD: usize = 16;

/// A hint that the text of `view` (when it lies out of line, in one of `buffers`) is read soon.
#[inline(always)]
fn prefetch_text(view: &polars_arrow::array::View, buffers: &[polars_buffer::Buffer<u8>]) {
    if view.length > polars_arrow::array::View::MAX_INLINE_SIZE {
        if let Some(bytes) = buffers.get(view.buffer_idx as usize).and_then(|b| b.get(view.offset as usize..)) {
            prefetch(bytes, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected(values: &[&str]) -> Vec<u32> {
        let mut distinct: Vec<&str> = values.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        values.iter().map(|v| distinct.binary_search(v).unwrap() as u32).collect()
    }

    #[test]
    fn ranks_are_the_byte_order_of_the_distinct_strings() {
        // Shared long prefixes, prefixes of each other, zero bytes, empty strings, accents,
        // and strings longer than the rounds that differ only past them.
        let long = "x".repeat(8 * MAX_ROUNDS + 5);
        let mut owned: Vec<String> = vec![
            String::new(),
            "\0".into(),
            "\0\0".into(),
            "a".into(),
            "a\0".into(),
            "ab".into(),
            "abcdefgh".into(),
            "abcdefgh\0".into(),
            "abcdefghi".into(),
            "Série".into(),
            "Serie".into(),
            format!("{long}a"),
            format!("{long}b"),
            format!("{long}"),
            format!("{long}a\0"),
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..60_000u64 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            owned.push(match i % 4 {
                0 => format!("LX 1.6 TURBO HÍBRIDO AT Série {}", seed % 5000),
                1 => format!("{}", seed % 300),
                2 => format!("{long}{}", seed % 70),
                _ => "Premium Tech".repeat((seed % 4) as usize),
            });
        }
        let values: Vec<&str> = owned.iter().map(String::as_str).collect();
        assert_eq!(dense_ranks(&values), expected(&values));
        // Small inputs take the one-core paths.
        assert_eq!(dense_ranks(&values[..40]), expected(&values[..40]));
        assert_eq!(dense_ranks(&[]), Vec::<u32>::new());
        assert_eq!(dense_ranks(&["b", "a", "b"]), vec![1, 0, 1]);
    }

    fn rows(values: &[Option<String>]) -> polars::prelude::StringChunked {
        use polars::prelude::*;
        let half = values.len() / 2;
        let mut text = StringChunked::new("v".into(), &values[..half]);
        text.append(&StringChunked::new("v".into(), &values[half..])).unwrap();
        text
    }

    fn expected_rows(values: &[Option<String>]) -> Vec<u32> {
        let mut distinct: Vec<&str> = values.iter().flatten().map(String::as_str).collect();
        distinct.sort_unstable();
        distinct.dedup();
        values.iter().map(|v| v.as_deref().map_or(0, |v| distinct.binary_search(&v).unwrap() as u32)).collect()
    }

    #[test]
    fn rows_rank_as_their_distinct_values_whatever_the_hash() {
        // More rows than the bucket sort's smallest input, nulls, short (inline) and long values,
        // each value on rows far apart.
        let values: Vec<Option<String>> = (0..70_000u64)
            .map(|i| match i % 5 {
                _ if i % 97 == 0 => None,
                0 => Some(format!("v{}", i % 50)),
                1 => Some(String::new()),
                _ => Some(format!("LX 1.6 TURBO HÍBRIDO AT Série {}", (i * 7919) % 12_345)),
            })
            .collect();
        let text = rows(&values);
        let expected = expected_rows(&values);
        assert_eq!(row_ranks(&text), expected);
        // Hashes that collide: every value in one run (coded by a map past a few values), by
        // length (a few values a run), and one hash for all but the nulls' rows.
        assert_eq!(row_ranks_by(&text, |_| 7), expected);
        assert_eq!(row_ranks_by(&text, |s| s.len() as u32), expected);
        assert_eq!(row_ranks_by(&text, |s| (s.len() % 3) as u32), expected);
        // Small inputs, all nulls, none.
        assert_eq!(row_ranks(&rows(&values[..40])), expected_rows(&values[..40]));
        let nulls = vec![None; 10];
        assert_eq!(row_ranks(&rows(&nulls)), vec![0; 10]);
        assert_eq!(row_ranks(&rows(&[])), Vec::<u32>::new());
    }
}
