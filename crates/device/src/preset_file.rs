//! Presets as data (issue 29): the TOML schema of a preset file, its range
//! checks, and the built-in presets (`presets/*.toml`, embedded in the
//! binary). A malformed or out-of-range field is one line naming the file
//! and the field.

use crate::preset::{is_zero, DataSheet, Preset, VslParams};
use nand::{CellTiming, CellType, Geometry};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

/// The built-in presets, in the order `vsl devices` lists them (the first
/// is the default card).
const BUILTIN: &[(&str, &str)] = &[
    (
        "iodrive-duo-640-mlc",
        include_str!("../../../presets/iodrive-duo-640-mlc.toml"),
    ),
    (
        "iodrive-duo-320-slc",
        include_str!("../../../presets/iodrive-duo-320-slc.toml"),
    ),
    (
        "iodrive-duo-640-slc",
        include_str!("../../../presets/iodrive-duo-640-slc.toml"),
    ),
    (
        "iodrive-duo-1280-mlc",
        include_str!("../../../presets/iodrive-duo-1280-mlc.toml"),
    ),
    (
        "iodrive2-duo-2400-mlc",
        include_str!("../../../presets/iodrive2-duo-2400-mlc.toml"),
    ),
    (
        "iodrive-160-slc",
        include_str!("../../../presets/iodrive-160-slc.toml"),
    ),
    (
        "warpdrive-slp300",
        include_str!("../../../presets/warpdrive-slp300.toml"),
    ),
    (
        "zdrive-r4-cm88",
        include_str!("../../../presets/zdrive-r4-cm88.toml"),
    ),
    (
        "micron-p320h-700",
        include_str!("../../../presets/micron-p320h-700.toml"),
    ),
    (
        "micron-p420m-1400",
        include_str!("../../../presets/micron-p420m-1400.toml"),
    ),
    (
        "huawei-es3000-1200",
        include_str!("../../../presets/huawei-es3000-1200.toml"),
    ),
    (
        "flashmax2-2200",
        include_str!("../../../presets/flashmax2-2200.toml"),
    ),
    (
        "intel-ssd-910-800",
        include_str!("../../../presets/intel-ssd-910-800.toml"),
    ),
];

/// Every built-in preset, parsed once from the embedded TOML files.
pub fn presets() -> &'static [Preset] {
    static ALL: OnceLock<Vec<Preset>> = OnceLock::new();
    ALL.get_or_init(|| {
        BUILTIN
            .iter()
            .map(|(name, text)| {
                let origin = format!("presets/{name}.toml");
                let p = parse(text, &origin).unwrap_or_else(|e| panic!("built-in preset: {e}"));
                assert_eq!(p.name, *name, "{origin}: name differs from the file name");
                p
            })
            .collect()
    })
}

/// The embedded text of a built-in preset.
pub fn builtin_text(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Where a field's value comes from: the first word(s) of its `sources`
/// entry, before a colon.
pub const SOURCE_KINDS: &[&str] = &[
    "data sheet",
    "paper",
    "standard",
    "calibrated",
    "derived",
    "assumption",
];

/// One preset file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetFile {
    pub name: String,
    pub description: String,
    /// Where the data-sheet figures come from.
    pub source: String,
    pub geometry: GeometryFile,
    pub nand: NandFile,
    pub controller: ControllerFile,
    pub host: HostFile,
    pub vsl: VslParams,
    pub power: PowerFile,
    pub datasheet: DataSheet,
    /// Where each field's value comes from, by its dotted path
    /// (`vsl.gc_share`): "KIND: text" with KIND one of [`SOURCE_KINDS`].
    /// Every field of every table but `datasheet` (whose source is
    /// `source`) needs one.
    pub sources: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeometryFile {
    /// ioMemory devices (controllers) on the card.
    pub members: u32,
    pub channels: u32,
    pub parity_channels: u32,
    pub banks: u32,
    pub planes: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_bytes: u32,
    /// Stock formatted capacity of one member, bytes.
    pub stock_bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NandFile {
    /// slc, mlc or tlc.
    pub cell: String,
    pub read_ns: u64,
    pub program_ns: u64,
    pub erase_ns: u64,
    pub endurance_cycles: u32,
    pub bus_bytes_per_s: u64,
    /// The NAND data sheet(s) these timings come from.
    pub source: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerFile {
    /// PCIe link of one member, usable bytes/s.
    pub link_bytes_per_s: u64,
    /// The FTL runs in the host (its map in host RAM).
    pub host_ftl: bool,
    /// The controllers compress data (SandForce DuraWrite).
    pub compression: bool,
    /// GC moves pass through the controller's data path.
    pub gc_datapath: bool,
    /// A move holds each data path for its own transfer (not the write
    /// path for both).
    pub gc_datapath_split: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostFile {
    /// Host software cost per read / write I/O, ns.
    pub read_ns: u64,
    pub write_ns: u64,
    /// CPU time per I/O that holds the submitting thread, ns (absent: 0,
    /// no per-thread limit).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub thread_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerFile {
    /// No external power cable: the card stays within the slot's 25 W.
    pub slot_powered: bool,
    /// Cooling of one member relative to one ioDimm of a Duo.
    pub cooling_share: f64,
    /// Idle power of one member, W.
    pub idle_w: f64,
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// A range check: `origin: path = value is out of range lo..=hi`.
struct Check<'a> {
    origin: &'a str,
}

impl Check<'_> {
    fn int(&self, path: &str, v: u64, lo: u64, hi: u64) -> Result<(), String> {
        if (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err(format!(
                "{}: {path} = {v} is out of range {lo}..={hi}",
                self.origin
            ))
        }
    }

    fn float(&self, path: &str, v: f64, lo: f64, hi: f64) -> Result<(), String> {
        if v.is_finite() && v >= lo && v <= hi {
            Ok(())
        } else {
            Err(format!(
                "{}: {path} = {v} is out of range {lo}..={hi}",
                self.origin
            ))
        }
    }

    fn opt(&self, path: &str, v: Option<u32>, lo: u64, hi: u64) -> Result<(), String> {
        v.map_or(Ok(()), |v| self.int(path, v as u64, lo, hi))
    }
}

/// Every field that needs a `sources` entry.
pub const SOURCED_FIELDS: &[&str] = &[
    "geometry.members",
    "geometry.channels",
    "geometry.parity_channels",
    "geometry.banks",
    "geometry.planes",
    "geometry.blocks_per_plane",
    "geometry.pages_per_block",
    "geometry.page_bytes",
    "geometry.stock_bytes",
    "nand.cell",
    "nand.read_ns",
    "nand.program_ns",
    "nand.erase_ns",
    "nand.endurance_cycles",
    "nand.bus_bytes_per_s",
    "controller.link_bytes_per_s",
    "controller.host_ftl",
    "controller.compression",
    "controller.gc_datapath",
    "controller.gc_datapath_split",
    "host.read_ns",
    "host.write_ns",
    "host.thread_ns",
    "vsl.reserved_fraction",
    "vsl.gc_reserve_lebs",
    "vsl.gc_background_lebs",
    "vsl.gc_share",
    "vsl.gc_runway_lebs",
    "vsl.catchup_lebs",
    "vsl.gc_yield_ns",
    "vsl.idle_groom_fraction",
    "vsl.buffer_units",
    "vsl.wear_level_spread",
    "vsl.read_priority",
    "vsl.read_holds_die",
    "vsl.suspend_ns",
    "vsl.read_pipe_depth",
    "vsl.dispatch_in_order",
    "vsl.read_priority_background_only",
    "vsl.read_priority_gc_reads_in_order",
    "vsl.gc_pace_progress",
    "vsl.gc_move_read_hold",
    "vsl.gc_read_charge",
    "vsl.catchup_after_ns",
    "vsl.gc_stall_quantum_lebs",
    "vsl.catchup_moves_lebs",
    "vsl.gc_read_ahead_units",
    "power.slot_powered",
    "power.cooling_share",
    "power.idle_w",
];

impl PresetFile {
    /// Every range check, and the sources.
    pub fn check(&self, origin: &str) -> Result<(), String> {
        let c = Check { origin };
        let g = &self.geometry;
        if self.name.is_empty()
            || !self
                .name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
        {
            return Err(format!(
                "{origin}: name = {:?} must be non-empty letters, digits, '-', '_' or '.'",
                self.name
            ));
        }
        c.int("geometry.members", g.members as u64, 1, 64)?;
        c.int("geometry.channels", g.channels as u64, 1, 256)?;
        c.int(
            "geometry.parity_channels",
            g.parity_channels as u64,
            0,
            g.channels as u64 - 1,
        )?;
        c.int("geometry.banks", g.banks as u64, 1, 64)?;
        c.int("geometry.planes", g.planes as u64, 1, 8)?;
        c.int(
            "geometry.blocks_per_plane",
            g.blocks_per_plane as u64,
            24,
            1 << 20,
        )?;
        c.int(
            "geometry.pages_per_block",
            g.pages_per_block as u64,
            1,
            4096,
        )?;
        c.int("geometry.page_bytes", g.page_bytes as u64, 512, 65536)?;
        if !g.page_bytes.is_multiple_of(512) {
            return Err(format!(
                "{origin}: geometry.page_bytes = {} is not a multiple of 512",
                g.page_bytes
            ));
        }
        let raw = self.geometry().data_bytes();
        c.int("geometry.stock_bytes", g.stock_bytes, 1 << 20, raw)?;
        let n = &self.nand;
        cell_type(&n.cell).ok_or_else(|| {
            format!(
                "{origin}: nand.cell = {:?} is not one of slc, mlc, tlc",
                n.cell
            )
        })?;
        c.int("nand.read_ns", n.read_ns, 1_000, 1_000_000)?;
        c.int("nand.program_ns", n.program_ns, 10_000, 10_000_000)?;
        c.int("nand.erase_ns", n.erase_ns, 100_000, 100_000_000)?;
        c.int(
            "nand.endurance_cycles",
            n.endurance_cycles as u64,
            100,
            10_000_000,
        )?;
        c.int(
            "nand.bus_bytes_per_s",
            n.bus_bytes_per_s,
            1_000_000,
            10_000_000_000,
        )?;
        c.int(
            "controller.link_bytes_per_s",
            self.controller.link_bytes_per_s,
            10_000_000,
            100_000_000_000,
        )?;
        if self.controller.gc_datapath_split && !self.controller.gc_datapath {
            return Err(format!(
                "{origin}: controller.gc_datapath_split = true needs controller.gc_datapath = true"
            ));
        }
        c.int("host.read_ns", self.host.read_ns, 0, 10_000_000)?;
        c.int("host.write_ns", self.host.write_ns, 0, 10_000_000)?;
        c.int("host.thread_ns", self.host.thread_ns, 0, 10_000_000)?;
        self.vsl.check(origin)?;
        let p = &self.power;
        c.float("power.cooling_share", p.cooling_share, 0.01, 100.0)?;
        c.float("power.idle_w", p.idle_w, 0.0, 100.0)?;
        let d = &self.datasheet;
        c.int("datasheet.read_mb_s", d.read_mb_s as u64, 1, 1_000_000)?;
        c.int("datasheet.write_mb_s", d.write_mb_s as u64, 1, 1_000_000)?;
        c.opt("datasheet.read_iops_512", d.read_iops_512, 1, 100_000_000)?;
        c.opt("datasheet.write_iops_512", d.write_iops_512, 1, 100_000_000)?;
        c.opt("datasheet.read_iops_4k", d.read_iops_4k, 1, 100_000_000)?;
        c.opt("datasheet.write_iops_4k", d.write_iops_4k, 1, 100_000_000)?;
        c.opt("datasheet.read_latency_us", d.read_latency_us, 1, 1_000_000)?;
        c.opt(
            "datasheet.write_latency_us",
            d.write_latency_us,
            1,
            1_000_000,
        )?;
        for (k, v) in &self.sources {
            if !SOURCED_FIELDS.contains(&k.as_str()) {
                return Err(format!(
                    "{origin}: sources.\"{k}\" names no field (fields: {})",
                    SOURCED_FIELDS.join(", ")
                ));
            }
            let kind = v.split(':').next().unwrap_or_default();
            if !SOURCE_KINDS.contains(&kind) || !v.contains(':') {
                return Err(format!(
                    "{origin}: sources.\"{k}\" = {v:?} must start with one of {}, then ':'",
                    SOURCE_KINDS.join(", ")
                ));
            }
        }
        // A field absent from the file and off by default (the groomer's
        // yield, a thread's CPU time: newer than most preset files) needs
        // no source.
        let off = |f: &str| {
            (f == "vsl.gc_yield_ns" && self.vsl.gc_yield_ns == 0)
                || (f == "host.thread_ns" && self.host.thread_ns == 0)
                || (f == "vsl.read_pipe_depth" && self.vsl.read_pipe_depth == 0)
                || (f == "vsl.dispatch_in_order" && !self.vsl.dispatch_in_order)
                || (f == "vsl.read_priority_background_only"
                    && !self.vsl.read_priority_background_only)
                || (f == "vsl.read_priority_gc_reads_in_order"
                    && !self.vsl.read_priority_gc_reads_in_order)
                || (f == "vsl.gc_pace_progress" && !self.vsl.gc_pace_progress)
                || (f == "vsl.gc_move_read_hold" && self.vsl.gc_move_read_hold == 0.0)
                || (f == "vsl.gc_read_charge" && self.vsl.gc_read_charge == 0.0)
                || (f == "vsl.catchup_after_ns" && self.vsl.catchup_after_ns.is_none())
                || (f == "vsl.gc_stall_quantum_lebs" && self.vsl.gc_stall_quantum_lebs == 0.0)
                || (f == "vsl.catchup_moves_lebs" && self.vsl.catchup_moves_lebs == 0.0)
                || (f == "vsl.gc_read_ahead_units" && self.vsl.gc_read_ahead_units == 0)
        };
        if let Some(f) = SOURCED_FIELDS
            .iter()
            .find(|f| !self.sources.contains_key(**f) && !off(f))
        {
            return Err(format!(
                "{origin}: sources.\"{f}\" is missing (where does {f} come from?)"
            ));
        }
        Ok(())
    }

    fn geometry(&self) -> Geometry {
        let g = &self.geometry;
        Geometry {
            channels: g.channels,
            parity_channels: g.parity_channels,
            banks: g.banks,
            planes: g.planes,
            blocks_per_plane: g.blocks_per_plane,
            pages_per_block: g.pages_per_block,
            page_bytes: g.page_bytes,
        }
    }

    /// The in-memory preset (strings leaked: presets live for the program).
    fn into_preset(self) -> Preset {
        let geometry = self.geometry();
        let n = self.nand;
        Preset {
            name: leak(self.name),
            description: leak(self.description),
            members: self.geometry.members,
            timing: CellTiming {
                cell: cell_type(&n.cell).expect("checked"),
                read_ns: n.read_ns,
                program_ns: n.program_ns,
                erase_ns: n.erase_ns,
                endurance_cycles: n.endurance_cycles,
                bus_bytes_per_s: n.bus_bytes_per_s,
                source: leak(n.source),
            },
            geometry,
            stock_bytes: self.geometry.stock_bytes,
            datasheet: self.datasheet,
            link_bytes_per_s: self.controller.link_bytes_per_s,
            host_read_ns: self.host.read_ns,
            host_write_ns: self.host.write_ns,
            host_thread_ns: self.host.thread_ns,
            host_ftl: self.controller.host_ftl,
            compression: self.controller.compression,
            gc_datapath: self.controller.gc_datapath,
            gc_datapath_split: self.controller.gc_datapath_split,
            source: leak(self.source),
            slot_powered: self.power.slot_powered,
            cooling_share: self.power.cooling_share,
            idle_w: self.power.idle_w,
            vsl: self.vsl,
            sources: self.sources,
        }
    }

    /// The file of an in-memory preset.
    pub fn of(p: &Preset) -> PresetFile {
        let g = &p.geometry;
        let t = &p.timing;
        PresetFile {
            name: p.name.into(),
            description: p.description.into(),
            source: p.source.into(),
            geometry: GeometryFile {
                members: p.members,
                channels: g.channels,
                parity_channels: g.parity_channels,
                banks: g.banks,
                planes: g.planes,
                blocks_per_plane: g.blocks_per_plane,
                pages_per_block: g.pages_per_block,
                page_bytes: g.page_bytes,
                stock_bytes: p.stock_bytes,
            },
            nand: NandFile {
                cell: match t.cell {
                    CellType::Slc => "slc",
                    CellType::Mlc => "mlc",
                    CellType::Tlc => "tlc",
                }
                .into(),
                read_ns: t.read_ns,
                program_ns: t.program_ns,
                erase_ns: t.erase_ns,
                endurance_cycles: t.endurance_cycles,
                bus_bytes_per_s: t.bus_bytes_per_s,
                source: t.source.into(),
            },
            controller: ControllerFile {
                link_bytes_per_s: p.link_bytes_per_s,
                host_ftl: p.host_ftl,
                compression: p.compression,
                gc_datapath: p.gc_datapath,
                gc_datapath_split: p.gc_datapath_split,
            },
            host: HostFile {
                read_ns: p.host_read_ns,
                write_ns: p.host_write_ns,
                thread_ns: p.host_thread_ns,
            },
            vsl: p.vsl,
            power: PowerFile {
                slot_powered: p.slot_powered,
                cooling_share: p.cooling_share,
                idle_w: p.idle_w,
            },
            datasheet: p.datasheet,
            sources: p.sources.clone(),
        }
    }
}

impl VslParams {
    /// Physical / design ranges of the VSL parameters.
    pub fn check(&self, origin: &str) -> Result<(), String> {
        let c = Check { origin };
        c.float("vsl.reserved_fraction", self.reserved_fraction, 0.02, 0.5)?;
        c.int("vsl.gc_reserve_lebs", self.gc_reserve_lebs as u64, 2, 64)?;
        c.int(
            "vsl.gc_background_lebs",
            self.gc_background_lebs as u64,
            self.gc_reserve_lebs as u64 + 1,
            256,
        )?;
        c.float("vsl.gc_share", self.gc_share, 0.01, 1.0)?;
        c.float("vsl.gc_runway_lebs", self.gc_runway_lebs, 0.0, 64.0)?;
        c.float("vsl.catchup_lebs", self.catchup_lebs, 0.0, 64.0)?;
        c.int("vsl.gc_yield_ns", self.gc_yield_ns, 0, 1_000_000_000)?;
        c.float(
            "vsl.idle_groom_fraction",
            self.idle_groom_fraction,
            0.0,
            1.0,
        )?;
        c.int("vsl.buffer_units", self.buffer_units, 1, 4096)?;
        c.int(
            "vsl.wear_level_spread",
            self.wear_level_spread as u64,
            1,
            1_000_000,
        )?;
        if let Some(s) = self.suspend_ns {
            c.int("vsl.suspend_ns", s, 1, 1_000_000)?;
        }
        c.int("vsl.read_pipe_depth", self.read_pipe_depth as u64, 0, 4096)?;
        c.float("vsl.gc_move_read_hold", self.gc_move_read_hold, 0.0, 1.0)?;
        c.float("vsl.gc_read_charge", self.gc_read_charge, 0.0, 4.0)?;
        c.float(
            "vsl.gc_stall_quantum_lebs",
            self.gc_stall_quantum_lebs,
            0.0,
            16.0,
        )?;
        if let Some(a) = self.catchup_after_ns {
            c.int("vsl.catchup_after_ns", a, 1_000_000, 60_000_000_000)?;
        }
        c.float("vsl.catchup_moves_lebs", self.catchup_moves_lebs, 0.0, 64.0)?;
        c.int(
            "vsl.gc_read_ahead_units",
            self.gc_read_ahead_units as u64,
            0,
            64,
        )?;
        if self.catchup_moves_lebs > 0.0 && self.catchup_lebs > 0.0 {
            return Err(format!(
                "{}: vsl.catchup_moves_lebs and vsl.catchup_lebs are both set (catch-up \
                 counts work or free space: set the other to 0)",
                c.origin
            ));
        }
        Ok(())
    }
}

fn cell_type(s: &str) -> Option<CellType> {
    match s {
        "slc" => Some(CellType::Slc),
        "mlc" => Some(CellType::Mlc),
        "tlc" => Some(CellType::Tlc),
        _ => None,
    }
}

/// A TOML error on one line, with its line number.
fn one_line(e: &toml::de::Error, text: &str) -> String {
    let msg = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {msg}")
        }
        None => msg,
    }
}

/// Parses and checks a preset file's text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Preset, String> {
    let file: PresetFile =
        toml::from_str(text).map_err(|e| format!("{origin}: {}", one_line(&e, text)))?;
    file.check(origin)?;
    Ok(file.into_preset())
}

/// A preset as TOML, with a header comment (`vsl devices --show`).
pub fn to_toml(p: &Preset) -> String {
    let body = toml::to_string_pretty(&PresetFile::of(p)).expect("a preset serialises");
    format!(
        "# openvsl device preset (docs/MODEL.md, \"Preset files\"). Edit and use as\n\
         # `vsl run --device THIS.toml`; every field is range-checked on load.\n\n{body}"
    )
}

/// Reads and checks a preset file; the preset lives for the program.
pub fn load(path: &Path) -> Result<&'static Preset, String> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{origin}: {e}"))?;
    Ok(Box::leak(Box::new(parse(&text, &origin)?)))
}

/// A card named on the command line: a built-in preset's name, or a
/// preset file (a path ending in `.toml`). The one place names resolve.
pub fn resolve(spec: &str) -> Result<&'static Preset, String> {
    if spec.ends_with(".toml") {
        return load(Path::new(spec));
    }
    Preset::by_name(spec).ok_or_else(|| {
        format!(
            "unknown device '{spec}' (a preset file PATH.toml, or one of: {})",
            Preset::names().join(", ")
        )
    })
}

/// The preset files of a directory (`*.toml`, by file name), each parsed
/// and checked; the first bad file is the error.
pub fn load_dir(dir: &Path) -> Result<Vec<(String, &'static Preset)>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths: Vec<_> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| load(&p).map(|preset| (p.display().to_string(), preset)))
        .collect()
}
