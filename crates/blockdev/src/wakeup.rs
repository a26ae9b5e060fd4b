//! The emulator's own latency, kept out of what the client sees (issue 13).
//!
//! Two costs sit between a client and the model on an attached card that a
//! real card's host does not pay:
//!
//! - **CPU wake-ups.** Each I/O crosses threads (client, loop kworker, FUSE
//!   thread); when the CPU it wakes on is idle, the wake-up costs what the
//!   CPU's idle state costs to leave. In a virtual machine an idle vCPU
//!   halts and its wake-up is an exit to the hypervisor: 20–40 µs per
//!   hand-off here, more than the FUSE round trip itself. [`IdlePoll`]
//!   holds a PM QoS request for zero wake-up latency
//!   (`/dev/cpu_dma_latency`, as tuned's latency-performance profile does)
//!   while I/O flows, so idle CPUs poll instead of halting, and drops it
//!   after [`IDLE_RELEASE`] without I/O so an idle card costs no CPU.
//! - **The kernel path** (block layer, loop, FUSE transport) of every I/O.
//!   [`probe`] measures its round trip at attach through a loop device over
//!   the daemon's `.probe` file, which answers at once and touches no
//!   model; the daemon then answers each I/O that much before the model's
//!   completion ([`crate::engine::Completion::ack_at`]), so the client sees
//!   the model's latency, not the model's plus the emulator's.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// The probe file's name in the FUSE directory and its size.
pub const PROBE_FILE: &str = ".probe";
pub const PROBE_BYTES: u64 = 64 << 20;

/// How long the `.probe` file holds each request before answering, as the
/// model's wait does (subtracted from the measured round trip).
pub const PROBE_DELAY: Duration = Duration::from_micros(50);

/// How long without I/O before the zero-latency request is dropped.
pub const IDLE_RELEASE: Duration = Duration::from_secs(2);

/// A PM QoS request for zero CPU wake-up latency, held while I/O flows.
pub struct IdlePoll {
    enabled: bool,
    held: Option<File>,
    /// Why the request could not be made (said once, in the daemon's log).
    failed: Option<String>,
    last_count: u64,
    last_change: Instant,
}

impl IdlePoll {
    pub fn new(enabled: bool) -> IdlePoll {
        IdlePoll {
            enabled,
            held: None,
            failed: None,
            last_count: 0,
            last_change: Instant::now(),
        }
    }

    /// Takes the request now (attach and its probe run under it).
    pub fn hold(&mut self) {
        if !self.enabled || self.held.is_some() || self.failed.is_some() {
            return;
        }
        let r = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")
            .and_then(|mut f| f.write_all(&0i32.to_ne_bytes()).map(|_| f));
        match r {
            Ok(f) => self.held = Some(f),
            Err(e) => {
                let why = format!("/dev/cpu_dma_latency: {e}");
                tracing::warn!("idle CPUs keep their sleep states (no PM QoS request: {why})");
                self.failed = Some(why);
            }
        }
        self.last_change = Instant::now();
    }

    /// Called often with the count of I/Os served so far: holds the
    /// request while the count moves, drops it after [`IDLE_RELEASE`].
    pub fn tick(&mut self, count: u64) {
        if count != self.last_count {
            self.last_count = count;
            self.last_change = Instant::now();
            self.hold();
        } else if self.held.is_some() && self.last_change.elapsed() >= IDLE_RELEASE {
            self.held = None;
        }
    }

    /// One word for the state file: on (held now), idle (enabled, not held
    /// for lack of I/O), off, or unavailable.
    pub fn state(&self) -> &'static str {
        match (self.enabled, &self.held, &self.failed) {
            (false, _, _) => "off",
            (_, _, Some(_)) => "unavailable",
            (_, Some(_), _) => "on",
            (_, None, None) => "idle",
        }
    }
}

/// The measured round trip of the kernel path, per direction: a fixed part
/// and a part per KiB (the copies), in ns.
#[derive(Copy, Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathCost {
    pub read_ns: u64,
    pub read_ns_per_kib: u64,
    pub write_ns: u64,
    pub write_ns_per_kib: u64,
}

impl PathCost {
    /// The round trip of an I/O of `bytes`.
    pub fn of(&self, write: bool, bytes: u64) -> Duration {
        let (fixed, per) = if write {
            (self.write_ns, self.write_ns_per_kib)
        } else {
            (self.read_ns, self.read_ns_per_kib)
        };
        Duration::from_nanos(fixed + per * bytes / 1024)
    }
}

/// Round trips of one size and direction at queue depth 1: the median of
/// `n` after `n / 4` warm-up calls.
fn median_round_trip(f: &File, write: bool, bytes: usize, n: usize) -> std::io::Result<u64> {
    let layout = std::alloc::Layout::from_size_align(bytes, 4096).expect("probe buffer layout");
    // SAFETY: the layout has a non-zero size; the buffer is freed below.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: ptr is valid for `bytes` bytes, zeroed, and not aliased.
    let buf = unsafe { std::slice::from_raw_parts_mut(ptr, bytes) };
    let slots = PROBE_BYTES / bytes as u64;
    let mut times = Vec::with_capacity(n);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut result = Ok(());
    for i in 0..n + n / 4 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let off = (state >> 33) % slots * bytes as u64;
        let t = Instant::now();
        let r = if write {
            f.write_at(buf, off)
        } else {
            f.read_at(buf, off)
        };
        let dt = t.elapsed().saturating_sub(PROBE_DELAY).as_nanos() as u64;
        match r {
            Ok(k) if k == bytes => {}
            Ok(k) => {
                result = Err(std::io::Error::other(format!(
                    "short transfer: {k} of {bytes}"
                )));
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
        if i >= n / 4 {
            times.push(dt);
        }
    }
    // SAFETY: allocated above with this layout.
    unsafe { std::alloc::dealloc(ptr, layout) };
    result?;
    times.sort_unstable();
    Ok(times[times.len() / 2])
}

/// Measures the kernel path's round trip through the block device `dev`
/// (a loop device over the daemon's `.probe` file): 4 KiB and 64 KiB
/// reads and writes with O_DIRECT at queue depth 1, `n` of each.
pub fn probe(dev: &Path, n: usize) -> std::io::Result<PathCost> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)?;
    let fit = |small: u64, large: u64| {
        // Per KiB from the two sizes (60 KiB apart), never negative; the
        // fixed part is what is left of the small one.
        let per = large.saturating_sub(small) / 60;
        (small.saturating_sub(per * 4), per)
    };
    let (rs, rl) = (
        median_round_trip(&f, false, 4096, n)?,
        median_round_trip(&f, false, 65536, n)?,
    );
    let (ws, wl) = (
        median_round_trip(&f, true, 4096, n)?,
        median_round_trip(&f, true, 65536, n)?,
    );
    let (read_ns, read_ns_per_kib) = fit(rs, rl);
    let (write_ns, write_ns_per_kib) = fit(ws, wl);
    Ok(PathCost {
        read_ns,
        read_ns_per_kib,
        write_ns,
        write_ns_per_kib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_cost_grows_with_the_size() {
        let c = PathCost {
            read_ns: 20_000,
            read_ns_per_kib: 100,
            write_ns: 30_000,
            write_ns_per_kib: 200,
        };
        assert_eq!(c.of(false, 4096), Duration::from_nanos(20_400));
        assert_eq!(c.of(false, 16384), Duration::from_nanos(21_600));
        assert_eq!(c.of(true, 16384), Duration::from_nanos(33_200));
    }

    #[test]
    fn idle_poll_off_never_holds() {
        let mut p = IdlePoll::new(false);
        p.hold();
        p.tick(5);
        assert_eq!(p.state(), "off");
    }

    #[test]
    fn idle_poll_drops_the_request_when_io_stops() {
        let mut p = IdlePoll::new(true);
        p.tick(1);
        // Without root the request fails; the state says so and I/O goes on.
        if p.state() == "unavailable" {
            eprintln!("NOTE: /dev/cpu_dma_latency not writable here; the release is not exercised");
            return;
        }
        assert_eq!(p.state(), "on");
        p.last_change = Instant::now() - IDLE_RELEASE;
        p.tick(1);
        assert_eq!(p.state(), "idle");
        p.tick(2);
        assert_eq!(p.state(), "on");
    }
}
