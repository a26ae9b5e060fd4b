use ftl::{FtlConfig, GcPolicy, Vsl};
use sim::{Nanos, Prng};
fn main() {
    let spare: f64 = std::env::args().nth(1).unwrap().parse().unwrap();
    for (lebs, pages) in [(82u32, 256u32), (205, 256), (1024, 256), (4096, 256), (4096, 16), (4096, 4)] {
        let mut cfg = FtlConfig::wa_study(lebs, spare, 4096, GcPolicy::Greedy);
        cfg.geometry.pages_per_block = pages;
        let phys = cfg.usable_lebs() as f64 * cfg.slots_per_leb() as f64;
        cfg.user_sectors = (phys * (1.0 - spare)) as u64;
        let user = cfg.user_sectors;
        let mut v = Vsl::new(cfg).unwrap();
        let mut p = Prng::from_seed(1);
        let mut t = Nanos::ZERO;
        for l in 0..user { t = v.write(t, l, 1).unwrap(); }
        for _ in 0..6 * user { t = v.write(t, p.below(user), 1).unwrap(); }
        let b = v.stats();
        for _ in 0..6 * user { t = v.write(t, p.below(user), 1).unwrap(); }
        let a = v.stats();
        let wa = (a.host_sectors_written - b.host_sectors_written + a.gc_sectors_moved - b.gc_sectors_moved) as f64 / (a.host_sectors_written - b.host_sectors_written) as f64;
        println!("lebs {lebs:5} pages {pages:4} spare {spare} WA {wa:.3} limit {:.3}", ftl::greedy_wa_limit(spare));
    }
}
