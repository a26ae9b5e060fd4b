//! Managing a card: `vsl status` (every status field of a store, attached
//! or not, of every attached card and of every running simulation),
//! `vsl format` (low-level format: capacity / over-provisioning, sector
//! size) and `vsl erase` (secure erase, clear or purge).
//!
//! - [`StatusDoc`] / [`DeviceStatus`]: the `--json` output; its schema is
//!   documented in docs/STATUS_SCHEMA.md and versioned by [`STATUS_SCHEMA`].
//! - [`device_status`]: the status of one store's ioMemory devices.
//! - [`run_format`], [`run_erase`]: refuse while the store is attached and
//!   keep the lifetime counters, wear and temperature history.

use crate::cli::{card_config, fetch_status};
use crate::state::{list_states, name_for_store, AttachState};
use crate::status::Interval;
pub use crate::status::LatencyHistogram;
use crate::store::{lock_store, Lifetime, Store, StoreHeader, STORE_VERSION};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use device::{Card, CardConfig, HealthReport, HealthState, MemberSel, VirtualDevice};
use rundir::live::{list_runs, LiveRun};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, IsTerminal, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Names and versions the `--json` schema; bumped on any incompatible change.
pub const STATUS_SCHEMA: &str = "openvsl-status/1";

/// `vsl status`.
#[derive(Args, Debug, Clone)]
pub struct StatusArgs {
    /// A store directory, loop device or attachment name; `all` (the
    /// default): every attached card and every running simulation.
    pub device: Option<String>,
    /// Every field (the default is a short form).
    #[arg(short = 'a', long = "all-fields")]
    pub all: bool,
    /// Machine-readable output (schema: docs/STATUS_SCHEMA.md).
    #[arg(long)]
    pub json: bool,
}

/// `vsl format`.
#[derive(Args, Debug, Clone)]
pub struct FormatArgs {
    /// The store directory of the card.
    pub store: PathBuf,
    /// stock, hp, improved-write or max-write.
    #[arg(long, alias = "format", conflicts_with_all = ["capacity", "overprovision"])]
    pub preset: Option<String>,
    /// Formatted capacity of each ioMemory device, e.g. 256G.
    #[arg(long, allow_hyphen_values = true, conflicts_with = "overprovision")]
    pub capacity: Option<String>,
    /// Over-provisioning as a percentage of the usable NAND, e.g. 36%.
    #[arg(long, allow_hyphen_values = true)]
    pub overprovision: Option<String>,
    /// Logical sector size: 512 or 4096.
    #[arg(long)]
    pub sector_size: Option<String>,
    /// Do not ask for confirmation.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// `vsl erase`.
#[derive(Args, Debug, Clone)]
pub struct EraseArgs {
    /// The store directory of the card.
    pub store: PathBuf,
    /// Forget every mapping: all user data becomes unreadable (NIST
    /// 800-88 "clear").
    #[arg(long, conflicts_with = "purge", required_unless_present = "purge")]
    pub clear: bool,
    /// Clear, then erase every erase unit and zero the data ("purge").
    #[arg(long)]
    pub purge: bool,
    /// Do not ask for confirmation.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// Attached, detached, busy (locked by another tool) or failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceState {
    Attached,
    Detached,
    Busy,
    Failed,
}

impl DeviceState {
    pub fn name(self) -> &'static str {
        match self {
            DeviceState::Attached => "attached",
            DeviceState::Detached => "detached",
            DeviceState::Busy => "busy",
            DeviceState::Failed => "failed",
        }
    }
}

/// Every status field of one ioMemory device.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceStatus {
    pub store: String,
    pub member: u32,
    pub model: String,
    pub serial: String,
    pub firmware_version: String,
    pub format_version: u32,
    pub state: DeviceState,
    pub block_device: Option<String>,
    pub format: String,
    pub formatted_capacity_bytes: u64,
    pub sectors: u64,
    pub sector_bytes: u32,
    pub raw_bytes: u64,
    pub overprovision_pct: f64,
    pub write_amplification: f64,
    pub host_ram_bytes: u64,
    pub host_ram_peak_bytes: u64,
    pub lifetime: Lifetime,
    pub health: HealthReport,
    /// The last second of I/O (attached devices only).
    pub live: Option<Interval>,
    /// Free erase units over all, percent (attached devices only).
    #[serde(default)]
    pub free_space_pct: Option<f64>,
    /// Read and write latency since attach in fixed buckets (attached
    /// devices only).
    #[serde(default)]
    pub latency_histogram: Option<LatencyHistogram>,
    /// The card's trace capture (attached devices only; `vsl trace`).
    #[serde(default)]
    pub trace: Option<crate::capture::TraceStatus>,
    /// GC victim policy (`vsl policies`), e.g. `greedy` or `d-choices:4`.
    #[serde(default)]
    pub gc_policy: String,
    /// Data placement: `single`, `hot-cold` or `streams`.
    #[serde(default)]
    pub placement: String,
    /// The `--stream` ranges (card bytes, as given) of `streams`.
    #[serde(default)]
    pub streams: Vec<String>,
}

/// What `vsl status --json` prints.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StatusDoc {
    pub schema: String,
    pub devices: Vec<DeviceStatus>,
    pub runs: Vec<LiveRun>,
}

/// A stable serial number for a store's member: FNV-1a of its path.
fn serial(store: &Path, member: u32) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in store.as_os_str().as_encoded_bytes() {
        h = (h ^ *b as u32).wrapping_mul(0x0100_0193);
    }
    format!("OV{h:08X}-{member}")
}

fn format_label(h: &StoreHeader) -> String {
    match (&h.card.capacity, &h.card.overprovision) {
        (Some(c), _) => format!("capacity={c}"),
        (_, Some(o)) => format!("op={o}"),
        _ => h.card.format.clone(),
    }
}

/// The card configuration of one member of a store.
fn member_config(h: &StoreHeader, member: u32) -> Result<CardConfig> {
    let mut c = card_config(&h.card)?;
    c.member = MemberSel::One(member);
    Ok(c)
}

fn read_wear(dir: &Path, member: u32, lebs: u32) -> Result<Vec<u32>> {
    let path = dir.join(format!("member{member}.wear"));
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() != lebs as usize * 4 {
        bail!(
            "store {} is damaged: {} is {} bytes, expected {}",
            dir.display(),
            path.display(),
            bytes.len(),
            lebs * 4
        );
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect())
}

fn read_lifetime(dir: &Path, member: u32) -> Result<Lifetime> {
    let path = dir.join(format!("member{member}.life.json"));
    match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t)
            .with_context(|| format!("store {} is damaged: {}", dir.display(), path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Lifetime::default()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Whether another process holds the store's lock (without taking it).
fn locked(dir: &Path) -> bool {
    use std::os::unix::io::AsRawFd;
    let Ok(f) = std::fs::File::open(dir.join("lock")) else {
        return false;
    };
    // SAFETY: flock on a valid, owned descriptor; released when `f` drops.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) != 0 }
}

/// The live attachment of a store, if any (and whether its daemon died).
fn attachment(store: &Path) -> Option<AttachState> {
    let name = name_for_store(store);
    list_states().into_iter().find(|s| s.name == name)
}

/// The status of every ioMemory device of the store at `dir`.
pub fn device_status(dir: &Path) -> Result<Vec<DeviceStatus>> {
    let dir = dir
        .canonicalize()
        .with_context(|| format!("unknown store {}", dir.display()))?;
    let h = Store::read_header(&dir)?
        .ok_or_else(|| anyhow!("{} is not an openvsl store (no store.json)", dir.display()))?;
    let att = attachment(&dir);
    let report = match &att {
        Some(st) if st.alive() => Some(fetch_status(st)?),
        _ => None,
    };
    let dead = att.as_ref().is_some_and(|s| !s.alive());
    let mut out = Vec::new();
    for &m in &h.members {
        let cfg = member_config(&h, m)?;
        let ftl = cfg.ftl_config()?;
        let capacity = h.user_sectors * h.sector_bytes as u64;
        let raw = ftl.geometry.raw_bytes();
        let live = report
            .as_ref()
            .and_then(|r| r.members.iter().find(|s| s.member == m));
        let (free, hist) = match live {
            Some(s) => (Some(s.free_space_pct), Some(s.latency_histogram.clone())),
            None => (None, None),
        };
        // What the running model uses; the store's card options when
        // detached (or the daemon is older than the field).
        let (gc_policy, placement) = match live.filter(|s| !s.placement.is_empty()) {
            Some(s) => (s.gc_policy.clone(), s.placement.clone()),
            None => (cfg.gc_policy.to_string(), cfg.placement.to_string()),
        };
        let streams = match cfg.placement {
            ftl::PlacementSpec::Streams(_) => h.card.streams.clone(),
            _ => Vec::new(),
        };
        let (health, lifetime, interval, ram, block) = match live {
            Some(s) => (
                s.health.clone().ok_or_else(|| {
                    anyhow!(
                        "the daemon of {} is too old to report health; re-attach it",
                        dir.display()
                    )
                })?,
                s.lifetime,
                Some(s.last_interval.clone()),
                s.host_ram_bytes,
                Some(s.loop_device.clone()),
            ),
            None => {
                let life = read_lifetime(&dir, m)?;
                let wear = read_wear(&dir, m, h.lebs)?;
                (
                    offline_health(&cfg, &ftl, m, &life, &wear),
                    life,
                    None,
                    0,
                    None,
                )
            }
        };
        let state = if dead || health.state == HealthState::Failed {
            DeviceState::Failed
        } else if live.is_some() {
            DeviceState::Attached
        } else if locked(&dir) {
            DeviceState::Busy
        } else {
            DeviceState::Detached
        };
        let host = lifetime.host_bytes_written;
        out.push(DeviceStatus {
            store: dir.display().to_string(),
            member: m,
            model: h.card.device.clone(),
            serial: serial(&dir, m),
            firmware_version: format!("openvsl {}", env!("CARGO_PKG_VERSION")),
            format_version: STORE_VERSION,
            state,
            block_device: block,
            format: format_label(&h),
            formatted_capacity_bytes: capacity,
            sectors: h.user_sectors,
            sector_bytes: h.sector_bytes,
            raw_bytes: raw,
            overprovision_pct: ((1.0 - capacity as f64 / raw as f64) * 1e4).round() / 100.0,
            write_amplification: if host == 0 {
                0.0
            } else {
                lifetime.nand_bytes_programmed as f64 / host as f64
            },
            host_ram_bytes: ram,
            host_ram_peak_bytes: lifetime.host_ram_peak_bytes.max(ram),
            lifetime,
            health,
            live: interval,
            free_space_pct: free,
            latency_histogram: hist,
            trace: report.as_ref().and_then(|r| r.trace.clone()),
            gc_policy,
            placement,
            streams,
        });
    }
    Ok(out)
}

/// The health of a device that is not running, from its saved wear and
/// lifetime counters: powered off, at ambient temperature.
fn offline_health(
    cfg: &CardConfig,
    ftl: &ftl::FtlConfig,
    member: u32,
    life: &Lifetime,
    wear: &[u32],
) -> HealthReport {
    let (_, write_bps) = cfg.preset.datapath_bytes_per_s();
    let mut health =
        device::health::Health::new(ftl, cfg.environment, cfg.preset, member, write_bps);
    health.set_lifetime_base(
        life.nand_bytes_programmed,
        life.nand_bytes_read,
        life.temperature_max_c,
    );
    health.restore_wear(wear);
    let mut r = health.report_parts(0, 0, wear);
    r.power_w = 0.0;
    r.power_avg_w = 0.0;
    r.power_max_w = 0.0;
    r
}

/// Every attached card's stores (live daemons), deduplicated.
fn attached_stores() -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = crate::state::select(None)?
        .into_iter()
        .map(|s| s.store)
        .collect();
    v.sort();
    v.dedup();
    Ok(v)
}

/// Resolves `sel` (store directory, loop device, attachment name) to a store.
fn store_of(sel: &str) -> Result<PathBuf> {
    let p = Path::new(sel);
    if p.join("store.json").exists() {
        return Ok(p.to_path_buf());
    }
    list_states()
        .into_iter()
        .find(|s| s.name == sel || s.devices.iter().any(|d| d.loop_device == sel))
        .map(|s| s.store)
        .ok_or_else(|| anyhow!("unknown store '{sel}': not a store directory, an attached loop device or an attachment name (see vsl attach --list)"))
}

/// The whole status document for `sel` (`None` or `all`: everything live).
pub fn status_doc(sel: Option<&str>) -> Result<StatusDoc> {
    let (stores, runs) = match sel {
        None | Some("all") => (attached_stores()?, list_runs()),
        Some(s) => (vec![store_of(s)?], Vec::new()),
    };
    let mut devices = Vec::new();
    for s in stores {
        devices.extend(device_status(&s)?);
    }
    Ok(StatusDoc {
        schema: STATUS_SCHEMA.into(),
        devices,
        runs,
    })
}

/// `vsl status`.
pub fn run_status(a: StatusArgs) -> Result<()> {
    let doc = status_doc(a.device.as_deref())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    if doc.devices.is_empty() && doc.runs.is_empty() {
        println!("no card attached and no simulation running");
    }
    for d in &doc.devices {
        print_device(d, a.all);
    }
    for r in &doc.runs {
        print_run(r);
    }
    Ok(())
}

fn gb(b: u64) -> String {
    format!("{:.2} GB", b as f64 / 1e9)
}

fn print_device(d: &DeviceStatus, all: bool) {
    let h = &d.health;
    println!(
        "{} ioMemory {} ({}, {}): {}{}",
        d.store,
        d.member,
        d.model,
        d.serial,
        d.state.name(),
        d.block_device
            .as_ref()
            .map_or(String::new(), |b| format!(" as {b}"))
    );
    println!(
        "  {} formatted ({} x {} B, format {}), over-provisioning {:.1} %; health {}; reserves {:.1} %; rated endurance remaining {:.2} %; {:.1} °C (max {:.1}); {:.1} W",
        gb(d.formatted_capacity_bytes), d.sectors, d.sector_bytes, d.format, d.overprovision_pct,
        h.state, h.reserve_pct, h.endurance_remaining_pct, h.temperature_c, h.temperature_max_c, h.power_w
    );
    if !all {
        return;
    }
    let l = &d.lifetime;
    println!(
        "  firmware {}, store format version {}; GC victim {}, placement {}{}",
        d.firmware_version,
        d.format_version,
        d.gc_policy,
        d.placement,
        if d.streams.is_empty() {
            String::new()
        } else {
            format!(" ({})", d.streams.join(", "))
        }
    );
    println!(
        "  lifetime: host written {}, read {}; physical written {}, read {}; WA {:.2}; {} erases, erase count min/avg/max {}/{:.1}/{}",
        gb(l.host_bytes_written), gb(l.host_bytes_read), gb(h.physical_bytes_written), gb(h.physical_bytes_read),
        d.write_amplification, l.erases, h.erase_count_min, h.erase_count_avg, h.erase_count_max
    );
    println!(
        "  blocks: {} of {} retired ({:.2} % healthy); rated endurance {} physical",
        h.retired_blocks,
        h.total_blocks,
        h.healthy_blocks_pct,
        gb(h.rated_endurance_bytes)
    );
    println!(
        "  power now/avg/max {:.1}/{:.1}/{:.1} W; throttle {:?}; ambient {:.1} °C, airflow {:.0} LFM, external power {}",
        h.power_w, h.power_avg_w, h.power_max_w, h.throttle, h.ambient_c, h.airflow_lfm,
        if h.external_power { "on" } else { "off" }
    );
    println!(
        "  host RAM of the map now/peak {:.1} / {:.1} MB",
        d.host_ram_bytes as f64 / 1e6,
        d.host_ram_peak_bytes as f64 / 1e6
    );
    if let Some(i) = &d.live {
        println!(
            "  last {:.1} s: read {:.0} IOPS {:.1} MB/s, write {:.0} IOPS {:.1} MB/s, write p99 {:.0} us",
            i.seconds, i.read_iops, i.read_mb_s, i.write_iops, i.write_mb_s, i.write_latency.p99_us
        );
    }
}

fn print_run(r: &LiveRun) {
    let last = r.points.back().cloned().unwrap_or_default();
    println!(
        "{} pid {}: {} — at {:.0} s: {:.0} IOPS, {:.1} MB/s, latency avg/p99/max {:.0}/{:.0}/{:.0} us",
        r.kind, r.pid, r.label, last.t_s, last.iops, last.mb_s, last.latency_avg_us, last.latency_p99_us, last.latency_max_us
    );
    for (i, h) in r.health.iter().enumerate() {
        println!(
            "  member {i}: health {}, {:.1} °C (max {:.1}), {:.1} W, endurance remaining {:.2} %",
            h.state, h.temperature_c, h.temperature_max_c, h.power_w, h.endurance_remaining_pct
        );
    }
}

/// Refuses to change a store that is attached or in use.
fn check_detached(dir: &Path, what: &str) -> Result<()> {
    if let Some(st) = attachment(dir).filter(|s| s.alive()) {
        let devs: Vec<_> = st.devices.iter().map(|d| d.loop_device.as_str()).collect();
        bail!(
            "cannot {what} {}: it is attached as {} (daemon pid {}); detach it first (vsl detach {})",
            dir.display(),
            devs.join(", "),
            st.pid,
            dir.display()
        );
    }
    Ok(())
}

/// Asks for "yes" on a terminal; refuses on a non-terminal without `-y`.
fn confirm(yes: bool, what: &str) -> Result<()> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        bail!("refusing to {what} without -y: standard input is not a terminal to confirm on");
    }
    print!("Type 'yes' to {what}: ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if line.trim() != "yes" {
        bail!("{what}: cancelled, nothing changed");
    }
    Ok(())
}

fn open_header(store: &Path) -> Result<(PathBuf, StoreHeader)> {
    let dir = store
        .canonicalize()
        .with_context(|| format!("unknown store {}", store.display()))?;
    let h = Store::read_header(&dir)?
        .ok_or_else(|| anyhow!("{} is not an openvsl store (no store.json)", dir.display()))?;
    Ok((dir, h))
}

/// Empties a member's mapping (OOB records, trim floors), and with
/// `zero_data` its data; sizes them for `h`. Wear and lifetime stay.
fn reset_member(dir: &Path, member: u32, h: &StoreHeader, zero_data: bool) -> Result<()> {
    let sizes = [
        ("oob", h.physical_slots * 16, true),
        ("trim", h.user_sectors * 8, true),
        ("data", h.data_bytes_per_member(), zero_data),
    ];
    for (ext, len, reset) in sizes {
        if !reset {
            continue;
        }
        let path = dir.join(format!("member{member}.{ext}"));
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        f.set_len(len)
            .with_context(|| format!("sizing {}", path.display()))?;
        f.sync_all()
            .with_context(|| format!("syncing {}", path.display()))?;
    }
    Ok(())
}

fn write_header(dir: &Path, h: &StoreHeader) -> Result<()> {
    let path = dir.join("store.json");
    let tmp = dir.join("store.json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(h)? + "\n")
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

/// `vsl format`.
pub fn run_format(a: FormatArgs) -> Result<()> {
    let (dir, old) = open_header(&a.store)?;
    check_detached(&dir, "format")?;
    let mut spec = old.card.clone();
    if let Some(p) = &a.preset {
        (spec.format, spec.capacity, spec.overprovision) = (p.clone(), None, None);
    }
    if let Some(c) = &a.capacity {
        (spec.capacity, spec.overprovision) = (Some(c.clone()), None);
    }
    if let Some(o) = &a.overprovision {
        (spec.capacity, spec.overprovision) = (None, Some(o.clone()));
    }
    if let Some(s) = &a.sector_size {
        spec.sector_size = s.clone();
    }
    let mut cfg = card_config(&spec)?;
    cfg.member = MemberSel::One(old.members[0]);
    let ftl = cfg.ftl_config()?;
    Card::new(cfg.clone()).map(|c| c.capacity_bytes())?;
    let slots = ftl.geometry.lebs() as u64 * ftl.slots_per_leb() as u64;
    let new = StoreHeader::new(spec, old.members.clone(), &ftl, slots);
    let cap = |h: &StoreHeader| gb(h.user_sectors * h.sector_bytes as u64);
    println!(
        "format {} ({} ioMemory {:?}): {} in {}-byte sectors -> {} in {}-byte sectors ({}); ALL DATA ON IT WILL BE LOST (lifetime counters, wear and temperature history are kept)",
        dir.display(), new.card.device, new.members, cap(&old), old.sector_bytes, cap(&new),
        new.sector_bytes, format_label(&new)
    );
    confirm(a.yes, "format")?;
    let _lock = lock_store(&dir).map_err(|e| anyhow!("cannot format: {e}"))?;
    for &m in &new.members {
        reset_member(&dir, m, &new, true)?;
    }
    write_header(&dir, &new)?;
    println!(
        "formatted {}: {} per ioMemory device",
        dir.display(),
        cap(&new)
    );
    Ok(())
}

/// `vsl erase`.
pub fn run_erase(a: EraseArgs) -> Result<()> {
    let (dir, h) = open_header(&a.store)?;
    check_detached(&dir, "erase")?;
    let how = if a.purge { "purge" } else { "clear" };
    println!(
        "erase ({how}) {}: ALL DATA ON IT WILL BE LOST (lifetime counters, wear and temperature history are kept)",
        dir.display()
    );
    confirm(a.yes, "erase")?;
    let _lock = lock_store(&dir).map_err(|e| anyhow!("cannot erase: {e}"))?;
    for &m in &h.members {
        reset_member(&dir, m, &h, a.purge)?;
        if a.purge {
            purge_wear(&dir, m, &h)?;
        }
    }
    println!("erased ({how}) {}", dir.display());
    Ok(())
}

/// A purge erases every erase unit once: it counts as wear.
fn purge_wear(dir: &Path, m: u32, h: &StoreHeader) -> Result<()> {
    let wear: Vec<u8> = read_wear(dir, m, h.lebs)?
        .iter()
        .flat_map(|c| (c + 1).to_le_bytes())
        .collect();
    let path = dir.join(format!("member{m}.wear"));
    let f = std::fs::OpenOptions::new().write(true).open(&path)?;
    f.write_all_at(&wear, 0)?;
    f.sync_all()?;
    let mut life = read_lifetime(dir, m)?;
    life.erases += h.lebs as u64;
    let life_path = dir.join(format!("member{m}.life.json"));
    std::fs::write(&life_path, serde_json::to_string_pretty(&life)? + "\n")
        .with_context(|| format!("writing {}", life_path.display()))
}
