//! A database page-flush workload (InnoDB style) on one ioMemory device, in
//! virtual time: dirty 16 KiB pages are flushed in batches, either through
//! a doublewrite buffer (each batch first written sequentially to a
//! doublewrite area, then every page to its home) or with the card's
//! atomic writes (each page written once, all-or-nothing:
//! [`ftl::Vsl::atomic_write`]), which is what databases use the atomic-write
//! API for (MariaDB/Percona `innodb_use_atomic_writes` on Fusion-io).

use ftl::{FtlConfig, FtlError, Vsl};
use serde::Serialize;
use sim::{Nanos, Prng};

/// The workload's shape.
#[derive(Copy, Clone, Debug, Serialize)]
pub struct DbPagesConfig {
    /// Database page size (InnoDB: 16 KiB).
    pub page_bytes: u64,
    /// Fraction of the formatted capacity the table occupies.
    pub table_fraction: f64,
    /// Pages per flush batch (InnoDB's doublewrite buffer holds 128).
    pub batch_pages: u64,
    /// Batches flushed and measured (after the table is written once).
    pub batches: u64,
    pub seed: u64,
    /// The controller's write data path in bytes per second (the
    /// preset's `datapath_bytes_per_s().1`); 0: not modelled.
    pub controller_write_bytes_per_s: u64,
}

impl Default for DbPagesConfig {
    fn default() -> Self {
        DbPagesConfig {
            page_bytes: 16 * 1024,
            table_fraction: 0.5,
            batch_pages: 128,
            batches: 200,
            seed: 1,
            controller_write_bytes_per_s: 0,
        }
    }
}

/// How pages are made safe against torn writes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PageSafety {
    Doublewrite,
    AtomicWrite,
}

/// What one mode did over the measured batches.
#[derive(Clone, Debug, Serialize)]
pub struct DbPagesResult {
    pub mode: PageSafety,
    pub pages_flushed: u64,
    /// Bytes the host wrote (doublewrite copies included).
    pub host_bytes: u64,
    /// Bytes programmed on NAND (GC moves included).
    pub nand_bytes: u64,
    pub virtual_s: f64,
    /// Database pages made durable per virtual second.
    pub pages_per_s: f64,
    /// Database page bytes per virtual second (what the database gets).
    pub page_mb_per_s: f64,
}

/// Runs the workload in `mode` on a fresh device built from `ftl`.
pub fn run_dbpages(
    ftl: &FtlConfig,
    cfg: &DbPagesConfig,
    mode: PageSafety,
) -> Result<DbPagesResult, FtlError> {
    let mut vsl = Vsl::new(ftl.clone())?;
    let sector = ftl.sector_bytes as u64;
    let spp = cfg.page_bytes.div_ceil(sector);
    // Doublewrite area first, then the table.
    let dblwr = cfg.batch_pages * spp;
    let pages = ((ftl.user_sectors as f64 * cfg.table_fraction) as u64 / spp)
        .min((ftl.user_sectors - dblwr) / spp);
    if pages < cfg.batch_pages || spp > vsl.max_atomic_sectors() {
        return Err(FtlError::Config(format!(
            "the device is too small for {} pages of {} B",
            cfg.batch_pages, cfg.page_bytes
        )));
    }
    let home = |p: u64| dblwr + p * spp;
    let mut now = Nanos::ZERO;
    for p in 0..pages {
        now = vsl.write(now, home(p), spp)?;
    }
    // The controller DMAs each write's data, one at a time (as
    // `device::Member` does); a write completes when both are done.
    let mut ctrl = now;
    let bw = cfg.controller_write_bytes_per_s;
    let mut dma = |ready: Nanos, done: Nanos, sectors: u64| -> Nanos {
        if bw == 0 {
            return done;
        }
        ctrl = ctrl.max(ready) + Nanos::for_bytes(sectors * sector, bw);
        done.max(ctrl)
    };
    let before = vsl.stats();
    let start = now;
    let mut prng = Prng::from_seed(cfg.seed);
    let mut batch = Vec::with_capacity(cfg.batch_pages as usize);
    for _ in 0..cfg.batches {
        batch.clear();
        batch.extend((0..cfg.batch_pages).map(|_| prng.below(pages)));
        match mode {
            PageSafety::Doublewrite => {
                // The batch, sequentially, into the doublewrite area; once
                // it is durable (acknowledged), each page to its home.
                let mut off = 0;
                while off < dblwr {
                    let n = (dblwr - off).min(vsl.max_atomic_sectors() / 2).max(spp);
                    let n = n.min(dblwr - off);
                    let done = vsl.write(now, off, n)?;
                    now = dma(now, done, n);
                    off += n;
                }
                for &p in &batch {
                    let done = vsl.write(now, home(p), spp)?;
                    now = dma(now, done, spp);
                }
            }
            PageSafety::AtomicWrite => {
                for &p in &batch {
                    let done = vsl.atomic_write(now, &[(home(p), spp)], &[])?;
                    now = dma(now, done, spp);
                }
            }
        }
    }
    let s = vsl.stats();
    let host = (s.host_sectors_written - before.host_sectors_written) * sector;
    let nand = host + (s.gc_sectors_moved - before.gc_sectors_moved) * sector;
    let secs = (now - start).0 as f64 / 1e9;
    let flushed = cfg.batches * cfg.batch_pages;
    Ok(DbPagesResult {
        mode,
        pages_flushed: flushed,
        host_bytes: host,
        nand_bytes: nand,
        virtual_s: secs,
        pages_per_s: flushed as f64 / secs,
        page_mb_per_s: (flushed * cfg.page_bytes) as f64 / secs / 1e6,
    })
}
