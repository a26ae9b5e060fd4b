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
//!
//! [`Flashback`] is one of the VSL's owned parts, not a
//! [`super::MediaObserver`]: it changes what reads return and when, spends
//! NAND time of its own and reads the map's valid bits when a unit is
//! programmed over dead dies (docs/ARCHITECTURE.md, "The FTL's parts").
//! Its event methods ([`Flashback::placed`], [`Flashback::programmed`],
//! [`Flashback::erased`]) are called where the observers are, and each
//! takes what it reads of the VSL (the map, the block manager, the NAND
//! array) as an argument, so no state is taken out of the VSL and put back.

use super::blocks::BlockManager;
use super::media::{MediaConfig, MediaState};
use super::{FtlConfig, FtlError, LebState, Mapping, Origin, UnitRuns, Vsl, UNMAPPED};
use nand::NandArray;
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

/// The geometry Flashback lays its stripes out by (the VSL's).
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// Slots per write unit and per erase unit, write units per erase unit.
    spu: u32,
    spl: u32,
    upl: u32,
    banks: u32,
    channels: u32,
    lebs: u32,
    sector: u64,
}

impl Layout {
    fn of(cfg: &FtlConfig, spu: u32, spl: u32) -> Layout {
        let g = cfg.geometry;
        Layout {
            spu,
            spl,
            upl: g.units_per_leb(),
            banks: g.banks,
            channels: g.channels,
            lebs: g.lebs(),
            sector: cfg.sector_bytes as u64,
        }
    }

    /// The bank write unit `unit` is programmed on.
    #[inline]
    fn bank_of_unit(&self, unit: u32) -> u32 {
        (unit % self.upl) % self.banks
    }

    /// Write units of erase unit `leb` programmed to NAND.
    fn programmed_units(&self, blocks: &BlockManager, leb: u32) -> u32 {
        if leb == blocks.frontier_leb() {
            return blocks.frontier_next() / self.spu;
        }
        match blocks.state(leb) {
            LebState::Free | LebState::Reserved | LebState::Retired | LebState::Parked => 0,
            _ => self.upl,
        }
    }
}

/// Flashback's state: the content of every slot and parity row, the dies
/// failed and being rebuilt, lost sectors, the media-error model.
pub(super) struct Flashback {
    cfg: ReliabilityConfig,
    layout: Layout,
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
    media: Option<MediaState>,
    stats: ReliabilityStats,
    /// Erase units flagged for relocation (read disturb, error rate).
    refresh: Vec<u32>,
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
        self.map.track_sequence();
        let layout = Layout::of(&self.cfg, self.spu, self.spl);
        let mut fb = Flashback::new(cfg, layout, &self.cfg, self.map.slots());
        // A recovered device already holds data: tag it and compute its
        // parity as the card wrote it.
        for leb in 0..g.lebs() {
            for u in 0..layout.programmed_units(&self.blocks, leb) {
                let unit = leb * layout.upl + u;
                fb.tag_unit(&self.map, unit);
                fb.programmed(&self.map, unit, Nanos::ZERO);
            }
        }
        self.flashback = Some(Box::new(fb));
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
            .flashback
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
        self.flashback.as_ref().map(|r| {
            let mut s = r.stats;
            s.lost_sectors_now = r.lost.len() as u64;
            s.lost_sectors = r.lost_ever.len() as u64;
            s
        })
    }

    /// Every logical sector (of this member) ever lost, ascending.
    pub fn lost_sectors_ever(&self) -> Vec<u32> {
        self.flashback
            .as_ref()
            .map(|r| r.lost_ever.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Logical sectors lost now (not rewritten or trimmed since), ascending.
    pub fn lost_sectors(&self) -> Vec<u32> {
        self.flashback
            .as_ref()
            .map(|r| r.lost.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The spare erase-unit equivalents a newly failed die may still take
    /// (the health model's bad-block pool left).
    pub fn set_die_spare_budget(&mut self, lebs: u32) {
        if let Some(r) = self.flashback.as_mut() {
            r.cfg.spare_budget_lebs = lebs;
        }
    }

    /// True when reads found erase unit `leb` too error-prone to keep.
    pub fn error_prone_leb(&self, leb: u32) -> bool {
        self.flashback
            .as_ref()
            .and_then(|r| r.media.as_ref())
            .is_some_and(|m| m.flagged(leb))
    }

    /// Spare erase-unit equivalents given to failed dies so far.
    pub fn die_spare_lebs(&self) -> u32 {
        self.flashback
            .as_ref()
            .map_or(0, |r| r.stats.die_spare_lebs)
    }

    /// Turns parity rebuild off or on (tests: shows the checks detect the
    /// corruption a card without Flashback would return).
    pub fn set_parity_rebuild(&mut self, on: bool) {
        if let Some(r) = self.flashback.as_mut() {
            r.cfg.parity_rebuild = on;
        }
    }

    /// Die (`bank * channels + channel`) and row of physical slot `psa`;
    /// `None` when reliability modelling is off.
    pub fn slot_die(&self, psa: u32) -> Option<(u32, u32)> {
        let r = self.flashback.as_deref()?;
        let (bank, ch, row) = r.slot_place(psa);
        Some((bank * self.cfg.geometry.channels + ch, row))
    }

    /// True when slot `psa`'s write unit has been programmed to NAND.
    pub fn is_programmed(&self, psa: u32) -> bool {
        let layout = Layout::of(&self.cfg, self.spu, self.spl);
        let leb = psa / self.spl;
        (psa % self.spl) / self.spu < layout.programmed_units(&self.blocks, leb)
    }

    /// The content tag a read of logical sector `lba` returns now: the
    /// data as ECC and parity deliver it. `Ok(None)`: unwritten; `Err`: the
    /// sector is lost (the read fails with an I/O error), or reliability
    /// modelling is off.
    pub fn read_content(&self, lba: u64) -> Result<Option<u32>, FtlError> {
        let Some(r) = self.flashback.as_deref() else {
            return Err(FtlError::Config("reliability modelling is off".into()));
        };
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
        Ok(Some(r.read_tag(psa).unwrap_or(0)))
    }

    /// At the start of every host I/O (with Flashback on): injects due die
    /// failures, advances rebuilds, and (writes, trims) forgets lost
    /// sectors that are being rewritten; with `relocate`, moves flagged
    /// units. A store that mirrors GC moves (`vsl attach`) replays them
    /// after writes only, so there reads never move data.
    pub(super) fn flashback_before_io(
        &mut self,
        now: Nanos,
        rewritten: Option<(u64, u64)>,
        relocate: bool,
    ) {
        let Some(fb) = self.flashback.as_deref_mut() else {
            return;
        };
        let refresh = fb.before_io(
            &self.map,
            &self.blocks,
            &mut self.nand,
            now,
            rewritten,
            relocate,
        );
        if !refresh.is_empty() {
            self.relocate(now, refresh);
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
        fb_keep(&mut self.flashback, keep);
    }
}

/// Puts erase units back on Flashback's relocation list.
fn fb_keep(fb: &mut Option<Box<Flashback>>, lebs: Vec<u32>) {
    if let Some(r) = fb.as_deref_mut() {
        r.refresh.extend(lebs);
        r.refresh.dedup();
    }
}

impl Flashback {
    fn new(cfg: ReliabilityConfig, layout: Layout, ftl: &FtlConfig, slots: usize) -> Flashback {
        let g = ftl.geometry;
        let dc = g.data_channels();
        let spd = layout.spu.div_ceil(dc);
        let units = slots / layout.spu as usize;
        let mut pending = cfg.fail_dies.clone();
        pending.sort_by_key(|&(d, at)| (at, d));
        let media = cfg
            .media
            .clone()
            .map(|m| MediaState::new(m, g.lebs(), g.banks));
        Flashback {
            layout,
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
        }
    }

    /// Tags the programmed slots of write unit `unit` with what the map
    /// says they hold (a recovered device's data).
    fn tag_unit(&mut self, map: &Mapping, unit: u32) {
        let spu = self.layout.spu;
        for psa in unit * spu..(unit + 1) * spu {
            let lba = map.lba_at(psa);
            if lba != UNMAPPED {
                self.tags[psa as usize] = content_tag(lba, map.seq_at(psa));
            }
        }
    }

    /// Bank, channel and row of slot `psa`.
    #[inline]
    fn slot_place(&self, psa: u32) -> (u32, u32, u32) {
        let unit = psa / self.layout.spu;
        let s = psa % self.layout.spu;
        (self.layout.bank_of_unit(unit), s / self.spd, s % self.spd)
    }

    /// Failed dies of `bank` not yet replaced in write unit `unit`.
    fn dead_channels(&self, bank: u32, unit: u32) -> impl Iterator<Item = u32> + '_ {
        let upl = self.layout.upl;
        self.failed
            .iter()
            .filter(move |f| f.bank == bank && f.dead_in(unit, upl))
            .map(|f| f.channel)
    }

    fn is_dead(&self, bank: u32, ch: u32, unit: u32) -> bool {
        let upl = self.layout.upl;
        self.failed
            .iter()
            .any(|f| f.bank == bank && f.channel == ch && f.dead_in(unit, upl))
    }

    /// What slot `psa` reads back: its die's tag, or, when the die has
    /// failed, the parity XOR the other data dies of its stripe row. None
    /// when the stripe has lost more members than it has parity.
    fn read_tag(&self, psa: u32) -> Option<u32> {
        let (bank, ch, row) = self.slot_place(psa);
        let unit = psa / self.layout.spu;
        if self.failed.is_empty() || !self.is_dead(bank, ch, unit) {
            return Some(self.tags[psa as usize]);
        }
        if !self.cfg.parity_rebuild {
            return Some(self.tags[psa as usize]);
        }
        self.reconstruct(unit, ch, row, bank)
    }

    /// Rebuilds data channel `ch`'s tag at `row` of `unit` from the parity
    /// and the other data dies.
    fn reconstruct(&self, unit: u32, ch: u32, row: u32, bank: u32) -> Option<u32> {
        if self.dead_channels(bank, unit).any(|c| c != ch) {
            return None;
        }
        let spu = self.layout.spu;
        let mut v = self.parity[(unit * self.spd + row) as usize];
        let base = unit * spu;
        for c in 0..self.dc {
            let s = c * self.spd + row;
            if c != ch && s < spu {
                v ^= self.tags[(base + s) as usize];
            }
        }
        Some(v)
    }

    /// A sector was placed at slot `psa` at `t`: its tag is what the host
    /// wrote, or what GC read back from the slot it moved from (a slot on
    /// a failed die is read back from the rest of its stripe row, which
    /// costs GC that row's reads on `nand`).
    pub(super) fn placed(
        &mut self,
        map: &Mapping,
        nand: &mut NandArray,
        t: Nanos,
        psa: u32,
        lba: u32,
        origin: Origin,
    ) {
        let tag = match origin {
            Origin::Host(seq) => content_tag(lba, seq),
            Origin::Moved(from) => {
                let (bank, ch, _) = self.slot_place(from);
                if !self.failed.is_empty() && self.is_dead(bank, ch, from / self.layout.spu) {
                    // GC reads the rest of the stripe row to rebuild it.
                    let bytes = (self.dc - 1) as u64 * self.layout.sector;
                    nand.read_unit(t, bank, bytes);
                }
                self.read_tag(from)
                    .unwrap_or(!content_tag(lba, map.seq_at(from)))
            }
        };
        self.tags[psa as usize] = tag;
    }

    /// Write unit `unit` was programmed, complete at `done`: the parity
    /// die gets the XOR of the data dies; dead dies keep nothing, and when
    /// more of them than parity covers are dead, the unit's sectors that
    /// hold current data (`map`) are lost.
    pub(super) fn programmed(&mut self, map: &Mapping, unit: u32, done: Nanos) {
        let spu = self.layout.spu;
        let base = unit * spu;
        for row in 0..self.spd {
            let mut p = 0;
            for c in 0..self.dc {
                let s = c * self.spd + row;
                if s < spu {
                    p ^= self.tags[(base + s) as usize];
                }
            }
            self.parity[(unit * self.spd + row) as usize] = p;
        }
        let upl = self.layout.upl;
        let leb = unit / upl;
        if !self.failed.is_empty() {
            // An adaptive card writes a failed die's page to its spare
            // block; a basic one loses it (parity still covers it).
            let bank = self.layout.bank_of_unit(unit);
            for f in self.failed.iter_mut() {
                if f.adaptive && f.bank == bank && f.dead_in(unit, upl) {
                    f.spared[unit as usize] = true;
                }
            }
            let dead: Vec<u32> = self.dead_channels(bank, unit).collect();
            for &ch in &dead {
                self.garble_die_page(unit, ch);
            }
            if dead.len() as u32 > self.pc {
                self.mark_lost(map, unit, &dead);
            }
        }
        if let Some(m) = self.media.as_mut() {
            m.programmed(leb, unit.is_multiple_of(upl), done);
        }
    }

    /// Destroys what die channel `ch` holds in `unit` (data or parity).
    fn garble_die_page(&mut self, unit: u32, ch: u32) {
        let spu = self.layout.spu;
        if ch >= self.dc {
            for row in 0..self.spd {
                let i = (unit * self.spd + row) as usize;
                self.parity[i] = !self.parity[i];
            }
            return;
        }
        for row in 0..self.spd {
            let s = ch * self.spd + row;
            if s < spu {
                let i = (unit * spu + s) as usize;
                self.tags[i] = !self.tags[i];
            }
        }
    }

    /// Erase unit `leb` was erased: its tags go, and failed dies get a
    /// spare block there for what is written next.
    pub(super) fn erased(&mut self, leb: u32) {
        let spl = self.layout.spl as usize;
        let l = leb as usize;
        self.tags[l * spl..(l + 1) * spl].fill(0);
        let rows = self.spd as usize * self.layout.upl as usize;
        self.parity[l * rows..(l + 1) * rows].fill(0);
        for f in &mut self.failed {
            if f.adaptive {
                f.remapped[l] = true;
            }
        }
        if let Some(m) = self.media.as_mut() {
            m.erased(leb);
        }
    }

    /// The start of a host I/O at `now`: forgets the lost sectors being
    /// rewritten (`rewritten`), injects due die failures and advances
    /// rebuilds; with `relocate`, hands over the erase units flagged for
    /// relocation (otherwise they stay flagged).
    fn before_io(
        &mut self,
        map: &Mapping,
        blocks: &BlockManager,
        nand: &mut NandArray,
        now: Nanos,
        rewritten: Option<(u64, u64)>,
        relocate: bool,
    ) -> Vec<u32> {
        if let Some((start, count)) = rewritten {
            if !self.lost.is_empty() {
                let (a, b) = (start as u32, (start + count) as u32);
                let gone: Vec<u32> = self.lost.range(a..b).copied().collect();
                for l in gone {
                    self.lost.remove(&l);
                }
            }
        }
        while self.pending.first().is_some_and(|&(_, at)| at <= now) {
            let (die, at) = self.pending.remove(0);
            self.fail_die(map, blocks, die, at);
        }
        if self.failed.iter().any(|f| !f.done) {
            self.advance_rebuilds(blocks, nand, now);
        }
        if relocate {
            std::mem::take(&mut self.refresh)
        } else {
            Vec::new()
        }
    }

    /// Fails die `die` at `at`: destroys what it holds, records which
    /// sectors are now beyond parity, and (adaptive, spares left) starts
    /// rebuilding it.
    fn fail_die(&mut self, map: &Mapping, blocks: &BlockManager, die: u32, at: Nanos) {
        let l = self.layout;
        let (bank, ch) = (die / l.channels, die % l.channels);
        if self
            .failed
            .iter()
            .any(|f| f.bank == bank && f.channel == ch)
        {
            return;
        }
        let need = l.lebs.div_ceil(l.channels * l.banks);
        let adaptive = self.cfg.adaptive && self.cfg.spare_budget_lebs >= need;
        if adaptive {
            self.stats.die_spare_lebs += need;
            self.cfg.spare_budget_lebs -= need;
        }
        self.stats.dies_failed += 1;
        let spared = if adaptive {
            self.parity.len() / self.spd as usize
        } else {
            0
        };
        self.failed.push(FailedDie {
            bank,
            channel: ch,
            at,
            remapped: vec![false; l.lebs as usize],
            spared: vec![false; spared],
            adaptive,
            cursor: 0,
            next_at: at,
            done: !adaptive,
        });
        for leb in 0..l.lebs {
            let programmed = l.programmed_units(blocks, leb);
            for u in (0..programmed).filter(|&u| u % l.banks == bank) {
                let unit = leb * l.upl + u;
                self.garble_die_page(unit, ch);
                let dead: Vec<u32> = self.dead_channels(bank, unit).collect();
                if dead.len() as u32 > self.pc {
                    self.mark_lost(map, unit, &dead);
                }
            }
        }
    }

    /// Records the valid sectors on the failed data dies `dead` of `unit`
    /// as lost.
    fn mark_lost(&mut self, map: &Mapping, unit: u32, dead: &[u32]) {
        let spu = self.layout.spu;
        for &c in dead.iter().filter(|&&c| c < self.dc) {
            for row in 0..self.spd {
                let s = c * self.spd + row;
                let psa = unit * spu + s;
                if s < spu && map.is_valid(psa) {
                    let lba = map.lba_at(psa);
                    self.lost.insert(lba);
                    self.lost_ever.insert(lba);
                }
            }
        }
    }

    /// Runs the adaptive rebuilds up to `now`: one erase unit at a time,
    /// every programmed page of the failed die there is rebuilt from its
    /// stripe (a full stripe read on the bank) and programmed to a spare,
    /// pacing itself to `rebuild_share` of the bank's time.
    fn advance_rebuilds(&mut self, blocks: &BlockManager, nand: &mut NandArray, now: Nanos) {
        let l = self.layout;
        let stripe_bytes = (self.dc + self.pc) as u64 * self.spd as u64 * l.sector;
        let page_bytes = self.spd as u64 * l.sector;
        let share = self.cfg.rebuild_share;
        for i in 0..self.failed.len() {
            while !self.failed[i].done && self.failed[i].next_at <= now {
                let f = &self.failed[i];
                let (bank, ch, leb, start) = (f.bank, f.channel, f.cursor, f.next_at);
                if leb >= l.lebs {
                    let f = &mut self.failed[i];
                    f.done = true;
                    self.stats.dies_rebuilt += 1;
                    let took = (start.0 - f.at.0) as f64 / 1e9;
                    self.stats.rebuild_s = self.stats.rebuild_s.max(took);
                    break;
                }
                let mut done = start;
                if !self.failed[i].remapped[leb as usize] {
                    let programmed = l.programmed_units(blocks, leb);
                    for u in (0..programmed).filter(|&u| u % l.banks == bank) {
                        let unit = leb * l.upl + u;
                        if self.failed[i].adaptive && self.failed[i].spared[unit as usize] {
                            continue;
                        }
                        let read = nand.read_unit(start, bank, stripe_bytes);
                        self.rebuild_page(unit, bank, ch);
                        done = done.max(nand.program_page(read, bank, page_bytes));
                        self.stats.rebuild_stripes += 1;
                    }
                    self.failed[i].remapped[leb as usize] = true;
                }
                let f = &mut self.failed[i];
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
    fn rebuild_page(&mut self, unit: u32, bank: u32, ch: u32) {
        let spu = self.layout.spu;
        let base = unit * spu;
        for row in 0..self.spd {
            if ch >= self.dc {
                let others_dead = self.dead_channels(bank, unit).any(|c| c != ch);
                if !others_dead {
                    let mut p = 0;
                    for c in 0..self.dc {
                        let s = c * self.spd + row;
                        if s < spu {
                            p ^= self.tags[(base + s) as usize];
                        }
                    }
                    self.parity[(unit * self.spd + row) as usize] = p;
                }
                continue;
            }
            let s = ch * self.spd + row;
            if s >= spu {
                continue;
            }
            if let Some(v) = self.reconstruct(unit, ch, row, bank) {
                self.tags[(base + s) as usize] = v;
            }
        }
    }

    /// A host read: media errors, reads rebuilt from parity (with their
    /// cost on `nand`), lost sectors (an I/O error) and the check of every
    /// sector read against what the map says it holds. `open_unit` is the
    /// write unit still in the write buffer.
    pub(super) fn read(
        &mut self,
        map: &Mapping,
        nand: &mut NandArray,
        open_unit: Option<u32>,
        ready: Nanos,
        start: u64,
        count: u64,
    ) -> Result<Nanos, FtlError> {
        let sector = self.layout.sector;
        let upl = self.layout.upl;
        let mut done = ready;
        let mut lost_in_read = 0u64;
        let mut first_lost = None;
        let mut runs = UnitRuns::new(start, start + count);
        while let Some((i, n, unit)) = runs.next(map) {
            let leb = unit / upl;
            let bank = self.layout.bank_of_unit(unit);
            let in_buffer = Some(unit) == open_unit;
            let mut degraded = 0u64;
            let mut unit_bad = false;
            for lba in i..i + n {
                let p = map.slot_of(lba as u32);
                if self.lost.contains(&(lba as u32)) {
                    lost_in_read += 1;
                    first_lost.get_or_insert(lba);
                    continue;
                }
                let (b, ch, _) = self.slot_place(p);
                if !in_buffer && !self.failed.is_empty() && self.is_dead(b, ch, unit) {
                    degraded += 1;
                }
                let got = if in_buffer {
                    Some(self.tags[p as usize])
                } else {
                    self.read_tag(p)
                };
                let want = content_tag(lba as u32, map.seq_at(p));
                if got != Some(want) {
                    if got.is_none() {
                        // The stripe lost two members: the sector is lost.
                        self.lost.insert(lba as u32);
                        self.lost_ever.insert(lba as u32);
                        lost_in_read += 1;
                        first_lost.get_or_insert(lba);
                    } else {
                        self.stats.silent_corruptions += 1;
                    }
                }
            }
            if !in_buffer {
                // The dead die's share comes from the other dc members of
                // each stripe row: dc sectors move per sector rebuilt.
                let bytes = (n - degraded) * sector + degraded * self.dc as u64 * sector;
                let mut t = nand.read_unit(ready, bank, bytes);
                self.stats.degraded_sector_reads += degraded;
                if let Some(m) = self.media.as_mut() {
                    let erases = nand.erase_count(leb);
                    let out = m.read(leb, bank, erases, n, sector, ready);
                    self.stats.corrected_bits = m.corrected_bits();
                    for _ in 0..out.retries {
                        t = nand.read_unit(t, bank, n * sector);
                    }
                    self.stats.read_retries += out.retries as u64;
                    if out.refresh {
                        self.stats.read_disturb_refreshes += 1;
                        self.refresh.push(leb);
                    }
                    if out.retire {
                        self.stats.error_retired_lebs += 1;
                        self.refresh.push(leb);
                    }
                    if out.uncorrectable {
                        self.stats.uncorrectable_reads += 1;
                        // Flashback rebuilds the chunk from the stripe,
                        // unless the stripe already lost a member.
                        let stripe_ok =
                            self.cfg.parity_rebuild && self.dead_channels(bank, unit).count() == 0;
                        if stripe_ok {
                            self.stats.parity_rebuilt_reads += 1;
                            t = nand.read_unit(t, bank, n * self.dc as u64 * sector);
                        } else {
                            unit_bad = true;
                        }
                    }
                }
                done = done.max(t);
            }
            if unit_bad {
                for lba in i..i + n {
                    if !self.cfg.parity_rebuild {
                        // A broken card (a test's) returns wrong data
                        // instead of an error.
                        let p = map.slot_of(lba as u32);
                        self.tags[p as usize] = !self.tags[p as usize];
                        self.stats.silent_corruptions += 1;
                    } else if self.lost.insert(lba as u32) {
                        self.lost_ever.insert(lba as u32);
                        lost_in_read += 1;
                        first_lost.get_or_insert(lba);
                    }
                }
            }
        }
        self.stats.read_errors += (lost_in_read > 0) as u64;
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
