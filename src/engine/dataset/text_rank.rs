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
}
