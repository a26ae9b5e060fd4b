//! Flashback: die-level parity (24 data dies + 1 parity die per stripe),
//! die-failure injection, reads rebuilt from parity, adaptive rebuild of a
//! failed die into reserve space, and exact accounting of lost sectors.
//!
//! The model keeps no user data, so each programmed slot holds a 32-bit
//! *content tag* (a hash of its logical sector and the sequence number of
//! the host write that produced it) and each stripe row holds the XOR of
//! its data dies' tags (the parity die's content). A failed die's tags are
//! destroyed (inverted) when it fails and whenever a unit is programmed on
//! it while it is dead; reading one back XORs the parity with the other
//! members of its stripe, so a rebuild is real and checkable: the tag read
//! back is compared with the tag of what the map says the sector holds.
//!
//! Layout: slot `s` of a write unit lives on data die `s / spd` of the
//! unit's bank at row `s % spd` (`spd`: slots per die page); the parity die
//! is the last channel. Die `d` of a member is channel `d % channels` of
//! bank `d / channels`.
//!
//! Everything here runs only when [`Vsl::enable_reliability`] was called:
//! the default path pays one `Option` test per read, write, trim, placed
//! sector, programmed unit and erase.

use super::media::{MediaConfig, MediaState};
use super::{FtlError, LebState, Origin, Vsl, UNMAPPED};
use serde::Serialize;
use sim::Nanos;
use std::collections::BTreeSet;

/// What to model beyond the default (failure-free) path.
#[derive(Clone, Debug)]
pub struct ReliabilityConfig {
    /// Dies to fail, with the virtual time of the failure.
    pub fail_dies: Vec<(u32, Nanos)>,
    /// Adaptive Flashback: rebuild a failed die into reserve space and map
    /// it out. Off: the die stays failed and its reads are rebuilt forever.
    pub adaptive: bool,
    /// Share of the failed die's bank time the rebuild may take.
    pub rebuild_share: f64,
    /// Spare erase-unit equivalents the card can give a failed die
    /// (the bad-block pool left); [`Vsl::set_die_spare_budget`] updates it.
    pub spare_budget_lebs: u32,
    /// Raw bit errors, ECC, read retry and read disturb (`None`: off).
    pub media: Option<MediaConfig>,
    /// Rebuild reads from parity (always on in a real card; tests turn it
    /// off to show the checks catch the corruption that follows).
    pub parity_rebuild: bool,
}

impl Default for ReliabilityConfig {
    fn default() -> ReliabilityConfig {
        ReliabilityConfig {
            fail_dies: Vec::new(),
            adaptive: true,
            rebuild_share: REBUILD_SHARE,
            spare_budget_lebs: u32::MAX,
            media: None,
            parity_rebuild: true,
        }
    }
}

/// Share of the failed die's bank the adaptive rebuild may use (docs/MODEL.md).
pub const REBUILD_SHARE: f64 = 0.5;

/// Counters of failures, rebuilds, media errors and data loss.
#[derive(Copy, Clone, Debug, Default, Serialize, PartialEq)]
pub struct ReliabilityStats {
    pub dies_failed: u32,
    /// Dies whose data was rebuilt into reserve space (adaptive).
    pub dies_rebuilt: u32,
    /// Host sectors read back by XOR of the other members of their stripe.
    pub degraded_sector_reads: u64,
    /// Stripes (die pages) the adaptive rebuild reconstructed.
    pub rebuild_stripes: u64,
    /// Virtual time of the longest completed rebuild (failure to last page
    /// rewritten), seconds.
    pub rebuild_s: f64,
    /// Erase-unit equivalents of spare blocks given to failed dies.
    pub die_spare_lebs: u32,
    /// Sectors lost (no parity could rebuild them), ever.
    pub lost_sectors: u64,
    /// Sectors lost and not rewritten or trimmed since.
    pub lost_sectors_now: u64,
    /// Host reads refused with an I/O error because they touch lost sectors.
    pub read_errors: u64,
    /// Sectors read back with content other than the map says, without an
    /// error: silent corruption. Zero unless the model is broken.
    pub silent_corruptions: u64,
    /// Raw bit errors ECC corrected (expected value over the codewords read).
    pub corrected_bits: u64,
    /// Extra reads with shifted reference voltages after an ECC failure.
    pub read_retries: u64,
    /// Reads ECC could not correct even after retries.
    pub uncorrectable_reads: u64,
    /// Of those, reads parity rebuilt.
    pub parity_rebuilt_reads: u64,
    /// Erase units relocated because reads disturbed them.
    pub read_disturb_refreshes: u64,
    /// Erase units relocated and retired because their error rate was too high.
    pub error_retired_lebs: u64,
}

/// One failed die.
#[derive(Clone, Debug)]
struct FailedDie {
    bank: u32,
    channel: u32,
    at: Nanos,
    /// Per erase unit: the die's block there has been replaced by a spare
    /// (rebuilt, or erased after the failure and so written to the spare).
    remapped: Vec<bool>,
    /// Per write unit: programmed after the failure, its page for this die
    /// went to the spare block (adaptive only).
    spared: Vec<bool>,
    adaptive: bool,
    cursor: u32,
    next_at: Nanos,
    done: bool,
}

/// The state behind [`Vsl::enable_reliability`].
pub(super) struct Reliability {
    cfg: ReliabilityConfig,
    pending: Vec<(u32, Nanos)>,
    failed: Vec<FailedDie>,
    /// Content tag of every physical slot (what its die holds).
    tags: Vec<u32>,
    /// XOR of the data tags of each stripe row (what the parity die holds).
    parity: Vec<u32>,
    /// Slots per die page, data channels, parity channels.
    spd: u32,
    dc: u32,
    pc: u32,
    lost: BTreeSet<u32>,
    lost_ever: BTreeSet<u32>,
    pub(super) media: Option<MediaState>,
    pub(super) stats: ReliabilityStats,
    /// Erase units flagged for relocation (read disturb, error rate).
    pub(super) refresh: Vec<u32>,
}

/// Content tag of logical sector `lba` as written by host write `seq`.
#[inline]
pub fn content_tag(lba: u32, seq: u64) -> u32 {
    let mut x = (lba as u64) ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x as u32
}

impl Vsl {
    /// Turns on Flashback parity state, die failures and (optionally) the
    /// media-error model. Call before the first write. Also turns on the
    /// slots' sequence numbers (content tags are made from them).
    pub fn enable_reliability(&mut self, cfg: ReliabilityConfig) -> Result<(), FtlError> {
        if self.pools.is_some() {
            return Err(FtlError::Config(
                "Flashback follows one log frontier: use --placement single with it".into(),
            ));
        }
        let g = self.cfg.geometry;
        for &(die, _) in &cfg.fail_dies {
            if die >= g.dies() {
                return Err(FtlError::Config(format!(
                    "die {die} does not exist: a member has {} dies (0..{})",
                    g.dies(),
                    g.dies() - 1
                )));
            }
        }
        if !(cfg.rebuild_share > 0.0 && cfg.rebuild_share <= 1.0) {
            return Err(FtlError::Config(format!(
                "rebuild share {} must be in (0, 1]",
                cfg.rebuild_share
            )));
        }
        let slots = self.map.slots();
        self.map.track_sequence();
        let dc = g.data_channels();
        let spd = self.spu.div_ceil(dc);
        let units = slots / self.spu as usize;
        let mut pending = cfg.fail_dies.clone();
        pending.sort_by_key(|&(d, at)| (at, d));
        let media = cfg
            .media
            .clone()
            .map(|m| MediaState::new(m, g.lebs(), g.banks));
        self.rel = Some(Box::new(Reliability {
            pending,
            failed: Vec::new(),
            tags: vec![0; slots],
            parity: vec![0; units * spd as usize],
            spd,
            dc,
            pc: g.parity_channels,
            lost: BTreeSet::new(),
            lost_ever: BTreeSet::new(),
            media,
            stats: ReliabilityStats::default(),
            refresh: Vec::new(),
            cfg,
        }));
        // A recovered device already holds data: tag it and compute its
        // parity as the card wrote it.
        let upl = g.units_per_leb();
        for leb in 0..g.lebs() {
            for u in 0..self.programmed_units(leb) {
                let unit = leb * upl + u;
                let mut r = self.rel.take().expect("just set");
                for psa in unit * self.spu..(unit + 1) * self.spu {
                    let lba = self.map.lba_at(psa);
                    if lba != UNMAPPED {
                        r.tags[psa as usize] = content_tag(lba, self.map.seq_at(psa));
                    }
                }
                self.rel = Some(r);
                self.rel_programmed(unit, Nanos::ZERO);
            }
        }
        Ok(())
    }

    /// Schedules more die failures (die, time); they happen at the first
    /// I/O at or after their time.
    pub fn schedule_die_failures(
        &mut self,
        dies: impl IntoIterator<Item = (u32, Nanos)>,
    ) -> Result<(), FtlError> {
        let n = self.cfg.geometry.dies();
        let r = self
            .rel
            .as_mut()
            .ok_or_else(|| FtlError::Config("reliability modelling is off".into()))?;
        for (die, at) in dies {
            if die >= n {
                return Err(FtlError::Config(format!(
                    "die {die} does not exist: a member has {n} dies (0..{})",
                    n - 1
                )));
            }
            r.pending.push((die, at));
        }
        r.pending.sort_by_key(|&(d, at)| (at, d));
        Ok(())
    }

    /// Failure, rebuild, media-error and loss counters (None when off).
    pub fn reliability_stats(&self) -> Option<ReliabilityStats> {
        self.rel.as_ref().map(|r| {
            let mut s = r.stats;
            s.lost_sectors_now = r.lost.len() as u64;
            s.lost_sectors = r.lost_ever.len() as u64;
            s
        })
    }

    /// Every logical sector (of this member) ever lost, ascending.
    pub fn lost_sectors_ever(&self) -> Vec<u32> {
        self.rel
            .as_ref()
            .map(|r| r.lost_ever.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Logical sectors lost now (not rewritten or trimmed since), ascending.
    pub fn lost_sectors(&self) -> Vec<u32> {
        self.rel
            .as_ref()
            .map(|r| r.lost.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The spare erase-unit equivalents a newly failed die may still take
    /// (the health model's bad-block pool left).
    pub fn set_die_spare_budget(&mut self, lebs: u32) {
        if let Some(r) = self.rel.as_mut() {
            r.cfg.spare_budget_lebs = lebs;
        }
    }

    /// True when reads found erase unit `leb` too error-prone to keep.
    pub fn error_prone_leb(&self, leb: u32) -> bool {
        self.rel
            .as_ref()
            .and_then(|r| r.media.as_ref())
            .is_some_and(|m| m.flagged(leb))
    }

    /// Spare erase-unit equivalents given to failed dies so far.
    pub fn die_spare_lebs(&self) -> u32 {
        self.rel.as_ref().map_or(0, |r| r.stats.die_spare_lebs)
    }

    /// Turns parity rebuild off or on (tests: shows the checks detect the
    /// corruption a card without Flashback would return).
    pub fn set_parity_rebuild(&mut self, on: bool) {
        if let Some(r) = self.rel.as_mut() {
            r.cfg.parity_rebuild = on;
        }
    }

    /// Die (`bank * channels + channel`) and row of physical slot `psa`.
    pub fn slot_die(&self, psa: u32) -> (u32, u32) {
        let r = self.rel.as_ref().expect("reliability is enabled");
        let (bank, ch, _row) = self.slot_place(r, psa);
        (
            bank * self.cfg.geometry.channels + ch,
            psa % self.spu % r.spd,
        )
    }

    /// True when slot `psa`'s write unit has been programmed to NAND.
    pub fn is_programmed(&self, psa: u32) -> bool {
        let leb = psa / self.spl;
        (psa % self.spl) / self.spu < self.programmed_units(leb)
    }

    /// The content tag a read of logical sector `lba` returns now: the
    /// data as ECC and parity deliver it. `Ok(None)`: unwritten; `Err`: the
    /// sector is lost (the read fails with an I/O error).
    pub fn read_content(&self, lba: u64) -> Result<Option<u32>, FtlError> {
        let r = self.rel.as_ref().expect("reliability is enabled");
        let Some(psa) = self.lookup(lba) else {
            return Ok(None);
        };
        if r.lost.contains(&(lba as u32)) {
            return Err(FtlError::Lost {
                lba,
                count: 1,
                done: Nanos::ZERO,
            });
        }
        if !self.is_programmed(psa) {
            // Still in the power-cut-protected buffer.
            return Ok(Some(r.tags[psa as usize]));
        }
        Ok(Some(self.read_tag(r, psa).unwrap_or(0)))
    }

    /// Bank, channel and row of slot `psa`.
    #[inline]
    fn slot_place(&self, r: &Reliability, psa: u32) -> (u32, u32, u32) {
        let unit = psa / self.spu;
        let s = psa % self.spu;
        (self.bank_of_unit(unit), s / r.spd, s % r.spd)
    }

    pub(super) fn programmed_units(&self, leb: u32) -> u32 {
        if leb == self.blocks.frontier_leb() {
            return self.blocks.frontier_next() / self.spu;
        }
        match self.blocks.state(leb) {
            LebState::Free | LebState::Reserved | LebState::Retired => 0,
            _ => self.cfg.geometry.units_per_leb(),
        }
    }

    /// Failed dies of `bank` not yet replaced in erase unit `leb`.
    fn dead_channels(
        r: &Reliability,
        bank: u32,
        unit: u32,
        upl: u32,
    ) -> impl Iterator<Item = u32> + '_ {
        r.failed
            .iter()
            .filter(move |f| f.bank == bank && f.dead_in(unit, upl))
            .map(|f| f.channel)
    }

    fn is_dead(r: &Reliability, bank: u32, ch: u32, unit: u32, upl: u32) -> bool {
        r.failed
            .iter()
            .any(|f| f.bank == bank && f.channel == ch && f.dead_in(unit, upl))
    }

    /// What slot `psa` reads back: its die's tag, or, when the die has
    /// failed, the parity XOR the other data dies of its stripe row. None
    /// when the stripe has lost more members than it has parity.
    fn read_tag(&self, r: &Reliability, psa: u32) -> Option<u32> {
        let (bank, ch, row) = self.slot_place(r, psa);
        let upl = self.cfg.geometry.units_per_leb();
        if r.failed.is_empty() || !Self::is_dead(r, bank, ch, psa / self.spu, upl) {
            return Some(r.tags[psa as usize]);
        }
        if !r.cfg.parity_rebuild {
            return Some(r.tags[psa as usize]);
        }
        self.reconstruct(r, psa / self.spu, ch, row, bank)
    }

    /// Rebuilds data channel `ch`'s tag at `row` of `unit` from the parity
    /// and the other data dies.
    fn reconstruct(&self, r: &Reliability, unit: u32, ch: u32, row: u32, bank: u32) -> Option<u32> {
        let upl = self.cfg.geometry.units_per_leb();
        if Self::dead_channels(r, bank, unit, upl).any(|c| c != ch) {
            return None;
        }
        let mut v = r.parity[(unit * r.spd + row) as usize];
        let base = unit * self.spu;
        for c in 0..r.dc {
            let s = c * r.spd + row;
            if c != ch && s < self.spu {
                v ^= r.tags[(base + s) as usize];
            }
        }
        Some(v)
    }

    /// Hook: a sector was placed at slot `psa` (its tag is what the host
    /// wrote, or what GC read back from the slot it moved from).
    pub(super) fn rel_place(&mut self, t: Nanos, psa: u32, lba: u32, origin: Origin) {
        let mut r = self.rel.take().expect("checked by the caller");
        let tag = match origin {
            Origin::Host(seq) => content_tag(lba, seq),
            Origin::Moved(from) => {
                let (bank, ch, _) = self.slot_place(&r, from);
                let upl = self.cfg.geometry.units_per_leb();
                if !r.failed.is_empty() && Self::is_dead(&r, bank, ch, from / self.spu, upl) {
                    // GC reads the rest of the stripe row to rebuild it.
                    let bytes = (r.dc - 1) as u64 * self.cfg.sector_bytes as u64;
                    self.nand.read_unit(t, bank, bytes);
                }
                self.read_tag(&r, from)
                    .unwrap_or(!content_tag(lba, self.map.seq_at(from)))
            }
        };
        r.tags[psa as usize] = tag;
        self.rel = Some(r);
    }

    /// Hook: write unit `unit` was programmed, complete at `done`: the
    /// parity die gets the XOR of the data dies; dead dies keep nothing.
    pub(super) fn rel_programmed(&mut self, unit: u32, done: Nanos) {
        let mut r = self.rel.take().expect("checked by the caller");
        let base = unit * self.spu;
        for row in 0..r.spd {
            let mut p = 0;
            for c in 0..r.dc {
                let s = c * r.spd + row;
                if s < self.spu {
                    p ^= r.tags[(base + s) as usize];
                }
            }
            r.parity[(unit * r.spd + row) as usize] = p;
        }
        let upl = self.cfg.geometry.units_per_leb();
        let leb = unit / upl;
        if !r.failed.is_empty() {
            // An adaptive card writes a failed die's page to its spare
            // block; a basic one loses it (parity still covers it).
            let bank = self.bank_of_unit(unit);
            for f in r.failed.iter_mut() {
                if f.adaptive && f.bank == bank && f.dead_in(unit, upl) {
                    f.spared[unit as usize] = true;
                }
            }
            let dead: Vec<u32> = Self::dead_channels(&r, bank, unit, upl).collect();
            for &ch in &dead {
                Self::garble_die_page(&mut r, self.spu, unit, ch);
            }
            if dead.len() as u32 > r.pc {
                self.mark_lost(&mut r, unit, &dead);
            }
        }
        if let Some(m) = r.media.as_mut() {
            m.programmed(leb, unit.is_multiple_of(upl), done);
        }
        self.rel = Some(r);
    }

    /// Destroys what die channel `ch` holds in `unit` (data or parity).
    fn garble_die_page(r: &mut Reliability, spu: u32, unit: u32, ch: u32) {
        if ch >= r.dc {
            for row in 0..r.spd {
                let i = (unit * r.spd + row) as usize;
                r.parity[i] = !r.parity[i];
            }
            return;
        }
        for row in 0..r.spd {
            let s = ch * r.spd + row;
            if s < spu {
                let i = (unit * spu + s) as usize;
                r.tags[i] = !r.tags[i];
            }
        }
    }

    /// Hook: erase unit `leb` was erased: its tags go, and failed dies get
    /// a spare block there for what is written next.
    pub(super) fn rel_erased(&mut self, leb: u32) {
        let mut r = self.rel.take().expect("checked by the caller");
        let spl = self.spl as usize;
        let l = leb as usize;
        r.tags[l * spl..(l + 1) * spl].fill(0);
        let upl = self.cfg.geometry.units_per_leb() as usize;
        let rows = r.spd as usize * upl;
        r.parity[l * rows..(l + 1) * rows].fill(0);
        for f in &mut r.failed {
            if f.adaptive {
                f.remapped[l] = true;
            }
        }
        if let Some(m) = r.media.as_mut() {
            m.erased(leb);
        }
        self.rel = Some(r);
    }

    /// Hook at the start of every host I/O: injects due die failures,
    /// advances rebuilds, and (writes, trims) forgets lost sectors that are
    /// being rewritten; with `relocate`, moves flagged units. A store that
    /// mirrors GC moves (`vsl attach`) replays them after writes only, so
    /// there reads never move data.
    pub(super) fn rel_before_io(
        &mut self,
        now: Nanos,
        rewritten: Option<(u64, u64)>,
        relocate: bool,
    ) {
        let mut r = self.rel.take().expect("checked by the caller");
        if let Some((start, count)) = rewritten {
            if !r.lost.is_empty() {
                let (a, b) = (start as u32, (start + count) as u32);
                let gone: Vec<u32> = r.lost.range(a..b).copied().collect();
                for l in gone {
                    r.lost.remove(&l);
                }
            }
        }
        while r.pending.first().is_some_and(|&(_, at)| at <= now) {
            let (die, at) = r.pending.remove(0);
            self.fail_die(&mut r, die, at);
        }
        if r.failed.iter().any(|f| !f.done) {
            self.advance_rebuilds(&mut r, now);
        }
        let refresh = if relocate {
            std::mem::take(&mut r.refresh)
        } else {
            Vec::new()
        };
        self.rel = Some(r);
        if !refresh.is_empty() {
            self.relocate(now, refresh);
        }
    }

    /// Fails die `die` at `at`: destroys what it holds, records which
    /// sectors are now beyond parity, and (adaptive, spares left) starts
    /// rebuilding it.
    fn fail_die(&mut self, r: &mut Reliability, die: u32, at: Nanos) {
        let g = self.cfg.geometry;
        let (bank, ch) = (die / g.channels, die % g.channels);
        if r.failed.iter().any(|f| f.bank == bank && f.channel == ch) {
            return;
        }
        let lebs = g.lebs();
        let need = lebs.div_ceil(g.channels * g.banks);
        let adaptive = r.cfg.adaptive && r.cfg.spare_budget_lebs >= need;
        if adaptive {
            r.stats.die_spare_lebs += need;
            r.cfg.spare_budget_lebs -= need;
        }
        r.stats.dies_failed += 1;
        r.failed.push(FailedDie {
            bank,
            channel: ch,
            at,
            remapped: vec![false; lebs as usize],
            spared: vec![
                false;
                if adaptive {
                    r.parity.len() / r.spd as usize
                } else {
                    0
                }
            ],
            adaptive,
            cursor: 0,
            next_at: at,
            done: !adaptive,
        });
        let upl = g.units_per_leb();
        for leb in 0..lebs {
            let programmed = self.programmed_units(leb);
            for u in (0..programmed).filter(|&u| u % g.banks == bank) {
                let unit = leb * upl + u;
                Self::garble_die_page(r, self.spu, unit, ch);
                let dead: Vec<u32> = Self::dead_channels(r, bank, unit, upl).collect();
                if dead.len() as u32 > r.pc {
                    self.mark_lost(r, unit, &dead);
                }
            }
        }
    }

    /// Records the valid sectors on the failed data dies `dead` of `unit`
    /// as lost.
    fn mark_lost(&self, r: &mut Reliability, unit: u32, dead: &[u32]) {
        for &c in dead.iter().filter(|&&c| c < r.dc) {
            for row in 0..r.spd {
                let s = c * r.spd + row;
                let psa = unit * self.spu + s;
                if s < self.spu && self.map.is_valid(psa) {
                    let lba = self.map.lba_at(psa);
                    r.lost.insert(lba);
                    r.lost_ever.insert(lba);
                }
            }
        }
    }

    /// Runs the adaptive rebuilds up to `now`: one erase unit at a time,
    /// every programmed page of the failed die there is rebuilt from its
    /// stripe (a full stripe read on the bank) and programmed to a spare,
    /// pacing itself to `rebuild_share` of the bank's time.
    fn advance_rebuilds(&mut self, r: &mut Reliability, now: Nanos) {
        let g = self.cfg.geometry;
        let upl = g.units_per_leb();
        let sector = self.cfg.sector_bytes as u64;
        let stripe_bytes = (r.dc + r.pc) as u64 * r.spd as u64 * sector;
        let page_bytes = r.spd as u64 * sector;
        let share = r.cfg.rebuild_share;
        for i in 0..r.failed.len() {
            while !r.failed[i].done && r.failed[i].next_at <= now {
                let f = &r.failed[i];
                let (bank, ch, leb, start) = (f.bank, f.channel, f.cursor, f.next_at);
                if leb >= g.lebs() {
                    let f = &mut r.failed[i];
                    f.done = true;
                    r.stats.dies_rebuilt += 1;
                    let took = (start.0 - f.at.0) as f64 / 1e9;
                    r.stats.rebuild_s = r.stats.rebuild_s.max(took);
                    break;
                }
                let mut done = start;
                if !r.failed[i].remapped[leb as usize] {
                    let programmed = self.programmed_units(leb);
                    for u in (0..programmed).filter(|&u| u % g.banks == bank) {
                        let unit = leb * upl + u;
                        if r.failed[i].adaptive && r.failed[i].spared[unit as usize] {
                            continue;
                        }
                        let read = self.nand.read_unit(start, bank, stripe_bytes);
                        self.rebuild_page(r, unit, bank, ch);
                        done = done.max(self.nand.program_page(read, bank, page_bytes));
                        r.stats.rebuild_stripes += 1;
                    }
                    r.failed[i].remapped[leb as usize] = true;
                }
                let f = &mut r.failed[i];
                f.cursor += 1;
                let busy = (done.0 - start.0) as f64;
                f.next_at = Nanos(done.0 + (busy * (1.0 / share - 1.0)) as u64);
                if done == start {
                    f.next_at = start;
                }
            }
        }
    }

    /// Restores what channel `ch` holds in `unit` from the rest of the
    /// stripe (tags of a data die, or the parity).
    fn rebuild_page(&self, r: &mut Reliability, unit: u32, bank: u32, ch: u32) {
        let base = unit * self.spu;
        for row in 0..r.spd {
            if ch >= r.dc {
                let upl = self.cfg.geometry.units_per_leb();
                let others_dead = Self::dead_channels(r, bank, unit, upl).any(|c| c != ch);
                if !others_dead {
                    let mut p = 0;
                    for c in 0..r.dc {
                        let s = c * r.spd + row;
                        if s < self.spu {
                            p ^= r.tags[(base + s) as usize];
                        }
                    }
                    r.parity[(unit * r.spd + row) as usize] = p;
                }
                continue;
            }
            let s = ch * r.spd + row;
            if s >= self.spu {
                continue;
            }
            if let Some(v) = self.reconstruct(r, unit, ch, row, bank) {
                r.tags[(base + s) as usize] = v;
            }
        }
    }

    /// Relocates flagged erase units (read disturb, too many errors): GC
    /// moves their valid sectors and erases them; the health model retires
    /// those flagged bad once they are free.
    fn relocate(&mut self, now: Nanos, lebs: Vec<u32>) {
        let mut keep = Vec::new();
        for leb in lebs {
            let closed = self.blocks.state(leb) == LebState::Closed;
            if closed && self.blocks.free_len() >= self.cfg.gc_reserve_lebs as usize {
                self.collect_leb(now, leb);
            } else if self.blocks.state(leb) != LebState::Free {
                keep.push(leb);
            }
        }
        if let Some(r) = self.rel.as_mut() {
            r.refresh.extend(keep);
            r.refresh.dedup();
        }
    }

    /// A host read with reliability on: media errors, reads rebuilt from
    /// parity (with their cost), lost sectors (an I/O error) and the check
    /// of every sector read against what the map says it holds.
    pub(super) fn read_reliable(
        &mut self,
        ready: Nanos,
        start: u64,
        count: u64,
    ) -> Result<Nanos, FtlError> {
        // With a data store attached (media log on) only writes relocate.
        self.rel_before_io(ready, None, !self.obs.has::<super::MediaLog>());
        let mut r = self.rel.take().expect("checked by the caller");
        let sector = self.cfg.sector_bytes as u64;
        let mut done = ready;
        let open_unit = self.open_unit_id();
        let mut lost_in_read = 0u64;
        let mut first_lost = None;
        let mut runs = super::UnitRuns::new(start, start + count);
        while let Some((i, n, unit)) = runs.next(&self.map) {
            let upl = self.cfg.geometry.units_per_leb();
            let leb = unit / upl;
            let bank = self.bank_of_unit(unit);
            let in_buffer = Some(unit) == open_unit;
            let mut degraded = 0u64;
            let mut unit_bad = false;
            for lba in i..i + n {
                let p = self.map.slot_of(lba as u32);
                if r.lost.contains(&(lba as u32)) {
                    lost_in_read += 1;
                    first_lost.get_or_insert(lba);
                    continue;
                }
                let (b, ch, _) = self.slot_place(&r, p);
                if !in_buffer && !r.failed.is_empty() && Self::is_dead(&r, b, ch, unit, upl) {
                    degraded += 1;
                }
                let got = if in_buffer {
                    Some(r.tags[p as usize])
                } else {
                    self.read_tag(&r, p)
                };
                let want = content_tag(lba as u32, self.map.seq_at(p));
                if got != Some(want) {
                    if got.is_none() {
                        // The stripe lost two members: the sector is lost.
                        r.lost.insert(lba as u32);
                        r.lost_ever.insert(lba as u32);
                        lost_in_read += 1;
                        first_lost.get_or_insert(lba);
                    } else {
                        r.stats.silent_corruptions += 1;
                    }
                }
            }
            if !in_buffer {
                // The dead die's share comes from the other dc members of
                // each stripe row: dc sectors move per sector rebuilt.
                let bytes = (n - degraded) * sector + degraded * r.dc as u64 * sector;
                let mut t = self.nand.read_unit(ready, bank, bytes);
                r.stats.degraded_sector_reads += degraded;
                if let Some(m) = r.media.as_mut() {
                    let erases = self.nand.erase_count(leb);
                    let out = m.read(leb, bank, erases, n, sector, ready);
                    r.stats.corrected_bits = m.corrected_bits();
                    for _ in 0..out.retries {
                        t = self.nand.read_unit(t, bank, n * sector);
                    }
                    r.stats.read_retries += out.retries as u64;
                    if out.refresh {
                        r.stats.read_disturb_refreshes += 1;
                        r.refresh.push(leb);
                    }
                    if out.retire {
                        r.stats.error_retired_lebs += 1;
                        r.refresh.push(leb);
                    }
                    if out.uncorrectable {
                        r.stats.uncorrectable_reads += 1;
                        // Flashback rebuilds the chunk from the stripe,
                        // unless the stripe already lost a member.
                        let stripe_ok = r.cfg.parity_rebuild
                            && Self::dead_channels(&r, bank, unit, upl).count() == 0;
                        if stripe_ok {
                            r.stats.parity_rebuilt_reads += 1;
                            t = self.nand.read_unit(t, bank, n * r.dc as u64 * sector);
                        } else {
                            unit_bad = true;
                        }
                    }
                }
                done = done.max(t);
            }
            if unit_bad {
                for lba in i..i + n {
                    if r.parity_rebuild_off_corrupts() {
                        let p = self.map.slot_of(lba as u32);
                        r.tags[p as usize] = !r.tags[p as usize];
                        r.stats.silent_corruptions += 1;
                    } else if r.lost.insert(lba as u32) {
                        r.lost_ever.insert(lba as u32);
                        lost_in_read += 1;
                        first_lost.get_or_insert(lba);
                    }
                }
            }
        }
        r.stats.read_errors += (lost_in_read > 0) as u64;
        self.rel = Some(r);
        self.stats.host_sectors_read += count;
        match first_lost {
            Some(lba) => Err(FtlError::Lost {
                lba,
                count: lost_in_read,
                done,
            }),
            None => Ok(done),
        }
    }
}

impl FailedDie {
    /// True when the die's page in write unit `unit` is gone (not on a
    /// spare block).
    #[inline]
    fn dead_in(&self, unit: u32, upl: u32) -> bool {
        !(self.remapped[(unit / upl) as usize] || (self.adaptive && self.spared[unit as usize]))
    }
}

impl Reliability {
    /// With parity rebuild off (a test's broken card), an uncorrectable
    /// read returns wrong data instead of an error.
    fn parity_rebuild_off_corrupts(&self) -> bool {
        !self.cfg.parity_rebuild
    }
}
