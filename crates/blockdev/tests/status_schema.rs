//! `vsl status --json` has exactly the keys docs/STATUS_SCHEMA.md lists,
//! section by section (no root needed: the store is made directly and
//! read detached).

use blockdev::cli::card_config;
use blockdev::manage::{device_status, StatusDoc, STATUS_SCHEMA};
use blockdev::status::Interval;
use blockdev::store::{CardSpec, Store, StoreHeader};
use rundir::live::{LivePoint, LiveRun};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Section name → documented keys.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/STATUS_SCHEMA.md"
    ))
    .unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines() {
        if let Some(s) = line.strip_prefix("### `") {
            section = s.trim_end_matches('`').to_string();
        } else if let Some(row) = line.strip_prefix("| `") {
            let key = row.split('`').next().unwrap();
            out.entry(section.clone()).or_default().insert(key.into());
        }
    }
    out
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().expect("an object").keys().cloned().collect()
}

fn check(doc: &BTreeMap<String, BTreeSet<String>>, section: &str, v: &Value) {
    assert_eq!(
        &keys(v),
        &doc[section],
        "section `{section}` of docs/STATUS_SCHEMA.md"
    );
    for k in keys(v) {
        assert!(
            k.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{k} is not snake_case"
        );
    }
}

#[test]
fn status_json_matches_the_documented_schema() {
    let dir = std::env::temp_dir().join(format!("openvsl-schema-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let spec = CardSpec::tiny();
    let cfg = card_config(&spec).unwrap().ftl_config().unwrap();
    let slots = cfg.geometry.lebs() as u64 * cfg.slots_per_leb() as u64;
    let header = StoreHeader::new(spec, vec![0], &cfg, slots);
    drop(Store::open(&dir, &header).unwrap());

    let devices = device_status(&dir).unwrap();
    let health = devices[0].health.clone();
    let run = LiveRun {
        pid: 1,
        kind: "run".into(),
        points: [LivePoint::default()].into(),
        health: vec![health],
        ..LiveRun::default()
    };
    let status = StatusDoc {
        schema: STATUS_SCHEMA.into(),
        devices,
        runs: vec![run],
    };
    let v = serde_json::to_value(&status).unwrap();
    let doc = documented();
    check(&doc, "document", &v);
    let d = &v["devices"][0];
    check(&doc, "device", d);
    check(&doc, "lifetime", &d["lifetime"]);
    check(&doc, "health", &d["health"]);
    assert_eq!(d["state"], "detached");
    assert_eq!(d["health"]["state"], "healthy");
    assert_eq!(
        d["formatted_capacity_bytes"].as_u64().unwrap(),
        d["sectors"].as_u64().unwrap() * d["sector_bytes"].as_u64().unwrap()
    );
    let interval = serde_json::to_value(Interval::default()).unwrap();
    check(&doc, "interval", &interval);
    check(&doc, "percentiles", &interval["read_latency"]);
    let hist = serde_json::to_value(blockdev::manage::LatencyHistogram::default()).unwrap();
    check(&doc, "latency_histogram", &hist);
    assert!(d["latency_histogram"].is_null(), "detached: no histogram");
    let trace = serde_json::to_value(blockdev::capture::TraceStatus::default()).unwrap();
    check(&doc, "trace", &trace);
    assert!(d["trace"].is_null(), "detached: no trace capture");
    check(&doc, "run", &v["runs"][0]);
    check(&doc, "point", &v["runs"][0]["points"][0]);
    let _ = std::fs::remove_dir_all(&dir);
}
