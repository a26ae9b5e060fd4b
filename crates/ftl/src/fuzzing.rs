//! Fuzz targets over the FTL, shared by the cargo-fuzz targets (`fuzz/`)
//! and the stable-Rust tests (`tests/fuzz_ops.rs`): each takes arbitrary
//! bytes and panics only when the FTL disagrees with its reference model.

use crate::protect::{run_campaign, CampaignConfig, Fault, ProtectConfig};
use crate::{FtlConfig, FtlError, GcMode, GcPolicy, Vsl};
use nand::{CellTiming, Geometry, ReadPolicy};
use sim::Nanos;

/// A small card: 2 data channels + 1 parity, 2 banks, 16 erase units of
/// 8 pages, `sector` bytes per sector.
pub fn small_card(sector: u32, mode: GcMode) -> FtlConfig {
    let geometry = Geometry {
        channels: 3,
        parity_channels: 1,
        banks: 2,
        planes: 1,
        blocks_per_plane: 16,
        pages_per_block: 8,
        page_bytes: 4096,
    };
    let mut cfg = FtlConfig {
        geometry,
        timing: CellTiming::SLC_2009,
        sector_bytes: sector,
        user_sectors: 1,
        reserved_lebs: 1,
        gc_policy: GcPolicy::Greedy,
        gc_seed: 1,
        gc_mode: mode,
        gc_reserve_lebs: 2,
        gc_background_lebs: 4,
        gc_share: 0.5,
        gc_runway_lebs: 0.0,
        gc_stall_quantum_lebs: 0.0,
        gc_catchup_lebs: 0.0,
        gc_catchup_moves_lebs: 0.0,
        gc_read_ahead_units: 0,
        gc_catchup_after_ns: crate::vsl::IDLE_AFTER.0,
        gc_yield_ns: 0,
        gc_idle_fraction: 0.0,
        gc_pace_progress: false,
        gc_read_charge: 0.0,
        read_policy: ReadPolicy::FIFO,
        erase_batch: 1,
        gc_stall_lebs: 1,
        buffer_bytes: 4 * geometry.write_unit_bytes(),
        wear_level_spread: 4,
        track_sequence: true,
    };
    cfg.user_sectors = cfg.max_user_sectors() * 3 / 4;
    cfg
}

/// `cfg` as a card whose erase units are shrunk `k`-fold would have it:
/// GC groups and cohorts of `k` units, erases charged once per group, the
/// reserve and high watermark of 2 and 4 full-size units (docs/MODEL.md
/// "Scaling"). Sets nothing else.
pub fn scale_units(cfg: &mut FtlConfig, k: u32) {
    cfg.gc_stall_lebs = k;
    cfg.erase_batch = k;
    cfg.gc_reserve_lebs = 2 * k;
    cfg.gc_background_lebs = 4 * k;
}

/// The next of a fixed LCG's random LBAs below `n`, advancing the state
/// `x` (the overwrites of [`fill_and_overwrite`] and the tests like it).
pub fn next_lba(x: &mut u64, n: u64) -> u64 {
    *x = x
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*x >> 33) % n
}

/// Writes sectors `0..n` of `v` once, then `passes × n` single-sector
/// overwrites at random (a fixed LCG from `seed`), each issued when the
/// last completed. Returns when the last one completed and the longest
/// overwrite's latency.
pub fn fill_and_overwrite(v: &mut Vsl, n: u64, passes: u64, seed: u64) -> (Nanos, Nanos) {
    let mut t = Nanos::ZERO;
    for lba in 0..n {
        t = v.write(t, lba, 1).unwrap();
    }
    let mut x = seed;
    let mut peak = Nanos::ZERO;
    for _ in 0..passes * n {
        let done = v.write(t, next_lba(&mut x, n), 1).unwrap();
        peak = peak.max(done - t);
        t = done;
    }
    (t, peak)
}

struct Bytes<'a>(&'a [u8], usize);

impl Bytes<'_> {
    fn next(&mut self) -> Option<u8> {
        let b = self.0.get(self.1).copied();
        self.1 += 1;
        b
    }
    fn u16(&mut self) -> Option<u64> {
        Some(u16::from_le_bytes([self.next()?, self.next()?]) as u64)
    }
}

/// Decodes `data` into writes, trims, atomic writes and reads on a small
/// card and checks after every call that each sector reads back the
/// sequence number of its latest write (or nothing after a trim), that
/// bad calls fail cleanly, and that the map stays consistent.
pub fn ftl_ops(data: &[u8]) {
    let mut b = Bytes(data, 0);
    let Some(mode) = b.next() else { return };
    let sector = if mode & 1 == 0 { 4096 } else { 512 };
    let gc = if mode & 2 == 0 {
        GcMode::Paced
    } else {
        GcMode::Legacy
    };
    let mut vsl = Vsl::new(small_card(sector, gc)).expect("valid config");
    let user = vsl.user_sectors();
    let mut reference = vec![0u64; user as usize];
    let mut now = Nanos::ZERO;
    // Ranges may run past the end: those calls must fail and change nothing.
    let range = |b: &mut Bytes| -> Option<(u64, u64)> {
        let start = b.u16()? % (user + 4);
        let count = b.next()? as u64 % 64;
        Some((start, count))
    };
    let valid = |(s, c): (u64, u64)| c > 0 && s < user && c <= user - s;
    while let Some(op) = b.next() {
        match op % 4 {
            0 => {
                let Some(r) = range(&mut b) else { break };
                let base = vsl.stats().host_sectors_written;
                match vsl.write(now, r.0, r.1) {
                    Ok(t) => {
                        assert!(valid(r), "write {r:?} accepted");
                        now = t;
                        for k in 0..r.1 {
                            reference[(r.0 + k) as usize] = base + k + 1;
                        }
                    }
                    Err(e) => assert!(!valid(r), "write {r:?} refused: {e}"),
                }
            }
            1 => {
                let Some(r) = range(&mut b) else { break };
                match vsl.trim(r.0, r.1) {
                    Ok(()) => {
                        assert!(valid(r));
                        reference[r.0 as usize..(r.0 + r.1) as usize].fill(0);
                    }
                    Err(_) => assert!(!valid(r)),
                }
            }
            2 => {
                let Some(n) = b.next() else { break };
                let mut writes = Vec::new();
                for _ in 0..n % 4 {
                    let Some(r) = range(&mut b) else { break };
                    writes.push(r);
                }
                let trims = match range(&mut b) {
                    Some(r) if n & 0x10 != 0 => vec![r],
                    _ => vec![],
                };
                let base = vsl.stats().host_sectors_written;
                let before = vsl.stats();
                match vsl.atomic_write(now, &writes, &trims) {
                    Ok(t) => {
                        now = t;
                        let mut seq = base;
                        for &(s, c) in &writes {
                            assert!(valid((s, c)));
                            for l in s..s + c {
                                seq += 1;
                                reference[l as usize] = seq;
                            }
                        }
                        for &(s, c) in &trims {
                            reference[s as usize..(s + c) as usize].fill(0);
                        }
                    }
                    Err(FtlError::OutOfRange { .. } | FtlError::Atomic(_)) => {
                        assert_eq!(
                            vsl.stats(),
                            before,
                            "a refused atomic write changed the device"
                        );
                    }
                    Err(e) => panic!("atomic write: unexpected error {e}"),
                }
            }
            _ => {
                let Some(r) = range(&mut b) else { break };
                match vsl.read(now, r.0, r.1) {
                    Ok(t) => assert!(valid(r) && t >= now),
                    Err(_) => assert!(!valid(r)),
                }
            }
        }
        for (lba, &want) in reference.iter().enumerate() {
            let got = vsl.read_sequence(lba as u64).unwrap_or(0);
            assert_eq!(got, want, "sector {lba}");
        }
    }
    vsl.check_consistency();
}

/// Decodes `data` into a power-cut campaign's settings (seed, sector size,
/// GC mode, checkpoint interval, calls between cuts) and runs a short
/// campaign: it must lose nothing.
pub fn power_cuts(data: &[u8]) {
    let mut b = Bytes(data, 0);
    let mut seed = 0u64;
    for _ in 0..8 {
        seed = seed << 8 | b.next().unwrap_or(0) as u64;
    }
    let flags = b.next().unwrap_or(0);
    let sector = if flags & 1 == 0 { 4096 } else { 512 };
    let gc = if flags & 2 == 0 {
        GcMode::Paced
    } else {
        GcMode::Legacy
    };
    let ftl = small_card(sector, gc);
    let mut c = CampaignConfig::new(ftl, 8, seed);
    c.protect = ProtectConfig {
        checkpoint_lebs: b.next().unwrap_or(1) as u32 % 6,
        fault: Fault::None,
    };
    c.max_calls = 1 + b.next().unwrap_or(30) as u32 % 64;
    let r = run_campaign(&c, |_| {}).expect("campaign runs");
    assert_eq!(r.failures(), 0, "{:?} (seed {seed})", r.first_failure);
}
