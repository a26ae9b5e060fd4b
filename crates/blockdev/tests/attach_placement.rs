//! Issue 28: `vsl attach --placement/--stream` reach the card through its
//! `CardSpec`, are recorded in the store header, and build the members
//! with that placement: at parse level (no FUSE needed), and one real
//! attach that writes, overwrites and reads back data through a hot-cold
//! card (root, /dev/fuse and loop devices; skipped loudly without them).

mod common;

use blockdev::cli::AttachArgs;
use blockdev::engine::{Engine, Timing};
use blockdev::manage::device_status;
use blockdev::store::{Store, StoreHeader};
use clap::Parser;
use device::{card_config, Card, CardSpec, MemberSel};
use ftl::PlacementSpec;
use std::time::Instant;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    a: AttachArgs,
}

fn parse(args: &[&str]) -> AttachArgs {
    let mut v = vec!["attach", "--store", "/nonexistent/store"];
    v.extend_from_slice(args);
    Cli::try_parse_from(v).expect("attach options parse").a
}

/// The tiny card of the tests with room for a second stream.
const TINY: [&str; 8] = [
    "--device",
    "iodrive-duo-320-slc",
    "--member",
    "0",
    "--scale",
    "0.01",
    "--sector-size",
    "4096",
];

#[test]
fn issue_28_attach_placement_hot_cold_reaches_the_members() {
    let mut args = TINY.to_vec();
    args.extend(["--placement", "hot-cold", "--gc-policy", "cost-benefit"]);
    let spec = parse(&args).card_spec();
    assert_eq!(spec.placement.as_deref(), Some("hot-cold"));
    assert_eq!(spec.gc_policy, "cost-benefit");
    // The store header records it and reads it back.
    let json = serde_json::to_string(&spec).unwrap();
    assert!(json.contains(r#""placement":"hot-cold""#), "{json}");
    let back: CardSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, spec);
    let cfg = card_config(&spec).expect("card config");
    assert_eq!(cfg.placement, PlacementSpec::HotCold);
    let card = Card::new(cfg).expect("the card builds");
    assert_eq!(card.placement_name(), "hot-cold");
    assert_eq!(card.victim_policy_name(), "cost-benefit");
}

#[test]
fn issue_28_attach_without_placement_keeps_old_headers_readable() {
    let spec = parse(&TINY).card_spec();
    assert_eq!(spec.placement, None);
    let json = serde_json::to_string(&spec).unwrap();
    assert!(!json.contains("placement"), "{json}");
    assert!(!json.contains("streams"), "{json}");
    // A header written before the option existed.
    let old = r#"{"device":"iodrive-duo-320-slc","format":"stock","capacity":null,"overprovision":null,"sector_size":"4096","member":"0","scale":"0.01","gc_policy":"greedy"}"#;
    let back: CardSpec = serde_json::from_str(old).unwrap();
    assert_eq!(back.placement, None);
    let card = Card::new(card_config(&back).unwrap()).unwrap();
    assert_eq!(card.placement_name(), "single");
}

#[test]
fn issue_28_attach_stream_options_are_checked() {
    let mut args = TINY.to_vec();
    args.extend(["--placement", "streams", "--stream", "0-1M"]);
    let spec = parse(&args).card_spec();
    assert_eq!(spec.streams, vec!["0-1M".to_string()]);
    assert!(matches!(
        card_config(&spec).unwrap().placement,
        PlacementSpec::Streams(_)
    ));
    // --stream without --placement streams, and a bad name: one line each.
    let mut args = TINY.to_vec();
    args.extend(["--stream", "0-1M"]);
    let e = card_config(&parse(&args).card_spec())
        .unwrap_err()
        .to_string();
    assert!(e.contains("--stream") && !e.contains('\n'), "{e}");
    let mut args = TINY.to_vec();
    args.extend(["--placement", "lukewarm"]);
    let e = card_config(&parse(&args).card_spec())
        .unwrap_err()
        .to_string();
    assert!(e.contains("--placement") && !e.contains('\n'), "{e}");
}

#[test]
fn issue_28_attach_placement_hot_cold_serves_data_and_records_it() {
    let name = "issue_28_attach_placement_hot_cold_serves_data_and_records_it";
    if common::skip(name, &["losetup", "dd", "cmp"]) {
        return;
    }
    let rig = common::Rig::new("placement");
    let devs = rig.attach(&[common::TINY_CARD, &["--placement", "hot-cold"]].concat());
    let dev = &devs[0];
    let text = std::fs::read_to_string(rig.store.join("store.json")).unwrap();
    let header: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(header["card"]["placement"], "hot-cold", "{text}");
    // 64 MiB once, its first 8 MiB (hot) four more times, then read back.
    let root = rig.root.to_str().unwrap();
    common::sh(&format!(
        "dd if=/dev/urandom of={root}/data bs=1M count=64 status=none"
    ));
    common::sh(&format!(
        "dd if={root}/data of={dev} bs=1M oflag=direct status=none"
    ));
    for _ in 0..4 {
        common::sh(&format!(
            "dd if=/dev/urandom of={root}/hot bs=1M count=8 status=none && \
             dd if={root}/hot of={root}/data bs=1M conv=notrunc status=none && \
             dd if={root}/hot of={dev} bs=1M oflag=direct conv=notrunc status=none"
        ));
    }
    common::sh(&format!(
        "dd if={dev} of={root}/back bs=1M count=64 iflag=direct status=none && \
         cmp {root}/data {root}/back"
    ));
    // The daemon's status (what `vsl status --json` shows as the device's
    // `placement` and `gc_policy` while attached): the running model's.
    let store = rig.store.canonicalize().unwrap();
    let v = rig.status_json();
    let r = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["store"] == store.to_str().unwrap())
        .unwrap_or_else(|| panic!("{} is not in {v}", store.display()));
    let m = &r["members"][0];
    assert_eq!(m["placement"], "hot-cold", "{m}");
    assert_eq!(m["gc_policy"], "greedy", "{m}");
    rig.detach_all();
}

/// A fresh store of `spec`'s first member under `dir`.
fn new_store(dir: &std::path::Path, spec: &CardSpec) -> (Store, device::CardConfig) {
    let _ = std::fs::remove_dir_all(dir);
    let mut one = card_config(spec).unwrap();
    one.member = MemberSel::One(0);
    let probe = Card::new(one.clone()).unwrap();
    let m = probe.member(0);
    let header = StoreHeader::new(spec.clone(), vec![0], m.config(), m.physical_slots());
    (Store::open(dir, &header).unwrap(), one)
}

/// The attached card's model is recovered from its store on every attach
/// (`Engine::open`): it keeps the store's placement and GC policy (before
/// `Card::adopt_recovered` the recovered model ran `single`), and `vsl
/// status --json` of the detached store shows them from its card options.
#[test]
fn issue_28_recovered_model_keeps_placement_and_status_shows_it() {
    let dir = std::env::temp_dir().join(format!(
        "openvsl-recovered-placement-{}",
        std::process::id()
    ));
    let mut args = TINY.to_vec();
    args.extend(["--placement", "hot-cold", "--gc-policy", "d-choices:4"]);
    let spec = parse(&args).card_spec();
    let (mut store, one) = new_store(&dir, &spec);
    let ms = store.members.remove(0);
    let e = Engine::open(one.clone(), ms, Instant::now(), Timing::None).unwrap();
    assert_eq!(
        e.policies(),
        ("d-choices:4".to_string(), "hot-cold".to_string())
    );
    // Data written through the hot-cold model, then a second attach.
    let sector = 4096u64;
    let hot = vec![7u8; 8 * sector as usize];
    for _ in 0..50 {
        e.write(0, &hot).unwrap();
    }
    e.flush().unwrap();
    drop(e);
    drop(store);
    let d = &device_status(&dir).unwrap()[0];
    assert_eq!(
        (d.gc_policy.as_str(), d.placement.as_str()),
        ("d-choices:4", "hot-cold")
    );
    assert!(d.streams.is_empty());
    let header = Store::read_header(&dir).unwrap().unwrap();
    let mut store = Store::open(&dir, &header).unwrap();
    let e = Engine::open(one, store.members.remove(0), Instant::now(), Timing::None).unwrap();
    assert_eq!(e.policies().1, "hot-cold");
    let mut buf = Vec::new();
    e.read(0, hot.len() as u64, &mut buf).unwrap();
    assert_eq!(buf, hot);
    drop(e);
    drop(store);
    // Streams: the ranges as given.
    let mut args = TINY.to_vec();
    args.extend(["--placement", "streams", "--stream", "0-1M"]);
    let spec = parse(&args).card_spec();
    drop(new_store(&dir, &spec));
    let d = &device_status(&dir).unwrap()[0];
    assert_eq!(d.placement, "streams");
    assert_eq!(d.streams, vec!["0-1M".to_string()]);
    std::fs::remove_dir_all(&dir).unwrap();
}
