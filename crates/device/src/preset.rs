use nand::{CellTiming, Geometry};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Data-sheet figures of a card (whole card, all members), as quoted in
/// the reviews (SYSTEM.md §2). `None` where the data sheet is silent.
#[derive(Copy, Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSheet {
    pub read_mb_s: u32,
    pub write_mb_s: u32,
    pub read_iops_512: Option<u32>,
    pub write_iops_512: Option<u32>,
    pub read_iops_4k: Option<u32>,
    pub write_iops_4k: Option<u32>,
    pub read_latency_us: Option<u32>,
    pub write_latency_us: Option<u32>,
}

/// A modelled card: one preset file (`presets/*.toml`, docs/MODEL.md
/// "Preset files") in memory.
#[derive(Clone, Debug, Serialize)]
pub struct Preset {
    pub name: &'static str,
    pub description: &'static str,
    /// ioMemory devices on the card (2 for a Duo).
    pub members: u32,
    pub timing: CellTiming,
    pub geometry: Geometry,
    /// Stock formatted capacity of one member, bytes.
    pub stock_bytes: u64,
    pub datasheet: DataSheet,
    /// PCIe link of one member: usable bytes/s after encoding and protocol.
    pub link_bytes_per_s: u64,
    /// Host VSL software cost per I/O, in its latency (not a throughput
    /// limit: the host has many cores; one thread's limit is
    /// [`Preset::host_thread_ns`]).
    pub host_read_ns: u64,
    pub host_write_ns: u64,
    /// The part of the host cost a submitting thread spends on the CPU
    /// per I/O (ns): a thread issues its next I/O only after it, so one
    /// thread does at most 1 s / `host_thread_ns` I/Os however deep its
    /// queue. Within the latency above, not added to it; 0 = no limit.
    pub host_thread_ns: u64,
    /// The FTL runs in the host (Fusion-io's VSL: the map lives in host
    /// RAM) rather than on the card's controllers.
    pub host_ftl: bool,
    /// The controllers compress data before writing it (SandForce
    /// DuraWrite): compressible data takes less NAND and bus time.
    pub compression: bool,
    /// GC moves pass through the controller's data path (Fusion-io's
    /// "garbage collector bypass" from the read into the write pipeline):
    /// each moved sector holds the write data path for its read and its
    /// write transfer, in turn with the host's writes.
    pub gc_datapath: bool,
    /// With [`Preset::gc_datapath`]: a moved sector holds the read data
    /// path for its read transfer and the write data path for its write
    /// transfer (each in turn with the host's reads and writes), instead
    /// of the write path for both. On in the ioMemory presets, off in the
    /// comparables.
    pub gc_datapath_split: bool,
    /// Where the data-sheet figures come from.
    pub source: &'static str,
    /// The card has no external power cable and its controllers keep it
    /// within the PCIe slot's 25 W (the comparables' data sheets rate them
    /// at 25 W); the ioDrive Duos instead take `--external-power`.
    pub slot_powered: bool,
    /// Cooling of one member relative to one ioDimm of a Duo (on which the
    /// thermal model is calibrated): 1 for the ioDrives, the card's heat
    /// sink shared by its members otherwise (2 / members for a full card).
    pub cooling_share: f64,
    /// Idle power of one member (controller, DRAM, NAND standby), W.
    pub idle_w: f64,
    /// The VSL's (or on-card FTL's) parameters.
    pub vsl: VslParams,
    /// Where each field's value comes from, by dotted path (`vsl.gc_share`):
    /// "KIND: text", KIND one of data sheet, paper, standard, calibrated,
    /// derived, assumption (docs/MODEL.md).
    pub sources: BTreeMap<String, String>,
}

/// The flash translation layer's parameters of a card (docs/MODEL.md,
/// "VSL"): the `[vsl]` table of a preset file.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VslParams {
    /// Fraction of erase units set aside (metadata, bad-block spares, the
    /// VSL's own use), GC reserve included.
    pub reserved_fraction: f64,
    /// Free erase units foreground GC keeps (the low watermark).
    pub gc_reserve_lebs: u32,
    /// Paced and idle-time GC work below this many free units (the high
    /// watermark).
    pub gc_background_lebs: u32,
    /// Share of the array's move capacity the paced groomer may use.
    pub gc_share: f64,
    /// Free space, in erase units (a fraction allowed), a foreground stall
    /// gains past the low watermark before host writes resume (the
    /// groomer's runway).
    pub gc_runway_lebs: f64,
    /// After host writes stop at the wall, the groomer collects in the
    /// foreground until this many erase units above the low watermark are
    /// free (a fraction allowed: that share of one more victim's moves);
    /// host I/O waits behind it. 0 = off.
    pub catchup_lebs: f64,
    /// After a foreground stall, the groomer makes no background moves for
    /// this long (ns), so the host writes the runway at full rate; 0 = off
    /// (absent in a preset file: 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gc_yield_ns: u64,
    /// Idle grooming: the share of the spare erase units (above the high
    /// watermark) the groomer frees while the host is idle; 0 = off.
    pub idle_groom_fraction: f64,
    /// Power-cut-protected write buffer, in write units.
    pub buffer_units: u64,
    /// Erase-count spread that triggers static wear levelling.
    pub wear_level_spread: u32,
    /// Reads overtake queued programs and erases of their bank.
    pub read_priority: bool,
    /// A read holds its bank for tR and its own data-out, not tR only.
    /// On in the ioMemory presets, off in the comparables.
    pub read_holds_die: bool,
    /// Program/erase suspend for reads, with its latency (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend_ns: Option<u64>,
    /// Host reads a member holds in hardware at once; a read beyond it
    /// waits in the host until one completes. 0 = no limit (absent in a
    /// preset file: 0).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub read_pipe_depth: u32,
    /// The driver dispatches a member's I/Os in the order submitted: an
    /// I/O queued behind a read waiting for the read pipe waits too
    /// (absent in a preset file: false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub dispatch_in_order: bool,
    /// With `read_priority`: host reads overtake only background work (host
    /// programs, paced and idle GC), not a foreground stall's or
    /// catch-up's, and GC reads queue FIFO (absent in a preset file: false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub read_priority_background_only: bool,
    /// With `read_priority_background_only`: GC reads keep their place
    /// among the reads, so host reads do not overtake them or what was
    /// queued before them (absent in a preset file: false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub read_priority_gc_reads_in_order: bool,
    /// Paced GC counts free space continuously, the victim's scanned part
    /// included (`FtlConfig::gc_pace_progress`; absent in a preset file:
    /// false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub gc_pace_progress: bool,
    /// With `controller.gc_datapath_split`: the share of a moved sector's
    /// read transfer for which it also holds the write data path, waiting
    /// there to be inserted among the host's writes (0: the write path
    /// holds only the write transfer; absent in a preset file: 0).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub gc_move_read_hold: f64,
    /// Paced GC: moves each sector a host read takes from the NAND costs
    /// the groomer's budget (0.5: a read's bus time where the bus bounds
    /// the move capacity; absent in a preset file: 0, reads cost nothing).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub gc_read_charge: f64,
    /// Catch-up grooming starts once no host write has come for this long
    /// (absent: 10 ms, the idle detection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catchup_after_ns: Option<u64>,
    /// A stall's quantum of work, in erase units of moved slots (absent:
    /// 0, off): [`ftl::FtlConfig::gc_stall_quantum_lebs`].
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub gc_stall_quantum_lebs: f64,
    /// Catch-up grooming counted in work instead of free space: once host
    /// writes stop after a stall, the groomer moves this many erase units
    /// of valid slots in the foreground, whatever free space that gains
    /// (absent: 0, catch-up follows `catchup_lebs`):
    /// [`ftl::FtlConfig::gc_catchup_moves_lebs`].
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub catchup_moves_lebs: f64,
    /// Write units the groomer's reads run ahead of its moves beyond one
    /// round of the banks (absent: 0): [`ftl::FtlConfig::gc_read_ahead_units`].
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub gc_read_ahead_units: u32,
}

impl VslParams {
    /// The values every preset had before presets became data.
    pub const FAMILY: VslParams = VslParams {
        reserved_fraction: 0.12,
        gc_reserve_lebs: 2,
        gc_background_lebs: 4,
        gc_share: 0.5,
        gc_runway_lebs: 0.0,
        catchup_lebs: 0.0,
        gc_yield_ns: 0,
        idle_groom_fraction: 0.0,
        buffer_units: 16,
        wear_level_spread: 64,
        read_priority: true,
        read_holds_die: false,
        suspend_ns: None,
        read_pipe_depth: 0,
        dispatch_in_order: false,
        read_priority_background_only: false,
        read_priority_gc_reads_in_order: false,
        gc_pace_progress: false,
        gc_move_read_hold: 0.0,
        gc_read_charge: 0.0,
        catchup_after_ns: None,
        gc_stall_quantum_lebs: 0.0,
        catchup_moves_lebs: 0.0,
        gc_read_ahead_units: 0,
    };
}

impl Preset {
    /// A built-in preset (`presets/*.toml`) by name.
    pub fn by_name(name: &str) -> Option<&'static Preset> {
        crate::presets().iter().find(|p| p.name == name)
    }

    /// The built-in presets' names, the default card first.
    pub fn names() -> Vec<&'static str> {
        crate::presets().iter().map(|p| p.name).collect()
    }

    /// A card named on the command line: a built-in preset's name or a
    /// preset file `PATH.toml` (see [`crate::preset_file::resolve`]).
    pub fn resolve(spec: &str) -> Result<&'static Preset, String> {
        crate::preset_file::resolve(spec)
    }

    /// Controller per-command occupancy for reads and writes: the inverse of
    /// the data sheet's 512 B IOPS per member. Where the data sheet gives
    /// none, the read/write bandwidth at 4 KiB is used instead.
    pub fn command_ns(&self) -> (u64, u64) {
        let m = self.members as u64;
        let per = |iops: Option<u32>, mb_s: u32| -> u64 {
            let iops = iops
                .map(|v| v as u64)
                .unwrap_or(mb_s as u64 * 1_000_000 / 4096);
            1_000_000_000 * m / iops
        };
        let d = &self.datasheet;
        (
            per(d.read_iops_512.or(d.read_iops_4k), d.read_mb_s),
            per(d.write_iops_512.or(d.write_iops_4k), d.write_mb_s),
        )
    }

    /// Controller data-path bandwidth per member, bytes/s (data sheet / members).
    pub fn datapath_bytes_per_s(&self) -> (u64, u64) {
        let m = self.members as u64;
        (
            self.datasheet.read_mb_s as u64 * 1_000_000 / m,
            self.datasheet.write_mb_s as u64 * 1_000_000 / m,
        )
    }
}

/// Low-level format of each member.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Stock,
    /// High-performance mode: 64 % of raw (256 GB per 400 GB-raw ioDimm).
    Hp,
    /// Improved write: 70 % of the stock capacity.
    ImprovedWrite,
    /// Maximum write: 50 % of the stock capacity.
    MaxWrite,
    /// An explicit capacity per member, bytes.
    Capacity(u64),
    /// Over-provisioning as a fraction (0..1) of the usable physical space.
    Overprovision(f64),
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "stock" => Ok(Format::Stock),
            "hp" | "high-performance" => Ok(Format::Hp),
            "improved-write" | "improved" => Ok(Format::ImprovedWrite),
            "max-write" | "maximum-write" => Ok(Format::MaxWrite),
            _ => Err(format!(
                "unknown format '{s}' (expected stock, hp, improved-write or max-write)"
            )),
        }
    }

    pub fn label(&self) -> String {
        match self {
            Format::Stock => "stock".into(),
            Format::Hp => "hp".into(),
            Format::ImprovedWrite => "improved-write".into(),
            Format::MaxWrite => "max-write".into(),
            Format::Capacity(b) => format!("capacity:{b}"),
            Format::Overprovision(f) => format!("op:{:.1}%", f * 100.0),
        }
    }
}

pub(crate) fn is_zero(v: &u64) -> bool {
    *v == 0
}

pub(crate) fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

pub(crate) fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

pub(crate) fn is_false(v: &bool) -> bool {
    !*v
}
