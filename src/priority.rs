//! Who gets the CPU while a new export is prepared. The threads that serve requests register
//! here; while a reload builds a snapshot they run a few nice steps lower, so under saturation
//! (more requests than cores) the load still gets its share and a swap is not starved. Outside a
//! reload every thread has the same priority. Linux only; elsewhere these are no-ops.

use std::sync::Mutex;

/// Nice steps the serving threads yield while a reload runs.
pub const YIELD_STEPS: i32 = 10;

static SERVING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

#[cfg(target_os = "linux")]
fn tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

#[cfg(target_os = "linux")]
fn renice(tid: i32, steps: i32) {
    // SAFETY: plain system calls on one thread id of this process; a failure leaves it as is.
    unsafe {
        let id = tid as libc::id_t;
        let now = libc::getpriority(libc::PRIO_PROCESS, id);
        libc::setpriority(libc::PRIO_PROCESS, id, now + steps);
    }
}

/// Registers the calling thread as one that serves requests (tokio's `on_thread_start`).
pub fn register_serving_thread() {
    #[cfg(target_os = "linux")]
    SERVING.lock().unwrap_or_else(|e| e.into_inner()).push(tid());
}

/// Forgets the calling thread (tokio's `on_thread_stop`), so its id is never reniced once reused.
pub fn unregister_serving_thread() {
    #[cfg(target_os = "linux")]
    {
        let me = tid();
        SERVING.lock().unwrap_or_else(|e| e.into_inner()).retain(|t| *t != me);
    }
}

/// Lowers the serving threads until dropped.
pub struct ServingYields {
    threads: Vec<i32>,
}

/// Lowers the priority of the serving threads for the life of the returned guard.
pub fn serving_yields() -> ServingYields {
    let threads = SERVING.lock().unwrap_or_else(|e| e.into_inner()).clone();
    #[cfg(target_os = "linux")]
    for t in &threads {
        renice(*t, YIELD_STEPS);
    }
    ServingYields { threads }
}

impl Drop for ServingYields {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        {
            let alive = SERVING.lock().unwrap_or_else(|e| e.into_inner()).clone();
            for t in self.threads.iter().filter(|t| alive.contains(t)) {
                renice(*t, -YIELD_STEPS);
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn nice() -> i32 {
        // SAFETY: reads the calling thread's priority.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, tid() as libc::id_t) }
    }

    #[test]
    fn serving_threads_yield_during_a_reload_only() {
        let handle = std::thread::spawn(|| {
            register_serving_thread();
            let before = nice();
            let guard = serving_yields();
            let during = nice();
            drop(guard);
            let after = nice();
            unregister_serving_thread();
            let unregistered = serving_yields();
            let untouched = nice();
            drop(unregistered);
            (before, during, after, untouched)
        });
        let (before, during, after, untouched) = handle.join().unwrap();
        assert_eq!(during, (before + YIELD_STEPS).min(19));
        assert_eq!(after, before);
        assert_eq!(untouched, before);
    }
}
