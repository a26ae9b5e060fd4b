//! Stale slots' pages handed back to the machine, so that the log's fresh
//! units reuse them (`--recycle`, on the warm thread).
//!
//! The store is written as a log: a write stores into the next slot of the
//! open unit, and the slot its sector held before becomes stale. Its page
//! stays in the page cache, dirty, until writeback, and cached after that,
//! though nothing will read it again before GC erases the unit. So on a
//! store whose log is still opening units never written (a fresh store),
//! the page cache grows by one page per write, each a page the machine
//! has never used. In a VM whose host backs guest memory only when first
//! touched (and takes freed memory back), such a page costs a fault on the
//! host: 2–4 µs per 4 KiB more than a page used before, measured here
//! (docs/ATTACH_PERF.md, seventh round), paid by the warm thread when it
//! reads the fresh unit in, on the same two CPUs as the writers.
//!
//! So, for each page the warm thread reads in for a unit never written,
//! the thread drops one stale page: it starts writeback of each closed
//! unit once (`sync_file_range`: data the flusher would write anyway,
//! only sooner), and once that has had time to finish it drops the
//! cached pages of the unit's stale slots (`POSIX_FADV_DONTNEED`, which
//! drops only clean pages: nothing unwritten is lost, whatever a power
//! cut does), units with the most stale slots first. The freed pages are
//! the next ones the kernel hands out, before the host takes them back.
//! Pages of current data are never dropped, and a unit the log reuses
//! (erased before) brings no budget: its pages are mostly still cached
//! and are written over in place.
//!
//! [`Recycler`] is the policy, apart from the store and the model so that
//! it can be tested alone.

use std::time::{Duration, Instant};

/// How long after a unit's writeback starts its stale pages are dropped
/// (a unit's writeback takes a few ms; the rest is margin).
pub const SETTLE: Duration = Duration::from_millis(300);

/// Units examined per call (the scan holds the device lock).
pub const SCAN: u32 = 16_384;

/// A unit is revisited once this fraction of it more has gone stale.
const STEP: u32 = 8;

/// What a call decided, for the store: units to write back, and units
/// whose stale runs to drop, with how many of their stale slots are new
/// since their last drop.
#[derive(Default, Debug, PartialEq)]
pub struct Plan {
    pub write_back: Vec<u32>,
    pub drop: Vec<(u32, u32)>,
}

/// Counters for `status`: units written back, and stale slots whose pages
/// were dropped (each counted once per time its unit is written).
#[derive(Default, Debug)]
pub struct RecycleCounters {
    pub written_back: std::sync::atomic::AtomicU64,
    pub dropped_slots: std::sync::atomic::AtomicU64,
}

/// Per-unit state of the policy.
pub struct Recycler {
    spl: u32,
    /// When each closed unit's writeback was started (None: not yet, or
    /// the unit is not closed).
    written_back: Vec<Option<Instant>>,
    /// Stale slots of each unit at its last drop.
    dropped: Vec<u32>,
    cursor: u32,
    /// Stale slots still to drop for the fresh pages read in, at most
    /// `cap`: pages are dropped for fresh pages read in lately, not for
    /// a fill long past (the page cache holds those; dropping stale
    /// pages later would only make the log read them in again when GC
    /// has erased their units).
    budget: u64,
    cap: u64,
}

impl Recycler {
    /// `cap`: the most budget kept, in slots.
    pub fn new(lebs: u32, slots_per_leb: u32, cap: u64) -> Recycler {
        Recycler {
            spl: slots_per_leb.max(1),
            written_back: vec![None; lebs as usize],
            dropped: vec![0; lebs as usize],
            cursor: 0,
            budget: 0,
            cap,
        }
    }

    /// The warm thread read `slots` slots' pages into a unit never written.
    pub fn fresh(&mut self, slots: u64) {
        self.budget = (self.budget + slots).min(self.cap);
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// One step at `now`: `closed_valid(leb)` is the model's valid slot
    /// count of a closed unit (None for any other). Examines up to
    /// [`SCAN`] units from where the last call stopped; plans the
    /// writeback of closed units not yet written back, and, while budget
    /// is left, the drop of the settled units with the most newly stale
    /// slots (at least 1/8 of a unit more than at their last drop).
    pub fn plan(&mut self, now: Instant, closed_valid: impl Fn(u32) -> Option<u32>) -> Plan {
        let lebs = self.written_back.len() as u32;
        let mut plan = Plan::default();
        if lebs == 0 {
            return plan;
        }
        let mut gains: Vec<(u32, u32)> = Vec::new();
        for _ in 0..SCAN.min(lebs) {
            let leb = self.cursor;
            self.cursor = (self.cursor + 1) % lebs;
            let i = leb as usize;
            let Some(valid) = closed_valid(leb) else {
                // Free, open or being collected: when it is closed again it
                // holds new data, to be written back anew.
                self.written_back[i] = None;
                self.dropped[i] = 0;
                continue;
            };
            let stale = self.spl.saturating_sub(valid);
            match self.written_back[i] {
                None => {
                    self.written_back[i] = Some(now);
                    plan.write_back.push(leb);
                }
                Some(at) if now.duration_since(at) >= SETTLE => {
                    if stale >= self.dropped[i] + self.spl.div_ceil(STEP) {
                        gains.push((stale - self.dropped[i], leb));
                    }
                }
                Some(_) => {}
            }
        }
        if self.budget > 0 && !gains.is_empty() {
            gains.sort_unstable_by(|a, b| b.cmp(a));
            for (gain, leb) in gains {
                if self.budget == 0 {
                    break;
                }
                self.budget = self.budget.saturating_sub(gain as u64);
                self.dropped[leb as usize] += gain;
                plan.drop.push((leb, gain));
            }
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_unit_is_written_back_once_then_dropped_after_it_settles() {
        let mut r = Recycler::new(4, 64, 1000);
        let t0 = Instant::now();
        // Unit 1 closed, half stale; the rest not closed.
        let units = |valid: u32| move |leb: u32| (leb == 1).then_some(valid);
        r.fresh(1000);
        let p = r.plan(t0, units(32));
        assert_eq!(p.write_back, vec![1]);
        assert!(p.drop.is_empty(), "dropped before the writeback settled");
        let p = r.plan(t0 + SETTLE / 2, units(32));
        assert_eq!(p, Plan::default(), "written back twice or dropped early");
        let p = r.plan(t0 + SETTLE, units(32));
        assert_eq!(p.drop, vec![(1, 32)]);
        assert!(p.write_back.is_empty());
        assert_eq!(r.budget(), 1000 - 32);
        // Not again until 1/8 of the unit more is stale.
        let p = r.plan(t0 + 2 * SETTLE, units(32 - 7));
        assert!(p.drop.is_empty(), "revisited for 7 of 64 slots");
        let p = r.plan(t0 + 2 * SETTLE, units(32 - 8));
        assert_eq!(p.drop, vec![(1, 8)]);
        assert_eq!(r.budget(), 1000 - 40);
    }

    #[test]
    fn without_budget_nothing_is_dropped_and_the_most_stale_go_first() {
        let mut r = Recycler::new(3, 100, 1000);
        let t0 = Instant::now();
        let valid = [Some(90), Some(10), Some(50)];
        let f = |leb: u32| valid[leb as usize];
        assert_eq!(r.plan(t0, f).write_back, vec![0, 1, 2]);
        assert!(
            r.plan(t0 + SETTLE, f).drop.is_empty(),
            "dropped with no budget"
        );
        // Budget for one unit's worth: the most stale (unit 1, 90 stale).
        r.fresh(60);
        let p = r.plan(t0 + SETTLE, f);
        assert_eq!(p.drop, vec![(1, 90)]);
        assert_eq!(r.budget(), 0);
        r.fresh(1);
        assert_eq!(r.plan(t0 + SETTLE, f).drop, vec![(2, 50)]);
        // The budget is capped: a fill long past drops nothing later.
        r.fresh(5000);
        assert_eq!(r.budget(), 1000);
    }

    #[test]
    fn a_unit_erased_and_closed_again_is_written_back_again() {
        let mut r = Recycler::new(2, 16, 1000);
        let t0 = Instant::now();
        r.fresh(100);
        let closed = |leb: u32| (leb == 0).then_some(0);
        assert_eq!(r.plan(t0, closed).write_back, vec![0]);
        assert_eq!(r.plan(t0 + SETTLE, closed).drop, vec![(0, 16)]);
        // Erased (not closed), then closed again with new data.
        r.plan(t0 + SETTLE, |_| None);
        let p = r.plan(t0 + 2 * SETTLE, closed);
        assert_eq!(p.write_back, vec![0]);
        assert!(p.drop.is_empty());
        assert_eq!(r.plan(t0 + 3 * SETTLE, closed).drop, vec![(0, 16)]);
    }

    #[test]
    fn a_scan_covers_at_most_scan_units_and_resumes() {
        let lebs = SCAN + 10;
        let mut r = Recycler::new(lebs, 8, 1000);
        let t0 = Instant::now();
        let p = r.plan(t0, |_| Some(8));
        assert_eq!(p.write_back.len(), SCAN as usize);
        let p = r.plan(t0, |_| Some(8));
        assert_eq!(p.write_back, (SCAN..lebs).collect::<Vec<_>>());
    }
}
