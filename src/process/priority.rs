//! Who gets the CPU while a new export is prepared. The threads that serve requests register
//! here; while a reload builds a snapshot they run a few nice steps lower and, on a machine with
//! two CPUs or more, keep off one of the process's CPUs, so under saturation (more requests than
//! cores) the load still gets its share and a swap is not starved: its serial steps run on a CPU
//! no request preempts, its parallel ones share the others. Outside a reload every thread has the
//! same priority and CPUs.
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

/// Lowers the calling thread to the lowest scheduling priority (what it starts inherits it), so
/// its work waits for every other thread's. Elsewhere than on Linux the thread keeps its priority.
pub fn lowest() {
    // SAFETY: PRIO_PROCESS with 0 sets the calling thread's own nice value; raising it is always
    // allowed.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
}

/// The CPUs the calling thread may run on (the process's set unless something narrowed it).
#[cfg(target_os = "linux")]
fn affinity_of_caller() -> Option<libc::cpu_set_t> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call fills it for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0).then_some(set)
    }
}

/// Sets one thread's CPUs; a failure leaves it as is.
#[cfg(target_os = "linux")]
fn set_affinity(tid: i32, set: &libc::cpu_set_t) {
    // SAFETY: a plain system call on one thread id of this process.
    unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set) };
}

/// `set` without its last CPU, when it has two or more: the CPUs the serving threads keep while
/// a reload runs, so the reload has one CPU nobody serving competes for.
#[cfg(target_os = "linux")]
fn without_last(set: &libc::cpu_set_t) -> Option<libc::cpu_set_t> {
    // SAFETY: every index is inside the set's size.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|c| unsafe { libc::CPU_ISSET(*c, set) }).collect();
    if cpus.len() < 2 {
        return None;
    }
    let mut narrowed = *set;
    // SAFETY: the index is inside the set's size.
    unsafe { libc::CPU_CLR(*cpus.last()?, &mut narrowed) };
    Some(narrowed)
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
    #[cfg(target_os = "linux")]
    cpus: Option<libc::cpu_set_t>,
}

/// Lowers the priority of the serving threads and keeps them off one CPU for the life of the
/// returned guard (call it on the thread doing the reload, whose CPUs are the process's). Threads
/// that start meanwhile inherit both from the thread that starts them; every thread registered
/// when the guard drops is set back. CPUs can always be given back, so they are narrowed even
/// where the priority cannot be restored (and so is not lowered).
pub fn serving_yields() -> ServingYields {
    #[cfg(target_os = "linux")]
    {
        let cpus = affinity_of_caller();
        let narrowed = cpus.as_ref().and_then(without_last);
        let active = can_restore();
        let s = serving();
        for t in &s.threads {
            if let Some(base) = s.base.filter(|_| active) {
                set_nice(*t, (base + YIELD_STEPS).min(19));
            }
            if let Some(n) = &narrowed {
                set_affinity(*t, n);
            }
        }
        ServingYields { active, cpus: narrowed.and(cpus) }
    }
    #[cfg(not(target_os = "linux"))]
    ServingYields { active: false }
}

impl Drop for ServingYields {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        {
            let s = serving();
            for t in &s.threads {
                if let Some(base) = s.base.filter(|_| self.active) {
                    set_nice(*t, base);
                }
                if let Some(cpus) = &self.cpus {
                    set_affinity(*t, cpus);
                }
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn count(set: &libc::cpu_set_t) -> usize {
        // SAFETY: reads a set the kernel filled.
        unsafe { libc::CPU_COUNT(set) as usize }
    }

    #[test]
    fn serving_threads_yield_during_a_reload_only() {
        let handle = std::thread::spawn(|| {
            register_serving_thread();
            let before = nice_of(tid());
            let cpus_before = affinity_of_caller().map(|s| count(&s));
            // The yield is decided and undone from another thread, as a reload does.
            let guard = std::thread::spawn(serving_yields).join().unwrap();
            let during = nice_of(tid());
            let cpus_during = affinity_of_caller().map(|s| count(&s));
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
            let cpus_after = affinity_of_caller().map(|s| count(&s));
            let child_after = nice_of(child_tid);
            stop_tx.send(()).unwrap();
            child.join().unwrap();
            unregister_serving_thread();
            assert_eq!(cpus_after, cpus_before, "the CPUs are given back");
            match cpus_before {
                Some(n) if n >= 2 => assert_eq!(cpus_during, Some(n - 1), "one CPU is left to the reload"),
                _ => assert_eq!(cpus_during, cpus_before, "a single CPU is never taken away"),
            }
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
