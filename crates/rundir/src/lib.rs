//! The run directory: where attached cards keep their runtime state and
//! running simulations publish their intervals ([`live`]), shared by
//! `vsl attach`, `vsl run`/`vsl review`, `vsl status` and `vsl serve`
//! without linking the attached card's FUSE serving.

pub mod live;

use std::path::PathBuf;

/// Where attachments keep their runtime state and simulations publish
/// their runs: `$OPENVSL_RUN_DIR`, or `/run/openvsl`.
pub fn run_base() -> PathBuf {
    std::env::var_os("OPENVSL_RUN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/openvsl"))
}

/// True while process `pid` exists and is not a zombie (a killed daemon
/// may wait for a parent that never reaps it). A killed process's main
/// thread can be a zombie while its other threads are still exiting (a
/// ring thread cancelling its io_uring, say), and those still hold its
/// files and the store's lock: it is alive until every thread is gone.
pub fn pid_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists. EPERM: it
    // exists but is another user's (a non-root caller asking about root's
    // daemon), which is not "gone".
    if unsafe { libc::kill(pid as libc::pid_t, 0) } != 0
        && std::io::Error::last_os_error().raw_os_error() != Some(libc::EPERM)
    {
        return false;
    }
    let live = |stat: &str| {
        // The state follows the parenthesised command name.
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        !matches!(state, Some("Z") | Some("X"))
    };
    match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(tasks) => tasks
            .flatten()
            .any(|t| std::fs::read_to_string(t.path().join("stat")).is_ok_and(|s| live(&s))),
        Err(_) => live(&std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::pid_alive;
    use std::time::{Duration, Instant};

    /// A process whose main thread has exited (a zombie) while another
    /// thread still runs is alive: its files and locks are still held.
    #[test]
    fn a_zombie_leader_with_a_live_thread_is_alive() {
        let script = "import threading,time,ctypes\n\
                      threading.Thread(target=time.sleep,args=(1.5,)).start()\n\
                      ctypes.CDLL(None).pthread_exit(None)";
        let mut child = match std::process::Command::new("python3")
            .args(["-c", script])
            .spawn()
        {
            Ok(c) => c,
            Err(e) => panic!("this test needs python3 (scripts/setup.sh installs it): {e}"),
        };
        let pid = child.id();
        let stat = || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let t = Instant::now();
        while !stat()
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
        {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "python3's main thread never exited"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            pid_alive(pid),
            "zombie leader with a live thread taken for dead"
        );
        child.wait().unwrap();
        assert!(!pid_alive(pid), "a reaped process taken for alive");
    }
}
