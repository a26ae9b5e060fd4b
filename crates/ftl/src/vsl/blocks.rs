//! The block manager: the state of every erase unit, the free pool (least
//! erased first), the log frontier being filled (and its place in its
//! cohort), the close order GC policies may ask for, the GC group of
//! erased units held back on a scaled card, spares and retirement.
//!
//! [`BlockManager`] knows nothing of what the slots hold ([`super::mapping`])
//! nor of NAND timing: erase counts come in as arguments.

use sim::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum LebState {
    Free,
    Open,
    Closed,
    /// Closed and being collected by paced GC.
    Victim,
    /// Set aside: never written (the reserved units at the end of the
    /// address space, until one is brought in as a spare).
    Reserved,
    /// Taken out of service for good (worn out or error-prone).
    Retired,
    /// Erased and parked off the free list for a while: a scaled card's
    /// allowance for its GC pool that the pool is not using
    /// ([`BlockManager::park_one`]).
    Parked,
}

/// An open erase unit being filled: the frontier of one stream.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct Frontier {
    leb: u32,
    next: u32,
    /// Place of the frontier in its cohort: the `gc_stall_lebs` units
    /// opened one after another, which on a scaled card hold one full-size
    /// unit's bytes (always 0 on a full-size card).
    cohort_pos: u32,
    /// When the data of the write unit being filled is all in, and how
    /// many of its sectors came from the host.
    ready: Nanos,
    host_slots: u32,
}

impl Frontier {
    /// A frontier at the start of erase unit `leb`.
    pub(super) fn at(leb: u32) -> Frontier {
        Frontier {
            leb,
            ..Frontier::default()
        }
    }

    #[inline]
    pub(super) fn leb(&self) -> u32 {
        self.leb
    }

    /// The partly filled write unit, if any.
    #[inline]
    pub(super) fn open_unit(&self, spl: u32, spu: u32) -> Option<u32> {
        if self.next.is_multiple_of(spu) {
            return None;
        }
        Some((self.leb * spl + self.next) / spu)
    }
}

pub(super) struct BlockManager {
    state: Vec<LebState>,
    /// Host sectors written when the erase unit was closed (its age).
    closed_at: Vec<u64>,
    /// Order in which each unit was closed (1, 2, …), kept only for a
    /// victim policy that asks for it; `closes` counts them.
    close_seq: Vec<u64>,
    closes: u64,
    /// (erase count, unit): the log opens the least erased first.
    free: BinaryHeap<Reverse<(u32, u32)>>,
    front: Frontier,
    /// Paced GC on a scaled card: units erased in the current group of
    /// `stall` (one full-size unit's bytes), held back from the free list
    /// until the group is done, as a full-size unit is unusable until its
    /// last sector has moved.
    gc_group: Vec<u32>,
    spl: u32,
    spu: u32,
    /// `gc_stall_lebs`: units per cohort.
    stall: u32,
    /// Units in service from the start (the reserved ones follow).
    usable: u32,
    /// Erased units parked off the free list, last parked last.
    parked: Vec<u32>,
}

impl BlockManager {
    /// `lebs` units, the first `usable` in service (unit 0 open as the
    /// frontier, the rest free), of `spl` slots in write units of `spu`.
    pub(super) fn new(lebs: usize, usable: u32, spl: u32, spu: u32, stall: u32) -> BlockManager {
        let mut state = vec![LebState::Free; lebs];
        // Reserved units sit at the end of the address space.
        for s in state.iter_mut().skip(usable as usize) {
            *s = LebState::Reserved;
        }
        let mut free = BinaryHeap::with_capacity(lebs);
        for leb in 1..usable {
            free.push(Reverse((0, leb)));
        }
        state[0] = LebState::Open;
        BlockManager {
            state,
            closed_at: vec![0; lebs],
            close_seq: Vec::new(),
            closes: 0,
            free,
            front: Frontier::default(),
            gc_group: Vec::new(),
            spl,
            spu,
            stall,
            usable,
            parked: Vec::new(),
        }
    }

    /// Keeps the close order (for a victim policy that needs it) or not.
    pub(super) fn keep_close_order(&mut self, on: bool) {
        if on {
            self.close_seq.resize(self.state.len(), 0);
        } else {
            self.close_seq = Vec::new();
        }
    }

    /// Host RAM the per-unit tables take besides the valid counts.
    pub(super) fn close_seq_ram_bytes(&self) -> u64 {
        self.close_seq.len() as u64 * 8
    }

    #[inline]
    pub(super) fn state(&self, leb: u32) -> LebState {
        self.state[leb as usize]
    }

    #[inline]
    pub(super) fn states(&self) -> &[LebState] {
        &self.state
    }

    #[inline]
    pub(super) fn closed_at(&self) -> &[u64] {
        &self.closed_at
    }

    #[inline]
    pub(super) fn close_seq(&self) -> &[u64] {
        &self.close_seq
    }

    /// Units on the free list.
    #[inline]
    pub(super) fn free_len(&self) -> usize {
        self.free.len()
    }

    /// Erased units held back in the current GC group.
    #[inline]
    pub(super) fn gc_group_len(&self) -> usize {
        self.gc_group.len()
    }

    /// The frontier being filled.
    #[inline]
    pub(super) fn frontier(&self) -> &Frontier {
        &self.front
    }

    #[inline]
    pub(super) fn frontier_leb(&self) -> u32 {
        self.front.leb
    }

    /// Next slot of the frontier's unit (`spl` when it is full).
    #[inline]
    pub(super) fn frontier_next(&self) -> u32 {
        self.front.next
    }

    #[inline]
    pub(super) fn frontier_full(&self) -> bool {
        self.front.next == self.spl
    }

    /// The slot the next sector placed goes to, and its erase unit.
    #[inline]
    pub(super) fn next_slot(&self) -> (u32, u32) {
        (self.front.leb * self.spl + self.front.next, self.front.leb)
    }

    /// A sector (from the host if `host`) whose data is ready at `t` went
    /// to the next slot; true when that completed a write unit, which
    /// [`BlockManager::take_open_unit`] then hands over for programming.
    #[inline]
    pub(super) fn fill(&mut self, t: Nanos, host: bool) -> bool {
        self.front.next += 1;
        self.front.ready = self.front.ready.max(t);
        self.front.host_slots += host as u32;
        self.front.next.is_multiple_of(self.spu)
    }

    /// The write unit just completed: (unit, data ready, host sectors).
    pub(super) fn take_open_unit(&mut self) -> (u32, Nanos, u32) {
        let unit = (self.front.leb * self.spl + self.front.next - 1) / self.spu;
        let out = (unit, self.front.ready, self.front.host_slots);
        self.front.ready = Nanos::ZERO;
        self.front.host_slots = 0;
        out
    }

    /// Makes `f` the frontier being filled; returns the one parked.
    pub(super) fn swap_frontier(&mut self, f: Frontier) -> Frontier {
        std::mem::replace(&mut self.front, f)
    }

    /// Closes the full frontier (`written` host sectors so far: its age).
    pub(super) fn close_frontier(&mut self, written: u64) {
        let old = self.front.leb as usize;
        self.state[old] = LebState::Closed;
        self.closed_at[old] = written;
        if !self.close_seq.is_empty() {
            self.closes += 1;
            self.close_seq[old] = self.closes;
        }
    }

    /// Opens the least-erased free unit as the frontier, the next of its
    /// cohort; an empty free list takes the GC group held back first.
    pub(super) fn open_next(&mut self, erase_counts: &[u32]) -> u32 {
        if self.free.is_empty() {
            // A GC group held back is usable at once rather than never.
            self.release_gc_group(erase_counts);
        }
        let Reverse((_, leb)) = self
            .free
            .pop()
            .expect("GC reserve exhausted: the free list is empty");
        assert_eq!(self.state[leb as usize], LebState::Free);
        self.state[leb as usize] = LebState::Open;
        self.front.leb = leb;
        self.front.next = 0;
        self.front.cohort_pos = (self.front.cohort_pos + 1) % self.stall;
        leb
    }

    /// Takes a free unit off the list and opens it for a new stream.
    pub(super) fn open_for_stream(&mut self) -> Option<u32> {
        let Reverse((_, leb)) = self.free.pop()?;
        self.state[leb as usize] = LebState::Open;
        Some(leb)
    }

    /// Free units GC's watermarks and stalls count: the free list less
    /// the units the frontier's cohort has still to open. A full-size
    /// card takes a whole erase unit when its log opens one; a scaled
    /// card's cohort of `k` small units is one full-size unit's bytes, so
    /// it counts as taken when its first unit opens (without this the
    /// free pool sat about one full-size unit lower than the full card's).
    #[inline]
    pub(super) fn pool_free(&self) -> usize {
        self.free
            .len()
            .saturating_sub(self.unopened(self.front.cohort_pos))
    }

    /// [`BlockManager::pool_free`] once the frontier has moved to the next unit.
    #[inline]
    pub(super) fn pool_free_after_open(&self) -> usize {
        let next = (self.front.cohort_pos + 1) % self.stall;
        self.free.len().saturating_sub(1 + self.unopened(next))
    }

    /// True when the frontier is the first unit of its cohort.
    #[inline]
    pub(super) fn cohort_start(&self) -> bool {
        self.front.cohort_pos == 0
    }

    /// Units of the cohort still to open with the frontier at `pos` in it.
    fn unopened(&self, pos: u32) -> usize {
        (self.stall - 1 - pos) as usize
    }

    /// Free space in erase units, the open frontier's unused part included.
    pub(super) fn free_space_lebs(&self) -> f64 {
        self.free.len() as f64 + (self.spl - self.front.next) as f64 / self.spl as f64
    }

    /// [`BlockManager::free_space_lebs`] with the erased units of the GC
    /// group held back counted in (what a stall's runway has gained on a
    /// scaled card before its group of `k` small units is released).
    pub(super) fn reclaimed_space_lebs(&self) -> f64 {
        self.free_space_lebs() + self.gc_group.len() as f64
    }

    /// Paced GC picked closed unit `leb` to collect.
    pub(super) fn mark_victim(&mut self, leb: u32) {
        self.state[leb as usize] = LebState::Victim;
    }

    /// Unit `leb` was erased (`erase_count` times so far): back on the
    /// free list.
    pub(super) fn erased(&mut self, leb: u32, erase_count: u32) {
        self.state[leb as usize] = LebState::Free;
        self.free.push(Reverse((erase_count, leb)));
    }

    /// Unit `leb` was erased and waits in the GC group.
    pub(super) fn erased_into_group(&mut self, leb: u32) {
        self.state[leb as usize] = LebState::Free;
        self.gc_group.push(leb);
    }

    /// Puts the units erased in the current GC group on the free list.
    pub(super) fn release_gc_group(&mut self, erase_counts: &[u32]) {
        for leb in std::mem::take(&mut self.gc_group) {
            self.free.push(Reverse((erase_counts[leb as usize], leb)));
        }
    }

    /// The next `k` free erase units in the order the log opens them.
    pub(super) fn next_free(&self, k: usize) -> Vec<u32> {
        let mut v: Vec<(u32, u32)> = self.free.iter().map(|r| r.0).collect();
        if k < v.len() {
            v.select_nth_unstable(k);
            v.truncate(k);
        }
        v.sort_unstable();
        v.into_iter().map(|(_, leb)| leb).collect()
    }

    /// Takes free unit `leb` out of service for good.
    pub(super) fn retire_free(&mut self, leb: u32) {
        assert_eq!(self.state[leb as usize], LebState::Free);
        self.free.retain(|Reverse((_, l))| *l != leb);
        self.state[leb as usize] = LebState::Retired;
    }

    /// Units parked off the free list.
    #[inline]
    pub(super) fn parked_len(&self) -> usize {
        self.parked.len()
    }

    /// Parks the free unit the log would open next; false when the free
    /// list is empty.
    pub(super) fn park_one(&mut self) -> bool {
        let Some(Reverse((_, leb))) = self.free.pop() else {
            return false;
        };
        self.state[leb as usize] = LebState::Parked;
        self.parked.push(leb);
        true
    }

    /// Puts the unit parked last back on the free list.
    pub(super) fn unpark_one(&mut self, erase_counts: &[u32]) {
        if let Some(leb) = self.parked.pop() {
            self.state[leb as usize] = LebState::Free;
            self.free.push(Reverse((erase_counts[leb as usize], leb)));
        }
    }

    /// Brings the first reserved unit (they sit at the end of the address
    /// space) into service on the free list; `None` when none is left.
    pub(super) fn activate_spare(&mut self, erase_counts: &[u32]) -> Option<u32> {
        let first = self.usable as usize;
        let leb = (first..self.state.len()).find(|&l| self.state[l] == LebState::Reserved)? as u32;
        self.state[leb as usize] = LebState::Free;
        self.free.push(Reverse((erase_counts[leb as usize], leb)));
        Some(leb)
    }

    /// Reserved units left to bring in as spares.
    pub(super) fn reserved_left(&self) -> u32 {
        self.state
            .iter()
            .filter(|s| **s == LebState::Reserved)
            .count() as u32
    }

    /// Cross-checks the free list and the open units against the states.
    pub(super) fn check(&self, streams: usize) {
        let free_states = self.state.iter().filter(|s| **s == LebState::Free).count();
        assert_eq!(
            free_states,
            self.free.len() + self.gc_group.len(),
            "free list disagrees with unit states"
        );
        let open = self.state.iter().filter(|s| **s == LebState::Open).count();
        assert_eq!(open, streams, "one open erase unit per stream");
        let parked = self
            .state
            .iter()
            .filter(|s| **s == LebState::Parked)
            .count();
        assert_eq!(
            parked,
            self.parked.len(),
            "parked list disagrees with unit states"
        );
    }

    /// Recovery: states from the valid counts, the frontier at `resume`
    /// (unit, next slot) if given; every other unit without data goes to
    /// the free list. Spares holding
    /// data stay in service, empty ones go back to the reserve.
    pub(super) fn recover(
        &mut self,
        valid: &[u32],
        erase_counts: &[u32],
        resume: Option<(u32, u32)>,
    ) {
        self.free.clear();
        // Parking is not recorded on the media: a parked unit is an empty
        // one, back in service (or, a spare, back in the reserve).
        self.parked.clear();
        for leb in self.usable..self.state.len() as u32 {
            if valid[leb as usize] > 0 {
                self.state[leb as usize] = LebState::Closed;
            } else if self.state[leb as usize] == LebState::Parked {
                self.state[leb as usize] = LebState::Reserved;
            }
        }
        for leb in 0..self.usable {
            if let Some((r, next)) = resume.filter(|r| r.0 == leb) {
                self.state[r as usize] = LebState::Open;
                self.front.leb = r;
                self.front.next = next;
            } else if valid[leb as usize] > 0 {
                self.state[leb as usize] = LebState::Closed;
            } else {
                self.state[leb as usize] = LebState::Free;
                self.free.push(Reverse((erase_counts[leb as usize], leb)));
            }
        }
    }

    /// Recovery without a unit to resume: opens the least-erased free
    /// unit as the frontier; `None` when none is free.
    pub(super) fn recover_open(&mut self) -> Option<u32> {
        let Reverse((_, frontier)) = self.free.pop()?;
        self.state[frontier as usize] = LebState::Open;
        self.front.leb = frontier;
        self.front.next = 0;
        Some(frontier)
    }
}
