//! The PostgreSQL door's places: connections that have signed in are limited apart from those
//! that have not, so connections that never finish their start-up cannot keep a client out.
//!
//! - At most `max` signed-in connections (`--pg-max-connections`); a login past them is answered
//!   `53300` and closed.
//! - At most `max` connections still in their start-up. When one more arrives, the oldest of them
//!   is closed to make room: a real client, which signs in within milliseconds, is always among
//!   the newest, while a flood of connections that never sign in only pushes out its own. Each is
//!   also closed when its start-up deadline passes (`--header-timeout-ms`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The door's places (see the module).
pub struct Places {
    max: usize,
    signed_in: AtomicUsize,
    next: AtomicU64,
    /// Connections in their start-up, oldest first: their number and what closes them.
    starting: Mutex<VecDeque<(u64, Arc<Notify>)>>,
}

impl Places {
    pub fn new(max: usize) -> Arc<Places> {
        Arc::new(Places {
            max: max.max(1),
            signed_in: AtomicUsize::new(0),
            next: AtomicU64::new(0),
            starting: Mutex::new(VecDeque::new()),
        })
    }

    /// A new connection's place among those in their start-up (the oldest one closed when they
    /// are all taken), and what tells it to close.
    pub fn arrive(self: &Arc<Places>) -> (Arc<Admission>, Arc<Notify>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        {
            let mut starting = self.starting.lock().unwrap_or_else(|e| e.into_inner());
            while starting.len() >= self.max {
                if let Some((_, oldest)) = starting.pop_front() {
                    // Stored if the connection is not waiting yet: it closes when it does.
                    oldest.notify_one();
                }
            }
            starting.push_back((id, Arc::clone(&close)));
        }
        let admission = Admission { id, signed_in: AtomicBool::new(false), places: Arc::clone(self) };
        (Arc::new(admission), close)
    }

    fn leave_start_up(&self, id: u64) {
        let mut starting = self.starting.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = starting.iter().position(|(n, _)| *n == id) {
            starting.remove(i);
        }
    }

    /// Signed-in connections now.
    #[cfg(test)]
    fn signed_in(&self) -> usize {
        self.signed_in.load(Ordering::Relaxed)
    }

    /// Connections in their start-up now.
    #[cfg(test)]
    fn starting(&self) -> usize {
        self.starting.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// One connection's place: in its start-up until [`Admission::admit`], then signed in until it
/// is dropped (with the connection).
pub struct Admission {
    id: u64,
    signed_in: AtomicBool,
    places: Arc<Places>,
}

impl Admission {
    /// Takes a signed-in place for a connection whose login succeeded; false when they are all
    /// taken (the login is then refused with `53300`).
    pub fn admit(&self) -> bool {
        self.places.leave_start_up(self.id);
        if self.signed_in.load(Ordering::Relaxed) {
            return true;
        }
        if self.places.signed_in.fetch_add(1, Ordering::Relaxed) >= self.places.max {
            self.places.signed_in.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        self.signed_in.store(true, Ordering::Relaxed);
        true
    }

    /// Whether the connection has signed in (the start-up deadline and closing no longer apply).
    pub fn is_signed_in(&self) -> bool {
        self.signed_in.load(Ordering::Relaxed)
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if *self.signed_in.get_mut() {
            self.places.signed_in.fetch_sub(1, Ordering::Relaxed);
        } else {
            self.places.leave_start_up(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_start_up_makes_room_and_signed_in_places_are_apart() {
        let places = Places::new(2);
        let (a, close_a) = places.arrive();
        let (b, _) = places.arrive();
        let (c, _) = places.arrive(); // a is told to close
        assert_eq!(places.starting(), 2);
        let closed = close_a.notified();
        tokio::pin!(closed);
        assert!(futures::FutureExt::now_or_never(closed.as_mut()).is_some(), "the oldest is closed");
        drop(a);
        assert!(b.admit() && c.admit());
        assert_eq!((places.signed_in(), places.starting()), (2, 0));
        let (d, _) = places.arrive();
        assert!(!d.admit(), "past the signed-in places");
        assert!(!d.is_signed_in());
        drop(d);
        drop(b);
        assert_eq!(places.signed_in(), 1);
        let (e, _) = places.arrive();
        assert!(e.admit());
        assert_eq!((places.signed_in(), places.starting()), (2, 0));
    }
}
