//! The reviews' comparable cards: every preset runs and cites its source,
//! and SandForce presets pay for incompressible data as SandForce cards do.

use device::{presets, Card, CardConfig, Preset, VirtualDevice};
use lab::{precondition_fill, run, RunOptions};
use sim::Nanos;
use workload::Profile;

fn opts(secs: u64) -> RunOptions {
    RunOptions {
        threads: 16,
        queue_depth: 16,
        duration_ns: secs * 1_000_000_000,
        interval_ns: secs * 1_000_000_000,
        seed: 5,
    }
}

#[test]
fn every_preset_runs_and_cites_a_source() {
    let w = Profile::by_name("4k-randwrite").unwrap().spec();
    for p in presets() {
        assert!(p.source.len() > 20, "{}: no source", p.name);
        let mut c = CardConfig::new(p);
        c.scale = 0.01;
        let mut card = Card::new(c).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        let r = run(&mut card, &w, &opts(1), Nanos::ZERO, &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert!(
            r.summary.totals.iops > 10_000.0,
            "{}: {:?}",
            p.name,
            r.summary.totals.iops
        );
    }
}

/// Steady-state 4K random-write IOPS of `preset` with data that compresses
/// to `c` of its size.
fn steady_iops(preset: &str, c: f64) -> f64 {
    let mut cfg = CardConfig::new(Preset::by_name(preset).unwrap());
    cfg.scale = 0.02;
    cfg.data_compressibility = c;
    let mut card = Card::new(cfg).unwrap();
    let t = precondition_fill(&mut card, Nanos::ZERO).unwrap();
    let w = Profile::by_name("4k-randwrite").unwrap().spec();
    // About two device capacities of random writes, then a window.
    let warm = (2.0 * card.capacity_bytes() as f64 / 4096.0 / 40_000.0).ceil() as u64;
    let t = run(&mut card, &w, &opts(warm), t, &mut |_| {}).unwrap().end;
    run(&mut card, &w, &opts(20), t, &mut |_| {})
        .unwrap()
        .summary
        .totals
        .iops
}

#[test]
fn sandforce_presets_slow_down_on_incompressible_data() {
    let incompressible = steady_iops("zdrive-r4-cm88", 1.0);
    let half = steady_iops("zdrive-r4-cm88", 0.5);
    println!(
        "Z-Drive R4 steady 4K write: {incompressible:.0} IOPS incompressible, {half:.0} at 50 %"
    );
    assert!(
        half > 1.5 * incompressible,
        "compressible data should be much cheaper: {half:.0} vs {incompressible:.0}"
    );
    // A card without compression ignores the data's entropy.
    let a = steady_iops("intel-ssd-910-800", 1.0);
    let b = steady_iops("intel-ssd-910-800", 0.5);
    assert_eq!(a, b, "the SSD 910 does not compress");
}
