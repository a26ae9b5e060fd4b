use crate::dispatch::Dispatch;
use crate::flashback::{ranges, MediaReport, ReliabilityOptions};
use crate::health::{Health, HealthReport, HealthState};
use crate::preset::{Format, Preset};
use crate::thermal::Environment;
use ftl::{
    FtlConfig, FtlError, FtlStats, GcMode, GcPolicy, Placement, PlacementSpec, PoolStats,
    ReadPolicy, VictimPolicy, Vsl,
};
use serde::Serialize;
use sim::{Nanos, Resource};

// The VSL's parameters (reserved fraction, GC watermarks and share, write
// buffer, wear-levelling spread, read scheduling) come from the preset's
// `[vsl]` table (`presets/*.toml`, docs/MODEL.md).
/// Fewest erase units a member scaled below one page per block keeps.
pub const MIN_SCALED_LEBS: u32 = 24;
/// Pages per block a scaled erase unit keeps at least (above one page per
/// block): one-page units let a 64-page SLC card at scale 0.02 stall in
/// shorter bursts than the full card (latency stddev 0.79, p99 0.75 of the
/// full card's); two pages give 0.93-0.95 (`bench/scale_table.sh`,
/// docs/MODEL.md "Scaling").
pub const MIN_SCALED_PAGES: u32 = 2;
/// Default seed of the FTL's random choices (d-choices' draws), mixed with
/// the member's number so the two ioMemory devices of a Duo draw apart.
pub const GC_SEED: u64 = 0x0047_435f_5345_4544;
/// Host RAM the model refuses to exceed without `--scale` (bytes).
pub const MAX_MODEL_RAM: u64 = 16 << 30;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    #[error(transparent)]
    Ftl(#[from] FtlError),
    #[error("I/O at offset {offset} length {len} is not aligned to the {sector}-byte sector")]
    Misaligned { offset: u64, len: u64, sector: u32 },
    #[error("I/O at offset {offset} length {len} is beyond the device's {capacity} bytes")]
    OutOfRange {
        offset: u64,
        len: u64,
        capacity: u64,
    },
    #[error("{0}")]
    Config(String),
    #[error("ioMemory {member} is {state}: it accepts no more writes (its worn erase blocks left too little spare); read the data off it")]
    ReadOnly { member: u32, state: HealthState },
    #[error("ioMemory {member} powered off at {temperature_c:.1} °C internal temperature (limit 85 °C): improve its airflow or lower the ambient temperature")]
    Overheated { member: u32, temperature_c: f64 },
}

impl DeviceError {
    /// For a read that failed with an I/O error (lost sectors) but took
    /// its time: when it completed. The lab counts it and goes on.
    pub fn failed_io_done(&self) -> Option<Nanos> {
        match self {
            DeviceError::Ftl(FtlError::Lost { done, .. }) => Some(*done),
            _ => None,
        }
    }
}

/// Kind of a block I/O.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoKind {
    Read,
    Write,
    Trim,
}

/// Cumulative counters of a device.
#[derive(Copy, Clone, Debug, Default, Serialize)]
pub struct DeviceStats {
    pub host_bytes_read: u64,
    pub host_bytes_written: u64,
    pub host_sectors_written: u64,
    pub gc_sectors_moved: u64,
    pub gc_runs: u64,
    pub erases: u64,
    pub nand_bytes_programmed: u64,
    pub nand_bytes_read: u64,
    pub host_ram_bytes: u64,
}

impl DeviceStats {
    pub fn write_amplification(&self) -> f64 {
        self.write_amplification_since(&DeviceStats::default())
    }

    /// Write amplification of the writes made since `before`; 0 if none.
    pub fn write_amplification_since(&self, before: &DeviceStats) -> f64 {
        let host = self.host_sectors_written - before.host_sectors_written;
        let moved = self.gc_sectors_moved - before.gc_sectors_moved;
        if host == 0 {
            return 0.0;
        }
        (host + moved) as f64 / host as f64
    }
}

/// The interface the lab drives: a block device in virtual time. `submit`
/// returns when the I/O completes; submissions come in non-decreasing `now`.
pub trait VirtualDevice {
    fn capacity_bytes(&self) -> u64;
    fn sector_bytes(&self) -> u32;
    fn submit(
        &mut self,
        now: Nanos,
        kind: IoKind,
        offset: u64,
        len: u64,
    ) -> Result<Nanos, DeviceError>;
    fn stats(&self) -> DeviceStats;
    /// A hint that an I/O at `offset` comes soon: the model prefetches its
    /// map entry, and with `deep` (the map entry is expected to be cached
    /// by now) what the entry points to. Changes no state and no result.
    fn prefetch(&self, _offset: u64, _deep: bool) {}
    /// CPU time a submitting thread spends per I/O
    /// ([`Preset::host_thread_ns`]): a closed-loop driver issues a
    /// thread's I/Os at least this far apart. 0 = no per-thread limit.
    fn host_thread_ns(&self) -> u64 {
        0
    }
}

/// Which ioMemory devices of a card to use.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberSel {
    One(u32),
    All,
}

impl MemberSel {
    pub fn parse(s: &str) -> Result<MemberSel, String> {
        if s == "all" {
            return Ok(MemberSel::All);
        }
        s.parse::<u32>()
            .map(MemberSel::One)
            .map_err(|_| format!("invalid member '{s}' (expected 0, 1, … or all)"))
    }
}

/// How to build a [`Card`].
#[derive(Clone, Debug, Serialize)]
pub struct CardConfig {
    pub preset: &'static Preset,
    pub format: Format,
    pub sector_bytes: u32,
    /// Fraction of the card modelled: each erase unit keeps this fraction
    /// of its pages (capacity shrinks; erase-unit count, parallelism and
    /// timing do not). See [`CardConfig::ftl_config`].
    pub scale: f64,
    pub member: MemberSel,
    /// RAID 0 chunk across members.
    pub chunk_bytes: u64,
    pub gc_policy: GcPolicy,
    /// Seeds the FTL's random victim choices (d-choices); each member mixes
    /// in its number. `vsl run` sets it from `--seed`.
    pub gc_seed: u64,
    pub gc_mode: GcMode,
    /// Reads overtake queued programs and erases in the bank queues.
    pub read_priority: bool,
    /// With `read_priority`: only host reads overtake, and only background
    /// work (`vsl.read_priority_background_only`).
    #[serde(skip_serializing_if = "crate::preset::is_false")]
    pub read_priority_background_only: bool,
    /// ... and GC reads keep their place among the reads
    /// (`vsl.read_priority_gc_reads_in_order`).
    #[serde(skip_serializing_if = "crate::preset::is_false")]
    pub read_priority_gc_reads_in_order: bool,
    /// Program/erase suspend for reads (None: off; the presets' NAND of
    /// 2008-2012 has none, see docs/MODEL.md).
    pub suspend_ns: Option<u64>,
    /// A read holds its bank for its data-out too (`vsl.read_holds_die`).
    pub read_holds_die: bool,
    /// Host reads a member holds in hardware (`vsl.read_pipe_depth`; 0:
    /// no limit) and whether its I/Os are dispatched in order
    /// (`vsl.dispatch_in_order`).
    #[serde(skip_serializing_if = "crate::preset::is_zero_u32")]
    pub read_pipe_depth: u32,
    #[serde(skip_serializing_if = "crate::preset::is_false")]
    pub dispatch_in_order: bool,
    /// Bytes the data keeps after compression (1.0: incompressible, as
    /// fio's default random buffers). Only a compressing controller
    /// (SandForce) gains from it.
    pub data_compressibility: f64,
    pub track_sequence: bool,
    /// Ambient air, airflow and external power (health and thermals).
    pub environment: Environment,
    /// Die failures (Flashback) and media errors; off by default.
    pub reliability: ReliabilityOptions,
    /// Data placement (`--placement`); `Streams` ranges are card bytes
    /// ([`crate::placement::member_placement`]).
    #[serde(skip_serializing_if = "PlacementSpec::is_single")]
    pub placement: PlacementSpec,
}

impl CardConfig {
    pub fn new(preset: &'static Preset) -> CardConfig {
        CardConfig {
            preset,
            format: Format::Stock,
            sector_bytes: 4096,
            scale: 1.0,
            member: MemberSel::All,
            chunk_bytes: 512 * 1024,
            gc_policy: GcPolicy::Greedy,
            gc_seed: GC_SEED,
            gc_mode: GcMode::Paced,
            read_priority: preset.vsl.read_priority,
            read_priority_background_only: preset.vsl.read_priority_background_only,
            read_priority_gc_reads_in_order: preset.vsl.read_priority_gc_reads_in_order,
            suspend_ns: preset.vsl.suspend_ns,
            read_holds_die: preset.vsl.read_holds_die,
            read_pipe_depth: preset.vsl.read_pipe_depth,
            dispatch_in_order: preset.vsl.dispatch_in_order,
            data_compressibility: 1.0,
            track_sequence: false,
            environment: Environment::default(),
            reliability: ReliabilityOptions::default(),
            placement: PlacementSpec::Single,
        }
    }

    /// The geometry of one member after `--scale`, and how many scaled
    /// erase-unit erases make one full block erase. Scaling shrinks every
    /// erase unit (fewer pages per block) and keeps their number, so the GC
    /// reserve, the watermarks and the free-space statistics are those of
    /// the full card; only when one page per block is not small enough does
    /// the erase-unit count shrink too.
    pub fn scaled_geometry(&self) -> (nand::Geometry, u32) {
        let mut g = self.preset.geometry;
        if self.scale >= 1.0 {
            return (g, 1);
        }
        let full_pages = g.pages_per_block as f64;
        if self.scale * full_pages < 1.0 {
            // Below one page per block: fewer full-size erase units (at
            // least MIN_SCALED_LEBS), as scaling did before; GC statistics
            // then differ from the full card's (tiny test cards).
            let lebs = (g.blocks_per_plane as f64 * self.scale).ceil() as u32;
            g.blocks_per_plane = lebs.max(MIN_SCALED_LEBS).min(g.blocks_per_plane);
            return (g, 1);
        }
        let scale = self.scale;
        let pages = ((full_pages * scale).round() as u32)
            .clamp(MIN_SCALED_PAGES.min(g.pages_per_block), g.pages_per_block);
        let page_scale = pages as f64 / full_pages;
        let lebs = (g.blocks_per_plane as f64 * (scale / page_scale)).round() as u32;
        g.pages_per_block = pages;
        g.blocks_per_plane =
            lebs.clamp(MIN_SCALED_LEBS.min(g.blocks_per_plane), g.blocks_per_plane);
        let batch = (full_pages / pages as f64).round() as u32;
        (g, batch.max(1))
    }

    /// The FTL configuration of one member, after format and scale.
    pub fn ftl_config(&self) -> Result<FtlConfig, DeviceError> {
        let p = self.preset;
        let err = |m: String| Err(DeviceError::Config(m));
        if !(self.scale > 0.0 && self.scale <= 1.0) {
            return err(format!("scale {} must be in (0, 1]", self.scale));
        }
        let (mut geometry, erase_batch) = self.scaled_geometry();
        let ratio = geometry.data_bytes() as f64 / p.geometry.data_bytes() as f64;
        let c = self.data_compressibility;
        if !(c > 0.0 && c <= 1.0) {
            return err(format!("data compressibility {c} must be in (0, 1]"));
        }
        let mut timing = p.timing;
        if p.compression && c < 1.0 {
            // A page stores 1/c of its size in logical data; its transfer
            // moves only the compressed bytes.
            let logical = (geometry.page_bytes as f64 / c / 512.0).round() as u32 * 512;
            let gain = logical as f64 / geometry.page_bytes as f64;
            geometry.page_bytes = logical;
            timing.bus_bytes_per_s = (timing.bus_bytes_per_s as f64 * gain) as u64;
        }
        // Watermarks and stalls count in full-size erase units: a scaled
        // card's `erase_batch` small units hold one full unit's bytes. The
        // GC reserve (the low watermark, where free space sits when pacing
        // cannot keep up) counts towards the reserved fraction, and so does
        // the unwritten half of the frontier's cohort (on average (k-1)/2
        // units more than the full card's half unit), so a scaled card
        // keeps the full card's effective spare.
        // Below about scale 0.015 (one page per block and fewer units) the
        // groups are capped so the GC pool stays within 1/16 of the units:
        // such cards are for quick looks, their stalls are smaller.
        let v = &p.vsl;
        let k = erase_batch.min((geometry.blocks_per_plane / (16 * v.gc_background_lebs)).max(1));
        // The pool's allowance: its share of the full card's spare is not
        // enough, because a scaled card's pool holds as many bytes as the
        // full card's (FtlConfig::pool_allowance; with paced GC the card
        // parks what its pool does not use, docs/MODEL.md "Scaling").
        let allowance =
            FtlConfig::pool_allowance(self.gc_mode, k, v.gc_reserve_lebs, v.gc_background_lebs);
        let reserved_lebs = ((geometry.blocks_per_plane as f64 * v.reserved_fraction).round()
            as u32)
            .saturating_sub(allowance);
        let sector = self.sector_bytes as u64;
        let mut cfg = FtlConfig {
            geometry,
            timing,
            sector_bytes: self.sector_bytes,
            user_sectors: 0,
            reserved_lebs,
            gc_policy: self.gc_policy,
            gc_seed: self.gc_seed,
            gc_mode: self.gc_mode,
            gc_reserve_lebs: v.gc_reserve_lebs * k,
            gc_background_lebs: v.gc_background_lebs * k,
            gc_stall_lebs: k,
            gc_share: v.gc_share,
            gc_runway_lebs: v.gc_runway_lebs * k as f64,
            gc_stall_quantum_lebs: v.gc_stall_quantum_lebs * k as f64,
            gc_catchup_lebs: v.catchup_lebs * k as f64,
            gc_catchup_moves_lebs: v.catchup_moves_lebs * k as f64,
            gc_read_ahead_units: v.gc_read_ahead_units,
            gc_catchup_after_ns: v.catchup_after_ns.unwrap_or(ftl::IDLE_AFTER.0),
            gc_yield_ns: v.gc_yield_ns,
            gc_idle_fraction: v.idle_groom_fraction,
            gc_pace_progress: v.gc_pace_progress,
            gc_read_charge: v.gc_read_charge,
            read_policy: ReadPolicy {
                priority: self.read_priority,
                suspend_ns: self.suspend_ns,
                hold_die: self.read_holds_die,
                background_only: self.read_priority_background_only,
                gc_reads_in_order: self.read_priority_gc_reads_in_order,
            },
            erase_batch,
            buffer_bytes: v.buffer_units * geometry.write_unit_bytes(),
            wear_level_spread: v.wear_level_spread,
            track_sequence: self.track_sequence,
        };
        let usable_bytes = cfg.usable_lebs() as u64 * cfg.slots_per_leb() as u64 * sector;
        let user_bytes = match self.format {
            Format::Stock => (p.stock_bytes as f64 * ratio) as u64,
            Format::Hp => (p.geometry.raw_bytes() as f64 * 0.64 * ratio) as u64,
            Format::ImprovedWrite => (p.stock_bytes as f64 * 0.70 * ratio) as u64,
            Format::MaxWrite => (p.stock_bytes as f64 * 0.50 * ratio) as u64,
            Format::Capacity(b) => (b as f64 * ratio) as u64,
            Format::Overprovision(f) => {
                if !(0.0..1.0).contains(&f) {
                    return err(format!(
                        "over-provisioning {:.1}% must be in [0, 100)",
                        f * 100.0
                    ));
                }
                (usable_bytes as f64 * (1.0 - f)) as u64
            }
        };
        cfg.user_sectors = user_bytes / sector;
        if cfg.user_sectors == 0 {
            return err("formatted capacity is zero".into());
        }
        let ram =
            cfg.user_sectors * 4 + cfg.geometry.lebs() as u64 * cfg.slots_per_leb() as u64 * 4;
        if ram > MAX_MODEL_RAM {
            return err(format!(
                "this format needs {:.1} GiB of host RAM per member for its map; use --scale or 4096-byte sectors",
                ram as f64 / (1u64 << 30) as f64
            ));
        }
        cfg.validate()?;
        Ok(cfg)
    }
}

/// A card of a [`CardConfig`] before any member is built: what
/// [`Card::new`] checks, without allocating the members' maps.
struct CardLayout {
    member_ids: Vec<u32>,
    ftl: FtlConfig,
    chunk_sectors: u64,
    capacity_sectors: u64,
    /// Each member's share of `--placement`.
    placement: PlacementSpec,
}

impl CardConfig {
    fn layout(&self) -> Result<CardLayout, DeviceError> {
        let p = self.preset;
        let member_ids: Vec<u32> = match self.member {
            MemberSel::All => (0..p.members).collect(),
            MemberSel::One(i) if i < p.members => vec![i],
            MemberSel::One(i) => {
                return Err(DeviceError::Config(format!(
                    "member {i} does not exist: {} has {} ioMemory device(s) (0..{})",
                    p.name,
                    p.members,
                    p.members - 1
                )))
            }
        };
        let sector = self.sector_bytes as u64;
        if self.chunk_bytes == 0 || !self.chunk_bytes.is_multiple_of(sector) {
            return Err(DeviceError::Config(format!(
                "RAID chunk {} is not a positive multiple of the {sector}-byte sector",
                self.chunk_bytes
            )));
        }
        let ftl = self.ftl_config()?;
        let chunk_sectors = self.chunk_bytes / sector;
        let n = member_ids.len() as u64;
        let per_member = ftl.user_sectors;
        let capacity_sectors = if n == 1 {
            per_member
        } else {
            (per_member / chunk_sectors) * chunk_sectors * n
        };
        if capacity_sectors == 0 {
            return Err(DeviceError::Config(
                "striped capacity is smaller than one chunk".into(),
            ));
        }
        let placement = crate::placement::member_placement(
            &self.placement,
            sector,
            n,
            chunk_sectors,
            capacity_sectors,
        )?;
        Ok(CardLayout {
            member_ids,
            ftl,
            chunk_sectors,
            capacity_sectors,
            placement,
        })
    }

    /// Checks everything [`Card::new`] checks of the configuration (the
    /// member, the format, the stripe, `--placement`'s ranges against the
    /// capacity) without building the card: for commands that refuse bad
    /// options before they do anything else.
    pub fn check(&self) -> Result<(), DeviceError> {
        self.layout().map(|_| ())
    }
}

/// One ioMemory device: its FTL and controller. Its fields are private:
/// the methods below are what the lab, the attached card's store replay
/// (`blockdev`) and the tests read, and the few things they may change.
pub struct Member {
    vsl: Vsl,
    health: Health,
    id: u32,
    ctrl_read: Resource,
    ctrl_write: Resource,
    cmd_read_ns: u64,
    cmd_write_ns: u64,
    read_bps: u64,
    write_bps: u64,
    link_bps: u64,
    host_read_ns: u64,
    host_write_ns: u64,
    /// GC moves hold the data paths ([`Preset::gc_datapath`]): the time
    /// one moved sector holds the write path and (with
    /// [`Preset::gc_datapath_split`]) the read path, 0 if not.
    move_ns: u64,
    move_read_ns: u64,
    /// What a background move holds the write path for beyond `move_ns`
    /// (`vsl.gc_move_read_hold` of its read transfer), and the member's
    /// foreground moves already charged (they hold no more than `move_ns`).
    move_hold_ns: u64,
    fg_charged: u64,
    /// Moves made by a host read (catch-up grooming) are charged ahead of it.
    charge_read_moves: bool,
    /// The read pipe and in-order dispatch ([`Dispatch`]).
    dispatch: Dispatch,
}

impl Member {
    fn new(
        preset: &Preset,
        cfg: FtlConfig,
        id: u32,
        env: Environment,
        rel: &ReliabilityOptions,
        dispatch: Dispatch,
    ) -> Result<Member, DeviceError> {
        let (cmd_read_ns, cmd_write_ns) = preset.command_ns();
        let (read_bps, write_bps) = preset.datapath_bytes_per_s();
        // The garbage collector bypass: a moved sector comes up the read
        // pipeline and goes down the write pipeline; split, each holds its
        // path for its own transfer, else the write path holds both.
        let sector = cfg.sector_bytes as u64;
        let (read_xfer, write_xfer) = (
            Nanos::for_bytes(sector, read_bps).0,
            Nanos::for_bytes(sector, write_bps).0,
        );
        let (move_ns, move_read_ns) = match (preset.gc_datapath, preset.gc_datapath_split) {
            (false, _) => (0, 0),
            (true, false) => (read_xfer + write_xfer, 0),
            (true, true) => (write_xfer, read_xfer),
        };
        // Split, a background move may also hold the write path for part
        // of its read, waiting there to be inserted among the host's
        // writes; in a foreground stall no host write is in its way.
        let move_hold_ns = if preset.gc_datapath && preset.gc_datapath_split {
            (preset.vsl.gc_move_read_hold * read_xfer as f64).round() as u64
        } else {
            0
        };
        let charge_read_moves = cfg.gc_catchup_lebs > 0.0 || cfg.gc_catchup_moves_lebs > 0.0;
        let health = Health::new(&cfg, env, preset, id, write_bps);
        let mut m = Member {
            health,
            id,
            vsl: Vsl::new(cfg)?,
            ctrl_read: Resource::default(),
            ctrl_write: Resource::default(),
            cmd_read_ns,
            cmd_write_ns,
            read_bps,
            write_bps,
            link_bps: preset.link_bytes_per_s,
            host_read_ns: preset.host_read_ns,
            host_write_ns: preset.host_write_ns,
            move_ns,
            move_read_ns,
            move_hold_ns,
            fg_charged: 0,
            charge_read_moves,
            dispatch,
        };
        m.equip(rel)?;
        Ok(m)
    }

    /// What a member's FTL gets beyond its configuration, on a new one
    /// and on one recovered from a store ([`Card::adopt_recovered`]): the
    /// data path's cost of a GC move and (if it applies to this member)
    /// Flashback's reliability model.
    fn equip(&mut self, rel: &ReliabilityOptions) -> Result<(), DeviceError> {
        // Idle grooming is paced by the busier of the two paths.
        self.vsl
            .set_move_cost(Nanos(self.move_ns.max(self.move_read_ns)));
        let id = self.id;
        if rel.applies_to(id) {
            let cycles = self.vsl.config().timing.endurance_cycles;
            let cfg = rel.ftl_config(id, cycles, self.health.pool_left());
            self.vsl.enable_reliability(cfg).map_err(|e| match e {
                FtlError::Config(m) => DeviceError::Config(format!("ioMemory {id}: {m}")),
                e => e.into(),
            })?;
        }
        Ok(())
    }

    /// The controller's pipeline: a command occupies it for the longer of
    /// its processing time and its data transfer.
    fn pipeline(cmd_ns: u64, bytes: u64, bps: u64) -> Nanos {
        Nanos(cmd_ns).max(Nanos::for_bytes(bytes, bps))
    }

    /// Charges the GC moves made since the FTL had moved `moved0` sectors
    /// (`idle0` of them by idle grooming) to the data paths at `t0`, ahead
    /// of the host I/O that paced or waited for them. Idle grooming's moves
    /// were made in the host's pause, paced at the data path's rate, while
    /// the path had nothing else to do: they are not charged again.
    #[inline]
    fn charge_moves(&mut self, t0: Nanos, moved0: u64, idle0: u64) {
        let idle = self.vsl.gc_idle_moves() - idle0;
        let moved = (self.vsl.gc_sectors_moved() - moved0).saturating_sub(idle);
        let fg = self.vsl.gc_foreground_moves();
        let background = moved.saturating_sub(fg - self.fg_charged);
        self.fg_charged = fg;
        if moved > 0 && self.move_ns > 0 {
            let hold = background * self.move_hold_ns;
            self.ctrl_write
                .reserve(t0, Nanos(moved * self.move_ns + hold));
        }
        if moved > 0 && self.move_read_ns > 0 {
            self.ctrl_read.reserve(t0, Nanos(moved * self.move_read_ns));
        }
    }

    /// Refuses what the device cannot do in its health state: anything
    /// after a thermal power-off, writes and trims once read-only.
    #[inline]
    fn admit(&self, kind: IoKind) -> Result<(), DeviceError> {
        if self.health.powered_off() {
            return Err(DeviceError::Overheated {
                member: self.id,
                temperature_c: self.health.temperature_c(),
            });
        }
        let writes = matches!(kind, IoKind::Write | IoKind::Trim);
        let state = self.health.state();
        if writes && state >= HealthState::ReadOnly {
            return Err(DeviceError::ReadOnly {
                member: self.id,
                state,
            });
        }
        Ok(())
    }

    fn io(
        &mut self,
        now: Nanos,
        kind: IoKind,
        lba: u64,
        sectors: u64,
    ) -> Result<Nanos, DeviceError> {
        self.admit(kind)?;
        let done = self.io_admitted(now, kind, lba, sectors);
        self.health.observe(now, &mut self.vsl);
        done
    }

    /// An atomic vectored write ([`Vsl::atomic_write`]): `writes` and
    /// `trims` are `(lba, sectors)` ranges of this member, applied
    /// all-or-nothing; timed as one write of all the written sectors.
    fn atomic(
        &mut self,
        now: Nanos,
        writes: &[(u64, u64)],
        trims: &[(u64, u64)],
    ) -> Result<Nanos, DeviceError> {
        self.admit(IoKind::Write)?;
        let sectors: u64 = writes.iter().map(|w| w.1).sum();
        let bytes = sectors * self.vsl.sector_bytes() as u64;
        let t0 = self.dispatch.write_entry(now + Nanos(self.host_write_ns));
        let (moved0, idle0) = (self.vsl.gc_sectors_moved(), self.vsl.gc_idle_moves());
        let done = self.vsl.atomic_write(t0, writes, trims);
        self.charge_moves(t0, moved0, idle0);
        let done = done.map(|admitted| {
            let admitted = self.health.throttle_write(admitted, bytes);
            let (_, done) = self.ctrl_write.reserve(
                admitted,
                Self::pipeline(self.cmd_write_ns, bytes.max(1), self.write_bps),
            );
            done
        });
        self.health.observe(now, &mut self.vsl);
        Ok(done?)
    }

    fn io_admitted(
        &mut self,
        now: Nanos,
        kind: IoKind,
        lba: u64,
        sectors: u64,
    ) -> Result<Nanos, DeviceError> {
        let bytes = sectors * self.vsl.sector_bytes() as u64;
        match kind {
            IoKind::Read => {
                let mut t0 = now + Nanos(self.host_read_ns);
                if !self.dispatch.is_off() {
                    t0 = self.dispatch.read_entry(t0);
                }
                let (moved0, idle0) = (self.vsl.gc_sectors_moved(), self.vsl.gc_idle_moves());
                let media_done = self.vsl.read(t0, lba, sectors)?;
                self.dispatch.read_done(media_done);
                if self.charge_read_moves {
                    // Grooming the read set off (catch-up) goes first.
                    self.charge_moves(t0, moved0, idle0);
                }
                let (_, ctrl_done) = self
                    .ctrl_read
                    .reserve(t0, Self::pipeline(self.cmd_read_ns, bytes, self.read_bps));
                Ok(ctrl_done.max(media_done + Nanos::for_bytes(bytes, self.link_bps)))
            }
            IoKind::Write => {
                let t0 = self.dispatch.write_entry(now + Nanos(self.host_write_ns));
                let (moved0, idle0) = (self.vsl.gc_sectors_moved(), self.vsl.gc_idle_moves());
                let admitted = self.vsl.write(t0, lba, sectors)?;
                self.charge_moves(t0, moved0, idle0);
                let admitted = self.health.throttle_write(admitted, bytes);
                let (_, done) = self.ctrl_write.reserve(
                    admitted,
                    Self::pipeline(self.cmd_write_ns, bytes, self.write_bps),
                );
                Ok(done)
            }
            IoKind::Trim => {
                self.vsl.trim(lba, sectors)?;
                Ok(now + Nanos(self.host_write_ns))
            }
        }
    }
}

/// Read-only questions a member answers from its FTL, asked by name.
macro_rules! ftl_queries {
    ($($(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) $(-> $ret:ty)?;)*) => {
        $(
            $(#[$doc])*
            #[inline]
            pub fn $name(&self $(, $arg: $ty)*) $(-> $ret)? {
                self.vsl.$name($($arg),*)
            }
        )*
    };
}

/// What the lab, the attached card's store replay and the tests read of a
/// member, and the few changes they may make to it. Sectors and slots are
/// the member's own (on a striped card, not the card's).
impl Member {
    /// Its ioMemory device number (0 or 1 on a Duo).
    pub fn id(&self) -> u32 {
        self.id
    }

    ftl_queries! {
        /// The FTL's configuration (after format and scale).
        fn config(&self) -> &FtlConfig;
        /// The FTL's counters.
        fn stats(&self) -> FtlStats;
        /// The GC victim policy's name (`vsl policies`).
        fn victim_policy_name(&self) -> String;
        /// The data placement's name (`single` with one log).
        fn placement_name(&self) -> String;
        /// Each pool's units, valid data, adaptive target and share of
        /// host writes (one pool with one stream).
        fn pool_stats(&self) -> Vec<PoolStats>;
        /// Physical slot of sector `lba`, if it is mapped.
        fn lookup(&self, lba: u64) -> Option<u32>;
        /// Out-of-band sequence number recorded with slot `psa`.
        fn slot_sequence(&self, psa: u32) -> u64;
        /// Sequence number of the host write sector `lba` reads back
        /// (`None`: unwritten; needs `track_sequence`).
        fn read_sequence(&self, lba: u64) -> Option<u64>;
        /// Erase units (reserved and retired ones included).
        fn lebs(&self) -> u32;
        /// Physical slots in one erase unit.
        fn slots_per_leb(&self) -> u32;
        /// Physical slots in all erase units.
        fn physical_slots(&self) -> u64;
        /// Erase units on the free list.
        fn free_lebs(&self) -> usize;
        /// The next `k` free erase units in the order the log opens them.
        fn next_free_lebs(&self, k: usize) -> Vec<u32>;
        /// Erase count of erase unit `leb`.
        fn erase_count(&self, leb: u32) -> u32;
        /// Every erase unit's erase count.
        fn erase_counts(&self) -> &[u32];
        /// The valid slots of erase unit `leb` if it is closed.
        fn closed_valid(&self, leb: u32) -> Option<u32>;
        /// Appends erase unit `leb`'s runs of slots holding no current data.
        fn stale_runs(&self, leb: u32, out: &mut Vec<(u32, u32)>);
        /// True when erase unit `leb` is in service (not reserved or retired).
        fn in_service(&self, leb: u32) -> bool;
        /// Reserved erase units left to bring in as spares.
        fn reserved_lebs_left(&self) -> u32;
        /// Sectors lost to die failures and not rewritten since (Flashback).
        fn lost_sectors(&self) -> Vec<u32>;
        /// The content tag a read of sector `lba` returns (Flashback on).
        fn read_content(&self, lba: u64) -> Result<Option<u32>, FtlError>;
        /// Cross-checks the map against the block manager; panics with the
        /// first inconsistency (tests).
        fn check_consistency(&self);
    }

    /// Health, endurance, power and temperature.
    pub fn health_report(&self) -> HealthReport {
        self.health.report(&self.vsl)
    }

    /// The health state (cheaper than the whole [`Member::health_report`]).
    pub fn health_state(&self) -> HealthState {
        self.health.state()
    }

    /// Bad-block pool left: spare erase units a worn one may still take.
    pub fn spare_pool_left(&self) -> u32 {
        self.health.pool_left()
    }

    /// Spare erase units brought into service so far.
    pub fn spares_in_service(&self) -> u32 {
        self.health.spares_in_service()
    }

    /// Moves the GC moves and erases recorded since the last call into
    /// `out` (after [`Card::adopt_recovered`] turned the log on).
    pub fn drain_media_log(&mut self, out: &mut Vec<ftl::MediaEvent>) {
        self.vsl.drain_media_log(out);
    }

    /// Starts the lifetime counters from what the device did before
    /// (physical bytes programmed and read, hottest temperature).
    pub fn set_lifetime_base(&mut self, programmed: u64, read: u64, temperature_max_c: f64) {
        self.health
            .set_lifetime_base(programmed, read, temperature_max_c);
    }

    /// Turns Flashback's parity rebuild off or on (tests: a card without
    /// it returns corrupt data, which the checks must catch).
    pub fn set_parity_rebuild(&mut self, on: bool) {
        self.vsl.set_parity_rebuild(on);
    }
}

/// Division by a divisor fixed at construction: a shift and a mask when it
/// is a power of two (sectors, chunks and the Duo's two members are),
/// plain division otherwise. The same quotients either way.
#[derive(Clone, Copy, Debug)]
struct Divisor {
    d: u64,
    /// `log2(d)` when `d` is a power of two.
    shift: Option<u32>,
}

impl Divisor {
    fn new(d: u64) -> Divisor {
        assert!(d > 0, "division by zero");
        Divisor {
            d,
            shift: d.is_power_of_two().then(|| d.trailing_zeros()),
        }
    }

    #[inline]
    fn div(self, x: u64) -> u64 {
        match self.shift {
            Some(s) => x >> s,
            None => x / self.d,
        }
    }

    #[inline]
    fn rem(self, x: u64) -> u64 {
        match self.shift {
            Some(_) => x & (self.d - 1),
            None => x % self.d,
        }
    }
}

/// A modelled card: the selected members, striped as RAID 0.
pub struct Card {
    pub config: CardConfig,
    members: Vec<Member>,
    member_ids: Vec<u32>,
    chunk_sectors: u64,
    capacity_sectors: u64,
    sector_bytes: u32,
    /// The per-I/O divisions by the sector, the chunk and the member
    /// count, as shifts where they are powers of two.
    div_sector: Divisor,
    div_chunk: Divisor,
    div_members: Divisor,
    host_bytes_read: u64,
    host_bytes_written: u64,
}

impl Card {
    pub fn new(config: CardConfig) -> Result<Card, DeviceError> {
        let l = config.layout()?;
        let members = l
            .member_ids
            .iter()
            .map(|&id| {
                let mut cfg = l.ftl.clone();
                cfg.gc_seed ^= (id as u64) << 56;
                Member::new(
                    config.preset,
                    cfg,
                    id,
                    config.environment,
                    &config.reliability,
                    Dispatch::new(config.read_pipe_depth, config.dispatch_in_order),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut card = Card {
            sector_bytes: config.sector_bytes,
            div_sector: Divisor::new(config.sector_bytes as u64),
            div_chunk: Divisor::new(l.chunk_sectors),
            div_members: Divisor::new(members.len() as u64),
            config,
            members,
            member_ids: l.member_ids,
            chunk_sectors: l.chunk_sectors,
            capacity_sectors: l.capacity_sectors,
            host_bytes_read: 0,
            host_bytes_written: 0,
        };
        card.install_placement(&l.placement)?;
        Ok(card)
    }

    /// Installs each member's share of `--placement` (`spec`, from
    /// [`CardConfig::layout`]) on every member.
    fn install_placement(&mut self, spec: &PlacementSpec) -> Result<(), DeviceError> {
        if spec.is_single() {
            return Ok(());
        }
        let mut built = self
            .members
            .iter()
            .map(|m| {
                spec.build(m.vsl.user_sectors())
                    .map_err(DeviceError::Config)
            })
            .collect::<Result<Vec<_>, _>>()?
            .into_iter();
        self.set_placement(|_, _| built.next().expect("one policy per member"))
    }

    /// Installs a placement policy of your own on every member: `make`
    /// gets the member's ioMemory number and its sector count (a member's
    /// sectors, not the card's: on a striped card sector `s` of the card
    /// is a member's sector `s / members` within its chunk). Call before
    /// the first write (docs/ARCHITECTURE.md, "Adding a placement policy").
    pub fn set_placement(
        &mut self,
        mut make: impl FnMut(u32, u64) -> Box<dyn Placement>,
    ) -> Result<(), DeviceError> {
        for m in &mut self.members {
            let p = make(m.id, m.vsl.user_sectors());
            m.vsl.set_placement(p).map_err(|e| match e {
                FtlError::Config(msg) => DeviceError::Config(format!("--placement: {msg}")),
                e => e.into(),
            })?;
        }
        Ok(())
    }

    pub fn member_ids(&self) -> &[u32] {
        &self.member_ids
    }

    /// Member `i` (an index into [`Card::member_ids`], not an ioMemory
    /// number). Panics when there is no such member.
    pub fn member(&self, i: usize) -> &Member {
        &self.members[i]
    }

    /// Member `i`, for the few changes [`Member`] allows.
    pub fn member_mut(&mut self, i: usize) -> &mut Member {
        &mut self.members[i]
    }

    /// The FTL configuration of the members (they differ only in the seed
    /// of their random choices).
    pub fn ftl_config(&self) -> &FtlConfig {
        self.members[0].vsl.config()
    }

    /// The GC victim policy's name (the same on every member).
    pub fn victim_policy_name(&self) -> String {
        self.members[0].vsl.victim_policy_name()
    }

    /// The data placement's name (the same on every member).
    pub fn placement_name(&self) -> String {
        self.members[0].vsl.placement_name()
    }

    /// Free erase units over all members.
    pub fn free_lebs(&self) -> usize {
        self.members.iter().map(|m| m.vsl.free_lebs()).sum()
    }

    /// Replaces every member's GC victim policy with one `make` builds
    /// (given the member's ioMemory number): a policy of your own
    /// (docs/ARCHITECTURE.md, "Adding a GC policy"). Call before the
    /// first write.
    pub fn set_victim_policy(&mut self, mut make: impl FnMut(u32) -> Box<dyn VictimPolicy>) {
        for m in &mut self.members {
            m.vsl.set_victim_policy(make(m.id));
        }
    }

    /// Keeps the lifetime counters of `before` (a report per member, as
    /// [`Card::health`] gave them) on a card built afresh, as a secure
    /// erase does: endurance used only grows.
    pub fn carry_lifetime(&mut self, before: &[HealthReport]) {
        for (m, h) in self.members.iter_mut().zip(before) {
            m.set_lifetime_base(
                h.physical_bytes_written,
                h.physical_bytes_read,
                h.temperature_max_c,
            );
        }
    }

    /// Replaces the FTL of a card of one member with `vsl`, recovered from
    /// a store (`Vsl::recover`) with this card's [`Card::ftl_config`]: it
    /// gets what [`Card::new`] gives a new one (the data path's move cost,
    /// Flashback if configured, the `--placement`), and the health model
    /// counts the spares it brought into service.
    pub fn adopt_recovered(&mut self, vsl: Vsl) -> Result<(), DeviceError> {
        if self.members.len() != 1 {
            return Err(DeviceError::Config(format!(
                "a recovered FTL replaces the one member of a card; this card stripes {}",
                self.members.len()
            )));
        }
        let placement = self.config.layout()?.placement;
        let m = &mut self.members[0];
        m.vsl = vsl;
        m.fg_charged = m.vsl.gc_foreground_moves();
        m.equip(&self.config.reliability)?;
        self.install_placement(&placement)?;
        let m = &mut self.members[0];
        m.health.adopt_spares(&m.vsl);
        Ok(())
    }

    pub fn member_stats(&self) -> Vec<FtlStats> {
        self.members.iter().map(|m| m.vsl.stats()).collect()
    }

    /// Schedules the deferred die failures (`reliability.defer_failures`)
    /// at `start` + their times: a run's failures count from the start of
    /// its measured part, after preconditioning and warm-up.
    pub fn arm_die_failures(&mut self, start: Nanos) -> Result<(), DeviceError> {
        let rel = self.config.reliability.clone();
        if !rel.defer_failures {
            return Ok(());
        }
        for m in &mut self.members {
            let f = rel.failures_of(m.id, start);
            if !f.is_empty() {
                m.vsl.schedule_die_failures(f)?;
            }
        }
        Ok(())
    }

    /// Card sector of member-local sector `lba` of member index `m`.
    fn card_lba(&self, m: usize, lba: u64) -> u64 {
        if self.members.len() == 1 {
            return lba;
        }
        let n = self.members.len() as u64;
        let (chunk, within) = (lba / self.chunk_sectors, lba % self.chunk_sectors);
        (chunk * n + m as u64) * self.chunk_sectors + within
    }

    /// Die-failure, rebuild and media-error counters of the members that
    /// model them, with every sector ever lost (card sectors, as ranges).
    pub fn media(&self) -> Vec<MediaReport> {
        let mut out = Vec::new();
        for (i, m) in self.members.iter().enumerate() {
            let Some(stats) = m.vsl.reliability_stats() else {
                continue;
            };
            let mut lost: Vec<u64> = m
                .vsl
                .lost_sectors_ever()
                .into_iter()
                .map(|l| self.card_lba(i, l as u64))
                .collect();
            lost.sort_unstable();
            out.push(MediaReport {
                member: m.id,
                stats,
                lost_ranges: ranges(lost),
            });
        }
        out
    }

    /// An atomic vectored write on a card of one member: every write range
    /// and every trim range (`(offset, len)` in bytes, sector aligned,
    /// not overlapping) is applied all-or-nothing, also across a power
    /// cut ([`Vsl::atomic_write`]). Returns when it may be acknowledged.
    pub fn atomic(
        &mut self,
        now: Nanos,
        writes: &[(u64, u64)],
        trims: &[(u64, u64)],
    ) -> Result<Nanos, DeviceError> {
        if self.members.len() != 1 {
            return Err(DeviceError::Config(format!(
                "an atomic write goes to one ioMemory device; this card stripes {}",
                self.members.len()
            )));
        }
        let sector = self.sector_bytes as u64;
        let cap = self.capacity_bytes();
        let to_sectors = |&(offset, len): &(u64, u64)| {
            if !offset.is_multiple_of(sector) || !len.is_multiple_of(sector) || len == 0 {
                return Err(DeviceError::Misaligned {
                    offset,
                    len,
                    sector: self.sector_bytes,
                });
            }
            if offset >= cap || len > cap - offset {
                return Err(DeviceError::OutOfRange {
                    offset,
                    len,
                    capacity: cap,
                });
            }
            Ok((offset / sector, len / sector))
        };
        let w: Vec<(u64, u64)> = writes.iter().map(to_sectors).collect::<Result<_, _>>()?;
        let t: Vec<(u64, u64)> = trims.iter().map(to_sectors).collect::<Result<_, _>>()?;
        let done = self.members[0].atomic(now, &w, &t)?;
        self.host_bytes_written += writes.iter().map(|w| w.1).sum::<u64>();
        Ok(done)
    }

    /// Health, endurance, power and temperature of each member.
    pub fn health(&self) -> Vec<HealthReport> {
        self.members.iter().map(Member::health_report).collect()
    }
}

impl VirtualDevice for Card {
    fn host_thread_ns(&self) -> u64 {
        self.config.preset.host_thread_ns
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity_sectors * self.sector_bytes as u64
    }

    fn sector_bytes(&self) -> u32 {
        self.sector_bytes
    }

    fn submit(
        &mut self,
        now: Nanos,
        kind: IoKind,
        offset: u64,
        len: u64,
    ) -> Result<Nanos, DeviceError> {
        let sector = self.div_sector;
        if sector.rem(offset) != 0 || sector.rem(len) != 0 || len == 0 {
            return Err(DeviceError::Misaligned {
                offset,
                len,
                sector: self.sector_bytes,
            });
        }
        let cap = self.capacity_bytes();
        if offset >= cap || len > cap - offset {
            return Err(DeviceError::OutOfRange {
                offset,
                len,
                capacity: cap,
            });
        }
        match kind {
            IoKind::Read => self.host_bytes_read += len,
            IoKind::Write => self.host_bytes_written += len,
            IoKind::Trim => {}
        }
        let mut lba = sector.div(offset);
        let end = lba + sector.div(len);
        if self.members.len() == 1 {
            return self.members[0].io(now, kind, lba, end - lba);
        }
        let (dc, dm) = (self.div_chunk, self.div_members);
        let mut done = now;
        let mut failed = None;
        while lba < end {
            let chunk = dc.div(lba);
            let within = dc.rem(lba);
            let n = (self.chunk_sectors - within).min(end - lba);
            let member = dm.rem(chunk) as usize;
            let member_lba = dm.div(chunk) * self.chunk_sectors + within;
            match self.members[member].io(now, kind, member_lba, n) {
                Ok(t) => done = done.max(t),
                // A read of lost sectors fails; the other pieces still run.
                Err(DeviceError::Ftl(FtlError::Lost { count, done: t, .. })) => {
                    done = done.max(t);
                    let (_, c) = failed.get_or_insert((lba, 0));
                    *c += count;
                }
                Err(e) => return Err(e),
            }
            lba += n;
        }
        match failed {
            Some((lba, count)) => Err(DeviceError::Ftl(FtlError::Lost { lba, count, done })),
            None => Ok(done),
        }
    }

    fn prefetch(&self, offset: u64, deep: bool) {
        let lba = self.div_sector.div(offset);
        let (member, member_lba) = if self.members.len() == 1 {
            (0, lba)
        } else {
            let (dc, dm) = (self.div_chunk, self.div_members);
            let chunk = dc.div(lba);
            (
                dm.rem(chunk) as usize,
                dm.div(chunk) * self.chunk_sectors + dc.rem(lba),
            )
        };
        self.members[member].vsl.prefetch(member_lba, deep);
    }

    fn stats(&self) -> DeviceStats {
        let mut s = DeviceStats {
            host_bytes_read: self.host_bytes_read,
            host_bytes_written: self.host_bytes_written,
            ..Default::default()
        };
        for m in &self.members {
            let f = m.vsl.stats();
            s.host_sectors_written += f.host_sectors_written;
            s.gc_sectors_moved += f.gc_sectors_moved;
            s.gc_runs += f.gc_runs;
            s.erases += f.erases;
            s.nand_bytes_programmed += m.vsl.media_counters().bytes_programmed;
            s.nand_bytes_read += m.vsl.media_counters().bytes_read;
            if self.config.preset.host_ftl {
                s.host_ram_bytes += m.vsl.host_ram_bytes();
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick(name: &str) -> CardConfig {
        let mut c = CardConfig::new(Preset::by_name(name).unwrap());
        c.scale = 0.01;
        c
    }

    #[test]
    fn divisor_gives_plain_division() {
        let seed = 0xd1u64;
        let mut rng = sim::Prng::from_seed(seed);
        for d in [1u64, 2, 3, 6, 8, 128, 256, 1000, 4096, 1 << 40] {
            let dv = Divisor::new(d);
            for _ in 0..10_000 {
                let x = rng.next_u64() >> rng.below(64);
                assert_eq!(dv.div(x), x / d, "{x} / {d}, seed {seed:#x}");
                assert_eq!(dv.rem(x), x % d, "{x} % {d}, seed {seed:#x}");
            }
        }
    }

    #[test]
    fn every_preset_builds_in_every_format() {
        for p in crate::presets() {
            for f in [
                Format::Stock,
                Format::Hp,
                Format::ImprovedWrite,
                Format::MaxWrite,
            ] {
                for sector in [512, 4096] {
                    let mut c = quick(p.name);
                    c.format = f;
                    c.sector_bytes = sector;
                    let card =
                        Card::new(c).unwrap_or_else(|e| panic!("{} {f:?} {sector}: {e}", p.name));
                    assert!(card.capacity_bytes() > 0);
                }
            }
        }
    }

    #[test]
    fn formats_order_capacity() {
        let cap = |f| {
            let mut c = quick("iodrive-duo-640-mlc");
            c.format = f;
            Card::new(c).unwrap().capacity_bytes()
        };
        let stock = cap(Format::Stock);
        assert!(cap(Format::Hp) < stock);
        assert!(cap(Format::ImprovedWrite) < stock);
        assert!(cap(Format::MaxWrite) < cap(Format::ImprovedWrite));
    }

    #[test]
    fn full_size_stock_member_is_320_gb() {
        let mut c = CardConfig::new(Preset::by_name("iodrive-duo-640-mlc").unwrap());
        c.member = MemberSel::One(0);
        let f = c.ftl_config().unwrap();
        assert_eq!(f.user_sectors * 4096, 320_000_000_000 / 4096 * 4096);
    }

    #[test]
    fn raid0_splits_across_members() {
        let mut card = Card::new(quick("iodrive-duo-640-mlc")).unwrap();
        let chunk = card.config.chunk_bytes;
        card.submit(Nanos(0), IoKind::Write, 0, 2 * chunk).unwrap();
        let s = card.member_stats();
        assert_eq!(s[0].host_sectors_written, chunk / 4096);
        assert_eq!(s[1].host_sectors_written, chunk / 4096);
    }

    #[test]
    fn bad_requests_are_errors() {
        let mut card = Card::new(quick("iodrive-duo-640-mlc")).unwrap();
        let cap = card.capacity_bytes();
        assert!(matches!(
            card.submit(Nanos(0), IoKind::Read, 100, 4096),
            Err(DeviceError::Misaligned { .. })
        ));
        assert!(matches!(
            card.submit(Nanos(0), IoKind::Read, cap, 4096),
            Err(DeviceError::OutOfRange { .. })
        ));
        let mut c = quick("iodrive-duo-640-mlc");
        c.member = MemberSel::One(2);
        assert!(Card::new(c).is_err());
        let mut c = quick("iodrive-duo-640-mlc");
        c.format = Format::Overprovision(0.0);
        assert!(Card::new(c).err().unwrap().to_string().contains("no spare"));
    }
}
