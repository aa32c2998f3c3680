//! Sorting millions of fixed-size keys on every core: dealt to buckets by their leading bits,
//! then each bucket sorted on its own.
//!
//! A comparison sort of 10M keys passes over all of them about 23 times (log2 of the rows), and
//! past a few million keys each pass is a trip through memory rather than the caches: the ids'
//! order of a 10M-row export took 20 times as long as a 1M-row one's. Here the keys are counted
//! and dealt to a few thousand buckets by the bits that follow the bits they all share (one
//! sequential read and one write per key), and each bucket, a couple of thousand keys that fit
//! in a core's cache, is sorted alone: the passes through memory no longer grow with the rows.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// Fewer keys than this are sorted in one parallel comparison sort (they fit in the caches).
const MIN_KEYS: usize = 1 << 16;

/// The keys a bucket holds on average (when they spread evenly): a few tens of kilobytes.
const BUCKET_KEYS: usize = 1 << 11;

/// At most `1 << MAX_BUCKET_BITS` buckets: each part of the keys writes to every bucket at once,
/// and more streams than the processor keeps open would turn each write into a miss.
const MAX_BUCKET_BITS: u32 = 12;

/// The keys `item(0..n)` in ascending order. `lead` maps a key to an integer that never
/// decreases as keys increase (`a < b` implies `lead(a) <= lead(b)`): its bits, from the first one
/// in which the keys differ, pick each key's bucket. `item` is called three times per index and
/// must give the same key each time.
pub fn sorted<T, I, L>(n: usize, item: I, lead: L) -> Vec<T>
where
    T: Copy + Ord + Send + Sync,
    I: Fn(usize) -> T + Sync,
    L: Fn(&T) -> u128 + Sync,
{
    if n < MIN_KEYS {
        let mut keys: Vec<T> = (0..n).into_par_iter().map(&item).collect();
        keys.par_sort_unstable();
        return keys;
    }
    let (low, high) = (0..n)
        .into_par_iter()
        .map(|i| lead(&item(i)))
        .fold(|| (u128::MAX, 0), |(lo, hi), l| (lo.min(l), hi.max(l)))
        .reduce(|| (u128::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
    let bits = (n / BUCKET_KEYS).max(2).ilog2().min(MAX_BUCKET_BITS);
    // The bits below the ones every key shares, the leading `bits` of them.
    let spread = 128 - (high - low).leading_zeros();
    let shift = spread.saturating_sub(bits);
    let buckets = ((high - low) >> shift) as usize + 1;
    let bucket = |key: &T| ((lead(key) - low) >> shift) as usize;

    let threads = rayon::current_num_threads().max(1);
    let step = n.div_ceil(threads * 4);
    let parts: Vec<(usize, usize)> = (0..n).step_by(step).map(|s| (s, (s + step).min(n))).collect();
    let counts: Vec<Vec<usize>> = parts
        .par_iter()
        .map(|&(start, end)| {
            let mut count = vec![0usize; buckets];
            (start..end).for_each(|i| count[bucket(&item(i))] += 1);
            count
        })
        .collect();
    let (starts, firsts) = slots_of_parts(&counts, buckets);
    assert_eq!(starts[buckets], n, "the keys counted are the keys");

    let mut keys: Vec<T> = Vec::with_capacity(n);
    let slots = Slots(keys.spare_capacity_mut()[..n].as_mut_ptr());
    parts.par_iter().zip(firsts).zip(&counts).for_each(|((&(start, end), mut next), count)| {
        let limits: Vec<usize> = next.iter().zip(count).map(|(f, c)| f + c).collect();
        for i in start..end {
            let key = item(i);
            let b = bucket(&key);
            // A key that counted elsewhere would overwrite another part's slot: refused.
            assert!(next[b] < limits[b], "a key changed between its count and its dealing");
            // SAFETY: `next[b]` lies in this part's own range of bucket `b` (checked above), and
            // the ranges of all parts and buckets are disjoint and inside the `n` slots.
            unsafe { slots.write(next[b], key) };
            next[b] += 1;
        }
    });
    // SAFETY: every part wrote exactly its `end - start` keys, each to a distinct slot of its own
    // ranges (bounded by `limits`), whose lengths sum to that count: all `n` slots are written.
    unsafe { keys.set_len(n) };

    let mut rest: &mut [T] = &mut keys;
    let mut runs: Vec<&mut [T]> = Vec::with_capacity(buckets);
    for size in starts.windows(2).map(|w| w[1] - w[0]) {
        let (run, after) = rest.split_at_mut(size);
        runs.push(run);
        rest = after;
    }
    // Keys that crowd into one bucket (not spread evenly) are sorted on every core.
    let large = n / (threads * 2);
    runs.into_par_iter().for_each(|run| match run.len() > large {
        true => run.par_sort_unstable(),
        false => run.sort_unstable(),
    });
    keys
}

/// Where the items of a counting sort go, from each part's count of its items per key (`keys`
/// of them): where each key's run starts (one more entry than keys, the last the total), and each
/// part's first slot in each key's run (after the earlier parts' items of that key).
pub fn slots_of_parts(counts: &[Vec<usize>], keys: usize) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut starts = vec![0usize; keys + 1];
    for k in 0..keys {
        starts[k + 1] = starts[k] + counts.iter().map(|count| count[k]).sum::<usize>();
    }
    let mut next = starts[..keys].to_vec();
    let firsts = counts
        .iter()
        .map(|count| {
            let first = next.clone();
            next.iter_mut().zip(count).for_each(|(at, c)| *at += c);
            first
        })
        .collect();
    (starts, firsts)
}

/// Uninitialised slots (of [`sorted`], or of a permutation's values) written by parts on several
/// threads, each slot by one part.
pub(super) struct Slots<T>(pub(super) *mut MaybeUninit<T>);

// SAFETY: the parts write disjoint slots (see the writers), and `T` is `Send`.
unsafe impl<T: Send> Send for Slots<T> {}
unsafe impl<T: Send> Sync for Slots<T> {}

impl<T> Slots<T> {
    /// # Safety
    /// `at` is inside the slots and written by no other thread.
    pub(super) unsafe fn write(&self, at: usize, value: T) {
        // SAFETY: the caller's guarantee.
        unsafe { (*self.0.add(at)).write(value) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: Copy + Ord + Send + Sync + std::fmt::Debug>(keys: &[T], lead: impl Fn(&T) -> u128 + Sync) {
        let mut expected = keys.to_vec();
        expected.sort();
        assert_eq!(sorted(keys.len(), |i| keys[i], lead), expected);
    }

    /// A deterministic stream of pseudo-random 64-bit numbers (splitmix64).
    fn numbers(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            })
            .collect()
    }

    #[test]
    fn spread_keys_come_out_in_order() {
        let n = 300_000;
        let keys: Vec<u128> =
            numbers(1, n).iter().zip(numbers(2, n)).map(|(&a, b)| ((a as u128) << 64) | b as u128).collect();
        check(&keys, |k| *k);
    }

    #[test]
    fn keys_sharing_their_leading_bits_and_repeated_keys() {
        // UUID v7-like: a shared time prefix, then a narrow spread; each key three times.
        let base = 0x0190_0000_0000_7000_8000_0000_0000_0000u128;
        let keys: Vec<u128> = numbers(3, 100_000).iter().flat_map(|&x| [base + (x % 5_000) as u128; 3]).collect();
        check(&keys, |k| *k);
        // All keys equal: one bucket.
        check(&vec![7u128; 80_000], |k| *k);
    }

    #[test]
    fn crowded_buckets_and_composite_keys() {
        // Most keys in one bucket (the lead is only the first word), the rest spread: the ties
        // are sorted by the following words.
        let keys: Vec<[u32; 5]> = numbers(4, 200_000)
            .iter()
            .enumerate()
            .map(|(row, &x)| {
                let first = if x % 10 < 9 { 42 } else { (x >> 32) as u32 };
                [first, (x >> 8) as u32 % 3, x as u32, 0, row as u32]
            })
            .collect();
        check(&keys, |k| k[0] as u128);
    }

    #[test]
    fn small_and_empty_inputs() {
        check::<u128>(&[], |k| *k);
        check(&[3u128, 1, 2], |k| *k);
    }
}
