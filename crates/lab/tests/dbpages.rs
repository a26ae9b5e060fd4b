//! Database page flushes: atomic writes halve the host bytes of a
//! doublewrite buffer and flush pages faster.

use device::{CardConfig, MemberSel, Preset};
use lab::dbpages::{run_dbpages, DbPagesConfig, PageSafety};

#[test]
fn atomic_writes_beat_the_doublewrite_buffer() {
    let mut card = CardConfig::new(Preset::by_name("iodrive-duo-320-slc").unwrap());
    card.scale = 0.001;
    card.member = MemberSel::parse("0").unwrap();
    let ftl = card.ftl_config().unwrap();
    let cfg = DbPagesConfig {
        batches: 40,
        controller_write_bytes_per_s: card.preset.datapath_bytes_per_s().1,
        ..Default::default()
    };
    let d = run_dbpages(&ftl, &cfg, PageSafety::Doublewrite).unwrap();
    let a = run_dbpages(&ftl, &cfg, PageSafety::AtomicWrite).unwrap();
    assert_eq!(d.pages_flushed, a.pages_flushed);
    // Doublewrite writes every page twice.
    assert_eq!(d.host_bytes, 2 * a.host_bytes, "{d:?} {a:?}");
    assert!(a.nand_bytes < d.nand_bytes, "{d:?} {a:?}");
    assert!(a.pages_per_s > 1.3 * d.pages_per_s, "{d:?} {a:?}");
}
