use nand::{CellTiming, Geometry, NandArray, ReadPolicy};
use serde::Serialize;
use sim::Nanos;

use blocks::BlockManager;
pub(crate) use blocks::LebState;
use buffer::WriteBuffer;
use gc::{Gc, Victim};
use mapping::{Mapping, UnitRuns};

mod atomic;
mod blocks;
mod buffer;
mod flashback;
mod gc;
mod mapping;
mod media;
mod observer;
mod placement;
mod pools;
mod victim;
pub use flashback::{content_tag, ReliabilityConfig, ReliabilityStats, REBUILD_SHARE};
pub use media::{poisson_tail, MediaConfig};
use observer::Observers;
pub use observer::{MediaLog, MediaObserver};
pub use placement::{
    split_spare, HotCold, Placement, PlacementInfo, PlacementSpec, Streams, PLACEMENTS,
};
pub use pools::PoolStats;
pub use victim::{
    Candidate, Candidates, GcPolicy, PolicyInfo, VictimPolicy, D_CHOICES_MAX, POLICIES,
};

const UNMAPPED: u32 = u32::MAX;

/// When garbage collection runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcMode {
    /// The groomer paces itself by free space: below the high watermark
    /// (`gc_background_lebs`) each host write pays a share of GC moves that
    /// grows as free space falls, within a background budget of `gc_share`
    /// of the array's move capacity (sectors per second);
    /// host writes stall only when free space reaches the low watermark
    /// (`gc_reserve_lebs`). Idle time is used as in `Legacy`.
    Paced,
    /// Idle-time GC below `gc_background_lebs`, and stop-the-world
    /// collection of whole erase units when a host write opens one with
    /// fewer than `gc_reserve_lebs` free (the model before pacing).
    Legacy,
}

impl std::str::FromStr for GcMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "paced" => Ok(GcMode::Paced),
            "legacy" | "stop-the-world" => Ok(GcMode::Legacy),
            _ => Err(format!("unknown GC mode '{s}' (expected paced or legacy)")),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FtlError {
    #[error("sector range {start}+{count} is beyond the formatted {capacity} sectors")]
    OutOfRange {
        start: u64,
        count: u64,
        capacity: u64,
    },
    #[error("invalid FTL configuration: {0}")]
    Config(String),
    #[error("atomic write refused: {0}")]
    Atomic(String),
    /// A read touched sectors lost to media failure beyond parity (an I/O
    /// error); `done` is when the read completed.
    #[error("I/O error: {count} sector(s) from {lba} were lost (a die or ECC failure beyond Flashback parity)")]
    Lost { lba: u64, count: u64, done: Nanos },
}

/// Everything needed to build one device's FTL.
#[derive(Clone, Debug, Serialize)]
pub struct FtlConfig {
    pub geometry: Geometry,
    pub timing: CellTiming,
    /// Formatted logical sector size, 512 or 4096.
    pub sector_bytes: u32,
    /// Formatted capacity in sectors.
    pub user_sectors: u64,
    /// Erase units set aside (metadata, bad-block replacement): never used.
    pub reserved_lebs: u32,
    pub gc_policy: GcPolicy,
    /// Seeds the FTL's own random choices (d-choices' draws); the same
    /// seed gives the same victims.
    pub gc_seed: u64,
    pub gc_mode: GcMode,
    /// Foreground GC keeps at least this many erase units free (the low
    /// watermark).
    pub gc_reserve_lebs: u32,
    /// Idle-time and paced GC work while fewer than this many erase units
    /// are free (the high watermark).
    pub gc_background_lebs: u32,
    /// Paced GC: the fraction of the array's move capacity (bank and bus
    /// time to read and reprogram a sector) the groomer may use in the
    /// background.
    pub gc_share: f64,
    /// Free space, in erase units (a fraction allowed), a foreground stall
    /// gains past the low watermark before host writes resume, counted in
    /// sectors with the frontier's unused part included; the groomer
    /// collects whole victims until it is there. 0: a stall ends at the
    /// low watermark.
    pub gc_runway_lebs: f64,
    /// A stall's quantum of work: once back at the low watermark and past
    /// its runway, a stall goes on moving sectors (one at a time, a victim
    /// may be left part collected) until it has moved this many erase
    /// units' worth of slots in all, so every stall does about the same
    /// work whatever was left of the victim in hand. 0: off.
    pub gc_stall_quantum_lebs: f64,
    /// Catch-up grooming: when host writes have stopped (none for
    /// `gc_catchup_after_ns`) after a write phase that stalled at the low
    /// watermark, the next host I/O finds the groomer collecting in the
    /// foreground until this many erase units above the low watermark are
    /// free, and waits behind that work: the whole part unit by unit, a
    /// fraction as that share of the next victim's valid slots moved (the
    /// victim left part collected). 0 turns it off.
    pub gc_catchup_lebs: f64,
    /// Catch-up grooming counted in work: instead of a free-space target
    /// (`gc_catchup_lebs`, which must then be 0), the groomer moves this
    /// many erase units' worth of valid slots, a sector at a time from the
    /// victim in hand on. A free-space target digs as many victims deep as
    /// it needs, and a card scaled by `k` (the same number of units, each
    /// `k` times smaller) digs `k` times deeper into fuller victims for the
    /// same bytes; a target in work costs the same time at every scale.
    /// 0 turns it off.
    pub gc_catchup_moves_lebs: f64,
    /// GC read-ahead: the groomer reads the write units of its victim
    /// `banks + gc_read_ahead_units` units ahead of the one it moves from
    /// (0: one round of the banks); a scaled card's read-ahead into the
    /// next small victim of its group still starts `banks` units before
    /// the end (`Vsl::read_ahead_next`: starting it earlier brought the
    /// 0.02 card's gap back). A move's data must be read before the
    /// unit it fills can program, and a bank programs its units in order,
    /// so a read that lands late leaves that bank idle in front of every
    /// write queued after it (docs/MODEL.md "GC read-ahead").
    pub gc_read_ahead_units: u32,
    /// How long without a host write counts as writes having stopped, for
    /// catch-up grooming (10 ms: [`IDLE_AFTER`], the idle detection).
    pub gc_catchup_after_ns: u64,
    /// The groomer yields after a stall: once a foreground stall at the
    /// low watermark has finished (its work done on the array), the paced
    /// groomer makes no background moves for this long, so the host
    /// writes the runway at the array's full rate (ns). 0 turns it off.
    pub gc_yield_ns: u64,
    /// Paced GC while the host is idle: after a pause in host I/O the
    /// groomer keeps collecting, at the array's whole move capacity, until
    /// this fraction of the spare erase units (above the high watermark)
    /// is free. 0 turns idle grooming off.
    pub gc_idle_fraction: f64,
    /// Paced GC counts free space continuously: the victim being collected
    /// counts as freed in proportion to the slots it has been scanned
    /// through, with one full-size erase unit held back for it, so the
    /// free space the pace sees does not jump by a unit at each erase (nor
    /// the pace with it). Off: the pace sees whole free units and the
    /// frontier.
    pub gc_pace_progress: bool,
    /// Paced GC: moves each sector a host read takes from the NAND costs
    /// the background budget (the budget may go below zero by up to one
    /// write unit per bank, and grows back at its rate). 0.5 is a read's
    /// bus time in moves where the move capacity is the channel bus's (a
    /// move crosses the bus twice, a read once). 0: reads cost it nothing.
    pub gc_read_charge: f64,
    /// How reads are ordered against queued programs and erases.
    pub read_policy: ReadPolicy,
    /// Erase-unit erases per charged block erase (1 unless the card is
    /// scaled by shrinking its erase units).
    pub erase_batch: u32,
    /// Erase units one foreground GC stall reclaims at least: once free
    /// units fall to `gc_reserve_lebs - gc_stall_lebs`, host writes wait
    /// until `gc_reserve_lebs` are free again. 1 on a full-size card; a
    /// card scaled by shrinking its erase units reclaims as many bytes per
    /// stall as the full card does.
    pub gc_stall_lebs: u32,
    /// Power-cut-protected write buffer.
    pub buffer_bytes: u64,
    /// Erase-count spread (max - min) that triggers static wear levelling.
    pub wear_level_spread: u32,
    /// Keep each slot's out-of-band sequence number (the host write that
    /// produced its data). Costs 8 bytes per physical slot; tests and the
    /// data-carrying modes turn it on.
    pub track_sequence: bool,
}

impl FtlConfig {
    /// The analytic model's setting: one die, erase units of 256 sectors of
    /// 4 KiB (`sector` may be 512), no reserve, `spare` of the physical
    /// space left unformatted. Used by the WA test and benchmark.
    pub fn wa_study(lebs: u32, spare: f64, sector: u32, policy: GcPolicy) -> FtlConfig {
        let geometry = Geometry {
            channels: 1,
            parity_channels: 0,
            banks: 1,
            planes: 1,
            blocks_per_plane: lebs,
            pages_per_block: 256,
            page_bytes: 4096,
        };
        let mut cfg = FtlConfig {
            geometry,
            timing: CellTiming::MLC_2009,
            sector_bytes: sector,
            user_sectors: 1,
            reserved_lebs: 0,
            gc_policy: policy,
            gc_seed: 1,
            gc_mode: GcMode::Legacy,
            gc_reserve_lebs: 2,
            gc_background_lebs: 0,
            gc_share: 0.5,
            gc_runway_lebs: 0.0,
            gc_stall_quantum_lebs: 0.0,
            gc_catchup_lebs: 0.0,
            gc_catchup_moves_lebs: 0.0,
            gc_read_ahead_units: 0,
            gc_catchup_after_ns: IDLE_AFTER.0,
            gc_yield_ns: 0,
            gc_idle_fraction: 0.0,
            gc_pace_progress: false,
            gc_read_charge: 0.0,
            read_policy: ReadPolicy::FIFO,
            erase_batch: 1,
            gc_stall_lebs: 1,
            buffer_bytes: 4 * 4096,
            wear_level_spread: u32::MAX,
            track_sequence: false,
        };
        let phys = cfg.usable_lebs() as f64 * cfg.slots_per_leb() as f64;
        cfg.user_sectors = (phys * (1.0 - spare)) as u64;
        cfg
    }

    pub fn slots_per_unit(&self) -> u32 {
        (self.geometry.write_unit_bytes() / self.sector_bytes as u64) as u32
    }
    pub fn slots_per_leb(&self) -> u32 {
        self.slots_per_unit() * self.geometry.units_per_leb()
    }
    /// Erase units available to the log: all minus the reserved ones.
    pub fn usable_lebs(&self) -> u32 {
        self.geometry.lebs().saturating_sub(self.reserved_lebs)
    }
    /// Largest formattable capacity, in sectors: every usable erase unit but
    /// the GC reserve and the open frontier's cohort (one unit on a
    /// full-size card, `gc_stall_lebs` on a scaled one, which GC counts
    /// taken as its first unit opens) may hold user data.
    pub fn max_user_sectors(&self) -> u64 {
        let k = self.gc_stall_lebs;
        let spare = if k > 1 {
            // A scaled card fits what the full card fits: its pool's
            // allowance aside, the full card's reserve and frontier (in
            // full-size units, as the full card counts them).
            self.scaled_pool_allowance() + self.gc_reserve_lebs / k + 1
        } else {
            self.gc_reserve_lebs + self.gc_stall_lebs
        } as u64;
        (self.usable_lebs() as u64).saturating_sub(spare) * self.slots_per_leb() as u64
    }
    /// Free units, on top of its share of the full card's spare, that a
    /// card whose erase units are shrunk `k`-fold (`gc_stall_lebs`) sets
    /// aside for its GC pool (its `reserved_lebs` are this many fewer).
    /// Its pool holds as many bytes as the full card's, which is a few of
    /// thousands of full-size units there and a few per cent of a small
    /// card; what the pool does not hold must not add to the spare GC
    /// sees in closed units. Full size: the reserve (`reserve` and
    /// `background` are per full-size unit). A scaled card with paced GC
    /// sets aside up to the high watermark and the cohort's unwritten half,
    /// and parks what its pool does not use on average
    /// ([`Vsl::adjust_parking`]); legacy GC's pool sits at the reserve.
    pub fn pool_allowance(mode: GcMode, k: u32, reserve: u32, background: u32) -> u32 {
        match mode {
            _ if k <= 1 => reserve,
            GcMode::Legacy => reserve * k + (k - 1) / 2,
            GcMode::Paced => background.max(reserve) * k + (k - 1) / 2,
        }
    }
    /// [`FtlConfig::pool_allowance`] of this card (its watermarks and
    /// stalls are counted in small units, `gc_stall_lebs` to a full one).
    pub fn scaled_pool_allowance(&self) -> u32 {
        let k = self.gc_stall_lebs;
        let (reserve, background) = (self.gc_reserve_lebs / k, self.gc_background_lebs / k);
        Self::pool_allowance(self.gc_mode, k, reserve, background)
    }
    /// Spare factor: 1 - user / (usable physical space).
    pub fn spare_factor(&self) -> f64 {
        let phys = self.usable_lebs() as f64 * self.slots_per_leb() as f64;
        1.0 - self.user_sectors as f64 / phys
    }

    pub fn validate(&self) -> Result<(), FtlError> {
        self.geometry.validate().map_err(FtlError::Config)?;
        let c = |m: String| Err(FtlError::Config(m));
        if self.sector_bytes != 512 && self.sector_bytes != 4096 {
            return c(format!(
                "sector size {} (expected 512 or 4096)",
                self.sector_bytes
            ));
        }
        if self.geometry.page_bytes < self.sector_bytes {
            return c("NAND page smaller than a sector".into());
        }
        if self.user_sectors == 0 {
            return c("formatted capacity is zero".into());
        }
        if self.gc_reserve_lebs < 2 {
            return c("GC needs at least 2 reserved free erase units".into());
        }
        if self.gc_stall_lebs == 0 || self.gc_stall_lebs >= self.gc_reserve_lebs {
            return c(format!(
                "a GC stall of {} erase units must be at least 1 and below the reserve of {}",
                self.gc_stall_lebs, self.gc_reserve_lebs
            ));
        }
        if self.gc_mode == GcMode::Paced && self.gc_background_lebs <= self.gc_reserve_lebs {
            return c("paced GC needs its high watermark above the low one".into());
        }
        if !(0.0..=1.0).contains(&self.gc_idle_fraction) {
            return c(format!(
                "idle grooming fraction {} must be in [0, 1]",
                self.gc_idle_fraction
            ));
        }
        if !(self.gc_share >= 0.0 && self.gc_share.is_finite()) {
            return c(format!(
                "GC share {} must be a finite number >= 0",
                self.gc_share
            ));
        }
        let phys_slots = self.geometry.lebs() as u64 * self.slots_per_leb() as u64;
        if phys_slots >= UNMAPPED as u64 || self.user_sectors >= UNMAPPED as u64 {
            return c(format!(
                "{phys_slots} physical slots exceed the 32-bit map; use 4096-byte sectors or a smaller device"
            ));
        }
        if self.user_sectors > self.max_user_sectors() {
            return c(format!(
                "formatted capacity {} B leaves no spare erase units (at most {} B fits with {} reserved and {} for GC)",
                self.user_sectors * self.sector_bytes as u64,
                self.max_user_sectors() * self.sector_bytes as u64,
                self.reserved_lebs,
                self.usable_lebs() as u64 - self.max_user_sectors() / self.slots_per_leb() as u64
            ));
        }
        let unit_slots = self.slots_per_unit() as u64;
        if self.buffer_bytes / (self.sector_bytes as u64) < 2 * unit_slots {
            return c("write buffer must hold at least two write units".into());
        }
        Ok(())
    }
}

/// Host and media counters, cumulative since the device was built.
#[derive(Copy, Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct FtlStats {
    pub host_sectors_written: u64,
    pub host_sectors_read: u64,
    pub host_sectors_trimmed: u64,
    pub gc_sectors_moved: u64,
    pub gc_runs: u64,
    pub wear_level_runs: u64,
    pub erases: u64,
    /// Host writes that had to wait for the write buffer to drain.
    pub buffer_waits: u64,
}

impl FtlStats {
    /// NAND sectors programmed per host sector written.
    pub fn write_amplification(&self) -> f64 {
        if self.host_sectors_written == 0 {
            return 0.0;
        }
        (self.host_sectors_written + self.gc_sectors_moved) as f64
            / self.host_sectors_written as f64
    }
}

/// [`FtlConfig::pool_allowance`] in units where the card parks what its
/// pool does not use (paced GC on a scaled card), else 0.
fn parking_allowance(cfg: &FtlConfig) -> f64 {
    let k = cfg.gc_stall_lebs;
    if k <= 1 || cfg.gc_mode != GcMode::Paced {
        return 0.0;
    }
    cfg.scaled_pool_allowance() as f64
}

/// Where a scaled card's average of its GC pool starts: the low
/// watermark, where a write-bound card's pool settles, so that such a card
/// parks its share from the first pass rather than after three (a pool
/// between the watermarks brings the average up and units back within a
/// pass). Full size, legacy GC: 0, nothing is parked.
/// `allowance`: [`parking_allowance`].
fn parking_start(cfg: &FtlConfig, allowance: f64) -> f64 {
    if allowance == 0.0 {
        return 0.0;
    }
    (cfg.gc_reserve_lebs as f64).min(allowance)
}

/// Where a sector being placed at the frontier comes from.
#[derive(Copy, Clone, Debug)]
enum Origin {
    /// A host write with this sequence number.
    Host(u64),
    /// A GC move from this physical slot.
    Moved(u32),
}

/// One ioMemory device's flash translation layer with its NAND.
pub struct Vsl {
    cfg: FtlConfig,
    nand: NandArray,
    spu: u32,
    spl: u32,
    /// The map, out-of-band records, valid bits and counts.
    map: Mapping,
    /// Unit states, the free pool, the frontier, close order, GC group.
    blocks: BlockManager,
    /// GC's state: victim policy, the unit being collected, pace and budget.
    gc: Gc,
    /// The power-cut-protected write buffer.
    buffer: WriteBuffer,
    /// Whatever mirrors the media ([`MediaObserver`]): the attached card's
    /// store, the power-cut model. None installed (the default) costs one
    /// branch per event.
    obs: Observers,
    /// Idle grooming: when host I/O was last seen, and the free space (in
    /// erase units) the groomer works up to while the host is idle.
    last_io_at: Nanos,
    idle_target_lebs: f64,
    /// A scaled card's GC pool allowance in units
    /// ([`FtlConfig::pool_allowance`]; 0: nothing is parked) and the free
    /// space its pool has held, averaged over host writes
    /// ([`Vsl::adjust_parking`]).
    pool_allowance: f64,
    pool_mean: f64,
    /// Sectors idle grooming has moved, and the data-path time one move
    /// takes outside the FTL ([`Vsl::set_move_cost`]), which paces it.
    idle_moved: u64,
    /// Moves made in foreground stalls and catch-up grooming, the host
    /// waiting ([`Vsl::gc_foreground_moves`]).
    fg_moved: u64,
    move_cost: Nanos,
    /// Catch-up grooming ([`FtlConfig::gc_catchup_lebs`]): a host write
    /// stalled at the low watermark since the last catch-up, and when host
    /// writes were last seen.
    wall_hit: bool,
    last_write_at: Nanos,
    /// The groomer's yield after a stall ([`FtlConfig::gc_yield_ns`]): no
    /// paced moves before this time.
    paced_after: Nanos,
    /// Flashback parity, die failures and media errors
    /// ([`Vsl::enable_reliability`]); `None` (the default) costs one branch
    /// per I/O, placed sector, programmed unit and erase.
    flashback: Option<Box<flashback::Flashback>>,
    /// More than one stream ([`Vsl::set_placement`]); `None` (the default)
    /// costs one branch per placed sector.
    pools: Option<Box<pools::Pools>>,
    stats: FtlStats,
}

/// What a data store keyed by physical slot must mirror besides host
/// writes (whose slots [`Vsl::lookup`] gives): GC moving a sector and an
/// erase unit being erased. Recorded only after [`Vsl::enable_media_log`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MediaEvent {
    /// GC copied logical sector `lba` (out-of-band sequence number `seq`,
    /// 0 when not tracked) from slot `from` to slot `to`.
    Moved {
        from: u32,
        to: u32,
        lba: u32,
        seq: u64,
    },
    /// Erase unit `leb` (slots `leb * slots_per_leb ..`) was erased.
    Erased { leb: u32 },
}

/// What the power-cut model (`crate::protect`) replays onto its media:
/// recorded only after [`Vsl::enable_power_log`], in the order the VSL
/// issued them. `Programmed` and `Erased` are NAND operations (the points
/// where a power cut may fall); the others are instantaneous.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PowerEvent {
    /// Logical sector `lba` (sequence number `seq`) entered the write
    /// buffer for slot `psa`; `from` is the slot a GC move copies (its
    /// out-of-band record goes with it), `u32::MAX` for host data.
    Placed {
        psa: u32,
        lba: u32,
        seq: u64,
        from: u32,
    },
    /// Write unit `unit` (slots `unit * slots_per_unit ..`) was programmed,
    /// completing at `done`.
    Programmed { unit: u32, done: Nanos },
    /// Erase unit `leb` was erased, completing at `done`.
    Erased { leb: u32, done: Nanos },
    /// Erase unit `leb` became the log frontier.
    Opened { leb: u32 },
    /// A trim: sectors `start..start + count` hold no data written with a
    /// sequence number up to `floor`.
    Trimmed { start: u64, count: u64, floor: u64 },
    /// An atomic write of sequence numbers `first..=last` begins (its
    /// sectors' out-of-band records carry the group; the one with `last`
    /// marks its end).
    AtomicBegin { first: u64, last: u64 },
    /// The atomic write's sectors and trims are all in the buffer.
    AtomicEnd,
}

/// One slot's out-of-band record as a store read it back: the logical
/// sector it holds and the sequence number of the host write that made it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct OobRecord {
    pub psa: u32,
    pub lba: u32,
    pub seq: u64,
}

impl Vsl {
    pub fn new(cfg: FtlConfig) -> Result<Vsl, FtlError> {
        cfg.validate()?;
        let g = cfg.geometry;
        let spu = cfg.slots_per_unit();
        let spl = cfg.slots_per_leb();
        let lebs = g.lebs() as usize;
        let buffer_cap = cfg.buffer_bytes / cfg.sector_bytes as u64;
        let mut nand = NandArray::new(g, cfg.timing);
        nand.set_read_policy(cfg.read_policy);
        nand.set_erase_batch(cfg.erase_batch);
        let pool_allowance = parking_allowance(&cfg);
        let mut vsl = Vsl {
            nand,
            map: Mapping::new(cfg.user_sectors, lebs, spl, spu, cfg.track_sequence),
            blocks: BlockManager::new(lebs, cfg.usable_lebs(), spl, spu, cfg.gc_stall_lebs),
            gc: Gc::new(
                cfg.gc_policy.build(),
                cfg.gc_seed,
                g.units_per_leb(),
                g.banks,
                spl,
                cfg.gc_share * move_capacity_per_ns(&cfg),
            ),
            buffer: WriteBuffer::new(buffer_cap, spu),
            obs: Observers::default(),
            last_io_at: Nanos::ZERO,
            idle_target_lebs: idle_target_lebs(&cfg),
            pool_allowance,
            pool_mean: parking_start(&cfg, pool_allowance),
            idle_moved: 0,
            fg_moved: 0,
            move_cost: Nanos::ZERO,
            wall_hit: false,
            paced_after: Nanos::ZERO,
            last_write_at: Nanos::ZERO,
            flashback: None,
            pools: None,
            spu,
            spl,
            cfg,
            stats: FtlStats::default(),
        };
        if vsl.gc.needs_close_order() {
            vsl.blocks.keep_close_order(true);
        }
        Ok(vsl)
    }

    /// Installs the GC victim policy: a built-in one from
    /// [`GcPolicy::build`] or one of your own (docs/ARCHITECTURE.md,
    /// "Adding a GC policy"). Best called right after [`Vsl::new`]; a policy
    /// that needs the close order and is installed later sees the units
    /// closed before as closed at the same time (sequence 0).
    pub fn set_victim_policy(&mut self, policy: Box<dyn VictimPolicy>) {
        self.blocks.keep_close_order(policy.needs_close_order());
        self.gc.set_policy(policy);
    }

    /// The name of the GC victim policy in use ([`VictimPolicy::name`]).
    pub fn victim_policy_name(&self) -> String {
        self.gc.policy_name()
    }

    pub fn config(&self) -> &FtlConfig {
        &self.cfg
    }
    /// The time a moved sector holds the controller's data path (charged by
    /// the device model, not here); idle grooming moves no faster than it.
    pub fn set_move_cost(&mut self, cost: Nanos) {
        self.move_cost = cost;
    }

    /// Of [`Vsl::gc_sectors_moved`], the moves idle grooming made: done in
    /// a pause of the host, so not charged to the write that ended it.
    #[inline]
    pub fn gc_idle_moves(&self) -> u64 {
        self.idle_moved
    }

    /// Of [`Vsl::gc_sectors_moved`], the moves made in the foreground (a
    /// stall at the low watermark, catch-up grooming): host writes wait
    /// for them, so none are in the way on the controller's write path.
    #[inline]
    pub fn gc_foreground_moves(&self) -> u64 {
        self.fg_moved
    }

    /// NAND activity since the device was built (bytes programmed and
    /// read, erases).
    pub fn media_counters(&self) -> nand::MediaCounters {
        self.nand.counters
    }
    /// Erases of every erase unit so far.
    pub fn erase_counts(&self) -> &[u32] {
        self.nand.erase_counts()
    }
    /// When the array's queued work (programs, erases, reads) is done.
    pub fn busy_until(&self) -> Nanos {
        self.nand.busy_until()
    }
    /// Erases of erase unit `leb` so far.
    pub fn erase_count(&self, leb: u32) -> u32 {
        self.nand.erase_count(leb)
    }
    /// Sectors moved by GC so far (what [`Vsl::stats`] reports, without
    /// the copy).
    #[inline]
    pub fn gc_sectors_moved(&self) -> u64 {
        self.stats.gc_sectors_moved
    }
    pub fn stats(&self) -> FtlStats {
        let mut s = self.stats;
        s.erases = self.nand.counters.leb_erases;
        s
    }
    pub fn user_sectors(&self) -> u64 {
        self.cfg.user_sectors
    }
    pub fn sector_bytes(&self) -> u32 {
        self.cfg.sector_bytes
    }
    pub fn free_lebs(&self) -> usize {
        self.blocks.free_len()
    }

    /// Host RAM the VSL holds for this device: the map, the per-slot OOB
    /// mirror and the per-erase-unit tables.
    pub fn host_ram_bytes(&self) -> u64 {
        let per_leb = 4 + 1 + 8 + 8; // valid count, state, age, free-list entry
        self.map.ram_bytes()
            + self.blocks.close_seq_ram_bytes()
            + (self.map.valid_counts().len() * per_leb) as u64
            + self.pools.as_ref().map_or(0, |p| p.ram_bytes())
    }

    fn check_range(&self, start: u64, count: u64) -> Result<(), FtlError> {
        let cap = self.cfg.user_sectors;
        if count == 0 || start >= cap || count > cap - start {
            return Err(FtlError::OutOfRange {
                start,
                count,
                capacity: cap,
            });
        }
        Ok(())
    }

    /// Writes `count` sectors from `start`, the host's data ready at
    /// `ready`. Returns when the last sector is in the power-cut-protected
    /// buffer, i.e. when the write may be acknowledged.
    pub fn write(&mut self, ready: Nanos, start: u64, count: u64) -> Result<Nanos, FtlError> {
        self.check_range(start, count)?;
        if self.cfg.gc_mode == GcMode::Paced && self.idle_target_lebs > 0.0 {
            self.groom_idle(ready);
        }
        self.nand.advance(ready);
        if self.flashback.is_some() {
            self.flashback_before_io(ready, Some((start, count)), true);
        }
        // Legacy GC collects a whole unit whenever a write finds the array
        // idle; paced GC's budget already grows in idle time.
        if self.cfg.gc_mode == GcMode::Legacy
            && self.blocks.free_len() < self.cfg.gc_background_lebs as usize
            && self.nand.idle_at(ready)
        {
            self.collect_one(ready);
        }
        let paced = self.cfg.gc_mode == GcMode::Paced;
        let first_seq = self.stats.host_sectors_written + 1;
        let t = self.place_host(ready, start, count, first_seq, paced);
        self.stats.host_sectors_written += count;
        self.last_io_at = self.last_io_at.max(t);
        self.last_write_at = self.last_write_at.max(t);
        Ok(t)
    }

    /// Places host sectors `start..start + count`, sequence numbers from
    /// `first_seq` on, one write unit's worth at a time through the write
    /// buffer, the data ready at `ready`; with `paced`, paced GC does its
    /// share after each chunk. Returns when the last chunk was admitted.
    /// The one placement loop of host writes, plain and atomic.
    fn place_host(
        &mut self,
        ready: Nanos,
        start: u64,
        count: u64,
        first_seq: u64,
        paced: bool,
    ) -> Nanos {
        let mut t = ready;
        let mut lba = start;
        let end = start + count;
        while lba < end {
            let chunk = (end - lba).min(self.spu as u64);
            t = self.admit(t, chunk);
            for l in lba..lba + chunk {
                self.place(t, l as u32, Origin::Host(first_seq + (l - start)));
            }
            if paced {
                self.pace(t, chunk);
            }
            lba += chunk;
        }
        t
    }

    /// Reads `count` sectors from `start`, starting at `ready`. Returns when
    /// the data is at the controller. Unwritten sectors cost no media access.
    pub fn read(&mut self, ready: Nanos, start: u64, count: u64) -> Result<Nanos, FtlError> {
        self.check_range(start, count)?;
        self.catch_up(ready);
        self.nand.advance(ready);
        self.last_io_at = self.last_io_at.max(ready);
        if self.flashback.is_some() {
            // With a data store attached (media log on) only writes relocate.
            self.flashback_before_io(ready, None, !self.obs.has::<MediaLog>());
        }
        let open_unit = self.open_unit_id();
        if let Some(fb) = self.flashback.as_deref_mut() {
            let done = fb.read(&self.map, &mut self.nand, open_unit, ready, start, count);
            self.stats.host_sectors_read += count;
            return done;
        }
        let mut done = ready;
        let mut media = 0;
        let mut runs = UnitRuns::new(start, start + count);
        while let Some((_, n, unit)) = runs.next(&self.map) {
            if Some(unit) != open_unit && !self.parked_open(unit) {
                let bank = self.bank_of_unit(unit);
                let bytes = n * self.cfg.sector_bytes as u64;
                done = done.max(self.nand.read_unit_host(ready, bank, bytes));
                media += n;
            }
        }
        if self.cfg.gc_read_charge > 0.0 && media > 0 && self.cfg.gc_mode == GcMode::Paced {
            let burst = (self.spu * self.cfg.geometry.banks) as f64;
            self.gc.top_up(ready, burst);
            self.gc
                .charge(self.cfg.gc_read_charge * media as f64, burst);
        }
        self.stats.host_sectors_read += count;
        Ok(done)
    }

    /// Discards `count` sectors from `start`: they read as unwritten and GC
    /// no longer moves them.
    pub fn trim(&mut self, start: u64, count: u64) -> Result<(), FtlError> {
        self.check_range(start, count)?;
        if self.obs.on() {
            let floor = self.stats.host_sectors_written;
            self.obs.each(|o| o.trimmed(start, count, floor));
        }
        if self.flashback.is_some() {
            self.flashback_before_io(self.buffer.last_admit(), Some((start, count)), false);
        }
        for lba in start..start + count {
            self.map.unmap(lba);
        }
        self.stats.host_sectors_trimmed += count;
        Ok(())
    }

    /// Hints that logical sector `lba` is about to be accessed: brings its
    /// map entry towards the cache, or with `deep` (the entry should be
    /// cached by now) the valid-bit word of the slot it points to, which an
    /// overwrite clears. No effect on state or results.
    #[inline]
    pub fn prefetch(&self, lba: u64, deep: bool) {
        self.map.prefetch(lba, deep);
    }

    /// Physical slot of a logical sector, if mapped (for tests and tools).
    pub fn lookup(&self, lba: u64) -> Option<u32> {
        self.map.lookup(lba)
    }

    /// Sequence number of the host write whose data sector `lba` reads back,
    /// or `None` if unwritten. Requires `track_sequence`.
    pub fn read_sequence(&self, lba: u64) -> Option<u64> {
        assert!(self.cfg.track_sequence, "sequence numbers are not tracked");
        self.lookup(lba).map(|psa| self.map.seq_at(psa))
    }

    fn open_unit_id(&self) -> Option<u32> {
        self.blocks.frontier().open_unit(self.spl, self.spu)
    }

    fn bank_of_unit(&self, unit: u32) -> u32 {
        (unit % self.cfg.geometry.units_per_leb()) % self.cfg.geometry.banks
    }

    /// Waits for room for `n` host sectors in the write buffer (FIFO).
    fn admit(&mut self, ready: Nanos, n: u64) -> Nanos {
        let (t, waited) = self.buffer.admit(ready, n);
        self.stats.buffer_waits += waited as u64;
        t
    }

    /// Appends one logical sector at the frontier, its data ready at `t`.
    /// A GC move keeps the sequence number of the data it moves.
    fn place(&mut self, t: Nanos, lba: u32, origin: Origin) {
        let host = matches!(origin, Origin::Host(_));
        let stream = if self.pools.is_some() {
            Some(self.choose_stream(lba, origin))
        } else {
            None
        };
        // `while`, not `if`: foreground GC run by opening a unit may fill
        // that unit to the brim with moved data.
        while self.blocks.frontier_full() {
            self.open_next_leb(t, host);
            if let Some(s) = stream {
                // GC run by opening the unit may have moved another pool's
                // data through its frontier.
                self.switch_stream(s);
            }
        }
        let (psa, leb) = self.blocks.next_slot();
        // A GC move knows where the sector is: skipping the map load keeps
        // the move free of a dependent cache miss.
        let (old, seq) = match origin {
            Origin::Host(seq) => (self.map.slot_of(lba), seq),
            Origin::Moved(from) => {
                debug_assert_eq!(self.map.slot_of(lba), from);
                (from, self.map.seq_at(from))
            }
        };
        self.map.map(lba, psa, leb, old, seq);
        if self.obs.placements() {
            let from = match origin {
                Origin::Host(_) => UNMAPPED,
                Origin::Moved(from) => from,
            };
            self.obs.each(|o| o.placed(psa, lba, seq, from));
        }
        if let Some(fb) = self.flashback.as_deref_mut() {
            fb.placed(&self.map, &mut self.nand, t, psa, lba, origin);
        }
        if self.blocks.fill(t, host) {
            self.program_open_unit();
        }
    }

    fn program_open_unit(&mut self) {
        let (unit, ready, host_slots) = self.blocks.take_open_unit();
        let done = self.nand.program_unit(ready, self.bank_of_unit(unit));
        if self.obs.on() {
            self.obs.each(|o| o.programmed(unit, done));
        }
        if let Some(fb) = self.flashback.as_deref_mut() {
            fb.programmed(&self.map, unit, done);
        }
        self.buffer.programmed(done, host_slots);
    }

    fn open_next_leb(&mut self, t: Nanos, host: bool) {
        self.blocks.close_frontier(self.stats.host_sectors_written);
        let leb = self.blocks.open_next(self.nand.erase_counts());
        assert_eq!(self.map.valid(leb), 0);
        self.adjust_parking();
        if let Some(p) = self.pools.as_mut() {
            p.opened(leb);
        }
        if self.obs.on() {
            self.obs.each(|o| o.opened(leb));
        }
        // A stall starts when a cohort opens with the free pool
        // (`pool_free`) down to `reserve - stall` units and lasts until the
        // reserve is free again: on a full-size card (stall 1) this is
        // "keep the reserve free"; on a card whose erase units are shrunk
        // by `stall`, it reclaims what one full-size unit would (one GC
        // group, released whole).
        let reserve = self.cfg.gc_reserve_lebs as usize;
        let stall = self.cfg.gc_stall_lebs as usize;
        //
        // The check runs only when a host write opens the cohort's first
        // unit. Legacy GC's idle-time collection (in `write`) may open that
        // unit with its moves instead, and then no check runs until the
        // next cohort: host writes may take up to two cohorts (the whole
        // reserve of 2 × `stall` units) with no stall, and on a card
        // scaled by a large `stall` (SLC at scale 0.02: 32) the free list
        // ran dry. So a legacy host write that leaves the free list empty
        // stalls too: its unit has just opened, so the first victim's
        // moves (fewer than a unit) fit in it, and each victim after that
        // takes at most the one free unit it gives back.
        let exhausted = self.cfg.gc_mode == GcMode::Legacy && self.blocks.free_len() == 0;
        if host
            && (exhausted || (self.blocks.cohort_start() && self.pool_free() <= reserve - stall))
        {
            let mut rounds = 0;
            self.wall_hit = true;
            self.nand.set_foreground(true);
            let moved_before = self.stats.gc_sectors_moved;
            // Back to the low watermark, one victim at a time.
            while self.pool_free() < reserve {
                rounds += 1;
                assert!(rounds <= self.cfg.geometry.lebs(), "GC makes no progress");
                match self.cfg.gc_mode {
                    GcMode::Legacy => self.collect_one(t),
                    GcMode::Paced => self.finish_victim(t),
                }
            }
            // Then the groomer takes its runway back before the host
            // resumes: the free space this stall gains past the low
            // watermark, counted in sectors (the frontier's unused part
            // included, so what moved data fill counts against it), one
            // whole victim at a time, and on a scaled card one whole group
            // of `k` small victims (a full-size victim's bytes) at a time,
            // as the full card's stall collects whole victims. It goes only
            // as far as some unit holds something to reclaim (a small
            // card's spare may not reach it; below the watermark that is
            // the device-full error).
            let runway = self.cfg.gc_runway_lebs;
            if runway > 0.0 {
                let goal = self.blocks.reclaimed_space_lebs() + runway;
                while self.blocks.reclaimed_space_lebs() < goal || self.blocks.gc_group_len() > 0 {
                    rounds += 1;
                    assert!(rounds <= self.cfg.geometry.lebs(), "GC makes no progress");
                    if !self.try_collect(t) {
                        break;
                    }
                }
            }
            // Then up to its quantum of moves, a sector at a time.
            let quantum = (self.cfg.gc_stall_quantum_lebs * self.spl as f64) as u64;
            self.move_until(t, moved_before, quantum);
            self.nand.set_foreground(false);
            self.fg_moved += self.stats.gc_sectors_moved - moved_before;
            if self.cfg.gc_yield_ns > 0 {
                self.paced_after = self.nand.busy_until().max(t) + Nanos(self.cfg.gc_yield_ns);
            }
        }
    }

    /// A scaled card parks (or brings back) one free unit so that the
    /// units it parks make up what its GC pool leaves of the allowance
    /// ([`FtlConfig::pool_allowance`]) on average: the spare in closed
    /// units, what greedy GC's write amplification follows, is then the
    /// full card's share whether the pool sits at the low watermark (a
    /// stalling workload, the groomer's stop-and-go) or between the
    /// watermarks. A unit is parked only while the pool is at or above the
    /// low watermark (a stall starts `k` units below it) and leaves room
    /// for it in the allowance, and one at a time as units open. The
    /// average starts at the low watermark ([`parking_start`]) and follows
    /// the pool only while it is within the allowance, so a card parks its
    /// share within its first pass of writes after a fill, not after three.
    /// Full size: nothing to do.
    fn adjust_parking(&mut self) {
        if self.pool_allowance == 0.0 {
            return;
        }
        let target = self.pool_allowance - self.pool_mean;
        let parked = self.blocks.parked_len() as f64;
        // Never more parked than the pool leaves of the allowance now: the
        // units in service then hold at least the full card's share.
        let room = parked + 1.0 + self.blocks.reclaimed_space_lebs() <= self.pool_allowance;
        if parked + 1.0 < target && room && self.pool_free() >= self.cfg.gc_reserve_lebs as usize {
            self.blocks.park_one();
        } else if parked > 0.0 && parked - 1.0 > target {
            self.blocks.unpark_one(self.nand.erase_counts());
        }
    }

    /// Free units GC's watermarks and stalls count
    /// ([`BlockManager::pool_free`]).
    #[inline]
    fn pool_free(&self) -> usize {
        self.blocks.pool_free()
    }

    /// [`Vsl::pool_free`] once the frontier has moved to the next unit.
    #[inline]
    fn pool_free_after_open(&self) -> usize {
        self.blocks.pool_free_after_open()
    }

    fn select_victim(&mut self) -> u32 {
        let victim = self
            .best_victim(false)
            .expect("no closed erase unit to collect");
        assert!(
            self.map.valid(victim) < self.spl,
            "GC victim is fully valid: the device has no spare space"
        );
        victim
    }

    /// The closed erase unit GC should collect next (the wear-levelling
    /// victim every 64th run when wear has spread), if any is closed.
    /// With several pools, GC collects from the pool furthest above its
    /// target; an `urgent` collection (paced GC's foreground stall: the
    /// host waits for it) lets the policy choose among every pool's units,
    /// so the stall reclaims what frees space soonest (docs/MODEL.md, "A
    /// stall collects anywhere"). Legacy GC, whose every collection is in
    /// the foreground, keeps to the pool over its target.
    fn best_victim(&mut self, urgent: bool) -> Option<u32> {
        // Every 64th full-size erase unit's worth of GC runs.
        let every = 64 * self.cfg.gc_stall_lebs as u64;
        if self.stats.gc_runs % every == every - 1 {
            if let Some(cold) = self.wear_level_victim() {
                self.stats.wear_level_runs += 1;
                return Some(cold);
            }
        }
        let only = match self.pools.as_mut() {
            Some(p) => {
                let pool =
                    p.pool_to_collect(self.blocks.states(), self.map.valid_counts(), self.spl);
                pool.filter(|_| !urgent)
            }
            None => None,
        };
        let mut units = Candidates {
            state: self.blocks.states(),
            valid: self.map.valid_counts(),
            closed_at: self.blocks.closed_at(),
            close_seq: self.blocks.close_seq(),
            erase_counts: self.nand.erase_counts(),
            capacity: self.spl,
            now: self.stats.host_sectors_written,
            pool: &[],
            only: 0,
        };
        if let (Some(only), Some(p)) = (only, self.pools.as_ref()) {
            units.pool = p.leb_stream();
            units.only = only;
        }
        let leb = self.gc.select(&units)?;
        assert!(
            units.get(leb).is_some(),
            "GC policy {} chose unit {leb}, which is no candidate (closed, a slot stale)",
            self.gc.policy_name()
        );
        Some(leb)
    }

    /// The least-worn closed erase unit, if wear has spread too far.
    fn wear_level_victim(&self) -> Option<u32> {
        let counts = self.nand.erase_counts();
        let max = counts.iter().copied().max().unwrap_or(0);
        let (leb, min) = self
            .blocks
            .states()
            .iter()
            .enumerate()
            .filter(|(_, s)| **s == LebState::Closed)
            .map(|(i, _)| (i as u32, counts[i]))
            .min_by_key(|&(i, c)| (c, i))?;
        (max - min > self.cfg.wear_level_spread && self.map.valid(leb) < self.spl).then_some(leb)
    }

    /// Collects one unit as the GC mode does ([`Vsl::collect_one`] or
    /// [`Vsl::finish_victim`]); false, doing nothing, when no closed unit
    /// holds stale data.
    fn try_collect(&mut self, t: Nanos) -> bool {
        match self.cfg.gc_mode {
            GcMode::Legacy => {
                let victim = self.best_victim(false);
                match victim.filter(|&v| self.map.valid(v) < self.spl) {
                    Some(v) => self.collect_leb(t, v),
                    None => return false,
                }
            }
            GcMode::Paced => {
                if !self.gc.collecting() && !self.start_victim(true) {
                    return false;
                }
                self.finish_victim(t);
            }
        }
        true
    }

    /// Reclaims one erase unit: reads its valid sectors, appends them at the
    /// frontier, erases it and returns it to the free list. The controller
    /// issues every read of the victim before the moved data is programmed,
    /// so reads on all banks overlap instead of waiting behind programs.
    fn collect_one(&mut self, t: Nanos) {
        let victim = self.select_victim();
        self.collect_leb(t, victim);
    }

    /// Reclaims erase unit `victim` (closed) as [`Vsl::collect_one`] does.
    fn collect_leb(&mut self, t: Nanos, victim: u32) {
        self.stats.gc_runs += 1;
        let base = victim * self.spl;
        let sector = self.cfg.sector_bytes as u64;
        let units = self.cfg.geometry.units_per_leb();
        let (mut ready, mut valid) = self.gc.take_scratch();
        // Pass 1: find the valid slots of each unit and issue its read.
        for unit in 0..units {
            let first = base + unit * self.spu;
            let before = valid.len();
            valid.extend((first..first + self.spu).filter(|&psa| self.map.is_valid(psa)));
            let n = (valid.len() - before) as u64;
            let done = if n == 0 {
                t
            } else {
                let bank = unit % self.cfg.geometry.banks;
                self.nand.read_unit(t, bank, n * sector)
            };
            ready.push(done);
        }
        // Pass 2: append them at the frontier once their unit's read is done.
        for &psa in &valid {
            let unit = (psa - base) / self.spu;
            let lba = self.map.lba_at(psa);
            self.place(ready[unit as usize], lba, Origin::Moved(psa));
        }
        self.stats.gc_sectors_moved += valid.len() as u64;
        if self.obs.on() {
            for &from in &valid {
                self.notify_moved(from);
            }
        }
        self.gc.return_scratch(ready, valid);
        assert_eq!(self.map.valid(victim), 0, "victim still holds data");
        let done = self.nand.erase_leb(t, victim);
        if let Some(fb) = self.flashback.as_deref_mut() {
            fb.erased(victim);
        }
        self.notify_erased(victim, done);
        self.blocks.erased(victim, self.nand.erase_count(victim));
    }

    /// Erase units a scaled card has parked off its free list
    /// ([`Vsl::adjust_parking`]); always 0 on a full-size card.
    pub fn parked_lebs(&self) -> usize {
        self.blocks.parked_len()
    }

    /// Cross-checks the map against the block manager; panics with the first
    /// inconsistency. O(capacity): for tests and `--check`.
    pub fn check_consistency(&self) {
        self.map.check(|leb| match self.blocks.state(leb) {
            LebState::Free => Some("free"),
            LebState::Reserved => Some("reserved"),
            LebState::Retired => Some("retired"),
            LebState::Parked => Some("parked"),
            _ => None,
        });
        let streams = self.pools.as_ref().map_or(1, |p| p.streams());
        self.blocks.check(streams);
    }
}

/// Paced GC (`GcMode::Paced`): the groomer collects one erase unit at a
/// time, a few sectors per host write, at a pace set by free space.
impl Vsl {
    /// Free space in erase units, the open frontier's unused part included.
    fn free_space_lebs(&self) -> f64 {
        self.blocks.free_space_lebs()
    }

    /// Charges `host` just-written sectors their GC share and does the
    /// moves owed. Above the high watermark nothing is owed; below it each
    /// host sector owes `ratio × 2 (high − free) / (high − low)` moves
    /// (`ratio`: moves per reclaimed slot of the unit being collected): at
    /// the midpoint of the watermarks the pace equals the ratio, so free
    /// space settles there when the budget allows. The budget grows with
    /// time at `gc_share` of the array's move capacity (up to one write
    /// unit per bank banked); beyond it free space falls to the low
    /// watermark and host writes stall.
    fn pace(&mut self, t: Nanos, host: u64) {
        if self.pool_allowance > 0.0 {
            // Averaged over about one pass of host writes over the usable
            // space, while the pool is within its allowance (a fresh or
            // trimmed card's free space is not the pool GC keeps).
            let pass = self.cfg.usable_lebs() as f64 * self.spl as f64;
            let a = (host as f64 / pass).min(1.0);
            let pool = self.blocks.reclaimed_space_lebs();
            if pool <= self.pool_allowance {
                self.pool_mean += a * (pool - self.pool_mean);
            }
        }
        let high = self.cfg.gc_background_lebs as f64;
        let low = self.cfg.gc_reserve_lebs as f64;
        let burst = (self.spu * self.cfg.geometry.banks) as f64;
        self.gc.top_up(t, burst);
        let free = self.pace_free_lebs();
        if free >= high || t < self.paced_after {
            self.gc.clear_debt();
            return;
        }
        if !self.gc.collecting() && !self.start_victim(false) {
            return;
        }
        let ratio = self.gc.victim().map_or(0.0, |v| v.ratio);
        let urgency = 2.0 * (high - free) / (high - low);
        let owed = self.gc.owe(ratio * urgency * host as f64, burst);
        for _ in 0..owed {
            if !self.paced_move(t) {
                break;
            }
        }
    }

    /// The free space the pace works from, in erase units. With
    /// `gc_pace_progress`: the erased units of a scaled card's GC group
    /// held back, plus the scanned share of the victim, less one
    /// full-size unit (`gc_stall_lebs` small ones) for the victim in hand;
    /// continuous across an erase and a group's release, and one unit
    /// below the plain count when a victim has just been picked, so the
    /// pace settles where the plain count did. Otherwise the plain count.
    pub fn pace_free_lebs(&self) -> f64 {
        if !self.cfg.gc_pace_progress {
            return self.free_space_lebs();
        }
        let scanned = self
            .gc
            .victim()
            .map_or(0.0, |v| v.next as f64 / self.spl as f64);
        self.blocks.reclaimed_space_lebs() + scanned - self.cfg.gc_stall_lebs as f64
    }

    /// One background move (or the erase that ends a victim) at `t`; false
    /// when none may be made now.
    fn paced_move(&mut self, t: Nanos) -> bool {
        if self.pools.is_some() {
            // The check below is about the frontier the moves fill.
            if !self.gc.collecting() && !self.start_victim(false) {
                return false;
            }
            let leb = self.gc.victim().map_or(0, |v| v.leb);
            let s = self.pools.as_ref().map_or(0, |p| p.stream_of(leb));
            self.switch_stream(s);
        }
        // Paced moves never take the last reserved units: opening one
        // is left to the host write that then runs foreground GC.
        let full = self.blocks.frontier_full();
        let stall_at = (self.cfg.gc_reserve_lebs - self.cfg.gc_stall_lebs) as usize;
        if full && self.pool_free_after_open() <= stall_at {
            return false;
        }
        if !self.gc.collecting() && !self.start_victim(false) {
            return false;
        }
        self.gc_step(t);
        true
    }

    /// Grooming while the host was idle: from when the last host I/O and
    /// the array's queued work were done until `now`, the groomer moves
    /// sectors at the array's whole move capacity, until free space reaches
    /// the idle target or the array would still be busy at `now` (so the
    /// host's next I/O does not wait for idle-time work).
    fn groom_idle(&mut self, now: Nanos) {
        if now < self.last_io_at + IDLE_AFTER {
            return;
        }
        let mut clock = (self.last_io_at + IDLE_AFTER).max(self.nand.busy_until());
        let share = self.cfg.gc_share.max(f64::MIN_POSITIVE);
        let step =
            Nanos(((share / self.gc.moves_per_ns()).ceil() as u64).max(1)).max(self.move_cost);
        let moved_before = self.stats.gc_sectors_moved;
        while clock + step < now
            && self.nand.busy_until() <= now
            && self.free_space_lebs() < self.idle_target_lebs
            && self.paced_move(clock)
        {
            clock += step;
        }
        // Sectors moved, not steps taken: a step may erase the victim.
        self.idle_moved += self.stats.gc_sectors_moved - moved_before;
    }

    /// Catch-up grooming ([`FtlConfig::gc_catchup_lebs`]) before a host I/O
    /// at `now`: if host writes stalled at the low watermark and have since
    /// stopped, the groomer collects whole units in the foreground from
    /// `now` until its catch-up target is free. The work is queued on the
    /// banks (and, by the device, on the data paths) ahead of the I/O.
    fn catch_up(&mut self, now: Nanos) {
        if (self.cfg.gc_catchup_lebs <= 0.0 && self.cfg.gc_catchup_moves_lebs <= 0.0)
            || !self.wall_hit
            || now < self.last_write_at + Nanos(self.cfg.gc_catchup_after_ns)
        {
            return;
        }
        self.wall_hit = false;
        self.nand.set_foreground(true);
        let moved_before = self.stats.gc_sectors_moved;
        if self.cfg.gc_catchup_moves_lebs > 0.0 {
            // A target in work: that many units' worth of slots moved.
            let goal = (self.cfg.gc_catchup_moves_lebs * self.spl as f64).round() as u64;
            self.move_until(now, moved_before, goal);
        } else {
            self.catch_up_free_space(now);
        }
        self.nand.set_foreground(false);
        self.fg_moved += self.stats.gc_sectors_moved - moved_before;
    }

    /// Catch-up's free-space target ([`FtlConfig::gc_catchup_lebs`]): whole
    /// units collected until the low watermark plus its whole part is
    /// free, then its fraction of the next victim's valid slots moved.
    fn catch_up_free_space(&mut self, now: Nanos) {
        let whole = self.cfg.gc_catchup_lebs.floor();
        let fraction = self.cfg.gc_catchup_lebs - whole;
        let target = self.cfg.gc_reserve_lebs as usize + whole as usize;
        let mut rounds = 0;
        while self.pool_free() < target && (self.gc.collecting() || self.start_victim(true)) {
            rounds += 1;
            assert!(rounds <= self.cfg.geometry.lebs(), "GC makes no progress");
            self.finish_victim(now);
        }
        // The fraction: that share of the next victim's valid slots, one
        // sector at a time, once the whole units are free.
        if fraction > 0.0
            && self.pool_free() >= target
            && (self.gc.collecting() || self.start_victim(true))
        {
            if let Some(leb) = self.gc.victim().map(|v| v.leb) {
                let goal = (fraction * self.map.valid(leb) as f64).round() as u64;
                let start = self.stats.gc_sectors_moved;
                while self.stats.gc_sectors_moved - start < goal
                    && self.gc.victim().map(|v| v.leb) == Some(leb)
                {
                    self.gc_step(now);
                }
            }
        }
    }

    /// Moves sectors at `t`, one at a time from the victim in hand on (the
    /// last victim may be left part collected), until `goal` sectors have
    /// moved since the count stood at `since`, or nothing is left to
    /// reclaim. It starts no victim once the free pool is above the high
    /// watermark, and it ends at a victim that holds nothing valid: the
    /// goal counts moves, and such a unit frees without any (sequential
    /// overwrites), so it is left, picked, to the background groomer's
    /// paced erases instead of the stall erasing a run of them at once.
    fn move_until(&mut self, t: Nanos, since: u64, goal: u64) {
        let mut rounds = 0;
        while self.stats.gc_sectors_moved - since < goal {
            rounds += 1;
            assert!(
                rounds <= self.cfg.geometry.lebs() * (self.spl + 1),
                "GC makes no progress"
            );
            if !self.gc.collecting()
                && (self.pool_free() > self.cfg.gc_background_lebs as usize
                    || !self.start_victim(true)
                    || self.gc.victim().is_some_and(|v| self.map.valid(v.leb) == 0))
            {
                break;
            }
            self.gc_step(t);
        }
    }

    /// Picks the next unit to collect (`urgent`: for a foreground stall,
    /// [`Vsl::best_victim`]); false if none has invalid slots.
    fn start_victim(&mut self, urgent: bool) -> bool {
        let (leb, ahead) = match self.gc.take_next() {
            Some(picked) => picked,
            None => {
                let Some(leb) = self.best_victim(urgent) else {
                    return false;
                };
                if self.map.valid(leb) >= self.spl {
                    return false;
                }
                self.gc.clear_reads();
                self.blocks.mark_victim(leb);
                (leb, 0)
            }
        };
        let valid = self.map.valid(leb);
        self.stats.gc_runs += 1;
        self.gc.set_victim(Some(Victim {
            leb,
            next: 0,
            read_unit: u32::MAX,
            read_done: Nanos::ZERO,
            ahead,
            ratio: valid as f64 / (self.spl - valid) as f64,
        }));
        true
    }

    /// Collects the unit being collected (or a new one) to the end, in the
    /// foreground: the host waits for it (stop-the-world, one unit).
    fn finish_victim(&mut self, t: Nanos) {
        if !self.gc.collecting() && !self.start_victim(true) {
            // Nothing can be reclaimed. A scaled card takes back a unit it
            // parked (its pool had fallen further below its average than
            // the card's spare allows); otherwise the legacy path reports
            // why.
            if self.blocks.parked_len() > 0 {
                self.blocks.unpark_one(self.nand.erase_counts());
                return;
            }
            self.select_victim();
            return;
        }
        let leb = self.gc.victim().map(|v| v.leb);
        let mut steps = 0u64;
        while self.gc.victim().map(|v| v.leb) == leb {
            steps += 1;
            assert!(steps <= self.spl as u64 + 1, "GC makes no progress");
            self.gc_step(t);
        }
    }

    /// One step of collecting the victim at time `t`: moves its next valid
    /// sector (reading that sector's write unit first, once), or erases it
    /// when none is left.
    fn gc_step(&mut self, t: Nanos) {
        let mut v = self.gc.victim().expect("a unit is being collected");
        let base = v.leb * self.spl;
        let Some(psa) = self.map.next_valid(base + v.next, base + self.spl) else {
            assert_eq!(self.map.valid(v.leb), 0, "victim still holds data");
            // A group is released whole, and so that the pool stays a whole
            // number of cohorts: the first group after the pool has moved
            // off a multiple of `k` (the usable units are not a whole number
            // of cohorts; a spare brought in, a unit retired) is short. The
            // group's last erase is the one charged a block erase's time,
            // as the full card erases when its victim is done.
            let k = self.cfg.gc_stall_lebs as usize;
            let group = self.blocks.gc_group_len() + 1;
            let release = (self.pool_free() + group).is_multiple_of(k) || group >= k;
            let charge = release && self.cfg.gc_stall_lebs == self.cfg.erase_batch;
            let done = self.nand.erase_leb_in_batch(t, v.leb, charge);
            if let Some(fb) = self.flashback.as_deref_mut() {
                fb.erased(v.leb);
            }
            self.notify_erased(v.leb, done);
            self.blocks.erased_into_group(v.leb);
            self.gc.set_victim(None);
            if release {
                self.release_gc_group();
            }
            return;
        };
        let unit = (psa - base) / self.spu;
        if unit != v.read_unit {
            let banks = self.cfg.geometry.banks;
            let units = self.cfg.geometry.units_per_leb();
            if v.ahead <= unit {
                // Moves skipped past the read-ahead (units emptied by host
                // overwrites): restart it here.
                self.gc.clear_reads();
                v.ahead = unit;
            }
            let reach = unit + banks + self.cfg.gc_read_ahead_units;
            while v.ahead < units && v.ahead <= reach {
                let first = base + v.ahead * self.spu;
                let n = self.map.count_valid(first, first + self.spu) as u64;
                if n > 0 {
                    let done =
                        self.nand
                            .read_unit(t, v.ahead % banks, n * self.cfg.sector_bytes as u64);
                    self.gc.push_read(v.ahead, done);
                }
                v.ahead += 1;
            }
            if v.ahead >= units && unit + banks >= units {
                self.read_ahead_next(t, unit + banks + 1 - units);
            }
            v.read_done = self.gc.read_of(unit).unwrap_or(t);
            v.read_unit = unit;
        }
        v.next = psa - base + 1;
        self.gc.set_victim(Some(v));
        // The map entry a move rewrites is a random access: start loading
        // the one `GC_PREFETCH` slots ahead (stale slots prefetch harmlessly).
        self.map.prefetch_entry_of_slot(psa + GC_PREFETCH);
        let lba = self.map.lba_at(psa);
        self.place(v.read_done, lba, Origin::Moved(psa));
        self.stats.gc_sectors_moved += 1;
        if self.obs.on() {
            self.notify_moved(psa);
        }
    }

    /// A scaled card's read-ahead past the end of a small victim: one
    /// full-size unit's GC reads run `banks` write units ahead of its
    /// moves without a break, so while the current victim is not its
    /// group's last, the next one is picked now and its first `want`
    /// units read (a full-size card restarts the read-ahead once per
    /// unit, so nothing changes there).
    fn read_ahead_next(&mut self, t: Nanos, want: u32) {
        let k = self.cfg.gc_stall_lebs as usize;
        if k <= 1 || self.pools.is_some() || self.blocks.gc_group_len() + 1 >= k {
            return;
        }
        if self.gc.next().is_none() {
            let Some(leb) = self
                .best_victim(false)
                .filter(|&l| self.map.valid(l) < self.spl)
            else {
                return;
            };
            self.blocks.mark_victim(leb);
            self.gc.set_next(leb);
        }
        let banks = self.cfg.geometry.banks;
        let units = self.cfg.geometry.units_per_leb();
        let sector = self.cfg.sector_bytes as u64;
        let (spl, spu) = (self.spl, self.spu);
        let Some(next) = self.gc.next() else {
            return;
        };
        let base = next.leb * spl;
        while next.ahead < units && next.ahead < want {
            let a = next.ahead;
            let first = base + a * spu;
            let n = self.map.count_valid(first, first + spu) as u64;
            if n > 0 {
                next.reads
                    .push_back((a, self.nand.read_unit(t, a % banks, n * sector)));
            }
            next.ahead += 1;
        }
    }

    /// Puts the units erased in the current GC group on the free list.
    fn release_gc_group(&mut self) {
        self.blocks.release_gc_group(self.nand.erase_counts());
    }
}

/// Data-store hooks and recovery: what the real-time serving layer needs to
/// keep user data by physical slot and rebuild the map after a crash.
impl Vsl {
    /// Starts recording [`MediaEvent`]s (a [`MediaLog`] observer); drain
    /// them with [`Vsl::drain_media_log`] after every call that may run GC.
    pub fn enable_media_log(&mut self) {
        if !self.obs.has::<MediaLog>() {
            self.add_observer(Box::new(MediaLog::with_capacity(self.spl as usize + 1)));
        }
    }

    /// Moves the recorded events, oldest first, into `out`.
    pub fn drain_media_log(&mut self, out: &mut Vec<MediaEvent>) {
        if let Some(log) = self.obs.find_mut::<MediaLog>() {
            log.drain(out);
        }
    }

    /// Installs an observer of the media: from now on it hears of every
    /// placement (if it asks for them), program, erase, GC move, opened
    /// unit, trim and atomic-write boundary, after the observers installed
    /// before it.
    pub fn add_observer(&mut self, o: Box<dyn MediaObserver>) {
        self.obs.add(o);
    }

    /// The first installed observer of type `T`, to read what it gathered.
    pub fn observer_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.obs.find_mut::<T>()
    }

    /// Tells the observers GC moved the sector in slot `from` (placed
    /// already: the map gives where it went).
    fn notify_moved(&mut self, from: u32) {
        let lba = self.map.lba_at(from);
        let to = self.map.slot_of(lba);
        let seq = self.map.seq_at(to);
        self.obs.each(|o| o.moved(from, to, lba, seq));
    }

    /// Tells the observers erase unit `leb` was erased, done at `done`.
    #[inline]
    fn notify_erased(&mut self, leb: u32, done: Nanos) {
        if self.obs.on() {
            self.obs.each(|o| o.erased(leb, done));
        }
    }

    /// Physical slots in one erase unit.
    pub fn slots_per_leb(&self) -> u32 {
        self.spl
    }

    /// Physical slots in the device (every erase unit, reserved included).
    pub fn physical_slots(&self) -> u64 {
        self.map.slots() as u64
    }

    /// The next `k` free erase units in the order the log opens them
    /// (least erased first), for a store that prepares them ahead.
    pub fn next_free_lebs(&self, k: usize) -> Vec<u32> {
        self.blocks.next_free(k)
    }

    /// Erase units in the device (reserved and retired ones included).
    pub fn lebs(&self) -> u32 {
        self.blocks.states().len() as u32
    }

    /// The valid slots of erase unit `leb` if it is closed (written whole,
    /// not being collected); `None` for a free, open, victim, reserved or
    /// retired unit.
    pub fn closed_valid(&self, leb: u32) -> Option<u32> {
        (self.blocks.state(leb) == LebState::Closed).then(|| self.map.valid(leb))
    }

    /// Appends to `out` the runs of erase unit `leb`'s slots that hold no
    /// current data, as `(first slot within the unit, slots)`.
    pub fn stale_runs(&self, leb: u32, out: &mut Vec<(u32, u32)>) {
        self.map.stale_runs(leb, out);
    }

    /// True when erase unit `leb` is on the free list (erased, unused).
    pub fn is_free_leb(&self, leb: u32) -> bool {
        self.blocks.state(leb) == LebState::Free
    }

    /// Takes worn-out erase unit `leb` out of service for good (block
    /// retirement): it leaves the free list and is never written again;
    /// GC then runs at `now` until the GC reserve is free again, as when
    /// the log opens a unit. Only a free unit can go; returns whether it
    /// was retired (a unit in use is retired after GC has erased it).
    pub fn retire_leb(&mut self, leb: u32, now: Nanos) -> bool {
        let reserve = self.cfg.gc_reserve_lebs as usize;
        if !self.is_free_leb(leb) || self.blocks.free_len() < reserve {
            return false;
        }
        self.blocks.retire_free(leb);
        let mut rounds = 0;
        while self.blocks.free_len() < reserve {
            rounds += 1;
            assert!(rounds <= self.cfg.geometry.lebs(), "GC makes no progress");
            self.collect_one(now);
        }
        true
    }

    /// Retires free erase unit `leb` and brings the first reserved unit
    /// into service in its place (spare replacement): the free list keeps
    /// its length, so GC keeps its headroom and no GC runs. Returns the
    /// spare, or `None`, changing nothing, when `leb` is not free, the GC
    /// reserve is short, or no reserved unit is left.
    pub fn replace_leb(&mut self, leb: u32) -> Option<u32> {
        let reserve = self.cfg.gc_reserve_lebs as usize;
        if !self.is_free_leb(leb)
            || self.blocks.free_len() < reserve
            || self.reserved_lebs_left() == 0
        {
            return None;
        }
        let spare = self.blocks.activate_spare(self.nand.erase_counts())?;
        self.blocks.retire_free(leb);
        Some(spare)
    }

    /// Reserved erase units left to bring in as spares.
    pub fn reserved_lebs_left(&self) -> u32 {
        self.blocks.reserved_left()
    }

    /// True when erase unit `leb` is in service: free, open, closed or
    /// being collected (not reserved, not retired).
    pub fn in_service(&self, leb: u32) -> bool {
        !matches!(
            self.blocks.states().get(leb as usize),
            None | Some(LebState::Reserved | LebState::Retired)
        )
    }

    /// Out-of-band sequence number recorded with slot `psa` (0 when not
    /// tracked or never programmed).
    pub fn slot_sequence(&self, psa: u32) -> u64 {
        self.map.seq_at(psa)
    }

    /// Rebuilds a device from the out-of-band records a store scanned, in
    /// any order: each logical sector maps to its record with the highest
    /// sequence number (records of trimmed data must already be dropped).
    /// Erase units holding valid data are closed; the rest are free and a
    /// fresh one becomes the log frontier. Timing state starts idle at 0 and
    /// the host write counter resumes after `max(seq, seq_floor)`, so new
    /// writes always carry higher sequence numbers than anything on media.
    pub fn recover(
        cfg: FtlConfig,
        records: &[OobRecord],
        seq_floor: u64,
        erase_counts: Option<&[u32]>,
    ) -> Result<Vsl, FtlError> {
        Vsl::recover_at(cfg, records, seq_floor, erase_counts, None)
    }

    /// [`Vsl::recover`], continuing the log in erase unit `resume.0` from
    /// slot `resume.1` (the first unprogrammed write unit of the unit that
    /// was the frontier) instead of opening a free one.
    pub fn recover_at(
        cfg: FtlConfig,
        records: &[OobRecord],
        seq_floor: u64,
        erase_counts: Option<&[u32]>,
        resume: Option<(u32, u32)>,
    ) -> Result<Vsl, FtlError> {
        let mut vsl = Vsl::new(cfg)?;
        let resume = resume.filter(|&(leb, next)| leb < vsl.cfg.usable_lebs() && next < vsl.spl);
        if !vsl.cfg.track_sequence {
            return Err(FtlError::Config(
                "recovery needs out-of-band sequence numbers (track_sequence)".into(),
            ));
        }
        let slots = vsl.map.slots() as u64;
        // Records may lie in reserved units brought in as spares.
        let usable_slots = slots;
        let mut best_seq = vec![0u64; vsl.map.sectors()];
        let mut max_seq = seq_floor;
        for r in records {
            if r.psa as u64 >= usable_slots || r.lba as u64 >= vsl.cfg.user_sectors || r.seq == 0 {
                return Err(FtlError::Config(format!(
                    "out-of-band record {r:?} is outside the device ({slots} slots, {} sectors)",
                    vsl.cfg.user_sectors
                )));
            }
            max_seq = max_seq.max(r.seq);
            vsl.map.restore_record(r.psa, r.lba, r.seq);
            if r.seq > best_seq[r.lba as usize] {
                best_seq[r.lba as usize] = r.seq;
                vsl.map.restore_entry(r.lba, r.psa);
            }
        }
        // Without a free erase unit (the cut fell while the log frontier
        // had just taken the last one), the log continues where the newest
        // record lies: its unit's first write unit after its last record.
        let resume = resume.or_else(|| {
            let newest = records.iter().max_by_key(|r| r.seq)?;
            let leb = newest.psa / vsl.spl;
            let mut has_records = vec![false; vsl.cfg.geometry.lebs() as usize];
            let mut last = 0;
            for r in records {
                let l = r.psa / vsl.spl;
                has_records[l as usize] = true;
                if l == leb {
                    last = last.max(r.psa % vsl.spl);
                }
            }
            let next = (last / vsl.spu + 1) * vsl.spu;
            let usable = vsl.cfg.usable_lebs();
            let empty_unit = (0..usable).any(|l| !has_records[l as usize]);
            (!empty_unit && leb < usable && next < vsl.spl).then_some((leb, next))
        });
        if let Some(counts) = erase_counts {
            vsl.nand.restore_erase_counts(counts);
        }
        vsl.map.rebuild_valid();
        {
            let Vsl {
                blocks, map, nand, ..
            } = &mut vsl;
            blocks.recover(map.valid_counts(), nand.erase_counts(), resume);
        }
        for leb in 0..vsl.cfg.usable_lebs() {
            if vsl.blocks.state(leb) == LebState::Free {
                vsl.map.clear_leb(leb);
            }
        }
        if resume.is_none() {
            let Some(_frontier) = vsl.blocks.recover_open() else {
                let valid: u64 = vsl.map.valid_counts().iter().map(|&v| v as u64).sum();
                return Err(FtlError::Config(format!(
                    "recovered device has no free erase unit for the log frontier ({} units \
                     hold {valid} valid sectors of {} user sectors, {} slots each; {} records)",
                    vsl.cfg.usable_lebs(),
                    vsl.cfg.user_sectors,
                    vsl.spl,
                    records.len()
                )));
            };
        }
        vsl.stats.host_sectors_written = max_seq;
        Ok(vsl)
    }
}

/// Sectors per ns the array can move (read, transfer in and out, program)
/// with every bank and the bus busy: the lower of the banks' and the bus's
/// limits.
/// How long the host must have been quiet before the groomer takes the
/// array for idle grooming (an assumption: the VSL's idle detection is not
/// published; short enough for the SNIA HIR waits, long enough that the
/// gaps of a QD 1 workload are not idle time).
pub const IDLE_AFTER: Nanos = Nanos(10_000_000);

/// The free space idle grooming works up to: the high watermark plus
/// `gc_idle_fraction` of the spare units above it (units neither reserved
/// nor needed to hold every user sector); 0 when idle grooming is off.
fn idle_target_lebs(cfg: &FtlConfig) -> f64 {
    if cfg.gc_idle_fraction <= 0.0 {
        return 0.0;
    }
    let needed = cfg.user_sectors.div_ceil(cfg.slots_per_leb() as u64) as f64;
    let spare = (cfg.usable_lebs() as f64 - needed).max(0.0);
    let high = cfg.gc_background_lebs as f64;
    high + cfg.gc_idle_fraction * (spare - high).max(0.0)
}

fn move_capacity_per_ns(cfg: &FtlConfig) -> f64 {
    let g = &cfg.geometry;
    let spu = cfg.slots_per_unit() as f64;
    let bus_bps = cfg.timing.bus_bytes_per_s as f64 * g.data_channels() as f64;
    let unit_xfer_ns = g.write_unit_bytes() as f64 / bus_bps * 1e9;
    let bank_ns_per_unit = unit_xfer_ns + cfg.timing.program_ns as f64 + cfg.timing.read_ns as f64;
    let banks = g.banks as f64 * spu / bank_ns_per_unit;
    let bus = bus_bps / 1e9 / (2.0 * cfg.sector_bytes as f64);
    banks.min(bus)
}

/// How many slots ahead of a GC move its map entry is prefetched: about 40
/// moves at a victim two-thirds valid, a few microseconds of wall time,
/// well over a random access's 350 ns here (a TLB miss under nested paging
/// plus DRAM). 64 simulated a full-size 1.2 TB member 5-10 % faster than 8
/// (bench/RESULTS.md, "Largest preset at full size"); results do not
/// depend on it.
const GC_PREFETCH: u32 = 64;

/// A vector of `n` copies of `value` for the large per-sector and per-slot
/// tables. On Linux their memory is marked for transparent huge pages
/// before it is first touched: the tables are read at random, and with 4 KiB
/// pages nearly every access also misses the TLB (a 320 GB member's map
/// alone spans 80,000 pages). Only a hint: without huge pages the vector is
/// the same.
fn table<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = n * std::mem::size_of::<T>();
        if bytes >= 4 * HUGE {
            let start = v.as_mut_ptr() as usize;
            let aligned = start.next_multiple_of(HUGE);
            let end = (start + bytes) / HUGE * HUGE;
            if end > aligned {
                // SAFETY: the range lies inside the vector's allocation,
                // which this function owns; madvise only sets a paging hint
                // on it and its failure is harmless.
                unsafe {
                    libc::madvise(
                        aligned as *mut libc::c_void,
                        end - aligned,
                        libc::MADV_HUGEPAGE,
                    );
                }
            }
        }
    }
    v.resize(n, value);
    v
}

/// Asks the CPU to bring the cache line holding `value` closer; a hint that
/// never faults and changes nothing else.
#[inline]
fn prefetch_line<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint that never faults, and the pointer comes
    // from a live reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch(
            (value as *const T).cast::<i8>(),
            std::arch::x86_64::_MM_HINT_T0,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
