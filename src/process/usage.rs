//! What the process has used so far: CPU time and minor page faults, read at the steps of a
//! load to tell how many cores each kept busy and how much fresh memory it touched.

/// The process's CPU time and minor page faults at one moment, or between two.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// CPU time of all threads (ms).
    pub cpu_ms: u64,
    /// Minor page faults: pages touched for the first time, or again after being returned.
    pub faults: u64,
}

impl Usage {
    /// The process's usage so far.
    pub fn now() -> Usage {
        Usage { cpu_ms: cpu_ms(), faults: minor_faults() }
    }

    /// What the process used since `self`; `self` becomes now.
    pub fn lap(&mut self) -> Usage {
        let now = Usage::now();
        let used =
            Usage { cpu_ms: now.cpu_ms.saturating_sub(self.cpu_ms), faults: now.faults.saturating_sub(self.faults) };
        *self = now;
        used
    }
}

/// The CPU time the process has used so far, all threads (ms); 0 where it cannot be read.
fn cpu_ms() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec the pointer owns.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) } != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1000 + t.tv_nsec as u64 / 1_000_000
}

/// The minor page faults of the process so far; 0 where they cannot be read.
pub fn minor_faults() -> u64 {
    // SAFETY: getrusage writes one rusage the pointer owns; all-zero is a valid rusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0;
    }
    usage.ru_minflt.max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_fresh_memory_counts_its_faults_and_its_cpu() {
        let mut usage = Usage::now();
        // 64 MiB written page by page: at least one fault per 4 KiB page (or per huge page).
        let mut memory = vec![0u8; 64 << 20];
        for page in memory.chunks_mut(4096) {
            page[0] = 1;
        }
        let busy = std::time::Instant::now();
        let mut x = 0u64;
        while busy.elapsed().as_millis() < 30 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(std::hint::black_box(1));
        }
        let used = usage.lap();
        assert!(memory.iter().step_by(4096).all(|&b| b == 1) && x != 1);
        assert!(used.faults >= 32, "{used:?}");
        assert!(used.cpu_ms >= 10, "{used:?}");
        let again = usage.lap();
        assert!(again.faults < used.faults, "a lap counts from the last one: {again:?}");
    }
}
