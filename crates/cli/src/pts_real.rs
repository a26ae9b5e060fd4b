//! Real files and block devices as `vsl pts` targets (wall time), and
//! their purge: punch-hole for a file; for a block device `blkdiscard
//! --secure`, else TRIM of the whole range (`blkdiscard`), else an
//! overwrite. A mounted device, or one with a partition or holder in use,
//! is refused before anything is written.

use anyhow::{anyhow, bail, Context, Result};
use lab::pts::{PtsClass, PtsError, PtsTarget};
use lab::{RunOptions, RunResult};
use realtime::{DirectMode, EngineOptions, FillPattern, RealTarget, Target};
use std::path::{Path, PathBuf};
use std::process::Command;
use workload::WorkloadSpec;

pub struct RealPts {
    label: String,
    target: RealTarget,
    engine: EngineOptions,
}

impl RealPts {
    /// Opens `spec` (`file:PATH:SIZE` or `blockdev:/dev/NAME`) with O_DIRECT.
    /// A block device is checked first: refused when mounted or in use.
    pub fn open(spec: &str, mem: realtime::IoMem) -> Result<RealPts> {
        let t = Target::parse(spec)?;
        if let Target::Blockdev { path } = &t {
            check_not_in_use(path)?;
        }
        let target = RealTarget::open(&t, DirectMode::Require)
            .with_context(|| format!("cannot open {spec}"))?;
        Ok(RealPts {
            label: spec.to_string(),
            target,
            engine: EngineOptions {
                mem,
                ..EngineOptions::default()
            },
        })
    }

    pub fn is_blockdev(&self) -> bool {
        matches!(self.target.target(), Target::Blockdev { .. })
    }

    pub fn path(&self) -> &Path {
        self.target.target().path()
    }
}

fn err(label: &str, e: impl std::fmt::Display) -> PtsError {
    PtsError::Target(format!("{label}: {e}"))
}

impl PtsTarget for RealPts {
    fn label(&self) -> &str {
        &self.label
    }
    fn description(&self) -> String {
        let t = &self.target;
        format!(
            "{} (real, wall time), {:.2} GB, {} B sectors, {}, --mem {}",
            t.target(),
            t.capacity_bytes() as f64 / 1e9,
            t.sector_bytes(),
            if t.direct() { "O_DIRECT" } else { "buffered" },
            self.engine.mem
        )
    }
    fn is_virtual(&self) -> bool {
        false
    }
    fn capacity_bytes(&self) -> u64 {
        self.target.capacity_bytes()
    }
    fn sector_bytes(&self) -> u32 {
        self.target.sector_bytes()
    }
    fn purge(&mut self) -> Result<String, PtsError> {
        match self.target.target().clone() {
            Target::File { path, size_bytes } => {
                punch_hole(&path, size_bytes).map_err(|e| err(&self.label, e))
            }
            Target::Blockdev { path } => {
                check_not_in_use(&path).map_err(|e| err(&self.label, format!("{e:#}")))?;
                let mut tried = Vec::new();
                for (args, what) in [
                    (vec!["--secure"], "secure erase (blkdiscard --secure)"),
                    (vec![], "TRIM of the whole range (blkdiscard)"),
                ] {
                    match Command::new("blkdiscard").args(&args).arg(&path).output() {
                        Ok(o) if o.status.success() => {
                            let mut s = what.to_string();
                            if !tried.is_empty() {
                                s.push_str(&format!(" ({})", tried.join("; ")));
                            }
                            return Ok(s);
                        }
                        Ok(o) => tried.push(format!(
                            "{what} refused: {}",
                            String::from_utf8_lossy(&o.stderr).trim()
                        )),
                        Err(e) => tried.push(format!("blkdiscard: {e}")),
                    }
                }
                self.target
                    .fill(FillPattern::Zeros, &mut |_, _| {})
                    .map_err(|e| err(&self.label, e))?;
                Ok(format!("overwrite with zeros ({})", tried.join("; ")))
            }
        }
    }
    fn run(&mut self, spec: &WorkloadSpec, opts: &RunOptions) -> Result<RunResult, PtsError> {
        let r = self
            .target
            .run(spec, opts, &self.engine, &mut |_| {})
            .map_err(|e| err(&self.label, e))?;
        Ok(r.result)
    }
    fn idle(&mut self, ns: u64) -> Result<(), PtsError> {
        std::thread::sleep(std::time::Duration::from_nanos(ns));
        Ok(())
    }
    fn write_cache(&mut self, class: PtsClass) -> String {
        let want = match class {
            PtsClass::Enterprise => "off",
            PtsClass::Client => "on",
        };
        match self.target.target() {
            Target::File { .. } => format!(
                "a file on a filesystem: the device's write cache is not changed (PTS asks for it {want}); O_DIRECT bypasses the page cache"
            ),
            Target::Blockdev { path } => format!(
                "not changed (PTS asks for it {want}; set it with `hdparm -W{}` {} before the run)",
                (want == "on") as u8,
                path.display()
            ),
        }
    }
}

/// Deallocates the whole file (FALLOC_FL_PUNCH_HOLE | KEEP_SIZE): the
/// file's purge. Its size stays.
pub fn punch_hole(path: &Path, size: u64) -> Result<String> {
    use std::os::unix::io::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open {} to punch a hole", path.display()))?;
    // SAFETY: a valid fd; fallocate has no memory arguments.
    let rc = unsafe {
        libc::fallocate(
            f.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            0,
            size as libc::off_t,
        )
    };
    if rc != 0 {
        bail!(
            "punch-hole purge of {} failed: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    f.sync_all()
        .with_context(|| format!("cannot sync {}", path.display()))?;
    Ok("file: punch-hole of the whole file (FALLOC_FL_PUNCH_HOLE), blocks deallocated".into())
}

/// The kernel's name of a block device node (`/dev/loop3` → `loop3`).
fn kernel_name(path: &Path) -> Result<String> {
    let real = std::fs::canonicalize(path)
        .with_context(|| format!("no such block device {}", path.display()))?;
    real.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| anyhow!("{}: not a device name", path.display()))
}

/// The device and every partition of it: (name, sysfs directory).
fn device_and_partitions(name: &str) -> Vec<(String, PathBuf)> {
    let sys = PathBuf::from("/sys/class/block").join(name);
    let mut out = vec![(name.to_string(), sys.clone())];
    if let Ok(rd) = std::fs::read_dir(&sys) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if n.starts_with(name) && e.path().join("partition").exists() {
                out.push((n, e.path()));
            }
        }
    }
    out
}

/// Refuses a block device that is mounted, is swap, or has a partition or
/// holder (dm, md, LVM) in use.
pub fn check_not_in_use(path: &Path) -> Result<()> {
    let name = kernel_name(path)?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    for (n, sys) in device_and_partitions(&name) {
        let dev = format!("/dev/{n}");
        for line in mounts.lines() {
            let mut f = line.split_whitespace();
            let (src, dir) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
            let same = src == dev
                || std::fs::canonicalize(src)
                    .map(|p| p == Path::new(&dev))
                    .unwrap_or(false);
            if same {
                bail!(
                    "refusing to purge {}: {dev} is mounted on {dir} (unmount it first)",
                    path.display()
                );
            }
        }
        if swaps
            .lines()
            .skip(1)
            .any(|l| l.split_whitespace().next() == Some(&dev))
        {
            bail!(
                "refusing to purge {}: {dev} is in use as swap",
                path.display()
            );
        }
        let holders: Vec<String> = std::fs::read_dir(sys.join("holders"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().to_string())
                    .collect()
            })
            .unwrap_or_default();
        if !holders.is_empty() {
            bail!(
                "refusing to purge {}: {dev} is in use by {} (device-mapper, md or LVM)",
                path.display(),
                holders.join(", ")
            );
        }
    }
    Ok(())
}

/// Asks before a block device is purged: on a terminal, "yes" must be
/// typed; off a terminal `-y` is required.
pub fn confirm_purge(devices: &[String], yes: bool) -> Result<()> {
    if devices.is_empty() || yes {
        return Ok(());
    }
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        bail!(
            "the PTS purges {} (every byte destroyed): pass -y to confirm when not on a terminal",
            devices.join(", ")
        );
    }
    eprint!(
        "The PTS purges {} (every byte destroyed) before each test. Type yes to go on: ",
        devices.join(", ")
    );
    std::io::stderr().flush().ok();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if line.trim() != "yes" {
        bail!("not confirmed: nothing was written");
    }
    Ok(())
}
