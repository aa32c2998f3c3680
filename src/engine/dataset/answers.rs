//! Answers to filtered questions kept per table (so per dataset version), by the normalised
//! question, with a bounded number of entries: a question asked again (a dashboard's, a list's
//! next visit) is answered without walking the rows. The first request of a question computes it;
//! concurrent ones wait for that result instead of computing it too. Two bounds, a number of
//! answers and their approximate bytes: when either is passed, the least recently used quarter
//! is dropped.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use polars::prelude::*;

/// Most answers kept per table.
pub const CAPACITY: usize = 4096;
/// Most bytes of answers kept per table (as the answers' weights estimate them).
pub const BYTES: usize = 64 * 1024 * 1024;

type Cell = OnceLock<Result<Arc<dyn Any + Send + Sync>, String>>;

struct Entry {
    cell: Arc<Cell>,
    used: AtomicU64,
    /// The answer's approximate size, once computed.
    bytes: AtomicUsize,
}

/// The answers of one table.
#[derive(Default)]
pub struct Answers {
    entries: RwLock<HashMap<String, Entry>>,
    clock: AtomicU64,
    /// The sum of the entries' `bytes`.
    bytes: AtomicUsize,
}

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answers").field("entries", &self.len()).finish()
    }
}

impl Answers {
    /// How many answers are kept.
    pub fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The answer to `question` if it is computed and kept (marked as used), without waiting for
    /// one being computed: what a request can answer without leaving its async task.
    pub fn kept<T: Send + Sync + 'static>(&self, question: &str) -> Option<Arc<T>> {
        let tick = self.clock.fetch_add(1, Ordering::Relaxed);
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let entry = entries.get(question)?;
        let value = entry.cell.get()?.as_ref().ok()?;
        entry.used.store(tick, Ordering::Relaxed);
        Arc::clone(value).downcast::<T>().ok()
    }

    /// The answer to `question` (a normalised key, unique per operation and parameters),
    /// computed by `compute` the first time; `weigh` estimates its bytes. An error is not kept:
    /// the next request computes again.
    pub fn get_or_compute<T>(
        &self,
        question: &str,
        weigh: impl FnOnce(&T) -> usize,
        compute: impl FnOnce() -> PolarsResult<T>,
    ) -> PolarsResult<Arc<T>>
    where
        T: Send + Sync + 'static,
    {
        let tick = self.clock.fetch_add(1, Ordering::Relaxed);
        let found = {
            let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
            entries.get(question).map(|e| {
                e.used.store(tick, Ordering::Relaxed);
                Arc::clone(&e.cell)
            })
        };
        let cell = match found {
            Some(cell) => cell,
            None => {
                let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
                if !entries.contains_key(question)
                    && (entries.len() >= CAPACITY || self.bytes.load(Ordering::Relaxed) > BYTES)
                {
                    let freed = evict(&mut entries);
                    self.bytes.fetch_sub(freed.min(self.bytes.load(Ordering::Relaxed)), Ordering::Relaxed);
                }
                let entry = entries.entry(question.to_string()).or_insert_with(|| Entry {
                    cell: Arc::default(),
                    used: AtomicU64::new(tick),
                    bytes: AtomicUsize::new(0),
                });
                Arc::clone(&entry.cell)
            }
        };
        let mut weight = None;
        let value = cell.get_or_init(|| match compute() {
            Ok(v) => {
                weight = Some(weigh(&v) + question.len() + 64);
                Ok(Arc::new(v) as Arc<dyn Any + Send + Sync>)
            }
            Err(e) => Err(e.to_string()),
        });
        if let Some(w) = weight {
            let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
            if let Some(e) = entries.get(question) {
                if Arc::ptr_eq(&e.cell, &cell) {
                    e.bytes.store(w, Ordering::Relaxed);
                    self.bytes.fetch_add(w, Ordering::Relaxed);
                }
            }
        }
        match value {
            Ok(v) => Arc::clone(v)
                .downcast::<T>()
                .map_err(|_| polars_err!(ComputeError: "the answer kept for {question} has another type")),
            Err(e) => {
                let e = e.clone();
                let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
                if entries.get(question).is_some_and(|e| Arc::ptr_eq(&e.cell, &cell)) {
                    entries.remove(question);
                }
                drop(entries);
                polars_bail!(ComputeError: "{e}")
            }
        }
    }
}

/// Drops the least recently used quarter of `entries`; returns the bytes freed.
fn evict(entries: &mut HashMap<String, Entry>) -> usize {
    let mut freed = 0;
    let mut ticks: Vec<u64> = entries.values().map(|e| e.used.load(Ordering::Relaxed)).collect();
    let cut = ticks.len() / 4;
    if cut == 0 {
        freed = entries.values().map(|e| e.bytes.load(Ordering::Relaxed)).sum();
        entries.clear();
        return freed;
    }
    let (_, &mut threshold, _) = ticks.select_nth_unstable(cut);
    entries.retain(|_, e| {
        let keep = e.used.load(Ordering::Relaxed) > threshold;
        if !keep {
            freed += e.bytes.load(Ordering::Relaxed);
        }
        keep
    });
    freed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_computed_once_and_kept() {
        let answers = Answers::default();
        let mut calls = 0;
        let a = answers.get_or_compute(
            "q",
            |_| 8,
            || {
                calls += 1;
                Ok(41 + 1)
            },
        );
        assert_eq!(*a.unwrap(), 42);
        let b = answers.get_or_compute::<i32>("q", |_| 8, || panic!("computed twice"));
        assert_eq!(*b.unwrap(), 42);
        assert_eq!(calls, 1);
    }

    #[test]
    fn errors_are_not_kept() {
        let answers = Answers::default();
        let e = answers.get_or_compute::<i32>("q", |_| 8, || polars_bail!(ComputeError: "no"));
        assert!(e.unwrap_err().to_string().contains("no"));
        assert!(answers.is_empty());
        assert_eq!(*answers.get_or_compute("q", |_| 8, || Ok(7)).unwrap(), 7);
    }

    #[test]
    fn the_bound_drops_the_least_recently_used() {
        let answers = Answers::default();
        for i in 0..CAPACITY {
            answers.get_or_compute(&format!("q{i}"), |_| 8, || Ok(i)).unwrap();
        }
        // q0 is used again, so it is the most recent when the bound is reached.
        answers.get_or_compute::<usize>("q0", |_| 8, || panic!("q0 was dropped")).unwrap();
        answers.get_or_compute("new", |_| 8, || Ok(0usize)).unwrap();
        assert!(answers.len() <= CAPACITY);
        assert!(answers.len() >= CAPACITY * 3 / 4);
        answers.get_or_compute::<usize>("q0", |_| 8, || panic!("q0 was dropped")).unwrap();
        let mut recomputed = false;
        answers
            .get_or_compute(
                "q1",
                |_| 8,
                || {
                    recomputed = true;
                    Ok(1usize)
                },
            )
            .unwrap();
        assert!(recomputed, "the least recently used answer stays");
    }

    #[test]
    fn the_byte_bound_drops_answers_too() {
        let answers = Answers::default();
        for i in 0..64 {
            answers.get_or_compute(&format!("big{i}"), |_| BYTES / 16, || Ok(i)).unwrap();
        }
        assert!(answers.len() < 64, "{} answers of 1/16 of the bound each are kept", answers.len());
        assert!(answers.bytes.load(Ordering::Relaxed) <= BYTES + BYTES / 16 + 4096);
    }
}
