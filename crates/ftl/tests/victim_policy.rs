//! A GC victim policy plugged in from outside the `ftl` crate, as
//! docs/ARCHITECTURE.md ("Adding a GC policy") walks through: only the
//! public trait, view and `Vsl::set_victim_policy`.

use ftl::{greedy_wa_limit, Candidates, FtlConfig, GcPolicy, VictimPolicy, Vsl};
use sim::{Nanos, Prng};

/// Random cleaning: any closed unit, uniformly, whatever it holds. Every
/// random choice draws from the FTL's seeded `prng`, so runs repeat.
struct RandomVictim;

impl VictimPolicy for RandomVictim {
    fn name(&self) -> String {
        "random".into()
    }

    fn select(&mut self, units: &Candidates<'_>, prng: &mut Prng) -> Option<u32> {
        // Reservoir sampling of one candidate: one pass, no allocation.
        let mut pick = None;
        for (seen, c) in units.iter().enumerate() {
            if prng.below(seen as u64 + 1) == 0 {
                pick = Some(c.leb());
            }
        }
        pick
    }
}

/// Steady-state WA of `vsl` under uniform random single-sector writes:
/// fill, warm up for `warm` device writes, measure `measure` more.
fn steady_wa(vsl: &mut Vsl, seed: u64, warm: u64, measure: u64) -> f64 {
    let user = vsl.user_sectors();
    let mut prng = Prng::from_seed(seed);
    let mut t = Nanos::ZERO;
    for lba in 0..user {
        t = vsl.write(t, lba, 1).unwrap();
    }
    for _ in 0..warm * user {
        t = vsl.write(t, prng.below(user), 1).unwrap();
    }
    let before = vsl.stats();
    for _ in 0..measure * user {
        t = vsl.write(t, prng.below(user), 1).unwrap();
    }
    let after = vsl.stats();
    let host = after.host_sectors_written - before.host_sectors_written;
    let moved = after.gc_sectors_moved - before.gc_sectors_moved;
    (host + moved) as f64 / host as f64
}

#[test]
fn a_policy_from_outside_runs_and_behaves_as_its_analysis_says() {
    let spare = 0.2;
    let cfg = FtlConfig::wa_study(512, spare, 4096, GcPolicy::Greedy);
    let mut vsl = Vsl::new(cfg.clone()).unwrap();
    vsl.set_victim_policy(Box::new(RandomVictim));
    assert_eq!(vsl.victim_policy_name(), "random");
    let random = steady_wa(&mut vsl, 3, 4, 4);
    vsl.check_consistency();

    // Random cleaning's victim holds the mean valid fraction u of the
    // closed units, so WA = 1 / (1 - u). All user data but the open
    // unit's sits in the units not free (the GC reserve of 2) and not open.
    let lebs = cfg.usable_lebs() as f64;
    let spl = cfg.slots_per_leb() as f64;
    let user = cfg.user_sectors as f64;
    let u = (user - spl / 2.0) / ((lebs - 3.0) * spl);
    let analytic = 1.0 / (1.0 - u);
    assert!(
        (random / analytic - 1.0).abs() < 0.05,
        "random cleaning WA {random:.3}, analysis {analytic:.3}"
    );

    // And it is not greedy in disguise: greedy on the same card is far
    // better, near its own limit.
    let mut greedy = Vsl::new(cfg).unwrap();
    let g = steady_wa(&mut greedy, 3, 4, 4);
    assert!(random > 1.5 * g, "random {random:.3} vs greedy {g:.3}");
    assert!(
        (g / greedy_wa_limit(spare) - 1.0).abs() < 0.05,
        "greedy {g}"
    );
    eprintln!("WA at 20 % spare: random {random:.3} (analysis {analytic:.3}), greedy {g:.3}");
}

#[test]
fn an_outside_policy_is_deterministic_through_the_ftl_seed() {
    let wa = |seed: u64| {
        let mut cfg = FtlConfig::wa_study(64, 0.25, 4096, GcPolicy::Greedy);
        cfg.gc_seed = seed;
        let mut vsl = Vsl::new(cfg).unwrap();
        vsl.set_victim_policy(Box::new(RandomVictim));
        let wa = steady_wa(&mut vsl, 1, 2, 2);
        (wa, vsl.stats())
    };
    assert_eq!(wa(5), wa(5), "same FTL seed, same GC");
    assert_ne!(wa(5).1, wa(6).1, "the FTL seed reaches the policy");
}

/// Picks a unit that is no candidate (unit 0, the first one opened, free
/// again or open by then).
struct Broken;

impl VictimPolicy for Broken {
    fn name(&self) -> String {
        "broken".into()
    }
    fn select(&mut self, units: &Candidates<'_>, _: &mut Prng) -> Option<u32> {
        (0..units.units()).find(|&leb| units.get(leb).is_none())
    }
}

#[test]
#[should_panic(expected = "GC policy broken chose unit")]
fn a_policy_choosing_a_unit_that_is_not_closed_is_caught() {
    let mut vsl = Vsl::new(FtlConfig::wa_study(32, 0.25, 4096, GcPolicy::Greedy)).unwrap();
    vsl.set_victim_policy(Box::new(Broken));
    steady_wa(&mut vsl, 1, 2, 1);
}
