//! Power-cut campaigns on small cards: recovery from checkpoints plus OOB
//! scans loses no acknowledged write, brings back no trimmed data and
//! never half-applies an atomic write; and the checker catches each
//! deliberately broken mechanism.

use ftl::fuzzing::scale_units;
use ftl::protect::{recovery_after_fill, run_campaign, CampaignConfig, Fault, ProtectConfig};
use ftl::{FtlConfig, FtlError, GcMode, GcPolicy, Vsl};
use nand::{CellTiming, Geometry, ReadPolicy};
use sim::Nanos;

/// A small multi-bank card: 4 data channels + 1 parity, 2 banks, 1 plane,
/// 24 erase units of 16 pages: write units of 4 sectors, 128 per unit.
fn small(sector: u32, mode: GcMode) -> FtlConfig {
    let geometry = Geometry {
        channels: 5,
        parity_channels: 1,
        banks: 2,
        planes: 1,
        blocks_per_plane: 24,
        pages_per_block: 16,
        page_bytes: 4096,
    };
    let mut cfg = FtlConfig {
        geometry,
        timing: CellTiming::MLC_2009,
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
        gc_catchup_after_ns: ftl::IDLE_AFTER.0,
        gc_yield_ns: 0,
        gc_idle_fraction: 0.0,
        gc_pace_progress: false,
        gc_read_charge: 0.0,
        read_policy: ReadPolicy::FIFO,
        erase_batch: 1,
        gc_stall_lebs: 1,
        buffer_bytes: 4 * geometry.write_unit_bytes(),
        wear_level_spread: 8,
        track_sequence: true,
    };
    cfg.user_sectors = (cfg.max_user_sectors() as f64 * 0.8) as u64;
    cfg
}

fn campaign(cfg: FtlConfig, cuts: u64, seed: u64, fault: Fault) -> ftl::protect::CampaignReport {
    let mut c = CampaignConfig::new(cfg, cuts, seed);
    c.protect.fault = fault;
    c.max_calls = 60;
    run_campaign(&c, |_| {}).unwrap_or_else(|e| panic!("seed {seed}: {e}"))
}

#[test]
fn campaigns_lose_nothing() {
    for (i, (sector, mode)) in [
        (4096, GcMode::Paced),
        (4096, GcMode::Legacy),
        (512, GcMode::Paced),
    ]
    .into_iter()
    .enumerate()
    {
        let seed = 0x11a0 + i as u64;
        let r = campaign(small(sector, mode), 400, seed, Fault::None);
        assert_eq!(r.cuts, 400);
        assert_eq!(
            r.failures(),
            0,
            "seed {seed} ({sector} B, {mode:?}): {:?}",
            r.first_failure
        );
        assert!(r.sectors_checked > 0 && r.writes_acked > 1000, "{r:?}");
        assert!(r.cuts_in_atomic > 10, "cuts inside atomic writes: {r:?}");
        assert!(r.torn_checkpoints > 5, "torn checkpoints: {r:?}");
        assert!(r.recovery.min_ns > 0 && r.recovery.max_ns >= r.recovery.min_ns);
    }
}

#[test]
fn campaigns_on_a_scaled_card_that_parks_units_lose_nothing() {
    // Each full-size unit as 2 small ones: paced GC collects groups of 2
    // and, its groomer too slow to keep up (a stall, then a yield), parks
    // free units its pool does not use; a power cut finds parked units
    // empty and recovery puts them back in service. Long stretches between
    // cuts, so the pool's average (over a pass of the card) settles.
    let mut cfg = small(4096, GcMode::Paced);
    scale_units(&mut cfg, 2);
    cfg.gc_share = 0.05;
    cfg.gc_yield_ns = 2_000_000;
    cfg.gc_runway_lebs = 0.2;
    cfg.user_sectors = (cfg.max_user_sectors() as f64 * 0.8) as u64;
    let seed = 0x11b0;
    let mut c = CampaignConfig::new(cfg, 40, seed);
    c.max_calls = 4000;
    let r = run_campaign(&c, |_| {}).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert_eq!(r.failures(), 0, "seed {seed}: {:?}", r.first_failure);
    assert!(r.sectors_checked > 0 && r.writes_acked > 10_000, "{r:?}");
}

#[test]
fn campaigns_without_periodic_checkpoints_lose_nothing() {
    // Long scan windows: GC erases units opened since the checkpoint.
    for (i, mode) in [GcMode::Paced, GcMode::Legacy].into_iter().enumerate() {
        let seed = 0x11b0 + i as u64;
        let mut c = CampaignConfig::new(small(4096, mode), 300, seed);
        c.protect.checkpoint_lebs = 0;
        c.max_calls = 60;
        let r = run_campaign(&c, |_| {}).unwrap();
        assert_eq!(
            r.failures(),
            0,
            "seed {seed} ({mode:?}): {:?}",
            r.first_failure
        );
        assert!(r.avg_lebs_scanned > 2.0, "{r:?}");
    }
}

#[test]
fn campaign_is_deterministic() {
    let a = campaign(small(4096, GcMode::Paced), 50, 7, Fault::None);
    let b = campaign(small(4096, GcMode::Paced), 50, 7, Fault::None);
    assert_eq!(a, b);
    let c = campaign(small(4096, GcMode::Paced), 50, 8, Fault::None);
    assert_ne!(a.writes_acked, c.writes_acked);
}

#[test]
fn checker_catches_a_buffer_that_is_not_drained() {
    let r = campaign(small(4096, GcMode::Paced), 100, 3, Fault::SkipDrain);
    assert!(r.lost > 0, "{r:?}");
    assert!(r.first_failure.is_some());
}

#[test]
fn checker_catches_a_recovery_that_does_not_scan() {
    let r = campaign(small(4096, GcMode::Paced), 100, 4, Fault::SkipScan);
    assert!(r.lost > 0, "{r:?}");
}

#[test]
fn checker_catches_incomplete_atomic_groups_kept() {
    let r = campaign(
        small(4096, GcMode::Paced),
        400,
        5,
        Fault::KeepIncompleteGroups,
    );
    assert!(r.torn_atomic > 0, "{r:?}");
}

#[test]
fn checkpoints_shorten_recovery() {
    let cfg = small(4096, GcMode::Paced);
    let with =
        recovery_after_fill(&cfg, ProtectConfig::for_ftl(&cfg).checkpoint_lebs, 3.0, 1).unwrap();
    let without = recovery_after_fill(&cfg, 0, 3.0, 1).unwrap();
    assert!(
        with.lebs_scanned < without.lebs_scanned,
        "{with:?} {without:?}"
    );
    assert!(
        with.total_ns * 2 < without.total_ns,
        "with checkpoints {with:?}, without {without:?}"
    );
}

#[test]
fn atomic_write_rejects_bad_vectors() {
    let mut vsl = Vsl::new(small(4096, GcMode::Paced)).unwrap();
    let max = vsl.max_atomic_sectors();
    let e = vsl
        .atomic_write(Nanos::ZERO, &[(0, 8), (4, 8)], &[])
        .unwrap_err();
    assert!(matches!(e, FtlError::Atomic(_)), "{e}");
    let e = vsl
        .atomic_write(Nanos::ZERO, &[(0, 8)], &[(7, 1)])
        .unwrap_err();
    assert!(matches!(e, FtlError::Atomic(_)), "{e}");
    let e = vsl
        .atomic_write(Nanos::ZERO, &[(0, max + 1)], &[])
        .unwrap_err();
    assert!(matches!(e, FtlError::Atomic(_)), "{e}");
    let e = vsl.atomic_write(Nanos::ZERO, &[], &[]).unwrap_err();
    assert!(matches!(e, FtlError::Atomic(_)), "{e}");
    let cap = vsl.user_sectors();
    let e = vsl.atomic_write(Nanos::ZERO, &[(cap, 1)], &[]).unwrap_err();
    assert!(matches!(e, FtlError::OutOfRange { .. }), "{e}");
    // A good one writes and trims.
    vsl.write(Nanos::ZERO, 100, 4).unwrap();
    vsl.atomic_write(Nanos::ZERO, &[(0, 8), (20, 3)], &[(100, 2)])
        .unwrap();
    assert!(vsl.lookup(0).is_some() && vsl.lookup(22).is_some());
    assert!(vsl.lookup(100).is_none() && vsl.lookup(102).is_some());
    vsl.check_consistency();
}

/// A longer soak: `SOAK_CUTS=100000 cargo test --release -p ftl --test
/// powercut soak -- --ignored`.
#[test]
#[ignore]
fn soak() {
    let cuts = std::env::var("SOAK_CUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    for (i, (sector, mode)) in [
        (4096, GcMode::Paced),
        (4096, GcMode::Legacy),
        (512, GcMode::Paced),
        (512, GcMode::Legacy),
    ]
    .into_iter()
    .enumerate()
    {
        let seed = 0x50a0 + i as u64;
        let r = campaign(small(sector, mode), cuts, seed, Fault::None);
        assert_eq!(r.failures(), 0, "seed {seed}: {:?}", r.first_failure);
    }
}
