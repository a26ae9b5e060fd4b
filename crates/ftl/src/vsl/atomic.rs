//! Atomic vectored writes (the card's native API) and the hooks of the
//! power-cut model (`crate::protect`).

use super::{FtlError, GcMode, LebState, PowerEvent, Vsl};
use crate::protect::PowerLog;
use sim::Nanos;

impl Vsl {
    /// Starts recording [`PowerEvent`]s (a [`PowerLog`] observer); drain
    /// them with [`Vsl::drain_power_log`] after every call.
    pub fn enable_power_log(&mut self) {
        if !self.obs.has::<PowerLog>() {
            self.add_observer(Box::new(PowerLog::with_capacity(4 * self.spu as usize)));
        }
    }

    /// Moves the recorded events, oldest first, into `out`.
    pub fn drain_power_log(&mut self, out: &mut Vec<PowerEvent>) {
        if let Some(log) = self.obs.find_mut::<PowerLog>() {
            log.drain(out);
        }
    }

    /// The erase unit the log is filling.
    pub fn frontier_leb(&self) -> u32 {
        self.blocks.frontier_leb()
    }

    /// Physical slots in one write unit.
    pub fn slots_per_unit(&self) -> u32 {
        self.spu
    }

    /// The largest atomic write, in sectors: the write buffer.
    pub fn max_atomic_sectors(&self) -> u64 {
        self.buffer.cap()
    }

    /// Writes every range of `writes` and trims every range of `trims`
    /// (`(start, count)` in sectors) all-or-nothing across a power cut, the
    /// host's data ready at `ready`; returns when the write may be
    /// acknowledged. The sectors get consecutive sequence numbers in the
    /// order given; their out-of-band records carry the group, the last
    /// one marks its end, and recovery discards a group whose end is not
    /// on the media (`crate::protect`); the trims are noted first, with
    /// the group, and count only with it. Log space for the whole group is
    /// made (by GC) before any of it is placed, and no GC runs while it is
    /// placed, so the data it replaces stays on the media until the group
    /// is whole. Ranges must not overlap; the written sectors must fit in
    /// the write buffer.
    pub fn atomic_write(
        &mut self,
        ready: Nanos,
        writes: &[(u64, u64)],
        trims: &[(u64, u64)],
    ) -> Result<Nanos, FtlError> {
        let mut all: Vec<(u64, u64)> = writes.iter().chain(trims).copied().collect();
        if all.is_empty() {
            return Err(FtlError::Atomic("no range to write or trim".into()));
        }
        for &(start, count) in &all {
            self.check_range(start, count)?;
        }
        all.sort_unstable();
        if let Some(w) = all.windows(2).find(|w| w[0].0 + w[0].1 > w[1].0) {
            return Err(FtlError::Atomic(format!(
                "ranges {}+{} and {}+{} overlap",
                w[0].0, w[0].1, w[1].0, w[1].1
            )));
        }
        let total: u64 = writes.iter().map(|r| r.1).sum();
        if total > self.buffer.cap() {
            return Err(FtlError::Atomic(format!(
                "{total} sectors exceed the {} sectors of the power-cut-protected buffer",
                self.buffer.cap()
            )));
        }
        self.nand.advance(ready);
        self.make_room(ready, total)?;
        if total > 0 && self.obs.on() {
            let first = self.stats.host_sectors_written + 1;
            self.obs.each(|o| o.atomic_begin(first, first + total - 1));
        }
        // The trims first: their notes carry the group, so they count only
        // if the group's last sector reaches the media.
        for &(start, count) in trims {
            self.trim(start, count)?;
        }
        // No GC while the group is placed: `make_room` made its space.
        let mut t = ready;
        let mut seq = self.stats.host_sectors_written;
        for &(start, count) in writes {
            t = self.place_host(t, start, count, seq + 1, false);
            seq += count;
        }
        self.stats.host_sectors_written += total;
        if total > 0 {
            if self.obs.on() {
                self.obs.each(|o| o.atomic_end());
            }
            if self.cfg.gc_mode == GcMode::Paced {
                self.pace(t, total);
            }
        }
        Ok(t)
    }

    /// Runs foreground GC until `sectors` fit in free erase units beyond
    /// the GC reserve, so placing them needs no GC.
    fn make_room(&mut self, t: Nanos, sectors: u64) -> Result<(), FtlError> {
        let needed = sectors.div_ceil(self.spl as u64) as usize + 1;
        let want = self.cfg.gc_reserve_lebs as usize + needed;
        let mut rounds = 0u32;
        while self.blocks.free_len() < want {
            rounds += 1;
            let reclaimable = self.gc.collecting()
                || self
                    .blocks
                    .states()
                    .iter()
                    .zip(self.map.valid_counts())
                    .any(|(s, &v)| *s == LebState::Closed && v < self.spl);
            if !reclaimable && self.blocks.gc_group_len() > 0 {
                // Erased units held back for their group are usable now.
                self.release_gc_group();
                continue;
            }
            if rounds > 2 * self.cfg.geometry.lebs() || !reclaimable {
                return Err(FtlError::Atomic(format!(
                    "no room for {sectors} sectors: GC cannot free {want} erase units"
                )));
            }
            match self.cfg.gc_mode {
                GcMode::Legacy => self.collect_one(t),
                GcMode::Paced => {
                    if !self.gc.collecting() && !self.start_victim(true) {
                        return Err(FtlError::Atomic(format!(
                            "no room for {sectors} sectors: nothing to collect"
                        )));
                    }
                    self.finish_victim(t);
                }
            }
        }
        Ok(())
    }

    /// Runs GC at `t` until the GC reserve is free again (after a
    /// recovery that found GC mid-way); stops early if nothing can be
    /// reclaimed.
    pub fn restore_reserve(&mut self, t: Nanos) {
        let want = self.cfg.gc_reserve_lebs as usize;
        for _ in 0..2 * self.cfg.geometry.lebs() {
            if self.blocks.free_len() >= want {
                return;
            }
            if self.blocks.gc_group_len() > 0 {
                self.release_gc_group();
                continue;
            }
            let reclaimable = self
                .blocks
                .states()
                .iter()
                .zip(self.map.valid_counts())
                .any(|(s, &v)| *s == LebState::Closed && v < self.spl);
            if !reclaimable {
                return;
            }
            self.collect_one(t);
        }
    }
}
