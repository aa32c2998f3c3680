//! How the SQL worker processes run beside the service: their memory limit and CPU priority
//! (set between fork and exec, or by the worker itself once readied), how they are stopped, and
//! the pipe their answers come through.

use std::process::Command;

/// Starts `command`'s process at the lowest priority and in the idle scheduling class, within
/// `data_limit` bytes of heap when given: it runs on the CPU time the operations leave (under
/// full load a query may reach its deadline; the operations keep their throughput).
/// With `idle` false, only the memory limit: the process lowers itself (see [`lower_priority`]).
pub(super) fn at_idle_priority(command: &mut Command, data_limit: Option<u64>, idle: bool) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(move || {
                if let Some(bytes) = data_limit {
                    let limit = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
                    libc::setrlimit(libc::RLIMIT_DATA, &limit);
                }
                if idle {
                    to_idle_priority(0);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(unix))]
    let _ = (command, data_limit, idle);
}

/// Puts the thread `tid` (0: the calling one) at the lowest priority, in the idle scheduling
/// class where there is one.
#[cfg(unix)]
fn to_idle_priority(tid: libc::pid_t) {
    // SAFETY: plain system calls on a thread of this process.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
        #[cfg(target_os = "linux")]
        {
            let param = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param);
        }
    }
}

/// Lowers every thread of this process to the idle priority (threads started later inherit it
/// from the thread starting them): a worker readied early, once its session is made.
pub(super) fn lower_priority() {
    #[cfg(target_os = "linux")]
    for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        if let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<libc::pid_t>().ok()) {
            to_idle_priority(tid);
        }
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    to_idle_priority(0);
}

/// Stops the process `pid` (a child of this one).
pub(super) fn stop_process(pid: u32) {
    #[cfg(unix)]
    // SAFETY: a plain signal to a child process this process started.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
}

/// Gives the worker's answer pipe a 1 MiB buffer (Linux; 64 KiB by default), so a large answer
/// crosses in fewer wake-ups of the two processes. Best effort: the default stays on failure.
pub(super) fn widen_pipe(pipe: &std::process::ChildStdout) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on a descriptor this process owns, with an integer argument.
        unsafe {
            libc::fcntl(pipe.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pipe;
}
