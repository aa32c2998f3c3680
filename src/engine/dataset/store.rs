//! The current snapshot, swapped atomically: readers take an `Arc` and keep it for the whole
//! request, so a swap never changes the data under a request that already started.

use std::sync::Arc;

use arc_swap::ArcSwapOption;

use super::snapshot::Snapshot;

#[derive(Default)]
pub struct Store {
    current: ArcSwapOption<Snapshot>,
}

impl Store {
    pub fn new(snapshot: Option<Snapshot>) -> Store {
        Store { current: ArcSwapOption::from(snapshot.map(Arc::new)) }
    }

    /// The snapshot serving now, if any.
    pub fn current(&self) -> Option<Arc<Snapshot>> {
        self.current.load_full()
    }

    /// Replaces the serving snapshot and returns the previous one; requests in flight finish on
    /// the one they hold.
    pub fn replace(&self, snapshot: Snapshot) -> Option<Arc<Snapshot>> {
        self.current.swap(Some(Arc::new(snapshot)))
    }
}
