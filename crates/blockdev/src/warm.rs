//! The units the log opens next, made ready before it writes them.
//!
//! A host write stores its data into the store file's page cache. When the
//! slot's page is not cached (the unit was last written minutes ago and its
//! pages were reclaimed, or never), the write allocates a page and touches
//! it first; in a VM whose host takes free guest pages back, that touch is
//! a fault on the host: about 9 µs per 4 KiB page measured here, most of a
//! 16 KiB write's 50 µs of service (docs/ATTACH_PERF.md, fourth round).
//!
//! So a thread per device looks ahead: every few milliseconds it asks the
//! model for the next free units the log will open (least erased first)
//! and marks the ones not ready (under the device lock, where writers
//! claim units). Then, unless a sync already covers those units' erases,
//! it syncs the store once (the erases and the GC copies before them
//! durable: the data they held is safe where it was moved), turns the
//! ranges of the units' pages that are not in the page cache (`mincore`)
//! into unwritten extents (`FALLOC_FL_ZERO_RANGE`: still allocated, read
//! as zeros with no disk I/O) and reads them in without readahead, as
//! single-page folios (a 4 KiB write into a clean large folio costs ext4
//! five times as much); pages still cached (a GC victim's, just read)
//! are left to be written over in place. The log's writes then copy into
//! pages that exist. A unit stays ready for
//! [`STALE`] (the machine may reclaim idle pages after that; it is then
//! read in again).
//!
//! A writer about to store into a unit claims it first (under the device
//! lock): a unit only marked is taken back from the thread (left as it
//! is), a unit being zeroed or read in is waited for (the thread stops
//! reading in between chunks when a writer wants the unit). Nothing is
//! zeroed once a writer has claimed the unit, and a unit is marked only
//! while it is free, under the lock, so no write can be in it then.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::AcqRel, Ordering::Acquire};
use std::time::{Duration, Instant};

const IDLE: u8 = 0;
const MARKED: u8 = 1;
const BUSY: u8 = 2;
const WANTED: u8 = 3;
const READY: u8 = 4;

/// How long a prepared unit counts as ready (this VM's DAMON reclaims
/// pages idle for 60 s).
pub const STALE: Duration = Duration::from_secs(20);

/// What the thread did: units made ready, ready units a write then used,
/// marked units a writer took back first, and claims that waited.
#[derive(Default, Debug)]
pub struct WarmCounters {
    pub prepared: AtomicU64,
    pub used: AtomicU64,
    pub taken_back: AtomicU64,
    pub waited: AtomicU64,
}

/// Per-unit states.
pub struct Warm {
    state: Vec<AtomicU8>,
    /// When each ready unit was prepared (ms since `epoch`).
    ready_at: Vec<AtomicU64>,
    epoch: Instant,
    on: AtomicBool,
    /// Stale slots' pages dropped as fresh units are read in
    /// ([`crate::recycle`], `--recycle`).
    recycle: AtomicBool,
    pub counters: WarmCounters,
    pub recycled: crate::recycle::RecycleCounters,
}

impl Warm {
    pub fn new(units: u32) -> Warm {
        Warm {
            state: (0..units).map(|_| AtomicU8::new(IDLE)).collect(),
            ready_at: (0..units).map(|_| AtomicU64::new(0)).collect(),
            epoch: Instant::now(),
            on: AtomicBool::new(false),
            recycle: AtomicBool::new(false),
            counters: WarmCounters::default(),
            recycled: Default::default(),
        }
    }

    /// Starts (the daemon runs the thread).
    pub fn switch_on(&self) {
        self.on.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Stops for good: units marked are left as they are.
    pub fn switch_off(&self) {
        self.on.store(false, std::sync::atomic::Ordering::Release);
    }

    /// Also drops stale slots' pages ([`crate::recycle`]) while on.
    pub fn switch_recycle(&self, on: bool) {
        self.recycle.store(on, std::sync::atomic::Ordering::Release);
    }

    pub fn recycles(&self) -> bool {
        self.recycle.load(Acquire)
    }

    pub fn is_on(&self) -> bool {
        self.on.load(Acquire)
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Marks free unit `leb` for the thread unless it is ready (and not
    /// stale) or already taken: true if the thread should prepare it.
    /// Only under the device lock, for a unit the log has not opened.
    pub fn mark(&self, leb: u32) -> bool {
        if !self.is_on() {
            return false;
        }
        let s = &self.state[leb as usize];
        match s.load(Acquire) {
            IDLE => s.compare_exchange(IDLE, MARKED, AcqRel, Acquire).is_ok(),
            READY => {
                let age = self
                    .now_ms()
                    .saturating_sub(self.ready_at[leb as usize].load(Acquire));
                age >= STALE.as_millis() as u64
                    && s.compare_exchange(READY, MARKED, AcqRel, Acquire).is_ok()
            }
            _ => false,
        }
    }

    /// A writer is about to store into unit `leb` (under the device lock):
    /// returns once nothing the thread does can touch the unit any more.
    pub fn claim(&self, leb: u32) {
        let s = &self.state[leb as usize];
        let mut counted = false;
        loop {
            match s.load(Acquire) {
                IDLE => return,
                READY => {
                    if s.compare_exchange(READY, IDLE, AcqRel, Acquire).is_ok() {
                        self.counters.used.fetch_add(1, AcqRel);
                        return;
                    }
                }
                MARKED => {
                    if s.compare_exchange(MARKED, IDLE, AcqRel, Acquire).is_ok() {
                        self.counters.taken_back.fetch_add(1, AcqRel);
                        return;
                    }
                }
                cur => {
                    if !counted {
                        self.counters.waited.fetch_add(1, AcqRel);
                        counted = true;
                    }
                    if cur == BUSY {
                        let _ = s.compare_exchange(BUSY, WANTED, AcqRel, Acquire);
                    }
                    std::thread::yield_now();
                }
            }
        }
    }

    /// The thread starts on `leb`: false if a writer took it back.
    pub fn begin(&self, leb: u32) -> bool {
        self.state[leb as usize]
            .compare_exchange(MARKED, BUSY, AcqRel, Acquire)
            .is_ok()
    }

    /// Whether a writer waits for `leb` (the thread should stop reading in).
    pub fn wanted(&self, leb: u32) -> bool {
        self.state[leb as usize].load(Acquire) == WANTED
    }

    /// The thread is done with `leb` (begun): ready if it prepared it whole
    /// and no writer is waiting.
    pub fn end(&self, leb: u32, whole: bool) {
        let s = &self.state[leb as usize];
        if whole {
            self.ready_at[leb as usize].store(self.now_ms(), std::sync::atomic::Ordering::Release);
            if s.compare_exchange(BUSY, READY, AcqRel, Acquire).is_ok() {
                self.counters.prepared.fetch_add(1, AcqRel);
                return;
            }
        }
        s.store(IDLE, std::sync::atomic::Ordering::Release);
    }

    /// Gives marked units back without preparing them (a failed sync).
    pub fn unmark(&self, units: &[u32]) {
        for &leb in units {
            let _ = self.state[leb as usize].compare_exchange(MARKED, IDLE, AcqRel, Acquire);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn on(units: u32) -> Warm {
        let w = Warm::new(units);
        w.switch_on();
        w
    }

    #[test]
    fn a_claim_takes_back_a_marked_unit_and_the_thread_skips_it() {
        let w = on(4);
        assert!(w.mark(2));
        assert!(!w.mark(2), "marked twice");
        w.claim(2);
        assert!(!w.begin(2), "the thread began a unit a writer took back");
        assert_eq!(w.counters.taken_back.load(Acquire), 1);
    }

    #[test]
    fn a_ready_unit_is_used_once_and_not_marked_again_while_fresh() {
        let w = on(4);
        assert!(w.mark(1) && w.begin(1));
        w.end(1, true);
        assert!(!w.mark(1), "a fresh ready unit was marked again");
        w.claim(1);
        assert_eq!(w.counters.used.load(Acquire), 1);
        assert_eq!(w.counters.prepared.load(Acquire), 1);
        // Written: the next time it is free it is prepared again.
        assert!(w.mark(1));
    }

    #[test]
    fn a_claim_waits_for_a_unit_being_prepared_and_asks_it_to_stop() {
        let w = Arc::new(on(4));
        assert!(w.mark(1) && w.begin(1));
        let (w2, done) = (w.clone(), Arc::new(AtomicBool::new(false)));
        let d2 = done.clone();
        let h = std::thread::spawn(move || {
            w2.claim(1);
            d2.store(true, std::sync::atomic::Ordering::Release);
        });
        let t0 = Instant::now();
        while !w.wanted(1) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the claim never asked"
            );
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !done.load(Acquire),
            "the claim returned while the unit was busy"
        );
        // Stopped early on the writer's request: not ready.
        w.end(1, true);
        h.join().unwrap();
        assert!(done.load(Acquire));
        assert_eq!(w.counters.waited.load(Acquire), 1);
        assert_eq!(w.counters.prepared.load(Acquire), 0);
        assert_eq!(w.counters.used.load(Acquire), 0);
    }

    #[test]
    fn off_marks_nothing() {
        let w = Warm::new(4);
        assert!(!w.mark(0));
        w.claim(0); // returns at once
        let w = on(4);
        assert!(w.mark(3));
        w.switch_off();
        assert!(!w.mark(2));
        w.unmark(&[3]);
        assert!(!w.begin(3));
    }
}
