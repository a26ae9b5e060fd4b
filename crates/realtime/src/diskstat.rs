//! What reached the device: the block layer's own counters of the disk
//! under a target, read before and after a run, as fio's `disk_util`.
//!
//! - [`DeviceWatch`]: resolves the devices under a target once (a file's
//!   `st_dev` or a device's `st_rdev` → `/sys/dev/block/MAJ:MIN`; a
//!   partition → its disk; device-mapper → `slaves/`; loop →
//!   `loop/backing_file` and the device under that file), then snapshots
//!   their `/sys/block/<dev>/stat` around each run.
//! - [`DeviceReport`]: the deltas in fio's names ([`DiskUtil`]), what the
//!   run issued ([`Issued`]) and the [`Verdict`]: was the result measured on
//!   the device, in words.
//!
//! Why a verdict and not just the numbers: a read of an unwritten extent, a
//! hole, a page-cache hit or a RAM disk completes in microseconds without
//! the device, and the IOPS look like a fast SSD's. The counters say so:
//! 43 device reads for 15 M issued on a preallocated file here (issue 33).
//! The counters are device-wide, so other I/O on the same disk during the
//! run is counted too; the verdict can only be fooled towards "measured".

use crate::Target;
use serde::Serialize;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Devices below devices (dm over loop over dm …) are followed this deep.
const MAX_DEPTH: usize = 8;
/// A run counts as measured on the device when the device completed at
/// least this share of the bytes the run issued, in each direction.
const MEASURED_SHARE: f64 = 0.5;
/// `/sys/block/*/stat` counts sectors of 512 bytes, whatever the device's.
const STAT_SECTOR_BYTES: u64 = 512;

/// One `/sys/block/<dev>/stat` line (Documentation/block/stat.rst); times
/// in milliseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskStat {
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    pub read_ticks_ms: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    pub write_ticks_ms: u64,
    pub io_ticks_ms: u64,
    pub in_queue_ms: u64,
}

impl DiskStat {
    /// Parses the stat file's text; `None` if it has fewer than 11 fields.
    pub fn parse(text: &str) -> Option<DiskStat> {
        let f: Vec<u64> = text
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<_>>()?;
        if f.len() < 11 {
            return None;
        }
        Some(DiskStat {
            read_ios: f[0],
            read_merges: f[1],
            read_sectors: f[2],
            read_ticks_ms: f[3],
            write_ios: f[4],
            write_merges: f[5],
            write_sectors: f[6],
            write_ticks_ms: f[7],
            // f[8] is the number in flight now, not a counter.
            io_ticks_ms: f[9],
            in_queue_ms: f[10],
        })
    }

    fn read(sys: &Path) -> Option<DiskStat> {
        DiskStat::parse(&std::fs::read_to_string(sys.join("stat")).ok()?)
    }

    /// `self - before`, field by field (counters only grow; a reset
    /// device gives 0, not a wrap).
    fn since(&self, b: &DiskStat) -> DiskStat {
        DiskStat {
            read_ios: self.read_ios.saturating_sub(b.read_ios),
            read_merges: self.read_merges.saturating_sub(b.read_merges),
            read_sectors: self.read_sectors.saturating_sub(b.read_sectors),
            read_ticks_ms: self.read_ticks_ms.saturating_sub(b.read_ticks_ms),
            write_ios: self.write_ios.saturating_sub(b.write_ios),
            write_merges: self.write_merges.saturating_sub(b.write_merges),
            write_sectors: self.write_sectors.saturating_sub(b.write_sectors),
            write_ticks_ms: self.write_ticks_ms.saturating_sub(b.write_ticks_ms),
            io_ticks_ms: self.io_ticks_ms.saturating_sub(b.io_ticks_ms),
            in_queue_ms: self.in_queue_ms.saturating_sub(b.in_queue_ms),
        }
    }
}

/// What kind of block device a node is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// A disk with no device below it: where the I/O is really served.
    Disk,
    /// zram, brd (`ram*`): a disk in memory.
    RamDisk,
    /// A loop device (its backing file's device is followed).
    Loop,
    /// Device-mapper or md (its `slaves/` are followed).
    Stacked,
}

impl DeviceKind {
    fn of(name: &str, has_slaves: bool) -> DeviceKind {
        if name.starts_with("loop") {
            DeviceKind::Loop
        } else if name.starts_with("zram") || name.starts_with("ram") {
            DeviceKind::RamDisk
        } else if has_slaves {
            DeviceKind::Stacked
        } else {
            DeviceKind::Disk
        }
    }

    /// True for the devices at the bottom of the stack.
    fn is_leaf(self) -> bool {
        matches!(self, DeviceKind::Disk | DeviceKind::RamDisk)
    }
}

#[derive(Clone, Debug)]
struct Node {
    name: String,
    kind: DeviceKind,
    sys: PathBuf,
}

/// The devices under `target`, top first, or why there are none.
fn resolve(target: &Target) -> Result<Vec<Node>, String> {
    let meta = std::fs::metadata(target.path())
        .map_err(|e| format!("{}: {e}", target.path().display()))?;
    let dev = match target {
        Target::File { .. } => meta.dev(),
        Target::Blockdev { .. } => meta.rdev(),
    };
    let mut out = Vec::new();
    resolve_dev(dev, target.path(), &mut out, 0)?;
    Ok(out)
}

fn resolve_dev(dev: u64, what: &Path, out: &mut Vec<Node>, depth: usize) -> Result<(), String> {
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    if maj == 0 {
        return Err(format!(
            "{} is on a filesystem with no block device (tmpfs, or a virtual or network filesystem)",
            what.display()
        ));
    }
    let sys = std::fs::canonicalize(format!("/sys/dev/block/{maj}:{min}"))
        .map_err(|e| format!("device {maj}:{min} of {}: {e}", what.display()))?;
    resolve_sys(sys, out, depth)
}

/// `sys`: a canonical `/sys/devices/…/block/NAME[/PART]` directory.
fn resolve_sys(mut sys: PathBuf, out: &mut Vec<Node>, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("devices stacked more than {MAX_DEPTH} deep"));
    }
    if sys.join("partition").exists() {
        // The partition's own stat exists too, but the disk's queue is
        // where merges and utilisation are counted (as fio reports).
        sys.pop();
    }
    let name = sys
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let slaves: Vec<PathBuf> = std::fs::read_dir(sys.join("slaves"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    let kind = DeviceKind::of(&name, !slaves.is_empty());
    out.push(Node {
        name: name.clone(),
        kind,
        sys: sys.clone(),
    });
    match kind {
        DeviceKind::Loop => {
            let backing = std::fs::read_to_string(sys.join("loop/backing_file"))
                .map_err(|_| format!("loop device {name} has no backing file"))?;
            let backing = PathBuf::from(backing.trim_end());
            let meta = std::fs::metadata(&backing)
                .map_err(|e| format!("{name}'s backing file {}: {e}", backing.display()))?;
            let dev = if meta.file_type().is_file() {
                meta.dev()
            } else {
                meta.rdev()
            };
            resolve_dev(dev, &backing, out, depth + 1)
        }
        DeviceKind::Stacked => {
            for s in slaves {
                let s = std::fs::canonicalize(&s).map_err(|e| format!("{}: {e}", s.display()))?;
                resolve_sys(s, out, depth + 1)?;
            }
            Ok(())
        }
        DeviceKind::Disk | DeviceKind::RamDisk => Ok(()),
    }
}

/// One device's counters over a run, in fio's `disk_util` names (ticks
/// and in-queue time in ms, `util` in percent of the run's wall time),
/// plus the bytes moved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiskUtil {
    pub name: String,
    pub kind: DeviceKind,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    pub util: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Time the device was busy (`io_ticks`), ms; `util` comes from it.
    pub io_ticks: u64,
}

impl DiskUtil {
    fn new(node: &Node, d: &DiskStat, wall_ms: f64) -> DiskUtil {
        DiskUtil {
            name: node.name.clone(),
            kind: node.kind,
            read_ios: d.read_ios,
            write_ios: d.write_ios,
            read_merges: d.read_merges,
            write_merges: d.write_merges,
            read_ticks: d.read_ticks_ms,
            write_ticks: d.write_ticks_ms,
            in_queue: d.in_queue_ms,
            util: util_percent(d.io_ticks_ms, wall_ms),
            read_bytes: d.read_sectors * STAT_SECTOR_BYTES,
            write_bytes: d.write_sectors * STAT_SECTOR_BYTES,
            io_ticks: d.io_ticks_ms,
        }
    }

    fn add(&mut self, o: &DiskUtil) {
        self.read_ios += o.read_ios;
        self.write_ios += o.write_ios;
        self.read_merges += o.read_merges;
        self.write_merges += o.write_merges;
        self.read_ticks += o.read_ticks;
        self.write_ticks += o.write_ticks;
        self.in_queue += o.in_queue;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.io_ticks += o.io_ticks;
    }
}

fn util_percent(io_ticks_ms: u64, wall_ms: f64) -> f64 {
    if wall_ms <= 0.0 {
        return 0.0;
    }
    (io_ticks_ms as f64 / wall_ms * 100.0).min(100.0)
}

/// What a run asked of the target.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Issued {
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl Issued {
    /// From a run's summary (`bytes` split by the read share of the I/Os,
    /// exact for one block size).
    pub fn from_summary(s: &lab::Summary) -> Issued {
        let ios = (s.reads + s.writes).max(1);
        let read_bytes = (s.bytes as u128 * s.reads as u128 / ios as u128) as u64;
        Issued {
            reads: s.reads,
            writes: s.writes,
            read_bytes,
            write_bytes: s.bytes - read_bytes,
        }
    }

    fn add(&mut self, o: &Issued) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
    }
}

/// Whether a result was measured on the device, and why, in words.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub measured: bool,
    pub words: String,
}

/// The device side of a run (or of several, merged).
#[derive(Clone, Debug, Serialize)]
pub struct DeviceReport {
    /// Every device under the target, top first (fio's `disk_util`).
    pub disk_util: Vec<DiskUtil>,
    pub issued: Issued,
    pub measured_on_device: Verdict,
    /// Why no device could be watched (tmpfs, no /sys), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unresolved: Option<String>,
    /// Set when reads were known to land on unwritten or never-written
    /// space (see `layout`): the share of the target that is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unwritten_share: Option<f64>,
}

impl DeviceReport {
    /// Says that reads may land on this share of unwritten space (from
    /// `layout`) and re-judges.
    pub fn set_unwritten_share(&mut self, share: Option<f64>) {
        self.unwritten_share = share;
        self.rejudge();
    }

    fn rejudge(&mut self) {
        self.measured_on_device = verdict(
            &self.disk_util,
            &self.issued,
            self.unresolved.as_deref(),
            self.unwritten_share,
        );
    }

    /// I/Os the disks at the bottom of the stack completed.
    pub fn leaf_ios(&self) -> u64 {
        self.disk_util
            .iter()
            .filter(|d| d.kind.is_leaf())
            .map(|d| d.read_ios + d.write_ios)
            .sum()
    }

    /// Adds another run on the same target and re-judges the total.
    pub fn merge(&mut self, o: &DeviceReport) {
        for (a, b) in self.disk_util.iter_mut().zip(&o.disk_util) {
            a.add(b);
            a.util = 0.0; // not meaningful over runs with gaps between them
        }
        self.issued.add(&o.issued);
        self.unwritten_share = match (self.unwritten_share, o.unwritten_share) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.rejudge();
    }
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

/// Judges a run from its device deltas. Pure, so tests can feed it.
pub fn verdict(
    devs: &[DiskUtil],
    issued: &Issued,
    unresolved: Option<&str>,
    unwritten_share: Option<f64>,
) -> Verdict {
    let no = |why: String| Verdict {
        measured: false,
        words: format!("not measured on the device: {why}"),
    };
    if let Some(u) = unwritten_share.filter(|u| *u > 0.01 && issued.reads > 0) {
        return no(format!(
            "{:.0} % of the target is unwritten extents, holes or never-written blocks, \
             and reads of them are answered without the device (lay the file out first)",
            u * 100.0
        ));
    }
    if let Some(why) = unresolved {
        return no(format!("no block device to watch ({why})"));
    }
    if let Some(ram) = devs.iter().find(|d| d.kind == DeviceKind::RamDisk) {
        return no(format!("{} is a RAM disk", ram.name));
    }
    let leaves: Vec<&DiskUtil> = devs.iter().filter(|d| d.kind.is_leaf()).collect();
    if leaves.is_empty() {
        return no("no disk found at the bottom of the device stack".into());
    }
    let names: Vec<&str> = leaves.iter().map(|d| d.name.as_str()).collect();
    let names = names.join("+");
    let dev_reads: u64 = leaves.iter().map(|d| d.read_ios).sum();
    let dev_writes: u64 = leaves.iter().map(|d| d.write_ios).sum();
    let dev_rb: u64 = leaves.iter().map(|d| d.read_bytes).sum();
    let dev_wb: u64 = leaves.iter().map(|d| d.write_bytes).sum();
    for (what, n, bytes, dn, dbytes) in [
        ("reads", issued.reads, issued.read_bytes, dev_reads, dev_rb),
        (
            "writes",
            issued.writes,
            issued.write_bytes,
            dev_writes,
            dev_wb,
        ),
    ] {
        if n > 0 && (dbytes as f64) < MEASURED_SHARE * bytes as f64 {
            return no(format!(
                "the run issued {n} {what} ({}) but {names} completed {dn} {what} ({}); \
                 the rest were served without it (page cache, unwritten extents, holes)",
                mib(bytes),
                mib(dbytes)
            ));
        }
    }
    Verdict {
        measured: true,
        words: format!(
            "measured on the device: {names} completed {dev_reads} reads ({}) and \
             {dev_writes} writes ({}) for {} reads and {} writes issued",
            mib(dev_rb),
            mib(dev_wb),
            issued.reads,
            issued.writes
        ),
    }
}

/// The devices under one target, resolved once when it is opened.
#[derive(Debug)]
pub struct DeviceWatch {
    nodes: Result<Vec<Node>, String>,
}

/// The counters at one moment.
pub struct Snapshot {
    stats: Vec<Option<DiskStat>>,
    at: Instant,
}

impl DeviceWatch {
    /// Resolves the devices under `target`; never fails (a target with no
    /// device gets reports that say why).
    pub fn new(target: &Target) -> DeviceWatch {
        DeviceWatch {
            nodes: resolve(target),
        }
    }

    /// The device names, top first (empty when none was found).
    pub fn names(&self) -> Vec<String> {
        self.nodes
            .as_ref()
            .map(|n| n.iter().map(|n| n.name.clone()).collect())
            .unwrap_or_default()
    }

    /// Reads the counters now: take one right before a run.
    pub fn snapshot(&self) -> Snapshot {
        let stats = match &self.nodes {
            Ok(nodes) => nodes.iter().map(|n| DiskStat::read(&n.sys)).collect(),
            Err(_) => Vec::new(),
        };
        Snapshot {
            stats,
            at: Instant::now(),
        }
    }

    /// The counters since `before`, judged against what the run issued.
    pub fn report(&self, before: &Snapshot, issued: Issued) -> DeviceReport {
        let wall_ms = before.at.elapsed().as_secs_f64() * 1e3;
        let after = self.snapshot();
        let mut unresolved = self.nodes.as_ref().err().cloned();
        let mut disk_util = Vec::new();
        if let Ok(nodes) = &self.nodes {
            for ((n, b), a) in nodes.iter().zip(&before.stats).zip(&after.stats) {
                match (b, a) {
                    (Some(b), Some(a)) => disk_util.push(DiskUtil::new(n, &a.since(b), wall_ms)),
                    _ => {
                        unresolved.get_or_insert(format!("cannot read {}/stat", n.sys.display()));
                    }
                }
            }
        }
        let v = verdict(&disk_util, &issued, unresolved.as_deref(), None);
        DeviceReport {
            disk_util,
            issued,
            measured_on_device: v,
            unresolved,
            unwritten_share: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "   49203     6712  2988842    16171    11083    25089  4292840    22226        0    11592    39244     5503       14   481400      808      907       37\n";

    #[test]
    fn parses_sys_block_stat_and_diffs() {
        let s = DiskStat::parse(STAT).unwrap();
        assert_eq!(
            (s.read_ios, s.read_merges, s.read_sectors),
            (49203, 6712, 2988842)
        );
        assert_eq!((s.write_ios, s.write_ticks_ms), (11083, 22226));
        assert_eq!((s.io_ticks_ms, s.in_queue_ms), (11592, 39244));
        assert!(DiskStat::parse("1 2 3").is_none());
        assert!(DiskStat::parse("1 2 x 4 5 6 7 8 9 10 11").is_none());
        let mut later = s;
        later.read_ios += 100;
        later.read_sectors += 800;
        later.io_ticks_ms += 500;
        let d = later.since(&s);
        assert_eq!((d.read_ios, d.read_sectors, d.write_ios), (100, 800, 0));
        let node = Node {
            name: "vda".into(),
            kind: DeviceKind::Disk,
            sys: PathBuf::new(),
        };
        let u = DiskUtil::new(&node, &d, 1000.0);
        assert_eq!(u.read_bytes, 800 * 512);
        assert!((u.util - 50.0).abs() < 1e-9);
        // Counters reset under us give zeros, not a wrap.
        assert_eq!(s.since(&later).read_ios, 0);
    }

    fn disk(name: &str, kind: DeviceKind, reads: u64, read_bytes: u64) -> DiskUtil {
        DiskUtil {
            name: name.into(),
            kind,
            read_ios: reads,
            write_ios: 0,
            read_merges: 0,
            write_merges: 0,
            read_ticks: 0,
            write_ticks: 0,
            in_queue: 0,
            util: 0.0,
            read_bytes,
            write_bytes: 0,
            io_ticks: 0,
        }
    }

    fn reads(n: u64) -> Issued {
        Issued {
            reads: n,
            read_bytes: n * 4096,
            ..Issued::default()
        }
    }

    /// Issue 33: 15 M reads issued, 43 on the disk.
    #[test]
    fn issue_33_far_fewer_device_ios_is_not_measured() {
        let v = verdict(
            &[disk("vda", DeviceKind::Disk, 43, 43 * 4096)],
            &reads(15_000_000),
            None,
            None,
        );
        assert!(!v.measured);
        assert!(
            v.words.starts_with("not measured on the device"),
            "{}",
            v.words
        );
        assert!(v.words.contains("15000000 reads"), "{}", v.words);
        let v = verdict(
            &[disk("vda", DeviceKind::Disk, 99_000, 99_000 * 4096)],
            &reads(100_000),
            None,
            None,
        );
        assert!(v.measured, "{}", v.words);
        assert!(v.words.starts_with("measured on the device: vda"));
    }

    #[test]
    fn loop_counts_are_not_the_disk_and_ram_disks_are_not_devices() {
        // The loop device saw every I/O but the disk under it none (the
        // backing file in the page cache).
        let devs = [
            disk("loop0", DeviceKind::Loop, 100_000, 100_000 * 4096),
            disk("vda", DeviceKind::Disk, 10, 40960),
        ];
        assert!(!verdict(&devs, &reads(100_000), None, None).measured);
        let devs = [disk("zram0", DeviceKind::RamDisk, 100_000, 100_000 * 4096)];
        let v = verdict(&devs, &reads(100_000), None, None);
        assert!(!v.measured);
        assert!(v.words.contains("zram0 is a RAM disk"), "{}", v.words);
        let v = verdict(&[], &reads(10), Some("x is on tmpfs"), None);
        assert!(
            !v.measured && v.words.contains("x is on tmpfs"),
            "{}",
            v.words
        );
        // Reads of unwritten space are not measured, whatever the counters.
        let devs = [disk("vda", DeviceKind::Disk, 100_000, 100_000 * 4096)];
        assert!(!verdict(&devs, &reads(100_000), None, Some(0.5)).measured);
        assert!(verdict(&devs, &reads(100_000), None, Some(0.0)).measured);
    }

    #[test]
    fn kinds_from_names() {
        assert_eq!(DeviceKind::of("loop3", false), DeviceKind::Loop);
        assert_eq!(DeviceKind::of("zram0", false), DeviceKind::RamDisk);
        assert_eq!(DeviceKind::of("ram0", false), DeviceKind::RamDisk);
        assert_eq!(DeviceKind::of("dm-0", true), DeviceKind::Stacked);
        assert_eq!(DeviceKind::of("nvme0n1", false), DeviceKind::Disk);
    }

    #[test]
    fn a_file_resolves_to_its_disk_and_tmpfs_to_none() {
        // The crate's own source file sits on some disk in any CI; /dev/shm
        // is tmpfs wherever it exists.
        let here = Target::File {
            path: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
            size_bytes: 1,
        };
        match resolve(&here) {
            Ok(nodes) => {
                assert!(!nodes.is_empty());
                let last = nodes.last().unwrap();
                assert!(last.kind.is_leaf(), "{nodes:?}");
                assert!(DiskStat::read(&last.sys).is_some(), "{nodes:?}");
            }
            Err(e) => assert!(e.contains("no block device"), "{e}"),
        }
        if Path::new("/dev/shm").is_dir() {
            let shm = Target::File {
                path: "/dev/shm".into(),
                size_bytes: 1,
            };
            let e = resolve(&shm).unwrap_err();
            assert!(e.contains("no block device"), "{e}");
        }
    }
}
