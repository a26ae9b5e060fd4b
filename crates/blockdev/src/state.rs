//! What an attachment leaves in the run directory and how the commands
//! find it: `state.json` ([`AttachState`], [`list_states`]), attachments
//! that lost it ([`Orphan`], [`orphans`]), the loop devices bound under a
//! directory, and [`select`]ing the attachments a command names (a loop
//! device, store or name). The daemon writes these; `vsl status`, `vsl
//! detach`, `vsl atomic` and `vsl trace` read them.

use crate::engine::Timing;
use anyhow::{bail, Result};
use rundir::{pid_alive, run_base};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One attached ioMemory device.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AttachedDevice {
    pub member: u32,
    pub loop_device: String,
    pub file: PathBuf,
    pub capacity_bytes: u64,
    pub sector_bytes: u32,
}

/// What `state.json` records about a running daemon.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AttachState {
    pub name: String,
    pub pid: u32,
    pub store: PathBuf,
    pub device: String,
    pub timing: Timing,
    pub devices: Vec<AttachedDevice>,
    pub socket: PathBuf,
    pub mountpoint: PathBuf,
    /// Idle CPUs poll while I/O flows (`--idle-poll`).
    #[serde(default)]
    pub idle_poll: bool,
    /// The lead answers allow for the kernel path: its round trip measured
    /// at attach (`--path-cost probe`), zero (`none`), absent (`host`).
    #[serde(default)]
    pub path_cost: Option<crate::wakeup::PathCost>,
    /// How requests reach the daemon: "io_uring" or "/dev/fuse".
    #[serde(default)]
    pub fuse_transport: String,
    /// The reads' lead is trimmed against the loop devices' latency
    /// (`--path-trim`, [`crate::trim`]).
    #[serde(default)]
    pub path_trim: bool,
    /// The answering threads' SCHED_FIFO priority (`--rt-priority`); null
    /// when off, refused or with `--timing none`.
    #[serde(default)]
    pub rt_priority: Option<i32>,
    /// The loop devices' `queue/rq_affinity` while attached (see
    /// [`rq_affinity_for`]); 0 when not recorded.
    #[serde(default)]
    pub rq_affinity: u32,
}

impl AttachState {
    pub fn dir(&self) -> PathBuf {
        run_base().join(&self.name)
    }
    pub fn alive(&self) -> bool {
        pid_alive(self.pid)
    }
}

/// Every attachment with a state file, live or left by a crash.
pub fn list_states() -> Vec<AttachState> {
    let mut out: Vec<AttachState> = std::fs::read_dir(run_base())
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.ok()?.path().join("state.json")).ok()?;
            serde_json::from_str(&text).ok()
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The run-directory name of the attachment serving `store`.
pub fn name_for_store(store: &Path) -> String {
    let s: String = store
        .to_string_lossy()
        .trim_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() {
        "root".into()
    } else {
        s
    }
}

/// An attachment under this run directory whose state file is gone
/// (deleted by hand) while its FUSE mount is still there.
#[derive(Clone, Debug)]
pub struct Orphan {
    pub name: String,
    /// The daemon, if it still runs (from the mount's source,
    /// `openvsl:NAME:PID`, checked against the process).
    pub pid: Option<u32>,
    pub mountpoint: PathBuf,
    /// Loop devices bound to files in the mount.
    pub loop_devices: Vec<String>,
}

/// Undoes the octal escapes of a /proc/self/mounts field.
fn unescape_mount_field(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(d) => {
                out.push(d.iter().fold(0u8, |v, c| v.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// True if `pid` is an attach daemon: its command line attaches and it
/// holds /dev/fuse open (so a reused pid is never signalled).
fn is_attach_daemon(pid: u32) -> bool {
    if !pid_alive(pid) {
        return false;
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    if !cmdline.split(|&c| c == 0).any(|a| a == b"attach") {
        return false;
    }
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|l| l == Path::new("/dev/fuse"))
}

/// The loop devices bound to files under `dir`.
pub fn loops_backed_under(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let dev = format!("/dev/{name}");
            (name.starts_with("loop") && loop_backing_file(&dev)?.starts_with(dir)).then_some(dev)
        })
        .collect();
    out.sort();
    out
}

/// Attachments under this run directory that lost their state file.
pub fn orphans() -> Vec<Orphan> {
    let base = run_base();
    let known: Vec<PathBuf> = list_states().into_iter().map(|s| s.mountpoint).collect();
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let source = unescape_mount_field(f.next()?);
            let mountpoint = PathBuf::from(unescape_mount_field(f.next()?));
            let fstype = f.next()?;
            let rest = source.strip_prefix("openvsl:")?;
            if !matches!(fstype, "fuse" | "fuse.openvsl")
                || !mountpoint.starts_with(&base)
                || known.contains(&mountpoint)
            {
                return None;
            }
            let (name, pid) = match rest.rsplit_once(':') {
                Some((n, p)) => (n.to_string(), p.parse::<u32>().ok()),
                None => (rest.to_string(), None),
            };
            Some(Orphan {
                name,
                pid: pid.filter(|&p| is_attach_daemon(p)),
                loop_devices: loops_backed_under(&mountpoint),
                mountpoint,
            })
        })
        .collect()
}

/// The file a loop device is bound to, if any.
pub fn loop_backing_file(dev: &str) -> Option<PathBuf> {
    let name = Path::new(dev).file_name()?.to_str()?;
    let s = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    Some(PathBuf::from(s.trim_end().trim_end_matches(" (deleted)")))
}

/// The live attachments `sel` names (a loop device, store or name).
pub fn select(sel: Option<&str>) -> Result<Vec<AttachState>> {
    let (found, orphans) = select_with_orphans(sel)?;
    let (live, dead): (Vec<_>, Vec<_>) = found.into_iter().partition(|s| s.alive());
    if live.is_empty() {
        if let Some(o) = orphans.first() {
            bail!(
                "{} lost its state file (deleted by hand?): `vsl detach` cleans it up",
                o.mountpoint.display()
            );
        }
        if let Some(d) = dead.first() {
            bail!(
                "the daemon of {} (pid {}) is gone (crashed?): re-attach the store to recover it, or `vsl detach` to clean up",
                d.store.display(),
                d.pid
            );
        }
    }
    Ok(live)
}

/// The attachments (live, or left by a daemon that died) and the orphans
/// `sel` names (all without `sel`).
pub fn select_with_orphans(sel: Option<&str>) -> Result<(Vec<AttachState>, Vec<Orphan>)> {
    let all = list_states();
    let orphans = orphans();
    let Some(sel) = sel else {
        return Ok((all, orphans));
    };
    let store = std::fs::canonicalize(sel).ok();
    let found: Vec<_> = all
        .into_iter()
        .filter(|s| {
            s.name == sel
                || Some(&s.store) == store.as_ref()
                || s.devices.iter().any(|d| d.loop_device == sel)
        })
        .collect();
    let orphans: Vec<_> = orphans
        .into_iter()
        .filter(|o| o.name == sel || o.loop_devices.iter().any(|d| d == sel))
        .collect();
    if found.is_empty() && orphans.is_empty() {
        bail!("{sel} is not an attached openvsl device (see vsl attach --list)");
    }
    Ok((found, orphans))
}
