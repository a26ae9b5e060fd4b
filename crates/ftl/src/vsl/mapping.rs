//! The map: logical sector → physical slot (`l2p`), the out-of-band record
//! of each slot (its logical sector and, when tracked, the sequence number
//! of the host write that made it), one valid bit per slot and the valid
//! count of each erase unit.
//!
//! [`Mapping`] knows slots and erase units only as numbers: where the next
//! slot is and what state a unit is in belong to the block manager
//! ([`super::blocks::BlockManager`]).

use super::{prefetch_line, table, UNMAPPED};

pub(super) struct Mapping {
    l2p: Vec<u32>,
    /// Logical sector recorded with each physical slot (the page's OOB).
    p2l: Vec<u32>,
    /// Out-of-band sequence number of each slot, when tracked.
    oob_seq: Vec<u64>,
    /// One bit per physical slot: it holds the current copy of its sector.
    /// Lets GC find a victim's valid slots without touching the map.
    valid_bits: Vec<u64>,
    /// Valid slots per erase unit.
    leb_valid: Vec<u32>,
    /// Slots per erase unit and per write unit.
    spl: u32,
    spu: u32,
}

impl Mapping {
    pub(super) fn new(user_sectors: u64, lebs: usize, spl: u32, spu: u32, track: bool) -> Mapping {
        let slots = lebs * spl as usize;
        Mapping {
            l2p: table(user_sectors as usize, UNMAPPED),
            p2l: table(slots, UNMAPPED),
            valid_bits: table(slots.div_ceil(64), 0),
            oob_seq: if track { table(slots, 0) } else { Vec::new() },
            leb_valid: vec![0; lebs],
            spl,
            spu,
        }
    }

    /// Host RAM the tables take, the per-unit valid counts excepted.
    pub(super) fn ram_bytes(&self) -> u64 {
        (self.l2p.len() * 4
            + self.p2l.len() * 4
            + self.oob_seq.len() * 8
            + self.valid_bits.len() * 8) as u64
    }

    /// Physical slots (every erase unit, reserved included).
    #[inline]
    pub(super) fn slots(&self) -> usize {
        self.p2l.len()
    }

    /// Logical sectors.
    #[inline]
    pub(super) fn sectors(&self) -> usize {
        self.l2p.len()
    }

    /// The slot logical sector `lba` maps to, or `UNMAPPED`.
    #[inline]
    pub(super) fn slot_of(&self, lba: u32) -> u32 {
        self.l2p[lba as usize]
    }

    /// The slot of `lba`, if mapped; `None` also beyond the capacity.
    #[inline]
    pub(super) fn lookup(&self, lba: u64) -> Option<u32> {
        let p = *self.l2p.get(lba as usize)?;
        (p != UNMAPPED).then_some(p)
    }

    /// The logical sector recorded with slot `psa` (or `UNMAPPED`).
    #[inline]
    pub(super) fn lba_at(&self, psa: u32) -> u32 {
        self.p2l[psa as usize]
    }

    /// Starts keeping sequence numbers (all 0 so far).
    pub(super) fn track_sequence(&mut self) {
        if self.oob_seq.is_empty() {
            self.oob_seq = vec![0; self.p2l.len()];
        }
    }

    /// Out-of-band sequence number of slot `psa` (0 when not tracked).
    #[inline]
    pub(super) fn seq_at(&self, psa: u32) -> u64 {
        self.oob_seq.get(psa as usize).copied().unwrap_or(0)
    }

    /// Valid slots of erase unit `leb`.
    #[inline]
    pub(super) fn valid(&self, leb: u32) -> u32 {
        self.leb_valid[leb as usize]
    }

    /// Valid slots of every erase unit.
    #[inline]
    pub(super) fn valid_counts(&self) -> &[u32] {
        &self.leb_valid
    }

    /// Maps `lba` to slot `psa` (in erase unit `leb`), which held nothing;
    /// the slot it mapped to before (`old`, or `UNMAPPED`) becomes stale.
    /// `seq` is the slot's out-of-band sequence number, if tracked.
    #[inline]
    pub(super) fn map(&mut self, lba: u32, psa: u32, leb: u32, old: u32, seq: u64) {
        debug_assert_eq!(leb, psa / self.spl);
        if old != UNMAPPED {
            self.leb_valid[(old / self.spl) as usize] -= 1;
            self.clear_valid(old);
        }
        self.set_valid(psa);
        if !self.oob_seq.is_empty() {
            self.oob_seq[psa as usize] = seq;
        }
        self.l2p[lba as usize] = psa;
        self.p2l[psa as usize] = lba;
        self.leb_valid[leb as usize] += 1;
    }

    /// Unmaps `lba` (a trim); its slot, if any, becomes stale.
    #[inline]
    pub(super) fn unmap(&mut self, lba: u64) {
        let old = self.l2p[lba as usize];
        if old != UNMAPPED {
            self.leb_valid[(old / self.spl) as usize] -= 1;
            self.clear_valid(old);
            self.l2p[lba as usize] = UNMAPPED;
        }
    }

    /// The run of mapped sectors from `i` (before `end`) that lie in one
    /// write unit: that unit and the run's length; `None` if `i` is unmapped.
    #[inline]
    pub(super) fn unit_run(&self, i: u64, end: u64) -> Option<(u32, u64)> {
        let psa = self.l2p[i as usize];
        if psa == UNMAPPED {
            return None;
        }
        let unit = psa / self.spu;
        let mut n = 1u64;
        while i + n < end && {
            let p = self.l2p[(i + n) as usize];
            p != UNMAPPED && p / self.spu == unit
        } {
            n += 1;
        }
        Some((unit, n))
    }

    /// See [`super::Vsl::prefetch`].
    #[inline]
    pub(super) fn prefetch(&self, lba: u64, deep: bool) {
        let Some(entry) = self.l2p.get(lba as usize) else {
            return;
        };
        if !deep {
            prefetch_line(entry);
        } else if *entry != UNMAPPED {
            if let Some(word) = self.valid_bits.get((*entry / 64) as usize) {
                prefetch_line(word);
            }
        }
    }

    /// Starts loading the map entry of the sector in slot `psa`, if any
    /// (a GC move ahead rewrites it; a stale slot prefetches harmlessly).
    #[inline]
    pub(super) fn prefetch_entry_of_slot(&self, psa: u32) {
        if let Some(&lba) = self.p2l.get(psa as usize) {
            if let Some(entry) = self.l2p.get(lba as usize) {
                prefetch_line(entry);
            }
        }
    }

    #[inline]
    pub(super) fn is_valid(&self, psa: u32) -> bool {
        self.valid_bits[(psa / 64) as usize] & (1 << (psa % 64)) != 0
    }

    #[inline]
    fn set_valid(&mut self, psa: u32) {
        self.valid_bits[(psa / 64) as usize] |= 1 << (psa % 64);
    }

    #[inline]
    fn clear_valid(&mut self, psa: u32) {
        self.valid_bits[(psa / 64) as usize] &= !(1 << (psa % 64));
    }

    /// First valid slot in `from..end`.
    pub(super) fn next_valid(&self, from: u32, end: u32) -> Option<u32> {
        let mut psa = from;
        while psa < end {
            let word = self.valid_bits[(psa / 64) as usize] >> (psa % 64);
            if word != 0 {
                let hit = psa + word.trailing_zeros();
                return (hit < end).then_some(hit);
            }
            psa = (psa / 64 + 1) * 64;
        }
        None
    }

    /// Valid slots in `from..end`.
    pub(super) fn count_valid(&self, from: u32, end: u32) -> u32 {
        let mut n = 0;
        let mut psa = from;
        while psa < end {
            let bit = psa % 64;
            let take = (64 - bit).min(end - psa);
            let mask = if take == 64 {
                u64::MAX
            } else {
                (1u64 << take) - 1
            };
            n += ((self.valid_bits[(psa / 64) as usize] >> bit) & mask).count_ones();
            psa += take;
        }
        n
    }

    /// Appends to `out` the runs of erase unit `leb`'s slots that hold no
    /// current data, as `(first slot within the unit, slots)`.
    pub(super) fn stale_runs(&self, leb: u32, out: &mut Vec<(u32, u32)>) {
        let base = leb * self.spl;
        let mut i = 0;
        while i < self.spl {
            if self.is_valid(base + i) {
                i += 1;
                continue;
            }
            let from = i;
            while i < self.spl && !self.is_valid(base + i) {
                i += 1;
            }
            out.push((from, i - from));
        }
    }

    /// Cross-checks the map, the out-of-band records, the valid bits and
    /// the valid counts; `unusable(leb)` names why data may not lie in a
    /// unit (free, reserved, retired), if so. Panics with the first
    /// inconsistency.
    pub(super) fn check(&self, unusable: impl Fn(u32) -> Option<&'static str>) {
        let mut valid = vec![0u32; self.leb_valid.len()];
        for (lba, &psa) in self.l2p.iter().enumerate() {
            if psa == UNMAPPED {
                continue;
            }
            assert_eq!(
                self.p2l[psa as usize], lba as u32,
                "p2l disagrees for lba {lba}"
            );
            let leb = psa / self.spl;
            if let Some(why) = unusable(leb) {
                panic!("lba {lba} maps into a {why} unit");
            }
            valid[leb as usize] += 1;
        }
        assert_eq!(valid, self.leb_valid, "valid counts disagree with the map");
        for psa in 0..self.p2l.len() as u32 {
            let lba = self.p2l[psa as usize];
            let current = lba != UNMAPPED && self.l2p[lba as usize] == psa;
            assert_eq!(
                self.is_valid(psa),
                current,
                "valid bit of slot {psa} is wrong"
            );
        }
    }

    /// Recovery: slot `psa` holds `lba` written by host write `seq`.
    pub(super) fn restore_record(&mut self, psa: u32, lba: u32, seq: u64) {
        self.p2l[psa as usize] = lba;
        self.oob_seq[psa as usize] = seq;
    }

    /// Recovery: `lba`'s current copy is in slot `psa` (valid bits and
    /// counts are rebuilt by [`Mapping::rebuild_valid`]).
    pub(super) fn restore_entry(&mut self, lba: u32, psa: u32) {
        self.l2p[lba as usize] = psa;
    }

    /// Recovery: recomputes the valid bits and counts from the map.
    pub(super) fn rebuild_valid(&mut self) {
        self.leb_valid.iter_mut().for_each(|v| *v = 0);
        self.valid_bits.iter_mut().for_each(|w| *w = 0);
        for i in 0..self.l2p.len() {
            let psa = self.l2p[i];
            if psa != UNMAPPED {
                self.leb_valid[(psa / self.spl) as usize] += 1;
                self.set_valid(psa);
            }
        }
    }

    /// Recovery: forgets the out-of-band records of erase unit `leb`
    /// (it holds no current data and is erased).
    pub(super) fn clear_leb(&mut self, leb: u32) {
        let base = (leb * self.spl) as usize;
        let end = base + self.spl as usize;
        self.p2l[base..end].fill(UNMAPPED);
        if !self.oob_seq.is_empty() {
            self.oob_seq[base..end].fill(0);
        }
    }
}

/// Walks the mapped runs of a logical range (each as
/// [`Mapping::unit_run`] gives it), skipping unmapped sectors: the read
/// loop, written once for plain reads and reads with Flashback. A cursor
/// rather than an iterator, so the loop body may change the rest of the
/// VSL between runs.
pub(super) struct UnitRuns {
    i: u64,
    end: u64,
}

impl UnitRuns {
    pub(super) fn new(start: u64, end: u64) -> UnitRuns {
        UnitRuns { i: start, end }
    }

    /// The next run: (first logical sector, sectors, write unit).
    #[inline]
    pub(super) fn next(&mut self, map: &Mapping) -> Option<(u64, u64, u32)> {
        while self.i < self.end {
            match map.unit_run(self.i, self.end) {
                None => self.i += 1,
                Some((unit, n)) => {
                    let i = self.i;
                    self.i += n;
                    return Some((i, n, unit));
                }
            }
        }
        None
    }
}
