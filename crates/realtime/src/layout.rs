//! Laying a target out with data before it is read, as fio does, and
//! finding out whether it was.
//!
//! - [`Written`]: how much of a target holds written data — for a file from
//!   its extents (FIEMAP; `SEEK_DATA` where the filesystem has no FIEMAP),
//!   for a block device from a sample read (blocks reading as zeros have
//!   likely never been written since a discard).
//! - [`FillPattern`]: what a layout writes (random, zeros, or compressible
//!   to a share, as fio's `buffer_compress_percentage`).
//! - [`LayoutMode`] and [`RealTarget::prepare`]: before a run that reads, a
//!   file target that is not all written is written once, sequentially, in
//!   1 MiB I/Os ([`RealTarget::fill`]), with progress; [`Prepared`] says
//!   what was found and done.
//!
//! Why: a preallocated file is all unwritten extents, and the kernel
//! answers reads of them with zeros without touching the device — 1.5 M
//! "IOPS" from a virtual disk here (issue 33). fio writes a new file before
//! a read job ("Laying out IO file"); the lab now does the same.

pub use crate::buffer::FillPattern;
use crate::buffer::{IoBuffers, IoMem};
use crate::{RealTarget, RealtimeError, Target};
use serde::Serialize;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;

/// Whether to lay a file target out before a run that reads.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutMode {
    /// Write the parts of the file not yet written, when the run reads.
    #[default]
    Auto,
    /// Never write before the run (the result is then marked not measured
    /// on the device if reads land on unwritten space).
    Skip,
}

impl LayoutMode {
    pub fn parse(s: &str) -> Result<LayoutMode, String> {
        match s {
            "auto" => Ok(LayoutMode::Auto),
            "skip" => Ok(LayoutMode::Skip),
            _ => Err(format!("'{s}' (expected auto or skip)")),
        }
    }
}

/// How much of a target holds written data.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Written {
    /// From the file's extent map (FIEMAP, or SEEK_DATA / SEEK_HOLE).
    Extents {
        checked_bytes: u64,
        written_bytes: u64,
        /// Allocated but never written (FIEMAP_EXTENT_UNWRITTEN).
        unwritten_bytes: u64,
        hole_bytes: u64,
    },
    /// A block device: `samples` blocks read across it, `zero_samples` of
    /// them all zeros.
    Sampled {
        samples: u32,
        zero_samples: u32,
    },
    Unknown {
        reason: String,
    },
}

impl Written {
    /// The share of the target that reads would find unwritten (0 to 1),
    /// or `None` when unknown.
    pub fn unwritten_share(&self) -> Option<f64> {
        match self {
            Written::Extents {
                checked_bytes,
                written_bytes,
                ..
            } => Some(1.0 - *written_bytes as f64 / (*checked_bytes).max(1) as f64),
            Written::Sampled {
                samples,
                zero_samples,
            } => Some(*zero_samples as f64 / (*samples).max(1) as f64),
            Written::Unknown { .. } => None,
        }
    }

    /// One line for the user.
    pub fn words(&self) -> String {
        match self {
            Written::Extents {
                checked_bytes,
                written_bytes,
                unwritten_bytes,
                hole_bytes,
            } => format!(
                "{:.1} % of {} written, {} unwritten extents, {} holes",
                *written_bytes as f64 / (*checked_bytes).max(1) as f64 * 100.0,
                gib(*checked_bytes),
                gib(*unwritten_bytes),
                gib(*hole_bytes)
            ),
            Written::Sampled {
                samples,
                zero_samples,
            } => format!(
                "{zero_samples} of {samples} blocks sampled across the device read as zeros{}",
                if *zero_samples * 2 > *samples {
                    " (never written since a discard, or zero-filled: reads may not reach the media)"
                } else {
                    ""
                }
            ),
            Written::Unknown { reason } => format!("not known ({reason})"),
        }
    }
}

fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
}

// <linux/fiemap.h>
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B; // _IOWR('f', 11, struct fiemap)
const FIEMAP_FLAG_SYNC: u32 = 0x1;
const FIEMAP_EXTENT_LAST: u32 = 0x1;
const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;
const FIEMAP_BATCH: usize = 256;

#[repr(C)]
#[derive(Copy, Clone, Default)]
struct FiemapExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

#[repr(C)]
struct Fiemap {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extents: [FiemapExtent; FIEMAP_BATCH],
}

/// Extent totals over `[0, len)`.
#[derive(Default)]
struct Tally {
    written: u64,
    unwritten: u64,
}

impl Tally {
    /// Counts the part of `[logical, logical + length)` inside `[0, len)`.
    fn add(&mut self, logical: u64, length: u64, unwritten: bool, len: u64) {
        let end = logical.saturating_add(length).min(len);
        let n = end.saturating_sub(logical);
        if unwritten {
            self.unwritten += n;
        } else {
            self.written += n;
        }
    }

    fn into_written(self, len: u64) -> Written {
        Written::Extents {
            checked_bytes: len,
            written_bytes: self.written,
            unwritten_bytes: self.unwritten,
            hole_bytes: len.saturating_sub(self.written + self.unwritten),
        }
    }
}

/// The file's extents over `[0, len)` by FIEMAP; `Err` with the errno
/// when the filesystem has none.
fn fiemap(file: &File, len: u64) -> std::io::Result<Written> {
    let mut t = Tally::default();
    let mut pos = 0u64;
    // Each call maps at least one extent past `pos` or ends the loop;
    // a file has at most len / 4 KiB extents.
    for _ in 0..=(len / 4096 / FIEMAP_BATCH as u64 + 1) {
        if pos >= len {
            break;
        }
        let mut m = Fiemap {
            start: pos,
            length: len - pos,
            flags: FIEMAP_FLAG_SYNC,
            mapped_extents: 0,
            extent_count: FIEMAP_BATCH as u32,
            reserved: 0,
            extents: [FiemapExtent::default(); FIEMAP_BATCH],
        };
        // SAFETY: FS_IOC_FIEMAP reads the header and writes at most
        // extent_count extents into the array that follows it.
        if unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP, &mut m) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = (m.mapped_extents as usize).min(FIEMAP_BATCH);
        if n == 0 {
            break;
        }
        for e in &m.extents[..n] {
            t.add(
                e.logical,
                e.length,
                e.flags & FIEMAP_EXTENT_UNWRITTEN != 0,
                len,
            );
        }
        let last = m.extents[n - 1];
        if last.flags & FIEMAP_EXTENT_LAST != 0 {
            break;
        }
        pos = last.logical + last.length;
    }
    Ok(t.into_written(len))
}

/// The data ranges over `[0, len)` by SEEK_DATA / SEEK_HOLE (tmpfs and
/// others without FIEMAP; there an allocated, unwritten range is a hole).
fn seek_data(file: &File, len: u64) -> std::io::Result<Written> {
    let fd = file.as_raw_fd();
    let mut t = Tally::default();
    let mut pos = 0i64;
    let end = i64::try_from(len).unwrap_or(i64::MAX);
    while pos < end {
        // SAFETY: lseek on an owned descriptor.
        let data = unsafe { libc::lseek(fd, pos, libc::SEEK_DATA) };
        if data < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENXIO) {
                break; // no data after pos
            }
            return Err(e);
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
        if hole < 0 {
            return Err(std::io::Error::last_os_error());
        }
        t.add(data as u64, (hole - data) as u64, false, len);
        if hole <= pos {
            break;
        }
        pos = hole;
    }
    Ok(t.into_written(len))
}

/// How much of a file's first `len` bytes is written.
pub(crate) fn file_written(file: &File, len: u64) -> Written {
    match fiemap(file, len) {
        Ok(w) => w,
        Err(_) => seek_data(file, len).unwrap_or_else(|e| Written::Unknown {
            reason: format!("neither FIEMAP nor SEEK_DATA: {e}"),
        }),
    }
}

/// Blocks sampled across a device.
const DEVICE_SAMPLES: u64 = 64;

/// Reads [`DEVICE_SAMPLES`] sector-sized blocks spread across the device
/// and counts those that are all zeros.
pub(crate) fn device_written(rt: &RealTarget) -> Written {
    let sector = rt.sector_bytes() as u64;
    let sectors = rt.capacity_bytes() / sector;
    let samples = DEVICE_SAMPLES.min(sectors);
    let mut buf = match IoBuffers::new(1, sector as usize, rt.mem_align_bytes(), IoMem::Pages) {
        Ok(b) => b,
        Err(e) => {
            return Written::Unknown {
                reason: format!("no buffer for the sample reads: {e}"),
            }
        }
    };
    let mut zeros = 0u32;
    for i in 0..samples {
        // The middle of each of `samples` equal stretches.
        let off = (sectors * (2 * i + 1) / (2 * samples)) * sector;
        match rt.file.read_at(buf.slot_mut(0), off) {
            Ok(n) if n as u64 == sector => {}
            Ok(n) => {
                return Written::Unknown {
                    reason: format!("short sample read at {off}: {n} bytes"),
                }
            }
            Err(e) => {
                return Written::Unknown {
                    reason: format!("sample read at {off}: {e}"),
                }
            }
        }
        zeros += buf.slot(0).iter().all(|&b| b == 0) as u32;
    }
    Written::Sampled {
        samples: samples as u32,
        zero_samples: zeros,
    }
}

/// What [`RealTarget::prepare`] found and did.
#[derive(Clone, Debug, Serialize)]
pub struct Prepared {
    pub mode: LayoutMode,
    pub pattern: FillPattern,
    /// The target before anything was written.
    pub before: Written,
    /// Bytes written by the layout (0 when none was needed or skipped).
    pub laid_out_bytes: u64,
    pub wall_s: f64,
    /// What reads will find now (after the layout, if one ran).
    pub after: Written,
    /// Lines for the user (what was done, or what was not and why).
    pub notes: Vec<String>,
}

impl Prepared {
    /// The unwritten share the run's reads may land on, for the verdict.
    pub fn unwritten_share(&self) -> Option<f64> {
        self.after.unwritten_share()
    }
}

/// Progress of a layout: (bytes written so far, bytes in all).
pub type LayoutProgress<'a> = &'a mut dyn FnMut(u64, u64);

impl RealTarget {
    /// How much of the target holds written data.
    pub fn written(&self) -> Written {
        match self.target() {
            Target::File { .. } => file_written(&self.file, self.capacity_bytes()),
            Target::Blockdev { .. } => device_written(self),
        }
    }

    /// Before a run: checks what is written and, for a file target that
    /// `reads` and is not all written, lays it out (unless `mode` is
    /// [`LayoutMode::Skip`]). A block device is never written here; a
    /// device that reads as zeros is reported in the notes.
    pub fn prepare(
        &self,
        reads: bool,
        mode: LayoutMode,
        pattern: FillPattern,
        progress: LayoutProgress,
    ) -> Result<Prepared, RealtimeError> {
        let before = self.written();
        let unwritten = before.unwritten_share().unwrap_or(0.0);
        let mut p = Prepared {
            mode,
            pattern,
            after: before.clone(),
            before,
            laid_out_bytes: 0,
            wall_s: 0.0,
            notes: Vec::new(),
        };
        let is_file = matches!(self.target(), Target::File { .. });
        if unwritten <= 0.0 || !reads {
            return Ok(p);
        }
        if !is_file || mode == LayoutMode::Skip {
            p.notes.push(format!(
                "{}: {}; reads of unwritten space do not reach the device{}",
                self.target(),
                p.before.words(),
                if is_file {
                    " (--layout skip)"
                } else {
                    " (write the device first, e.g. --precondition)"
                }
            ));
            return Ok(p);
        }
        p.notes.push(format!(
            "laid out {} before the run ({}): written once sequentially, pattern {pattern}, as fio does before a read job",
            self.target(),
            p.before.words()
        ));
        let fill = self.fill(pattern, progress)?;
        p.laid_out_bytes = fill.bytes;
        p.wall_s = fill.wall_s;
        p.after = self.written();
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DirectMode;

    #[test]
    fn fill_patterns_parse() {
        assert_eq!(FillPattern::parse("random"), Ok(FillPattern::Random));
        assert_eq!(FillPattern::parse("zeros"), Ok(FillPattern::Zeros));
        assert_eq!(
            FillPattern::parse("compress=40"),
            Ok(FillPattern::Compressible(40))
        );
        assert!(FillPattern::parse("compress=101").is_err());
        assert!(FillPattern::parse("lots")
            .unwrap_err()
            .contains("compress=PCT"));
        assert_eq!(FillPattern::Compressible(7).to_string(), "compress=7");
        assert_eq!(LayoutMode::parse("skip"), Ok(LayoutMode::Skip));
        assert!(LayoutMode::parse("never").is_err());
    }

    #[test]
    fn tally_clips_to_the_range() {
        let mut t = Tally::default();
        t.add(0, 4096, false, 10_000);
        t.add(4096, 4096, true, 10_000);
        t.add(8192, 1 << 20, false, 10_000); // runs past the end
        let w = t.into_written(10_000);
        assert_eq!(
            w,
            Written::Extents {
                checked_bytes: 10_000,
                written_bytes: 4096 + 10_000 - 8192,
                unwritten_bytes: 4096,
                hole_bytes: 0
            }
        );
        assert!((w.unwritten_share().unwrap() - 0.4096).abs() < 1e-9);
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("realtime-layout-{}-{name}", std::process::id()))
    }

    /// Issue 33: a new, preallocated file is not written; after prepare()
    /// for a read run it all is. (Where the filesystem reports neither
    /// FIEMAP nor SEEK_DATA the check says so and the test stops there.)
    #[test]
    fn issue_33_new_file_is_laid_out_before_reads() {
        let p = tmp("new");
        let t = Target::File {
            path: p.clone(),
            size_bytes: 4 << 20,
        };
        let rt = RealTarget::open(&t, DirectMode::Auto).unwrap();
        let before = rt.written();
        if let Written::Unknown { reason } = &before {
            eprintln!("SKIPPED: no extent map here: {reason}");
            std::fs::remove_file(&p).unwrap();
            return;
        }
        assert!(before.unwritten_share().unwrap() > 0.99, "{before:?}");
        // A write run needs no layout; a skipped one leaves it unwritten.
        let nop = &mut |_, _| {};
        let w = rt
            .prepare(false, LayoutMode::Auto, FillPattern::Random, nop)
            .unwrap();
        assert_eq!(w.laid_out_bytes, 0);
        let s = rt
            .prepare(true, LayoutMode::Skip, FillPattern::Random, nop)
            .unwrap();
        assert_eq!(s.laid_out_bytes, 0);
        assert!(s.notes[0].contains("--layout skip"), "{:?}", s.notes);
        let mut last = (0, 0);
        let r = rt
            .prepare(true, LayoutMode::Auto, FillPattern::Random, &mut |d, n| {
                last = (d, n)
            })
            .unwrap();
        assert_eq!(r.laid_out_bytes, rt.capacity_bytes());
        assert_eq!(last, (rt.capacity_bytes(), rt.capacity_bytes()));
        assert_eq!(r.unwritten_share(), Some(0.0), "{:?}", r.after);
        assert!(r.notes[0].contains("laid out"), "{:?}", r.notes);
        // The data is the pattern's: random, so almost no zero bytes.
        let data = std::fs::read(&p).unwrap();
        let zeros = data.iter().filter(|&&b| b == 0).count();
        assert!(zeros < data.len() / 100, "{zeros} zeros");
        // Laid out once: a second prepare writes nothing.
        let again = rt
            .prepare(true, LayoutMode::Auto, FillPattern::Random, nop)
            .unwrap();
        assert_eq!(again.laid_out_bytes, 0);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn holes_are_found_in_a_sparse_file() {
        let p = tmp("sparse");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(1 << 20).unwrap();
        f.write_at(&[1u8; 4096], 0).unwrap();
        f.sync_all().unwrap();
        match file_written(&f, 1 << 20) {
            Written::Extents {
                written_bytes,
                hole_bytes,
                ..
            } => {
                assert!((4096..1 << 19).contains(&written_bytes), "{written_bytes}");
                assert!(hole_bytes >= 1 << 19, "{hole_bytes}");
            }
            w => eprintln!("SKIPPED: no extent map here: {w:?}"),
        }
        std::fs::remove_file(&p).unwrap();
    }
}
