//! Who gets the CPU while a new export is prepared. The threads that serve requests register
//! here; while a reload builds a snapshot they run a few nice steps lower, so under saturation
//! (more requests than cores) the load still gets its share and a swap is not starved. Outside a
//! reload every thread has the same priority.
//!
//! Raising a nice value is always allowed; lowering it back needs `CAP_SYS_NICE` or a
//! `RLIMIT_NICE` that reaches the original value (systemd: `LimitNICE=`). Before the serving
//! threads yield, the reload's own thread checks that it can come back (one step up and down);
//! where it cannot, the serving threads keep their priority, rather than stay lower for good
//! (only that reload's own thread keeps the one step).
//! Linux only; elsewhere these are no-ops.

use std::sync::Mutex;

/// Nice steps the serving threads yield while a reload runs.
pub const YIELD_STEPS: i32 = 10;

/// The serving threads, and the nice value they run at outside a reload (the value of the
/// first thread registered: the runtime starts them all alike).
struct Serving {
    threads: Vec<i32>,
    base: Option<i32>,
}

static SERVING: Mutex<Serving> = Mutex::new(Serving { threads: Vec::new(), base: None });

fn serving() -> std::sync::MutexGuard<'static, Serving> {
    SERVING.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(target_os = "linux")]
fn tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

#[cfg(target_os = "linux")]
fn nice_of(tid: i32) -> i32 {
    // SAFETY: reads one thread's priority.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) }
}

/// Sets one thread's nice value; false when refused.
#[cfg(target_os = "linux")]
fn set_nice(tid: i32, nice: i32) -> bool {
    // SAFETY: a plain system call on one thread id of this process; a failure leaves it as is.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) == 0 }
}

/// Whether this process may lower a nice value it raised: tried on the calling thread, one step
/// up and back.
#[cfg(target_os = "linux")]
fn can_restore() -> bool {
    let me = tid();
    let now = nice_of(me);
    if now >= 19 {
        return false;
    }
    set_nice(me, now + 1) && set_nice(me, now)
}

/// Registers the calling thread as one that serves requests (tokio's `on_thread_start`).
pub fn register_serving_thread() {
    #[cfg(target_os = "linux")]
    {
        let me = tid();
        let mut s = serving();
        s.base.get_or_insert_with(|| nice_of(me));
        s.threads.push(me);
    }
}

/// Forgets the calling thread (tokio's `on_thread_stop`), so its id is never reniced once reused.
pub fn unregister_serving_thread() {
    #[cfg(target_os = "linux")]
    {
        let me = tid();
        serving().threads.retain(|t| *t != me);
    }
}

/// Keeps the serving threads lower until dropped.
pub struct ServingYields {
    active: bool,
}

/// Lowers the priority of the serving threads for the life of the returned guard (call it on
/// the thread doing the reload). Threads that start meanwhile inherit the lower priority from
/// the thread that starts them; every thread registered when the guard drops is set back.
pub fn serving_yields() -> ServingYields {
    #[cfg(target_os = "linux")]
    {
        if !can_restore() {
            return ServingYields { active: false };
        }
        let s = serving();
        if let Some(base) = s.base {
            for t in &s.threads {
                set_nice(*t, (base + YIELD_STEPS).min(19));
            }
        }
        ServingYields { active: true }
    }
    #[cfg(not(target_os = "linux"))]
    ServingYields { active: false }
}

impl Drop for ServingYields {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if self.active {
            let s = serving();
            if let Some(base) = s.base {
                for t in &s.threads {
                    set_nice(*t, base);
                }
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn serving_threads_yield_during_a_reload_only() {
        let handle = std::thread::spawn(|| {
            register_serving_thread();
            let before = nice_of(tid());
            // The yield is decided and undone from another thread, as a reload does.
            let guard = std::thread::spawn(serving_yields).join().unwrap();
            let during = nice_of(tid());
            // A thread started meanwhile inherits the lower priority and is set back too.
            let (tx, rx) = std::sync::mpsc::channel();
            let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
            let child = std::thread::spawn(move || {
                register_serving_thread();
                tx.send(tid()).unwrap();
                stop_rx.recv().unwrap();
                unregister_serving_thread();
            });
            let child_tid = rx.recv().unwrap();
            let child_during = nice_of(child_tid);
            let restorable = guard.active;
            drop(guard);
            let after = nice_of(tid());
            let child_after = nice_of(child_tid);
            stop_tx.send(()).unwrap();
            child.join().unwrap();
            unregister_serving_thread();
            (before, during, after, child_during, child_after, restorable)
        });
        let (before, during, after, child_during, child_after, restorable) = handle.join().unwrap();
        if restorable {
            assert_eq!(during, (before + YIELD_STEPS).min(19));
            assert_eq!(child_during, during);
            assert_eq!(child_after, before);
        } else {
            // Without the right to come back, nobody yields.
            assert_eq!(during, before);
        }
        assert_eq!(after, before);
    }
}
