//! The on-disk store: user data by physical NAND slot, one out-of-band
//! record per slot, per-sector trim floors and per-erase-unit wear.
//!
//! A store is a directory:
//!
//! | file | content |
//! |---|---|
//! | `store.json` | [`StoreHeader`]: format version, card, geometry |
//! | `lock` | `flock`ed by the daemon that serves the store; holds its pid |
//! | `member<N>.data` | `physical_slots × sector` bytes (allocated in full at attach): slot `psa` at `psa × sector` |
//! | `member<N>.oob` | 16 bytes per slot: logical sector (u32), check (u32), sequence (u64); all zero = erased |
//! | `member<N>.trim` | 8 bytes per logical sector: host sectors written when it was last trimmed |
//! | `member<N>.wear` | 4 bytes per erase unit: erase count (saved every second and on detach, synced by the next flush) |
//! | `member<N>.life.json` | [`Lifetime`] counters (saved with the wear; absent in new stores) |
//! | `member<N>.atomic` | the atomic-write journal: the one group being applied ([`AtomicEntry`]; created when absent) |
//!
//! Every write to the data file happens before the out-of-band record that
//! names it, and an erase zeroes the records of its unit before the slots
//! are reused, so after a crash a record always describes the data beside
//! it. The map is rebuilt from these records ([`MemberStore::scan`]).
//!
//! An atomic write (a vector of writes and trims applied all-or-nothing)
//! is journalled: its entry names the sequence numbers its sectors take
//! and its trims, and says *pending* before any of its records is written
//! and *committed* once all are; only then are its trims written. On
//! attach a pending group's records are discarded (and zeroed, so they
//! never resurface) and a committed group's trims applied again (they are
//! idempotent), see [`MemberStore::atomic_entry`].
//!
//! The out-of-band file is fully allocated and mapped shared into memory:
//! a record is a 16-byte store into the page cache, which survives the
//! daemon's death exactly as a `pwrite` would, and [`MemberStore::sync`]
//! writes it back with the rest. The data file is mapped too, for reading
//! only (host reads copy out of the page cache without a system call);
//! all writes to it are `pwrite`s, so a full filesystem is an I/O error
//! and never a SIGBUS. (A media error of the disk under the store reading
//! through the mapping is a SIGBUS: the daemon dies, and, being power-cut
//! safe, loses no acknowledged write.)

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::SeqCst;

/// Bumped whenever the layout of any store file changes.
pub const STORE_VERSION: u32 = 1;
const MAGIC: &str = "openvsl-store";
const OOB_BYTES: u64 = 16;
const OOB_CHECK: u32 = 0x5653_4c31;
/// Most trim ranges one atomic write may carry (they live in its journal entry).
pub const ATOMIC_TRIMS_MAX: usize = 1024;
const JOURNAL_HEAD: u64 = 48;
const JOURNAL_BYTES: u64 = 20480;
const _: () = assert!(JOURNAL_HEAD + 16 * ATOMIC_TRIMS_MAX as u64 <= JOURNAL_BYTES);
const JOURNAL_IDLE: u64 = 0;
const JOURNAL_PENDING: u64 = 1;
const JOURNAL_COMMITTED: u64 = 2;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("store {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("store {path} is format version {found}; this openvsl reads version {STORE_VERSION} (use a new --store)")]
    Version { path: PathBuf, found: u32 },
    #[error("store {path} holds a different card: {field} is {stored} in the store but {requested} was asked for (attach without card options to use the store's, or use a new --store)")]
    Mismatch {
        path: PathBuf,
        field: &'static str,
        stored: String,
        requested: String,
    },
    #[error("store {path} is already attached (daemon pid {pid})")]
    Busy { path: PathBuf, pid: String },
    #[error("store {path} is too small: its filesystem has {have} bytes free, the card may need {need} bytes (all of its NAND); use another --store location or a smaller --scale")]
    TooSmall { path: PathBuf, have: u64, need: u64 },
    #[error("store {path} is damaged: {what}")]
    Corrupt { path: PathBuf, what: String },
}

/// What the store was created for. Everything a re-attach needs to rebuild
/// the same card, and the derived numbers that must match.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StoreHeader {
    pub magic: String,
    pub version: u32,
    /// The card options the store was made with (used when attaching
    /// without card options).
    pub card: CardSpec,
    /// One entry per served ioMemory device.
    pub members: Vec<u32>,
    pub sector_bytes: u32,
    /// Formatted capacity of each member, sectors.
    pub user_sectors: u64,
    pub physical_slots: u64,
    pub slots_per_leb: u32,
    pub lebs: u32,
    pub geometry: String,
}

pub use device::CardSpec;

impl StoreHeader {
    pub fn new(
        card: CardSpec,
        members: Vec<u32>,
        cfg: &ftl::FtlConfig,
        physical_slots: u64,
    ) -> StoreHeader {
        let g = cfg.geometry;
        StoreHeader {
            magic: MAGIC.into(),
            version: STORE_VERSION,
            card,
            members,
            sector_bytes: cfg.sector_bytes,
            user_sectors: cfg.user_sectors,
            physical_slots,
            slots_per_leb: cfg.slots_per_leb(),
            lebs: g.lebs(),
            geometry: format!(
                "{} channels ({} parity) x {} banks x {} planes x {} blocks x {} pages x {} B",
                g.channels,
                g.parity_channels,
                g.banks,
                g.planes,
                g.blocks_per_plane,
                g.pages_per_block,
                g.page_bytes
            ),
        }
    }

    /// Bytes of NAND data one member can hold: the most its data file
    /// ever occupies.
    pub fn data_bytes_per_member(&self) -> u64 {
        self.physical_slots * self.sector_bytes as u64
    }

    /// First field that differs from `want`, as an error.
    fn check_same(&self, want: &StoreHeader, path: &Path) -> Result<(), StoreError> {
        let fields: [(&'static str, String, String); 6] = [
            ("geometry", self.geometry.clone(), want.geometry.clone()),
            (
                "sector size",
                self.sector_bytes.to_string(),
                want.sector_bytes.to_string(),
            ),
            (
                "formatted capacity (sectors per member)",
                self.user_sectors.to_string(),
                want.user_sectors.to_string(),
            ),
            (
                "ioMemory devices",
                format!("{:?}", self.members),
                format!("{:?}", want.members),
            ),
            (
                "physical slots",
                self.physical_slots.to_string(),
                want.physical_slots.to_string(),
            ),
            ("device", self.card.device.clone(), want.card.device.clone()),
        ];
        for (field, stored, requested) in fields {
            if stored != requested {
                return Err(StoreError::Mismatch {
                    path: path.to_path_buf(),
                    field,
                    stored,
                    requested,
                });
            }
        }
        Ok(())
    }
}

/// An open, locked store.
pub struct Store {
    pub dir: PathBuf,
    pub header: StoreHeader,
    pub members: Vec<MemberStore>,
    _lock: File,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Store {
    /// Reads the header of the store at `dir`, if there is one.
    pub fn read_header(dir: &Path) -> Result<Option<StoreHeader>, StoreError> {
        let path = dir.join("store.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&path)(e)),
        };
        #[derive(Deserialize)]
        struct Probe {
            magic: String,
            version: u32,
        }
        let corrupt = |what: String| StoreError::Corrupt {
            path: dir.to_path_buf(),
            what,
        };
        let probe: Probe =
            serde_json::from_str(&text).map_err(|e| corrupt(format!("store.json: {e}")))?;
        if probe.magic != MAGIC {
            return Err(corrupt(format!("store.json magic is {:?}", probe.magic)));
        }
        if probe.version != STORE_VERSION {
            return Err(StoreError::Version {
                path: dir.to_path_buf(),
                found: probe.version,
            });
        }
        let h = serde_json::from_str(&text).map_err(|e| corrupt(format!("store.json: {e}")))?;
        Ok(Some(h))
    }

    /// Opens the store at `dir`, creating it for `want` if it does not
    /// exist. Fails if it holds another card, is served by another daemon,
    /// or its filesystem cannot hold the card's NAND.
    pub fn open(dir: &Path, want: &StoreHeader) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let lock = lock_store(dir)?;
        let (header, new) = match Store::read_header(dir)? {
            Some(h) => {
                h.check_same(want, dir)?;
                (h, false)
            }
            None => (want.clone(), true),
        };
        check_space(dir, &header)?;
        let mut members = Vec::new();
        for &m in &header.members {
            members.push(MemberStore::open(dir, m, &header, new)?);
        }
        let path = dir.join("store.json");
        let tmp = dir.join("store.json.tmp");
        let text = serde_json::to_string_pretty(&header).expect("header serialises");
        std::fs::write(&tmp, text + "\n").map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
        Ok(Store {
            dir: dir.to_path_buf(),
            header,
            members,
            _lock: lock,
        })
    }
}

/// How long [`lock_store`] waits for a lock whose recorded holder is gone.
const LOCK_RELEASE: std::time::Duration = std::time::Duration::from_secs(5);

pub(crate) fn lock_store(dir: &Path) -> Result<File, StoreError> {
    let path = dir.join("lock");
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_err(&path))?;
    // The lock can outlast the daemon that held it by a moment: CI saw a
    // re-attach refused right after `vsl detach` had waited for every
    // thread of the daemon to end (2026-11-28; the kernel releases some of
    // an exiting process's files in its own workers, io_uring's teardown
    // among them). While the recorded holder is not alive, wait for the
    // lock a little rather than call the store attached.
    let deadline = std::time::Instant::now() + LOCK_RELEASE;
    loop {
        // SAFETY: flock on a valid, owned descriptor.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            break;
        }
        let pid = std::fs::read_to_string(&path).unwrap_or_default();
        let pid = pid.trim();
        let gone = pid.parse::<u32>().is_ok_and(|p| !rundir::pid_alive(p));
        if !gone || std::time::Instant::now() >= deadline {
            return Err(StoreError::Busy {
                path: dir.to_path_buf(),
                pid: pid.to_string(),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    f.set_len(0).map_err(io_err(&path))?;
    writeln!(f, "{}", std::process::id()).map_err(io_err(&path))?;
    Ok(f)
}

/// The filesystem under the store must be able to hold every member's
/// NAND (a store fills up to that as the log wraps), counting what the
/// store already occupies.
fn check_space(dir: &Path, h: &StoreHeader) -> Result<(), StoreError> {
    let need = (h.data_bytes_per_member() + h.physical_slots * OOB_BYTES) * h.members.len() as u64;
    let have = free_bytes(dir)? + used_bytes(dir);
    if have < need {
        return Err(StoreError::TooSmall {
            path: dir.to_path_buf(),
            have,
            need,
        });
    }
    Ok(())
}

fn free_bytes(dir: &Path) -> Result<u64, StoreError> {
    use std::os::unix::ffi::OsStrExt;
    let c =
        std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| StoreError::Corrupt {
            path: dir.to_path_buf(),
            what: "path contains a NUL byte".into(),
        })?;
    // SAFETY: statvfs writes into the zeroed struct we own.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(io_err(dir)(std::io::Error::last_os_error()));
    }
    Ok(s.f_bavail as u64 * s.f_frsize as u64)
}

fn used_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.blocks() * 512)
                .sum()
        })
        .unwrap_or(0)
}

/// The files of one ioMemory device.
pub struct MemberStore {
    pub member: u32,
    data: File,
    oob: File,
    /// `oob` mapped shared, read and write.
    oob_map: memmap2::MmapRaw,
    /// `data` mapped shared, only read through (writes go through `data`,
    /// so a full filesystem is an error, not a SIGBUS).
    data_map: memmap2::MmapRaw,
    /// `data` opened again, read-only, for [`MemberStore::populate`] alone,
    /// advised `POSIX_FADV_RANDOM`: reads through it bring pages in one by
    /// one, as single-page folios, with no readahead (see `populate`).
    data_filler: File,
    trim: File,
    wear: File,
    /// The atomic-write journal (`member<N>.atomic`).
    journal: File,
    /// `trim` / `wear` written since the last [`MemberStore::sync`] began.
    trim_dirty: std::sync::atomic::AtomicBool,
    wear_dirty: std::sync::atomic::AtomicBool,
    journal_dirty: std::sync::atomic::AtomicBool,
    sector: u64,
    spl: u64,
    data_path: PathBuf,
}

/// Opens a store file of `len` bytes. A new store creates it; in a store
/// that exists (its header was written after every file), a missing or
/// resized file is damage and an error, never silently replaced by zeros.
fn open_sized(path: &Path, len: u64, new: bool) -> Result<File, StoreError> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(new)
        .truncate(false)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                StoreError::Corrupt {
                    path: path.to_path_buf(),
                    what: "file is missing from the store (deleted?)".into(),
                }
            } else {
                io_err(path)(e)
            }
        })?;
    let cur = f.metadata().map_err(io_err(path))?.len();
    if cur != len {
        if cur != 0 || !new {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                what: format!("file is {cur} bytes, expected {len} (damaged or truncated)"),
            });
        }
        f.set_len(len).map_err(io_err(path))?;
    }
    Ok(f)
}

impl MemberStore {
    fn open(
        dir: &Path,
        member: u32,
        h: &StoreHeader,
        new: bool,
    ) -> Result<MemberStore, StoreError> {
        let p = |ext: &str| dir.join(format!("member{member}.{ext}"));
        let data_path = p("data");
        let oob_path = p("oob");
        let oob_len = h.physical_slots * OOB_BYTES;
        let oob = open_sized(&oob_path, oob_len, new)?;
        allocate(&oob, oob_len).map_err(io_err(&oob_path))?;
        let oob_map = memmap2::MmapOptions::new()
            .len(oob_len as usize)
            .map_raw(&oob)
            .map_err(io_err(&oob_path))?;
        let data = open_sized(&data_path, h.data_bytes_per_member(), new)?;
        // Allocated up front (the space check asked for it): writes then
        // land in allocated blocks, and an erase leaves them allocated.
        allocate(&data, h.data_bytes_per_member()).map_err(io_err(&data_path))?;
        let data_map = memmap2::MmapOptions::new()
            .len(h.data_bytes_per_member() as usize)
            .map_raw_read_only(&data)
            .map_err(io_err(&data_path))?;
        let data_filler = File::open(&data_path).map_err(io_err(&data_path))?;
        // SAFETY: fadvise on a valid, owned descriptor; advice only.
        unsafe { libc::posix_fadvise(data_filler.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
        Ok(MemberStore {
            member,
            data,
            data_map,
            data_filler,
            oob,
            oob_map,
            trim: open_sized(&p("trim"), h.user_sectors * 8, new)?,
            wear: open_sized(&p("wear"), h.lebs as u64 * 4, new)?,
            // Absent in stores made before atomic writes: nothing in flight.
            journal: open_sized(&p("atomic"), JOURNAL_BYTES, true)?,
            trim_dirty: Default::default(),
            wear_dirty: Default::default(),
            journal_dirty: Default::default(),
            sector: h.sector_bytes as u64,
            spl: h.slots_per_leb as u64,
            data_path,
        })
    }

    fn err(&self, e: std::io::Error) -> StoreError {
        io_err(&self.data_path)(e)
    }

    /// Writes the data of consecutive slots from `psa`.
    pub fn write_data(&self, psa: u32, buf: &[u8]) -> Result<(), StoreError> {
        self.data
            .write_all_at(buf, psa as u64 * self.sector)
            .map_err(|e| self.err(e))
    }

    /// Reads the data of consecutive slots from `psa`.
    pub fn read_data(&self, psa: u32, buf: &mut [u8]) -> Result<(), StoreError> {
        let at = psa as usize * self.sector as usize;
        if at + buf.len() > self.data_map.len() {
            return Err(StoreError::Corrupt {
                path: self.data_path.clone(),
                what: format!("slot {psa} + {} bytes is beyond the data file", buf.len()),
            });
        }
        // SAFETY: in bounds of the live mapping (checked above), whose file
        // never shrinks while open; no one writes these slots meanwhile
        // (the engine's pins), so the bytes are stable while copied.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.data_map.as_ptr().add(at),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        Ok(())
    }

    /// Copies the data of `n` consecutive slots from `from` to `to` (a GC
    /// move), inside the kernel where it can.
    pub fn copy_data(&self, from: u32, to: u32, n: u32) -> Result<(), StoreError> {
        let fd = self.data.as_raw_fd();
        let mut src = from as i64 * self.sector as i64;
        let mut dst = to as i64 * self.sector as i64;
        let mut left = n as usize * self.sector as usize;
        while left > 0 {
            // SAFETY: valid descriptor and offsets we own; non-overlapping
            // ranges (distinct slots).
            let rc = unsafe { libc::copy_file_range(fd, &mut src, fd, &mut dst, left, 0) };
            if rc > 0 {
                left -= rc as usize;
                continue;
            }
            let e = std::io::Error::last_os_error();
            let unsupported = matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS | libc::EXDEV | libc::EINVAL | libc::EOPNOTSUPP)
            );
            if rc == 0 || unsupported {
                // Copy what is left through a buffer.
                let mut buf = vec![0u8; left];
                self.data
                    .read_exact_at(&mut buf, src as u64)
                    .map_err(|e| self.err(e))?;
                return self
                    .data
                    .write_all_at(&buf, dst as u64)
                    .map_err(|e| self.err(e));
            }
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(self.err(e));
            }
        }
        Ok(())
    }

    /// The mapped records of `n` slots from `psa`, as a raw pointer.
    ///
    /// Callers write disjoint slots concurrently: a slot's record is
    /// written only by the one I/O that owns the slot at that moment (see
    /// the engine's pinning), so no two writes to the same bytes race.
    fn oob_ptr(&self, psa: u32, n: usize) -> Result<*mut u8, StoreError> {
        let at = psa as usize * OOB_BYTES as usize;
        if at + n * OOB_BYTES as usize > self.oob_map.len() {
            return Err(StoreError::Corrupt {
                path: self.data_path.clone(),
                what: format!("slot {psa} + {n} is beyond the out-of-band file"),
            });
        }
        // SAFETY: in bounds of the live mapping (checked above).
        Ok(unsafe { self.oob_map.as_mut_ptr().add(at) })
    }

    /// Writes the out-of-band records of consecutive slots from `psa`.
    pub fn write_oob(&self, psa: u32, records: &[(u32, u64)]) -> Result<(), StoreError> {
        let dst = self.oob_ptr(psa, records.len())?;
        for (i, &(lba, seq)) in records.iter().enumerate() {
            let mut rec = [0u8; OOB_BYTES as usize];
            rec[0..4].copy_from_slice(&lba.to_le_bytes());
            rec[4..8].copy_from_slice(&check(psa + i as u32, lba).to_le_bytes());
            rec[8..16].copy_from_slice(&seq.to_le_bytes());
            // SAFETY: dst covers `records.len()` records (oob_ptr) and no
            // other thread writes these slots now (see oob_ptr).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    rec.as_ptr(),
                    dst.add(i * OOB_BYTES as usize),
                    OOB_BYTES as usize,
                )
            };
        }
        Ok(())
    }

    /// Erases erase unit `leb`: zeroes its records. Its data stays in the
    /// allocated file until the slots are programmed again; no one reads
    /// a slot without a record.
    pub fn erase(&self, leb: u32) -> Result<(), StoreError> {
        let first = leb as u64 * self.spl;
        let dst = self.oob_ptr(first as u32, self.spl as usize)?;
        // SAFETY: in bounds (oob_ptr); the unit is erased under the device
        // lock with no write in flight into it.
        unsafe { std::ptr::write_bytes(dst, 0, (self.spl * OOB_BYTES) as usize) };
        Ok(())
    }

    /// Bytes of data of one erase unit.
    pub fn unit_bytes(&self) -> u64 {
        self.spl * self.sector
    }

    /// The runs of erase unit `leb`'s data pages that are not in the page
    /// cache, as `(from, len)` bytes within the unit.
    pub fn uncached_runs(&self, leb: u32) -> Result<Vec<(u64, u64)>, StoreError> {
        const PAGE: u64 = 4096;
        let unit = self.unit_bytes();
        let base = leb as u64 * unit;
        // The unit in whole pages (a unit is a whole number of pages unless
        // sectors are 512 B and a unit holds fewer than 8 of them).
        let start = base / PAGE * PAGE;
        let end = ((base + unit).div_ceil(PAGE) * PAGE).min(self.data_map.len() as u64);
        if end <= start {
            return Ok(Vec::new());
        }
        let pages = ((end - start) / PAGE) as usize;
        let mut vec = vec![0u8; pages];
        // SAFETY: a page-aligned range inside the live mapping; mincore
        // writes one byte per page into `vec`, which has that many.
        let rc = unsafe {
            libc::mincore(
                self.data_map.as_ptr().add(start as usize) as *mut libc::c_void,
                (end - start) as usize,
                vec.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(self.err(std::io::Error::last_os_error()));
        }
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (i, &b) in vec.iter().enumerate() {
            if b & 1 != 0 {
                continue;
            }
            let from = (start + i as u64 * PAGE).max(base) - base;
            let to = (start + (i as u64 + 1) * PAGE).min(base + unit) - base;
            match runs.last_mut() {
                Some(last) if last.0 + last.1 == from => last.1 += to - from,
                _ => runs.push((from, to - from)),
            }
        }
        Ok(runs)
    }

    /// Turns bytes `from..from + len` of erase unit `leb`'s data into
    /// unwritten extents: still allocated, read as zeros with no disk I/O,
    /// their cached pages dropped. Only for a free unit whose erase (and
    /// the GC copies before it) a sync has made durable, with no writer in
    /// it ([`crate::warm`]). `Ok(false)`: the filesystem cannot (tmpfs,
    /// whose pages are never reclaimed to disk anyway).
    pub fn zero_range(&self, leb: u32, from: u64, len: u64) -> Result<bool, StoreError> {
        let at = leb as u64 * self.unit_bytes() + from;
        // SAFETY: fallocate on a valid, owned descriptor.
        let rc = unsafe {
            libc::fallocate(
                self.data.as_raw_fd(),
                libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE,
                at as libc::off_t,
                len as libc::off_t,
            )
        };
        if rc == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EOPNOTSUPP | libc::ENOSYS) => Ok(false),
            _ => Err(self.err(e)),
        }
    }

    /// Starts writeback of erase unit `leb`'s dirty data pages (returns at
    /// once; [`crate::recycle`]).
    pub fn start_writeback(&self, leb: u32) -> Result<(), StoreError> {
        let at = leb as u64 * self.unit_bytes();
        // SAFETY: sync_file_range on a valid, owned descriptor.
        let rc = unsafe {
            libc::sync_file_range(
                self.data.as_raw_fd(),
                at as libc::off64_t,
                self.unit_bytes() as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        if rc != 0 {
            return Err(self.err(std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Drops from the page cache the clean pages wholly inside `runs`
    /// (`(first slot within the unit, slots)`) of erase unit `leb`: the
    /// stale slots' pages ([`crate::recycle`]). Dirty pages and pages
    /// being written stay: only memory is given back, never data. The
    /// unit's pages are unmapped from the read mapping first (a mapped
    /// page is not dropped; reads map them back on demand).
    pub fn drop_stale(&self, leb: u32, runs: &[(u32, u32)]) -> Result<(), StoreError> {
        const PAGE: u64 = 4096;
        let unit = self.unit_bytes();
        let base = leb as u64 * unit;
        let len = self.data_map.len() as u64;
        let (m_start, m_end) = (
            base.div_ceil(PAGE) * PAGE,
            ((base + unit) / PAGE * PAGE).min(len),
        );
        if m_end > m_start {
            // SAFETY: a page-aligned range inside the live shared mapping
            // of the data file; MADV_DONTNEED on a shared file mapping only
            // unmaps (the data stays in the file and the page cache), and
            // a read copying from it maps the page back.
            let rc = unsafe {
                libc::madvise(
                    self.data_map.as_ptr().add(m_start as usize) as *mut libc::c_void,
                    (m_end - m_start) as usize,
                    libc::MADV_DONTNEED,
                )
            };
            if rc != 0 {
                return Err(self.err(std::io::Error::last_os_error()));
            }
        }
        for &(from, n) in runs {
            let a = (base + from as u64 * self.sector).div_ceil(PAGE) * PAGE;
            let b = ((base + (from + n) as u64 * self.sector) / PAGE * PAGE).min(len);
            if b <= a {
                continue;
            }
            // SAFETY: fadvise on a valid, owned descriptor; advice only.
            let rc = unsafe {
                libc::posix_fadvise(
                    self.data.as_raw_fd(),
                    a as libc::off_t,
                    (b - a) as libc::off_t,
                    libc::POSIX_FADV_DONTNEED,
                )
            };
            if rc != 0 {
                return Err(self.err(std::io::Error::from_raw_os_error(rc)));
            }
        }
        Ok(())
    }

    /// Reads bytes `from..from + len` of erase unit `leb`'s data into the
    /// page cache, through `scratch`.
    ///
    /// Read without readahead (`POSIX_FADV_RANDOM` on a descriptor of its
    /// own), the pages come in as single-page folios. Readahead (or
    /// `MADV_POPULATE_READ` on a mapping) brings large folios, and a 4 KiB
    /// write into a clean large folio of ext4 costs 6.6 µs against 1.3 µs
    /// into a single page (docs/ATTACH_PERF.md, fifth round): the writers
    /// would pay for the warm thread's help.
    pub fn populate(
        &self,
        leb: u32,
        from: u64,
        len: u64,
        scratch: &mut Vec<u8>,
    ) -> Result<(), StoreError> {
        const PAGE: u64 = 4096;
        let base = leb as u64 * self.unit_bytes();
        let start = (base + from) / PAGE * PAGE;
        let end = ((base + from + len).div_ceil(PAGE) * PAGE).min(self.data_map.len() as u64);
        if end <= start {
            return Ok(());
        }
        scratch.resize((end - start) as usize, 0);
        self.data_filler
            .read_exact_at(scratch, start)
            .map_err(|e| self.err(e))
    }

    /// Records that sectors `start..start+count` were trimmed when the
    /// device had written `floor` host sectors: older records of them are
    /// dead.
    pub fn trim(&self, start: u64, count: u64, floor: u64) -> Result<(), StoreError> {
        const CHUNK: u64 = 64 * 1024;
        let mut buf = Vec::with_capacity((CHUNK.min(count) * 8) as usize);
        let mut at = start;
        while at < start + count {
            let n = CHUNK.min(start + count - at);
            buf.clear();
            for _ in 0..n {
                buf.extend_from_slice(&floor.to_le_bytes());
            }
            self.trim
                .write_all_at(&buf, at * 8)
                .map_err(|e| self.err(e))?;
            at += n;
        }
        self.trim_dirty.store(true, SeqCst);
        Ok(())
    }

    /// Every live out-of-band record (not erased, not older than its
    /// sector's trim), the largest sequence number seen anywhere, and the
    /// erase units that hold any record.
    pub fn scan(&self, user_sectors: u64) -> Result<Scan, StoreError> {
        self.scan_except(user_sectors, None)
    }

    /// [`MemberStore::scan`], leaving out the records whose sequence
    /// number is in `discard` (an atomic write that never committed); their
    /// slots are listed in [`Scan::discarded`]. The largest sequence
    /// number still counts them.
    pub fn scan_except(
        &self,
        user_sectors: u64,
        discard: Option<std::ops::Range<u64>>,
    ) -> Result<Scan, StoreError> {
        let mut floors = vec![0u8; (user_sectors * 8) as usize];
        self.trim
            .read_exact_at(&mut floors, 0)
            .map_err(|e| self.err(e))?;
        let floor = |lba: u32| {
            let i = lba as usize * 8;
            u64::from_le_bytes(floors[i..i + 8].try_into().expect("8 bytes"))
        };
        let mut scan = Scan {
            seq_max: (0..user_sectors as u32).map(floor).max().unwrap_or(0),
            ..Scan::default()
        };
        let len = self.oob.metadata().map_err(|e| self.err(e))?.len();
        let slots = len / OOB_BYTES;
        let mut buf = vec![0u8; (OOB_BYTES * 65536) as usize];
        let mut psa = 0u64;
        while psa < slots {
            let n = (slots - psa).min(65536);
            let bytes = &mut buf[..(n * OOB_BYTES) as usize];
            self.oob
                .read_exact_at(bytes, psa * OOB_BYTES)
                .map_err(|e| self.err(e))?;
            for (i, rec) in bytes.chunks_exact(OOB_BYTES as usize).enumerate() {
                let seq = u64::from_le_bytes(rec[8..16].try_into().expect("8 bytes"));
                if seq == 0 {
                    continue;
                }
                let p = (psa + i as u64) as u32;
                let lba = u32::from_le_bytes(rec[0..4].try_into().expect("4 bytes"));
                let chk = u32::from_le_bytes(rec[4..8].try_into().expect("4 bytes"));
                if chk != check(p, lba) || lba as u64 >= user_sectors {
                    return Err(StoreError::Corrupt {
                        path: self.data_path.clone(),
                        what: format!("out-of-band record of slot {p} fails its check"),
                    });
                }
                let leb = (p as u64 / self.spl) as u32;
                if scan.lebs_with_records.last() != Some(&leb) {
                    scan.lebs_with_records.push(leb);
                }
                scan.seq_max = scan.seq_max.max(seq);
                if discard.as_ref().is_some_and(|d| d.contains(&seq)) {
                    scan.discarded.push(p);
                } else if seq > floor(lba) {
                    scan.records.push(ftl::OobRecord { psa: p, lba, seq });
                }
            }
            psa += n;
        }
        Ok(scan)
    }

    pub fn load_wear(&self, lebs: u32) -> Result<Vec<u32>, StoreError> {
        let mut buf = vec![0u8; lebs as usize * 4];
        self.wear
            .read_exact_at(&mut buf, 0)
            .map_err(|e| self.err(e))?;
        Ok(buf
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }

    pub fn save_wear(&self, counts: &[u32]) -> Result<(), StoreError> {
        let buf: Vec<u8> = counts.iter().flat_map(|c| c.to_le_bytes()).collect();
        self.wear.write_all_at(&buf, 0).map_err(|e| self.err(e))?;
        self.wear_dirty.store(true, SeqCst);
        Ok(())
    }

    /// Makes everything written so far durable against power loss of the
    /// host (a daemon crash alone loses nothing that was written).
    ///
    /// Data before the records that name it; the trim floors and wear only
    /// when written since the last sync (each sync of a file costs the
    /// disk a cache flush, even with nothing to write).
    pub fn sync(&self) -> Result<(), StoreError> {
        self.data.sync_data().map_err(|e| self.err(e))?;
        // msync(MS_SYNC) writes the mapping's dirty pages and syncs the file.
        self.oob_map.flush().map_err(|e| self.err(e))?;
        for (f, dirty) in [
            (&self.trim, &self.trim_dirty),
            (&self.wear, &self.wear_dirty),
            (&self.journal, &self.journal_dirty),
        ] {
            if dirty.swap(false, SeqCst) {
                if let Err(e) = f.sync_data() {
                    dirty.store(true, SeqCst);
                    return Err(self.err(e));
                }
            }
        }
        Ok(())
    }
}

/// The atomic write a journal holds: its written sectors take sequence
/// numbers `first..first + sectors`; its trims (`(start, count)` in
/// sectors) take effect at trim floor `floor`.
#[derive(Clone, Debug, PartialEq)]
pub struct AtomicEntry {
    pub committed: bool,
    pub first: u64,
    pub sectors: u64,
    pub floor: u64,
    pub trims: Vec<(u64, u64)>,
}

impl AtomicEntry {
    /// The sequence numbers of its written sectors.
    pub fn seqs(&self) -> std::ops::Range<u64> {
        self.first..self.first + self.sectors
    }
}

fn journal_check(body: &[u8]) -> u64 {
    body.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

impl MemberStore {
    fn journal_state(&self, state: u64) -> Result<(), StoreError> {
        // Eight bytes in one page: a kill never tears it.
        self.journal
            .write_all_at(&state.to_le_bytes(), 0)
            .map_err(|e| self.err(e))?;
        self.journal_dirty.store(true, SeqCst);
        Ok(())
    }

    /// Opens the journal for an atomic write (state *pending*): call
    /// before writing any of its records.
    pub fn atomic_begin(&self, e: &AtomicEntry) -> Result<(), StoreError> {
        if e.trims.len() > ATOMIC_TRIMS_MAX {
            return Err(StoreError::Corrupt {
                path: self.data_path.clone(),
                what: format!(
                    "an atomic write carries {} trims, the journal holds {ATOMIC_TRIMS_MAX}",
                    e.trims.len()
                ),
            });
        }
        // Idle first: the body of the last entry is about to change.
        self.journal_state(JOURNAL_IDLE)?;
        let mut body = Vec::with_capacity(JOURNAL_HEAD as usize + 16 * e.trims.len());
        for v in [e.first, e.sectors, e.floor, e.trims.len() as u64] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&[0u8; 8]);
        for &(start, count) in &e.trims {
            body.extend_from_slice(&start.to_le_bytes());
            body.extend_from_slice(&count.to_le_bytes());
        }
        let check = journal_check(&body);
        body[32..40].copy_from_slice(&check.to_le_bytes());
        self.journal
            .write_all_at(&body, 8)
            .map_err(|e| self.err(e))?;
        self.journal_state(JOURNAL_PENDING)
    }

    /// Marks the journalled atomic write committed: every record of it is
    /// written. Its trims may be written after.
    pub fn atomic_commit(&self) -> Result<(), StoreError> {
        self.journal_state(JOURNAL_COMMITTED)
    }

    /// Empties the journal, durably (recovery is done with its entry).
    pub fn atomic_clear(&self) -> Result<(), StoreError> {
        self.journal_state(JOURNAL_IDLE)?;
        self.journal.sync_data().map_err(|e| self.err(e))
    }

    /// The atomic write the journal holds, if any.
    pub fn atomic_entry(&self) -> Result<Option<AtomicEntry>, StoreError> {
        let mut head = [0u8; JOURNAL_HEAD as usize];
        self.journal
            .read_exact_at(&mut head, 0)
            .map_err(|e| self.err(e))?;
        let word = |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().expect("8"));
        let committed = match word(0) {
            JOURNAL_IDLE => return Ok(None),
            JOURNAL_PENDING => false,
            JOURNAL_COMMITTED => true,
            s => return Err(self.journal_damaged(format!("state {s}"))),
        };
        let n = word(4);
        if n > ATOMIC_TRIMS_MAX as u64 {
            return Err(self.journal_damaged(format!("{n} trims")));
        }
        let mut body = vec![0u8; 40 + 16 * n as usize];
        self.journal
            .read_exact_at(&mut body, 8)
            .map_err(|e| self.err(e))?;
        let check = word(5);
        body[32..40].fill(0);
        if journal_check(&body) != check {
            return Err(self.journal_damaged("its check fails".into()));
        }
        let trims = body[40..]
            .chunks_exact(16)
            .map(|c| {
                let v = |r: std::ops::Range<usize>| u64::from_le_bytes(c[r].try_into().expect("8"));
                (v(0..8), v(8..16))
            })
            .collect();
        Ok(Some(AtomicEntry {
            committed,
            first: word(1),
            sectors: word(2),
            floor: word(3),
            trims,
        }))
    }

    fn journal_damaged(&self, what: String) -> StoreError {
        StoreError::Corrupt {
            path: self.data_path.with_extension("atomic"),
            what: format!("atomic-write journal: {what}"),
        }
    }

    /// Raises the trim floor of sectors `start..start+count` to `floor`
    /// (re-applying a committed atomic write's trims, which a later trim
    /// may already have raised further).
    pub fn trim_at_least(&self, start: u64, count: u64, floor: u64) -> Result<(), StoreError> {
        let mut buf = vec![0u8; 8 * count.min(65536) as usize];
        let mut at = start;
        while at < start + count {
            let n = (start + count - at).min(65536);
            let b = &mut buf[..8 * n as usize];
            self.trim
                .read_exact_at(b, at * 8)
                .map_err(|e| self.err(e))?;
            for c in b.chunks_exact_mut(8) {
                let old = u64::from_le_bytes((&*c).try_into().expect("8 bytes"));
                c.copy_from_slice(&old.max(floor).to_le_bytes());
            }
            self.trim.write_all_at(b, at * 8).map_err(|e| self.err(e))?;
            at += n;
        }
        self.trim_dirty.store(true, SeqCst);
        Ok(())
    }

    /// Zeroes the records of `slots` (a discarded atomic write's), so no
    /// later scan finds them.
    pub fn clear_oob(&self, slots: &[u32]) -> Result<(), StoreError> {
        for &psa in slots {
            let dst = self.oob_ptr(psa, 1)?;
            // SAFETY: one record in bounds (oob_ptr); recovery runs before
            // any I/O is served.
            unsafe { std::ptr::write_bytes(dst, 0, OOB_BYTES as usize) };
        }
        Ok(())
    }
}

/// A device's lifetime counters, kept across attaches (a `kill -9` loses
/// at most the last second of them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Lifetime {
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub host_bytes_read: u64,
    pub host_bytes_written: u64,
    pub nand_bytes_programmed: u64,
    pub nand_bytes_read: u64,
    pub gc_runs: u64,
    pub gc_sectors_moved: u64,
    pub erases: u64,
    /// Seconds attached.
    pub attached_s: f64,
    /// Hottest internal temperature ever reached, °C (0 if never attached).
    pub temperature_max_c: f64,
    /// Most host RAM the device's map ever took, bytes.
    pub host_ram_peak_bytes: u64,
}

impl Lifetime {
    /// Field by field sum.
    pub fn plus(&self, o: &Lifetime) -> Lifetime {
        Lifetime {
            reads: self.reads + o.reads,
            writes: self.writes + o.writes,
            trims: self.trims + o.trims,
            flushes: self.flushes + o.flushes,
            host_bytes_read: self.host_bytes_read + o.host_bytes_read,
            host_bytes_written: self.host_bytes_written + o.host_bytes_written,
            nand_bytes_programmed: self.nand_bytes_programmed + o.nand_bytes_programmed,
            nand_bytes_read: self.nand_bytes_read + o.nand_bytes_read,
            gc_runs: self.gc_runs + o.gc_runs,
            gc_sectors_moved: self.gc_sectors_moved + o.gc_sectors_moved,
            erases: self.erases + o.erases,
            attached_s: self.attached_s + o.attached_s,
            temperature_max_c: self.temperature_max_c.max(o.temperature_max_c),
            host_ram_peak_bytes: self.host_ram_peak_bytes.max(o.host_ram_peak_bytes),
        }
    }
}

impl MemberStore {
    fn life_path(&self) -> PathBuf {
        self.data_path.with_extension("life.json")
    }

    /// The saved lifetime counters (zero for a new store).
    pub fn load_lifetime(&self) -> Result<Lifetime, StoreError> {
        let path = self.life_path();
        match std::fs::read_to_string(&path) {
            Ok(t) => serde_json::from_str(&t).map_err(|e| StoreError::Corrupt {
                path: path.clone(),
                what: format!("lifetime counters: {e}"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Lifetime::default()),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    /// Saves the lifetime counters (atomically: a new file renamed over).
    pub fn save_lifetime(&self, l: &Lifetime) -> Result<(), StoreError> {
        let path = self.life_path();
        let tmp = path.with_extension("tmp");
        let text = serde_json::to_string_pretty(l).expect("counters serialise");
        std::fs::write(&tmp, text + "\n").map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io_err(&path))
    }
}

/// What [`MemberStore::scan`] found.
#[derive(Default, Debug)]
pub struct Scan {
    pub records: Vec<ftl::OobRecord>,
    pub seq_max: u64,
    pub lebs_with_records: Vec<u32>,
    /// Slots whose records were left out (see [`MemberStore::scan_except`]).
    pub discarded: Vec<u32>,
}

fn check(psa: u32, lba: u32) -> u32 {
    OOB_CHECK ^ lba.rotate_left(7) ^ psa.wrapping_mul(0x9E37_79B9)
}

/// Allocates the whole file, so that writes to it (through a mapping: the
/// OOB records) can not meet a full filesystem, which would be a SIGBUS,
/// and need no block allocation. Filesystems without `fallocate` keep the
/// sparse file.
fn allocate(f: &File, len: u64) -> std::io::Result<()> {
    // SAFETY: fallocate on a valid, owned descriptor.
    let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, len as libc::off_t) };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        return Ok(());
    }
    Err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(user: u64) -> StoreHeader {
        StoreHeader {
            magic: MAGIC.into(),
            version: STORE_VERSION,
            card: CardSpec {
                device: "test".into(),
                format: "stock".into(),
                capacity: None,
                overprovision: None,
                sector_size: "4096".into(),
                member: "0".into(),
                scale: "1".into(),
                gc_policy: "greedy".into(),
                placement: None,
                streams: Vec::new(),
            },
            members: vec![0],
            sector_bytes: 4096,
            user_sectors: user,
            physical_slots: 64,
            slots_per_leb: 16,
            lebs: 4,
            geometry: "g".into(),
        }
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("openvsl-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// A lock still held after its recorded holder is gone is waited for;
    /// one held by a live holder is refused at once.
    #[test]
    fn a_lock_left_by_a_gone_holder_is_waited_for() {
        let dir = tmpdir("lockwait");
        std::fs::create_dir_all(&dir).unwrap();
        let first = lock_store(&dir).unwrap();
        // Held by a live process (this one): busy at once.
        let t = std::time::Instant::now();
        assert!(matches!(lock_store(&dir), Err(StoreError::Busy { .. })));
        assert!(t.elapsed() < LOCK_RELEASE);
        // The recorded holder gone (a reaped child's pid), the lock freed
        // a moment later: taken.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        std::fs::write(dir.join("lock"), format!("{dead}\n")).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(first);
        });
        let second = lock_store(&dir);
        release.join().unwrap();
        assert!(second.is_ok(), "{:?}", second.err());
        drop(second);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn zeroing_a_unit_reads_it_as_zeros_and_leaves_the_others_and_populate_caches_it() {
        // On the disk's filesystem (/var/tmp), not tmpfs, which cannot
        // zero a range.
        let dir =
            PathBuf::from("/var/tmp").join(format!("openvsl-store-zero-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = Store::open(&dir, &header(32)).unwrap();
        let m = &s.members[0];
        assert_eq!(m.unit_bytes(), 16 * 4096);
        m.write_data(0, &[1u8; 64 * 4096]).unwrap();
        let supported = m.zero_range(2, 0, m.unit_bytes()).unwrap();
        assert!(supported, "ext4 under /var/tmp zeroes ranges");
        // Written pages are cached.
        assert_eq!(m.uncached_runs(1).unwrap(), vec![]);
        m.populate(2, 0, m.unit_bytes(), &mut Vec::new()).unwrap();
        assert_eq!(
            m.uncached_runs(2).unwrap(),
            vec![],
            "populate left pages out"
        );
        let mut buf = vec![9u8; 16 * 4096];
        m.read_data(32, &mut buf).unwrap();
        assert!(
            buf.iter().all(|&b| b == 0),
            "the zeroed unit reads back data"
        );
        for leb in [1u32, 3] {
            m.read_data(leb * 16, &mut buf).unwrap();
            assert!(buf.iter().all(|&b| b == 1), "unit {leb} lost its data");
        }
        // Still allocated: the file's blocks cover it.
        let meta = std::fs::metadata(dir.join("member0.data")).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert!(meta.blocks() * 512 >= 64 * 4096, "zeroing freed blocks");
        drop(s);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn records_round_trip_and_trim_and_erase_hide_them() {
        let dir = tmpdir("rt");
        let s = Store::open(&dir, &header(32)).unwrap();
        let m = &s.members[0];
        m.write_data(3, &[7u8; 8192]).unwrap();
        m.write_oob(3, &[(5, 10), (6, 11)]).unwrap();
        m.write_oob(20, &[(7, 12)]).unwrap();
        let scan = m.scan(32).unwrap();
        assert_eq!(scan.records.len(), 3);
        assert_eq!(scan.seq_max, 12);
        assert_eq!(scan.lebs_with_records, vec![0, 1]);
        m.trim(5, 1, 10).unwrap();
        m.erase(1).unwrap();
        let scan = m.scan(32).unwrap();
        assert_eq!(
            scan.records,
            vec![ftl::OobRecord {
                psa: 4,
                lba: 6,
                seq: 11
            }]
        );
        let mut buf = [0u8; 4096];
        m.read_data(4, &mut buf).unwrap();
        assert_eq!(buf, [7u8; 4096]);
        drop(s);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn second_open_is_busy_and_other_geometry_is_refused() {
        let dir = tmpdir("busy");
        let s = Store::open(&dir, &header(32)).unwrap();
        let e = Store::open(&dir, &header(32)).err().unwrap();
        assert!(matches!(e, StoreError::Busy { .. }), "{e}");
        drop(s);
        let e = Store::open(&dir, &header(40)).err().unwrap();
        assert!(e.to_string().contains("formatted capacity"), "{e}");
        let mut old = header(32);
        old.version = 99;
        std::fs::write(dir.join("store.json"), serde_json::to_string(&old).unwrap()).unwrap();
        let e = Store::open(&dir, &header(32)).err().unwrap();
        assert!(matches!(e, StoreError::Version { found: 99, .. }), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_truncated_or_missing_file_of_an_existing_store_is_refused() {
        let dir = tmpdir("damaged");
        drop(Store::open(&dir, &header(32)).unwrap());
        std::fs::File::create(dir.join("member0.data")).unwrap();
        let e = Store::open(&dir, &header(32)).err().unwrap();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("member0.data"), "{e}");
        std::fs::remove_file(dir.join("member0.data")).unwrap();
        let e = Store::open(&dir, &header(32)).err().unwrap();
        assert!(e.to_string().contains("missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn store_larger_than_its_filesystem_is_refused() {
        let dir = tmpdir("small");
        let mut h = header(32);
        h.physical_slots = 1 << 40;
        let e = Store::open(&dir, &h).err().unwrap();
        assert!(matches!(e, StoreError::TooSmall { .. }), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
