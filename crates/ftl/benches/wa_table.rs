//! Prints greedy-GC write amplification measured on the VSL against the
//! analytic large-block limit (Xiang & Kurkoski 2012), uniform random 4 KiB
//! writes, 256 sectors per erase unit. Run: `cargo bench -p ftl --bench wa_table`.

use ftl::{greedy_wa_limit, FtlConfig, GcPolicy, Vsl};
use sim::{Nanos, Prng};

fn measure(spare: f64, lebs: u32, policy: GcPolicy, seed: u64) -> f64 {
    let cfg = FtlConfig::wa_study(lebs, spare, 4096, policy);
    let user = cfg.user_sectors;
    let mut vsl = Vsl::new(cfg).expect("valid config");
    let mut prng = Prng::from_seed(seed);
    let mut t = Nanos::ZERO;
    for lba in 0..user {
        t = vsl.write(t, lba, 1).unwrap();
    }
    for _ in 0..6 * user {
        t = vsl.write(t, prng.below(user), 1).unwrap();
    }
    let before = vsl.stats();
    for _ in 0..6 * user {
        t = vsl.write(t, prng.below(user), 1).unwrap();
    }
    let after = vsl.stats();
    let host = after.host_sectors_written - before.host_sectors_written;
    let moved = after.gc_sectors_moved - before.gc_sectors_moved;
    (host + moved) as f64 / host as f64
}

fn main() {
    let lebs = 4096;
    println!(
        "greedy GC, uniform random 4 KiB writes, 256 sectors per erase unit, {lebs} erase units"
    );
    println!(
        "{:>7} {:>10} {:>10} {:>8} {:>13}",
        "spare", "analytic", "measured", "ratio", "cost-benefit"
    );
    for spare in [0.07, 0.20, 0.28, 0.36, 0.50] {
        let want = greedy_wa_limit(spare);
        let got = measure(spare, lebs, GcPolicy::Greedy, 1);
        let cb = measure(spare, lebs, GcPolicy::CostBenefit, 1);
        println!(
            "{:>6.0}% {:>10.3} {:>10.3} {:>8.3} {:>13.3}",
            spare * 100.0,
            want,
            got,
            got / want,
            cb
        );
    }
}
