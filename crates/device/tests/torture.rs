//! The CI-sized power-cut campaign on a scaled preset card: at least 2,000
//! cuts at random NAND operation boundaries, zero loss (`vsl torture`).

use device::{CardConfig, MemberSel, Preset};
use ftl::protect::{run_campaign, CampaignConfig};

fn card(preset: &str) -> ftl::FtlConfig {
    let mut c = CardConfig::new(Preset::by_name(preset).unwrap());
    c.scale = 0.001;
    c.member = MemberSel::parse("0").unwrap();
    c.track_sequence = true;
    c.ftl_config().unwrap()
}

#[test]
fn two_thousand_power_cuts_lose_nothing() {
    let seed = std::env::var("TORTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11);
    let mut cfg = CampaignConfig::new(card("iodrive-duo-320-slc"), 2000, seed);
    cfg.max_calls = 20;
    let t = std::time::Instant::now();
    let r = run_campaign(&cfg, |_| {}).unwrap();
    eprintln!("{:.1} s: {r:?}", t.elapsed().as_secs_f64());
    assert_eq!(r.cuts, 2000);
    assert_eq!(
        r.failures(),
        0,
        "seed {seed} (TORTURE_SEED={seed} reproduces): {:?}",
        r.first_failure
    );
    assert!(r.cuts_in_atomic > 50 && r.torn_checkpoints > 50, "{r:?}");
    assert!(r.full_checks >= 2000 / ftl::protect::FULL_CHECK_EVERY);
}
