//! Garbage collection's own state: the victim policy and the PRNG it
//! draws from, the erase unit paced GC is collecting with its read-ahead,
//! the pace's debt, the background budget (allowance, rate, last top-up)
//! and the scratch vectors of a whole-unit collection.
//!
//! [`Gc`] decides nothing about slots or units by itself: the steps that
//! move data (`Vsl::pace`, `start_victim`, `gc_step`, `collect_leb` in
//! `vsl.rs`) read the map and the block manager and ask [`Gc`] for its
//! part.

use super::{Candidates, VictimPolicy};
use sim::{Nanos, Prng};
use std::collections::VecDeque;

/// The erase unit paced GC is collecting.
#[derive(Copy, Clone, Debug)]
pub(super) struct Victim {
    pub(super) leb: u32,
    /// Next slot (within the unit) to look at.
    pub(super) next: u32,
    /// Write unit whose valid sectors were last read, and when the read
    /// completes.
    pub(super) read_unit: u32,
    pub(super) read_done: Nanos,
    /// Next write unit of the victim whose read is not issued yet: reads
    /// run one unit per bank ahead of the moves, as the controller
    /// pipelines them.
    pub(super) ahead: u32,
    /// Moves per reclaimed slot when it was chosen: valid / invalid.
    pub(super) ratio: f64,
}

/// A scaled card's next victim picked ahead ([`Gc::set_next`]).
pub(super) struct NextVictim {
    pub(super) leb: u32,
    /// Reads issued for it, (write unit, completion).
    pub(super) reads: VecDeque<(u32, Nanos)>,
    /// Its first write unit whose read is not issued yet.
    pub(super) ahead: u32,
}

pub(super) struct Gc {
    /// Picks GC victims ([`VictimPolicy`]), drawing from `prng`.
    policy: Box<dyn VictimPolicy>,
    prng: Prng,
    /// Paced GC: the unit being collected.
    victim: Option<Victim>,
    /// Paced GC: reads issued ahead, (unit of the victim, completion).
    reads: VecDeque<(u32, Nanos)>,
    /// A scaled card's next victim of the same GC group, picked when the
    /// read-ahead ran past the current one's end, with the reads issued
    /// for it and how far they reach ([`Gc::take_next`]).
    next: Option<NextVictim>,
    /// Scratch of a whole-unit collection: read completion per write unit
    /// of the victim, and its valid slots.
    read_done: Vec<Nanos>,
    valid: Vec<u32>,
    /// Moves owed to the pace.
    debt: f64,
    /// Background moves the budget allows now, the budget's rate (moves
    /// per ns) and when it was last topped up.
    allowance: f64,
    moves_per_ns: f64,
    budget_at: Nanos,
}

impl Gc {
    /// `units` write units per erase unit, `banks` banks, `spl` slots per
    /// erase unit; the budget grows at `moves_per_ns`.
    pub(super) fn new(
        policy: Box<dyn VictimPolicy>,
        seed: u64,
        units: u32,
        banks: u32,
        spl: u32,
        moves_per_ns: f64,
    ) -> Gc {
        Gc {
            policy,
            prng: Prng::from_seed(seed),
            victim: None,
            reads: VecDeque::with_capacity(banks as usize + 1),
            next: None,
            read_done: Vec::with_capacity(units as usize),
            valid: Vec::with_capacity(spl as usize),
            debt: 0.0,
            allowance: 0.0,
            moves_per_ns,
            budget_at: Nanos::ZERO,
        }
    }

    pub(super) fn set_policy(&mut self, policy: Box<dyn VictimPolicy>) {
        self.policy = policy;
    }

    pub(super) fn needs_close_order(&self) -> bool {
        self.policy.needs_close_order()
    }

    pub(super) fn policy_name(&self) -> String {
        self.policy.name()
    }

    /// The policy's choice among `units` (once per GC run).
    pub(super) fn select(&mut self, units: &Candidates) -> Option<u32> {
        self.policy.select(units, &mut self.prng)
    }

    /// The unit paced GC is collecting, if any.
    #[inline]
    pub(super) fn victim(&self) -> Option<Victim> {
        self.victim
    }

    #[inline]
    pub(super) fn collecting(&self) -> bool {
        self.victim.is_some()
    }

    #[inline]
    pub(super) fn set_victim(&mut self, v: Option<Victim>) {
        self.victim = v;
    }

    /// The next victim picked ahead, if any.
    #[inline]
    pub(super) fn next(&mut self) -> Option<&mut NextVictim> {
        self.next.as_mut()
    }

    /// Picks `leb` as the next victim, its read-ahead empty so far.
    #[inline]
    pub(super) fn set_next(&mut self, leb: u32) {
        self.next = Some(NextVictim {
            leb,
            reads: VecDeque::new(),
            ahead: 0,
        });
    }

    /// Takes the next victim picked ahead, its reads becoming the reads
    /// issued ahead; returns it and how far its read-ahead reaches.
    #[inline]
    pub(super) fn take_next(&mut self) -> Option<(u32, u32)> {
        let n = self.next.take()?;
        self.reads = n.reads;
        Some((n.leb, n.ahead))
    }

    /// Forgets the reads issued ahead.
    #[inline]
    pub(super) fn clear_reads(&mut self) {
        self.reads.clear();
    }

    /// A read of the victim's write unit `unit` was issued, done at `done`.
    #[inline]
    pub(super) fn push_read(&mut self, unit: u32, done: Nanos) {
        self.reads.push_back((unit, done));
    }

    /// When the read of write unit `unit` completes (forgetting the reads
    /// of the units before it), if one was issued.
    #[inline]
    pub(super) fn read_of(&mut self, unit: u32) -> Option<Nanos> {
        while self.reads.front().is_some_and(|&(u, _)| u < unit) {
            self.reads.pop_front();
        }
        match self.reads.front() {
            Some(&(u, done)) if u == unit => Some(done),
            _ => None,
        }
    }

    /// Lends the scratch vectors of a whole-unit collection (cleared).
    pub(super) fn take_scratch(&mut self) -> (Vec<Nanos>, Vec<u32>) {
        let mut ready = std::mem::take(&mut self.read_done);
        let mut valid = std::mem::take(&mut self.valid);
        ready.clear();
        valid.clear();
        (ready, valid)
    }

    pub(super) fn return_scratch(&mut self, ready: Vec<Nanos>, valid: Vec<u32>) {
        self.read_done = ready;
        self.valid = valid;
    }

    /// The budget's rate: background moves per ns.
    #[inline]
    pub(super) fn moves_per_ns(&self) -> f64 {
        self.moves_per_ns
    }

    /// Tops the background budget up to `t` (at most `burst` moves banked).
    #[inline]
    pub(super) fn top_up(&mut self, t: Nanos, burst: f64) {
        if t > self.budget_at {
            let dt = (t - self.budget_at).0 as f64;
            self.allowance = (self.allowance + dt * self.moves_per_ns).min(burst);
            self.budget_at = t;
        }
    }

    /// Takes `moves` out of the budget (host work that used the capacity
    /// it grows from), at most down to `-floor`.
    #[inline]
    pub(super) fn charge(&mut self, moves: f64, floor: f64) {
        self.allowance = (self.allowance - moves).max(-floor);
    }

    /// Free space is above the high watermark: nothing is owed.
    #[inline]
    pub(super) fn clear_debt(&mut self) {
        self.debt = 0.0;
    }

    /// Adds `owed` moves to the debt (at most `burst`) and returns the
    /// moves to do now: the debt the budget allows, whole.
    #[inline]
    pub(super) fn owe(&mut self, owed: f64, burst: f64) -> u64 {
        self.debt = (self.debt + owed).min(burst);
        let now = self.debt.min(self.allowance).max(0.0).floor();
        self.debt -= now;
        self.allowance -= now;
        now as u64
    }
}
