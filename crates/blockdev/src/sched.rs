//! Real-time scheduling for the threads that answer I/Os at the model's
//! time (the FUSE ring queues' threads and the timer thread).
//!
//! Under a client that keeps both CPUs busy (pgbench with four clients),
//! an ordinary (CFS) thread whose answer falls due waits for the CPU: the
//! answers were 23-37 µs late on average (p99 300-450 µs), nearly all of
//! it while the thread waited for its wake-up (`fuse_entries` in status).
//! SCHED_FIFO threads run as soon as their timer fires: 2-4 µs late on
//! average, and a captured trace's replay came within 4 % of the daemon's
//! own latencies (docs/ATTACH_PERF.md, ninth round). The default priority,
//! 10, is low among real-time threads (the kernel's interrupt threads run
//! at 50) and above every ordinary one.

/// Makes the calling thread SCHED_FIFO at `priority` (1-99); children it
/// forks start as ordinary threads (SCHED_RESET_ON_FORK).
pub fn make_realtime(priority: i32) -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    let r = unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Makes the calling thread SCHED_FIFO at `priority` if given, and says
/// at which priority it now runs (None: ordinary, including when refused,
/// which is logged as `who` staying an ordinary thread).
pub fn make_realtime_or_log(priority: Option<i32>, who: &str) -> Option<i32> {
    let p = priority?;
    match make_realtime(p) {
        Ok(()) => Some(p),
        Err(e) => {
            tracing::warn!("{who} stays an ordinary thread: {e}");
            None
        }
    }
}

/// While it lives, the calling thread, SCHED_FIFO at `priority` if given,
/// runs as an ordinary thread; it is put back at its priority on drop.
///
/// For the spin before a deadline: a FIFO thread's `sched_yield` gives
/// the CPU to no ordinary thread, so on two CPUs a FIFO ring thread's spin
/// held the CPU the loop device's worker needed to send the next
/// requests, and the daemon saw them one or two at a time: 26 K IOPS of
/// 4 KiB random writes at 16 jobs x QD 16 against 94 K with the spin
/// ordinary (docs/ATTACH_PERF.md, tenth round). Ordinary, the spin's
/// yield lets any other runnable thread go first, and returns at once
/// when there is none; the wait before the spin still sleeps as FIFO, so
/// the wake-up preempts.
pub struct Ordinary {
    priority: Option<i32>,
}

impl Ordinary {
    pub fn new(priority: Option<i32>) -> Ordinary {
        if priority.is_some() {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: pid 0 is the calling thread; `param` is valid.
            unsafe {
                libc::sched_setscheduler(0, libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK, &param)
            };
        }
        Ordinary { priority }
    }
}

impl Drop for Ordinary {
    fn drop(&mut self) {
        if let Some(p) = self.priority {
            let _ = make_realtime(p);
        }
    }
}

/// Whether threads of this process may be made SCHED_FIFO at `priority`:
/// tried on a scratch thread, so the caller's own policy is untouched.
pub fn check(priority: i32) -> Result<(), String> {
    std::thread::spawn(move || make_realtime(priority))
        .join()
        .map_err(|_| "the scheduling check panicked".to_string())?
        .map_err(|e| format!("SCHED_FIFO {priority} refused: {e}"))
}

/// Parses `--rt-priority`: a priority 1-99, or off.
pub fn parse_priority(s: &str) -> Result<Option<i32>, String> {
    if s == "off" {
        return Ok(None);
    }
    match s.parse::<i32>() {
        Ok(p) if (1..=99).contains(&p) => Ok(Some(p)),
        _ => Err(format!(
            "--rt-priority: '{s}' (expected a priority 1-99 or off)"
        )),
    }
}

/// This thread's scheduling policy and priority.
pub fn current() -> (i32, i32) {
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    // SAFETY: pid 0 is the calling thread; `param` is writable.
    unsafe { libc::sched_getparam(0, &mut param) };
    (policy, param.sched_priority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_parse_and_bad_ones_are_named() {
        assert_eq!(parse_priority("off"), Ok(None));
        assert_eq!(parse_priority("10"), Ok(Some(10)));
        assert_eq!(parse_priority("99"), Ok(Some(99)));
        for bad in ["0", "100", "-3", "fifo", ""] {
            let e = parse_priority(bad).unwrap_err();
            assert!(e.contains("--rt-priority") && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn a_thread_made_realtime_is_fifo_or_the_refusal_says_why() {
        let r = std::thread::spawn(|| make_realtime(5).map(|()| current()))
            .join()
            .unwrap();
        match r {
            Ok((policy, prio)) => {
                assert_eq!(policy & !libc::SCHED_RESET_ON_FORK, libc::SCHED_FIFO);
                assert_eq!(prio, 5);
            }
            // Without CAP_SYS_NICE or an RLIMIT_RTPRIO: EPERM, and check
            // says so in words.
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
                assert!(check(5).unwrap_err().contains("SCHED_FIFO 5 refused"));
            }
        }
        // The caller's own thread is untouched by check.
        let before = current();
        let _ = check(5);
        assert_eq!(current(), before);
    }

    #[test]
    fn a_realtime_thread_spins_as_an_ordinary_one_and_gets_its_priority_back() {
        let seen = std::thread::spawn(|| {
            let rt = make_realtime_or_log(Some(7), "the test thread")?;
            let fifo = current();
            let spinning = {
                let _ordinary = Ordinary::new(Some(rt));
                current()
            };
            Some((fifo, spinning, current()))
        })
        .join()
        .unwrap();
        // Refused (no CAP_SYS_NICE): nothing to demote; the test above
        // checks the refusal.
        let Some((fifo, spinning, after)) = seen else {
            eprintln!("SKIPPED: SCHED_FIFO refused here; Ordinary not exercised");
            return;
        };
        assert_eq!(fifo.0 & !libc::SCHED_RESET_ON_FORK, libc::SCHED_FIFO);
        assert_eq!(spinning.0 & !libc::SCHED_RESET_ON_FORK, libc::SCHED_OTHER);
        assert_eq!(after, fifo);
        // An ordinary thread (no priority) is left as it is.
        let plain = std::thread::spawn(|| {
            let before = current();
            let _ordinary = Ordinary::new(None);
            (before, current())
        })
        .join()
        .unwrap();
        assert_eq!(plain.0, plain.1);
    }
}
