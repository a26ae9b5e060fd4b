//! [`Server`]: one NAND bank, or the lockstep channel bus, as a server in
//! virtual time whose queue of reserved work a read may overtake.
//!
//! Programs, erases and GC work are reserved first come, first served, as
//! [`sim::Resource`] does. With read priority on, the controller issues a
//! read before any queued program or erase that has not started: the read
//! waits only for the operation in progress (or, with program/erase
//! suspend, for the suspend latency, the suspended operation resuming after
//! the read), and everything queued behind it moves back by the read's
//! time. Completion times already returned for the moved operations are not
//! revised (a write acknowledged from the buffer stays acknowledged); the
//! moved work still occupies the server, so later work starts later and the
//! total busy time is conserved. Only the first [`CASCADE_OPS`] queued
//! operations are moved one by one (the queue behind a foreground GC stall
//! can hold hundreds); the end of the queue, which is what later work
//! waits for, always moves.

use sim::Nanos;
use std::collections::VecDeque;

/// How reads are ordered against queued programs and erases.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ReadPolicy {
    /// Reads overtake queued (not yet started) programs and erases.
    pub priority: bool,
    /// Time to suspend a program or erase in progress so a read can run;
    /// `None` when the NAND has no program/erase suspend.
    pub suspend_ns: Option<u64>,
    /// A read holds its bank until its data-out is done (the die's page
    /// register is busy until the bus has read it out), not only for tR.
    pub hold_die: bool,
    /// With `priority`: only host reads overtake, and only work queued in
    /// the background (host programs, paced and idle GC); the work of a
    /// foreground stall or catch-up is not overtaken, and GC reads queue
    /// first come, first served (semi-preemptible GC, Lee et al., TCAD
    /// 2013).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub background_only: bool,
    /// With `background_only`: a GC read keeps its place among the reads
    /// (reads, host and GC, keep their order), so no host read overtakes
    /// it or what was queued before it; without, host reads overtake GC
    /// reads as they do programs.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gc_reads_in_order: bool,
}

impl ReadPolicy {
    /// First come, first served: the model before read priority.
    pub const FIFO: ReadPolicy = ReadPolicy {
        priority: false,
        suspend_ns: None,
        hold_die: false,
        background_only: false,
        gc_reads_in_order: false,
    };
}

/// Queued operations a read moves back individually (see the module doc).
pub const CASCADE_OPS: usize = 16;

#[derive(Copy, Clone, Debug)]
struct Op {
    start: Nanos,
    end: Nanos,
    read: bool,
}

/// A server with a queue of reserved operations (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct Server {
    /// When the last reserved operation ends.
    pub busy_until: Nanos,
    /// Total time spent serving, for utilisation reports.
    pub busy_total: Nanos,
    /// Operations not yet ended at the last pruning, by start time; kept
    /// only when reads have priority.
    ops: VecDeque<Op>,
    /// Latest end of an operation pruned from `ops`: nothing may start
    /// before it.
    floor: Nanos,
    /// Index + 1 in `ops` of the read queued last (0: none): reads keep
    /// their order, so the next one starts looking there.
    last_read: usize,
    /// A priority read has moved queued work ([`Server::reserve_read_first`]):
    /// `ops` may then overlap and their ends need not be in order. While
    /// false (FIFO and backfilled work only, e.g. the channel bus) the ops
    /// never overlap, so their ends ascend with their starts and the ops
    /// ended by a time are a prefix found by binary search.
    reordered: bool,
}

impl Server {
    /// Drops the operations that ended by `now` (the device's current time;
    /// it never goes back).
    #[inline]
    pub fn prune(&mut self, now: Nanos) {
        while let Some(op) = self.ops.front() {
            if op.end > now {
                break;
            }
            self.floor = self.floor.max(op.end);
            self.ops.pop_front();
            self.last_read = self.last_read.saturating_sub(1);
        }
    }

    /// [`Server::reserve`] of work no read may overtake (a foreground
    /// stall's): tracked as reads are, so a later read queues behind it.
    pub fn reserve_fixed(&mut self, ready: Nanos, duration: Nanos) -> (Nanos, Nanos) {
        let (start, end) = self.reserve(ready, duration, true);
        if let Some(op) = self.ops.back_mut() {
            op.read = true;
        }
        self.last_read = self.ops.len();
        (start, end)
    }

    /// Reserves `duration` from no earlier than `ready`, behind everything
    /// already reserved (FIFO). With `track`, the operation is remembered
    /// so that a later priority read can overtake it. Returns (start, end).
    #[inline]
    pub fn reserve(&mut self, ready: Nanos, duration: Nanos, track: bool) -> (Nanos, Nanos) {
        let start = ready.max(self.busy_until);
        let end = start + duration;
        self.busy_until = end;
        self.busy_total += duration;
        if track {
            self.ops.push_back(Op {
                start,
                end,
                read: false,
            });
        }
        (start, end)
    }

    /// Reserves `duration` in the earliest idle gap at or after `ready`
    /// that holds it (backfilling), or after everything reserved. Used for
    /// the channel bus, whose transfers are short and independent: a
    /// transfer reserved far ahead (a read queued behind a busy bank) must
    /// not hold up transfers that fit before it. Always tracked.
    pub fn reserve_backfill(&mut self, ready: Nanos, duration: Nanos) -> (Nanos, Nanos) {
        self.busy_total += duration;
        let mut s = ready.max(self.floor);
        let mut i = self.ended_by(s);
        while i < self.ops.len() {
            let op = self.ops[i];
            if op.end <= s {
                i += 1;
                continue;
            }
            if op.start >= s + duration {
                break;
            }
            s = op.end;
            i += 1;
        }
        let end = s + duration;
        self.ops.insert(
            i,
            Op {
                start: s,
                end,
                read: false,
            },
        );
        self.busy_until = self.busy_until.max(end);
        (s, end)
    }

    /// How many of the first ops ended by `s`: where the scans of
    /// [`Server::first_gap`] and [`Server::reserve_backfill`] start. The
    /// same index the scan would reach by skipping them one by one (they
    /// are a prefix unless [`Server::reserve_read_first`] reordered the
    /// queue), found in O(log n): work reserved far ahead of the device's
    /// time (idle grooming queues thousands of transfers between two host
    /// I/Os, and only a host I/O prunes) no longer makes each reservation
    /// scan all of it.
    #[inline]
    fn ended_by(&self, s: Nanos) -> usize {
        if self.reordered {
            0
        } else {
            self.ops.partition_point(|op| op.end <= s)
        }
    }

    /// The earliest time at or after `ready` from which `duration` is idle.
    pub fn first_gap(&self, ready: Nanos, duration: Nanos) -> Nanos {
        let mut s = ready.max(self.floor);
        for op in self.ops.range(self.ended_by(s)..) {
            if op.end <= s {
                continue;
            }
            if op.start >= s + duration {
                break;
            }
            s = op.end;
        }
        s
    }

    /// Reserves a read of `duration` from no earlier than `ready`, ahead of
    /// every queued program or erase that has not started by then (reads
    /// keep their order among themselves). With `suspend`, a program or
    /// erase in progress is suspended (after that latency) and resumes when
    /// the read is done. Returns (start, end).
    pub fn reserve_read_first(
        &mut self,
        ready: Nanos,
        duration: Nanos,
        suspend: Option<Nanos>,
    ) -> (Nanos, Nanos) {
        self.reordered = true;
        self.busy_total += duration;
        let mut s = ready.max(self.floor);
        let mut i = 0;
        // Without suspend nothing before the last queued read can still be
        // in progress once it ends: start there.
        if suspend.is_none() && self.last_read > 0 {
            s = s.max(self.ops[self.last_read - 1].end);
            i = self.last_read;
        }
        while i < self.ops.len() {
            let op = self.ops[i];
            if op.end <= s {
                i += 1;
                continue;
            }
            if op.start < s {
                // In progress at `s`.
                if let (Some(latency), false) = (suspend, op.read) {
                    return self.suspend_and_read(i, s + latency, duration, latency);
                }
                s = op.end;
                i += 1;
                continue;
            }
            if op.read {
                // A read queued earlier goes first, unless ours fits before it.
                if s + duration <= op.start {
                    break;
                }
                s = s.max(op.end);
                i += 1;
                continue;
            }
            break;
        }
        let end = s + duration;
        self.ops.insert(
            i,
            Op {
                start: s,
                end,
                read: true,
            },
        );
        self.last_read = i + 1;
        self.cascade(i + 1, end);
        (s, end)
    }

    /// Suspends operation `i` (in progress) for a read from `start`, after
    /// reads already running inside the same suspension.
    fn suspend_and_read(
        &mut self,
        i: usize,
        mut start: Nanos,
        duration: Nanos,
        latency: Nanos,
    ) -> (Nanos, Nanos) {
        let mut j = i + 1;
        while j < self.ops.len() && self.ops[j].read && self.ops[j].start < self.ops[i].end {
            start = start.max(self.ops[j].end);
            j += 1;
        }
        let end = start + duration;
        self.ops[i].end += duration + latency;
        self.busy_total += latency;
        self.ops.insert(
            j,
            Op {
                start,
                end,
                read: true,
            },
        );
        self.last_read = j + 1;
        let resumed = self.ops[i].end.max(end);
        self.cascade(j + 1, resumed);
        (start, end)
    }

    /// Moves operations from `from` on back so that none starts before
    /// `prev_end`; a gap in the queue absorbs the shift.
    fn cascade(&mut self, from: usize, mut prev_end: Nanos) {
        let mut shift = Nanos::ZERO;
        for op in self.ops.range_mut(from..).take(CASCADE_OPS) {
            if op.start >= prev_end {
                shift = Nanos::ZERO;
                break;
            }
            shift = prev_end - op.start;
            op.start += shift;
            op.end += shift;
            prev_end = op.end;
        }
        // Beyond the cascade the queue is taken as contiguous: its end moves
        // by the last shift.
        let moved_end = if self.ops.len() > from + CASCADE_OPS {
            self.busy_until + shift
        } else {
            prev_end
        };
        self.busy_until = self.busy_until.max(moved_end).max(prev_end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_reads_wait_for_everything_queued() {
        let mut s = Server::default();
        s.reserve(Nanos(0), Nanos(100), false);
        s.reserve(Nanos(0), Nanos(100), false);
        assert_eq!(
            s.reserve(Nanos(10), Nanos(5), false),
            (Nanos(200), Nanos(205))
        );
    }

    #[test]
    fn read_overtakes_queued_programs_not_the_one_in_progress() {
        let mut s = Server::default();
        s.reserve(Nanos(0), Nanos(100), true);
        s.reserve(Nanos(0), Nanos(100), true);
        s.reserve(Nanos(0), Nanos(100), true);
        // In progress: [0,100); the read goes next, the rest move back.
        assert_eq!(
            s.reserve_read_first(Nanos(10), Nanos(5), None),
            (Nanos(100), Nanos(105))
        );
        assert_eq!(s.busy_until, Nanos(305));
        // A second read queues behind the first, still ahead of programs.
        assert_eq!(
            s.reserve_read_first(Nanos(20), Nanos(5), None),
            (Nanos(105), Nanos(110))
        );
        assert_eq!(s.busy_until, Nanos(310));
        assert_eq!(s.busy_total, Nanos(310));
    }

    #[test]
    fn suspend_lets_a_read_in_at_once() {
        let mut s = Server::default();
        s.reserve(Nanos(0), Nanos(1000), true);
        s.reserve(Nanos(0), Nanos(1000), true);
        let (start, end) = s.reserve_read_first(Nanos(100), Nanos(50), Some(Nanos(10)));
        assert_eq!((start, end), (Nanos(110), Nanos(160)));
        // The suspended program resumes: 60 ns later; the next one too.
        assert_eq!(s.busy_until, Nanos(2060));
        // A read during the first read's suspension queues behind it.
        let (start, _) = s.reserve_read_first(Nanos(120), Nanos(50), Some(Nanos(10)));
        assert_eq!(start, Nanos(160));
        assert_eq!(s.busy_until, Nanos(2120));
    }

    #[test]
    fn pruned_work_still_bounds_reads() {
        let mut s = Server::default();
        s.reserve(Nanos(0), Nanos(100), true);
        s.prune(Nanos(100));
        assert_eq!(
            s.reserve_read_first(Nanos(50), Nanos(5), None),
            (Nanos(100), Nanos(105))
        );
    }

    #[test]
    fn backfill_uses_the_first_gap_that_fits() {
        let mut s = Server::default();
        s.reserve_backfill(Nanos(100), Nanos(50));
        s.reserve_backfill(Nanos(0), Nanos(30));
        assert_eq!(s.first_gap(Nanos(0), Nanos(80)), Nanos(150));
        assert_eq!(
            s.reserve_backfill(Nanos(0), Nanos(60)),
            (Nanos(30), Nanos(90))
        );
        assert_eq!(
            s.reserve_backfill(Nanos(0), Nanos(20)),
            (Nanos(150), Nanos(170))
        );
        assert_eq!(s.busy_until, Nanos(170));
        s.prune(Nanos(95));
        assert_eq!(s.first_gap(Nanos(0), Nanos(5)), Nanos(90));
    }

    /// The scan of `first_gap` from the first op, as it was before
    /// [`Server::ended_by`].
    fn first_gap_by_scan(s: &Server, ready: Nanos, duration: Nanos) -> Nanos {
        let mut t = ready.max(s.floor);
        for op in &s.ops {
            if op.end <= t {
                continue;
            }
            if op.start >= t + duration {
                break;
            }
            t = op.end;
        }
        t
    }

    /// Backfilled transfers never overlap, so the binary search finds what
    /// the scan from the first op found, over a long random mix of
    /// reservations (many far ahead, gaps of every size) and prunes.
    #[test]
    fn backfill_skips_ended_work_as_the_scan_did() {
        let mut rng = sim::Prng::from_seed(0xb05);
        let mut s = Server::default();
        let mut now = 0u64;
        for step in 0..20_000u32 {
            let ready = Nanos(now + rng.below(5_000));
            let d = Nanos(1 + rng.below(300));
            let want = first_gap_by_scan(&s, ready, d);
            assert_eq!(s.first_gap(ready, d), want, "step {step}");
            assert_eq!(
                s.reserve_backfill(ready, d),
                (want, want + d),
                "step {step}"
            );
            assert!(s
                .ops
                .iter()
                .zip(s.ops.iter().skip(1))
                .all(|(a, b)| a.end <= b.start));
            now += rng.below(40);
            if step % 1000 == 999 {
                s.prune(Nanos(now));
            }
        }
        assert!(s.ops.len() > 1000, "the queue grew: {}", s.ops.len());
    }

    #[test]
    fn an_idle_gap_absorbs_a_read() {
        let mut s = Server::default();
        s.reserve(Nanos(1000), Nanos(100), true);
        assert_eq!(
            s.reserve_read_first(Nanos(0), Nanos(50), None),
            (Nanos(0), Nanos(50))
        );
        assert_eq!(s.busy_until, Nanos(1100));
    }
}
