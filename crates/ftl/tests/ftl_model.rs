//! Model-based tests of the VSL: write amplification against the analytic
//! greedy limit, and a randomized reference-map check.

use ftl::{greedy_wa_limit, FtlConfig, GcMode, GcPolicy, ReadPolicy, Vsl};
use sim::{Nanos, Prng};

/// One bank, one plane, 256 pages of 4 KiB per erase unit: GC units of 256
/// sectors, as in the analytic model.
fn small_config(lebs: u32, spare: f64, sector: u32) -> FtlConfig {
    FtlConfig::wa_study(lebs, spare, sector, GcPolicy::Greedy)
}

/// The same card with paced GC (watermarks 2 and 4 free units) and reads
/// ahead of queued programs; `stall` units reclaimed per foreground stall.
fn paced(mut cfg: FtlConfig, stall: u32) -> FtlConfig {
    cfg.gc_mode = GcMode::Paced;
    cfg.gc_reserve_lebs = 2 * stall;
    cfg.gc_background_lebs = 4 * stall;
    cfg.gc_stall_lebs = stall;
    cfg.read_policy = ReadPolicy {
        priority: true,
        suspend_ns: None,
        hold_die: false,
        background_only: false,
        gc_reads_in_order: false,
    };
    cfg
}

/// Uniform random single-sector writes: WA over the last passes.
fn measured_wa(spare: f64, seed: u64) -> f64 {
    measured_wa_of(small_config(1024, spare, 4096), seed)
}

fn measured_wa_of(cfg: FtlConfig, seed: u64) -> f64 {
    let user = cfg.user_sectors;
    let mut vsl = Vsl::new(cfg).unwrap();
    let mut prng = Prng::from_seed(seed);
    let mut t = Nanos::ZERO;
    for lba in 0..user {
        t = vsl.write(t, lba, 1).unwrap();
    }
    // Converge, then measure.
    let passes_warm = 4 * user;
    let passes_measure = 4 * user;
    for _ in 0..passes_warm {
        t = vsl.write(t, prng.below(user), 1).unwrap();
    }
    let before = vsl.stats();
    for _ in 0..passes_measure {
        t = vsl.write(t, prng.below(user), 1).unwrap();
    }
    let after = vsl.stats();
    vsl.check_consistency();
    let host = after.host_sectors_written - before.host_sectors_written;
    let moved = after.gc_sectors_moved - before.gc_sectors_moved;
    (host + moved) as f64 / host as f64
}

#[test]
fn greedy_wa_matches_lambert_w_limit() {
    for spare in [0.07, 0.20, 0.28, 0.36, 0.50] {
        let seed = 0xA11CE + (spare * 100.0) as u64;
        let wa = measured_wa(spare, seed);
        let want = greedy_wa_limit(spare);
        let err = (wa - want).abs() / want;
        assert!(
            err < 0.05,
            "spare {spare}: measured WA {wa:.3} vs limit {want:.3} ({:.1}% off); seed {seed}",
            err * 100.0
        );
    }
}

#[test]
fn paced_greedy_wa_matches_lambert_w_limit() {
    for spare in [0.12, 0.30] {
        let seed = 0xBEEF + (spare * 100.0) as u64;
        let wa = measured_wa_of(paced(small_config(1024, spare, 4096), 1), seed);
        let want = greedy_wa_limit(spare);
        let err = (wa - want).abs() / want;
        assert!(
            err < 0.05,
            "paced, spare {spare}: measured WA {wa:.3} vs limit {want:.3}; seed {seed}"
        );
    }
}

/// Drives the FTL with writes, overwrites, trims and GC against a reference
/// map of version stamps and cross-checks after every step.
fn random_ops_against_reference(seed: u64, sector: u32, policy: GcPolicy, mode: Option<u32>) {
    let mut cfg = small_config(48, 0.25, sector);
    if let Some(stall) = mode {
        cfg = paced(cfg, stall);
    }
    cfg.gc_policy = policy;
    cfg.wear_level_spread = 4;
    cfg.track_sequence = true;
    let user = cfg.user_sectors;
    let mut vsl = Vsl::new(cfg).unwrap();
    let mut prng = Prng::from_seed(seed);
    // Reference map: the version stamp (host write sequence number) each
    // sector must read back, or None when unwritten or trimmed.
    let mut reference: Vec<Option<u64>> = vec![None; user as usize];
    let mut seq = 0u64;
    let mut t = Nanos::ZERO;
    for step in 0..60_000u32 {
        let start = prng.below(user);
        let count = 1 + prng.below(16.min(user - start));
        match prng.below(10) {
            0 => {
                vsl.trim(start, count).unwrap();
                for l in start..start + count {
                    reference[l as usize] = None;
                }
            }
            1..=2 => {
                let done = vsl.read(t, start, count).unwrap();
                assert!(done >= t, "read completes before it starts (seed {seed})");
            }
            _ => {
                t = vsl.write(t, start, count).unwrap();
                for l in start..start + count {
                    seq += 1;
                    reference[l as usize] = Some(seq);
                }
            }
        }
        for l in start..start + count {
            assert_eq!(
                vsl.read_sequence(l),
                reference[l as usize],
                "lba {l} reads the wrong version after step {step} (seed {seed})"
            );
        }
        if step % 997 == 0 {
            vsl.check_consistency();
            // a full sweep now and then catches versions damaged by GC moves
            for l in 0..user {
                assert_eq!(
                    vsl.read_sequence(l),
                    reference[l as usize],
                    "lba {l}, step {step}, seed {seed}"
                );
            }
        }
    }
    vsl.check_consistency();
    // every live sector's slot must be unique (no two lbas share a slot)
    let mut slots: Vec<u32> = (0..user).filter_map(|l| vsl.lookup(l)).collect();
    let n = slots.len();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(
        slots.len(),
        n,
        "two sectors share a physical slot (seed {seed})"
    );
    assert!(
        vsl.stats().gc_runs > 0,
        "test never exercised GC (seed {seed})"
    );
}

#[test]
fn random_ops_keep_map_consistent() {
    let base: u64 = std::env::var("VSL_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261122);
    for i in 0..8 {
        let seed = base + i;
        let policy = if i % 2 == 0 {
            GcPolicy::Greedy
        } else {
            GcPolicy::CostBenefit
        };
        let sector = if i % 4 < 2 { 4096 } else { 512 };
        // Legacy GC, then paced GC with stalls of 1 and of 2 units.
        let mode = match i {
            0..4 => None,
            4 | 5 => Some(1),
            _ => Some(2),
        };
        random_ops_against_reference(seed, sector, policy, mode);
    }
}

/// Issue 28: the policies added behind `VictimPolicy` keep the map, the
/// valid counts and the data against the reference, in both GC modes.
#[test]
fn random_ops_keep_map_consistent_with_every_victim_policy() {
    let policies = [
        GcPolicy::DChoices(1),
        GcPolicy::DChoices(4),
        GcPolicy::Fifo,
        GcPolicy::Windowed(1),
        GcPolicy::Windowed(6),
    ];
    for (i, policy) in policies.into_iter().enumerate() {
        let seed = 20261125 + i as u64;
        let sector = if i % 2 == 0 { 4096 } else { 512 };
        random_ops_against_reference(seed, sector, policy, None);
        random_ops_against_reference(seed, sector, policy, Some(1 + i as u32 % 2));
    }
}

#[test]
fn over_full_format_is_rejected() {
    let mut cfg = small_config(16, 0.1, 4096);
    cfg.user_sectors = 16 * 256;
    let err = Vsl::new(cfg).err().expect("must fail");
    assert!(err.to_string().contains("no spare"), "{err}");
}

#[test]
fn out_of_range_is_an_error_not_a_panic() {
    let cfg = small_config(16, 0.3, 4096);
    let user = cfg.user_sectors;
    let mut vsl = Vsl::new(cfg).unwrap();
    assert!(vsl.write(Nanos::ZERO, user, 1).is_err());
    assert!(vsl.read(Nanos::ZERO, user - 1, 2).is_err());
    assert!(vsl.trim(0, 0).is_err());
}

/// Issue 10: a retired erase unit is replaced by a reserved one, so the
/// log keeps its free units and the reserve shrinks by one; with no
/// reserved unit left nothing is replaced.
#[test]
fn issue_10_retired_unit_is_replaced_by_a_spare() {
    let mut cfg = small_config(48, 0.25, 4096);
    cfg.reserved_lebs = 2;
    cfg.user_sectors = cfg.user_sectors * 40 / 48;
    cfg.track_sequence = true;
    let user = cfg.user_sectors;
    let mut vsl = Vsl::new(cfg).unwrap();
    let mut prng = Prng::from_seed(10);
    let mut t = Nanos::ZERO;
    for _ in 0..20_000 {
        t = vsl.write(t, prng.below(user), 1).unwrap();
    }
    assert_eq!(vsl.reserved_lebs_left(), 2);
    let in_service = |v: &Vsl| (0..48).filter(|&l| v.in_service(l)).count();
    assert_eq!(in_service(&vsl), 46);
    let free_before = vsl.free_lebs();
    let victim = (0..46).find(|&l| vsl.is_free_leb(l)).expect("a free unit");
    let spare = vsl.replace_leb(victim).expect("a spare replaces it");
    assert_eq!(spare, 46, "the first reserved unit comes in");
    assert!(!vsl.in_service(victim));
    assert!(vsl.in_service(spare));
    assert!(vsl.is_free_leb(spare));
    assert_eq!(vsl.free_lebs(), free_before, "free units unchanged");
    assert_eq!(in_service(&vsl), 46, "usable units unchanged");
    assert_eq!(vsl.reserved_lebs_left(), 1, "reserve down by one");
    // A unit in use cannot be replaced; nothing changes.
    let closed = (0..48).find(|&l| vsl.in_service(l) && !vsl.is_free_leb(l));
    assert_eq!(vsl.replace_leb(closed.unwrap()), None);
    assert_eq!(vsl.reserved_lebs_left(), 1);
    // The spare takes writes and the map stays consistent.
    for _ in 0..20_000 {
        t = vsl.write(t, prng.below(user), 1).unwrap();
    }
    vsl.check_consistency();
    let victim = (0..48).find(|&l| l != spare && vsl.is_free_leb(l)).unwrap();
    assert_eq!(vsl.replace_leb(victim), Some(47));
    let victim = (0..48).find(|&l| vsl.is_free_leb(l)).unwrap();
    assert_eq!(vsl.replace_leb(victim), None, "no reserved unit left");
    assert!(vsl.in_service(victim));
}

/// `next_free_lebs` names the units in the order the log opens them: on a
/// fresh card exactly, and later whenever no erase came first in a write.
#[test]
fn next_free_lebs_predicts_the_units_the_log_opens() {
    use ftl::PowerEvent;
    let seed = 0x0FE4;
    for cfg in [
        small_config(64, 0.2, 4096),
        paced(small_config(64, 0.2, 4096), 1),
    ] {
        let user = cfg.user_sectors;
        let mut vsl = Vsl::new(cfg).unwrap();
        vsl.enable_power_log();
        let mut log = Vec::new();
        let mut prng = Prng::from_seed(seed);
        let mut t = Nanos::ZERO;
        let mut checked = 0;
        for i in 0..6 * user {
            let ahead = vsl.next_free_lebs(3);
            let lba = if i < user { i } else { prng.below(user) };
            t = vsl.write(t, lba, 1).unwrap();
            log.clear();
            vsl.drain_power_log(&mut log);
            let mut opened = Vec::new();
            for e in &log {
                match e {
                    PowerEvent::Opened { leb } => opened.push(*leb),
                    PowerEvent::Erased { .. } if opened.is_empty() => break,
                    _ => {}
                }
            }
            if let Some(&first) = opened.first() {
                assert_eq!(
                    first, ahead[0],
                    "seed {seed:#x}, write {i}: opened {opened:?}, predicted {ahead:?}"
                );
                if i < user {
                    assert_eq!(
                        opened[..],
                        ahead[..opened.len()],
                        "seed {seed:#x}, fill write {i}"
                    );
                }
                checked += 1;
            }
        }
        assert!(checked > 100, "only {checked} opens checked");
    }
}

/// `closed_valid` and `stale_runs` agree with the map: a closed unit's
/// stale runs are exactly its slots no sector maps to, and its valid count
/// is the rest.
#[test]
fn stale_runs_are_the_slots_no_sector_maps_to() {
    let seed = 0x5A1E;
    let cfg = small_config(64, 0.2, 4096);
    let user = cfg.user_sectors;
    let mut vsl = Vsl::new(cfg).unwrap();
    let spl = vsl.slots_per_leb();
    let mut prng = Prng::from_seed(seed);
    let mut t = Nanos::ZERO;
    let mut closed_seen = 0;
    for round in 0..4 {
        for i in 0..user {
            let lba = if round == 0 { i } else { prng.below(user) };
            t = vsl.write(t, lba, 1).unwrap();
        }
        let mut mapped = vec![false; vsl.physical_slots() as usize];
        for lba in 0..user {
            if let Some(psa) = vsl.lookup(lba) {
                mapped[psa as usize] = true;
            }
        }
        let mut runs = Vec::new();
        for leb in 0..vsl.lebs() {
            let Some(valid) = vsl.closed_valid(leb) else {
                continue;
            };
            closed_seen += 1;
            runs.clear();
            vsl.stale_runs(leb, &mut runs);
            let mut stale = vec![false; spl as usize];
            for &(from, n) in &runs {
                assert!(n > 0 && from + n <= spl, "seed {seed:#x}: run {from}+{n}");
                stale[from as usize..(from + n) as usize].fill(true);
            }
            for (i, &st) in stale.iter().enumerate() {
                let psa = (leb * spl) as usize + i;
                assert_eq!(
                    st, !mapped[psa],
                    "seed {seed:#x}, round {round}, unit {leb}, slot {i}"
                );
            }
            let stale_n: u32 = runs.iter().map(|r| r.1).sum();
            assert_eq!(valid + stale_n, spl, "seed {seed:#x}, unit {leb}");
        }
    }
    assert!(closed_seen > 100, "only {closed_seen} closed units seen");
}
