use crate::diskstat::DeviceWatch;
use crate::error::{open_error, RealtimeError};
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// A real target, as written on the command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    /// `file:PATH:SIZE`: a regular file, created or extended to `size_bytes`.
    File { path: PathBuf, size_bytes: u64 },
    /// `blockdev:/dev/NAME`: a whole block device; its size comes from the
    /// device.
    Blockdev { path: PathBuf },
}

impl Target {
    /// True when `s` names a real target (so a CLI can tell it from a
    /// modelled card such as `iodrive-duo-640-mlc:stock`).
    pub fn is_real(s: &str) -> bool {
        s.starts_with("file:") || s.starts_with("blockdev:")
    }

    /// Parses `file:PATH:SIZE` (SIZE in fio units, `8G`, `512m`) or
    /// `blockdev:/dev/NAME`. The size is taken after the last `:`, so a
    /// path may itself contain colons.
    pub fn parse(s: &str) -> Result<Target, RealtimeError> {
        let bad = |reason: &str| RealtimeError::BadTarget {
            spec: s.to_string(),
            reason: reason.to_string(),
        };
        if let Some(rest) = s.strip_prefix("file:") {
            let (path, size) = rest
                .rsplit_once(':')
                .ok_or_else(|| bad("expected file:PATH:SIZE, e.g. file:/mnt/x/testfile:8G"))?;
            if path.is_empty() {
                return Err(bad("empty path"));
            }
            let size_bytes = workload::units::parse_size(size).map_err(|e| bad(&e))?;
            return Ok(Target::File {
                path: PathBuf::from(path),
                size_bytes,
            });
        }
        if let Some(path) = s.strip_prefix("blockdev:") {
            if path.is_empty() {
                return Err(bad("expected blockdev:/dev/NAME"));
            }
            return Ok(Target::Blockdev {
                path: PathBuf::from(path),
            });
        }
        Err(bad(
            "expected file:PATH:SIZE or blockdev:/dev/NAME (or a modelled device name)",
        ))
    }

    pub fn path(&self) -> &Path {
        match self {
            Target::File { path, .. } | Target::Blockdev { path } => path,
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::File { path, size_bytes } => {
                write!(f, "file:{}:{size_bytes}", path.display())
            }
            Target::Blockdev { path } => write!(f, "blockdev:{}", path.display()),
        }
    }
}

/// Whether to open with O_DIRECT.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DirectMode {
    /// O_DIRECT where the filesystem accepts it, buffered I/O otherwise
    /// (said so in [`RealTarget::notes`]).
    #[default]
    Auto,
    /// O_DIRECT or an error.
    Require,
    /// Buffered I/O (fio's `--direct=0`).
    Off,
}

/// An opened real target: the file descriptor, its usable size and the
/// alignment direct I/O needs.
#[derive(Debug)]
pub struct RealTarget {
    pub(crate) file: File,
    target: Target,
    capacity_bytes: u64,
    sector_bytes: u32,
    mem_align_bytes: usize,
    direct: bool,
    notes: Vec<String>,
    watch: DeviceWatch,
}

impl RealTarget {
    /// Opens (and for a file target creates and preallocates) the target.
    pub fn open(target: &Target, direct: DirectMode) -> Result<RealTarget, RealtimeError> {
        match target {
            Target::File { path, size_bytes } => open_file(target, path, *size_bytes, direct),
            Target::Blockdev { path } => open_blockdev(target, path, direct),
        }
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Usable bytes (a multiple of [`Self::sector_bytes`]).
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// The I/O size and offset granularity: the logical sector of a block
    /// device, the direct-I/O alignment of a file.
    pub fn sector_bytes(&self) -> u32 {
        self.sector_bytes
    }

    pub(crate) fn mem_align_bytes(&self) -> usize {
        self.mem_align_bytes
    }

    /// True when the target was opened with O_DIRECT.
    pub fn direct(&self) -> bool {
        self.direct
    }

    /// Anything the user should know about how the target was opened
    /// (buffered fallback, sparse file).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The block devices under the target, whose counters every run reads.
    pub fn watch(&self) -> &DeviceWatch {
        &self.watch
    }
}

impl RealTarget {
    /// A file description of its own for one worker, opened as the target
    /// was (read-write, O_DIRECT if the target is direct; a block device
    /// without O_EXCL, which the target's own descriptor holds). fio opens
    /// the file once per job; workers sharing one description contend on
    /// its reference count in every request.
    pub(crate) fn reopen(&self) -> Result<File, RealtimeError> {
        let flags = if self.direct { libc::O_DIRECT } else { 0 };
        let path = self.target.path();
        open_with(path, false, flags).map_err(|e| open_error(path, e))
    }
}

fn open_with(path: &Path, create: bool, extra_flags: i32) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).custom_flags(extra_flags);
    if create {
        o.create(true).mode(0o644);
    }
    o.open(path)
}

/// Opens with O_DIRECT when asked and possible. Returns the file and
/// whether it is direct.
fn open_maybe_direct(
    path: &Path,
    create: bool,
    extra_flags: i32,
    mode: DirectMode,
    notes: &mut Vec<String>,
) -> Result<(File, bool), RealtimeError> {
    if mode == DirectMode::Off {
        let f = open_with(path, create, extra_flags).map_err(|e| open_error(path, e))?;
        return Ok((f, false));
    }
    match open_with(path, create, extra_flags | libc::O_DIRECT) {
        Ok(f) => Ok((f, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            if mode == DirectMode::Require {
                return Err(RealtimeError::DirectUnsupported {
                    path: path.to_path_buf(),
                });
            }
            // tmpfs before Linux 6.6 and some FUSE filesystems refuse
            // O_DIRECT; fio needs --direct=0 there too.
            notes.push(format!(
                "{}: O_DIRECT not supported, using buffered I/O (fio: --direct=0)",
                path.display()
            ));
            let f = open_with(path, create, extra_flags).map_err(|e| open_error(path, e))?;
            Ok((f, false))
        }
        Err(e) => Err(open_error(path, e)),
    }
}

fn open_file(
    target: &Target,
    path: &Path,
    size_bytes: u64,
    mode: DirectMode,
) -> Result<RealTarget, RealtimeError> {
    if let Ok(m) = std::fs::metadata(path) {
        if !m.file_type().is_file() {
            return Err(RealtimeError::BadTarget {
                spec: target.to_string(),
                reason: format!(
                    "{} is not a regular file (use blockdev: for a device)",
                    path.display()
                ),
            });
        }
    }
    let existed = path.exists();
    let mut notes = Vec::new();
    let (file, direct) = match open_maybe_direct(path, true, 0, mode, &mut notes) {
        Ok(f) => f,
        Err(e) => {
            // open(O_CREAT | O_DIRECT) creates the file before the
            // filesystem refuses O_DIRECT: leave nothing behind.
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            return Err(e);
        }
    };
    let (sector, mem_align) = dio_alignment(&file, direct);
    let capacity_bytes = size_bytes / sector as u64 * sector as u64;
    if capacity_bytes == 0 {
        return Err(RealtimeError::BadTarget {
            spec: target.to_string(),
            reason: format!("size {size_bytes} is smaller than one {sector}-byte sector"),
        });
    }
    if let Err(e) = allocate(&file, path, capacity_bytes, &mut notes) {
        if !existed {
            let _ = std::fs::remove_file(path);
        }
        return Err(e);
    }
    Ok(RealTarget {
        file,
        target: target.clone(),
        capacity_bytes,
        sector_bytes: sector,
        mem_align_bytes: mem_align,
        direct,
        notes,
        watch: DeviceWatch::new(target),
    })
}

/// Makes sure the first `size` bytes of the file are allocated, so that
/// writes cannot hit ENOSPC mid-run. Checks free space first (so a huge
/// target fails at once and allocates nothing), then fallocates.
fn allocate(
    file: &File,
    path: &Path,
    size: u64,
    notes: &mut Vec<String>,
) -> Result<(), RealtimeError> {
    let io_err = |what, source| RealtimeError::Io {
        path: path.to_path_buf(),
        what,
        source,
    };
    let meta = file.metadata().map_err(|e| io_err("stat", e))?;
    let allocated = std::os::unix::fs::MetadataExt::blocks(&meta) * 512;
    let needed = size.saturating_sub(allocated);
    if needed > 0 {
        let available = free_bytes(file).map_err(|e| io_err("statfs", e))?;
        if available.is_some_and(|a| needed > a) {
            return Err(RealtimeError::NoSpace {
                path: path.to_path_buf(),
                needed_bytes: needed,
                available_bytes: available.unwrap_or(0),
            });
        }
    }
    let len = i64::try_from(size).map_err(|_| RealtimeError::NoSpace {
        path: path.to_path_buf(),
        needed_bytes: needed,
        available_bytes: 0,
    })?;
    // SAFETY: plain syscall on an owned descriptor.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EFBIG) | Some(libc::EDQUOT) => {
            // Give back what a partial fallocate took.
            let _ = file.set_len(meta.len());
            Err(RealtimeError::NoSpace {
                path: path.to_path_buf(),
                needed_bytes: needed,
                available_bytes: free_bytes(file).ok().flatten().unwrap_or(0),
            })
        }
        Some(libc::EOPNOTSUPP) => {
            notes.push(format!(
                "{}: filesystem cannot preallocate; the file is sparse",
                path.display()
            ));
            if meta.len() < size {
                file.set_len(size).map_err(|e| io_err("set length", e))?;
            }
            Ok(())
        }
        _ => Err(io_err("fallocate", e)),
    }
}

/// Bytes free for the user, or `None` on a filesystem that reports no
/// size at all (ramfs grows until memory runs out).
fn free_bytes(file: &File) -> io::Result<Option<u64>> {
    // SAFETY: statvfs is plain data; fstatvfs fills it.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::fstatvfs(file.as_raw_fd(), &mut s) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if s.f_blocks == 0 {
        return Ok(None);
    }
    Ok(Some(s.f_bavail as u64 * s.f_frsize as u64))
}

/// (offset alignment, memory alignment) for I/O on `file`. Uses statx's
/// STATX_DIOALIGN (Linux 6.1+) and 4 KiB where the kernel does not say.
fn dio_alignment(file: &File, direct: bool) -> (u32, usize) {
    const PAGE: usize = 4096;
    if !direct {
        return (512, PAGE);
    }
    // SAFETY: statx is plain data; the call fills it.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut st,
        )
    };
    if rc == 0 && st.stx_mask & libc::STATX_DIOALIGN != 0 && st.stx_dio_offset_align > 0 {
        let off = st.stx_dio_offset_align.clamp(512, 1 << 20);
        let mem = (st.stx_dio_mem_align as usize).max(PAGE);
        if off.is_power_of_two() && mem.is_power_of_two() {
            return (off, mem);
        }
    }
    (PAGE as u32, PAGE)
}

fn open_blockdev(
    target: &Target,
    path: &Path,
    mode: DirectMode,
) -> Result<RealTarget, RealtimeError> {
    let meta = std::fs::metadata(path).map_err(|e| open_error(path, e))?;
    if !meta.file_type().is_block_device() {
        return Err(RealtimeError::NotBlockDevice {
            path: path.to_path_buf(),
        });
    }
    if let Some(at) = mounted_at(meta.rdev()) {
        return Err(RealtimeError::Mounted {
            path: path.to_path_buf(),
            at,
        });
    }
    let mut notes = Vec::new();
    // O_EXCL on a block device fails with EBUSY while it is mounted or
    // held by another exclusive opener: the benchmark writes over it.
    let (file, direct) = open_maybe_direct(path, false, libc::O_EXCL, mode, &mut notes)?;
    let fd = file.as_raw_fd();
    let io_err = |what, source| RealtimeError::Io {
        path: path.to_path_buf(),
        what,
        source,
    };
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64.
    if unsafe { libc::ioctl(fd, BLKGETSIZE64, &mut size) } != 0 {
        return Err(io_err("BLKGETSIZE64", io::Error::last_os_error()));
    }
    let mut lbs: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int.
    if unsafe { libc::ioctl(fd, BLKSSZGET, &mut lbs) } != 0 {
        return Err(io_err("BLKSSZGET", io::Error::last_os_error()));
    }
    let sector = u32::try_from(lbs)
        .ok()
        .filter(|s| s.is_power_of_two())
        .unwrap_or(512);
    let capacity_bytes = size / sector as u64 * sector as u64;
    if capacity_bytes == 0 {
        return Err(RealtimeError::BadTarget {
            spec: target.to_string(),
            reason: "device has zero size".into(),
        });
    }
    Ok(RealTarget {
        file,
        target: target.clone(),
        capacity_bytes,
        sector_bytes: sector,
        mem_align_bytes: 4096.max(sector as usize),
        direct,
        notes,
        watch: DeviceWatch::new(target),
    })
}

/// Where the device `rdev`, or a partition of it, is mounted. Said before
/// opening, since a kernel that forbids writing to mounted devices answers
/// the open with EPERM, which reads as a permission problem.
fn mounted_at(rdev: u64) -> Option<String> {
    let sys = |maj: &str, min: &str| std::fs::canonicalize(format!("/sys/dev/block/{maj}:{min}"));
    let dev = sys(
        &libc::major(rdev).to_string(),
        &libc::minor(rdev).to_string(),
    )
    .ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        // id parent MAJ:MIN root mount-point ...
        let mut f = l.split_whitespace().skip(2);
        let (maj, min) = f.next()?.split_once(':')?;
        let at = f.nth(1)?;
        let m = sys(maj, min).ok()?;
        m.starts_with(&dev).then(|| at.to_string())
    })
}

// <linux/fs.h>: _IOR(0x12, 114, size_t) and _IO(0x12, 104).
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKSSZGET: libc::c_ulong = 0x1268;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets() {
        assert_eq!(
            Target::parse("file:/mnt/x/testfile:8G").unwrap(),
            Target::File {
                path: "/mnt/x/testfile".into(),
                size_bytes: 8 << 30
            }
        );
        assert_eq!(
            Target::parse("file:/a:b/c:4k").unwrap(),
            Target::File {
                path: "/a:b/c".into(),
                size_bytes: 4096
            }
        );
        assert_eq!(
            Target::parse("blockdev:/dev/nvme0n1").unwrap(),
            Target::Blockdev {
                path: "/dev/nvme0n1".into()
            }
        );
        for bad in [
            "file:/x",
            "file::8G",
            "file:/x:lots",
            "blockdev:",
            "iodrive:stock",
        ] {
            let e = Target::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
        assert!(Target::is_real("file:/x:1G"));
        assert!(!Target::is_real("iodrive-duo-640-mlc:stock"));
    }

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("realtime-unit-{}-{name}", std::process::id()))
    }

    #[test]
    fn file_target_is_created_and_preallocated() {
        let p = tmp("create");
        let t = Target::File {
            path: p.clone(),
            size_bytes: (1 << 20) + 100,
        };
        let rt = RealTarget::open(&t, DirectMode::Auto).unwrap();
        assert_eq!(rt.capacity_bytes() % rt.sector_bytes() as u64, 0);
        assert!(rt.capacity_bytes() <= (1 << 20) + 100);
        assert!(std::fs::metadata(&p).unwrap().len() >= rt.capacity_bytes());
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn full_filesystem_is_a_clear_error_and_leaves_nothing() {
        let p = tmp("huge");
        // 8 EiB - 1: more than any filesystem here has free.
        let t = Target::File {
            path: p.clone(),
            size_bytes: u64::MAX / 2,
        };
        let e = RealTarget::open(&t, DirectMode::Auto).unwrap_err();
        assert!(matches!(e, RealtimeError::NoSpace { .. }), "{e}");
        assert!(e.to_string().contains("filesystem is full"), "{e}");
        assert!(!p.exists());
    }

    #[test]
    fn missing_and_wrong_devices() {
        let t = Target::parse("blockdev:/dev/openvsl-no-such-device").unwrap();
        let e = RealTarget::open(&t, DirectMode::Auto).unwrap_err();
        assert!(matches!(e, RealtimeError::NotFound { .. }), "{e}");
        let t = Target::parse("blockdev:/dev/null").unwrap();
        let e = RealTarget::open(&t, DirectMode::Auto).unwrap_err();
        assert!(matches!(e, RealtimeError::NotBlockDevice { .. }), "{e}");
        let t = Target::parse("file:/dev/null:1M").unwrap();
        let e = RealTarget::open(&t, DirectMode::Auto).unwrap_err();
        assert!(matches!(e, RealtimeError::BadTarget { .. }), "{e}");
        let t = Target::parse("file:/nonexistent-dir/x:1M").unwrap();
        let e = RealTarget::open(&t, DirectMode::Auto).unwrap_err();
        assert!(matches!(e, RealtimeError::NotFound { .. }), "{e}");
    }
}
