//! Idle grooming (paced GC while the host is idle, issue 31's HIR): after a
//! pause in host I/O the groomer frees space up to its idle target; with
//! the fraction at 0, or without a pause, it does not; and the same inputs
//! give the same result.

use ftl::fuzzing::fill_and_overwrite;
use ftl::{FtlConfig, GcMode, GcPolicy, Vsl};
use nand::{CellTiming, Geometry, ReadPolicy};
use sim::Nanos;

/// 4 data channels + 1 parity, 2 banks, 64 erase units of 16 pages.
fn card(idle: f64) -> FtlConfig {
    let geometry = Geometry {
        channels: 5,
        parity_channels: 1,
        banks: 2,
        planes: 1,
        blocks_per_plane: 64,
        pages_per_block: 16,
        page_bytes: 4096,
    };
    let mut cfg = FtlConfig {
        geometry,
        timing: CellTiming::MLC_2009,
        sector_bytes: 4096,
        user_sectors: 1,
        reserved_lebs: 2,
        gc_policy: GcPolicy::Greedy,
        gc_seed: 1,
        gc_mode: GcMode::Paced,
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
        gc_idle_fraction: idle,
        gc_pace_progress: false,
        gc_read_charge: 0.0,
        read_policy: ReadPolicy::FIFO,
        erase_batch: 1,
        gc_stall_lebs: 1,
        buffer_bytes: 4 * geometry.write_unit_bytes(),
        wear_level_spread: 1_000,
        track_sequence: false,
    };
    cfg.user_sectors = (cfg.max_user_sectors() as f64 * 0.75) as u64;
    cfg
}

/// Fills the card, overwrites it twice at random (a fixed LCG) until free
/// space sits at the watermarks, then writes once more at `resume`.
/// Returns the free units before and after that last write.
fn run(idle: f64, pause: Nanos, seed: u64) -> (usize, usize, Nanos) {
    let cfg = card(idle);
    let n = cfg.user_sectors;
    let mut v = Vsl::new(cfg).unwrap();
    let (t, _) = fill_and_overwrite(&mut v, n, 2, seed);
    let before = v.free_lebs();
    let resume = v.busy_until().max(t) + pause;
    let done = v.write(resume, 0, 1).unwrap();
    v.check_consistency();
    (before, v.free_lebs(), done - resume)
}

#[test]
fn a_pause_lets_the_groomer_free_space() {
    for seed in [1u64, 2, 3] {
        let (before, after, wait) = run(0.5, Nanos(2_000_000_000), seed);
        assert!(
            after >= before + 4,
            "seed {seed}: free units {before} before the pause, {after} after (idle grooming should free several)"
        );
        // The host's write after the pause does not wait for idle work.
        assert!(
            wait < Nanos(5_000_000),
            "seed {seed}: the write after the pause waited {wait:?}"
        );
    }
}

#[test]
fn no_grooming_when_off_or_without_a_pause() {
    for seed in [1u64, 2] {
        let (before, after, _) = run(0.0, Nanos(2_000_000_000), seed);
        assert!(
            after <= before + 1,
            "seed {seed}: off, yet {before} -> {after} free units"
        );
        // A gap shorter than the idle detection delay is not idle time.
        let (before, after, _) = run(0.5, Nanos(1_000_000), seed);
        assert!(
            after <= before + 1,
            "seed {seed}: 1 ms gap, yet {before} -> {after} free units"
        );
    }
}

#[test]
fn idle_grooming_stops_at_its_target_and_is_deterministic() {
    let a = run(0.5, Nanos(60_000_000_000), 7);
    let b = run(0.5, Nanos(60_000_000_000), 7);
    assert_eq!(a, b, "seed 7: same inputs, different results");
    let full = run(1.0, Nanos(60_000_000_000), 7);
    assert!(
        full.1 > a.1,
        "seed 7: a larger idle target should free more ({} vs {})",
        full.1,
        a.1
    );
}

#[test]
fn out_of_range_fraction_is_refused() {
    let mut cfg = card(0.5);
    cfg.gc_idle_fraction = 1.5;
    let e = Vsl::new(cfg).err().expect("1.5 must be refused");
    assert!(e.to_string().contains("idle grooming fraction"), "{e}");
}
