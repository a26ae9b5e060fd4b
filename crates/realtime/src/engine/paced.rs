//! Open-loop issue on a real target: fio's `rate_iops` / `rate` with
//! `rate_process=linear|poisson` (and `thinktime_iotime` bursts), the way
//! fio paces a job. Each worker draws its own arrivals
//! ([`lab::openloop::Arrivals`], at its share of the rate) and issues each
//! one at its scheduled time when one of its `queue_depth` slots is free;
//! when none is, the arrival waits and goes out as soon as a completion
//! frees one (behind schedule fio issues at once, catching up: the same).
//!
//! Latency, as the two sides report it:
//! - the run's statistics (intervals, totals, `--rate-sweep`) count from
//!   the scheduled arrival, as the modelled card's open loop does, so a
//!   wait for a slot shows (the hockey stick);
//! - fio's JSON (`clat_ns`, `lat_ns`) counts from the issue: fio stamps an
//!   I/O's start after the rate's wait, so its latencies never include it.
//!
//! fio in its default inline submit mode also waits for every I/O in
//! flight before each rate sleep (`io_u_quiesce`); neither the modelled
//! open loop nor this one does: an arrival never waits for earlier I/O
//! unless every slot is busy.
//!
//! Timed waits end a learned overshoot early (a moving average of how late
//! this worker's wake-ups were), so issues are on time on average rather
//! than always late by the wake-up latency.

#[cfg(feature = "uring")]
use super::{check, Clock, Slot, UringWorker};
#[cfg(feature = "uring")]
use crate::collect::Meter;
use crate::RealtimeError;
use lab::openloop::{Arrival, Arrivals};
use workload::{Io, OpKind};

/// The most a timed wait is ended early.
const MAX_EARLY_NS: f64 = 200_000.0;

/// How early to end a timed wait, learned from how late wake-ups were.
#[derive(Default)]
pub(crate) struct Pacer {
    early_ns: f64,
}

impl Pacer {
    /// When to wake for an arrival at `at_ns`.
    pub(crate) fn target(&self, at_ns: u64) -> u64 {
        at_ns.saturating_sub(self.early_ns as u64)
    }

    /// A wait for `target` ended (timed out) at `woke`.
    pub(crate) fn learn(&mut self, target: u64, woke: u64) {
        let late = woke.saturating_sub(target) as f64;
        self.early_ns = (0.9 * self.early_ns + 0.1 * late).min(MAX_EARLY_NS);
    }
}

/// Sets this thread's timer slack to 1 ns: timed waits then end when asked
/// rather than up to the default 50 µs later.
pub(crate) fn fine_timer_slack() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// The source's next read or write.
pub(crate) fn next_rw(src: &mut dyn Arrivals) -> Result<Option<(u64, Io)>, RealtimeError> {
    let Some(a) = src
        .next_arrival()
        .map_err(|e| RealtimeError::Options(format!("open-loop arrivals: {e}")))?
    else {
        return Ok(None);
    };
    let Arrival {
        at_ns,
        op,
        offset,
        len,
    } = a;
    let is_read = match op {
        OpKind::Read => true,
        OpKind::Write => false,
        o => {
            return Err(RealtimeError::Options(format!(
                "open-loop arrivals: {o:?} is not issued on a real target"
            )))
        }
    };
    Ok(Some((
        at_ns,
        Io {
            is_read,
            offset,
            len,
        },
    )))
}

#[cfg(feature = "uring")]
impl UringWorker {
    /// Issues `src`'s arrivals at their times, at most `queue_depth` in
    /// flight, until the clock's end (or `stop`, or the source runs dry),
    /// then waits for what is in flight. Returns the first I/O error,
    /// after draining.
    pub(crate) fn run_paced(
        mut self,
        fd: std::os::unix::io::RawFd,
        src: &mut dyn Arrivals,
        meter: &mut Meter,
        clock: Clock,
        stop: &std::sync::atomic::AtomicBool,
    ) -> Result<(), RealtimeError> {
        use io_uring::types;
        fine_timer_slack();
        let qd = self.bufs.slots();
        let mut free: Vec<usize> = (0..qd).rev().collect();
        let mut arrived = vec![0u64; qd];
        let mut next = next_rw(src)?;
        let mut pacer = Pacer::default();
        let mut first_err: Option<RealtimeError> = None;
        let mut inflight = 0usize;
        loop {
            let now = clock.now_ns();
            let stopping = now >= clock.end_ns
                || stop.load(std::sync::atomic::Ordering::Relaxed)
                || first_err.is_some();
            // Every arrival that is due and has a slot goes out now.
            let mut queued = 0;
            while let Some((at, io)) = next.filter(|_| !stopping) {
                if at >= clock.end_ns || pacer.target(at) > now {
                    break;
                }
                let Some(slot) = free.pop() else { break };
                assert!(io.len as usize <= self.bufs.slot_bytes());
                if !io.is_read {
                    self.bufs.stamp(slot, io.offset, io.len as usize);
                }
                let ptr = self.bufs.slot_ptr(slot);
                let entry = super::rw_entry(fd, ptr, &io, slot);
                self.slots[slot] = Slot {
                    io,
                    issued_ns: clock.now_ns(),
                };
                arrived[slot] = at;
                // SAFETY: as in `issue`: the buffer outlives the I/O and at
                // most queue_depth entries are outstanding.
                unsafe { self.ring.submission().push(&entry) }.expect("submission queue has room");
                inflight += 1;
                queued += 1;
                meter.depth(inflight);
                next = next_rw(src)?;
            }
            if queued > 0 {
                if let Err(e) = self.submit() {
                    return Err(self.abandon(e));
                }
            }
            let more = !stopping && next.is_some_and(|(at, _)| at < clock.end_ns);
            if inflight == 0 && !more {
                break;
            }
            // Wait for a completion, or for the next arrival when a slot is
            // free for it.
            let wake = next
                .filter(|_| more && !free.is_empty())
                .map(|(at, _)| pacer.target(at));
            let waited = match wake {
                Some(t) => {
                    let rel = t.saturating_sub(clock.now_ns());
                    if rel == 0 {
                        continue;
                    }
                    let ts = types::Timespec::new()
                        .sec(rel / 1_000_000_000)
                        .nsec((rel % 1_000_000_000) as u32);
                    let args = types::SubmitArgs::new().timespec(&ts);
                    match self.ring.submitter().submit_with_args(1, &args) {
                        Ok(_) => Ok(()),
                        Err(e) if e.raw_os_error() == Some(libc::ETIME) => {
                            pacer.learn(t, clock.now_ns());
                            Ok(())
                        }
                        Err(e) => Err(e),
                    }
                }
                None => self.ring.submit_and_wait(1).map(|_| ()),
            };
            match waited {
                Ok(()) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) => {}
                Err(e) => return Err(self.abandon(e)),
            }
            let now = clock.now_ns();
            self.reaped.clear();
            let reaped = &mut self.reaped;
            reaped.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
            for i in 0..self.reaped.len() {
                let (slot, res) = self.reaped[i];
                let slot = slot as usize;
                inflight -= 1;
                free.push(slot);
                let s = self.slots[slot];
                let res = if res < 0 {
                    Err(std::io::Error::from_raw_os_error(-res))
                } else {
                    Ok(res as usize)
                };
                if let Err(e) = check(res, &s.io) {
                    first_err.get_or_insert(e);
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    continue;
                }
                let from = arrived[slot].min(s.issued_ns);
                meter.record_open(now, now - from, now - s.issued_ns, s.io.is_read, s.io.len);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// Without the `uring` feature no io_uring worker exists.
#[cfg(not(feature = "uring"))]
impl super::UringWorker {
    pub(crate) fn run_paced(
        self,
        _fd: std::os::unix::io::RawFd,
        _src: &mut dyn Arrivals,
        _meter: &mut crate::collect::Meter,
        _clock: super::Clock,
        _stop: &std::sync::atomic::AtomicBool,
    ) -> Result<(), RealtimeError> {
        match self {}
    }
}

/// The synchronous engine's open loop: one blocking I/O at a time, each
/// issued at its arrival (or at once when behind).
pub(crate) fn sync_worker_paced(
    file: &std::fs::File,
    mut buf: crate::buffer::IoBuffers,
    src: &mut dyn Arrivals,
    meter: &mut crate::collect::Meter,
    clock: super::Clock,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(), RealtimeError> {
    fine_timer_slack();
    let mut pacer = Pacer::default();
    while let Some((at, io)) = next_rw(src)? {
        if stop.load(std::sync::atomic::Ordering::Relaxed) || at >= clock.end_ns {
            return Ok(());
        }
        let target = pacer.target(at);
        let now = clock.now_ns();
        if target > now {
            std::thread::sleep(std::time::Duration::from_nanos(target - now));
            pacer.learn(target, clock.now_ns());
        }
        if clock.now_ns() >= clock.end_ns {
            return Ok(());
        }
        let len = io.len as usize;
        if !io.is_read {
            buf.stamp(0, io.offset, len);
        }
        meter.depth(1);
        let t0 = clock.now_ns();
        let res = super::sync_io(file, &mut buf, &io);
        let t1 = clock.now_ns();
        if let Err(e) = super::check(res, &io) {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(e);
        }
        meter.record_open(t1, t1 - at.min(t0), t1 - t0, io.is_read, io.len);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pacer_learns_to_wake_early_by_the_overshoot() {
        let mut p = Pacer::default();
        assert_eq!(p.target(1_000_000), 1_000_000);
        // Wake-ups 30 µs after the time asked for, again and again: the
        // target moves 30 µs early, so that wake-ups land on time.
        for _ in 0..200 {
            let t = p.target(1_000_000);
            p.learn(t, t + 30_000);
        }
        let early = 1_000_000 - p.target(1_000_000);
        assert!((25_000..=35_000).contains(&early), "{early}");
        // Capped.
        for _ in 0..500 {
            let t = p.target(10_000_000);
            p.learn(t, t + 1_000_000);
        }
        assert_eq!(10_000_000 - p.target(10_000_000), MAX_EARLY_NS as u64);
    }
}
