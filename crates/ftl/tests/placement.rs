//! Placement policies (issue 28): a policy plugged in from outside the
//! `ftl` crate (the worked example of docs/ARCHITECTURE.md, "Adding a
//! placement policy"), the built-ins keeping the map consistent in both GC
//! modes under writes, trims and reads, and hot/cold separation lowering
//! write amplification under skewed traffic.

use ftl::{FtlConfig, GcMode, GcPolicy, Placement, PlacementSpec, Vsl};
use sim::{Nanos, Prng};

/// The worked example: small logical sectors (the first `split`) in one
/// stream, the rest in another, by a rule the researcher chose.
struct Halves {
    split: u32,
}

impl Placement for Halves {
    fn name(&self) -> String {
        "halves".into()
    }
    fn streams(&self) -> usize {
        2
    }
    fn host(&mut self, lba: u32, _seq: u64) -> usize {
        (lba >= self.split) as usize
    }
}

fn card(lebs: u32, spare: f64, mode: GcMode) -> FtlConfig {
    let mut cfg = FtlConfig::wa_study(lebs, spare, 4096, GcPolicy::Greedy);
    cfg.gc_mode = mode;
    if mode == GcMode::Paced {
        cfg.gc_reserve_lebs = 3;
        cfg.gc_background_lebs = 8;
    }
    cfg
}

/// 90 % of writes to the first 10 % of the sectors.
fn zoned(prng: &mut Prng, user: u64) -> u64 {
    let hot = user / 10;
    if prng.chance(0.9) {
        prng.below(hot)
    } else {
        hot + prng.below(user - hot)
    }
}

/// Steady-state WA under 90/10 zoned writes with `placement` installed.
fn wa(placement: Option<Box<dyn Placement>>, seed: u64) -> (f64, Vsl) {
    let cfg = card(256, 0.2, GcMode::Legacy);
    let user = cfg.user_sectors;
    let mut vsl = Vsl::new(cfg).unwrap();
    if let Some(p) = placement {
        vsl.set_placement(p).unwrap();
    }
    let mut prng = Prng::from_seed(seed);
    let mut t = Nanos::ZERO;
    for lba in 0..user {
        t = vsl.write(t, lba, 1).unwrap();
    }
    for _ in 0..8 * user {
        t = vsl.write(t, zoned(&mut prng, user), 1).unwrap();
    }
    let before = vsl.stats();
    for _ in 0..8 * user {
        t = vsl.write(t, zoned(&mut prng, user), 1).unwrap();
    }
    let after = vsl.stats();
    let host = after.host_sectors_written - before.host_sectors_written;
    let moved = after.gc_sectors_moved - before.gc_sectors_moved;
    vsl.check_consistency();
    ((host + moved) as f64 / host as f64, vsl)
}

#[test]
fn a_placement_from_outside_the_crate_separates_the_zones() {
    let user = card(256, 0.2, GcMode::Legacy).user_sectors as u32;
    let (single, _) = wa(None, 1);
    let (halves, vsl) = wa(Some(Box::new(Halves { split: user / 10 })), 1);
    println!("WA single {single:.3}, the hot zone as its own stream {halves:.3}");
    assert_eq!(vsl.placement_name(), "halves");
    let pools = vsl.pool_stats();
    assert_eq!(pools.len(), 2);
    // The hot pool gets more spare than its data's share: its target
    // exceeds its data by a larger fraction than the cold pool's.
    let spare = |i: usize| 1.0 - pools[i].valid_sectors as f64 / (pools[i].target_units * 256.0);
    assert!(spare(0) > spare(1), "{pools:?}");
    assert!(
        halves < 0.8 * single,
        "separating the zones: WA {halves} vs {single}"
    );
}

#[test]
fn hot_cold_learns_the_zones_without_an_oracle() {
    let (single, _) = wa(None, 2);
    let hc = PlacementSpec::HotCold
        .build(card(256, 0.2, GcMode::Legacy).user_sectors)
        .unwrap();
    let (hot_cold, vsl) = wa(Some(hc), 2);
    println!("WA single {single:.3}, hot-cold {hot_cold:.3}");
    assert_eq!(vsl.placement_name(), "hot-cold");
    assert!(
        hot_cold < 0.8 * single,
        "hot-cold WA {hot_cold} vs single {single}"
    );
}

/// Random writes, trims and reads on every built-in placement and both GC
/// modes: the map stays consistent and reads return what was written.
#[test]
fn built_ins_keep_the_map_consistent() {
    let seed = std::env::var("PLACEMENT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261125u64);
    println!("seed {seed} (PLACEMENT_SEED)");
    for mode in [GcMode::Legacy, GcMode::Paced] {
        let mut cfg = card(64, 0.25, mode);
        cfg.track_sequence = true;
        let user = cfg.user_sectors;
        let specs = [
            PlacementSpec::Single,
            PlacementSpec::HotCold,
            PlacementSpec::Streams(vec![(0, user / 8), (user / 2, user / 2 + 100)]),
        ];
        for spec in specs {
            let mut vsl = Vsl::new(cfg.clone()).unwrap();
            vsl.set_placement(spec.build(user).unwrap()).unwrap();
            let mut prng = Prng::from_seed(seed);
            let mut last = vec![None; user as usize];
            let mut seq = 0u64;
            let mut t = Nanos::ZERO;
            for _ in 0..20 * user {
                let lba = zoned(&mut prng, user);
                let n = (1 + prng.below(8)).min(user - lba);
                match prng.below(20) {
                    0 => {
                        vsl.trim(lba, n).unwrap();
                        (lba..lba + n).for_each(|l| last[l as usize] = None);
                    }
                    1 => {
                        t = vsl.read(t, lba, n).unwrap();
                    }
                    _ => {
                        t = vsl.write(t, lba, n).unwrap();
                        for l in lba..lba + n {
                            seq += 1;
                            last[l as usize] = Some(seq);
                        }
                    }
                }
            }
            vsl.check_consistency();
            for (lba, want) in last.iter().enumerate() {
                assert_eq!(
                    vsl.read_sequence(lba as u64),
                    *want,
                    "{spec} {mode:?} seed {seed}: sector {lba}"
                );
            }
        }
    }
}

#[test]
fn placement_is_refused_where_one_frontier_is_assumed() {
    let cfg = card(64, 0.25, GcMode::Legacy);
    let mut vsl = Vsl::new(cfg.clone()).unwrap();
    vsl.enable_reliability(ftl::ReliabilityConfig::default())
        .unwrap();
    let e = vsl
        .set_placement(PlacementSpec::HotCold.build(cfg.user_sectors).unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("Flashback"), "{e}");
}
